//! The background work for CEL policies.
//!
//! MutatingPolicies with `evaluation.mutateExisting.enabled` and no
//! `targetMatchConstraints` mutate the existing objects they match when they are created
//! or changed (pkg/policy/policy_controller.go `syncPolicy`, `createURForMutatingPolicy`).
//!
//! GeneratingPolicies with `evaluation.synchronize.enabled`: Kyverno's watch manager
//! keeps a copy of each downstream it made (pkg/background/gpol/dynamic_watcher.go,
//! `metadataCache`), puts it back when a user edits or deletes it, deletes it with its
//! trigger, and with the policy unless `orphanDownstreamOnPolicyDelete` is enabled
//! (pkg/policy/policy_controller.go `deletePolicy`); disabling synchronization forgets
//! the copies (`updatePolicy`).

use serde_json::Value;

use super::background::label;
use super::{Answer, Cluster, Key, Skip, policy_unsupported, text};
use crate::offline::conformance::controllers::reports_gpol;
use crate::offline::kyverno::generate::{MANAGED_BY, SOURCE_UID};
use crate::offline::vap;

/// One synchronized downstream, as made.
#[derive(Debug, Clone)]
pub(super) struct Watched {
    /// `name`, or `namespace/name` for a NamespacedGeneratingPolicy.
    policy: String,
    trigger_uid: String,
    object: Value,
}

fn is_gpol(o: &Value) -> bool {
    matches!(
        text(o, "/kind").as_str(),
        "GeneratingPolicy" | "NamespacedGeneratingPolicy"
    )
}

fn policy_key(p: &Value) -> String {
    let ns = text(p, "/metadata/namespace");
    let name = text(p, "/metadata/name");
    if text(p, "/kind") == "NamespacedGeneratingPolicy" && !ns.is_empty() {
        format!("{ns}/{name}")
    } else {
        name
    }
}

fn enabled(p: &Value, field: &str) -> bool {
    p.pointer(&format!("/spec/evaluation/{field}/enabled"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

impl Cluster {
    /// Every GeneratingPolicy on an admitted trigger; what a synchronized one makes is
    /// watched.
    pub(super) fn generate_cel(&mut self, req: &vap::VapRequest, trigger: &Value) -> Answer {
        let policies: Vec<Value> = self
            .objects
            .iter()
            .filter(|o| is_gpol(o) && !self.skips_cel_policy(o))
            .cloned()
            .collect();
        // Whether a GeneratingPolicy matched is its engine's to say: any on a trigger may
        // have had a request.
        self.update_requests |= !policies.is_empty();
        for p in policies {
            if let Err(answer) = self.generate_one(&p, req, trigger) {
                return answer;
            }
        }
        Answer::Ok
    }

    /// One GeneratingPolicy on one request: what it made, stored (and watched when the
    /// policy synchronizes). A failing policy makes nothing; one the interpreter cannot
    /// evaluate stops the replay.
    fn generate_one(
        &mut self,
        p: &Value,
        req: &vap::VapRequest,
        trigger: &Value,
    ) -> Result<Vec<Key>, Answer> {
        let made = match vap::generate_with_policies(&self.with_cel_exceptions(p), req) {
            Ok(made) => made,
            Err(e) => match policy_unsupported(&e) {
                Some(skip) => return Err(Answer::Undecidable(skip)),
                None => Vec::new(),
            },
        };
        let mut keys = Vec::new();
        let mut placed = Vec::new();
        for mut g in made {
            if self.place(&mut g).is_err() {
                continue;
            }
            self.made_in_background = true;
            let key = Key::of(&g);
            placed.push(g.clone());
            self.store_made(g, super::ssa::asks_for_it(p));
            if enabled(p, "synchronize")
                && let Some(stored) = self.find(&key).cloned()
            {
                self.watched.retain(|w| Key::of(&w.object) != key);
                self.watched.push(Watched {
                    policy: policy_key(p),
                    trigger_uid: text(trigger, "/metadata/uid"),
                    object: stored,
                });
            }
            keys.push(key);
        }
        let result = reports_gpol::generated(&self.cel_policy_objects(), p, req, &placed);
        if let Some(r) = result {
            self.reports.record(trigger, r);
        }
        Ok(keys)
    }

    /// `policy` with the cluster's CEL PolicyExceptions (policies.kyverno.io): a compiled
    /// policy carries its exceptions in the background too
    /// (pkg/cel/policies/gpol/compiler/policy.go `Evaluate`).
    fn with_cel_exceptions(&self, policy: &Value) -> Vec<Value> {
        let mut out = vec![policy.clone()];
        out.extend(
            self.objects
                .iter()
                .filter(|o| {
                    text(o, "/kind") == "PolicyException"
                        && text(o, "/apiVersion").starts_with("policies.kyverno.io/")
                })
                .cloned(),
        );
        out
    }

    /// A trigger deleted: policies matching DELETE generate from the old object
    /// (`oldObject`; `object` is null).
    pub(super) fn generate_cel_on_delete(&mut self, old: &Value) -> Answer {
        let mut req = self.vap_request(old, None);
        req.operation = "DELETE".into();
        req.object = Value::Null;
        req.old_object = old.clone();
        req.cluster = Some(std::sync::Arc::new(self.objects.clone()));
        self.generate_cel(&req, old)
    }

    /// A GeneratingPolicy created or changed: with synchronization, each watched
    /// downstream's trigger is generated for again and what it no longer makes is deleted
    /// (gpol/generate_controller.go, dynamic_watcher.go `CleanupStaleDownstreams`); with
    /// `generateExisting`, every existing object is offered as a trigger.
    fn cel_policy_changed(&mut self, new: &Value, old: Option<&Value>) -> Answer {
        if old.is_some_and(|o| o.get("spec") == new.get("spec")) {
            return Answer::Ok;
        }
        let key = policy_key(new);
        if old.is_some() && enabled(new, "synchronize") {
            let mut uids: Vec<String> = Vec::new();
            for w in self.watched.iter().filter(|w| w.policy == key) {
                if !uids.contains(&w.trigger_uid) {
                    uids.push(w.trigger_uid.clone());
                }
            }
            for uid in uids {
                let Some(trigger) = self
                    .objects
                    .iter()
                    .find(|o| text(o, "/metadata/uid") == uid)
                    .cloned()
                else {
                    continue;
                };
                let before: Vec<Key> = self
                    .watched
                    .iter()
                    .filter(|w| w.policy == key && w.trigger_uid == uid)
                    .map(|w| Key::of(&w.object))
                    .collect();
                let req = self.cel_request(&trigger);
                let made = match self.generate_one(new, &req, &trigger) {
                    Ok(made) => made,
                    Err(answer) => return answer,
                };
                for stale in before.into_iter().filter(|k| !made.contains(k)) {
                    self.watched.retain(|w| Key::of(&w.object) != stale);
                    self.remove(&stale);
                }
            }
        }
        if enabled(new, "generateExisting") {
            let candidates = self.existing_objects(None);
            for trigger in candidates {
                let req = self.cel_request(&trigger);
                if let Err(answer) = self.generate_one(new, &req, &trigger) {
                    return answer;
                }
            }
        }
        Answer::Ok
    }

    /// A background request for an existing trigger, as a CREATE.
    fn cel_request(&self, trigger: &Value) -> vap::VapRequest {
        let mut req = self.vap_request(trigger, None);
        req.cluster = Some(std::sync::Arc::new(self.objects.clone()));
        req
    }

    /// A user's write (`new` null: a deletion) of a watched downstream is undone; a
    /// deleted trigger takes its watched downstreams with it.
    pub(super) fn watched_write(&mut self, new: &Value, old: &Value) {
        let key = Key::of(if new.is_null() { old } else { new });
        if let Some(w) = self.watched.iter().find(|w| Key::of(&w.object) == key) {
            if new.is_null() || new != &w.object {
                let copy = w.object.clone();
                self.store(copy);
            }
            return;
        }
        self.source_written(new, old);
        if new.is_null() {
            let uid = text(old, "/metadata/uid");
            let (gone, kept): (Vec<Watched>, Vec<Watched>) = std::mem::take(&mut self.watched)
                .into_iter()
                .partition(|w| !uid.is_empty() && w.trigger_uid == uid);
            self.watched = kept;
            for w in gone {
                self.remove(&Key::of(&w.object));
            }
        }
    }

    /// A write of an object the watch manager watches the kind of (it made one) but did
    /// not make: the synchronized downstreams cloned from it (labelled with its uid) are
    /// deleted with it, unless it is itself managed by Kyverno, or follow its update
    /// (pkg/background/gpol/dynamic_watcher.go `handleDelete`, `handleUpdate`).
    fn source_written(&mut self, new: &Value, old: &Value) {
        let source = if new.is_null() { old } else { new };
        let key = Key::of(source);
        let uid = text(source, "/metadata/uid");
        if uid.is_empty()
            || !self.watched.iter().any(|w| {
                let k = Key::of(&w.object);
                k.group == key.group && k.kind == key.kind
            })
        {
            return;
        }
        let from_source = |w: &Watched| label(&w.object, SOURCE_UID) == uid;
        if new.is_null() {
            if label(old, MANAGED_BY) == "kyverno" {
                return;
            }
            let (gone, kept): (Vec<Watched>, Vec<Watched>) = std::mem::take(&mut self.watched)
                .into_iter()
                .partition(|w| from_source(w));
            self.watched = kept;
            for w in gone {
                self.remove(&Key::of(&w.object));
            }
            return;
        }
        if old.is_null() {
            return;
        }
        let mut copies = Vec::new();
        for w in self.watched.iter().filter(|w| from_source(w)) {
            let mut copy = new.clone();
            if let (Some(meta), Some(down)) = (
                copy.get_mut("metadata").and_then(Value::as_object_mut),
                w.object.get("metadata"),
            ) {
                for k in [
                    "uid",
                    "selfLink",
                    "creationTimestamp",
                    "managedFields",
                    "resourceVersion",
                ] {
                    meta.remove(k);
                }
                for k in ["name", "namespace", "labels"] {
                    match down.get(k) {
                        Some(v) => meta.insert(k.into(), v.clone()),
                        None => meta.remove(k),
                    };
                }
            }
            copies.push(copy);
        }
        for copy in copies {
            let k = Key::of(&copy);
            self.store(copy);
            if let Some(stored) = self.find(&k).cloned()
                && let Some(w) = self.watched.iter_mut().find(|w| Key::of(&w.object) == k)
            {
                w.object = stored;
            }
        }
    }

    /// A MutatingPolicy with `mutateExisting` created or changed: each existing object it
    /// matches is mutated in place.
    pub(super) fn cel_mutate_existing(&mut self, new: &Value, old: Option<&Value>) -> Answer {
        let kind = text(new, "/kind");
        if !matches!(kind.as_str(), "MutatingPolicy" | "NamespacedMutatingPolicy")
            || !enabled(new, "mutateExisting")
            || old.is_some_and(|o| o.get("spec") == new.get("spec"))
        {
            return Answer::Ok;
        }
        if new.pointer("/spec/targetMatchConstraints").is_some() {
            return self.cel_mutate_targets(new);
        }
        let candidates = self.existing_objects(None);
        for object in candidates {
            let req = self.cel_request(&object);
            match vap::mutate_with_policies(&self.with_cel_exceptions(new), &req) {
                Ok(mutated) if mutated != object => {
                    self.made_in_background = true;
                    self.store(mutated);
                }
                Ok(_) => {}
                Err(e) => {
                    if let Some(skip) = policy_unsupported(&e) {
                        return Answer::Undecidable(skip);
                    }
                }
            }
        }
        Answer::Ok
    }

    /// A MutatingPolicy with target constraints created or changed: with an expression,
    /// each existing object its `matchConstraints` select is a trigger, sent as an
    /// UPDATE, and the objects the expression names are mutated (pkg/policy/mpol.go
    /// `createTriggerURs`); without one, every existing object the target rules select is
    /// (`newCELMutateUR`, pkg/background/mpol/processor.go).
    fn cel_mutate_targets(&mut self, policy: &Value) -> Answer {
        let scan = policy
            .pointer("/spec/targetMatchConstraints/expression")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty);
        let existing = self.existing_objects(None);
        if scan {
            let candidates = self.target_candidates(&existing);
            return self.store_targets(vap::mutate_targets(policy, None, candidates));
        }
        for trigger in existing {
            let mut req = self.cel_request(&trigger);
            req.operation = "UPDATE".into();
            req.old_object = trigger.clone();
            match self.store_targets(vap::mutate_targets(policy, Some(&req), Vec::new())) {
                Answer::Ok => {}
                other => return other,
            }
        }
        Answer::Ok
    }

    /// Each object as a target request (its own namespace).
    fn target_candidates(&self, objects: &[Value]) -> Vec<vap::VapRequest> {
        objects.iter().map(|o| self.cel_request(o)).collect()
    }

    /// A trigger admitted: MutatingPolicies with `mutateExisting` and target constraints
    /// that match it mutate their targets (pkg/webhooks/resource/mpol, the processor).
    pub(super) fn cel_targets_on_trigger(
        &mut self,
        trigger: &Value,
        old: Option<&Value>,
    ) -> Answer {
        let mut req = self.cel_request(trigger);
        if let Some(o) = old {
            req.operation = "UPDATE".into();
            req.old_object = o.clone();
        }
        self.cel_targets_for(req)
    }

    /// A trigger deleted: the DELETE request (its old object) triggers the same way.
    pub(super) fn cel_targets_on_delete(&mut self, old: &Value) -> Answer {
        let mut req = self.cel_request(old);
        req.operation = "DELETE".into();
        req.old_object = old.clone();
        req.object = Value::Null;
        self.cel_targets_for(req)
    }

    fn cel_targets_for(&mut self, req: vap::VapRequest) -> Answer {
        let policies: Vec<Value> = self
            .objects
            .iter()
            .filter(|p| {
                matches!(
                    text(p, "/kind").as_str(),
                    "MutatingPolicy" | "NamespacedMutatingPolicy"
                ) && enabled(p, "mutateExisting")
                    && p.pointer("/spec/targetMatchConstraints").is_some()
                    && !self.skips_cel_policy(p)
            })
            .cloned()
            .collect();
        if policies.is_empty() {
            return Answer::Ok;
        }
        let existing = self.existing_objects(None);
        for p in policies {
            let candidates = self.target_candidates(&existing);
            match self.store_targets(vap::mutate_targets(&p, Some(&req), candidates)) {
                Answer::Ok => {}
                other => return other,
            }
        }
        Answer::Ok
    }

    fn store_targets(&mut self, outcome: vap::CelPolicyOutcome<Vec<Value>>) -> Answer {
        let targets = match outcome {
            vap::CelPolicyOutcome::Applied(t) => t,
            vap::CelPolicyOutcome::Unsupported { message, .. } => {
                return Answer::Undecidable(Skip::Engine(message));
            }
            vap::CelPolicyOutcome::NotMatched | vap::CelPolicyOutcome::Error(_) => {
                return Answer::Ok;
            }
        };
        for t in targets {
            if self.find(&Key::of(&t)) != Some(&t) {
                self.made_in_background = true;
                self.store(t);
            }
        }
        Answer::Ok
    }

    /// A GeneratingPolicy written: disabling synchronization forgets its downstreams;
    /// else see [`Cluster::cel_policy_changed`].
    pub(super) fn watched_policy_written(&mut self, new: &Value, old: Option<&Value>) -> Answer {
        if !is_gpol(new) {
            return Answer::Ok;
        }
        if !enabled(new, "synchronize") {
            let key = policy_key(new);
            self.watched.retain(|w| w.policy != key);
        }
        self.cel_policy_changed(new, old)
    }

    /// A GeneratingPolicy deleted: its synchronized downstreams go with it unless it
    /// orphans them.
    pub(super) fn watched_policy_deleted(&mut self, old: &Value) {
        if !is_gpol(old) {
            return;
        }
        let key = policy_key(old);
        let (gone, kept): (Vec<Watched>, Vec<Watched>) = std::mem::take(&mut self.watched)
            .into_iter()
            .partition(|w| w.policy == key);
        self.watched = kept;
        self.update_requests |= !gone.is_empty();
        if !enabled(old, "orphanDownstreamOnPolicyDelete") {
            for w in gone {
                self.remove(&Key::of(&w.object));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Answer, Cluster, Key};
    use serde_json::{Value, json};

    fn gpol(sync: bool, existing: bool, name: &str) -> Value {
        json!({"apiVersion": "policies.kyverno.io/v1beta1", "kind": "GeneratingPolicy",
            "metadata": {"name": "g"},
            "spec": {"evaluation": {"synchronize": {"enabled": sync}, "generateExisting": {"enabled": existing}},
                "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"], "resources": ["namespaces"]}]},
                "generate": [{"expression": format!(
                    "generator.Apply(object.metadata.name, [{{\"apiVersion\": dyn(\"v1\"), \"kind\": dyn(\"ConfigMap\"), \"metadata\": dyn({{\"name\": \"{name}\"}}), \"data\": dyn({{\"k\": \"v\"}})}}])")}]}})
    }

    fn cm(c: &Cluster, ns: &str, name: &str) -> bool {
        c.find(&Key {
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: ns.into(),
            name: name.into(),
        })
        .is_some()
    }

    fn ok(a: Answer) {
        assert!(matches!(a, Answer::Ok), "{a:?}");
    }

    /// Synchronized GeneratingPolicy downstreams were not watched: a deleted one stayed
    /// deleted, a renamed target left the old one, existing triggers got nothing.
    #[test]
    fn a_synchronized_generating_policy_keeps_its_downstreams() {
        let mut c = Cluster::new("t");
        ok(c.apply(&gpol(true, false, "one"), false));
        ok(c.apply(
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}),
            false,
        ));
        assert!(cm(&c, "a", "one"));
        ok(c.delete(
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "one", "namespace": "a"}),
        ));
        assert!(cm(&c, "a", "one"), "regenerated");
        ok(c.apply(&gpol(true, false, "two"), false));
        assert!(
            cm(&c, "a", "two") && !cm(&c, "a", "one"),
            "stale downstream deleted"
        );
        ok(c.delete(&json!({"apiVersion": "policies.kyverno.io/v1beta1", "kind": "GeneratingPolicy", "name": "g"})));
        assert!(!cm(&c, "a", "two"), "deleted with the policy");
        ok(c.apply(&gpol(false, true, "three"), false));
        assert!(cm(&c, "a", "three"), "generateExisting");
    }

    /// A MutatingPolicy with `mutateExisting` did not touch the objects that existed
    /// before it.
    #[test]
    fn a_mutate_existing_policy_mutates_what_exists() {
        let mut c = Cluster::new("t");
        ok(c.apply(
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "default"}}),
            false,
        ));
        let mpol = json!({"apiVersion": "policies.kyverno.io/v1beta1", "kind": "MutatingPolicy",
            "metadata": {"name": "m"},
            "spec": {"evaluation": {"mutateExisting": {"enabled": true}},
                "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]},
                "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
                    "Object{metadata: Object.metadata{labels: Object.metadata.labels{done: \"yes\"}}}"}}]}});
        ok(c.apply(&mpol, false));
        let cm = c
            .find(&Key {
                group: String::new(),
                kind: "ConfigMap".into(),
                namespace: "default".into(),
                name: "cm".into(),
            })
            .unwrap();
        assert_eq!(cm.pointer("/metadata/labels/done"), Some(&json!("yes")));
    }
}

//! What Kyverno's background controller does after a write, done at once (a
//! conformance test's asserts run after it settles): generate rules and their
//! `synchronize`, mutate-existing on policy events.
//!
//! Modelled from Kyverno v1.19.0:
//! - pkg/webhooks/resource/generation/handler.go: a trigger that matches makes (or, with
//!   `synchronize`, updates) its downstream; one that no longer matches, or is deleted,
//!   deletes it (`syncTriggerAction`), unless the rule matches DELETE, which generates;
//!   a downstream or clone source that changes is regenerated from its trigger
//!   (`handleNonTrigger`/`processRequest`), a deleted clone source deletes its targets.
//! - pkg/policy/policy_controller.go, pkg/policy/generate.go, pkg/policy/mutate.go: on a
//!   policy's creation or update, `generateExisting` and `mutateExistingOnPolicyUpdate`
//!   run over the existing triggers, synchronized `data` downstreams are rewritten; a rule
//!   or policy deleted deletes its synchronized downstreams (unless
//!   `orphanDownstreamOnPolicyDelete`); a rule whose target changed unlabels the old one.
//! - pkg/background/generate/{controller,generator,cleanup}.go: the UpdateRequest's work.
//!   Downstreams are found by the labels Kyverno puts on them, as it does.

use serde_json::Value;

use super::{Cluster, Key, text};
use crate::offline::kyverno::generate::{
    CLONE_SOURCE, MANAGED_BY, POLICY_NAME, POLICY_NAMESPACE, RULE_NAME, SOURCE_GROUP, SOURCE_KIND,
    SOURCE_NAMESPACE, SOURCE_UID, SOURCE_VERSION, TRIGGER_GROUP, TRIGGER_KIND, TRIGGER_NAMESPACE,
    TRIGGER_UID, TRIGGER_VERSION,
};
use crate::offline::kyverno::validation::BACKGROUND_SA;
use crate::offline::kyverno::{self, Policy, Rule, RuleKind, RuleStatus};

/// How deep generated objects may trigger further generation (a generated object is
/// itself admitted, by Kyverno's background service account).
const MAX_CHAIN: usize = 4;

/// Who wrote the object Kyverno's webhook sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Writer {
    /// The test (`kubernetes-admin`).
    User,
    /// Kyverno's background controller: rules with `skipBackgroundRequests` (the
    /// default) leave it alone, and its writes are no non-trigger events.
    Background,
}

/// A generate rule's standing for one admission request (pkg/engine/background.go
/// `filterRule`).
enum Standing {
    /// It applies: the objects it makes now.
    Pass(Vec<Value>),
    /// It applied to the old object and no longer does (or the object is deleted).
    Fail,
    /// It does not concern the request.
    Apart,
}

impl Cluster {
    /// The ClusterPolicies and Policies Kyverno's background work reads.
    fn all_policies(&self) -> Vec<Policy> {
        kyverno::load_policies(&self.objects).0
    }

    pub(crate) fn engine_options(&self) -> kyverno::Options {
        kyverno::Options {
            exceptions: self
                .objects
                .iter()
                .filter(|o| {
                    text(o, "/kind") == "PolicyException"
                        && text(o, "/apiVersion").starts_with("kyverno.io/")
                })
                .cloned()
                .collect(),
            cluster: std::sync::Arc::new(self.objects.clone()),
            // The API server answers access reviews from the cluster's RBAC (built only
            // when a policy posts one); globalReference entries read the store.
            authorizer: self.rbac_for_policies(),
            global_context: Some(std::sync::Arc::new(self.global_context_store())),
            ..Default::default()
        }
    }

    fn request(
        &self,
        operation: &str,
        object: &Value,
        old: &Value,
        writer: Writer,
    ) -> kyverno::Request {
        let subject = if object.is_null() { old } else { object };
        let ns = text(subject, "/metadata/namespace");
        let user_info = match writer {
            Writer::User => self.user_info(&ns),
            Writer::Background => self.user_info_of(
                &super::requester::Requester::impersonating(BACKGROUND_SA, &[]),
                &ns,
            ),
        };
        kyverno::Request {
            operation: operation.into(),
            object: object.clone(),
            old_object: old.clone(),
            user_info,
            namespace_labels: self.namespace_labels(&ns),
            ..Default::default()
        }
    }

    /// One rule of `policy` run alone on a request: its result and what it generated or
    /// patched.
    fn run_rule(&self, policy: &Policy, rule: &Rule, req: &kyverno::Request) -> kyverno::Response {
        let one = Policy {
            rules: vec![rule.clone()],
            ..policy.clone()
        };
        kyverno::admit_with(&[one], req, &self.engine_options())
    }

    fn standing(
        &self,
        policy: &Policy,
        rule: &Rule,
        op: &str,
        new: &Value,
        old: &Value,
        writer: Writer,
    ) -> Standing {
        if !new.is_null() {
            let resp = self.run_rule(policy, rule, &self.request(op, new, old, writer));
            let result = resp
                .results
                .iter()
                .find(|r| r.kind == RuleKind::Generate && r.rule == rule.name);
            match result.map(|r| (r.status, r.message.as_str())) {
                // An error is the UpdateRequest failing: nothing made.
                Some((RuleStatus::Pass, _)) => return Standing::Pass(resp.generated),
                Some((RuleStatus::Error | RuleStatus::Fail | RuleStatus::Warn, _)) => {
                    return Standing::Pass(Vec::new());
                }
                Some((RuleStatus::Skip, why)) if why != "preconditions not met" => {
                    return Standing::Apart;
                }
                Some((RuleStatus::Skip, _)) => {
                    // Preconditions no longer hold: Fail when they held for the old object.
                    if old.is_null() {
                        return Standing::Apart;
                    }
                    let was =
                        self.run_rule(policy, rule, &self.request(op, old, &Value::Null, writer));
                    let passed = was
                        .results
                        .iter()
                        .any(|r| r.rule == rule.name && r.status == RuleStatus::Pass);
                    return if passed {
                        Standing::Fail
                    } else {
                        Standing::Apart
                    };
                }
                None => {}
            }
        }
        if old.is_null() {
            return Standing::Apart;
        }
        let req = self.request(op, old, &Value::Null, writer);
        match kyverno::matching::rule_matches(rule, policy, &req) {
            Ok(true) => Standing::Fail,
            _ => Standing::Apart,
        }
    }

    /// Generate rules after an admitted write (`new` null: a deletion) of a trigger, and
    /// of a downstream or clone source (non-trigger events).
    pub(super) fn after_write(&mut self, op: &str, new: &Value, old: &Value, writer: Writer) {
        self.trigger_sync(op, new, old, writer, 0);
        if writer == Writer::User && !old.is_null() {
            self.non_trigger(new, old);
        }
        if op == "DELETE" && writer == Writer::User && !self.filtered(old) {
            self.mutate_on_delete(old);
        }
    }

    /// Mutate-existing rules that match DELETE patch their targets when the trigger is
    /// deleted, with the old object as `request.object` (webhooks/resource/updaterequest.go
    /// `handleMutateExisting`; admission runs them for the other operations).
    fn mutate_on_delete(&mut self, old: &Value) {
        let mut patched = Vec::new();
        for policy in &self.admission_policies() {
            for rule in policy
                .rules
                .iter()
                .filter(|r| has_targets(r) && matches_delete(r))
            {
                let req = self.request("DELETE", old, old, Writer::User);
                patched.extend(self.run_rule(policy, rule, &req).patched_targets);
            }
        }
        for t in patched {
            self.made_in_background = true;
            self.store(t);
        }
    }

    fn trigger_sync(&mut self, op: &str, new: &Value, old: &Value, writer: Writer, depth: usize) {
        let subject = if new.is_null() { old } else { new };
        if self.filtered(subject) || depth > MAX_CHAIN {
            return;
        }
        let policies = self.admission_policies();
        let mut made = Vec::new();
        for policy in &policies {
            let ssa = server_side(policy);
            for rule in policy.rules.iter().filter(|r| r.generate.is_some()) {
                if self.background_writes(writer) && skips_background(policy, rule) {
                    continue;
                }
                let standing = self.standing(policy, rule, op, new, old, writer);
                // handler.go `handleTrigger`: a passing or failing rule has a request.
                if !matches!(standing, Standing::Apart) {
                    self.update_requests = true;
                }
                match standing {
                    Standing::Pass(objects) => made.extend(objects.into_iter().map(|o| (o, ssa))),
                    Standing::Fail if op == "DELETE" && matches_delete(rule) => {
                        // Generation fired by the trigger's deletion: the UpdateRequest's
                        // context has the old object as `request.object` too
                        // (common/context.go `NewBackgroundContext`).
                        let req = self.request("DELETE", old, old, writer);
                        let generated = self.run_rule(policy, rule, &req).generated;
                        made.extend(generated.into_iter().map(|o| (o, ssa)));
                    }
                    Standing::Fail if synchronized(rule) => {
                        self.delete_downstream(policy, rule, old);
                    }
                    Standing::Fail | Standing::Apart => {}
                }
            }
        }
        self.store_generated(made, depth);
    }

    /// Stores what the background controller made, tags clone sources, and admits each
    /// made object as Kyverno's own write (it may trigger rules that do not skip
    /// background requests). Each is applied server-side when its policy says so.
    fn store_generated(&mut self, objects: Vec<(Value, bool)>, depth: usize) {
        for (mut g, ssa) in objects {
            if self.place(&mut g).is_err() {
                continue;
            }
            let uid = label(&g, SOURCE_UID);
            if !uid.is_empty() {
                self.tag_source(&uid);
            }
            let old = self.find(&Key::of(&g)).cloned();
            self.made_in_background = true;
            self.store_made(g.clone(), ssa);
            let stored = self.find(&Key::of(&g)).cloned().unwrap_or(g);
            let settings = super::super::controllers::install::settings(&self.objects);
            let events =
                super::super::controllers::events::generated(&self.objects, &stored, &settings);
            self.reports.applied.extend(events);
            let op = if old.is_some() { "UPDATE" } else { "CREATE" };
            let old = old.unwrap_or(Value::Null);
            self.trigger_sync(op, &stored, &old, Writer::Background, depth + 1);
        }
    }

    /// The clone source gets Kyverno's `clone-source` label (source.go `updateSourceLabel`).
    fn tag_source(&mut self, uid: &str) {
        if let Some(src) = self
            .objects
            .iter_mut()
            .find(|o| text(o, "/metadata/uid") == uid)
            && let Some(meta) = src.get_mut("metadata").and_then(Value::as_object_mut)
        {
            let labels = meta
                .entry("labels")
                .or_insert_with(|| Value::Object(Default::default()));
            if let Some(l) = labels.as_object_mut() {
                l.entry(CLONE_SOURCE)
                    .or_insert(Value::String(String::new()));
            }
        }
    }

    /// Deletes the downstreams the rule made for `trigger` (cleanup.go
    /// `handleNonPolicyChanges`: by policy and trigger labels, of the pattern's kinds).
    fn delete_downstream(&mut self, policy: &Policy, rule: &Rule, trigger: &Value) {
        self.update_requests = true;
        let av = text(trigger, "/apiVersion");
        let (group, version) = av.rsplit_once('/').unwrap_or(("", av.as_str()));
        let want = [
            (POLICY_NAME, policy.name.clone()),
            (
                POLICY_NAMESPACE,
                policy.namespace.clone().unwrap_or_default(),
            ),
            (MANAGED_BY, "kyverno".to_string()),
            (TRIGGER_UID, text(trigger, "/metadata/uid")),
            (TRIGGER_NAMESPACE, text(trigger, "/metadata/namespace")),
            (TRIGGER_KIND, text(trigger, "/kind")),
            (TRIGGER_GROUP, group.to_string()),
            (TRIGGER_VERSION, version.to_string()),
        ];
        let kinds = pattern_kinds(rule);
        let doomed: Vec<Key> = self
            .objects
            .iter()
            .filter(|o| kinds.iter().any(|k| k.covers(o)))
            .filter(|o| want.iter().all(|(k, v)| label(o, k) == *v))
            .map(Key::of)
            .collect();
        for key in doomed {
            self.remove(&key);
        }
    }

    /// A change to a downstream or a clone source (handler.go `processRequest`).
    fn non_trigger(&mut self, new: &Value, old: &Value) {
        let labels = old.pointer("/metadata/labels");
        let is_source = labels.and_then(|l| l.get(CLONE_SOURCE)).is_some();
        if !is_source && label(old, POLICY_NAME).is_empty() {
            return;
        }
        // handler.go `processRequest`: a downstream's or clone source's change is a request.
        self.update_requests = true;
        let deleted = new.is_null();
        let targets: Vec<Value> = if label(old, MANAGED_BY) == "kyverno" {
            vec![old.clone()]
        } else {
            let av = text(old, "/apiVersion");
            let (group, version) = av.rsplit_once('/').unwrap_or(("", av.as_str()));
            let want = [
                (SOURCE_GROUP, group.to_string()),
                (SOURCE_VERSION, version.to_string()),
                (SOURCE_KIND, text(old, "/kind")),
                (SOURCE_NAMESPACE, text(old, "/metadata/namespace")),
                (SOURCE_UID, text(old, "/metadata/uid")),
            ];
            self.objects
                .iter()
                .filter(|o| want.iter().all(|(k, v)| label(o, k) == *v))
                .cloned()
                .collect()
        };
        let policies = self.all_policies();
        for target in targets {
            let Some(policy) = policies.iter().find(|p| {
                p.name == label(&target, POLICY_NAME)
                    && p.namespace.clone().unwrap_or_default() == label(&target, POLICY_NAMESPACE)
            }) else {
                continue;
            };
            let rule_name = label(&target, RULE_NAME);
            let Some(rule) = policy
                .rules
                .iter()
                .find(|r| r.name == rule_name && synchronized(r))
            else {
                continue;
            };
            // The changed object is itself a trigger of the rule: its own admission did it.
            let op = if deleted { "DELETE" } else { "UPDATE" };
            let own = self.request(op, old, &Value::Null, Writer::User);
            if kyverno::matching::rule_matches(rule, policy, &own).unwrap_or(false) {
                continue;
            }
            let Some(trigger) = self.trigger_of(&target) else {
                continue;
            };
            if deleted && label(old, MANAGED_BY) != "kyverno" {
                self.delete_downstream(policy, rule, &trigger);
            } else {
                self.regenerate(policy, rule, &trigger);
            }
        }
    }

    /// The trigger a downstream's labels name (common/resource.go `GetResource`: by uid).
    fn trigger_of(&self, downstream: &Value) -> Option<Value> {
        let uid = label(downstream, TRIGGER_UID);
        if uid.is_empty() {
            return None;
        }
        self.objects
            .iter()
            .find(|o| {
                text(o, "/metadata/uid") == uid
                    && text(o, "/kind") == label(downstream, TRIGGER_KIND)
            })
            .cloned()
    }

    /// An UpdateRequest for one rule and trigger, processed: the rule runs on the trigger
    /// as it is now and what it makes is stored.
    fn regenerate(&mut self, policy: &Policy, rule: &Rule, trigger: &Value) {
        self.update_requests = true;
        let req = self.request("CREATE", trigger, &Value::Null, Writer::User);
        let made = self.run_rule(policy, rule, &req).generated;
        let ssa = server_side(policy);
        self.store_generated(made.into_iter().map(|o| (o, ssa)).collect(), 0);
    }

    /// A ClusterPolicy or Policy created or updated (policy_controller.go `addPolicy`,
    /// `updatePolicy`, `syncPolicy`).
    pub(super) fn policy_written(&mut self, new: &Value, old: Option<&Value>) {
        let Some(policy) = kyverno::load_policies(std::slice::from_ref(new)).0.pop() else {
            return;
        };
        let generates = policy.rules.iter().any(|r| r.generate.is_some());
        let mutates = policy.rules.iter().any(has_targets);
        if !generates && !mutates {
            return;
        }
        if let Some(old) = old {
            if old.get("spec") == new.get("spec") {
                return;
            }
            if let Some(before) = kyverno::load_policies(std::slice::from_ref(old)).0.pop() {
                self.rules_changed(&before, &policy);
            }
        }
        self.mutate_existing(&policy);
        self.sync_data(&policy);
        self.generate_existing(&policy);
    }

    /// A ClusterPolicy or Policy deleted: its synchronized downstreams go, unless the rule
    /// orphans them (generate.go `createURForDownstreamDeletion`).
    pub(super) fn policy_deleted(&mut self, old: &Value) {
        if let Some(policy) = kyverno::load_policies(std::slice::from_ref(old)).0.pop() {
            let rules: Vec<&Rule> = policy.rules.iter().collect();
            self.delete_rule_downstreams(&policy, &rules);
        }
    }

    fn delete_rule_downstreams(&mut self, policy: &Policy, rules: &[&Rule]) {
        self.update_requests = true;
        for rule in rules {
            let orphan = rule
                .generate
                .as_ref()
                .and_then(|g| g.get("orphanDownstreamOnPolicyDelete"))
                .and_then(Value::as_bool)
                .unwrap_or(false);
            // Only `data` downstreams go. At v1.19.0 the controller's code also cleans up
            // `clone`/`cloneList` ones (#16329, pkg/policy/generate.go), but the
            // conformance suite of that tag still expects them to stay (clone/sync
            // `*-delete-policy`, `*-delete-rule`): the suite is what a live run shows.
            if !synchronized(rule) || orphan || !has_data(rule) {
                continue;
            }
            let kinds = pattern_kinds(rule);
            let doomed: Vec<Key> = self
                .downstreams(policy, &rule.name)
                .filter(|o| kinds.iter().any(|k| k.covers(o)))
                // The UpdateRequest needs the trigger (controller.go `ProcessUR`).
                .filter(|o| self.trigger_of(o).is_some())
                .map(Key::of)
                .collect();
            for key in doomed {
                self.remove(&key);
            }
        }
    }

    /// Objects labelled as made by the policy's rule.
    fn downstreams<'a>(
        &'a self,
        policy: &'a Policy,
        rule: &'a str,
    ) -> impl Iterator<Item = &'a Value> + 'a {
        let ns = policy.namespace.clone().unwrap_or_default();
        self.objects.iter().filter(move |o| {
            label(o, POLICY_NAME) == policy.name
                && label(o, POLICY_NAMESPACE) == ns
                && label(o, RULE_NAME) == rule
                && label(o, MANAGED_BY) == "kyverno"
        })
    }

    /// generate.go `ruleChange`: rules deleted lose their downstreams; else rules whose
    /// target changed unlabel the old targets, which Kyverno then leaves alone.
    fn rules_changed(&mut self, before: &Policy, after: &Policy) {
        let deleted: Vec<&Rule> = before
            .rules
            .iter()
            .filter(|r| !after.rules.iter().any(|n| n.name == r.name))
            .collect();
        if !deleted.is_empty() {
            self.delete_rule_downstreams(before, &deleted);
            return;
        }
        for old_rule in &before.rules {
            let Some(new_rule) = after.rules.iter().find(|n| n.name == old_rule.name) else {
                continue;
            };
            let (Some(og), Some(ng)) = (&old_rule.generate, &new_rule.generate) else {
                continue;
            };
            let spec = |g: &Value| {
                ["apiVersion", "kind", "namespace", "name", "clone"]
                    .map(|k| g.get(k).cloned().unwrap_or(Value::Null))
            };
            let mut kinds: Vec<String> = Vec::new();
            if spec(og) != spec(ng) {
                kinds.push(
                    og.get("kind")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                );
            }
            if og.get("cloneList") != ng.get("cloneList") {
                kinds.extend(clone_list_kinds(og).into_iter().map(|k| k.kind));
            }
            let kinds: Vec<String> = kinds.into_iter().filter(|k| !k.is_empty()).collect();
            if kinds.is_empty() {
                continue;
            }
            let keys: Vec<Key> = self
                .downstreams(before, &old_rule.name)
                .filter(|o| kinds.iter().any(|k| text(o, "/kind") == *k))
                .map(Key::of)
                .collect();
            for key in keys {
                if let Some(obj) = self.objects.iter_mut().find(|o| key.is_of(o))
                    && let Some(l) = obj
                        .pointer_mut("/metadata/labels")
                        .and_then(Value::as_object_mut)
                {
                    for k in [POLICY_NAME, POLICY_NAMESPACE, RULE_NAME] {
                        l.shift_remove(k);
                    }
                }
            }
        }
    }

    /// generate.go `syncDataPolicyChanges`: a synchronized `data` rule rewrites what it
    /// made, for each downstream's trigger.
    fn sync_data(&mut self, policy: &Policy) {
        for rule in policy.rules.iter().filter(|r| synchronized(r)) {
            if !has_data(rule) {
                continue;
            }
            let kinds = pattern_kinds(rule);
            let triggers: Vec<Value> = self
                .downstreams(policy, &rule.name)
                .filter(|o| kinds.iter().any(|k| k.covers(o)))
                .filter_map(|o| self.trigger_of(o))
                .collect();
            for trigger in dedup(triggers) {
                self.regenerate(policy, rule, &trigger);
            }
        }
    }

    /// generate.go `handleGenerateForExisting`: rules with `generateExisting` (the rule's
    /// own, else the policy's) run over every existing object they match.
    fn generate_existing(&mut self, policy: &Policy) {
        let spec = policy.raw.get("spec");
        let policy_level = spec
            .and_then(|s| {
                s.get("generateExisting")
                    .or_else(|| s.get("generateExistingOnPolicyUpdate"))
            })
            .and_then(Value::as_bool)
            .unwrap_or(false);
        for rule in policy.rules.iter().filter(|r| r.generate.is_some()) {
            let own = rule
                .generate
                .as_ref()
                .and_then(|g| g.get("generateExisting"))
                .and_then(Value::as_bool);
            if !own.unwrap_or(policy_level) {
                continue;
            }
            for trigger in self.candidates(policy) {
                self.regenerate(policy, rule, &trigger);
            }
        }
    }

    /// mutate.go `handleMutate`: mutate-existing rules with `mutateExistingOnPolicyUpdate`
    /// (the rule's own, else the policy's) patch their targets for every existing trigger.
    fn mutate_existing(&mut self, policy: &Policy) {
        let policy_level = policy
            .raw
            .pointer("/spec/mutateExistingOnPolicyUpdate")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        for rule in policy.rules.iter().filter(|r| has_targets(r)) {
            let own = rule
                .mutate
                .as_ref()
                .and_then(|m| m.get("mutateExistingOnPolicyUpdate"))
                .and_then(Value::as_bool);
            if !own.unwrap_or(policy_level) {
                continue;
            }
            for trigger in self.candidates(policy) {
                let req = self.request("CREATE", &trigger, &Value::Null, Writer::User);
                let resp = self.run_rule(policy, rule, &req);
                for t in resp.patched_targets {
                    self.made_in_background = true;
                    self.store(t);
                }
            }
        }
    }

    /// Existing objects a policy's background work may take as triggers: the policy's
    /// namespace for a Policy; not what Kyverno's resource filters leave alone.
    fn candidates(&self, policy: &Policy) -> Vec<Value> {
        self.existing_objects(policy.namespace.as_deref())
    }

    /// The objects a policy's background work may take as triggers (in `namespace` when
    /// given): not Kyverno's policies, not what its resource filters leave alone.
    pub(super) fn existing_objects(&self, namespace: Option<&str>) -> Vec<Value> {
        self.objects
            .iter()
            .filter(|o| {
                !self.filtered(o) && !crate::offline::conformance::is_policy_kind(&text(o, "/kind"))
            })
            .filter(|o| namespace.is_none_or(|ns| text(o, "/metadata/namespace") == ns))
            .cloned()
            .collect()
    }
}

/// A generated kind a rule's downstreams have (apiVersion optional).
struct KindRef {
    api_version: String,
    kind: String,
}

impl KindRef {
    fn covers(&self, o: &Value) -> bool {
        text(o, "/kind") == self.kind
            && (self.api_version.is_empty() || text(o, "/apiVersion") == self.api_version)
    }
}

/// The kinds a generate rule makes (generate.go `cleanupPatterns`), foreach included.
fn pattern_kinds(rule: &Rule) -> Vec<KindRef> {
    let Some(g) = &rule.generate else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut patterns = vec![g];
    patterns.extend(
        g.get("foreach")
            .and_then(Value::as_array)
            .into_iter()
            .flatten(),
    );
    for p in patterns {
        let kind = p.get("kind").and_then(Value::as_str).unwrap_or("");
        if !kind.is_empty() {
            out.push(KindRef {
                api_version: p
                    .get("apiVersion")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .into(),
                kind: kind.into(),
            });
        }
        out.extend(clone_list_kinds(p));
    }
    out
}

fn clone_list_kinds(pattern: &Value) -> Vec<KindRef> {
    pattern
        .pointer("/cloneList/kinds")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|k| !k.contains('*'))
        .map(|k| match k.rsplit_once('/') {
            Some((av, kind)) => KindRef {
                api_version: av.into(),
                kind: kind.into(),
            },
            None => KindRef {
                api_version: String::new(),
                kind: k.into(),
            },
        })
        .collect()
}

/// A `data` rule (or a foreach with `data`).
fn has_data(rule: &Rule) -> bool {
    rule.generate.as_ref().is_some_and(|g| {
        g.get("data").is_some()
            || g.get("foreach")
                .and_then(Value::as_array)
                .is_some_and(|f| f.iter().any(|e| e.get("data").is_some()))
    })
}

fn synchronized(rule: &Rule) -> bool {
    rule.generate
        .as_ref()
        .and_then(|g| g.get("synchronize"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// A mutate-existing rule: the background controller runs it, so its errors never
/// refuse the trigger's admission (pkg/engine/handlers/mutation/mutate_existing.go).
pub(super) fn mutates_existing(policies: &[Policy], policy: &str, rule: &str) -> bool {
    policies
        .iter()
        .filter(|p| p.name == policy)
        .flat_map(|p| &p.rules)
        .any(|r| r.name == rule && has_targets(r))
}

fn has_targets(rule: &Rule) -> bool {
    rule.mutate
        .as_ref()
        .and_then(|m| m.get("targets"))
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty())
}

/// `skipBackgroundRequests` defaults to true (api/kyverno/v1 rule_types.go).
fn skips_background(policy: &Policy, rule: &Rule) -> bool {
    policy
        .raw
        .pointer("/spec/rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|r| r.get("name").and_then(Value::as_str) == Some(rule.base_name()))
        .and_then(|r| r.get("skipBackgroundRequests"))
        .and_then(Value::as_bool)
        .unwrap_or(true)
}

/// The rule lists DELETE among its match operations (webhooks/utils `MatchDeleteOperation`).
fn matches_delete(rule: &Rule) -> bool {
    let Some(m) = &rule.match_ else {
        return false;
    };
    let filters = m
        .any
        .iter()
        .flatten()
        .chain(m.all.iter().flatten())
        .chain(std::iter::once(&m.legacy));
    filters
        .filter_map(|f| f.resources.as_ref())
        .any(|r| r.operations.items.iter().any(|o| o == "DELETE"))
}

/// `spec.useServerSideApply`: the background controller applies what it makes
/// server-side (pkg/background/generate/generator.go).
fn server_side(policy: &Policy) -> bool {
    super::ssa::asks_for_it(&policy.raw)
}

pub(super) fn label(o: &Value, key: &str) -> String {
    o.pointer("/metadata/labels")
        .and_then(|l| l.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

fn dedup(values: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

#[cfg(test)]
#[path = "background_tests.rs"]
pub(super) mod tests;

//! Requests to a subresource of a stored object, through one admission path: the API
//! server names the parent's resource and the subresource in the admission request and
//! sends the subresource's own object (Kubernetes
//! staging/src/k8s.io/apiserver/pkg/endpoints/handlers/rest.go `ConnectResource` for
//! CONNECT, update.go/create.go for the others). Kyverno matches such a request by
//! `Parent/sub` kinds (pkg/engine/utils/match.go `checkKind` with the request's
//! subresource); a ValidatingAdmissionPolicy by `resource/sub` resource rules.
//!
//! - `scale` (`kubectl scale` → `deployments/scale`): an UPDATE whose object and
//!   oldObject are `autoscaling/v1` `Scale`s (pkg/registry/apps/deployment/storage/
//!   storage.go `ScaleREST.Update`); the parent's new `spec.replicas` is stored.
//! - `exec` (`kubectl exec` → `pods/exec`): a CONNECT whose object is a `PodExecOptions`
//!   without metadata (pkg/registry/core/pod/rest/subresources.go `ExecREST`).
//! - `eviction` (a POST to `pods/NAME/eviction`): a CREATE whose object is the
//!   `policy/v1` `Eviction` (pkg/registry/core/pod/storage/eviction.go `EvictionREST`);
//!   admitted, the Pod is deleted by the storage, with no admission of its own.
//! - `status` (a PATCH through `kubectl proxy`): an UPDATE whose object and oldObject are
//!   the whole object; only the status is stored.
//! - `ephemeralcontainers` (`kubectl debug` → `pods/ephemeralcontainers`): an UPDATE
//!   whose object and oldObject are the whole Pod (pkg/registry/core/pod/storage/
//!   storage.go `EphemeralContainersREST`).

use serde_json::{Value, json};

use super::{Answer, Cluster, Key, blocked, text};
use crate::offline::conformance::Skip;
use crate::offline::kyverno::{self, RuleKind};
use crate::offline::vap;

/// Kinds whose `scale` subresource the API server serves (k8s.io/api apps/v1).
const SCALABLE: &[&str] = &["Deployment", "StatefulSet", "ReplicaSet"];

/// CEL policy kinds the replay does not run on a subresource request (Kyverno's own
/// webhooks for them and the MutatingAdmissionPolicy plugin); the
/// ValidatingAdmissionPolicy plugin is run.
const CEL_UNMODELLED: &[&str] = &[
    "ValidatingPolicy",
    "NamespacedValidatingPolicy",
    "MutatingPolicy",
    "NamespacedMutatingPolicy",
    "MutatingAdmissionPolicy",
];

/// One request to a subresource of `parent`.
pub struct SubresourceRequest<'a> {
    /// The stored parent object.
    pub parent: &'a Value,
    /// `CREATE`, `UPDATE` or `CONNECT`.
    pub operation: &'static str,
    /// `scale`, `exec`, `ephemeralcontainers`, …
    pub name: &'static str,
    /// The subresource's object as the API server hands it to admission.
    pub object: Value,
    /// The object before an UPDATE; null otherwise.
    pub old_object: Value,
}

/// The `autoscaling/v1` `Scale` of `parent` with `replicas`; `status.selector` is the
/// parent's `spec.selector` as a string (Kubernetes
/// pkg/registry/apps/deployment/storage/storage.go `scaleFromDeployment`), here for
/// `matchLabels` only (`k=v` sorted by key, as labels.Set's `String`).
fn scale_of(parent: &Value, key: &Key, replicas: &Value) -> Option<Value> {
    let sel = parent.pointer("/spec/selector");
    if sel.and_then(|s| s.get("matchExpressions")).is_some() {
        return None;
    }
    let labels: std::collections::BTreeMap<String, String> = sel
        .and_then(|s| s.get("matchLabels"))
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
        .collect();
    let selector: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    Some(json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
        "metadata": {"name": key.name, "namespace": key.namespace,
            "uid": parent.pointer("/metadata/uid").cloned().unwrap_or(Value::Null)},
        "spec": {"replicas": replicas.clone()},
        "status": {"replicas": replicas.clone(), "selector": selector.join(",")}}))
}

impl Cluster {
    /// Admission of a subresource request in the API server's order: the mutating
    /// webhooks (Kyverno's mutate rules: not modelled on a subresource), the
    /// ValidatingAdmissionPolicy plugin, then Kyverno's validating webhook. `Err` is the
    /// answer when the request is not admitted.
    pub(crate) fn admit_subresource(&mut self, req: &SubresourceRequest<'_>) -> Result<(), Answer> {
        self.forget_last_answer();
        // kubectl reads the parent, then sends the subresource request: a patch of
        // `scale` or `ephemeralcontainers` (kubectl pkg/scale `ScaleSimple`, kubectl
        // debug), a create of `eviction` or a connect to `exec` (authorized as create).
        let verb = if req.operation == "UPDATE" {
            "patch"
        } else {
            "create"
        };
        for (verb, sub) in [("get", ""), (verb, req.name)] {
            self.authorize(verb, req.parent, sub)?;
        }
        if let Some(kind) = self
            .objects
            .iter()
            .map(|o| text(o, "/kind"))
            .find(|k| CEL_UNMODELLED.contains(&k.as_str()))
        {
            return Err(Answer::Undecidable(Skip::Engine(format!(
                "a {kind} on a subresource request"
            ))));
        }
        let parent_av = text(req.parent, "/apiVersion");
        let parent_kind = text(req.parent, "/kind");
        let ns = text(req.parent, "/metadata/namespace");
        let mut vreq = self.vap_request(req.parent, None);
        vreq.operation = req.operation.into();
        vreq.object = req.object.clone();
        vreq.old_object = req.old_object.clone();
        vreq.sub_resource = req.name.into();
        vreq.parent = Some((parent_av.clone(), parent_kind.clone()));
        let out = vap::evaluate(&self.objects, &vreq);
        if let Some(e) = out.unsupported() {
            return Err(Answer::Undecidable(super::vap_skip(e)));
        }
        if let Some(d) = out.denials.first() {
            // The Forbidden names the parent's resource and name (admission.NewForbidden).
            return Err(Answer::Refused(d.status_message(req.parent)));
        }
        // Kyverno's resourceFilters see the parent's kind, namespace and name here, and
        // the request's subresource.
        if self.filtered_sub(req.parent, req.name) {
            return Ok(());
        }
        let policies = super::webhook::policies_called(self.admission_policies(), &vreq)?;
        let kreq = kyverno::Request {
            operation: req.operation.into(),
            object: req.object.clone(),
            old_object: req.old_object.clone(),
            user_info: self.user_info(&ns),
            namespace_labels: self.namespace_labels(&ns),
            subresource: Some(kyverno::Subresource {
                parent_api_version: parent_av,
                parent_kind,
                name: req.name.into(),
                parent_namespace: ns.clone(),
                parent_name: text(req.parent, "/metadata/name"),
            }),
            ..Default::default()
        };
        let resp = kyverno::admit_with(&policies, &kreq, &self.engine_options());
        if let Some(r) = resp.results.iter().find(|r| r.unsupported.is_some()) {
            let why = r.unsupported.as_ref().map(ToString::to_string);
            return Err(Answer::Undecidable(Skip::from_unsupported(
                r.kind,
                why.unwrap_or_default(),
            )));
        }
        if resp.results.iter().any(|r| r.kind == RuleKind::Mutate) {
            return Err(Answer::Undecidable(Skip::Engine(
                "mutate rules on a subresource request".into(),
            )));
        }
        // Kyverno's engine sees the object with the request's namespace set
        // (pkg/utils/admission/resource.go `ConvertResource`); its message names it so.
        let mut seen = req.object.clone();
        if !ns.is_empty()
            && let Some(o) = seen.as_object_mut()
        {
            let meta = o.entry("metadata").or_insert_with(|| json!({}));
            if let Some(m) = meta.as_object_mut() {
                m.insert("namespace".into(), json!(ns));
            }
        }
        if let Some((msg, unworded)) = blocked(&policies, &resp, &seen) {
            self.unworded = unworded;
            self.reports.refused();
            return Err(Answer::Refused(msg));
        }
        Ok(())
    }

    /// `kubectl scale` of the object at `key` to `replicas`.
    pub fn scale(&mut self, key: &Key, replicas: i64) -> Answer {
        let Some(old) = self.find(key).cloned() else {
            return Answer::Refused(String::new());
        };
        if !SCALABLE.contains(&key.kind.as_str()) {
            return Answer::Undecidable(Skip::Engine(format!("the scale of a {}", key.kind)));
        }
        let old_replicas = old.pointer("/spec/replicas").cloned().unwrap_or(json!(1));
        let (Some(new_scale), Some(old_scale)) = (
            scale_of(&old, key, &json!(replicas)),
            scale_of(&old, key, &old_replicas),
        ) else {
            return Answer::Undecidable(Skip::Engine(
                "a Scale's selector from matchExpressions".into(),
            ));
        };
        let req = SubresourceRequest {
            parent: &old,
            operation: "UPDATE",
            name: "scale",
            object: new_scale,
            old_object: old_scale,
        };
        if let Err(answer) = self.admit_subresource(&req) {
            return answer;
        }
        let mut new = old.clone();
        if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("replicas".into(), json!(replicas));
        }
        // The parent is written by the subresource's storage: no admission of its own.
        self.store(new);
        crate::offline::conformance::controllers::reconcile(self);
        Answer::Ok
    }

    /// An UPDATE of `old`'s `status` to `patched`'s: the object is the whole object
    /// with the new status, and the status strategies keep the rest as stored
    /// (Kubernetes pkg/registry/*/strategy.go `…StatusStrategy.PrepareForUpdate`).
    pub fn update_status(&mut self, old: &Value, patched: &Value) -> Answer {
        let mut new = old.clone();
        if let Some(m) = new.as_object_mut() {
            match patched.get("status") {
                Some(status) => {
                    m.insert("status".into(), status.clone());
                }
                None => {
                    m.shift_remove("status");
                }
            }
        }
        if new == *old {
            return Answer::Ok;
        }
        let req = SubresourceRequest {
            parent: old,
            operation: "UPDATE",
            name: "status",
            object: new.clone(),
            old_object: old.clone(),
        };
        if let Err(answer) = self.admit_subresource(&req) {
            return answer;
        }
        self.store(new);
        crate::offline::conformance::controllers::reconcile(self);
        Answer::Ok
    }

    /// A CONNECT of `pod`'s `exec` with `options` (a `PodExecOptions`): admitted or not.
    /// What runs after admission is the kubelet's.
    pub fn connect_exec(&mut self, pod: &Value, options: Value) -> Answer {
        let req = SubresourceRequest {
            parent: pod,
            operation: "CONNECT",
            name: "exec",
            object: options,
            old_object: Value::Null,
        };
        match self.admit_subresource(&req) {
            Ok(()) => Answer::Ok,
            Err(a) => a,
        }
    }

    /// A CREATE of `pod`'s `eviction` with `eviction` (a `policy/v1` `Eviction`). A
    /// PodDisruptionBudget in the Pod's namespace is decided by its status, which the
    /// disruption controller keeps: a skip.
    pub fn evict(&mut self, pod: &Value, eviction: Value) -> Answer {
        let ns = text(pod, "/metadata/namespace");
        if self.objects.iter().any(|o| {
            text(o, "/kind") == "PodDisruptionBudget" && text(o, "/metadata/namespace") == ns
        }) {
            return Answer::Undecidable(Skip::Controller(
                crate::offline::conformance::controllers::Maker::Other(
                    "a PodDisruptionBudget's status (the disruption controller)".into(),
                ),
            ));
        }
        let req = SubresourceRequest {
            parent: pod,
            operation: "CREATE",
            name: "eviction",
            object: eviction,
            old_object: Value::Null,
        };
        if let Err(answer) = self.admit_subresource(&req) {
            return answer;
        }
        self.removed(pod.clone())
    }

    /// An UPDATE of `old`'s `ephemeralcontainers` to each of `candidates` (the Pod as
    /// the kubectl versions a test may run make it): stored (the first) when all are
    /// admitted, refused when all are refused alike, undecidable when they differ.
    pub fn update_ephemeral_containers(&mut self, old: &Value, candidates: Vec<Value>) -> Answer {
        let mut answers = Vec::with_capacity(candidates.len());
        for new in &candidates {
            let req = SubresourceRequest {
                parent: old,
                operation: "UPDATE",
                name: "ephemeralcontainers",
                object: new.clone(),
                old_object: old.clone(),
            };
            match self.admit_subresource(&req) {
                Ok(()) => answers.push(None),
                Err(Answer::Refused(m)) => answers.push(Some(m)),
                Err(other) => return other,
            }
        }
        let Some(first) = answers.first().cloned() else {
            return Answer::Undecidable(Skip::Engine("a debug container without a Pod".into()));
        };
        if answers.iter().any(|a| *a != first) {
            return Answer::Undecidable(Skip::Engine(
                "a debug container admitted or refused by the kubectl version's profile".into(),
            ));
        }
        if let Some(m) = first {
            return Answer::Refused(m);
        }
        if let Some(new) = candidates.into_iter().next() {
            self.store(new);
        }
        crate::offline::conformance::controllers::reconcile(self);
        Answer::Ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_eviction_is_a_create_kyverno_sees_with_the_pods_name() {
        let mut c = Cluster::new("t");
        let policy = json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "no-evict"},
            "spec": {"background": false, "rules": [{"name": "r",
                "match": {"any": [{"resources": {"kinds": ["Pod/eviction"]}}]},
                "validate": {"failureAction": "Enforce", "message": "kept",
                    "deny": {"conditions": {"all": [{"key": "{{ request.name }}",
                        "operator": "Equals", "value": "keep"}]}}}}]}});
        assert!(matches!(c.apply(&policy, false), Answer::Ok));
        for name in ["keep", "go"] {
            let pod = json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "t"},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
            assert!(matches!(c.apply(&pod, false), Answer::Ok));
        }
        let eviction = |name: &str| {
            json!({"apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": name, "namespace": "t"}})
        };
        for (name, refused) in [("keep", true), ("go", false)] {
            let key = Key {
                group: String::new(),
                kind: "Pod".into(),
                namespace: "t".into(),
                name: name.into(),
            };
            let pod = c.find(&key).cloned().unwrap_or_default();
            let answer = c.evict(&pod, eviction(name));
            assert_eq!(matches!(answer, Answer::Refused(_)), refused, "{name}");
            assert_eq!(c.find(&key).is_some(), refused, "{name}");
        }
    }
}

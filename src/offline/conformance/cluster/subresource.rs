//! Writes to a `scale` subresource (`kubectl scale` → `deployments/scale`,
//! `statefulsets/scale`): the API server sends Kyverno an UPDATE whose object and
//! oldObject are `autoscaling/v1` `Scale`s with `subResource: scale` (Kubernetes
//! pkg/registry/apps/deployment/storage/storage.go `ScaleREST.Update`; Kyverno matches
//! it by `Deployment/scale` kinds, pkg/engine/utils/match.go `checkKind` with the
//! request's subresource), then stores the parent's new `spec.replicas`.

use serde_json::{Value, json};

use super::{Answer, Cluster, Key, blocked, filtered, text};
use crate::offline::conformance::Skip;
use crate::offline::kyverno::{self, RuleKind};

/// Kinds whose `scale` subresource the API server serves (k8s.io/api apps/v1).
const SCALABLE: &[&str] = &["Deployment", "StatefulSet", "ReplicaSet"];

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
    /// `kubectl scale` of the object at `key` to `replicas`.
    pub fn scale(&mut self, key: &Key, replicas: i64) -> Answer {
        let Some(old) = self.find(key).cloned() else {
            return Answer::Refused(String::new());
        };
        if !SCALABLE.contains(&key.kind.as_str()) {
            return Answer::Undecidable(Skip::Engine(format!("the scale of a {}", key.kind)));
        }
        // kubectl reads the object, then patches its scale (kubectl pkg/scale `ScaleSimple`).
        for (verb, sub) in [("get", ""), ("patch", "scale")] {
            if let Err(answer) = self.authorize(verb, &old, sub) {
                return answer;
            }
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
        let cel_kinds = [
            "ValidatingAdmissionPolicy",
            "ValidatingPolicy",
            "MutatingPolicy",
            "MutatingAdmissionPolicy",
        ];
        if self
            .objects
            .iter()
            .any(|o| cel_kinds.contains(&text(o, "/kind").as_str()))
        {
            return Answer::Undecidable(Skip::Engine(
                "CEL admission policies on a subresource request".into(),
            ));
        }
        if !filtered(&old) {
            let policies = self.admission_policies();
            let kreq = kyverno::Request {
                operation: "UPDATE".into(),
                object: new_scale.clone(),
                old_object: old_scale,
                user_info: self.user_info(&key.namespace),
                namespace_labels: self.namespace_labels(&key.namespace),
                subresource: Some(kyverno::Subresource {
                    parent_api_version: text(&old, "/apiVersion"),
                    parent_kind: key.kind.clone(),
                    name: "scale".into(),
                }),
                ..Default::default()
            };
            let resp = kyverno::admit_with(&policies, &kreq, &self.engine_options());
            if let Some(r) = resp.results.iter().find(|r| r.unsupported.is_some()) {
                let why = r.unsupported.as_ref().map(ToString::to_string);
                return Answer::Undecidable(Skip::from_unsupported(
                    r.kind,
                    why.unwrap_or_default(),
                ));
            }
            if resp.results.iter().any(|r| r.kind == RuleKind::Mutate) {
                return Answer::Undecidable(Skip::Engine(
                    "mutate rules on a subresource request".into(),
                ));
            }
            if let Some((msg, unworded)) = blocked(&policies, &resp, &new_scale) {
                self.unworded = unworded;
                self.reports.refused();
                return Answer::Refused(msg);
            }
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
}

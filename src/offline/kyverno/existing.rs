//! `mutate.targets`: a mutate rule that patches existing resources when its trigger is
//! admitted (Kyverno's mutate-existing, `pkg/engine/mutate`'s target loading). The
//! targets come from the objects the caller knows (`Options::cluster`, a test's
//! `targetResources`); each is patched with `target` bound to it (its own `context` and
//! `preconditions` too), while `request.object` stays the trigger. The trigger itself is
//! never changed.

use serde_json::Value;

use super::entries::{Options, load_context};
use super::matching::{selector_matches, wildcard_match};
use super::outcome::Outcome;
use super::rule::Rule;
use super::{Context, conditions, mutate, vars};
use crate::offline::labels::labels_of;

/// The targets the rule patched (only those it changed). An `Err` is the rule's outcome
/// otherwise: no target found or nothing changed (a skip), or a rule error.
pub fn apply_targets(rule: &Rule, ctx: &Context, opts: &Options) -> Result<Vec<Value>, Outcome> {
    let specs = rule
        .mutate
        .as_ref()
        .and_then(|m| m.get("targets"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    // The patch part of the rule, without its targets.
    let mut body = rule.clone();
    if let Some(m) = body.mutate.as_mut().and_then(Value::as_object_mut) {
        m.shift_remove("targets");
    }
    let mut patched = Vec::new();
    let mut found = 0;
    for (i, spec) in specs.iter().enumerate() {
        // Only the selector is resolved up front (handlers/mutation/load_targets.go
        // `resolveSpec`); the target's own context and preconditions see `target`.
        let mut selector = spec.clone();
        if let Some(m) = selector.as_object_mut() {
            m.shift_remove("context");
            m.shift_remove("preconditions");
        }
        let resolved = vars::substitute(&selector, ctx).map_err(|e| {
            Outcome::error(format!(
                "failed to substitute variables in target[{i}]: {e}"
            ))
        })?;
        let subresource = target_subresource(&resolved);
        if subresource.as_deref().is_some_and(|s| s != "status") {
            // A target's other subresources (`scale`) are objects of their own.
            return Err(Outcome::unsupported(
                super::outcome::Unsupported::MutateTargets,
            ));
        }
        for target in opts.cluster.iter().filter(|o| is_target(&resolved, o)) {
            let mut target_ctx = ctx.clone();
            target_ctx.add_variable("target", target.clone());
            load_context(spec, &mut target_ctx, opts, None)?;
            if let Some(pre) = spec.get("preconditions").filter(|p| !p.is_null()) {
                let pass = conditions::evaluate_preconditions(pre, &target_ctx).map_err(|e| {
                    Outcome::error(format!(
                        "failed to evaluate mutate.targets[{i}].preconditions: {e}"
                    ))
                })?;
                if !pass {
                    continue;
                }
            }
            found += 1;
            match mutate::apply_rule_with(&body, target, &target_ctx, opts) {
                // A `status` target is written through its subresource: the status
                // strategies keep the rest of the stored object.
                Ok(p) if subresource.is_some() => {
                    let mut kept = target.clone();
                    if let (Some(m), Some(status)) = (kept.as_object_mut(), p.get("status")) {
                        m.insert("status".into(), status.clone());
                    }
                    if kept != *target {
                        patched.push(kept);
                    }
                }
                Ok(p) => patched.push(p),
                Err(o) if o.message == mutate::NO_CHANGE => {}
                Err(o) => return Err(o),
            }
        }
    }
    if found == 0 {
        return Err(Outcome::skip("no target resources found"));
    }
    if patched.is_empty() {
        return Err(Outcome::skip(mutate::NO_CHANGE));
    }
    Ok(patched)
}

/// A target's kind split as pkg/utils/kube/kind.go `ParseKindSelector` splits
/// `apiVersion/kind` (load_targets.go `getTargets`): the kind and its subresource
/// (`Node/status`; a status is read and written as the whole object).
fn target_kind(spec: &Value) -> (String, Option<String>) {
    let kind = spec.get("kind").and_then(Value::as_str).unwrap_or("");
    match kind.split_once('/') {
        Some((k, sub)) => (k.to_string(), Some(sub.to_string())),
        None => (kind.to_string(), None),
    }
}

fn target_subresource(spec: &Value) -> Option<String> {
    target_kind(spec).1
}

/// Whether `object` is one of the resources a resolved target spec names: apiVersion
/// and kind, name (wildcards), namespace and label selector where given.
fn is_target(spec: &Value, object: &Value) -> bool {
    let s = |v: &Value, p: &str| {
        v.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let want_version = s(spec, "/apiVersion");
    // `apiVersion: '*'` (or `*/v1`) matches any group or version.
    if s(object, "/kind") != target_kind(spec).0
        || (!want_version.is_empty() && !wildcard_match(&want_version, &s(object, "/apiVersion")))
    {
        return false;
    }
    let name = s(spec, "/name");
    if !name.is_empty() && !wildcard_match(&name, &s(object, "/metadata/name")) {
        return false;
    }
    let namespace = s(spec, "/namespace");
    if !namespace.is_empty() && !wildcard_match(&namespace, &s(object, "/metadata/namespace")) {
        return false;
    }
    match spec.get("selector").filter(|v| !v.is_null()) {
        Some(sel) => selector_matches(sel, &labels_of(object)).unwrap_or(false),
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offline::kyverno::{Request, load_policies};
    use serde_json::json;

    fn secret(ns: &str, name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns}})
    }

    #[test]
    fn targets_are_patched_and_the_trigger_is_left_alone() {
        let policy = json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "p"}, "spec": {"rules": [{"name": "r",
                "match": {"any": [{"resources": {"kinds": ["ConfigMap"]}}]},
                "mutate": {"targets": [{"apiVersion": "v1", "kind": "Secret", "name": "secret-*",
                                        "namespace": "{{request.object.metadata.namespace}}"}],
                           "patchStrategicMerge": {"metadata": {"labels": {
                               "from": "{{request.object.metadata.name}}",
                               "was": "{{target.metadata.name}}"}}}}}]}});
        let (policies, _) = load_policies(&[policy]);
        let trigger = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "staging"}});
        let opts = Options {
            cluster: std::sync::Arc::new(vec![
                secret("staging", "secret-1"),
                secret("prod", "secret-1"),
                secret("staging", "other"),
            ]),
            ..Options::default()
        };
        let req = Request {
            object: trigger.clone(),
            ..Request::default()
        };
        let resp = crate::offline::kyverno::admit_with(&policies, &req, &opts);
        assert_eq!(
            resp.results[0].status,
            crate::offline::kyverno::RuleStatus::Pass
        );
        assert_eq!(resp.patched, trigger);
        assert_eq!(resp.patched_targets.len(), 1, "{:?}", resp.patched_targets);
        let t = &resp.patched_targets[0];
        assert_eq!(t.pointer("/metadata/namespace"), Some(&json!("staging")));
        assert_eq!(t.pointer("/metadata/labels/from"), Some(&json!("cm")));
        assert_eq!(t.pointer("/metadata/labels/was"), Some(&json!("secret-1")));
    }

    /// A target's `context` may read `target` (Kyverno loads it once the target is bound):
    /// it used to be loaded before, and failed on `target.data…`.
    #[test]
    fn a_target_context_entry_reads_the_target() {
        let policy = json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "p"}, "spec": {"rules": [{"name": "r",
                "match": {"any": [{"resources": {"kinds": ["ConfigMap"], "names": ["trigger"]}}]},
                "mutate": {"targets": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "t*",
                                        "namespace": "{{request.object.metadata.namespace}}",
                                        "context": [{"name": "content", "variable": {"jmesPath": "target.data.content"}}],
                                        "preconditions": {"all": [{"key": "{{content}}", "operator": "Equals", "value": "old"}]}}],
                           "patchStrategicMerge": {"data": {"content": "new-{{content}}"}}}}]}});
        let (policies, _) = load_policies(&[policy]);
        let cm = |name: &str, content: &str| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "ns"}, "data": {"content": content}})
        };
        let opts = Options {
            cluster: std::sync::Arc::new(vec![cm("target-1", "old"), cm("target-2", "other")]),
            ..Options::default()
        };
        let req = Request {
            object: cm("trigger", "x"),
            ..Request::default()
        };
        let resp = crate::offline::kyverno::admit_with(&policies, &req, &opts);
        assert_eq!(resp.patched_targets.len(), 1, "{:?}", resp.results);
        assert_eq!(
            resp.patched_targets[0].pointer("/data/content"),
            Some(&json!("new-old"))
        );
    }
}

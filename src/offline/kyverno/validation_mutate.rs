//! Kyverno 1.19.0's policy checks for mutate-existing rules (`mutate.targets`):
//! - pkg/validation/policy/validate.go `hasInvalidVariables`: `target` is bound only
//!   once a target is loaded, so a rule's `context` and `preconditions` and a target's
//!   `apiVersion`/`kind`/`namespace`/`name` may not use it (Kyverno substitutes them with
//!   a mock context that lacks `target`);
//! - pkg/policy/mutate/validate.go `validateAuth`: the background controller must be
//!   allowed to get and update each target kind, asked for the target's namespace and
//!   name as written (cluster mode only).

use serde_json::Value;

use super::{BACKGROUND_SA, Mode};

/// The first problem, in Kyverno's words; `None` when the rules pass.
pub(super) fn variables_problem(rules: &[Value]) -> Option<String> {
    for rule in rules {
        let Some(targets) = rule.pointer("/mutate/targets").and_then(Value::as_array) else {
            continue;
        };
        let mut before: Vec<&Value> = Vec::new();
        before.extend(rule.get("context"));
        before.extend(rule.get("preconditions"));
        for (i, t) in targets.iter().enumerate() {
            let spec: Vec<&Value> = ["apiVersion", "kind", "namespace", "name"]
                .iter()
                .filter_map(|k| t.get(*k))
                .collect();
            if let Some(var) = before.iter().chain(&spec).find_map(|v| target_variable(v)) {
                return Some(format!(
                    "policy contains invalid variables: invalid variables defined at mutate.targets[{i}]: variable {var} is not available before the target is loaded"
                ));
            }
        }
    }
    None
}

/// The first `{{ target… }}` variable inside `v`.
fn target_variable(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => {
            let mut rest = s.as_str();
            while let Some(start) = rest.find("{{") {
                let after = &rest[start + 2..];
                let end = after.find("}}")?;
                let inner = after[..end].trim();
                if inner == "target" || inner.starts_with("target.") || inner.starts_with("target[")
                {
                    return Some(inner.to_string());
                }
                rest = &after[end + 2..];
            }
            None
        }
        Value::Array(a) => a.iter().find_map(target_variable),
        Value::Object(m) => m.values().find_map(target_variable),
        _ => None,
    }
}

/// `validateAuth` for rule `i`: get and update on each target kind for the background
/// controller, in the target's namespace as written.
pub(super) fn auth_problem(i: usize, rule: &Value, mode: Mode<'_>) -> Option<String> {
    let Mode::Cluster { authorizer, mapper } = mode else {
        return None;
    };
    let targets = rule.pointer("/mutate/targets").and_then(Value::as_array)?;
    let mut failures = Vec::new();
    for t in targets {
        let s = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or("");
        let (api_version, kind, namespace) = (s("apiVersion"), s("kind"), s("namespace"));
        // The SubjectAccessReview names the target as written, variables and all.
        let name = s("name");
        if kind.contains("{{") {
            continue;
        }
        let (kind, subresource) = kind.split_once('/').unwrap_or((kind, ""));
        let gvk = format!("{api_version}/{kind}");
        let found = if api_version.is_empty() || api_version.contains('*') {
            mapper.for_bare_kind(kind)
        } else {
            mapper.for_kind(api_version, kind)
        };
        let Some(resource) = found else {
            failures.push(format!("failed to get GVR for kind {gvk}"));
            continue;
        };
        let failed = super::denied_verbs(
            authorizer,
            BACKGROUND_SA,
            &["get", "update"],
            resource,
            subresource,
            namespace,
            name,
        );
        if !failed.is_empty() {
            let mut msg = format!(
                "{BACKGROUND_SA} requires permissions {} for resource {gvk}",
                failed.join(",")
            );
            if !namespace.is_empty() {
                msg.push_str(&format!(" in namespace {namespace}"));
            }
            failures.push(msg);
        }
    }
    if failures.is_empty() {
        return None;
    }
    Some(format!(
        "path: spec.rules[{i}].mutate.targets.: auth check fails, additional privileges are required for the service account '{BACKGROUND_SA}': {}",
        failures.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offline::rbac::Authorizer;
    use crate::offline::rbac::resource::Mapper;
    use serde_json::json;

    fn rule(targets: Value, context: Value) -> Value {
        json!({"name": "r", "match": {"any": [{"resources": {"kinds": ["Secret"]}}]},
            "context": context,
            "mutate": {"targets": targets, "patchStrategicMerge": {"metadata": {"labels": {
                "from": "{{ target.metadata.name }}"}}}}})
    }

    /// `target` in a target's namespace or in the rule's context was accepted; Kyverno
    /// refuses it (the target is not loaded yet there). In the patch it is fine.
    #[test]
    fn target_variables_before_the_target_is_loaded_are_refused() {
        let in_ns = rule(
            json!([{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "{{target.metadata.annotations.dns}}"}]),
            json!([]),
        );
        let e = variables_problem(&[in_ns]).unwrap();
        assert!(e.contains("mutate.targets[0]"), "{e}");
        let in_context = rule(
            json!([{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "ns"}]),
            json!([{"name": "c", "variable": {"jmesPath": "{{target.data.content}}"}}]),
        );
        assert!(variables_problem(&[in_context]).is_some());
        let fine = rule(
            json!([{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "{{request.object.metadata.namespace}}",
                    "context": [{"name": "c", "variable": {"jmesPath": "target.data"}}]}]),
            json!([]),
        );
        assert_eq!(variables_problem(&[fine]), None);
    }

    /// The background controller's permission on mutate targets was not checked.
    #[test]
    fn targets_the_background_controller_cannot_update_are_refused() {
        let r = rule(
            json!([{"apiVersion": "v1", "kind": "ServiceAccount"}]),
            json!([]),
        );
        let none = Authorizer::new(&[]);
        let mapper = Mapper::built_in();
        let mode = Mode::Cluster {
            authorizer: &none,
            mapper: &mapper,
        };
        let e = auth_problem(0, &r, mode).unwrap();
        assert!(
            e.contains("requires permissions get,update for resource v1/ServiceAccount"),
            "{e}"
        );
        let granted = Authorizer::new(&[
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "sa"},
                "rules": [{"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["get", "update"]}]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "sa"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "sa"},
                "subjects": [{"kind": "ServiceAccount", "name": "kyverno-background-controller", "namespace": "kyverno"}]}),
        ]);
        let mode = Mode::Cluster {
            authorizer: &granted,
            mapper: &mapper,
        };
        assert_eq!(auth_problem(0, &r, mode), None);
        assert_eq!(auth_problem(0, &r, Mode::Cli), None);
    }

    /// A role granting the target by `resourceNames` was not counted: Kyverno asks for
    /// the named target, so the grant holds for it (and only for it).
    #[test]
    fn a_grant_by_resource_name_covers_the_named_target() {
        let granted = Authorizer::new(&[
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "one"},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                    "resourceNames": ["settings"], "verbs": ["get", "update"]}]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "one"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "one"},
                "subjects": [{"kind": "ServiceAccount", "name": "kyverno-background-controller", "namespace": "kyverno"}]}),
        ]);
        let mapper = Mapper::built_in();
        let mode = Mode::Cluster {
            authorizer: &granted,
            mapper: &mapper,
        };
        let named = |name: &str| {
            rule(
                json!([{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "app", "name": name}]),
                json!([]),
            )
        };
        assert_eq!(auth_problem(0, &named("settings"), mode), None);
        assert!(auth_problem(0, &named("other"), mode).is_some());
    }
}

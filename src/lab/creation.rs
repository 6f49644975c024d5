//! Offline facts about a learner's policy at creation that the policy validation
//! (`offline::kyverno::validation`, which decides accept or reject) does not carry: the
//! deprecation warning Kyverno 1.19 adds to every accepted `kyverno.io` policy, and
//! whether a generate rule keeps its copies in sync. Pure.

use serde_json::Value;

/// The warning Kyverno 1.19's policy webhook returns for a legacy `kyverno.io` kind
/// (pkg/deprecations/deprecations.go, added in pkg/webhooks/policy/handlers.go); `None`
/// for other kinds.
pub fn deprecation_warning(policy: &Value) -> Option<String> {
    let group = policy
        .get("apiVersion")
        .and_then(Value::as_str)
        .and_then(|a| a.split_once('/'))
        .map(|(g, _)| g);
    if group != Some("kyverno.io") {
        return None;
    }
    let kind = policy.get("kind").and_then(Value::as_str)?;
    let replacement = match kind {
        "ClusterPolicy" => {
            "ValidatingPolicy, MutatingPolicy, GeneratingPolicy or ImageValidatingPolicy"
        }
        "Policy" => {
            "NamespacedValidatingPolicy, NamespacedMutatingPolicy, NamespacedGeneratingPolicy \
             or NamespacedImageValidatingPolicy"
        }
        "ClusterCleanupPolicy" => "DeletingPolicy",
        "CleanupPolicy" => "NamespacedDeletingPolicy",
        "PolicyException" => "PolicyException",
        _ => return None,
    };
    Some(format!(
        "{kind} (kyverno.io) is deprecated and will be removed in a future release; migrate \
         to {replacement} (policies.kyverno.io), see \
         https://kyverno.io/docs/guides/migration-to-cel/"
    ))
}

/// Whether the generate rule that makes `generated` has `synchronize: true`.
pub fn synchronized(objects: &[Value], generated: &Value) -> bool {
    let s = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_string);
    let (kind, name) = (s(generated, "/kind"), s(generated, "/metadata/name"));
    objects
        .iter()
        .filter(|o| {
            matches!(
                o.get("kind").and_then(Value::as_str),
                Some("ClusterPolicy" | "Policy")
            )
        })
        .filter_map(|o| o.pointer("/spec/rules").and_then(Value::as_array))
        .flatten()
        .filter_map(|r| r.get("generate"))
        .any(|g| {
            s(g, "/kind") == kind
                && s(g, "/name") == name
                && g.get("synchronize").and_then(Value::as_bool) == Some(true)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn legacy_kinds_warn_and_new_kinds_do_not() {
        let w =
            deprecation_warning(&json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy"}))
                .unwrap();
        assert!(
            w.starts_with("ClusterPolicy (kyverno.io) is deprecated and will be removed"),
            "{w}"
        );
        assert!(w.contains("migration-to-cel"), "{w}");
        assert!(
            deprecation_warning(
                &json!({"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy"})
            )
            .is_none()
        );
    }

    #[test]
    fn synchronize_is_read_from_the_rule_that_generates_the_object() {
        let pol = |sync: bool| {
            json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "p"},
                "spec": {"rules": [{"name": "r", "generate": {"apiVersion": "v1", "kind": "ConfigMap",
                    "name": "c", "synchronize": sync, "clone": {"namespace": "s", "name": "c"}}}]}})
        };
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "t"}});
        assert!(synchronized(&[pol(true)], &cm));
        assert!(!synchronized(&[pol(false)], &cm));
    }
}

//! Offline, Kyverno's answer when a learner's policy is created (the `accepted` check) and
//! whether a generate rule keeps its copies in sync. Pure: the cluster is the lab's object
//! set over the baseline RBAC. What Kyverno refuses is decided by the engine's policy
//! validation (`offline::kyverno::validation`); this module turns it into the API server's
//! answer and adds the deprecation warning 1.19 gives every ClusterPolicy/Policy.

use serde_json::Value;

use crate::offline::kyverno::background::Access;
use crate::offline::kyverno::validation::{self, Mode};
use crate::target::{Admission, Denial, DeniedBy};

/// A policy kind whose creation checks kca does not model offline: whether Kyverno
/// accepts it needs a cluster (the `accepted` check is skipped with this reason).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "offline, kca models Kyverno's creation checks of ClusterPolicy and Policy only; \
     whether Kyverno accepts this {kind} needs a cluster"
)]
pub struct NotModelled {
    pub kind: String,
}

/// A skip reason is text in a check's result.
impl From<NotModelled> for String {
    fn from(e: NotModelled) -> String {
        e.to_string()
    }
}

/// Kyverno's answer to creating `policy`, as its policy validation webhook
/// (`validate-policy.kyverno.svc`, pkg/webhooks/policy/handlers.go) gives it: the problems
/// `validation::validate_policy` finds against the cluster's RBAC (`access`), else an
/// allow with the warnings it returns (`validation::admission`: its checks, then the
/// deprecation notice of pkg/deprecations/deprecations.go).
pub fn admit_policy(access: &Access, policy: &Value) -> Result<Admission, NotModelled> {
    let kind = policy.get("kind").and_then(Value::as_str).unwrap_or("");
    if !matches!(kind, "ClusterPolicy" | "Policy") {
        return Err(NotModelled {
            kind: kind.to_string(),
        });
    }
    let (problems, warned) = validation::admission(
        policy,
        None,
        Mode::Cluster {
            authorizer: access.authorizer(),
            mapper: access.mapper(),
        },
    );
    if let Some(message) = validation::denial_text(&problems) {
        let by = DeniedBy::Other;
        return Ok(Admission::Denied(Denial {
            by: by.clone(),
            message,
            code: 400,
            all: vec![by],
        }));
    }
    // Every warning the webhook returns (its checks, the CEL type checker's findings, the
    // deprecation notice last); one it might add that kca does not make is left out.
    Ok(Admission::Allowed {
        object: policy.clone(),
        warnings: warned.lines,
    })
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

    fn generate_policy(sync: bool) -> Value {
        json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "p"},
            "spec": {"rules": [{"name": "r",
                "match": {"any": [{"resources": {"kinds": ["Namespace"]}}]},
                "generate": {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                    "name": "d", "namespace": "{{request.object.metadata.name}}",
                    "synchronize": sync, "data": {"spec": {"podSelector": {}}}}}]}})
    }

    fn grant(verbs: &[&str], who: &str) -> Vec<Value> {
        vec![
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": format!("g-{who}")},
                "rules": [{"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": verbs}]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": format!("g-{who}")},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": format!("g-{who}")},
                "subjects": [{"kind": "ServiceAccount", "name": who, "namespace": "kyverno"}]}),
        ]
    }

    #[test]
    fn a_generate_policy_without_the_grant_is_rejected_in_kyvernos_words() {
        match admit_policy(&Access::new(&[]), &generate_policy(false)).unwrap() {
            Admission::Denied(d) => assert_eq!(
                d.message,
                "admission webhook \"validate-policy.kyverno.svc\" denied the request: path: \
                 spec.rules[0].generate..: system:serviceaccount:kyverno:kyverno-background-controller \
                 requires permissions get,create for resource networking.k8s.io/v1/NetworkPolicy \
                 in namespace {{request.object.metadata.name}}"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn synchronize_needs_update_and_delete_too() {
        let bg = grant(&["get", "create"], "kyverno-background-controller");
        assert!(matches!(
            admit_policy(&Access::new(&bg), &generate_policy(false)).unwrap(),
            Admission::Allowed { .. }
        ));
        let mut objs = bg.clone();
        objs.extend(grant(&["get", "list"], "kyverno-admission-controller"));
        match admit_policy(&Access::new(&objs), &generate_policy(true)).unwrap() {
            Admission::Denied(d) => assert!(
                d.message.contains("requires permissions update,delete"),
                "{}",
                d.message
            ),
            other => panic!("{other:?}"),
        }
        let mut all = grant(
            &["get", "create", "update", "delete"],
            "kyverno-background-controller",
        );
        all.extend(grant(&["get", "list"], "kyverno-admission-controller"));
        match admit_policy(&Access::new(&all), &generate_policy(true)).unwrap() {
            Admission::Allowed { warnings, .. } => {
                let last = warnings.last().map(String::as_str).unwrap_or("");
                assert!(
                    last.starts_with("ClusterPolicy (kyverno.io) is deprecated"),
                    "{warnings:?}"
                );
                // This cluster grants the reports controller nothing: Kyverno says so too.
                assert_eq!(
                    warnings[0],
                    "system:serviceaccount:kyverno:kyverno-reports-controller requires \
                     permissions get,list,watch for resource Namespace"
                );
                assert_eq!(warnings.len(), 2, "{warnings:?}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_cel_rule_reading_a_field_the_kind_lacks_is_accepted_with_the_type_checkers_warning() {
        let policy = |expr: &str| {
            json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
                "metadata": {"name": "replicas"},
                "spec": {"rules": [{"name": "r",
                    "match": {"any": [{"resources": {"kinds": ["Deployment"]}}]},
                    "validate": {"failureAction": "Enforce",
                        "cel": {"expressions": [{"expression": expr, "message": "m"}]}}}]}})
        };
        let warnings = |expr: &str| match admit_policy(&Access::new(&[]), &policy(expr)).unwrap() {
            Admission::Allowed { warnings, .. } => warnings,
            other => panic!("{other:?}"),
        };
        let wrong = warnings("object.replicas > 1");
        assert!(
            wrong
                .iter()
                .any(|w| w.contains("undefined field 'replicas'")),
            "{wrong:?}"
        );
        let right = warnings("object.spec.replicas > 1");
        assert!(
            !right.iter().any(|w| w.contains("undefined field")),
            "{right:?}"
        );
    }
}

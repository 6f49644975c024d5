//! Offline, Kyverno's answer when a learner's policy is created (the `accepted` check) and
//! whether a generate rule keeps its copies in sync. Pure: the cluster is the lab's object
//! set. The fuller policy validation (`offline::kyverno::validation`, the `engine` side)
//! replaces the generate permission check here when it lands: one function to swap.

use serde_json::Value;

use crate::target::{Admission, Denial, DeniedBy};

/// The background controller's and the admission controller's users, as the chart
/// names their service accounts (charts/kyverno templates, `kyverno` namespace).
const BACKGROUND_SA: &str = "system:serviceaccount:kyverno:kyverno-background-controller";
const ADMISSION_SA: &str = "system:serviceaccount:kyverno:kyverno-admission-controller";

/// Kyverno's answer to creating `policy`, as its policy validation webhook
/// (`validate-policy.kyverno.svc`, pkg/webhooks/policy/handlers.go) gives it, for what
/// this build models: the generate permission check (pkg/validation/policy/actions.go →
/// pkg/policy/generate/validate.go `canIGenerate`: get+create, plus update+delete with
/// `synchronize`, on the generated kind in `generate.namespace` taken literally, for
/// the background controller; with `synchronize` also list+get for the admission
/// controller; message as pkg/policy/auth/auth.go builds it), a generated kind equal to
/// a matched kind, and the deprecation warning of pkg/deprecations/deprecations.go.
pub fn admit_policy(objects: &[Value], policy: &Value) -> Result<Admission, String> {
    let kind = policy.get("kind").and_then(Value::as_str).unwrap_or("");
    if !matches!(kind, "ClusterPolicy" | "Policy") {
        return Err(format!(
            "offline, kca models Kyverno's creation checks of ClusterPolicy and Policy \
             only; whether Kyverno accepts this {kind} needs a cluster"
        ));
    }
    let rules = policy
        .pointer("/spec/rules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, rule) in rules.iter().enumerate() {
        let Some(g) = rule.get("generate") else {
            continue;
        };
        if let Some(message) = generate_rule_problem(objects, rule, g) {
            let message = format!(
                "admission webhook \"validate-policy.kyverno.svc\" denied the request: \
                 path: spec.rules[{i}].generate..: {message}"
            );
            let by = DeniedBy::Other;
            return Ok(Admission::Denied(Denial {
                by: by.clone(),
                message,
                code: 400,
                all: vec![by],
            }));
        }
    }
    let guide = "https://kyverno.io/docs/guides/migration-to-cel/";
    let replacement = if kind == "ClusterPolicy" {
        "ValidatingPolicy, MutatingPolicy, GeneratingPolicy or ImageValidatingPolicy"
    } else {
        "NamespacedValidatingPolicy, NamespacedMutatingPolicy, NamespacedGeneratingPolicy \
         or NamespacedImageValidatingPolicy"
    };
    Ok(Admission::Allowed {
        object: policy.clone(),
        warnings: vec![format!(
            "{kind} (kyverno.io) is deprecated and will be removed in a future release; \
             migrate to {replacement} (policies.kyverno.io), see {guide}"
        )],
    })
}

/// Why Kyverno would refuse one generate rule (its error text), if it would.
fn generate_rule_problem(objects: &[Value], rule: &Value, g: &Value) -> Option<String> {
    let s = |v: &Value, p: &str| {
        v.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let sync = g
        .get("synchronize")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let namespace = s(g, "/namespace");
    // cloneList: the first kind is checked (validateAuth returns on the first).
    let (api_version, kind) = match g.pointer("/cloneList/kinds/0").and_then(Value::as_str) {
        Some(k) => match k.rsplit_once('/') {
            Some((gv, k)) => (gv.to_string(), k.to_string()),
            None => (String::new(), k.to_string()),
        },
        None => (s(g, "/apiVersion"), s(g, "/kind")),
    };
    if format!("{api_version}{kind}").contains("{{") {
        return None;
    }
    let gvk = if api_version.is_empty() {
        kind.clone()
    } else {
        format!("{api_version}/{kind}")
    };
    let group = api_version
        .rsplit_once('/')
        .map_or("", |(g, _)| g)
        .to_string();
    let resource = crate::offline::rbac::resource::Mapper::built_in()
        .resolve(&if group.is_empty() {
            kind.to_lowercase()
        } else {
            format!("{}.{group}", kind.to_lowercase())
        })
        .map(|r| r.plural.clone())?;
    let missing = |user: &str, verbs: &[&str]| -> Option<String> {
        let (u, groups) = crate::offline::rbac::impersonated(user, &[]);
        let failed: Vec<&str> = verbs
            .iter()
            .copied()
            .filter(|v| {
                !crate::offline::rbac::Authorizer::new(objects)
                    .authorize(&crate::offline::rbac::AccessRequest {
                        user: u.clone(),
                        groups: groups.clone(),
                        verb: (*v).to_string(),
                        api_group: group.clone(),
                        resource: resource.clone(),
                        subresource: String::new(),
                        namespace: namespace.clone(),
                        name: String::new(),
                        non_resource_path: None,
                    })
                    .allowed
            })
            .collect();
        if failed.is_empty() {
            return None;
        }
        let mut msg = format!(
            "{user} requires permissions {} for resource {gvk}",
            failed.join(",")
        );
        if !namespace.is_empty() {
            msg.push_str(&format!(" in namespace {namespace}"));
        }
        Some(msg)
    };
    if sync && let Some(m) = missing(ADMISSION_SA, &["list", "get"]) {
        return Some(m);
    }
    let verbs: &[&str] = if sync {
        &["get", "create", "update", "delete"]
    } else {
        &["get", "create"]
    };
    if let Some(m) = missing(BACKGROUND_SA, verbs) {
        return Some(m);
    }
    let matched = rule
        .pointer("/match/any")
        .or_else(|| rule.pointer("/match/all"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|f| f.pointer("/resources/kinds").and_then(Value::as_array))
        .flatten()
        .chain(
            rule.pointer("/match/resources/kinds")
                .and_then(Value::as_array)
                .into_iter()
                .flatten(),
        )
        .any(|k| k.as_str() == Some(kind.as_str()));
    matched.then(|| "generation kind and match resource kind should not be the same".into())
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
        match admit_policy(&[], &generate_policy(false)).unwrap() {
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
            admit_policy(&bg, &generate_policy(false)).unwrap(),
            Admission::Allowed { .. }
        ));
        let mut objs = bg.clone();
        objs.extend(grant(&["get", "list"], "kyverno-admission-controller"));
        match admit_policy(&objs, &generate_policy(true)).unwrap() {
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
        match admit_policy(&all, &generate_policy(true)).unwrap() {
            Admission::Allowed { warnings, .. } => {
                assert!(warnings[0].starts_with("ClusterPolicy (kyverno.io) is deprecated"))
            }
            other => panic!("{other:?}"),
        }
    }
}

//! The policy-level checks of `pkg/validation/policy/validate.go` (`Validate`) at
//! Kyverno 1.19.0 that come before the rule checks: admission/background processing,
//! the `match`/`exclude` kinds of each rule (`validateKinds`: `validateWildcard`, and
//! `validKinds`' background scan on a subresource, cluster mode only), and the CRD
//! schema's enum for a subject's kind (config/crds/kyverno/kyverno.io_clusterpolicies.yaml).

use serde_json::Value;

use super::validation::Mode;

/// Kinds that only name a subresource (`deployments/scale` serves `Scale`).
const SUBRESOURCE_KINDS: &[&str] = &[
    "Scale",
    "Eviction",
    "PodExecOptions",
    "PodAttachOptions",
    "PodPortForwardOptions",
    "PodProxyOptions",
    "NodeProxyOptions",
    "ServiceProxyOptions",
    "TokenRequest",
];

/// The first problem, in Kyverno's words.
pub(super) fn policy_checks(policy: &Value, rules: &[Value], mode: Mode<'_>) -> Option<String> {
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let flag = |k: &str| spec.get(k).and_then(Value::as_bool).unwrap_or(true);
    let (admission, background) = (flag("admission"), flag("background"));
    if !admission && !background {
        return Some("disabling both admission and background processing is not allowed".into());
    }
    let has = |action: &str| {
        rules
            .iter()
            .any(|r| r.get(action).is_some_and(|a| !a.is_null()))
    };
    if !admission && (has("mutate") || has("generate") || has("verifyImages")) {
        return Some(
            "disabling admission processing is only allowed with validation policies".into(),
        );
    }
    for (i, rule) in rules.iter().enumerate() {
        for (path, kinds) in kind_lists(rule) {
            if let Some(e) = kinds_problem(&kinds, rule, background, mode) {
                return Some(format!("path: spec.rules[{i}].{path}.kinds: {e}"));
            }
        }
    }
    None
}

/// The schema's answer to a subject kind outside its enum, `None` when all are valid.
pub(super) fn subject_kinds(policy: &Value, rules: &[Value]) -> Option<String> {
    let name = policy
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = policy.get("kind").and_then(Value::as_str).unwrap_or("");
    for (i, rule) in rules.iter().enumerate() {
        for (path, f) in filters_of(rule) {
            for (k, s) in f
                .get("subjects")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let sk = s.get("kind").and_then(Value::as_str).unwrap_or("");
                if !matches!(sk, "User" | "Group" | "ServiceAccount") {
                    return Some(format!(
                        "{kind}.kyverno.io \"{name}\" is invalid: spec.rules[{i}].{path}.subjects[{k}].kind: Unsupported value: \"{sk}\": supported values: \"User\", \"Group\", \"ServiceAccount\""
                    ));
                }
            }
        }
    }
    None
}

/// A rule's resource filters with their paths (`match.any[0]`, …, `match`, then
/// `exclude`), in the order `MatchResources.Validate` walks them.
pub(super) fn filters_of(rule: &Value) -> Vec<(String, &Value)> {
    let mut out = Vec::new();
    for block in ["match", "exclude"] {
        let Some(b) = rule.get(block) else { continue };
        for list in ["any", "all"] {
            for (j, f) in b
                .get(list)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                out.push((format!("{block}.{list}[{j}]"), f));
            }
        }
        out.push((block.to_string(), b));
    }
    out
}

/// Each kinds list of a rule's match/exclude with its path, in Kyverno's order.
fn kind_lists(rule: &Value) -> Vec<(String, Vec<String>)> {
    filters_of(rule)
        .into_iter()
        .filter_map(|(path, f)| {
            let kinds = f.pointer("/resources/kinds")?.as_array()?;
            let kinds = kinds.iter().filter_map(Value::as_str).map(str::to_string);
            Some((path, kinds.collect()))
        })
        .collect()
}

fn kinds_problem(
    kinds: &[String],
    rule: &Value,
    background: bool,
    mode: Mode<'_>,
) -> Option<String> {
    let wildcard = kinds.iter().any(|k| k == "*");
    if wildcard && background {
        return Some("wildcard policy not allowed in background mode. Set spec.background=false to disable background mode for this policy rule ".into());
    }
    if wildcard && kinds.len() > 1 {
        return Some("wildcard policy can not deal with more than one kind".into());
    }
    let has = |a: &str| rule.get(a).is_some_and(|v| !v.is_null());
    if wildcard
        && (has("generate") || has("verifyImages") || rule.pointer("/validate/foreach").is_some())
    {
        return Some("wildcard policy does not support rule type".into());
    }
    if wildcard || matches!(mode, Mode::Cli) {
        return None;
    }
    // `validKinds`: a validate rule scanned in the background may not match a subresource.
    if background && has("validate") {
        for k in kinds {
            if is_subresource(k) {
                return Some(format!("background scan enabled with subresource {k}"));
            }
        }
    }
    None
}

/// Whether a kind selector (`Kind`, `Kind/sub`, `group/version/Kind`, `g/v/Kind/sub`)
/// names a subresource, as `kubeutils.ParseKindSelector` reads it.
fn is_subresource(selector: &str) -> bool {
    let parts: Vec<&str> = selector.split('/').collect();
    let (kind, sub) = match parts.as_slice() {
        [k] => (*k, ""),
        [k, s] => (*k, *s),
        [_, _, k] => (*k, ""),
        [_, _, k, s] => (*k, *s),
        _ => return false,
    };
    !sub.is_empty() || SUBRESOURCE_KINDS.contains(&kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cpol(spec: Value) -> Value {
        json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "p"}, "spec": spec})
    }

    fn rule(kinds: &[&str], action: Value) -> Value {
        let mut r = json!({"name": "r", "match": {"any": [{"resources": {"kinds": kinds}}]}});
        for (k, v) in action.as_object().unwrap() {
            r[k] = v.clone();
        }
        r
    }

    fn check(spec: Value) -> Option<String> {
        let p = cpol(spec);
        let rules = p["spec"]["rules"].as_array().cloned().unwrap_or_default();
        let authorizer = crate::offline::rbac::Authorizer::new(&[]);
        let mapper = crate::offline::rbac::resource::Mapper::built_in();
        policy_checks(
            &p,
            &rules,
            Mode::Cluster {
                authorizer: &authorizer,
                mapper: &mapper,
            },
        )
        .or_else(|| subject_kinds(&p, &rules))
    }

    #[test]
    fn admission_false_is_refused_with_mutate_and_without_background() {
        let mutate = rule(&["Pod"], json!({"mutate": {"patchStrategicMerge": {}}}));
        assert_eq!(
            check(json!({"admission": false, "rules": [mutate]})).as_deref(),
            Some("disabling admission processing is only allowed with validation policies")
        );
        let validate = rule(&["Pod"], json!({"validate": {"deny": {}}}));
        assert!(
            check(json!({"admission": false, "background": false, "rules": [validate.clone()]}))
                .is_some()
        );
        assert_eq!(
            check(json!({"admission": false, "rules": [validate]})),
            None
        );
    }

    #[test]
    fn background_validate_on_a_subresource_is_refused() {
        let v = json!({"validate": {"deny": {}}});
        let e = check(json!({"rules": [rule(&["Scale"], v.clone())]})).unwrap();
        assert!(
            e.contains("background scan enabled with subresource Scale"),
            "{e}"
        );
        assert!(check(json!({"rules": [rule(&["Pod/exec"], v.clone())]})).is_some());
        assert_eq!(
            check(json!({"background": false, "rules": [rule(&["Pod/exec"], v)]})),
            None
        );
    }

    #[test]
    fn wildcard_kinds_refuse_verify_images_and_background() {
        let vi = json!({"verifyImages": [{"imageReferences": ["*"]}]});
        assert_eq!(
            check(json!({"background": false, "rules": [rule(&["*"], vi)]})).as_deref(),
            Some(
                "path: spec.rules[0].match.any[0].kinds: wildcard policy does not support rule type"
            )
        );
        let v = json!({"validate": {"deny": {}}});
        assert!(
            check(json!({"rules": [rule(&["*"], v)]}))
                .unwrap()
                .contains("background mode")
        );
    }

    #[test]
    fn subject_kind_outside_the_enum_is_refused() {
        let mut r = rule(&["ConfigMap"], json!({"validate": {"deny": {}}}));
        r["match"]["any"][0]["subjects"] = json!([{"kind": "Foo", "name": "foo"}]);
        let e = check(json!({"background": false, "rules": [r]})).unwrap();
        assert!(
            e.contains("subjects[0].kind: Unsupported value: \"Foo\""),
            "{e}"
        );
    }
}

//! The shape checks `validateActions` (pkg/validation/policy/actions.go) runs on a
//! rule's `mutate` and `validate` before their permission checks, in Kyverno 1.19.0's
//! words:
//! - pkg/policy/mutate/validate.go `Validate`: one of `foreach`, `patchStrategicMerge`,
//!   `patchesJson6902`; each foreach entry one patch, a nested foreach nothing else;
//!   no `celPreconditions` (they belong to `validate.cel`);
//! - pkg/policy/validate/validate.go `Validate`: exactly one validation element, each
//!   `foreach` entry a `list` and one element, `celPreconditions` only with `cel`, and
//!   the required parts of `cel` (expressions, `paramKind`/`paramRef`, audit
//!   annotations). (`ValidatePattern`'s anchor checks are not modelled.)

use serde_json::Value;

use super::Mode;

/// `mutate.Validate`'s first problem for rule `i`, as `validateActions` wraps it.
pub(super) fn mutate_problem(i: usize, rule: &Value) -> Option<String> {
    let m = rule.get("mutate").filter(|m| is_set(m))?;
    let psm = present(m, "patchStrategicMerge");
    let json6902 = m
        .get("patchesJson6902")
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty());
    let wrap = |path: &str, e: &str| format!("path: spec.rules[{i}].mutate.{path}.: {e}");
    if let Some(foreach) = m
        .get("foreach")
        .and_then(Value::as_array)
        .filter(|f| !f.is_empty())
    {
        if psm || json6902 {
            return Some(wrap(
                "foreach",
                "only one of `foreach`, `patchStrategicMerge`, or `patchesJson6902` is allowed",
            ));
        }
        // Kyverno returns from its foreach check: nothing after it runs.
        return foreach_mutation_problem(String::new(), foreach, 0).map(|(t, e)| wrap(&t, e));
    }
    if psm && json6902 {
        return Some(wrap(
            "foreach",
            "only one of `patchStrategicMerge` or `patchesJson6902` is allowed",
        ));
    }
    if rule.get("celPreconditions").is_some_and(|c| !c.is_null()) {
        return Some(wrap("", CEL_PRECONDITIONS));
    }
    None
}

const CEL_PRECONDITIONS: &str = "celPrecondition can only be used with validate.cel";

/// The foreach depth Kyverno's CRD allows is small; deeper input is not walked.
const MAX_FOREACH_DEPTH: usize = 16;

/// `validateForEach`: the tag grows by each entry's index as Kyverno's loop appends it,
/// and a nested list ends the walk (`validateNestedForEach` returns its answer).
fn foreach_mutation_problem(
    mut tag: String,
    entries: &[Value],
    depth: usize,
) -> Option<(String, &'static str)> {
    if depth > MAX_FOREACH_DEPTH {
        return None;
    }
    for (i, fe) in entries.iter().enumerate() {
        tag.push_str(&format!("foreach[{i}]"));
        let psm = present(fe, "patchStrategicMerge");
        let json6902 = fe
            .get("patchesJson6902")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty());
        if let Some(nested) = fe
            .get("foreach")
            .and_then(Value::as_array)
            .filter(|n| !n.is_empty())
        {
            if present(fe, "context") || present(fe, "preconditions") || psm || json6902 {
                return Some((tag, "a nested foreach cannot contain other declarations"));
            }
            return foreach_mutation_problem(tag, nested, depth + 1);
        }
        if psm == json6902 {
            return Some((
                tag,
                "only one of `patchStrategicMerge` or `patchesJson6902` is allowed",
            ));
        }
    }
    None
}

/// `validate.Validate`'s first problem for rule `i` before its permission check. The
/// API server defaults `allowExistingViolations` into any `validate` it stores, so in a
/// cluster even an empty one counts as a validate rule.
pub(super) fn validate_problem(i: usize, rule: &Value, mode: Mode<'_>) -> Option<String> {
    let v = rule.get("validate").filter(|v| v.is_object())?;
    if !is_set(v) && !matches!(mode, Mode::Cluster { .. }) {
        return None;
    }
    let wrap = |e: &str| format!("path: spec.rules[{i}].validate..: {e}");
    let manifests = v
        .pointer("/manifests/attestors")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    let count = [
        "pattern",
        "anyPattern",
        "deny",
        "foreach",
        "podSecurity",
        "cel",
    ]
    .iter()
    .filter(|k| present(v, k))
    .count()
        + usize::from(manifests);
    if count == 0 {
        return Some(wrap(
            "one of pattern, anyPattern, deny, foreach, cel must be specified",
        ));
    }
    if count > 1 {
        return Some(wrap(
            "only one of pattern, anyPattern, deny, foreach, cel can be specified",
        ));
    }
    for fe in v
        .get("foreach")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if fe
            .get("list")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Some(wrap("foreach.list is required"));
        }
        let nested = fe
            .get("foreach")
            .and_then(Value::as_array)
            .is_some_and(|n| !n.is_empty());
        let n = ["pattern", "anyPattern", "deny"]
            .iter()
            .filter(|k| present(fe, k))
            .count()
            + usize::from(nested);
        if n == 0 {
            return Some(wrap(
                "one of pattern, anyPattern, deny, or a nested foreach must be specified",
            ));
        }
        if n > 1 {
            return Some(wrap(
                "only one of pattern, anyPattern, deny, or a nested foreach can be specified",
            ));
        }
    }
    let cel = v.get("cel").filter(|c| !c.is_null());
    if rule.get("celPreconditions").is_some_and(|c| !c.is_null()) && cel.is_none() {
        return Some(wrap(CEL_PRECONDITIONS));
    }
    cel.and_then(cel_problem).map(wrap)
}

/// The required parts of `validate.cel`.
fn cel_problem(cel: &Value) -> Option<&'static str> {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let expressions = cel.get("expressions").and_then(Value::as_array);
    if expressions
        .into_iter()
        .flatten()
        .any(|e| s(e, "expression").is_empty())
    {
        return Some("cel.expressions.expression is required");
    }
    let kind = cel.get("paramKind").filter(|k| !k.is_null());
    let reference = cel.get("paramRef").filter(|r| !r.is_null());
    if let Some(k) = kind {
        if s(k, "apiVersion").is_empty() {
            return Some("cel.paramKind.apiVersion is required");
        }
        if s(k, "kind").is_empty() {
            return Some("cel.paramKind.kind is required");
        }
        if reference.is_none() {
            return Some("cel.paramRef is required");
        }
    }
    if let Some(r) = reference {
        let named = !s(r, "name").is_empty();
        if named == present(r, "selector") {
            return Some("one of cel.paramRef.name or cel.paramRef.selector must be set");
        }
        if !present(r, "parameterNotFoundAction") {
            return Some("cel.paramRef.parameterNotFoundAction is required");
        }
        if kind.is_none() {
            return Some("cel.paramKind is required");
        }
    }
    let annotations = cel.get("auditAnnotations").and_then(Value::as_array);
    for a in annotations.into_iter().flatten() {
        if s(a, "key").is_empty() {
            return Some("cel.auditAnnotation.key is required");
        }
        if s(a, "valueExpression").is_empty() {
            return Some("cel.auditAnnotation.valueExpression is required");
        }
    }
    None
}

fn present(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(|x| !x.is_null())
}

/// Whether a rule's action block holds anything (Kyverno's `HasMutate`/`HasValidate`:
/// not the zero value).
fn is_set(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|m| m.values().any(|x| !x.is_null()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cel_preconditions_outside_validate_cel_are_refused() {
        let pre = json!([{"name": "n", "expression": "true"}]);
        let mutate = json!({"celPreconditions": pre,
            "mutate": {"patchStrategicMerge": {"metadata": {"labels": {"a": "b"}}}}});
        assert_eq!(
            mutate_problem(2, &mutate).as_deref(),
            Some(
                "path: spec.rules[2].mutate..: celPrecondition can only be used with validate.cel"
            )
        );
        let pattern = json!({"celPreconditions": pre, "validate": {"pattern": {"x": "y"}}});
        assert_eq!(
            validate_problem(0, &pattern, Mode::Cli).as_deref(),
            Some(
                "path: spec.rules[0].validate..: celPrecondition can only be used with validate.cel"
            )
        );
        let cel = json!({"celPreconditions": pre,
            "validate": {"cel": {"expressions": [{"expression": "true"}]}}});
        assert_eq!(validate_problem(0, &cel, Mode::Cli), None);
    }

    #[test]
    fn a_rule_action_holds_exactly_one_element() {
        let two = json!({"validate": {"pattern": {}, "deny": {}}});
        assert!(validate_problem(0, &two, Mode::Cli).is_some_and(|e| {
            e.ends_with("only one of pattern, anyPattern, deny, foreach, cel can be specified")
        }));
        let none = json!({"validate": {"message": "m"}});
        assert!(
            validate_problem(0, &none, Mode::Cli).is_some_and(|e| e.ends_with("must be specified"))
        );
        let nested = json!({"mutate": {"foreach": [{"list": "a", "patchesJson6902": "[]",
            "foreach": [{"list": "b", "patchStrategicMerge": {}}]}]}});
        assert_eq!(
            mutate_problem(0, &nested).as_deref(),
            Some(
                "path: spec.rules[0].mutate.foreach[0].: a nested foreach cannot contain other declarations"
            )
        );
        let no_patch = json!({"mutate": {"foreach": [{"list": "a"}]}});
        assert!(mutate_problem(0, &no_patch).is_some());
    }

    #[test]
    fn a_param_ref_names_one_way_to_find_its_parameters() {
        let both = json!({"validate": {"cel": {"expressions": [{"expression": "true"}],
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "paramRef": {"name": "p", "selector": {}, "parameterNotFoundAction": "Deny"}}}});
        assert!(validate_problem(0, &both, Mode::Cli).is_some_and(|e| {
            e.ends_with("one of cel.paramRef.name or cel.paramRef.selector must be set")
        }));
    }
}

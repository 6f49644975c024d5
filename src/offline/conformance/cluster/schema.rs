//! The API server's structural-schema check of `required` fields for Kyverno's
//! `policies.kyverno.io` kinds, as their v1.19 CRDs declare them
//! (config/crds/policies.kyverno.io/*.yaml, `openAPIV3Schema`): `spec` itself, the
//! fields each kind's `spec` requires, and the keys of `policyRefs` and
//! `matchConditions` entries. A missing one refuses the write before any webhook
//! (`<Kind>.<group> "<name>" is invalid: <path>: Required value`).

use serde_json::Value;

use super::text;

/// The fields each kind's `spec` requires.
const SPEC_REQUIRED: &[(&str, &[&str])] = &[
    ("PolicyException", &["policyRefs"]),
    ("GeneratingPolicy", &["generate"]),
    ("NamespacedGeneratingPolicy", &["generate"]),
    ("DeletingPolicy", &["schedule"]),
    ("NamespacedDeletingPolicy", &["schedule"]),
    ("ImageValidatingPolicy", &["attestors", "validations"]),
    (
        "NamespacedImageValidatingPolicy",
        &["attestors", "validations"],
    ),
    ("MutatingPolicy", &[]),
    ("NamespacedMutatingPolicy", &[]),
    ("ValidatingPolicy", &[]),
    ("NamespacedValidatingPolicy", &[]),
];

/// Lists under `spec` whose entries require keys.
const ITEM_REQUIRED: &[(&str, &[&str])] = &[
    ("policyRefs", &["kind", "name"]),
    ("matchConditions", &["expression", "name"]),
];

/// The first missing required field, as the API server reports it.
pub(super) fn required_missing(obj: &Value) -> Option<String> {
    if !text(obj, "/apiVersion").starts_with("policies.kyverno.io/") {
        return None;
    }
    let kind = text(obj, "/kind");
    let (_, fields) = SPEC_REQUIRED.iter().find(|(k, _)| *k == kind)?;
    let invalid = |path: String| {
        format!(
            "{kind}.policies.kyverno.io \"{}\" is invalid: {path}: Required value",
            text(obj, "/metadata/name")
        )
    };
    let Some(spec) = obj.get("spec").filter(|s| s.is_object()) else {
        return Some(invalid("spec".into()));
    };
    if let Some(f) = fields
        .iter()
        .find(|f| spec.get(**f).is_none_or(Value::is_null))
    {
        return Some(invalid(format!("spec.{f}")));
    }
    for (list, keys) in ITEM_REQUIRED {
        let items = spec.get(*list).and_then(Value::as_array);
        for (i, item) in items.into_iter().flatten().enumerate() {
            if let Some(k) = keys
                .iter()
                .find(|k| item.get(**k).is_none_or(Value::is_null))
            {
                return Some(invalid(format!("spec.{list}[{i}].{k}")));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn required_fields_of_kyvernos_cel_kinds() {
        let ex = json!({"apiVersion": "policies.kyverno.io/v1alpha1", "kind": "PolicyException",
            "metadata": {"name": "e"}, "spec": {"matchConditions": [{"name": "n", "expression": "true"}]}});
        assert_eq!(
            required_missing(&ex).as_deref(),
            Some(
                "PolicyException.policies.kyverno.io \"e\" is invalid: spec.policyRefs: Required value"
            )
        );
        let ok = json!({"apiVersion": "policies.kyverno.io/v1", "kind": "PolicyException",
            "metadata": {"name": "e"}, "spec": {"policyRefs": [{"name": "p", "kind": "ValidatingPolicy"}]}});
        assert_eq!(required_missing(&ok), None);
        let no_kind = json!({"apiVersion": "policies.kyverno.io/v1", "kind": "PolicyException",
            "metadata": {"name": "e"}, "spec": {"policyRefs": [{"name": "p"}]}});
        assert!(required_missing(&no_kind).is_some_and(|m| m.contains("spec.policyRefs[0].kind")));
        let kyverno_io = json!({"apiVersion": "kyverno.io/v2", "kind": "PolicyException",
            "metadata": {"name": "e"}, "spec": {}});
        assert_eq!(
            required_missing(&kyverno_io),
            None,
            "another group's schema"
        );
    }
}

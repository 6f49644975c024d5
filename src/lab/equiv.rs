//! Kubernetes and Kyverno equivalences for trees that compare a learner's objects: two
//! spellings the API server or Kyverno read the same way are brought to one form on both
//! sides before `tree::partial_match`, so a file or resource check grades meaning, not
//! shape. Each rule cites where the equivalence comes from:
//!
//! - a Kyverno `match`/`exclude` with one entry under `all` is the same as one under `any`
//!   (one filter: "all of one" = "any of one"), and the legacy form without `any`/`all`
//!   (`match: {resources: …}`) is one `any` entry (api/kyverno/v1/match_resources_types.go,
//!   `MatchResources.GetKinds`/`ResourceDescription` used when `Any`/`All` are empty);
//! - a label selector's `matchLabels` entry `k: v` is the requirement
//!   `{key: k, operator: In, values: [v]}` (apimachinery `LabelSelectorAsSelector`);
//! - a `patchesJson6902` written as text (YAML or a JSON array) is the list it parses to
//!   (Kyverno parses the string: pkg/engine/mutate/patch/patchJSON6902.go), so a YAML
//!   list, a JSON array and single- or double-quoted paths are one patch.
//!
//! Pure: trees in, trees out.

use serde_json::{Map, Value};

/// `Ok` when `got` holds everything in `want`, once both are in their one form.
pub fn semantic_match(want: &Value, got: &Value) -> Result<(), super::detail::Diff> {
    let (mut w, mut g) = (want.clone(), got.clone());
    normalize(&mut w);
    normalize(&mut g);
    super::tree::partial_match(&w, &g)
}

/// Rewrites every equivalent spelling in `v` to its one form (see the module comment).
pub fn normalize(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for key in ["match", "exclude"] {
                if let Some(Value::Object(m)) = map.get_mut(key) {
                    one_form_of_match(m);
                }
            }
            if map.contains_key("matchLabels") {
                labels_as_expressions(map);
            }
            if let Some(Value::String(text)) = map.get("patchesJson6902")
                && let Ok(mut docs) = crate::yaml::parse_json_stream(text)
                && docs.len() == 1
                && docs[0].is_array()
            {
                map.insert("patchesJson6902".into(), docs.remove(0));
            }
            for (_, child) in map.iter_mut() {
                normalize(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize),
        _ => {}
    }
}

/// The filters a Kyverno `match`/`exclude` may hold directly (the legacy form).
const LEGACY_FILTER: [&str; 4] = ["resources", "subjects", "roles", "clusterRoles"];

fn one_form_of_match(m: &mut Map<String, Value>) {
    let legacy = !m.contains_key("any")
        && !m.contains_key("all")
        && LEGACY_FILTER.iter().any(|k| m.contains_key(*k));
    if legacy {
        let mut filter = Map::new();
        for k in LEGACY_FILTER {
            if let Some(x) = m.remove(k) {
                filter.insert(k.into(), x);
            }
        }
        m.insert("any".into(), Value::Array(vec![Value::Object(filter)]));
        return;
    }
    let one_all = matches!(m.get("all"), Some(Value::Array(a)) if a.len() == 1);
    if one_all && !m.contains_key("any") {
        let all = m.remove("all").unwrap_or_default();
        m.insert("any".into(), all);
    }
}

fn labels_as_expressions(sel: &mut Map<String, Value>) {
    let Some(Value::Object(labels)) = sel.remove("matchLabels") else {
        return;
    };
    let mut exprs = match sel.remove("matchExpressions") {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    };
    for (k, v) in labels {
        let value = match v {
            Value::String(s) => Value::String(s),
            other => Value::String(other.to_string()),
        };
        let req = serde_json::json!({"key": k, "operator": "In", "values": [value]});
        if !exprs.contains(&req) {
            exprs.push(req);
        }
    }
    sel.insert("matchExpressions".into(), Value::Array(exprs));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn yaml(s: &str) -> Value {
        crate::yaml::parse_json_stream(s).unwrap().remove(0)
    }

    #[test]
    fn one_entry_all_is_any_and_the_legacy_match_is_one_any_entry() {
        let want = json!({"match": {"any": [{"resources": {"kinds": ["Pod"]}}]}});
        for got in [
            json!({"match": {"all": [{"resources": {"kinds": ["Pod"], "namespaces": ["x"]}}]}}),
            json!({"match": {"resources": {"kinds": ["Pod"]}}}),
            json!({"match": {"any": [{"resources": {"kinds": ["Pod"]}}]}}),
        ] {
            assert_eq!(semantic_match(&want, &got), Ok(()), "{got}");
        }
        // Two entries under `all` are a conjunction, not a choice: not rewritten.
        let two = json!({"match": {"all": [{"resources": {"kinds": ["Pod"]}}, {"subjects": []}]}});
        assert!(semantic_match(&want, &two).is_err());
        // The other way round too: the lab may write `all` and the learner `any`.
        let want_all = json!({"exclude": {"all": [{"resources": {"kinds": ["Pod"]}}]}});
        let got_any = json!({"exclude": {"any": [{"resources": {"kinds": ["Pod"]}}]}});
        assert_eq!(semantic_match(&want_all, &got_any), Ok(()));
    }

    #[test]
    fn match_labels_equal_the_equivalent_match_expressions() {
        let want =
            json!({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ns"}}});
        let exprs = json!({"namespaceSelector": {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["ns"]}]}});
        assert_eq!(semantic_match(&want, &exprs), Ok(()));
        assert_eq!(semantic_match(&exprs, &want), Ok(()));
        let other = json!({"namespaceSelector": {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["ns"]}]}});
        assert!(semantic_match(&want, &other).is_err());
    }

    #[test]
    fn a_json_patch_as_a_list_a_json_array_or_quoted_text_is_one_patch() {
        let want = json!({"mutate": {"patchesJson6902": [
            {"op": "add", "path": "/metadata/annotations/kca.io~1owner", "value": "platform-team"}]}});
        for got in [
            "mutate:\n  patchesJson6902: |-\n    - op: add\n      path: /metadata/annotations/kca.io~1owner\n      value: platform-team\n",
            "mutate:\n  patchesJson6902: |-\n    - op: add\n      path: '/metadata/annotations/kca.io~1owner'\n      value: \"platform-team\"\n",
            "mutate:\n  patchesJson6902: '[{\"op\": \"add\", \"path\": \"/metadata/annotations/kca.io~1owner\", \"value\": \"platform-team\"}]'\n",
            "mutate:\n  patchesJson6902:\n    - {op: add, path: /metadata/annotations/kca.io~1owner, value: platform-team}\n",
        ] {
            assert_eq!(semantic_match(&want, &yaml(got)), Ok(()), "{got}");
        }
        let unescaped = yaml(
            "mutate:\n  patchesJson6902: |-\n    - op: add\n      path: /metadata/annotations/kca.io/owner\n      value: platform-team\n",
        );
        assert!(semantic_match(&want, &unescaped).is_err());
    }
}

//! The API server's structural-schema checks on Kyverno's policy kinds, as their v1.19.0
//! CRDs declare them (config/crds/kyverno, config/crds/policies.kyverno.io,
//! `openAPIV3Schema`): `required` fields, `enum` values, numeric bounds, string lengths
//! and list sizes below `spec`, read from a lean table made from those CRDs
//! (`kyverno-crd-rules.json`, by `tools/kyverno-crd-rules/extract.py`). A violation
//! refuses the write before any webhook (`<Kind>.<group> "<name>" is invalid: …`), with
//! apimachinery's field-error words (k8s.io/apiextensions-apiserver
//! pkg/apiserver/validation `kubeOpenAPIResultToFieldErrors`). Types, formats and
//! `x-kubernetes-validations` rules are not checked. A `null` counts as absent: the API
//! server drops nulls of non-nullable fields before it validates.

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

use super::gctx::aggregate;
use super::text;

const DATA: &str = include_str!("kyverno-crd-rules.json");

/// The deepest schema path walked (Kyverno's CRDs nest far less).
const MAX_DEPTH: usize = 64;
/// Errors gathered before the walk stops (the API server lists them all; a test reads a
/// few).
const MAX_ERRORS: usize = 64;

#[derive(Deserialize)]
struct Table {
    /// `group/version/Kind` → index into `schemas`.
    kinds: HashMap<String, usize>,
    schemas: Vec<Node>,
}

/// One schema node's constraints, and its constrained children.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Node {
    #[serde(default)]
    r: Vec<String>,
    e: Option<Vec<Value>>,
    min: Option<f64>,
    max: Option<f64>,
    #[serde(rename = "minLen")]
    min_len: Option<usize>,
    #[serde(rename = "maxLen")]
    max_len: Option<usize>,
    #[serde(rename = "minItems")]
    min_items: Option<usize>,
    #[serde(rename = "maxItems")]
    max_items: Option<usize>,
    #[serde(default)]
    p: BTreeMap<String, Node>,
    i: Option<Box<Node>>,
    a: Option<Box<Node>>,
}

fn table() -> Option<&'static Table> {
    static TABLE: OnceLock<Option<Table>> = OnceLock::new();
    TABLE
        .get_or_init(|| serde_json::from_str(DATA).ok())
        .as_ref()
}

/// An `Invalid` status: the object and the field errors (its details' causes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    kind: String,
    group: String,
    name: String,
    causes: Vec<String>,
}

impl Invalid {
    /// The status message (what chainsaw's `$error` holds).
    pub fn message(&self) -> String {
        format!(
            "{}.{} \"{}\" is invalid: {}",
            self.kind,
            self.group,
            self.name,
            aggregate(&self.causes)
        )
    }

    /// What kubectl prints for it (k8s.io/kubectl pkg/cmd/util/helpers.go
    /// `StandardErrorMessage` on an invalid status with causes, `MultilineError`).
    pub fn kubectl_text(&self) -> String {
        let head = format!("The {} \"{}\" is invalid: ", self.kind, self.name);
        match &self.causes[..] {
            [one] => format!("{head}{one}\n"),
            many => {
                let lines: String = many.iter().map(|c| format!("* {c}\n")).collect();
                format!("{head}\n{lines}")
            }
        }
    }
}

/// The API server's refusal of `obj` by its CRD's schema, `None` when it passes or its
/// kind is not one of Kyverno's policy kinds.
pub(super) fn refusal(obj: &Value) -> Option<Invalid> {
    let (api_version, kind) = (text(obj, "/apiVersion"), text(obj, "/kind"));
    let table = table()?;
    let schema = table
        .schemas
        .get(*table.kinds.get(&format!("{api_version}/{kind}"))?)?;
    let mut causes = Vec::new();
    walk(schema, obj, "", 0, &mut causes);
    if causes.is_empty() {
        return None;
    }
    Some(Invalid {
        group: api_version
            .split_once('/')
            .map_or("", |(g, _)| g)
            .to_string(),
        kind,
        name: text(obj, "/metadata/name"),
        causes,
    })
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn walk(node: &Node, value: &Value, path: &str, depth: usize, out: &mut Vec<String>) {
    if depth > MAX_DEPTH || out.len() >= MAX_ERRORS {
        return;
    }
    scalar_checks(node, value, path, out);
    match value {
        Value::Object(map) => {
            for r in &node.r {
                if map.get(r).is_none_or(Value::is_null) {
                    out.push(format!("{}: Required value", child(path, r)));
                }
            }
            for (key, sub) in &node.p {
                if let Some(v) = map.get(key).filter(|v| !v.is_null()) {
                    walk(sub, v, &child(path, key), depth + 1, out);
                }
            }
            if let Some(sub) = &node.a {
                for (key, v) in map.iter().filter(|(k, _)| !node.p.contains_key(*k)) {
                    walk(sub, v, &format!("{path}[{key}]"), depth + 1, out);
                }
            }
        }
        Value::Array(items) => {
            let n = items.len();
            if let Some(min) = node.min_items.filter(|m| n < *m) {
                out.push(format!(
                    "{path}: Invalid value: {n}: {path} in body should have at least {min} items"
                ));
            }
            if let Some(max) = node.max_items.filter(|m| n > *m) {
                out.push(format!(
                    "{path}: Too many: {n}: must have at most {max} items"
                ));
            }
            if let Some(sub) = &node.i {
                for (i, v) in items.iter().enumerate() {
                    walk(sub, v, &format!("{path}[{i}]"), depth + 1, out);
                }
            }
        }
        _ => {}
    }
}

/// `enum`, bounds and lengths on a string or a number.
fn scalar_checks(node: &Node, value: &Value, path: &str, out: &mut Vec<String>) {
    if let Some(allowed) = &node.e
        && (value.is_string() || value.is_number())
        && !allowed.contains(value)
    {
        let listed: Vec<String> = allowed.iter().map(go_value).collect();
        out.push(format!(
            "{path}: Unsupported value: {}: supported values: {}",
            go_value(value),
            listed.join(", ")
        ));
    }
    if let Some(n) = value.as_f64() {
        if let Some(min) = node.min.filter(|m| n < *m) {
            out.push(format!(
                "{path}: Invalid value: {value}: {path} in body should be greater than or equal to {min}"
            ));
        }
        if let Some(max) = node.max.filter(|m| n > *m) {
            out.push(format!(
                "{path}: Invalid value: {value}: {path} in body should be less than or equal to {max}"
            ));
        }
    }
    if let Some(s) = value.as_str() {
        let chars = s.chars().count();
        if let Some(min) = node.min_len.filter(|m| chars < *m) {
            out.push(format!(
                "{path}: Invalid value: {}: {path} in body should be at least {min} chars long",
                go_value(value)
            ));
        }
        if let Some(max) = node.max_len.filter(|m| chars > *m) {
            out.push(format!(
                "{path}: Too long: may not be more than {max} bytes"
            ));
        }
    }
}

/// A value as apimachinery prints it in a field error: strings quoted.
fn go_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_table_entry_names_a_schema() {
        let t = table().expect("kyverno-crd-rules.json parses");
        assert!(t.kinds.values().all(|i| *i < t.schemas.len()));
        assert!(t.kinds.contains_key("kyverno.io/v1/ClusterPolicy"));
    }

    #[test]
    fn required_fields_of_kyvernos_cel_kinds() {
        let ex = json!({"apiVersion": "policies.kyverno.io/v1alpha1", "kind": "PolicyException",
            "metadata": {"name": "e"}, "spec": {"matchConditions": [{"name": "n", "expression": "true"}]}});
        assert_eq!(
            refusal(&ex).map(|i| i.message()).as_deref(),
            Some(
                "PolicyException.policies.kyverno.io \"e\" is invalid: spec.policyRefs: Required value"
            )
        );
        let ok = json!({"apiVersion": "policies.kyverno.io/v1", "kind": "PolicyException",
            "metadata": {"name": "e"}, "spec": {"policyRefs": [{"name": "p", "kind": "ValidatingPolicy"}]}});
        assert_eq!(refusal(&ok), None);
        let no_kind = json!({"apiVersion": "policies.kyverno.io/v1", "kind": "PolicyException",
            "metadata": {"name": "e"}, "spec": {"policyRefs": [{"name": "p"}]}});
        assert!(refusal(&no_kind).is_some_and(|m| m.message().contains("spec.policyRefs[0].kind")));
        let gctx = json!({"apiVersion": "kyverno.io/v2beta1", "kind": "GlobalContextEntry",
            "metadata": {"name": "e"}, "spec": {}});
        assert_eq!(refusal(&gctx), None, "a kind outside the table");
    }

    /// A ClusterPolicy's context entry without the name of its global context entry,
    /// and a CEL policy's action outside its enum, were admitted.
    #[test]
    fn nested_required_fields_and_enums_of_the_policy_kinds() {
        let cpol = json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "p"}, "spec": {"rules": [{"name": "r",
                "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                "context": [{"name": "c", "globalReference": {"jmesPath": "@"}}],
                "validate": {"failureAction": "Block", "deny": {}}}]}});
        assert_eq!(
            refusal(&cpol).map(|i| i.message()).as_deref(),
            Some(
                "ClusterPolicy.kyverno.io \"p\" is invalid: [spec.rules[0].context[0].globalReference.name: Required value, \
                 spec.rules[0].validate.failureAction: Unsupported value: \"Block\": supported values: \"Audit\", \"Enforce\"]"
            )
        );
        let vpol = json!({"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy",
            "metadata": {"name": "v"}, "spec": {"validationActions": ["Deny", "Log"]}});
        assert_eq!(
            refusal(&vpol).map(|i| i.kubectl_text()).as_deref(),
            Some(
                "The ValidatingPolicy \"v\" is invalid: spec.validationActions[1]: Unsupported value: \"Log\": supported values: \"Deny\", \"Audit\", \"Warn\"\n"
            )
        );
    }
}

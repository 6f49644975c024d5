//! A test's values file (`values:` inline or `variables:` as a file; `kca policy apply
//! --values-file`), decoded into the shape Kyverno's CLI reads
//! (`cmd/cli/kubectl-kyverno/apis/v1alpha1/values_spec.go`, `policy.go`, `rule.go`,
//! `resource.go`, `namespace_selector.go`, `subresource.go`), then digested into lookups
//! by policy, rule and resource. It must not evaluate anything.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::offline::kyverno::{Subresource, UserInfo};

/// Why a values file is not one Kyverno's CLI would read: where, and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("values file: {0}")]
pub struct ValuesError(#[source] serde_path_to_error::Error<serde_json::Error>);

/// The values file as written.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ValuesSpec {
    #[serde(default, deserialize_with = "nullable")]
    global_values: Map<String, Value>,
    #[serde(default, deserialize_with = "nullable")]
    policies: Vec<PolicyValues>,
    #[serde(default, deserialize_with = "nullable")]
    namespace_selector: Vec<NamespaceLabels>,
    /// Whole `Namespace` objects.
    #[serde(default, deserialize_with = "nullable")]
    namespaces: Vec<Map<String, Value>>,
    #[serde(default, deserialize_with = "nullable")]
    subresources: Vec<SubresourceValues>,
}

#[derive(Debug, Default, Deserialize)]
struct PolicyValues {
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    resources: Vec<NamedValues>,
    #[serde(default, deserialize_with = "nullable")]
    rules: Vec<RuleValues>,
}

/// A resource's values.
#[derive(Debug, Default, Deserialize)]
struct NamedValues {
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    values: Map<String, Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RuleValues {
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    values: Map<String, Value>,
    /// A list per name, one item per foreach element.
    #[serde(default, deserialize_with = "nullable")]
    foreach_values: Map<String, Value>,
}

/// The labels of a namespace the test names (for `namespaceSelector`).
#[derive(Debug, Default, Deserialize)]
struct NamespaceLabels {
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    labels: BTreeMap<String, Scalar>,
}

/// A label value; numbers and booleans read as their text.
#[derive(Debug)]
struct Scalar(String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            v @ (Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null) => {
                Ok(Scalar(crate::offline::kyverno::vars::to_text(&v)))
            }
            _ => Err(serde::de::Error::custom(
                "a label value must be a string, not a list or a map",
            )),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SubresourceValues {
    #[serde(default, deserialize_with = "nullable")]
    subresource: ApiResource,
    #[serde(default, deserialize_with = "nullable")]
    parent_resource: ApiResource,
}

/// `metav1.APIResource`, the fields kca uses.
#[derive(Debug, Default, Deserialize)]
struct ApiResource {
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    group: String,
    #[serde(default, deserialize_with = "nullable")]
    version: String,
    #[serde(default, deserialize_with = "nullable")]
    kind: String,
}

/// An empty YAML value (`globalValues:`) is the empty default, as in Go.
fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// The test's values file, digested.
#[derive(Debug, Default)]
pub(crate) struct Values {
    pub(crate) global: Map<String, Value>,
    pub(crate) per_resource: BTreeMap<(String, String), Map<String, Value>>,
    pub(crate) per_rule: BTreeMap<(String, String), Map<String, Value>>,
    pub(crate) namespaces: BTreeMap<String, BTreeMap<String, String>>,
    /// Whole Namespace objects the values file states (`namespaces`), for CEL's
    /// `namespaceObject`.
    pub(crate) namespace_objects: Vec<Value>,
    /// Subresource kind (`Scale`) → its parent and name.
    pub(crate) subresources: BTreeMap<String, Subresource>,
}

pub(crate) fn parse_values(doc: &Value) -> Result<Values, ValuesError> {
    let spec: ValuesSpec = serde_path_to_error::deserialize(doc).map_err(ValuesError)?;
    let mut v = Values {
        global: spec.global_values,
        ..Values::default()
    };
    for p in spec.policies {
        for r in p.rules {
            let mut vals = r.values;
            for (k, val) in r.foreach_values {
                vals.entry(k).or_insert(val);
            }
            v.per_rule.insert((p.name.clone(), r.name), vals);
        }
        for r in p.resources {
            v.per_resource.insert((p.name.clone(), r.name), r.values);
        }
    }
    for sr in spec.subresources {
        let (parent, sub) = (sr.parent_resource, sr.subresource);
        v.subresources.insert(
            sub.kind,
            Subresource {
                parent_api_version: if parent.group.is_empty() {
                    parent.version
                } else {
                    format!("{}/{}", parent.group, parent.version)
                },
                parent_kind: parent.kind,
                name: sub.name.rsplit('/').next().unwrap_or("").to_string(),
                parent_namespace: String::new(),
                parent_name: String::new(),
            },
        );
    }
    v.namespace_objects = spec.namespaces.into_iter().map(Value::Object).collect();
    for ns in spec.namespace_selector {
        let labels = ns.labels.into_iter().map(|(k, l)| (k, l.0)).collect();
        v.namespaces.insert(ns.name, labels);
    }
    Ok(v)
}

/// A user info file (`userInfo`, `roles`, `clusterRoles`); what it does not state is
/// empty.
pub(crate) fn parse_user(doc: &Value) -> UserInfo {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let ui = doc.get("userInfo").unwrap_or(&Value::Null);
    UserInfo {
        username: text(ui, "username"),
        groups: str_list(ui.get("groups")),
        roles: str_list(doc.get("roles")),
        cluster_roles: str_list(doc.get("clusterRoles")),
    }
}

fn str_list(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|x| x.as_str().map(String::from))
            .collect(),
        Some(Value::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_digested_by_policy_rule_and_resource() {
        let v = parse_values(&json!({
            "globalValues": {"request.operation": "UPDATE"},
            "policies": [{"name": "p",
                "rules": [{"name": "r", "values": {"a": 1}, "foreachValues": {"b": [1, 2]}}],
                "resources": [{"name": "pod", "values": {"c": "x"}}]}],
            "namespaceSelector": [{"name": "ns", "labels": {"env": "prod", "tier": 1}}],
            "namespaces": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}],
            "subresources": [{"subresource": {"name": "deployments/scale", "kind": "Scale"},
                "parentResource": {"group": "apps", "version": "v1", "kind": "Deployment"}}],
        }))
        .unwrap();
        assert_eq!(v.global["request.operation"], json!("UPDATE"));
        let rule = &v.per_rule[&("p".into(), "r".into())];
        assert_eq!((&rule["a"], &rule["b"]), (&json!(1), &json!([1, 2])));
        assert_eq!(v.per_resource[&("p".into(), "pod".into())]["c"], json!("x"));
        assert_eq!(v.namespaces["ns"]["tier"], "1");
        assert_eq!(v.namespace_objects.len(), 1);
        let scale = &v.subresources["Scale"];
        assert_eq!(
            (
                scale.parent_api_version.as_str(),
                scale.parent_kind.as_str(),
                scale.name.as_str()
            ),
            ("apps/v1", "Deployment", "scale")
        );
    }

    #[test]
    fn empty_sections_read_as_empty() {
        let v = parse_values(&json!({"globalValues": null, "policies": null})).unwrap();
        assert!(v.global.is_empty() && v.per_rule.is_empty());
    }

    #[test]
    fn a_wrong_shape_is_an_error_naming_where() {
        let err = parse_values(&json!({"policies": [{"name": "p", "rules": {"name": "r"}}]}))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("values file: policies[0].rules: invalid type: map"),
            "{err}"
        );
        let err = parse_values(&json!({"namespaceSelector": [{"name": "a", "labels": {"x": []}}]}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("namespaceSelector[0].labels.x"), "{err}");
    }
}

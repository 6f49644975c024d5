//! Kubernetes labels and label selectors (`metav1.LabelSelector`) over JSON objects, as
//! the API server reads them: shared by RBAC aggregation and ValidatingAdmissionPolicy
//! matching. (Kyverno's own `selector` allows wildcards and lives in `kyverno::matching`.)

use std::collections::BTreeMap;

use serde_json::Value;

/// An object's `metadata.labels`; values that are not strings are left out.
pub fn labels_of(object: &Value) -> BTreeMap<String, String> {
    object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
        .collect()
}

/// Whether `sel` selects `labels`; a selector the API would refuse selects nothing.
pub fn selector_matches(sel: &Value, labels: &BTreeMap<String, String>) -> bool {
    LabelSelector::from_json(sel).is_ok_and(|s| s.matches(labels))
}

/// A `metav1.LabelSelector`: `matchLabels` and `matchExpressions`, all ANDed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelSelector {
    match_labels: BTreeMap<String, String>,
    expressions: Vec<Requirement>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    key: String,
    op: Op,
    values: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

impl LabelSelector {
    /// Reads a selector; `Err` says why the API would not accept it (the controller then
    /// leaves the role's rules as they are).
    pub fn from_json(v: &Value) -> Result<LabelSelector, String> {
        let mut match_labels = BTreeMap::new();
        match v.get("matchLabels") {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => {
                for (k, val) in m {
                    let val = val
                        .as_str()
                        .ok_or_else(|| format!("matchLabels.{k} must be a string"))?;
                    match_labels.insert(k.clone(), val.to_string());
                }
            }
            Some(_) => return Err("matchLabels must be a mapping".into()),
        }
        let mut expressions = Vec::new();
        match v.get("matchExpressions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) => {
                for item in items {
                    expressions.push(Requirement::from_json(item)?);
                }
            }
            Some(_) => return Err("matchExpressions must be a list".into()),
        }
        Ok(LabelSelector {
            match_labels,
            expressions,
        })
    }

    /// An empty selector matches every object, as `LabelSelectorAsSelector` makes it.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            && self.expressions.iter().all(|r| r.matches(labels))
    }
}

impl Requirement {
    fn from_json(v: &Value) -> Result<Requirement, String> {
        let key = v
            .get("key")
            .and_then(Value::as_str)
            .filter(|k| !k.is_empty())
            .ok_or("a matchExpressions entry needs a key")?
            .to_string();
        let op = match v.get("operator").and_then(Value::as_str) {
            Some("In") => Op::In,
            Some("NotIn") => Op::NotIn,
            Some("Exists") => Op::Exists,
            Some("DoesNotExist") => Op::DoesNotExist,
            other => {
                return Err(format!(
                    "matchExpressions operator {} is not one of In, NotIn, Exists, DoesNotExist",
                    other.map_or("(missing)".to_string(), |o| format!("{o:?}"))
                ));
            }
        };
        let values: Vec<String> = match v.get("values") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| i.as_str().map(str::to_string))
                .collect::<Option<_>>()
                .ok_or("matchExpressions values must be strings")?,
            Some(_) => return Err("matchExpressions values must be a list".into()),
        };
        match op {
            Op::In | Op::NotIn if values.is_empty() => {
                return Err(format!("operator {op:?} on key {key:?} needs values"));
            }
            Op::Exists | Op::DoesNotExist if !values.is_empty() => {
                return Err(format!("operator {op:?} on key {key:?} takes no values"));
            }
            _ => {}
        }
        Ok(Requirement { key, op, values })
    }

    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.op {
            Op::In => value.is_some_and(|v| self.values.contains(v)),
            // A missing label is "not in" any set, as in Kubernetes.
            Op::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            Op::Exists => value.is_some(),
            Op::DoesNotExist => value.is_none(),
        }
    }
}

/// Labels from pairs, for tests here and in the modules that match labels.
#[cfg(test)]
pub(crate) fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selector_table() {
        let l = labels(&[("tier", "web"), ("env", "prod")]);
        #[rustfmt::skip]
        let cases = [
            ("empty matches all", json!({}), true),
            ("matchLabels hit", json!({"matchLabels": {"tier": "web"}}), true),
            ("matchLabels miss", json!({"matchLabels": {"tier": "db"}}), false),
            ("matchLabels all ANDed", json!({"matchLabels": {"tier": "web", "x": "y"}}), false),
            ("In", json!({"matchExpressions": [{"key": "env", "operator": "In", "values": ["dev", "prod"]}]}), true),
            ("In, missing key", json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}), false),
            ("NotIn", json!({"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]}), false),
            ("NotIn, missing key", json!({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}), true),
            ("Exists", json!({"matchExpressions": [{"key": "env", "operator": "Exists"}]}), true),
            ("DoesNotExist", json!({"matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]}), false),
            ("labels and expressions ANDed", json!({"matchLabels": {"tier": "web"}, "matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]}), false),
        ];
        for (case, sel, want) in cases {
            let sel = LabelSelector::from_json(&sel).unwrap();
            assert_eq!(sel.matches(&l), want, "{case}");
        }
    }

    #[test]
    fn invalid_selectors_are_refused() {
        for bad in [
            json!({"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["x"]}]}),
            json!({"matchExpressions": [{"key": "a", "operator": "In"}]}),
            json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
            json!({"matchExpressions": [{"operator": "Exists"}]}),
            json!({"matchLabels": {"a": 1}}),
        ] {
            assert!(LabelSelector::from_json(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn labels_of_reads_string_labels_only() {
        let o = json!({"metadata": {"labels": {"a": "1", "b": 2}}});
        assert_eq!(labels_of(&o), labels(&[("a", "1")]));
        assert!(labels_of(&json!({})).is_empty());
    }
}

//! ClusterRole aggregation as the controller-manager's aggregation controller applies it:
//! label selectors over the loaded ClusterRoles, rules replaced by the union. Knows
//! nothing about bindings or requests.

use std::collections::BTreeMap;

use serde_json::Value;

use super::rule::PolicyRule;

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

/// What aggregation needs to know of one ClusterRole.
#[derive(Debug, Clone)]
pub struct Aggregable {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub rules: Vec<PolicyRule>,
    /// `Some` when the role has an `aggregationRule`; `Err` when its selectors are invalid.
    pub selectors: Option<Result<Vec<LabelSelector>, String>>,
}

/// Rewrites the rules of every aggregating ClusterRole to the union of the rules of the
/// roles its selectors pick (itself excluded), selectors in order, roles by name,
/// duplicates dropped: what the controller writes. The role's own `rules` are replaced,
/// not kept. Aggregating roles are revisited until nothing changes, so a role that
/// selects another aggregating role sees that role's aggregated rules, as the cluster
/// does once the controller has settled.
pub fn apply(roles: &mut [Aggregable]) {
    let mut order: Vec<usize> = (0..roles.len())
        .filter(|&i| matches!(roles[i].selectors, Some(Ok(_))))
        .collect();
    order.sort_by(|&a, &b| roles[a].name.cmp(&roles[b].name));
    let mut by_name: Vec<usize> = (0..roles.len()).collect();
    by_name.sort_by(|&a, &b| roles[a].name.cmp(&roles[b].name));

    // Each pass can only add rules that some role already holds, so the number of
    // distinct rules bounds the passes; the cap guards against any oscillation.
    for _ in 0..=roles.len() + 1 {
        let mut changed = false;
        for &i in &order {
            let Some(Ok(selectors)) = &roles[i].selectors else {
                continue;
            };
            let mut rules: Vec<PolicyRule> = Vec::new();
            for sel in selectors {
                for &j in &by_name {
                    if j == i || !sel.matches(&roles[j].labels) {
                        continue;
                    }
                    for r in &roles[j].rules {
                        if !rules.contains(r) {
                            rules.push(r.clone());
                        }
                    }
                }
            }
            if rules != roles[i].rules {
                roles[i].rules = rules;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offline::rbac::rule::rule;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

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

    fn role(
        name: &str,
        l: &[(&str, &str)],
        rules: Vec<PolicyRule>,
        sel: Option<Vec<Value>>,
    ) -> Aggregable {
        Aggregable {
            name: name.into(),
            labels: labels(l),
            rules,
            selectors: sel.map(|s| s.iter().map(LabelSelector::from_json).collect()),
        }
    }

    #[test]
    fn aggregation_replaces_own_rules_with_the_union_in_name_order() {
        let pods = rule("get", "", "pods");
        let svcs = rule("get", "", "services");
        let own = rule("*", "*", "*");
        let mut roles = vec![
            role("z-svc", &[("agg", "yes")], vec![svcs.clone()], None),
            role(
                "agg",
                &[],
                vec![own],
                Some(vec![json!({"matchLabels": {"agg": "yes"}})]),
            ),
            role(
                "a-pods",
                &[("agg", "yes")],
                vec![pods.clone(), svcs.clone()],
                None,
            ),
            role(
                "other",
                &[("agg", "no")],
                vec![rule("delete", "", "pods")],
                None,
            ),
        ];
        apply(&mut roles);
        assert_eq!(roles[1].rules, vec![pods, svcs]);
    }

    #[test]
    fn aggregation_with_no_match_empties_the_role() {
        let mut roles = vec![role(
            "agg",
            &[],
            vec![rule("get", "", "pods")],
            Some(vec![json!({"matchLabels": {"nobody": "here"}})]),
        )];
        apply(&mut roles);
        assert!(roles[0].rules.is_empty());
    }

    #[test]
    fn aggregation_with_invalid_selector_keeps_own_rules() {
        let own = rule("get", "", "pods");
        let mut roles = vec![
            role(
                "agg",
                &[],
                vec![own.clone()],
                Some(vec![
                    json!({"matchExpressions": [{"key": "a", "operator": "Bogus"}]}),
                ]),
            ),
            role("x", &[("a", "b")], vec![rule("get", "", "secrets")], None),
        ];
        apply(&mut roles);
        assert_eq!(roles[0].rules, vec![own]);
    }

    #[test]
    fn aggregation_is_transitive_and_excludes_self() {
        // "top" selects "mid", which aggregates "leaf"; "mid" also matches its own selector.
        let leaf_rule = rule("get", "", "configmaps");
        let mut roles = vec![
            role(
                "top",
                &[],
                vec![],
                Some(vec![json!({"matchLabels": {"level": "mid"}})]),
            ),
            role(
                "mid",
                &[("level", "mid"), ("tier", "x")],
                vec![],
                Some(vec![json!({"matchLabels": {"tier": "x"}})]),
            ),
            role("leaf", &[("tier", "x")], vec![leaf_rule.clone()], None),
        ];
        apply(&mut roles);
        assert_eq!(roles[1].rules, vec![leaf_rule.clone()]);
        assert_eq!(roles[0].rules, vec![leaf_rule]);
    }

    #[test]
    fn aggregation_cycle_settles() {
        let a_rule = rule("get", "", "pods");
        let b_rule = rule("get", "", "secrets");
        let c_rule = rule("get", "", "nodes");
        let mut roles = vec![
            role(
                "a",
                &[("g", "1")],
                vec![a_rule],
                Some(vec![json!({"matchLabels": {"g": "1"}})]),
            ),
            role(
                "b",
                &[("g", "1")],
                vec![b_rule],
                Some(vec![json!({"matchLabels": {"g": "1"}})]),
            ),
            role("c", &[("g", "1")], vec![c_rule.clone()], None),
        ];
        apply(&mut roles);
        // Both converge on what the controller would write; neither oscillates.
        let (a, b) = (roles[0].rules.clone(), roles[1].rules.clone());
        apply(&mut roles);
        assert_eq!(roles[0].rules, a);
        assert_eq!(roles[1].rules, b);
        assert!(a.contains(&c_rule) && b.contains(&c_rule));
    }
}

//! ClusterRole aggregation as the controller-manager's aggregation controller applies it:
//! label selectors over the loaded ClusterRoles, rules replaced by the union. Knows
//! nothing about bindings or requests.

use std::collections::BTreeMap;

use super::rule::PolicyRule;
use crate::offline::labels::LabelSelector;

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
    use crate::offline::labels::labels;
    use crate::offline::rbac::rule::rule;
    use serde_json::{Value, json};

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

//! Which failure action a failing rule takes for one request — whether it blocks it — as
//! Kyverno's engine response resolves it (pkg/engine/api/engineresponse.go
//! `HasEnforcedFailure`, `failureActionForRule`, `ruleAction`, `matchOverride`): the
//! rule's `failureActionOverrides`, its `failureAction`, then the policy's
//! `validationFailureActionOverrides` and `validationFailureAction`. An override applies
//! when the resource's namespace and the namespace's labels select it.

use std::collections::BTreeMap;

use serde_json::Value;

use super::matching::{selector_matches, wildcard_match};
use super::{Policy, Rule};

/// What one override, a rule or a policy is matched against: the patched resource's
/// namespace and that namespace's labels.
pub(super) struct Scope<'a> {
    pub namespace: &'a str,
    pub labels: &'a BTreeMap<String, String>,
}

/// `Enforce` (or the legacy `enforce`); anything else audits
/// (api/kyverno/v1/spec_types.go `ValidationFailureAction.Enforce`).
fn enforces(action: &str) -> bool {
    matches!(action, "Enforce" | "enforce")
}

/// An action an override may name (`IsValid`); an override naming another is passed over.
fn valid(action: &str) -> bool {
    matches!(action, "Enforce" | "enforce" | "Audit" | "audit")
}

/// The action of the first override that applies to `scope` (`matchOverride`): no
/// `namespaces` and no `namespaceSelector` apply everywhere; `namespaces` (wildcards)
/// must name the namespace, and a `namespaceSelector` must select its labels too. An
/// empty `namespaces` list names none.
fn matched_override<'a>(overrides: Option<&'a Value>, scope: &Scope<'_>) -> Option<&'a str> {
    let selects = |o: &Value| match o.get("namespaceSelector").filter(|s| !s.is_null()) {
        None => true,
        Some(sel) => selector_matches(sel, scope.labels).unwrap_or(false),
    };
    for o in overrides.and_then(Value::as_array).into_iter().flatten() {
        let Some(action) = o.get("action").and_then(Value::as_str).filter(|a| valid(a)) else {
            continue;
        };
        match o.get("namespaces").filter(|n| !n.is_null()) {
            None if selects(o) => return Some(action),
            None => {}
            Some(names) => {
                let named = names
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .any(|ns| wildcard_match(ns, scope.namespace));
                if named && selects(o) {
                    return Some(action);
                }
            }
        }
    }
    None
}

/// The action a rule sets itself (`ruleAction`): a validate rule's overrides, then its
/// `failureAction`; for a verifyImages rule, `Enforce` if any entry enforces, else the
/// first entry's action.
fn rule_action<'a>(rule: &'a Rule, scope: &Scope<'_>) -> Option<&'a str> {
    if let Some(validate) = rule.validate.as_ref().filter(|v| !v.is_null()) {
        return matched_override(validate.get("failureActionOverrides"), scope)
            .or_else(|| validate.get("failureAction").and_then(Value::as_str));
    }
    let entries = rule.verify_images.as_ref().and_then(Value::as_array)?;
    let actions = || {
        entries
            .iter()
            .filter_map(|e| e.get("failureAction").and_then(Value::as_str))
    };
    actions().find(|a| enforces(a)).or_else(|| actions().next())
}

/// The policy's own action: its overrides, then `validationFailureAction`.
fn policy_action<'a>(policy: &'a Policy, scope: &Scope<'_>) -> &'a str {
    let spec = policy.raw.get("spec").unwrap_or(&Value::Null);
    matched_override(spec.get("validationFailureActionOverrides"), scope)
        .unwrap_or(&policy.failure_action)
}

/// Whether the rule named `rule` of `policy`, failing, blocks the request
/// (`failureActionForRule(...).Enforce()`). A name the policy's rules (after autogen)
/// do not have takes the policy-wide action: the first rule that sets one, else the
/// policy's (`GetValidationFailureAction`).
pub(super) fn blocks(policy: &Policy, rule: &str, scope: &Scope<'_>) -> bool {
    let action = match policy.rules.iter().find(|r| r.name == rule) {
        Some(r) => rule_action(r, scope).unwrap_or_else(|| policy_action(policy, scope)),
        None => policy
            .rules
            .iter()
            .find_map(|r| rule_action(r, scope))
            .unwrap_or_else(|| policy_action(policy, scope)),
    };
    enforces(action)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(spec: Value) -> Policy {
        let raw = json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "p"}, "spec": spec});
        super::super::load_policies(&[raw]).0.remove(0)
    }

    fn scope<'a>(namespace: &'a str, labels: &'a BTreeMap<String, String>) -> Scope<'a> {
        Scope { namespace, labels }
    }

    /// A rule's Audit override for namespaces with a label was not read, so the rule's
    /// Enforce blocked requests in them too.
    #[test]
    fn a_rule_override_by_namespace_selector_decides_the_action() {
        let p = policy(json!({"rules": [{"name": "r", "validate": {
            "failureAction": "Enforce",
            "failureActionOverrides": [{"action": "Audit",
                "namespaceSelector": {"matchLabels": {"tier": "dev"}}}],
            "deny": {}}}]}));
        let dev = BTreeMap::from([("tier".to_string(), "dev".to_string())]);
        let none = BTreeMap::new();
        assert!(!blocks(&p, "r", &scope("a", &dev)));
        assert!(blocks(&p, "r", &scope("a", &none)));
    }

    #[test]
    fn policy_overrides_apply_to_rules_without_their_own_action() {
        let p = policy(json!({"validationFailureAction": "Audit",
            "validationFailureActionOverrides": [
                {"action": "Enforce", "namespaces": ["prod-*"]},
                {"action": "Enforce", "namespaces": []}],
            "rules": [{"name": "r", "validate": {"deny": {}}},
                {"name": "own", "validate": {"failureAction": "Audit", "deny": {}}}]}));
        let none = BTreeMap::new();
        assert!(blocks(&p, "r", &scope("prod-1", &none)));
        assert!(!blocks(&p, "r", &scope("dev", &none)));
        assert!(!blocks(&p, "own", &scope("prod-1", &none)));
        // An unknown rule name: the first rule that sets an action ("own": Audit).
        assert!(!blocks(&p, "gone", &scope("prod-1", &none)));
    }
}

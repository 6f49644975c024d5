//! `immutableGenerateFields` (pkg/validation/policy/generate.go, Kyverno 1.19.0): on a
//! policy update, a generate rule keeps its spec. Kyverno hashes each generate rule twice,
//! with its mutable parts reset: the generate pattern (without `data`, `foreach`,
//! `generateExisting`, with `synchronize` and `orphanDownstreamOnPolicyDelete` fixed) and
//! the rest of the rule (without `match` when no old rule synchronizes). A changed
//! pattern is only a warning (stale targets); any other change of the rule is refused.

use serde_json::{Map, Value};

use super::Problem;

/// How `immutableGenerateFields` judges `new` replacing `old`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Immutable {
    Kept,
    /// A generate pattern changed: accepted with this warning, no later check runs.
    Stale(&'static str),
    Refused(Problem),
}

/// How Kyverno judges `new` replacing `old` (see [`Immutable`]).
pub fn immutable_generate(new: &Value, old: &Value) -> Immutable {
    let old_rules = generate_rules(old);
    let new_rules = generate_rules(new);
    let old_sync = old_rules
        .iter()
        .any(|r| r.pointer("/generate/synchronize").and_then(Value::as_bool) == Some(true));
    let patterns = |rules: &[Value]| -> Vec<Value> { rules.iter().map(pattern_key).collect() };
    let rest =
        |rules: &[Value]| -> Vec<Value> { rules.iter().map(|r| rule_key(r, old_sync)).collect() };
    let covers = |new: &[Value], old: &[Value]| old.iter().all(|o| new.contains(o));
    if !covers(&patterns(&new_rules), &patterns(&old_rules)) {
        return Immutable::Stale(
            "changes in the generate rule pattern could result in stale targets",
        );
    }
    if !covers(&rest(&new_rules), &rest(&old_rules)) {
        return Immutable::Refused(Problem {
            message: "changes of immutable fields of a rule spec in a generate rule is disallowed"
                .into(),
        });
    }
    Immutable::Kept
}

fn generate_rules(policy: &Value) -> Vec<Value> {
    policy
        .pointer("/spec/rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|r| r.get("generate").is_some_and(Value::is_object))
        .cloned()
        .collect()
}

fn pattern_key(rule: &Value) -> Value {
    let mut g = rule.get("generate").cloned().unwrap_or(Value::Null);
    if let Some(m) = g.as_object_mut() {
        for k in ["data", "foreach", "generateExisting"] {
            m.shift_remove(k);
        }
        m.insert("synchronize".into(), Value::Bool(true));
        m.insert("orphanDownstreamOnPolicyDelete".into(), Value::Bool(true));
    }
    zero_free(g)
}

fn rule_key(rule: &Value, old_sync: bool) -> Value {
    let mut r = rule.clone();
    if let Some(m) = r.as_object_mut() {
        m.shift_remove("generate");
        if !old_sync {
            m.shift_remove("match");
        }
    }
    zero_free(r)
}

/// Go's JSON of a typed rule omits zero values: absent and `false`/`""`/`{}`/`[]`/null
/// hash alike.
fn zero_free(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let out: Map<String, Value> = m
                .into_iter()
                .map(|(k, v)| (k, zero_free(v)))
                .filter(|(_, v)| !is_zero(v))
                .collect();
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.into_iter().map(zero_free).collect()),
        other => other,
    }
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Number(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(name: &str, kinds: Value, data: Value, sync: bool) -> Value {
        json!({"apiVersion": "kyverno.io/v1", "kind": "Policy",
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"rules": [{"name": name, "match": {"any": [{"resources": {"kinds": kinds}}]},
                "generate": {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "namespace": "default",
                    "synchronize": sync, "data": data}}]}})
    }

    /// A policy update that renamed a synchronized generate rule or changed its match was
    /// accepted; Kyverno refuses it. Its data and `synchronize` may change.
    #[test]
    fn a_generate_rule_spec_is_immutable_on_update() {
        let old = policy("r", json!(["Secret"]), json!({"data": {"a": "1"}}), true);
        let renamed = policy(
            "other",
            json!(["Secret"]),
            json!({"data": {"a": "1"}}),
            true,
        );
        let rematched = policy("r", json!(["Secret", "ServiceAccount"]), json!({}), true);
        let new_data = policy("r", json!(["Secret"]), json!({"data": {"a": "2"}}), false);
        assert!(matches!(
            immutable_generate(&renamed, &old),
            Immutable::Refused(_)
        ));
        assert!(matches!(
            immutable_generate(&rematched, &old),
            Immutable::Refused(_)
        ));
        assert_eq!(immutable_generate(&new_data, &old), Immutable::Kept);
        // Without a synchronized rule, the match may change.
        let old_nosync = policy("r", json!(["Secret"]), json!({}), false);
        let rematched_nosync = policy("r", json!(["ServiceAccount"]), json!({}), false);
        assert_eq!(
            immutable_generate(&rematched_nosync, &old_nosync),
            Immutable::Kept
        );
    }
}

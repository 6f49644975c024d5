//! Server-side apply as Kyverno's background controller uses it for a policy with
//! `useServerSideApply` (pkg/clients/dclient/client.go `ApplyResource`: field manager
//! `kyverno-generate`, `Force: true`), called by pkg/background/generate/generator.go for
//! generate rules and pkg/cel/libs/context.go for GeneratingPolicies. What the manager
//! applies takes its fields over from whoever set them; fields others set and it does not
//! name stay; fields it applied before and no longer names go, unless someone has set
//! them since (they own them then). Ownership is kept as the last configuration applied
//! per object; lists are atomic (no list-map merge keys), maps merge.

use serde_json::{Map, Value};

/// Whether a policy (a ClusterPolicy, Policy or GeneratingPolicy) sets
/// `spec.useServerSideApply`.
pub(super) fn asks_for_it(policy: &Value) -> bool {
    policy
        .pointer("/spec/useServerSideApply")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The configuration the background controller last applied to each object (by uid).
#[derive(Debug, Clone, Default)]
pub(super) struct Applied {
    last: Vec<(String, Value)>,
}

/// The most objects whose applied configuration is kept; older ones are forgotten.
const MAX_KEPT: usize = 512;

impl Applied {
    pub(super) fn last(&self, uid: &str) -> Option<&Value> {
        self.last.iter().find(|(u, _)| u == uid).map(|(_, v)| v)
    }

    pub(super) fn record(&mut self, uid: &str, applied: Value) {
        self.last.retain(|(u, _)| u != uid);
        if self.last.len() >= MAX_KEPT {
            self.last.remove(0);
        }
        self.last.push((uid.to_string(), applied));
    }
}

/// The object after `applied` is server-side applied over `current` by the manager that
/// last applied `last`.
pub(super) fn apply(current: &Value, applied: &Value, last: Option<&Value>) -> Value {
    let mut out = overlay(current, applied);
    if let (Value::Object(o), Some(Value::Object(last))) = (&mut out, last) {
        prune(o, last, applied.as_object(), current.as_object());
    }
    out
}

/// `applied`'s fields over `current`'s: maps merge, anything else is replaced.
fn overlay(current: &Value, applied: &Value) -> Value {
    match (current, applied) {
        (Value::Object(c), Value::Object(a)) => {
            let mut out = c.clone();
            for (k, v) in a {
                let merged = match c.get(k) {
                    Some(cv) => overlay(cv, v),
                    None => v.clone(),
                };
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        (_, a) => a.clone(),
    }
}

/// Removes from `out` what the manager applied last time (`last`), no longer applies and
/// nobody has changed since (`current` still holds the value it applied).
fn prune(
    out: &mut Map<String, Value>,
    last: &Map<String, Value>,
    applied: Option<&Map<String, Value>>,
    current: Option<&Map<String, Value>>,
) {
    for (k, was) in last {
        let now_applied = applied.and_then(|a| a.get(k));
        let now = current.and_then(|c| c.get(k));
        match (was, now_applied) {
            (Value::Object(was), Some(Value::Object(a))) => {
                if let Some(Value::Object(o)) = out.get_mut(k) {
                    prune(o, was, Some(a), now.and_then(Value::as_object));
                }
            }
            (_, Some(_)) => {}
            (Value::Object(was_map), None) => {
                if now == Some(&Value::Object(was_map.clone())) {
                    out.remove(k);
                } else if let Some(Value::Object(o)) = out.get_mut(k) {
                    prune(o, was_map, None, now.and_then(Value::as_object));
                }
            }
            (_, None) => {
                if now == Some(was) {
                    out.remove(k);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_applied_field_is_taken_over_and_others_fields_stay() {
        let current = json!({"metadata": {"name": "c", "annotations": {"theirs": "1"}},
            "data": {"a": "changed", "b": "added"}});
        let applied = json!({"metadata": {"name": "c"}, "data": {"a": "mine"}});
        assert_eq!(
            apply(&current, &applied, Some(&applied)),
            json!({"metadata": {"name": "c", "annotations": {"theirs": "1"}},
                "data": {"a": "mine", "b": "added"}})
        );
    }

    #[test]
    fn a_field_no_longer_applied_goes_unless_someone_changed_it() {
        let last = json!({"data": {"a": "1", "b": "2", "c": "3"}});
        let current = json!({"data": {"a": "1", "b": "2", "c": "theirs", "d": "4"}});
        let applied = json!({"data": {"a": "1"}});
        assert_eq!(
            apply(&current, &applied, Some(&last)),
            json!({"data": {"a": "1", "c": "theirs", "d": "4"}})
        );
    }
}

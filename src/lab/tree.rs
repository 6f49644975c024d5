//! Partial-tree matching: does an object hold at least what a check expects? Maps match
//! key by key, lists match when every expected item matches some actual item (in any
//! order), `null` means "absent". Three operators, each a one-key mapping, say more where
//! a plain tree cannot: `{$matches: REGEX}` (a string matching the regular expression),
//! `{$inOrder: [..]}` (a list holding these items in this order, others may sit between)
//! and `{$anyOf: [TREE, ..]}` (at least one of the trees); an operator key beside other
//! keys applies to the mapping it sits in. Pure; the first mismatch comes back with its
//! path. Also the JSON merge patch (RFC 7386) that setup and sync steps apply, and its inverse.

use serde_json::Value;

use super::detail::Diff;
use crate::error::{Msg, msg};

/// `Ok` when `got` holds everything in `want`; else where and how it differs.
pub fn partial_match(want: &Value, got: &Value) -> Result<(), Diff> {
    walk(want, got, "")
}

fn walk(want: &Value, got: &Value, path: &str) -> Result<(), Diff> {
    let at = |p: &str| {
        if p.is_empty() {
            "(root)".to_string()
        } else {
            p.to_string()
        }
    };
    if let Some((op, arg)) = operator(want) {
        return apply_operator(op, arg, got, path);
    }
    match want {
        // An empty list counts as absent: Kubernetes' list fields are `omitempty`, so the
        // API server stores `ingress: []` as no `ingress` at all.
        Value::Null => match got {
            Value::Null => Ok(()),
            Value::Array(items) if items.is_empty() => Ok(()),
            other => Err(Diff::ShouldBeAbsent {
                at: at(path),
                found: shown(other),
            }),
        },
        Value::Object(map) => {
            let Value::Object(have) = got else {
                return Err(Diff::NotMapping {
                    at: at(path),
                    found: shown(got),
                });
            };
            for (k, w) in map {
                // An operator key among others applies to the mapping it sits in.
                if OPERATORS.contains(&k.as_str()) {
                    apply_operator(k, w, got, path)?;
                    continue;
                }
                let sub = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match have.get(k) {
                    Some(g) => walk(w, g, &sub)?,
                    // An absent key is `null` to an operator (`{$anyOf: [null, …]}`).
                    None if walk(w, &Value::Null, &sub).is_ok() => {}
                    None => return Err(Diff::Missing { at: sub }),
                }
            }
            Ok(())
        }
        Value::Array(items) => {
            let Value::Array(have) = got else {
                return Err(Diff::NotList {
                    at: at(path),
                    found: shown(got),
                });
            };
            if have.is_empty() && !items.is_empty() {
                return Err(Diff::EmptyList {
                    at: at(path),
                    like: short(&items[0]),
                });
            }
            for (i, w) in items.iter().enumerate() {
                if !have.iter().any(|g| walk(w, g, "").is_ok()) {
                    // With one candidate the inner difference says more than "no item".
                    if have.len() == 1 {
                        walk(w, &have[0], &format!("{path}[0]"))?;
                    }
                    return Err(Diff::NoItem {
                        at: at(path),
                        index: i + 1,
                        item: short(w),
                    });
                }
            }
            Ok(())
        }
        scalar => {
            if scalar_eq(scalar, got) {
                Ok(())
            } else {
                Err(Diff::Differs {
                    at: at(path),
                    got: shown(got),
                    want: short(scalar),
                })
            }
        }
    }
}

/// The operators a tree may use, by name.
pub const OPERATORS: [&str; 3] = ["$matches", "$inOrder", "$anyOf"];

/// A one-key mapping whose key is an operator.
pub fn operator(want: &Value) -> Option<(&str, &Value)> {
    let map = want.as_object()?;
    if map.len() != 1 {
        return None;
    }
    let (k, v) = map.iter().next()?;
    OPERATORS.contains(&k.as_str()).then_some((k.as_str(), v))
}

/// Whether an operator's argument has the right shape (a regex that compiles, a list):
/// the lab lint calls it so a broken tree is a content error, not a failed check.
pub fn operator_problem(op: &str, arg: &Value) -> Option<String> {
    operator_problem_said(op, arg).map(|m| m.en)
}

/// [`operator_problem`] in both languages (the lab lint shows it to an author).
fn operator_problem_said(op: &str, arg: &Value) -> Option<Msg> {
    match (op, arg) {
        ("$matches", Value::String(r)) => regex::Regex::new(r).err().map(|e| {
            msg(
                format!("`$matches`: 正規表現として読めません: {e}"),
                format!("`$matches`: invalid regular expression: {e}"),
            )
        }),
        ("$matches", _) => Some(msg(
            "`$matches` には正規表現 (文字列) を渡します",
            "`$matches` takes a regular expression (a string)",
        )),
        ("$inOrder" | "$anyOf", Value::Array(items)) if !items.is_empty() => None,
        (op, _) => Some(msg(
            format!("`{op}` には空でないリストを渡します"),
            format!("`{op}` takes a non-empty list"),
        )),
    }
}

fn apply_operator(op: &str, arg: &Value, got: &Value, path: &str) -> Result<(), Diff> {
    let at = if path.is_empty() { "(root)" } else { path }.to_string();
    if let Some(problem) = operator_problem(op, arg) {
        return Err(Diff::Operator { at, problem });
    }
    match (op, arg) {
        ("$matches", Value::String(r)) => {
            let re = regex::RegexBuilder::new(r)
                .multi_line(true)
                .build()
                .map_err(|e| Diff::Operator {
                    at: at.clone(),
                    problem: e.to_string(),
                })?;
            match got {
                Value::String(s) if re.is_match(s) => Ok(()),
                Value::String(s) => Err(Diff::NoRegexMatch {
                    at,
                    got: short(&Value::String(s.clone())),
                    re: r.clone(),
                }),
                other => Err(Diff::NotText {
                    at,
                    re: r.clone(),
                    found: shown(other),
                }),
            }
        }
        ("$anyOf", Value::Array(alts)) => {
            let mut first = None;
            for a in alts {
                match walk(a, got, path) {
                    Ok(()) => return Ok(()),
                    Err(e) => {
                        first.get_or_insert(e);
                    }
                }
            }
            Err(Diff::NoneOf {
                at,
                count: alts.len(),
                first: first.map(Box::new),
            })
        }
        ("$inOrder", Value::Array(items)) => {
            let Value::Array(have) = got else {
                return Err(Diff::NotList {
                    at,
                    found: shown(got),
                });
            };
            // Greedy: each expected item takes the first actual item after the previous
            // one's position that matches it (the earliest is never a worse choice).
            let mut next = 0;
            for (i, w) in items.iter().enumerate() {
                match (next..have.len()).find(|&j| walk(w, &have[j], "").is_ok()) {
                    Some(j) => next = j + 1,
                    None => {
                        let anywhere = have.iter().any(|g| walk(w, g, "").is_ok());
                        return Err(if anywhere && i > 0 {
                            Diff::OutOfOrder {
                                at,
                                index: i + 1,
                                item: short(w),
                                before: short(&items[i - 1]),
                            }
                        } else {
                            Diff::NoItem {
                                at,
                                index: i + 1,
                                item: short(w),
                            }
                        });
                    }
                }
            }
            Ok(())
        }
        _ => Err(Diff::UnknownOperator { at, op: op.into() }),
    }
}

/// Every operator problem in a tree, with its path (for the lab lint).
pub fn tree_problems(want: &Value) -> Vec<Msg> {
    let mut out = Vec::new();
    collect_problems(want, "", &mut out);
    out
}

fn collect_problems(want: &Value, path: &str, out: &mut Vec<Msg>) {
    if let Some((op, arg)) = operator(want) {
        if let Some(p) = operator_problem_said(op, arg) {
            let at = if path.is_empty() { "(root)" } else { path };
            out.push(msg(format!("{at}: {}", p.ja), format!("{at}: {}", p.en)));
        } else if let Value::Array(items) = arg {
            for (i, it) in items.iter().enumerate() {
                collect_problems(it, &format!("{path}.{op}[{i}]"), out);
            }
        }
        return;
    }
    match want {
        Value::Object(map) => {
            for (k, v) in map {
                if k.starts_with('$') && !OPERATORS.contains(&k.as_str()) {
                    let ops = OPERATORS.join(", ");
                    out.push(msg(
                        format!("{path}.{k}: 演算子ではありません (使えるのは {ops})"),
                        format!("{path}.{k}: unknown operator (use one of {ops})"),
                    ));
                }
                let sub = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                collect_problems(v, &sub, out);
            }
        }
        Value::Array(items) => {
            for (i, it) in items.iter().enumerate() {
                collect_problems(it, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// RFC 7386 JSON merge patch (what a setup `patch` and a `sync` step apply).
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Default::default());
    }
    let Value::Object(t) = target else { return };
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

/// The merge patch that undoes `patch` on `original` (each patched key back to its value
/// there, or removed when it had none).
pub fn inverse_patch(original: &Value, patch: &Value) -> Value {
    let Value::Object(p) = patch else {
        return original.clone();
    };
    let mut out = serde_json::Map::new();
    for (k, v) in p {
        let before = original.get(k);
        let undo = match (before, v) {
            (None, _) => Value::Null,
            (Some(b), Value::Object(_)) if b.is_object() => inverse_patch(b, v),
            (Some(b), _) => b.clone(),
        };
        out.insert(k.clone(), undo);
    }
    Value::Object(out)
}

/// Numbers compare by value; a string and a number compare by text, because manifests
/// write `"80"` and `80` for the same port or quantity.
fn scalar_eq(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::String(a), Value::Number(b)) | (Value::Number(b), Value::String(a)) => {
            a == &b.to_string()
        }
        (a, b) => a == b,
    }
}

/// A value for a [`Diff`]: `None` for nothing (`null`), else [`short`].
pub fn shown(v: &Value) -> Option<String> {
    (!v.is_null()).then(|| short(v))
}

/// A compact rendering of a value for messages.
pub fn short(v: &Value) -> String {
    let s = match v {
        Value::Null => return "nothing".into(),
        Value::String(s) => format!("`{s}`"),
        other => other.to_string(),
    };
    if s.chars().count() > 80 {
        format!("{}…", s.chars().take(79).collect::<String>())
    } else {
        s
    }
}

/// `want` without its top-level `status` (for targets that cannot see status), and
/// whether there was one.
pub fn without_status(want: &Value) -> (Value, bool) {
    let mut w = want.clone();
    let had = w.as_object_mut().and_then(|m| m.remove("status")).is_some();
    (w, had)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_empty_list_is_absent_and_a_rule_that_allows_all_is_not() {
        // A default-deny NetworkPolicy: no ingress rule. `[]` is stored as absent by the
        // API server (omitempty); `[{}]` is a rule that allows every peer.
        let want = json!({"spec": {"ingress": null}});
        assert!(partial_match(&want, &json!({"spec": {}})).is_ok());
        assert!(partial_match(&want, &json!({"spec": {"ingress": []}})).is_ok());
        let err = partial_match(&want, &json!({"spec": {"ingress": [{}]}}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("spec.ingress"), "{err}");
    }

    #[test]
    fn table() {
        let obj = json!({
            "metadata": {"name": "p", "labels": {"team": "a"}},
            "spec": {"containers": [
                {"name": "app", "image": "nginx"},
                {"name": "side", "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}}}
            ], "port": 80},
        });
        let cases: &[(Value, Result<(), &str>)] = &[
            (json!({"metadata": {"labels": {"team": "a"}}}), Ok(())),
            (
                json!({"metadata": {"labels": {"team": "b"}}}),
                Err("`metadata.labels.team` is `a`, expected `b`"),
            ),
            (
                json!({"metadata": {"annotations": {"x": "y"}}}),
                Err("`metadata.annotations` is missing"),
            ),
            (json!({"metadata": {"annotations": null}}), Ok(())),
            (
                json!({"metadata": {"labels": null}}),
                Err("`metadata.labels` should be absent"),
            ),
            (
                json!({"spec": {"containers": [{"name": "side", "resources": {"limits": {"cpu": "100m"}}}]}}),
                Ok(()),
            ),
            (
                json!({"spec": {"containers": [{"name": "side"}, {"name": "app"}]}}),
                Ok(()),
            ),
            (
                json!({"spec": {"containers": [{"name": "gone"}]}}),
                Err("`spec.containers` has no item matching expected item 1"),
            ),
            (json!({"spec": {"port": "80"}}), Ok(())),
            (json!({"spec": {"port": 80.0}}), Ok(())),
            (
                json!({"spec": {"containers": {"name": "app"}}}),
                Err("`spec.containers` should be a mapping"),
            ),
        ];
        for (want, expect) in cases {
            let got = partial_match(want, &obj);
            match (expect, &got) {
                (Ok(()), Ok(())) => {}
                (Err(msg), Err(e)) => assert!(e.to_string().contains(msg), "{want}: {e}"),
                _ => panic!("{want}: expected {expect:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn an_empty_list_says_so() {
        let e = partial_match(&json!({"rules": [{"name": "r"}]}), &json!({"rules": []}))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("`rules` is empty; expected an item like"),
            "{e}"
        );
    }

    #[test]
    fn a_single_candidate_reports_the_inner_difference() {
        let got = json!({"items": [{"name": "a", "x": 1}]});
        let e = partial_match(&json!({"items": [{"name": "a", "x": 2}]}), &got)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "`items[0].x` is 1, expected 2");
    }

    #[test]
    fn matches_takes_a_regex_on_text() {
        let got = json!({"patch": "- op: add\n  path: /metadata/annotations/kca.io~1owner\n"});
        let want = json!({"patch": {"$matches": "^\\s*path:\\s*/metadata/annotations/kca\\.io~1owner\\s*$"}});
        assert_eq!(partial_match(&want, &got), Ok(()));
        let plain = json!({"patch": "path: /metadata/annotations/kca.io/owner"});
        let e = partial_match(&want, &plain).unwrap_err().to_string();
        assert!(e.contains("does not match"), "{e}");
        let e = partial_match(&want, &json!({"patch": {"a": 1}}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("should be text"), "{e}");
    }

    #[test]
    fn in_order_rejects_a_list_in_the_wrong_order() {
        let steps = json!({"steps": [{"setWeight": 10}, {"setWeight": 100}, {"pause": {}}]});
        let want =
            json!({"steps": {"$inOrder": [{"setWeight": 10}, {"pause": {}}, {"setWeight": 100}]}});
        let e = partial_match(&want, &steps).unwrap_err().to_string();
        assert!(e.contains("must be in that order"), "{e}");
        // Any order is still what a plain list means.
        let any = json!({"steps": [{"setWeight": 10}, {"pause": {}}, {"setWeight": 100}]});
        assert_eq!(partial_match(&any, &steps), Ok(()));
        let good = json!({"steps": [{"setWeight": 10}, {"pause": {"duration": "1m"}}, {"setWeight": 50}, {"pause": {}}, {"setWeight": 100}]});
        assert_eq!(partial_match(&want, &good), Ok(()));
        let e = partial_match(&want, &json!({"steps": [{"setWeight": 10}]}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no item matching expected item 2"), "{e}");
    }

    #[test]
    fn any_of_accepts_either_spelling() {
        let want = json!({"spec": {"$anyOf": [
            {"rules": [{"validate": {"failureAction": "Enforce"}}]},
            {"validationFailureAction": "Enforce"}
        ]}});
        let new = json!({"spec": {"rules": [{"validate": {"failureAction": "Enforce"}}]}});
        let old =
            json!({"spec": {"validationFailureAction": "Enforce", "rules": [{"validate": {}}]}});
        let audit =
            json!({"spec": {"validationFailureAction": "Audit", "rules": [{"validate": {}}]}});
        assert_eq!(partial_match(&want, &new), Ok(()));
        assert_eq!(partial_match(&want, &old), Ok(()));
        let e = partial_match(&want, &audit).unwrap_err().to_string();
        assert!(e.contains("matches none of 2 alternatives"), "{e}");
        // Beside other keys, the operator applies to the mapping it sits in.
        let mixed = json!({"spec": {"rules": [{}], "$anyOf": [
            {"rules": [{"validate": {"failureAction": "Enforce"}}]},
            {"validationFailureAction": "Enforce"}
        ]}});
        assert_eq!(partial_match(&mixed, &old), Ok(()));
        assert!(partial_match(&mixed, &audit).is_err());
    }

    #[test]
    fn broken_operators_are_reported_for_the_lint() {
        let p = tree_problems(
            &json!({"a": {"$matches": "("}, "b": [{"$inOrder": []}], "c": {"$regex": "x"}}),
        );
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(
            p[0].en
                .starts_with("a: `$matches`: invalid regular expression"),
            "{p:?}"
        );
        assert!(
            p[1].en
                .starts_with("b[0]: `$inOrder` takes a non-empty list"),
            "{p:?}"
        );
        assert!(p[2].en.contains("c.$regex: unknown operator"), "{p:?}");
        assert!(p[2].ja.contains("演算子ではありません"), "{p:?}");
    }

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let mut t = json!({"a": "b", "c": {"d": "e", "f": "g"}});
        merge_patch(&mut t, &json!({"a": "z", "c": {"f": null}}));
        assert_eq!(t, json!({"a": "z", "c": {"d": "e"}}));
        let orig = json!({"a": "b", "c": {"d": "e"}});
        let patch = json!({"a": "z", "c": {"d": "y", "new": 1}, "x": 2});
        let mut t = orig.clone();
        merge_patch(&mut t, &patch);
        merge_patch(&mut t, &inverse_patch(&orig, &patch));
        assert_eq!(t, orig);
        let mut t = json!({"a": [1, 2]});
        merge_patch(&mut t, &json!({"a": [3], "n": {"x": 1}}));
        assert_eq!(t, json!({"a": [3], "n": {"x": 1}}));
    }

    #[test]
    fn status_can_be_set_aside() {
        let (w, had) = without_status(&json!({"spec": 1, "status": {"ready": true}}));
        assert!(had);
        assert_eq!(w, json!({"spec": 1}));
    }
}

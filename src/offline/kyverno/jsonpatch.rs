//! RFC 6902 JSON Patch as Kyverno applies `patchesJson6902`: negative indices allowed,
//! removing a missing path is a no-op, `add` creates missing parents. It knows nothing
//! about policies or variables.

use serde_json::{Map, Value};

/// One failed operation, named by its position in the patch so a learner can find it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("operation {index} ({op} {path}): {reason}")]
pub struct PatchError {
    pub index: usize,
    pub op: String,
    pub path: String,
    pub reason: Reason,
}

/// Why one operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Reason {
    #[error("missing \"{0}\"")]
    Missing(&'static str),
    #[error("unknown operation {0:?}")]
    UnknownOp(String),
    #[error("cannot move {0} into one of its children")]
    MoveIntoChild(String),
    #[error("\"from\" {0} does not exist")]
    FromMissing(String),
    #[error("test failed: found {found}, expected {expected}")]
    TestFailed { found: String, expected: String },
    #[error("test failed: path does not exist")]
    TestPathMissing,
    #[error("path {0:?} must start with \"/\"")]
    NotAbsolute(String),
    #[error("{0} does not exist")]
    DoesNotExist(String),
    #[error("index {token} out of range at {at}")]
    OutOfRangeAt { token: String, at: String },
    #[error("{0} is not an object or array")]
    NotContainer(String),
    #[error("\"-\" can only be used to append")]
    DashNotAppend,
    #[error("{0:?} is not an array index")]
    NotIndex(String),
    #[error("index {token} out of range (length {len})")]
    OutOfRange { token: String, len: usize },
    #[error("parent of /{0} is not an object or array")]
    ParentNotContainer(String),
    #[error("cannot remove the whole document")]
    RemoveWhole,
}

/// Applies every operation in order; the first failure aborts the whole patch, as an
/// admission webhook would.
pub fn apply(doc: &Value, ops: &[Value]) -> Result<Value, PatchError> {
    let mut out = doc.clone();
    for (index, op) in ops.iter().enumerate() {
        let name = op.get("op").and_then(Value::as_str).unwrap_or("");
        let path = op.get("path").and_then(Value::as_str).unwrap_or("");
        let fail = |reason: Reason| PatchError {
            index,
            op: name.to_string(),
            path: path.to_string(),
            reason,
        };
        if op.get("path").and_then(Value::as_str).is_none() {
            return Err(fail(Reason::Missing("path")));
        }
        let tokens = parse_pointer(path).map_err(fail)?;
        match name {
            "add" => {
                let value = op
                    .get("value")
                    .ok_or_else(|| fail(Reason::Missing("value")))?;
                ensure_parents(&mut out, &tokens).map_err(fail)?;
                add(&mut out, &tokens, value.clone()).map_err(fail)?;
            }
            "remove" => {
                // Kyverno turns on AllowMissingPathOnRemove: a missing target is fine.
                if get(&out, &tokens).is_some() {
                    remove(&mut out, &tokens).map_err(fail)?;
                }
            }
            "replace" => {
                let value = op
                    .get("value")
                    .ok_or_else(|| fail(Reason::Missing("value")))?;
                replace(&mut out, &tokens, value.clone()).map_err(fail)?;
            }
            "move" => {
                let (from, from_tokens) = from_pointer(op).map_err(fail)?;
                if tokens.len() > from_tokens.len() && tokens.starts_with(&from_tokens) {
                    return Err(fail(Reason::MoveIntoChild(from.to_string())));
                }
                let value = remove(&mut out, &from_tokens).map_err(fail)?;
                add(&mut out, &tokens, value).map_err(fail)?;
            }
            "copy" => {
                let (from, from_tokens) = from_pointer(op).map_err(fail)?;
                let value = get(&out, &from_tokens)
                    .cloned()
                    .ok_or_else(|| fail(Reason::FromMissing(from.to_string())))?;
                add(&mut out, &tokens, value).map_err(fail)?;
            }
            "test" => {
                let expected = op.get("value").unwrap_or(&Value::Null);
                match get(&out, &tokens) {
                    Some(actual) if json_equal(actual, expected) => {}
                    Some(actual) => {
                        return Err(fail(Reason::TestFailed {
                            found: actual.to_string(),
                            expected: expected.to_string(),
                        }));
                    }
                    None if expected.is_null() => {}
                    None => return Err(fail(Reason::TestPathMissing)),
                }
            }
            "" => return Err(fail(Reason::Missing("op"))),
            other => return Err(fail(Reason::UnknownOp(other.to_string()))),
        }
    }
    Ok(out)
}

/// Where `ops` leave Kyverno's leniency: the first operation the API server's JSON
/// patch (gopkg.in/evanphx/json-patch.v4 with its defaults, as
/// k8s.io/apiserver/pkg/endpoints/handlers/patch.go applies a `json` patch) refuses
/// while [`apply`] does not — a `remove` of a missing path, an `add` whose parent is
/// missing. `None` when the two agree on every operation.
pub fn lenient_where(doc: &Value, ops: &[Value]) -> Option<usize> {
    let mut cur = doc.clone();
    for (i, op) in ops.iter().enumerate() {
        let tokens = op
            .get("path")
            .and_then(Value::as_str)
            .and_then(|p| parse_pointer(p).ok())?;
        let name = op.get("op").and_then(Value::as_str).unwrap_or("");
        let parent = tokens.split_last().map(|(_, p)| p).unwrap_or(&[]);
        let strict_fails = match name {
            "remove" => get(&cur, &tokens).is_none(),
            "add" => !tokens.is_empty() && get(&cur, parent).is_none(),
            _ => false,
        };
        if strict_fails {
            return Some(i);
        }
        cur = apply(&cur, std::slice::from_ref(op)).ok()?;
    }
    None
}

/// The `from` of a move or copy, as text and as tokens.
fn from_pointer(op: &Value) -> Result<(&str, Vec<String>), Reason> {
    let from = op
        .get("from")
        .and_then(Value::as_str)
        .ok_or(Reason::Missing("from"))?;
    Ok((from, parse_pointer(from)?))
}

/// Splits a JSON pointer into unescaped reference tokens (`~1` → `/`, `~0` → `~`).
pub fn parse_pointer(path: &str) -> Result<Vec<String>, Reason> {
    if path.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = path.strip_prefix('/') else {
        return Err(Reason::NotAbsolute(path.to_string()));
    };
    Ok(rest
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect())
}

fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

fn get<'a>(doc: &'a Value, tokens: &[String]) -> Option<&'a Value> {
    let mut cur = doc;
    for t in tokens {
        cur = match cur {
            Value::Object(m) => m.get(t)?,
            Value::Array(a) => a.get(array_index(t, a.len(), false).ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn get_mut<'a>(doc: &'a mut Value, tokens: &[String]) -> Result<&'a mut Value, Reason> {
    let mut cur = doc;
    for (depth, t) in tokens.iter().enumerate() {
        let here = || format!("/{}", tokens[..=depth].join("/"));
        cur = match cur {
            Value::Object(m) => m.get_mut(t).ok_or_else(|| Reason::DoesNotExist(here()))?,
            Value::Array(a) => {
                let len = a.len();
                let i = array_index(t, len, false)?;
                a.get_mut(i).ok_or_else(|| Reason::OutOfRangeAt {
                    token: t.clone(),
                    at: here(),
                })?
            }
            _ => return Err(Reason::NotContainer(here())),
        };
    }
    Ok(cur)
}

/// Resolves an array token. `-` is only meaningful for insertion; negative indices count
/// from the end (Kyverno enables SupportNegativeIndices). Inserting counts the slot past
/// the end too, so `add` at `-1` appends (evanphx/json-patch v5 `partialArray.add`:
/// `idx += len + 1`).
fn array_index(token: &str, len: usize, inserting: bool) -> Result<usize, Reason> {
    if token == "-" {
        return if inserting {
            Ok(len)
        } else {
            Err(Reason::DashNotAppend)
        };
    }
    let i: i64 = token
        .parse()
        .map_err(|_| Reason::NotIndex(token.to_string()))?;
    let len_i = len as i64;
    let resolved = match (i < 0, inserting) {
        (true, true) => i + len_i + 1,
        (true, false) => i + len_i,
        _ => i,
    };
    let limit = if inserting { len_i } else { len_i - 1 };
    if resolved < 0 || resolved > limit {
        return Err(Reason::OutOfRange {
            token: token.to_string(),
            len,
        });
    }
    Ok(resolved as usize)
}

fn add(doc: &mut Value, tokens: &[String], value: Value) -> Result<(), Reason> {
    let Some((last, parent)) = tokens.split_last() else {
        *doc = value;
        return Ok(());
    };
    match get_mut(doc, parent)? {
        Value::Object(m) => {
            m.insert(last.clone(), value);
            Ok(())
        }
        Value::Array(a) => {
            let i = array_index(last, a.len(), true)?;
            a.insert(i, value);
            Ok(())
        }
        _ => Err(Reason::ParentNotContainer(tokens.join("/"))),
    }
}

fn remove(doc: &mut Value, tokens: &[String]) -> Result<Value, Reason> {
    let Some((last, parent)) = tokens.split_last() else {
        return Err(Reason::RemoveWhole);
    };
    match get_mut(doc, parent)? {
        Value::Object(m) => m
            .shift_remove(last)
            .ok_or_else(|| Reason::DoesNotExist(format!("/{}", tokens.join("/")))),
        Value::Array(a) => {
            let i = array_index(last, a.len(), false)?;
            Ok(a.remove(i))
        }
        _ => Err(Reason::ParentNotContainer(tokens.join("/"))),
    }
}

fn replace(doc: &mut Value, tokens: &[String], value: Value) -> Result<(), Reason> {
    let target = get_mut(doc, tokens)?;
    *target = value;
    Ok(())
}

/// Creates missing intermediate containers for `add` (EnsurePathExistsOnAdd): an array
/// when the next token looks like an index (padded with nulls up to it), else an object.
fn ensure_parents(doc: &mut Value, tokens: &[String]) -> Result<(), Reason> {
    if tokens.len() < 2 {
        return Ok(());
    }
    let mut cur = doc;
    for (depth, t) in tokens[..tokens.len() - 1].iter().enumerate() {
        let next = &tokens[depth + 1];
        let next_index = if next == "-" {
            Some(0)
        } else {
            next.parse::<i64>().ok().map(|i| i.max(0) as usize)
        };
        let fresh = || match next_index {
            Some(n) => Value::Array(vec![Value::Null; n]),
            None => Value::Object(Map::new()),
        };
        cur = match cur {
            Value::Object(m) => {
                let missing = m.get(t).is_none_or(Value::is_null);
                if missing {
                    m.insert(t.clone(), fresh());
                }
                m.get_mut(t).expect("inserted above")
            }
            Value::Array(a) => {
                let Ok(i) = t.parse::<usize>() else {
                    // Negative or `-` tokens resolve against existing items only.
                    return Ok(());
                };
                while a.len() <= i {
                    a.push(Value::Null);
                }
                if a[i].is_null() {
                    a[i] = fresh();
                }
                &mut a[i]
            }
            _ => return Ok(()),
        };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_api_servers_strictness_is_found_where_kyverno_is_lenient() {
        let doc = json!({"a": {"b": 1}, "l": [1, 2]});
        let ops = |v: Value| v.as_array().cloned().unwrap_or_default();
        assert_eq!(
            lenient_where(&doc, &ops(json!([{"op": "remove", "path": "/a/b"}]))),
            None
        );
        assert_eq!(
            lenient_where(
                &doc,
                &ops(json!([{"op": "remove", "path": "/a/b"},
                                             {"op": "remove", "path": "/a/b"}]))
            ),
            Some(1)
        );
        assert_eq!(
            lenient_where(
                &doc,
                &ops(json!([{"op": "add", "path": "/x/y", "value": 1}]))
            ),
            Some(0)
        );
        assert_eq!(
            lenient_where(
                &doc,
                &ops(json!([{"op": "add", "path": "/a/c", "value": 1}]))
            ),
            None
        );
        assert_eq!(
            lenient_where(
                &doc,
                &ops(json!([{"op": "replace", "path": "/l/0", "value": 3}]))
            ),
            None
        );
    }

    #[test]
    fn operations_follow_rfc6902_with_kyverno_options() {
        let doc = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"list": [1, 2, 3]}});
        let cases: Vec<(&str, Value, Result<Value, ()>)> = vec![
            (
                "add a map key",
                json!([{"op": "add", "path": "/metadata/labels/b", "value": "2"}]),
                Ok(
                    json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"list": [1, 2, 3]}}),
                ),
            ),
            (
                "append with -",
                json!([{"op": "add", "path": "/spec/list/-", "value": 4}]),
                Ok(json!({"metadata": {"labels": {"a": "1"}}, "spec": {"list": [1, 2, 3, 4]}})),
            ),
            (
                "insert at index",
                json!([{"op": "add", "path": "/spec/list/0", "value": 0}]),
                Ok(json!({"metadata": {"labels": {"a": "1"}}, "spec": {"list": [0, 1, 2, 3]}})),
            ),
            (
                "escaped key ~1 and ~0",
                json!([{"op": "add", "path": "/metadata/labels/app.kubernetes.io~1na~0me", "value": "x"}]),
                Ok(
                    json!({"metadata": {"labels": {"a": "1", "app.kubernetes.io/na~me": "x"}}, "spec": {"list": [1, 2, 3]}}),
                ),
            ),
            (
                "add creates missing parents",
                json!([{"op": "add", "path": "/metadata/annotations/x", "value": "y"}]),
                Ok(
                    json!({"metadata": {"labels": {"a": "1"}, "annotations": {"x": "y"}}, "spec": {"list": [1, 2, 3]}}),
                ),
            ),
            (
                "add creates a missing array parent",
                json!([{"op": "add", "path": "/spec/tolerations/-", "value": {"key": "k"}}]),
                Ok(
                    json!({"metadata": {"labels": {"a": "1"}}, "spec": {"list": [1, 2, 3], "tolerations": [{"key": "k"}]}}),
                ),
            ),
            (
                "remove missing path is a no-op",
                json!([{"op": "remove", "path": "/metadata/annotations/x"}]),
                Ok(doc.clone()),
            ),
            (
                "add at -1 appends",
                json!([{"op": "add", "path": "/spec/list/-1", "value": 4}]),
                Ok(json!({"metadata": {"labels": {"a": "1"}}, "spec": {"list": [1, 2, 3, 4]}})),
            ),
            (
                "add at -2 inserts before the last",
                json!([{"op": "add", "path": "/spec/list/-2", "value": 4}]),
                Ok(json!({"metadata": {"labels": {"a": "1"}}, "spec": {"list": [1, 2, 4, 3]}})),
            ),
            (
                "remove negative index",
                json!([{"op": "remove", "path": "/spec/list/-1"}]),
                Ok(json!({"metadata": {"labels": {"a": "1"}}, "spec": {"list": [1, 2]}})),
            ),
            (
                "replace existing",
                json!([{"op": "replace", "path": "/metadata/labels/a", "value": "9"}]),
                Ok(json!({"metadata": {"labels": {"a": "9"}}, "spec": {"list": [1, 2, 3]}})),
            ),
            (
                "replace missing fails",
                json!([{"op": "replace", "path": "/metadata/labels/zz", "value": "9"}]),
                Err(()),
            ),
            (
                "move",
                json!([{"op": "move", "from": "/metadata/labels/a", "path": "/metadata/labels/b"}]),
                Ok(json!({"metadata": {"labels": {"b": "1"}}, "spec": {"list": [1, 2, 3]}})),
            ),
            (
                "copy",
                json!([{"op": "copy", "from": "/spec/list/0", "path": "/spec/first"}]),
                Ok(
                    json!({"metadata": {"labels": {"a": "1"}}, "spec": {"list": [1, 2, 3], "first": 1}}),
                ),
            ),
            (
                "test passes then replace",
                json!([{"op": "test", "path": "/metadata/labels/a", "value": "1"},
                       {"op": "replace", "path": "/metadata/labels/a", "value": "2"}]),
                Ok(json!({"metadata": {"labels": {"a": "2"}}, "spec": {"list": [1, 2, 3]}})),
            ),
            (
                "test fails aborts",
                json!([{"op": "test", "path": "/metadata/labels/a", "value": "2"}]),
                Err(()),
            ),
            (
                "index out of range",
                json!([{"op": "add", "path": "/spec/list/7", "value": 1}]),
                Err(()),
            ),
            (
                "unknown op",
                json!([{"op": "merge", "path": "/spec"}]),
                Err(()),
            ),
        ];
        for (name, ops, want) in cases {
            let got = apply(&doc, ops.as_array().unwrap()).map_err(|_| ());
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn error_names_the_failing_operation() {
        let ops = json!([{"op": "add", "path": "/a", "value": 1}, {"op": "replace", "path": "/b", "value": 1}]);
        let err = apply(&json!({}), ops.as_array().unwrap()).unwrap_err();
        assert_eq!(err.index, 1);
        assert_eq!(err.op, "replace");
        assert!(err.to_string().contains("/b"), "{err}");
    }
}

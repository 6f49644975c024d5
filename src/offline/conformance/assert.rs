//! Chainsaw's assertion trees (kyverno-json's, which Chainsaw uses for `assert`, `error`
//! and `expect.check`): a map matches when each of its keys matches (the actual map may
//! hold more), a list when the actual list has the same length and matches element by
//! element, a scalar when it is equal. A key `(expr)` is a JMESPath projection of the
//! actual node, compared with the value below it; a key `~…` iterates the projection; a
//! string value `(expr)` is evaluated with the actual node as `@` and the result compared
//! with the actual value. `$name` in an expression is a binding.

use serde_json::Value;

use super::chainsaw::Bindings;
use crate::offline::kyverno::context::Context;
use crate::offline::kyverno::vars;

/// How an assertion came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judged {
    Match,
    /// Where and why it does not match.
    Mismatch(String),
    /// An expression the replay cannot evaluate (a Chainsaw-only function, say).
    Undecidable(String),
}

/// Judges `expected` (an assertion tree) against `actual`.
pub fn judge(expected: &Value, actual: &Value, bindings: &Bindings) -> Judged {
    let mut path = String::new();
    node(expected, actual, bindings, &mut path, 0)
}

const MAX_DEPTH: usize = 64;

fn node(expected: &Value, actual: &Value, b: &Bindings, path: &mut String, depth: usize) -> Judged {
    if depth > MAX_DEPTH {
        return Judged::Undecidable(format!("{path}: assertion nested too deeply"));
    }
    match expected {
        Value::Object(map) => {
            for (key, want) in map {
                let len = path.len();
                path.push('.');
                path.push_str(key);
                let r = map_entry(key, want, actual, b, path, depth);
                if r != Judged::Match {
                    return r;
                }
                path.truncate(len);
            }
            Judged::Match
        }
        Value::Array(want) => {
            let Some(got) = actual.as_array() else {
                return Judged::Mismatch(format!("{path}: expected a list, got {}", short(actual)));
            };
            if got.len() != want.len() {
                return Judged::Mismatch(format!(
                    "{path}: expected {} elements, got {}",
                    want.len(),
                    got.len()
                ));
            }
            for (i, (w, g)) in want.iter().zip(got).enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                let r = node(w, g, b, path, depth + 1);
                if r != Judged::Match {
                    return r;
                }
                path.truncate(len);
            }
            Judged::Match
        }
        Value::String(s) if is_expression(s) => match evaluate(&s[1..s.len() - 1], actual, b) {
            Ok(v) if scalar_eq(&v, actual) => Judged::Match,
            Ok(v) => Judged::Mismatch(format!(
                "{path}: expected {} ({s}), got {}",
                short(&v),
                short(actual)
            )),
            Err(e) => Judged::Undecidable(format!("{path}: {e}")),
        },
        want => {
            if scalar_eq(want, actual) {
                Judged::Match
            } else {
                Judged::Mismatch(format!(
                    "{path}: expected {}, got {}",
                    short(want),
                    short(actual)
                ))
            }
        }
    }
}

fn map_entry(
    key: &str,
    want: &Value,
    actual: &Value,
    b: &Bindings,
    path: &mut String,
    depth: usize,
) -> Judged {
    // `~name` / `~.(expr)` iterate; `~` with a binding name (`~index.(…)`) too.
    if let Some(rest) = key.strip_prefix('~') {
        let expr = rest.split_once('.').map(|(_, e)| e).unwrap_or(rest);
        let projected = if is_expression(expr) {
            match evaluate(&expr[1..expr.len() - 1], actual, b) {
                Ok(v) => v,
                Err(e) => return Judged::Undecidable(format!("{path}: {e}")),
            }
        } else {
            field(actual, expr)
        };
        let Some(items) = projected.as_array() else {
            return Judged::Mismatch(format!("{path}: expected a list to iterate"));
        };
        for item in items {
            let r = node(want, item, b, path, depth + 1);
            if r != Judged::Match {
                return r;
            }
        }
        return Judged::Match;
    }
    let child = if is_expression(key) {
        match evaluate(&key[1..key.len() - 1], actual, b) {
            Ok(v) => v,
            Err(e) => return Judged::Undecidable(format!("{path}: {e}")),
        }
    } else {
        if !actual.is_object() {
            return Judged::Mismatch(format!("{path}: expected a map, got {}", short(actual)));
        }
        field(actual, key)
    };
    node(want, &child, b, path, depth + 1)
}

fn field(actual: &Value, key: &str) -> Value {
    actual.get(key).cloned().unwrap_or(Value::Null)
}

fn is_expression(s: &str) -> bool {
    s.len() >= 2 && s.starts_with('(') && s.ends_with(')')
}

/// Evaluates `expr` with `actual` as the current node and the bindings as `$name`.
pub fn evaluate(expr: &str, actual: &Value, b: &Bindings) -> Result<Value, String> {
    let expr = with_bindings(&chainsaw_functions(expr), b);
    vars::query(&expr, &Context::from_document(actual.clone())).map_err(|e| e.to_string())
}

/// Copies the string literal opening at `i` through (backslash escapes kept); the index
/// after it.
fn copy_literal(chars: &[char], mut i: usize, out: &mut String) -> usize {
    let quote = chars[i];
    out.push(quote);
    i += 1;
    while i < chars.len() && chars[i] != quote {
        if chars[i] == '\\' && i + 1 < chars.len() {
            out.push(chars[i]);
            i += 1;
        }
        out.push(chars[i]);
        i += 1;
    }
    if i < chars.len() {
        out.push(chars[i]);
        i += 1;
    }
    i
}

/// Chainsaw's own functions written with Kyverno's: `trim_space(x)` (Go's
/// `strings.TrimSpace`) is `trim(x, <whitespace>)`.
fn chainsaw_functions(expr: &str) -> String {
    const NAME: &str = "trim_space(";
    let mut out = String::with_capacity(expr.len());
    let chars: Vec<char> = expr.chars().collect();
    let mut i = 0;
    // Closing parens that end a `trim_space(` call, by depth.
    let mut depth = 0usize;
    let mut closes: Vec<usize> = Vec::new();
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\'' | '`' | '"' => {
                i = copy_literal(&chars, i, &mut out);
                continue;
            }
            '(' => depth += 1,
            ')' => {
                if closes.last() == Some(&depth) {
                    closes.pop();
                    out.push_str(", `\" \\t\\n\\r\\u000b\\u000c\"`");
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        let at_name = chars[i..].iter().take(NAME.len()).copied().eq(NAME.chars())
            && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_'));
        if at_name {
            out.push_str("trim(");
            depth += 1;
            closes.push(depth);
            i += NAME.len();
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

/// `$name` outside string literals replaced by the binding's value as a JSON literal
/// (`null` when unbound, as an unset binding reads in Chainsaw).
fn with_bindings(expr: &str, b: &Bindings) -> String {
    let mut out = String::with_capacity(expr.len());
    let chars: Vec<char> = expr.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\'' | '`' | '"' => i = copy_literal(&chars, i, &mut out),
            '$' => {
                let start = i + 1;
                let mut end = start;
                while end < chars.len() && (chars[end].is_alphanumeric() || chars[end] == '_') {
                    end += 1;
                }
                let name: String = chars[start..end].iter().collect();
                let value = b.get(&name).cloned().unwrap_or(Value::Null);
                let json = serde_json::to_string(&value)
                    .unwrap_or_else(|_| "null".into())
                    .replace('`', "\\`");
                out.push('`');
                out.push_str(&json);
                out.push('`');
                i = end;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// Equality as YAML reads it: numbers by value, `1` and `1.0` alike.
fn scalar_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| scalar_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| scalar_eq(v, w)))
        }
        _ => a == b,
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(120) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn b() -> Bindings {
        let mut m = Bindings::new();
        m.insert("name".into(), json!("p"));
        m.insert("error".into(), json!("denied: 'x'"));
        m
    }

    #[test]
    fn maps_are_subsets_lists_match_in_length() {
        let actual = json!({"a": 1, "b": [1, 2], "c": {"d": "x", "e": "y"}});
        assert_eq!(
            judge(&json!({"c": {"d": "x"}}), &actual, &b()),
            Judged::Match
        );
        assert!(matches!(
            judge(&json!({"b": [1]}), &actual, &b()),
            Judged::Mismatch(_)
        ));
        assert!(matches!(
            judge(&json!({"z": 1}), &actual, &b()),
            Judged::Mismatch(_)
        ));
        assert_eq!(judge(&json!({"a": 1.0}), &actual, &b()), Judged::Match);
    }

    #[test]
    fn projections_and_bindings() {
        let actual = json!({"metadata": {"name": "p"}, "conditions": [{"type": "Ready", "s": 1}, {"type": "X"}]});
        assert_eq!(
            judge(&json!({"metadata": {"name": "($name)"}}), &actual, &b()),
            Judged::Match
        );
        assert_eq!(
            judge(
                &json!({"(conditions[?type == 'Ready'])": [{"s": 1}]}),
                &actual,
                &b()
            ),
            Judged::Match
        );
        assert_eq!(
            judge(&json!({"($error != null)": true}), &actual, &b()),
            Judged::Match
        );
        assert_eq!(
            judge(
                &json!({"(contains($error, 'denied'))": true}),
                &actual,
                &b()
            ),
            Judged::Match
        );
        let mut none = b();
        none.insert("error".into(), Value::Null);
        assert!(matches!(
            judge(&json!({"($error != null)": true}), &actual, &none),
            Judged::Mismatch(_)
        ));
    }
}

#[cfg(test)]
mod chainsaw_function_tests {
    use super::*;

    #[test]
    fn trim_space_is_chainsaws() {
        let mut b = Bindings::new();
        b.insert("stderr".into(), Value::String("  Error (x)\n\n".into()));
        assert_eq!(
            evaluate("trim_space($stderr)", &Value::Null, &b).unwrap(),
            Value::String("Error (x)".into())
        );
        assert_eq!(
            evaluate("contains(trim_space($stderr), 'Error')", &Value::Null, &b).unwrap(),
            Value::Bool(true)
        );
    }
}

//! Validate `pattern` with anchors (`(x)`, `<(x)`, `=(x)`, `^(x)`, `X(x)`, `+(x)`) and
//! value operators (`*`, `?`, `|`, `&`, `!`, `<`, `>`, ranges, quantities). It must not
//! mutate resources.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::Context;
use super::matching::wildcard_match;
use super::quantity::{parse_duration, parse_quantity};
use super::vars;

#[derive(Debug, Clone, thiserror::Error)]
#[error("validation error: {message} at path {path}")]
pub struct PatternError {
    pub path: String,
    pub message: String,
    /// A conditional or global anchor did not hold: the rule is skipped, not failed.
    pub skip: bool,
    /// The pattern's variables could not be substituted (the message is kca's).
    pub substitution: bool,
}

/// Validates `resource` against `pattern` after substituting variables in the pattern.
pub fn validate_pattern(
    resource: &Value,
    pattern: &Value,
    ctx: &Context,
) -> Result<(), PatternError> {
    // A pattern without variables is used as written: `@` and substitution only act
    // inside `{{ … }}`, and substituting a text without one gives it back unchanged.
    if !vars::has_variables(pattern) {
        return check_as_written(resource, pattern);
    }
    let substituted;
    let pattern = {
        let resolved = if vars::any_text(pattern, &|s| s.contains('@')) {
            Cow::Owned(resolve_at(pattern, &mut Vec::new()))
        } else {
            Cow::Borrowed(pattern)
        };
        substituted = vars::substitute(&resolved, ctx).map_err(|e| PatternError {
            path: String::new(),
            message: e.to_string(),
            skip: false,
            substitution: true,
        })?;
        &substituted
    };
    check_as_written(resource, pattern)
}

/// Validates `resource` against a pattern that holds no variables (checked beforehand,
/// for instance once per policy).
/// The walk is Kyverno's (`anchors`), so the path and the message are its.
pub fn check_as_written(resource: &Value, pattern: &Value) -> Result<(), PatternError> {
    match super::anchors::match_pattern(resource, pattern) {
        super::anchors::Verdict::Pass => Ok(()),
        super::anchors::Verdict::Skip(message) => Err(PatternError {
            path: String::new(),
            message,
            skip: true,
            substitution: false,
        }),
        super::anchors::Verdict::Fail { path, message } => Err(PatternError {
            path,
            message,
            skip: false,
            substitution: false,
        }),
    }
}

/// `@` in a pattern's variable is the resource's value at the same place: Kyverno writes
/// it out as `request.object.<path>` (array positions taken from the pattern).
fn resolve_at(pattern: &Value, path: &mut Vec<String>) -> Value {
    match pattern {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    path.push(jmes_key(parse_anchor(k).1));
                    let out = resolve_at(v, path);
                    path.pop();
                    (k.clone(), out)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    path.push(format!("[{i}]"));
                    let out = resolve_at(v, path);
                    path.pop();
                    out
                })
                .collect(),
        ),
        Value::String(s) if s.contains("{{") && s.contains('@') => {
            let mut target = String::from("request.object");
            for seg in path.iter() {
                if !seg.starts_with('[') {
                    target.push('.');
                }
                target.push_str(seg);
            }
            Value::String(replace_at_in_vars(s, &target))
        }
        other => other.clone(),
    }
}

fn jmes_key(k: &str) -> String {
    if k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !k.starts_with(|c: char| c.is_ascii_digit())
    {
        k.to_string()
    } else {
        format!("\"{}\"", k.replace('"', "\\\""))
    }
}

/// Replaces `@` inside `{{ … }}` only.
fn replace_at_in_vars(s: &str, target: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '{' && chars.get(i + 1) == Some(&'{') {
            depth += 1;
            out.push_str("{{");
            i += 2;
            continue;
        }
        if chars[i] == '}' && chars.get(i + 1) == Some(&'}') && depth > 0 {
            depth -= 1;
            out.push_str("}}");
            i += 2;
            continue;
        }
        if chars[i] == '@' && depth > 0 {
            out.push_str(target);
        } else {
            out.push(chars[i]);
        }
        i += 1;
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Anchor {
    None,
    Conditional,
    Global,
    Equality,
    Existence,
    Negation,
    AddIfAbsent,
}

/// Splits an anchored key (`=(name)`) into its anchor and bare key.
pub(crate) fn parse_anchor(key: &str) -> (Anchor, &str) {
    let inner = |prefix: &str| {
        key.strip_prefix(prefix)
            .and_then(|k| k.strip_suffix(')'))
            .filter(|k| !k.is_empty())
    };
    if let Some(k) = inner("(") {
        return (Anchor::Conditional, k);
    }
    if let Some(k) = inner("<(") {
        return (Anchor::Global, k);
    }
    if let Some(k) = inner("=(") {
        return (Anchor::Equality, k);
    }
    if let Some(k) = inner("^(") {
        return (Anchor::Existence, k);
    }
    if let Some(k) = inner("X(") {
        return (Anchor::Negation, k);
    }
    if let Some(k) = inner("+(") {
        return (Anchor::AddIfAbsent, k);
    }
    (Anchor::None, key)
}

/// Wildcard keys (`app.kubernetes.io/*`) stand for every matching resource key.
pub(crate) fn expand_keys<'a>(
    rm: &Map<String, Value>,
    pm: &'a Map<String, Value>,
) -> Vec<(Cow<'a, str>, &'a Value)> {
    let mut out = Vec::with_capacity(pm.len());
    for (k, v) in pm {
        let (anchor, bare) = parse_anchor(k);
        if bare.contains(['*', '?']) {
            let hits: Vec<&String> = rm.keys().filter(|rk| wildcard_match(bare, rk)).collect();
            if !hits.is_empty() {
                for rk in hits {
                    out.push((Cow::Owned(rewrap(anchor, rk)), v));
                }
                continue;
            }
        }
        out.push((Cow::Borrowed(k.as_str()), v));
    }
    out
}

fn rewrap(anchor: Anchor, key: &str) -> String {
    match anchor {
        Anchor::None => key.to_string(),
        Anchor::Conditional => format!("({key})"),
        Anchor::Global => format!("<({key})"),
        Anchor::Equality => format!("=({key})"),
        Anchor::Existence => format!("^({key})"),
        Anchor::Negation => format!("X({key})"),
        Anchor::AddIfAbsent => format!("+({key})"),
    }
}

/// A scalar pattern against a resource value.
pub fn value_matches(value: &Value, pattern: &Value) -> bool {
    match pattern {
        Value::Bool(b) => value.as_bool() == Some(*b),
        Value::Number(n) => match value {
            Value::Number(v) => v.as_f64() == n.as_f64(),
            Value::String(s) => s.parse::<f64>().ok() == n.as_f64(),
            _ => false,
        },
        Value::Null => match value {
            Value::Null => true,
            Value::Number(n) => n.as_f64() == Some(0.0),
            Value::String(s) => s.is_empty(),
            Value::Bool(b) => !b,
            _ => false,
        },
        Value::String(p) => p.split('|').any(|alt| {
            alt.trim()
                .split('&')
                .all(|c| string_pattern(value, c.trim()))
        }),
        _ => false,
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

fn string_pattern(value: &Value, pattern: &str) -> bool {
    // `*` and `?*` ask for presence; a map or list is present.
    if (pattern == "*" || pattern == "?*") && (value.is_object() || value.is_array()) {
        return true;
    }
    if let Some((lo, hi, inside)) = range(pattern) {
        let Some(v) = numeric(value) else {
            return false;
        };
        let within = v >= lo && v <= hi;
        return within == inside;
    }
    let (op, rest) = if let Some(r) = pattern.strip_prefix(">=") {
        (Op::Ge, r)
    } else if let Some(r) = pattern.strip_prefix("<=") {
        (Op::Le, r)
    } else if let Some(r) = pattern.strip_prefix('>') {
        (Op::Gt, r)
    } else if let Some(r) = pattern.strip_prefix('<') {
        (Op::Lt, r)
    } else if let Some(r) = pattern.strip_prefix('!') {
        (Op::Ne, r)
    } else {
        (Op::Eq, pattern)
    };
    let rest = rest.trim();
    let starts_numeric = rest.starts_with(|c: char| c.is_ascii_digit() || c == '.');
    if starts_numeric {
        if let Some(pq) = parse_quantity(rest) {
            let Some(vq) = value_text(value).and_then(|t| parse_quantity(&t)) else {
                return false;
            };
            return cmp(op, vq, pq);
        }
        if let Some(pd) = parse_duration(rest) {
            let Some(vd) = value_text(value).and_then(|t| parse_duration(&t)) else {
                return false;
            };
            return cmp(op, vd, pd);
        }
    }
    match op {
        Op::Eq | Op::Ne => {
            let Some(text) = value_text(value) else {
                return false;
            };
            let hit = wildcard_match(rest, &text);
            if op == Op::Ne { !hit } else { hit }
        }
        _ => false,
    }
}

fn cmp(op: Op, v: f64, p: f64) -> bool {
    match op {
        Op::Eq => v == p,
        Op::Ne => v != p,
        Op::Gt => v > p,
        Op::Ge => v >= p,
        Op::Lt => v < p,
        Op::Le => v <= p,
    }
}

fn value_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(vars::to_text(&vars::num(n.as_f64()?))),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn numeric(v: &Value) -> Option<f64> {
    value_text(v).and_then(|t| parse_quantity(&t))
}

/// `1-5` (inside, inclusive) or `1!-5` (outside), with quantities.
fn range(p: &str) -> Option<(f64, f64, bool)> {
    let (lo, hi, inside) = if let Some((a, b)) = p.split_once("!-") {
        (a, b, false)
    } else {
        let (a, b) = p.split_once('-')?;
        (a, b, true)
    };
    if lo.is_empty() || !lo.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    Some((parse_quantity(lo)?, parse_quantity(hi)?, inside))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offline::kyverno::Request;
    use serde_json::json;

    fn check(resource: Value, pattern: Value) -> Result<(), PatternError> {
        let ctx = Context::from_request(&Request::default());
        validate_pattern(&resource, &pattern, &ctx)
    }

    #[test]
    fn value_operators() {
        let cases = [
            (json!("nginx:1.2"), json!("*:*"), true),
            (json!("nginx:latest"), json!("!*:latest"), true == false),
            (json!(5), json!(">3"), true),
            (json!("512Mi"), json!("<=1Gi"), true),
            (json!("2Gi"), json!("<=1Gi"), false),
            (json!(3), json!("1-5"), true),
            (json!(7), json!("1!-5"), true),
            (json!("a"), json!("a | b"), true),
            (json!(80), json!(">0 & <100"), true),
            (json!(null), json!("*"), false),
            (json!(""), json!(""), true),
            (json!(null), json!(null), true),
            (json!(false), json!(false), true),
            (json!("x"), json!("?*"), true),
            (json!(""), json!("?*"), false),
        ];
        for (v, p, want) in cases {
            assert_eq!(value_matches(&v, &p), want, "{v} vs {p}");
        }
    }

    #[test]
    fn at_is_the_resource_value_at_the_same_place() {
        let ctx = Context::from_request(&Request {
            object: json!({"metadata": {"name": "web", "labels": {"app": "web"}}}),
            ..Request::default()
        });
        let obj = ctx.document()["request"]["object"].clone();
        let p = json!({"metadata": {"labels": {"app": "{{ request.object.metadata.name }}"}}});
        assert!(validate_pattern(&obj, &p, &ctx).is_ok());
        let p = json!({"metadata": {"=(labels)": {"app": "{{@}}"}}});
        assert!(validate_pattern(&obj, &p, &ctx).is_ok());
        let p = json!({"metadata": {"name": "{{ to_upper(@) }}"}});
        assert!(validate_pattern(&obj, &p, &ctx).is_err());
    }

    #[test]
    fn anchors() {
        let pod = json!({"spec": {"containers": [
            {"name": "a", "image": "nginx:latest", "imagePullPolicy": "Always"},
            {"name": "b", "image": "nginx:1.2"}
        ]}});
        // Conditional: latest images must pull Always.
        let p =
            json!({"spec": {"containers": [{"(image)": "*:latest", "imagePullPolicy": "Always"}]}});
        assert!(check(pod.clone(), p).is_ok());
        // Conditional that never holds: skip.
        let p = json!({"spec": {"containers": [{"(image)": "*:v9", "imagePullPolicy": "Never"}]}});
        assert!(check(pod.clone(), p).unwrap_err().skip);
        // Equality anchor on an absent key passes.
        let p = json!({"spec": {"=(hostNetwork)": false}});
        assert!(check(pod.clone(), p).is_ok());
        // Negation anchor.
        let p = json!({"spec": {"X(hostPID)": "null"}});
        assert!(check(pod.clone(), p).is_ok());
        let p = json!({"spec": {"X(containers)": "null"}});
        assert!(!check(pod.clone(), p).unwrap_err().skip);
        // Existence anchor.
        let p = json!({"spec": {"^(containers)": [{"image": "nginx:1.2"}]}});
        assert!(check(pod.clone(), p).is_ok());
        let p = json!({"spec": {"^(containers)": [{"image": "redis"}]}});
        assert!(check(pod.clone(), p).is_err());
        // Global anchor that does not hold skips the rule; an absent key holds
        // (pkg/engine/anchor/handlers.go globalAnchorHandler).
        let p = json!({"spec": {"<(containers)": [{"name": "zzz"}], "x": 1}});
        assert!(check(pod.clone(), p).unwrap_err().skip);
        let p = json!({"spec": {"<(hostNetwork)": true, "containers": [{"name": "zzz"}]}});
        assert!(!check(pod.clone(), p).unwrap_err().skip);
        // Plain mismatch fails with a path.
        let p = json!({"spec": {"containers": [{"image": "!*:latest"}]}});
        let e = check(pod, p).unwrap_err();
        assert!(!e.skip);
        assert_eq!(e.path, "/spec/containers/0/image/");
    }
}

//! Preconditions and deny conditions (`any`/`all` and the legacy list form) with Kyverno's
//! operators. It must not do matching or pattern validation.

use serde_json::Value;

use super::matching::wildcard_match;
use super::quantity::{parse_duration, parse_quantity};
use super::vars::{self, to_text};
use super::{Context, VarError};

/// Deny-style evaluation: an unresolvable variable is an error.
pub fn evaluate(conditions: &Value, ctx: &Context) -> Result<bool, VarError> {
    evaluate_with(conditions, ctx, false)
}

/// Precondition-style evaluation: an unresolvable variable reads as an empty string.
pub fn evaluate_preconditions(conditions: &Value, ctx: &Context) -> Result<bool, VarError> {
    evaluate_with(conditions, ctx, true)
}

fn evaluate_with(conditions: &Value, ctx: &Context, lenient: bool) -> Result<bool, VarError> {
    match conditions {
        Value::Null => Ok(true),
        Value::Array(list) => {
            for c in list {
                if !one(c, ctx, lenient)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        Value::Object(m) => {
            if let Some(any) = m.get("any").and_then(Value::as_array)
                && !any.is_empty()
            {
                let mut hit = false;
                for c in any {
                    if one(c, ctx, lenient)? {
                        hit = true;
                        break;
                    }
                }
                if !hit {
                    return Ok(false);
                }
            }
            if let Some(all) = m.get("all").and_then(Value::as_array) {
                for c in all {
                    if !one(c, ctx, lenient)? {
                        return Ok(false);
                    }
                }
            }
            Ok(true)
        }
        _ => Ok(true),
    }
}

fn one(cond: &Value, ctx: &Context, lenient: bool) -> Result<bool, VarError> {
    let sub = |v: &Value| {
        if lenient {
            vars::substitute_lenient(v, ctx)
        } else {
            vars::substitute(v, ctx)
        }
    };
    let side = |side: &'static str| {
        move |e: VarError| match e {
            e @ VarError::Resolving { .. } => VarError::InCondition {
                side,
                inner: Box::new(e),
            },
            other => other,
        }
    };
    let key = sub(cond.get("key").unwrap_or(&Value::Null)).map_err(side("key"))?;
    let value = sub(cond.get("value").unwrap_or(&Value::Null)).map_err(side("value"))?;
    let op = cond
        .get("operator")
        .and_then(Value::as_str)
        .unwrap_or("Equals");
    Ok(compare(op, &key, &value))
}

/// Applies one condition operator to already-substituted key and value.
pub fn compare(op: &str, key: &Value, value: &Value) -> bool {
    match op {
        "Equals" | "Equal" => equals(key, value),
        "NotEquals" | "NotEqual" => !equals(key, value),
        "In" | "NotIn" | "AnyIn" | "AllIn" | "AnyNotIn" | "AllNotIn" if value.is_null() => false,
        "In" => legacy_in(key, value),
        "NotIn" => !legacy_in(key, value),
        "AnyIn" => items(key).iter().any(|k| in_set(k, value)),
        "AllIn" => items(key).iter().all(|k| in_set(k, value)),
        "AnyNotIn" => items(key).iter().any(|k| !in_set(k, value)),
        "AllNotIn" => items(key).iter().all(|k| !in_set(k, value)),
        "GreaterThan" => ordered(key, value).is_some_and(|o| o.is_gt()),
        "GreaterThanOrEquals" => ordered(key, value).is_some_and(|o| o.is_ge()),
        "LessThan" => ordered(key, value).is_some_and(|o| o.is_lt()),
        "LessThanOrEquals" => ordered(key, value).is_some_and(|o| o.is_le()),
        "DurationGreaterThan" => durations(key, value).is_some_and(|(a, b)| a > b),
        "DurationGreaterThanOrEquals" => durations(key, value).is_some_and(|(a, b)| a >= b),
        "DurationLessThan" => durations(key, value).is_some_and(|(a, b)| a < b),
        "DurationLessThanOrEquals" => durations(key, value).is_some_and(|(a, b)| a <= b),
        _ => false,
    }
}

fn equals(key: &Value, value: &Value) -> bool {
    match (key, value) {
        (Value::String(k), _) => {
            if let (Some(a), Some(b)) = (parse_duration(k), as_duration(value)) {
                return a == b;
            }
            if let (Some(a), Some(b)) = (quantity_of(k), value.as_str().and_then(quantity_of)) {
                return a == b;
            }
            match value {
                Value::String(v) => wildcard_match(v, k),
                Value::Number(n) => k.parse::<f64>().ok() == n.as_f64(),
                Value::Bool(b) => k == &b.to_string(),
                _ => false,
            }
        }
        (Value::Number(k), Value::Number(v)) => k.as_f64() == v.as_f64(),
        (Value::Number(k), Value::String(v)) => {
            if let Ok(f) = v.parse::<f64>() {
                return k.as_f64() == Some(f);
            }
            if let (Some(a), Some(b)) = (k.as_f64(), quantity_of(v)) {
                return a == b;
            }
            false
        }
        (Value::Bool(k), Value::String(v)) => v == &k.to_string(),
        // Kyverno compares nothing to nothing as unequal: a null key never equals.
        (Value::Null, _) => false,
        (Value::Object(_), Value::String(v)) | (Value::Array(_), Value::String(v)) => {
            serde_json::from_str::<Value>(v).is_ok_and(|parsed| &parsed == key)
        }
        _ => key == value,
    }
}

fn quantity_of(s: &str) -> Option<f64> {
    // A bare number string is compared as text by Kyverno unless both sides parse.
    parse_quantity(s)
}

fn as_duration(v: &Value) -> Option<f64> {
    match v {
        Value::String(s) => parse_duration(s),
        _ => None,
    }
}

/// The key as a list of items: arrays as is, a JSON-array string parsed, a scalar alone.
fn items(v: &Value) -> Vec<Value> {
    match v {
        Value::Array(a) => a.clone(),
        Value::String(s) if s.trim_start().starts_with('[') => serde_json::from_str::<Value>(s)
            .ok()
            .and_then(|p| p.as_array().cloned())
            .unwrap_or_else(|| vec![v.clone()]),
        other => vec![other.clone()],
    }
}

/// Whether one key item is in the value set; value strings are wildcard patterns.
fn in_set(k: &Value, set: &Value) -> bool {
    let members = items(set);
    members.iter().any(|m| match (m, k) {
        (Value::String(p), k) if in_range(p, k).is_some() => in_range(p, k) == Some(true),
        (Value::String(p), Value::String(s)) => wildcard_match(p, s) || wildcard_match(s, p),
        (Value::String(p), other) => wildcard_match(p, &to_text(other)),
        (m, Value::String(s)) => to_text(m) == *s,
        (m, k) => m == k || (m.as_f64().is_some() && m.as_f64() == k.as_f64()),
    })
}

/// `5000-6000` (or `5000!-6000`) in an In-family value is a numeric range.
fn in_range(p: &str, k: &Value) -> Option<bool> {
    let (lo, hi, inside) = match p.split_once("!-") {
        Some((a, b)) => (a, b, false),
        None => {
            let (a, b) = p.split_once('-')?;
            (a, b, true)
        }
    };
    let lo: f64 = lo.trim().parse().ok()?;
    let hi: f64 = hi.trim().parse().ok()?;
    let v = match k {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.parse().ok()?,
        _ => return Some(false),
    };
    Some((v >= lo && v <= hi) == inside)
}

fn legacy_in(key: &Value, value: &Value) -> bool {
    match key {
        Value::Array(ks) => ks.iter().all(|k| in_set(k, value)),
        other => match value {
            Value::String(s) if !s.trim_start().starts_with('[') => {
                // Legacy `In` with a string value is a substring-style wildcard check.
                wildcard_match(s, &to_text(other))
            }
            _ => in_set(other, value),
        },
    }
}

fn ordered(key: &Value, value: &Value) -> Option<std::cmp::Ordering> {
    let num = |v: &Value| -> Option<f64> {
        match v {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.parse::<f64>().ok(),
            _ => None,
        }
    };
    if let (Some(a), Some(b)) = (num(key), num(value)) {
        return a.partial_cmp(&b);
    }
    let (ks, vs) = (key.as_str(), value.as_str());
    if let (Some(a), Some(b)) = (
        ks.and_then(parse_duration)
            .or_else(|| num(key).filter(|_| vs.and_then(parse_duration).is_some())),
        vs.and_then(parse_duration)
            .or_else(|| num(value).filter(|_| ks.and_then(parse_duration).is_some())),
    ) {
        return a.partial_cmp(&b);
    }
    let q = |v: &Value| match v {
        Value::String(s) => parse_quantity(s),
        Value::Number(n) => n.as_f64(),
        _ => None,
    };
    if let (Some(a), Some(b)) = (q(key), q(value)) {
        return a.partial_cmp(&b);
    }
    if let (Some(a), Some(b)) = (ks.and_then(semver), vs.and_then(semver)) {
        return Some(a.cmp(&b));
    }
    None
}

fn semver(s: &str) -> Option<(u64, u64, u64)> {
    let s = s.trim_start_matches('v');
    let mut it = s.split('.');
    let a = it.next()?.parse().ok()?;
    let b = it.next()?.parse().ok()?;
    let c = it
        .next()
        .unwrap_or("0")
        .split(['-', '+'])
        .next()?
        .parse()
        .ok()?;
    Some((a, b, c))
}

fn durations(key: &Value, value: &Value) -> Option<(f64, f64)> {
    let d = |v: &Value| match v {
        Value::String(s) => parse_duration(s),
        Value::Number(n) => n.as_f64(),
        _ => None,
    };
    Some((d(key)?, d(value)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn operators_table() {
        let cases = [
            ("Equals", json!("nginx"), json!("ngi*"), true),
            ("Equals", json!(3), json!("3"), true),
            ("Equals", json!("1Gi"), json!("1024Mi"), true),
            ("NotEquals", json!("a"), json!("b"), true),
            ("AnyIn", json!(["a", "z"]), json!(["a", "b"]), true),
            ("AllIn", json!(["a", "z"]), json!(["a", "b"]), false),
            ("AllIn", json!(["a1", "b"]), json!(["a*", "b"]), true),
            ("AnyNotIn", json!(["a", "z"]), json!(["a", "b"]), true),
            ("AllNotIn", json!(["x", "z"]), json!(["a", "b"]), true),
            ("In", json!("a"), json!(["a", "b"]), true),
            ("NotIn", json!("c"), json!(["a", "b"]), true),
            ("GreaterThan", json!("2Gi"), json!("1Gi"), true),
            ("GreaterThan", json!(5), json!("3"), true),
            ("LessThanOrEquals", json!("1h"), json!("2h"), true),
            ("DurationGreaterThan", json!("2h"), json!("90m"), true),
            ("GreaterThan", json!("1.10.0"), json!("1.9.0"), true),
            ("AnyNotIn", json!([5000, 7000]), json!("5000-6000"), true),
            (
                "AnyNotIn",
                json!("A=*"),
                json!(["A=ATest", "B=BTest"]),
                false,
            ),
            ("AllIn", json!([5000, 5500]), json!("5000-6000"), true),
        ];
        for (op, k, v, want) in cases {
            assert_eq!(compare(op, &k, &v), want, "{op} {k} {v}");
        }
    }
}

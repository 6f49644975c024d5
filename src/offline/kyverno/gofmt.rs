//! Go's `fmt` verbs `%v` and `%T` over decoded JSON, for messages that must read as
//! Kyverno's. Resources come decoded as Kubernetes decodes them (integers are `int64`,
//! the rest `float64`); policy documents as `encoding/json` decodes them (every number is
//! `float64`). It must not be used for kca's own wording.

use serde_json::{Number, Value};

/// How the numbers of a value were decoded on the Go side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Numbers {
    /// `k8s.io/apimachinery` unstructured: integers `int64`, others `float64`.
    Resource,
    /// `encoding/json` into `interface{}`: every number `float64`.
    Float,
}

/// `fmt.Sprintf("%v", v)`: strings bare, maps as `map[k:v …]` with sorted keys, slices as
/// `[a b]`, nil as `<nil>`.
pub fn v(value: &Value, numbers: Numbers) -> String {
    let mut out = String::new();
    write_v(value, numbers, &mut out);
    out
}

fn write_v(value: &Value, numbers: Numbers, out: &mut String) {
    match value {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::String(s) => out.push_str(s),
        Value::Number(n) => out.push_str(&number(n, numbers)),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_v(item, numbers, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push_str("map[");
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                write_v(&m[k], numbers, out);
            }
            out.push(']');
        }
    }
}

/// `fmt.Sprintf("%T", v)`.
pub fn t(value: &Value, numbers: Numbers) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::String(_) => "string",
        Value::Number(n) if numbers == Numbers::Resource && (n.is_i64() || n.is_u64()) => "int64",
        Value::Number(_) => "float64",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

fn number(n: &Number, numbers: Numbers) -> String {
    if numbers == Numbers::Resource && (n.is_i64() || n.is_u64()) {
        return n.to_string();
    }
    float(n.as_f64().unwrap_or(0.0))
}

/// A float64 as `%v` prints it: `strconv.FormatFloat(f, 'g', -1, 64)` — the shortest
/// digits that round-trip, in exponent form when the exponent is below -4 or at least 6
/// (strconv's `%g` with the shortest precision: `eprec = 6`).
pub fn float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // Rust's `{:e}` gives the shortest round-tripping digits: `1.5e6`, `-2e-7`.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    let (neg, digits) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = digits.chars().filter(|c| *c != '.').collect();
    let point = exp + 1; // digits before the decimal point
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if point <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-point) as usize));
        out.push_str(&digits);
    } else if point as usize >= digits.len() {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', point as usize - digits.len()));
    } else {
        out.push_str(&digits[..point as usize]);
        out.push('.');
        out.push_str(&digits[point as usize..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_print_as_go_does() {
        for (f, want) in [
            (2.0, "2"),
            (0.5, "0.5"),
            (1e6, "1e+06"),
            (1234567.0, "1.234567e+06"),
            (123456.0, "123456"),
            (1e20, "1e+20"),
            (1e21, "1e+21"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-1.25, "-1.25"),
        ] {
            assert_eq!(float(f), want, "{f}");
        }
    }

    #[test]
    fn values_print_as_go_does() {
        let r = json!({"b": [1, "x", null], "a": true});
        assert_eq!(v(&r, Numbers::Resource), "map[a:true b:[1 x <nil>]]");
        assert_eq!(v(&json!(3), Numbers::Float), "3");
        assert_eq!(t(&json!(3), Numbers::Resource), "int64");
        assert_eq!(t(&json!(3), Numbers::Float), "float64");
        assert_eq!(t(&json!(null), Numbers::Resource), "<nil>");
    }
}

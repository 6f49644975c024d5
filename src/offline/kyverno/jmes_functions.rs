//! Kyverno's JMESPath functions (pkg/engine/jmespath/functions.go at v1.19.0): one
//! `register` table, one entry each, beside the helpers it calls. Every value a function
//! returns is charged to the query's budget.
use std::collections::BTreeMap;
use std::sync::OnceLock;

use jmespath::functions::Function;
use jmespath::{Context as JpContext, ErrorReason, JmespathError, Rcvar, Runtime, Variable};
use serde_json::{Map, Value, json};

use super::budget;
use super::jmes::{num, to_value};
use super::matching::wildcard_match;
use super::quantity::{format_duration, format_quantity, parse_duration, parse_quantity};
use super::vars::to_text;

fn var(v: Value) -> Rcvar {
    Rcvar::new(Variable::try_from(v).unwrap_or(Variable::Null))
}

fn fail(ctx: &JpContext<'_>, msg: impl Into<String>) -> JmespathError {
    JmespathError::new(ctx.expression, ctx.offset, ErrorReason::Parse(msg.into()))
}

type Args<'a> = &'a [Rcvar];

fn arg_str(args: Args, i: usize, ctx: &JpContext<'_>) -> Result<String, JmespathError> {
    match args.get(i).map(|a| &**a) {
        Some(Variable::String(s)) => Ok(s.clone()),
        _ => Err(fail(ctx, format!("argument {} must be a string", i + 1))),
    }
}

fn arg_val(args: Args, i: usize, ctx: &JpContext<'_>) -> Result<Value, JmespathError> {
    if let Some(a) = args.get(i)
        && budget::size(a, budget::MAX_PRODUCED + 1) > budget::MAX_PRODUCED
    {
        return Err(fail(ctx, "an argument is larger than kca's budget"));
    }
    args.get(i)
        .map(|a| to_value(a))
        .ok_or_else(|| fail(ctx, format!("missing argument {}", i + 1)))
}

pub(super) fn runtime() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        let mut rt = Runtime::new();
        rt.register_builtin_functions();
        register(&mut rt);
        rt
    })
}

/// Pins a function body's closure type.
fn typed<F>(f: F) -> F
where
    F: Fn(Args, &mut JpContext<'_>) -> Result<Rcvar, JmespathError>,
{
    f
}

/// Registers a Kyverno function; what it returns is charged to the query's budget.
macro_rules! func {
    ($rt:expr, $name:expr, $body:expr) => {{
        let body = typed($body);
        let charged = move |a: Args, c: &mut JpContext<'_>| -> Result<Rcvar, JmespathError> {
            let out = body(a, c)?;
            budget::charge(&out).map_err(|e| fail(c, e.to_string()))?;
            Ok(out)
        };
        $rt.register_function($name, Box::new(charged) as Box<dyn Function>);
    }};
}

fn register(rt: &mut Runtime) {
    func!(rt, "to_upper", |a: Args, c: &mut JpContext<'_>| Ok(var(
        json!(arg_str(a, 0, c)?.to_uppercase())
    )));
    func!(rt, "to_lower", |a: Args, c: &mut JpContext<'_>| Ok(var(
        json!(arg_str(a, 0, c)?.to_lowercase())
    )));
    func!(rt, "compare", |a: Args, c: &mut JpContext<'_>| {
        let (x, y) = (arg_str(a, 0, c)?, arg_str(a, 1, c)?);
        Ok(var(json!(x.cmp(&y) as i32)))
    });
    func!(rt, "equal_fold", |a: Args, c: &mut JpContext<'_>| {
        let (x, y) = (arg_str(a, 0, c)?, arg_str(a, 1, c)?);
        Ok(var(json!(x.to_lowercase() == y.to_lowercase())))
    });
    func!(rt, "replace", |a: Args, c: &mut JpContext<'_>| {
        let (s, old, new) = (arg_str(a, 0, c)?, arg_str(a, 1, c)?, arg_str(a, 2, c)?);
        let n = a.get(3).and_then(|v| v.as_number()).unwrap_or(-1.0);
        let out = if n < 0.0 {
            s.replace(&old, &new)
        } else {
            s.replacen(&old, &new, n as usize)
        };
        Ok(var(json!(out)))
    });
    func!(rt, "replace_all", |a: Args, c: &mut JpContext<'_>| {
        let (s, old, new) = (arg_str(a, 0, c)?, arg_str(a, 1, c)?, arg_str(a, 2, c)?);
        Ok(var(json!(s.replace(&old, &new))))
    });
    func!(rt, "trim", |a: Args, c: &mut JpContext<'_>| {
        let (s, cut) = (arg_str(a, 0, c)?, arg_str(a, 1, c)?);
        Ok(var(json!(s.trim_matches(|ch| cut.contains(ch)))))
    });
    func!(rt, "trim_prefix", |a: Args, c: &mut JpContext<'_>| {
        let (s, p) = (arg_str(a, 0, c)?, arg_str(a, 1, c)?);
        Ok(var(json!(s.strip_prefix(p.as_str()).unwrap_or(&s))))
    });
    func!(rt, "split", |a: Args, c: &mut JpContext<'_>| {
        let (s, sep) = (arg_str(a, 0, c)?, arg_str(a, 1, c)?);
        let parts: Vec<Value> = if sep.is_empty() {
            s.chars().map(|ch| json!(ch.to_string())).collect()
        } else {
            s.split(sep.as_str()).map(|p| json!(p)).collect()
        };
        Ok(var(Value::Array(parts)))
    });
    func!(rt, "regex_match", |a: Args, c: &mut JpContext<'_>| {
        let re = arg_str(a, 0, c)?;
        let src = text_or_number(&arg_val(a, 1, c)?);
        let re = regex::Regex::new(&re).map_err(|e| fail(c, e.to_string()))?;
        Ok(var(json!(re.is_match(&src))))
    });
    func!(rt, "regex_replace_all", |a: Args, c: &mut JpContext<'_>| {
        let re = arg_str(a, 0, c)?;
        let src = text_or_number(&arg_val(a, 1, c)?);
        let rep = text_or_number(&arg_val(a, 2, c)?);
        let re = regex::Regex::new(&re).map_err(|e| fail(c, e.to_string()))?;
        Ok(var(json!(re.replace_all(&src, rep.as_str()).into_owned())))
    });
    func!(
        rt,
        "regex_replace_all_literal",
        |a: Args, c: &mut JpContext<'_>| {
            let re = arg_str(a, 0, c)?;
            let src = text_or_number(&arg_val(a, 1, c)?);
            let rep = text_or_number(&arg_val(a, 2, c)?);
            let re = regex::Regex::new(&re).map_err(|e| fail(c, e.to_string()))?;
            Ok(var(json!(
                re.replace_all(&src, regex::NoExpand(&rep)).into_owned()
            )))
        }
    );
    func!(rt, "pattern_match", |a: Args, c: &mut JpContext<'_>| {
        let p = arg_str(a, 0, c)?;
        let s = text_or_number(&arg_val(a, 1, c)?);
        Ok(var(json!(wildcard_match(&p, &s))))
    });
    func!(rt, "label_match", |a: Args, c: &mut JpContext<'_>| {
        let sel = arg_val(a, 0, c)?;
        let labels = arg_val(a, 1, c)?;
        let ok = sel
            .as_object()
            .is_some_and(|m| m.iter().all(|(k, v)| labels.get(k) == Some(v)));
        Ok(var(json!(ok)))
    });
    func!(rt, "to_boolean", |a: Args, c: &mut JpContext<'_>| {
        match arg_str(a, 0, c)?.to_lowercase().as_str() {
            "true" => Ok(var(json!(true))),
            "false" => Ok(var(json!(false))),
            other => Err(fail(c, format!("cannot convert {other} to boolean"))),
        }
    });
    func!(rt, "truncate", |a: Args, c: &mut JpContext<'_>| {
        let s = arg_str(a, 0, c)?;
        let n = a.get(1).and_then(|v| v.as_number()).unwrap_or(0.0).max(0.0) as usize;
        Ok(var(json!(s.chars().take(n).collect::<String>())))
    });
    func!(rt, "base64_encode", |a: Args, c: &mut JpContext<'_>| Ok(
        var(json!(base64_encode(arg_str(a, 0, c)?.as_bytes())))
    ));
    func!(rt, "base64_decode", |a: Args, c: &mut JpContext<'_>| {
        let bytes = base64_decode(&arg_str(a, 0, c)?).ok_or_else(|| fail(c, "invalid base64"))?;
        Ok(var(json!(String::from_utf8_lossy(&bytes))))
    });
    func!(rt, "parse_json", |a: Args, c: &mut JpContext<'_>| {
        let v: Value =
            serde_json::from_str(&arg_str(a, 0, c)?).map_err(|e| fail(c, e.to_string()))?;
        Ok(var(v))
    });
    func!(rt, "parse_yaml", |a: Args, c: &mut JpContext<'_>| {
        let docs = crate::yaml::parse_json_stream(&arg_str(a, 0, c)?)
            .map_err(|e| fail(c, e.to_string()))?;
        Ok(var(docs.into_iter().next().unwrap_or(Value::Null)))
    });
    func!(
        rt,
        "path_canonicalize",
        |a: Args, c: &mut JpContext<'_>| Ok(var(json!(canonical_path(&arg_str(a, 0, c)?))))
    );
    func!(rt, "items", |a: Args, c: &mut JpContext<'_>| {
        let src = arg_val(a, 0, c)?;
        let kn = arg_str(a, 1, c)?;
        let vn = arg_str(a, 2, c)?;
        let out: Vec<Value> = match src {
            Value::Object(m) => {
                let sorted: BTreeMap<_, _> = m.into_iter().collect();
                sorted
                    .into_iter()
                    .map(|(k, v)| json!({ kn.clone(): k, vn.clone(): v }))
                    .collect()
            }
            Value::Array(items) => items
                .into_iter()
                .enumerate()
                .map(|(i, v)| json!({ kn.clone(): i, vn.clone(): v }))
                .collect(),
            _ => return Err(fail(c, "items expects an object or array")),
        };
        Ok(var(Value::Array(out)))
    });
    func!(rt, "object_from_lists", |a: Args, c: &mut JpContext<'_>| {
        let keys = arg_val(a, 0, c)?;
        let vals = arg_val(a, 1, c)?;
        let mut out = Map::new();
        for (i, k) in keys.as_array().into_iter().flatten().enumerate() {
            let key = to_text(k);
            out.insert(key, vals.get(i).cloned().unwrap_or(Value::Null));
        }
        Ok(var(Value::Object(out)))
    });
    func!(rt, "lookup", |a: Args, c: &mut JpContext<'_>| {
        let src = arg_val(a, 0, c)?;
        let key = arg_val(a, 1, c)?;
        let v = match (&src, &key) {
            (Value::Object(m), Value::String(k)) => m.get(k).cloned(),
            (Value::Array(v), Value::Number(n)) => {
                n.as_u64().and_then(|i| v.get(i as usize).cloned())
            }
            _ => return Err(fail(c, "lookup expects object+string or array+index")),
        };
        Ok(var(v.unwrap_or(Value::Null)))
    });
    func!(rt, "add", |a: Args, c: &mut JpContext<'_>| arith(
        a,
        c,
        Op::Add
    ));
    func!(rt, "subtract", |a: Args, c: &mut JpContext<'_>| arith(
        a,
        c,
        Op::Sub
    ));
    func!(rt, "multiply", |a: Args, c: &mut JpContext<'_>| arith(
        a,
        c,
        Op::Mul
    ));
    func!(rt, "divide", |a: Args, c: &mut JpContext<'_>| arith(
        a,
        c,
        Op::Div
    ));
    func!(rt, "modulo", |a: Args, c: &mut JpContext<'_>| arith(
        a,
        c,
        Op::Mod
    ));
    func!(rt, "round", |a: Args, c: &mut JpContext<'_>| {
        let n = a
            .first()
            .and_then(|v| v.as_number())
            .ok_or_else(|| fail(c, "round expects a number"))?;
        let d = a.get(1).and_then(|v| v.as_number()).unwrap_or(0.0);
        let p = 10f64.powi(d as i32);
        Ok(var(num((n * p).round() / p)))
    });
    func!(rt, "sum", |a: Args, c: &mut JpContext<'_>| {
        let items = arg_val(a, 0, c)?;
        let items = items.as_array().cloned().unwrap_or_default();
        let mut acc: Option<Value> = None;
        for it in items {
            acc = Some(match acc {
                None => it,
                Some(prev) => {
                    arith_values(&prev, &it, Op::Add).map_err(|e| fail(c, e.to_string()))?
                }
            });
        }
        Ok(var(acc.unwrap_or(json!(0))))
    });
    func!(rt, "random", |a: Args, c: &mut JpContext<'_>| {
        let pattern = arg_str(a, 0, c)?;
        super::regen::random(&pattern)
            .map(|s| var(json!(s)))
            .map_err(|e| fail(c, format!("random: {e}")))
    });
    func!(rt, "time_now_utc", |_a: Args, _c: &mut JpContext<'_>| Ok(
        var(json!(
            chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        ))
    ));
    func!(rt, "time_now", |_a: Args, _c: &mut JpContext<'_>| Ok(var(
        json!(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
    )));
    func!(rt, "time_since", |a: Args, c: &mut JpContext<'_>| {
        let t1 = parse_time(&arg_str(a, 1, c)?).ok_or_else(|| fail(c, "invalid time"))?;
        let t2 = match arg_str(a, 2, c)?.as_str() {
            "" => chrono::Utc::now(),
            s => parse_time(s).ok_or_else(|| fail(c, "invalid time"))?,
        };
        Ok(var(json!(format_duration(
            (t2 - t1).num_milliseconds() as f64 / 1000.0
        ))))
    });
    func!(rt, "time_diff", |a: Args, c: &mut JpContext<'_>| {
        let t1 = parse_time(&arg_str(a, 0, c)?).ok_or_else(|| fail(c, "invalid time"))?;
        let t2 = parse_time(&arg_str(a, 1, c)?).ok_or_else(|| fail(c, "invalid time"))?;
        Ok(var(json!(format_duration(
            (t2 - t1).num_milliseconds() as f64 / 1000.0
        ))))
    });
    func!(rt, "time_before", |a: Args, c: &mut JpContext<'_>| {
        let t1 = parse_time(&arg_str(a, 0, c)?).ok_or_else(|| fail(c, "invalid time"))?;
        let t2 = parse_time(&arg_str(a, 1, c)?).ok_or_else(|| fail(c, "invalid time"))?;
        Ok(var(json!(t1 < t2)))
    });
    func!(rt, "time_after", |a: Args, c: &mut JpContext<'_>| {
        let t1 = parse_time(&arg_str(a, 0, c)?).ok_or_else(|| fail(c, "invalid time"))?;
        let t2 = parse_time(&arg_str(a, 1, c)?).ok_or_else(|| fail(c, "invalid time"))?;
        Ok(var(json!(t1 > t2)))
    });
    func!(rt, "time_between", |a: Args, c: &mut JpContext<'_>| {
        let t = parse_time(&arg_str(a, 0, c)?).ok_or_else(|| fail(c, "invalid time"))?;
        let s = parse_time(&arg_str(a, 1, c)?).ok_or_else(|| fail(c, "invalid time"))?;
        let e = parse_time(&arg_str(a, 2, c)?).ok_or_else(|| fail(c, "invalid time"))?;
        Ok(var(json!(t > s && t < e)))
    });
    func!(rt, "time_add", |a: Args, c: &mut JpContext<'_>| {
        let t = parse_time(&arg_str(a, 0, c)?).ok_or_else(|| fail(c, "invalid time"))?;
        let d = parse_duration(&arg_str(a, 1, c)?).ok_or_else(|| fail(c, "invalid duration"))?;
        // Past chrono's range (±262,000 years) is an error, not an overflow panic; Go's
        // durations end at ±292 years, so Kyverno refuses such a duration too.
        let out = chrono::TimeDelta::try_milliseconds((d * 1000.0) as i64)
            .and_then(|d| t.checked_add_signed(d))
            .ok_or_else(|| fail(c, "time out of range"))?;
        Ok(var(json!(
            out.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        )))
    });
    func!(rt, "time_utc", |a: Args, c: &mut JpContext<'_>| {
        let t = parse_time(&arg_str(a, 0, c)?).ok_or_else(|| fail(c, "invalid time"))?;
        Ok(var(json!(
            t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        )))
    });
    func!(rt, "time_truncate", |a: Args, c: &mut JpContext<'_>| {
        let t = parse_time(&arg_str(a, 0, c)?).ok_or_else(|| fail(c, "invalid time"))?;
        let d = parse_duration(&arg_str(a, 1, c)?).ok_or_else(|| fail(c, "invalid duration"))?;
        let step = (d * 1000.0) as i64;
        if step <= 0 {
            return Ok(var(json!(
                t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            )));
        }
        let ms = t.timestamp_millis();
        let out = chrono::DateTime::from_timestamp_millis(ms - ms.rem_euclid(step))
            .ok_or_else(|| fail(c, "time out of range"))?;
        Ok(var(json!(
            out.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        )))
    });
    func!(rt, "time_parse", |a: Args, c: &mut JpContext<'_>| {
        let layout = arg_str(a, 0, c)?;
        let value = arg_str(a, 1, c)?;
        let t = parse_go_time(&layout, &value)
            .ok_or_else(|| fail(c, "time does not fit the layout"))?;
        Ok(var(json!(
            t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        )))
    });
    func!(rt, "time_to_cron", |a: Args, c: &mut JpContext<'_>| {
        use chrono::{Datelike, Timelike};
        let t = parse_time(&arg_str(a, 0, c)?).ok_or_else(|| fail(c, "invalid time"))?;
        Ok(var(json!(format!(
            "{} {} {} {} {}",
            t.minute(),
            t.hour(),
            t.day(),
            t.month(),
            t.weekday().num_days_from_sunday()
        ))))
    });
    func!(rt, "x509_decode", |a: Args, c: &mut JpContext<'_>| {
        let v = super::x509::decode(&arg_str(a, 0, c)?).map_err(|e| fail(c, e.to_string()))?;
        Ok(var(v))
    });
    func!(rt, "semver_compare", |a: Args, c: &mut JpContext<'_>| {
        let v = arg_str(a, 0, c)?;
        let r = arg_str(a, 1, c)?;
        Ok(var(json!(semver_match(&v, &r))))
    });
    func!(rt, "is_external_url", |a: Args, c: &mut JpContext<'_>| {
        let u = arg_str(a, 0, c)?;
        let host = u
            .split("://")
            .nth(1)
            .unwrap_or(&u)
            .split(['/', ':'])
            .next()
            .unwrap_or("");
        let internal = host == "localhost"
            || host.starts_with("127.")
            || host.starts_with("10.")
            || host.starts_with("192.168.")
            || host.ends_with(".svc")
            || host.ends_with(".cluster.local");
        Ok(var(json!(!internal)))
    });
}

fn text_or_number(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Parses `value` with a Go time layout (`2006-01-02T15:04:05Z07:00`, `Mon Jan 2 …`).
fn parse_go_time(layout: &str, value: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    if layout.is_empty() || layout == "2006-01-02T15:04:05Z07:00" {
        return parse_time(value);
    }
    // Longest Go tokens first so `2006` is not read as `2` + `006`.
    const TOKENS: &[(&str, &str)] = &[
        ("2006", "%Y"),
        ("Z07:00", "%:z"),
        ("-07:00", "%:z"),
        ("-0700", "%z"),
        ("January", "%B"),
        ("Monday", "%A"),
        ("Jan", "%b"),
        ("Mon", "%a"),
        ("MST", "%Z"),
        ("01", "%m"),
        ("02", "%d"),
        ("15", "%H"),
        ("03", "%I"),
        ("04", "%M"),
        ("05", "%S"),
        ("PM", "%p"),
        ("06", "%y"),
        ("_2", "%e"),
        ("1", "%-m"),
        ("2", "%-d"),
        ("3", "%-I"),
    ];
    let mut fmt = String::new();
    let mut rest = layout;
    'outer: while !rest.is_empty() {
        for (go, chrono_fmt) in TOKENS {
            if let Some(r) = rest.strip_prefix(go) {
                fmt.push_str(chrono_fmt);
                rest = r;
                continue 'outer;
            }
        }
        let ch = rest.chars().next()?;
        if ch == '%' {
            fmt.push_str("%%");
        } else {
            fmt.push(ch);
        }
        rest = &rest[ch.len_utf8()..];
    }
    if let Ok(t) = chrono::DateTime::parse_from_str(value, &fmt) {
        return Some(t.with_timezone(&chrono::Utc));
    }
    if let Ok(t) = chrono::NaiveDateTime::parse_from_str(value, &fmt) {
        return Some(t.and_utc());
    }
    chrono::NaiveDate::parse_from_str(value, &fmt)
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
}

fn parse_time(s: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}

#[derive(Clone, Copy)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

fn arith(a: Args, c: &JpContext<'_>, op: Op) -> Result<Rcvar, JmespathError> {
    let x = arg_val(a, 0, c)?;
    let y = arg_val(a, 1, c)?;
    arith_values(&x, &y, op)
        .map(var)
        .map_err(|e| fail(c, e.to_string()))
}

enum Operand {
    Num(f64),
    Qty(f64, String),
    Dur(f64),
}

fn operand(v: &Value) -> Option<Operand> {
    match v {
        Value::Number(n) => n.as_f64().map(Operand::Num),
        Value::String(s) => {
            if let Some(d) = parse_duration(s).filter(|_| s.parse::<f64>().is_err()) {
                Some(Operand::Dur(d))
            } else {
                parse_quantity(s).map(|q| Operand::Qty(q, s.clone()))
            }
        }
        _ => None,
    }
}

/// Why Kyverno's arithmetic cannot combine two values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum ArithError {
    #[error("invalid operands {0} and {1}")]
    Invalid(String, String),
    #[error("incompatible operands {0} and {1}")]
    Incompatible(String, String),
    #[error("division by zero")]
    DivisionByZero,
    #[error("modulo by zero")]
    ModuloByZero,
}

fn arith_values(x: &Value, y: &Value, op: Op) -> Result<Value, ArithError> {
    let (a, b) = match (operand(x), operand(y)) {
        (Some(a), Some(b)) => (a, b),
        _ => return Err(ArithError::Invalid(x.to_string(), y.to_string())),
    };
    let calc = |p: f64, q: f64| -> Result<f64, ArithError> {
        Ok(match op {
            Op::Add => p + q,
            Op::Sub => p - q,
            Op::Mul => p * q,
            Op::Div => {
                if q == 0.0 {
                    return Err(ArithError::DivisionByZero);
                }
                p / q
            }
            Op::Mod => {
                if q == 0.0 {
                    return Err(ArithError::ModuloByZero);
                }
                p % q
            }
        })
    };
    use Operand::*;
    Ok(match (a, b, op) {
        (Num(p), Num(q), _) => num(calc(p, q)?),
        (Qty(p, _), Qty(q, _), Op::Div) => num(calc(p, q)?),
        (Qty(p, s), Qty(q, _), _) | (Qty(p, s), Num(q), _) => {
            json!(format_quantity(calc(p, q)?, &s))
        }
        (Num(p), Qty(q, s), Op::Mul) => json!(format_quantity(calc(p, q)?, &s)),
        (Dur(p), Dur(q), Op::Div) => num(calc(p, q)?),
        (Dur(p), Dur(q), _) | (Dur(p), Num(q), _) => json!(format_duration(calc(p, q)?)),
        (Num(p), Dur(q), Op::Mul) => json!(format_duration(calc(p, q)?)),
        _ => return Err(ArithError::Incompatible(x.to_string(), y.to_string())),
    })
}

fn canonical_path(p: &str) -> String {
    let abs = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !abs {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let joined = parts.join("/");
    match (abs, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// A version as `semver_compare` reads it: an optional `v`, missing minor/patch as 0;
/// pre-release versions order before their release (the `semver` crate's ordering).
fn parse_version(v: &str) -> Option<semver::Version> {
    let v = v.trim().trim_start_matches('v');
    let split = v.find(['-', '+']).unwrap_or(v.len());
    let (core, rest) = v.split_at(split);
    let parts = core.split('.').count();
    let padded = match parts {
        1 => format!("{core}.0.0{rest}"),
        2 => format!("{core}.0{rest}"),
        _ => v.to_string(),
    };
    semver::Version::parse(&padded).ok()
}

fn semver_match(v: &str, range: &str) -> bool {
    let Some(ver) = parse_version(v) else {
        return false;
    };
    // blang/semver ranges, as Kyverno takes them: `||` between alternatives, spaces
    // between the conditions of one.
    range.split("||").any(|alt| {
        alt.split_whitespace().all(|cond| {
            let (op, rest) = ["<=", ">=", "!=", "<", ">", "=", "^", "~"]
                .iter()
                .find_map(|op| cond.strip_prefix(op).map(|r| (*op, r)))
                .unwrap_or(("=", cond));
            let Some(want) = parse_version(rest) else {
                return false;
            };
            match op {
                "<=" => ver <= want,
                ">=" => ver >= want,
                "<" => ver < want,
                ">" => ver > want,
                "!=" => ver != want,
                "^" => ver >= want && ver.major == want.major,
                "~" => ver >= want && ver.major == want.major && ver.minor == want.minor,
                _ => ver == want,
            }
        })
    })
}

pub fn base64_encode(data: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(data)
}

pub fn base64_decode(s: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    // Line breaks are skipped and padding is optional, as PEM bodies and values
    // written by hand need.
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_padding_mode(DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    );
    let clean: String = s
        .trim()
        .split('=')
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| *c != '\n' && *c != '\r')
        .collect();
    LENIENT.decode(clean).ok()
}

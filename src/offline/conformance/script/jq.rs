//! `jq` with a bounded subset of its filters (jq manual, "Basic filters"): `.`, and
//! paths of `.name`, `."name"`, `["name"]`, `[N]` (negative from the end) — a missing key
//! or index of `null` is `null` — and the constructions and comparisons of
//! [`jq_filter`]; `-r`/`--raw-output` prints strings bare, `-c` compact, else jq's
//! 2-space indent, `-e` sets the status from the last output. Input is each JSON value on stdin (or the files named),
//! which must be exact text. Any other filter, flag, a float or an error (indexing a
//! string) is a skip naming it.

use serde_json::Value;

use super::{Files, Io, Unwind, input};

#[path = "jq_filter.rs"]
mod jq_filter;

/// Most JSON values read from one input.
const MAX_VALUES: usize = 1000;
/// Longest path.
const MAX_STEPS: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(i64),
}

/// The path a filter names.
fn path(filter: &str) -> Result<Vec<Step>, String> {
    let unsupported = || format!("the jq filter `{filter}`");
    let cs: Vec<char> = filter.trim().chars().collect();
    if cs.first() != Some(&'.') {
        return Err(unsupported());
    }
    let mut steps = Vec::new();
    let mut i = 0;
    while i < cs.len() {
        if steps.len() > MAX_STEPS {
            return Err(unsupported());
        }
        match cs[i] {
            '.' if cs.get(i + 1) == Some(&'"') => {
                let (k, next) = quoted(&cs, i + 1).ok_or_else(unsupported)?;
                steps.push(Step::Key(k));
                i = next;
            }
            '.' if cs
                .get(i + 1)
                .is_some_and(|c| c.is_ascii_alphabetic() || *c == '_') =>
            {
                let start = i + 1;
                i = start;
                while i < cs.len() && (cs[i].is_ascii_alphanumeric() || cs[i] == '_') {
                    i += 1;
                }
                steps.push(Step::Key(cs[start..i].iter().collect()));
            }
            '.' if cs.get(i + 1) == Some(&'[') || i + 1 == cs.len() => i += 1,
            '[' if cs.get(i + 1) == Some(&'"') => {
                let (k, next) = quoted(&cs, i + 1).ok_or_else(unsupported)?;
                if cs.get(next) != Some(&']') {
                    return Err(unsupported());
                }
                steps.push(Step::Key(k));
                i = next + 1;
            }
            '[' => {
                let close = cs[i..]
                    .iter()
                    .position(|c| *c == ']')
                    .ok_or_else(unsupported)?
                    + i;
                let n: String = cs[i + 1..close].iter().collect();
                let n: i64 = n.trim().parse().map_err(|_| unsupported())?;
                steps.push(Step::Index(n));
                i = close + 1;
            }
            _ => return Err(unsupported()),
        }
    }
    Ok(steps)
}

/// A JSON string from its opening `"` at `i`: the text and the index after it.
fn quoted(cs: &[char], i: usize) -> Option<(String, usize)> {
    let mut j = i + 1;
    while j < cs.len() {
        match cs[j] {
            '\\' => j += 2,
            '"' => {
                let lit: String = cs[i..=j].iter().collect();
                return serde_json::from_str(&lit).ok().map(|s| (s, j + 1));
            }
            _ => j += 1,
        }
    }
    None
}

fn apply(v: &Value, steps: &[Step]) -> Result<Value, String> {
    let mut cur = v;
    for s in steps {
        cur = match (s, cur) {
            (_, Value::Null) => return Ok(Value::Null),
            (Step::Key(k), Value::Object(m)) => match m.get(k) {
                Some(v) => v,
                None => return Ok(Value::Null),
            },
            (Step::Index(n), Value::Array(a)) => {
                let idx = if *n < 0 { a.len() as i64 + n } else { *n };
                match usize::try_from(idx).ok().and_then(|i| a.get(i)) {
                    Some(v) => v,
                    None => return Ok(Value::Null),
                }
            }
            (Step::Key(k), other) => {
                return Err(format!("Cannot index {} with \"{k}\"", kind(other)));
            }
            (Step::Index(_), other) => {
                return Err(format!("Cannot index {} with number", kind(other)));
            }
        };
    }
    Ok(cur.clone())
}

/// The JSON pointer of a path.
fn pointer(steps: &[Step]) -> String {
    steps
        .iter()
        .map(|s| match s {
            Step::Key(k) => format!("/{}", k.replace('~', "~0").replace('/', "~1")),
            Step::Index(i) => format!("/{i}"),
        })
        .collect()
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether jq prints `v` as serde_json does: no floats (jq writes `1.0` as `1`), no DEL
/// (jq escapes it).
fn printable(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_i64() || n.is_u64(),
        Value::String(s) => !s.contains('\u{7f}'),
        Value::Array(a) => a.iter().all(printable),
        Value::Object(m) => m.iter().all(|(k, v)| !k.contains('\u{7f}') && printable(v)),
        _ => true,
    }
}

/// Runs `jq ARGS`.
pub fn run(args: &[String], io: &mut Io, files: &Files) -> Result<i32, Unwind> {
    let (mut raw, mut compact, mut exit_status) = (false, false, false);
    let mut filter = None;
    let mut named = Vec::new();
    for a in args {
        match a.as_str() {
            "-r" | "--raw-output" => raw = true,
            "-c" | "--compact-output" => compact = true,
            "-rc" | "-cr" => (raw, compact) = (true, true),
            "-e" | "--exit-status" => exit_status = true,
            f if f.starts_with('-') && f.len() > 1 => {
                return Err(Unwind::Skip(format!("`jq {f}`")));
            }
            _ if filter.is_none() => filter = Some(a.clone()),
            _ => named.push(a.clone()),
        }
    }
    let Some(filter) = filter else {
        return Err(Unwind::Skip("`jq` without a filter".into()));
    };
    // A plain path, else a construction or comparison over paths.
    let parsed = match path(&filter) {
        Ok(steps) => jq_filter::Filter::Path(steps),
        Err(why) => jq_filter::parse(&filter).ok_or(Unwind::Skip(why))?,
    };
    let text = input(&named, io, files, "jq")?;
    // A document known in part is read where it is exact, for a scalar there.
    let partly = text.unknown.is_some();
    // Every path the filter reads must be where the text is exact.
    let read = jq_filter::paths(&parsed);
    let exact_at = read
        .iter()
        .map(|steps| text.exact_at(&pointer(steps)))
        .collect::<Option<Vec<_>>>()
        .and_then(|at| at.first().copied());
    let s = match exact_at {
        Some(s) => s.to_string(),
        None => text.exact("jq")?.to_string(),
    };
    let constructed = !matches!(parsed, jq_filter::Filter::Path(_));
    let mut last = None;
    let mut out = String::new();
    for (n, v) in serde_json::Deserializer::from_str(&s)
        .into_iter::<Value>()
        .enumerate()
    {
        if n >= MAX_VALUES {
            return Err(Unwind::Skip(
                "`jq` of more values than the replay's bound".into(),
            ));
        }
        let v = v.map_err(|e| Unwind::Skip(format!("`jq` of input that is not JSON: {e}")))?;
        let r = jq_filter::eval(&parsed, &v)
            .map_err(|e| Unwind::Skip(format!("`jq {filter}`: {e}")))?;
        // What a construction holds from a document known in part must be scalars read
        // where it is exact.
        let whole_read = constructed
            && read
                .iter()
                .any(|steps| apply(&v, steps).is_ok_and(|x| x.is_object() || x.is_array()));
        if partly && (whole_read || (!constructed && (r.is_object() || r.is_array())) || n > 0) {
            return Err(Unwind::Skip(format!(
                "`jq {filter}` of a document known in part (a value printed in its order)"
            )));
        }
        if !printable(&r) {
            return Err(Unwind::Skip(format!(
                "`jq {filter}`: a value jq prints its own way"
            )));
        }
        match (&r, raw) {
            (Value::String(s), true) => out.push_str(s),
            _ if compact => out.push_str(&serde_json::to_string(&r).unwrap_or_default()),
            _ => out.push_str(&serde_json::to_string_pretty(&r).unwrap_or_default()),
        }
        out.push('\n');
        last = Some(r);
    }
    io.print(1, out);
    // `-e`: the last output decides (jq 1.7 manual, "--exit-status"): false or null is
    // 1, no output at all 4.
    Ok(match (exit_status, last) {
        (false, _) => 0,
        (true, None) => 4,
        (true, Some(Value::Null | Value::Bool(false))) => 1,
        (true, Some(_)) => 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offline::conformance::script::exec::Text;

    fn jq(args: &[&str], stdin: &str) -> Result<String, Unwind> {
        let mut io = Io::with_stdin(Text::known(stdin));
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        run(&args, &mut io, &Files::default())?;
        Ok(io.stream(1).s)
    }

    #[test]
    fn paths_print_as_jq_prints_them() {
        let doc = r#"{"data": {"resourceFilters": "[Event,*,*][Node,*,*]", "n": 3},
            "items": [{"a": [1, 2]}, {"b": "x"}]}"#;
        let ok = |a: &[&str]| jq(a, doc).unwrap_or_else(|e| panic!("{a:?}: {e:?}"));
        assert_eq!(
            ok(&[".data.resourceFilters"]),
            "\"[Event,*,*][Node,*,*]\"\n"
        );
        assert_eq!(
            ok(&["-r", ".data.resourceFilters"]),
            "[Event,*,*][Node,*,*]\n"
        );
        assert_eq!(ok(&[".data[\"n\"]"]), "3\n");
        assert_eq!(ok(&[".items[0]"]), "{\n  \"a\": [\n    1,\n    2\n  ]\n}\n");
        assert_eq!(ok(&["-c", ".items[0]"]), "{\"a\":[1,2]}\n");
        assert_eq!(ok(&[".items[-1].b"]), "\"x\"\n");
        assert_eq!(ok(&[".missing.deeper"]), "null\n");
        assert!(jq(&[".data.resourceFilters.x"], doc).is_err());
        assert!(jq(&[".items | length"], doc).is_err());
        assert!(jq(&["-S", "."], doc).is_err());
    }

    #[test]
    fn exit_status_follows_the_last_output() {
        let doc = r#"{"a": {"b": null, "c": 1}}"#;
        let status = |f: &str| {
            let mut io = Io::with_stdin(Text::known(doc));
            run(
                &["-e".to_string(), f.to_string()],
                &mut io,
                &Files::default(),
            )
            .ok()
        };
        assert_eq!(status(".a.b == null"), Some(0));
        assert_eq!(status(".a.c == null"), Some(1));
        assert_eq!(status(".a.b"), Some(1));
        assert_eq!(status(".a.c"), Some(0));
        assert_eq!(
            jq(&["-c", "{x: .a.c, \"y\": [.a.b]}"], doc).ok(),
            Some("{\"x\":1,\"y\":[null]}\n".to_string())
        );
    }
}

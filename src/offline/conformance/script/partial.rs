//! A script check on a stream the replay knows only in part (pieces of known text between
//! pieces it cannot know): the check is decided when it reads the stream only through
//! `contains($stream, '<literal>')` and each literal lies inside a run of known text,
//! which makes that call true whatever the unknown pieces hold. Each such call is
//! rewritten to read its known run instead; any other reading is undecidable.

use serde_json::{Map, Value};

use super::exec::Text;
use crate::offline::conformance::chainsaw::Bindings;

/// Deepest check the rewrite walks.
const MAX_DEPTH: usize = 64;

/// `check` with every `contains($name, '…')` reading a known run of `pieces` (bound in
/// `b`); `Err` with why when the check reads the stream otherwise or a literal is not
/// known to be there.
pub fn bind(
    check: &Value,
    name: &str,
    pieces: &[&Text],
    b: &mut Bindings,
) -> Result<Value, String> {
    let mut runs = vec![String::new()];
    for p in pieces {
        if p.unknown.is_some() {
            runs.push(String::new());
        } else if let Some(last) = runs.last_mut() {
            last.push_str(&p.s);
        }
    }
    let mut rw = Rewrite {
        name,
        runs: &runs,
        bound: Vec::new(),
    };
    let out = rw.value(check, 0)?;
    for (var, run) in rw.bound {
        b.insert(var, Value::String(runs[run].clone()));
    }
    Ok(out)
}

struct Rewrite<'a> {
    name: &'a str,
    runs: &'a [String],
    /// (binding name, index of its run).
    bound: Vec<(String, usize)>,
}

impl Rewrite<'_> {
    fn value(&mut self, v: &Value, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err("a check deeper than the replay's bound".into());
        }
        Ok(match v {
            Value::Object(m) => {
                let mut out = Map::new();
                for (k, x) in m {
                    out.insert(self.text(k)?, self.value(x, depth + 1)?);
                }
                Value::Object(out)
            }
            Value::Array(a) => Value::Array(
                a.iter()
                    .map(|x| self.value(x, depth + 1))
                    .collect::<Result<_, _>>()?,
            ),
            Value::String(s) => Value::String(self.text(s)?),
            other => other.clone(),
        })
    }

    /// One expression with its `contains($name, '…')` calls rewritten.
    fn text(&mut self, s: &str) -> Result<String, String> {
        let var = format!("${}", self.name);
        let mut out = String::new();
        let mut rest = s;
        while let Some(at) = find_var(rest, &var) {
            let before = &rest[..at];
            let Some(call) = before.trim_end().strip_suffix('(') else {
                return Err(format!(
                    "the check reads ${} other than by contains()",
                    self.name
                ));
            };
            if !call.trim_end().ends_with("contains") {
                return Err(format!(
                    "the check reads ${} other than by contains()",
                    self.name
                ));
            }
            let after = &rest[at + var.len()..];
            let literal = after
                .trim_start()
                .strip_prefix(',')
                .map(str::trim_start)
                .and_then(|a| a.strip_prefix('\''))
                .and_then(|a| a.split_once('\''))
                .map(|(lit, _)| lit)
                .filter(|lit| !lit.contains('\\'))
                .ok_or_else(|| {
                    format!(
                        "contains(${}, …) of something other than a plain literal",
                        self.name
                    )
                })?;
            let Some(run) = self.runs.iter().position(|r| r.contains(literal)) else {
                return Err(format!(
                    "contains(${}, '{literal}') on text the replay knows only in part",
                    self.name
                ));
            };
            let bound = format!("kca_known_{}_{}", self.name, self.bound.len());
            out.push_str(before);
            out.push('$');
            out.push_str(&bound);
            self.bound.push((bound, run));
            rest = after;
        }
        out.push_str(rest);
        Ok(out)
    }
}

/// Where `$name` (not a longer name) next occurs in `s`.
fn find_var(s: &str, var: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = s[from..].find(var) {
        let at = from + i;
        let end = at + var.len();
        let longer = s[end..]
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        if !longer {
            return Some(at);
        }
        from = end;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offline::conformance::script::exec::Unknown;
    use serde_json::json;

    fn hole() -> Text {
        Text {
            s: String::new(),
            unknown: Some(Unknown {
                why: "x".into(),
                lines_exact: false,
                decides: Vec::new(),
            }),
        }
    }

    #[test]
    fn contains_of_a_known_run_reads_that_run() {
        let pieces = [
            Text::known("a "),
            Text::known("done."),
            hole(),
            Text::known("tail"),
        ];
        let refs: Vec<&Text> = pieces.iter().collect();
        let mut b = Bindings::new();
        let check = json!({"(contains($stdout, 'a done.'))": true});
        let out = bind(&check, "stdout", &refs, &mut b).unwrap();
        assert_eq!(
            out,
            json!({"(contains($kca_known_stdout_0, 'a done.'))": true})
        );
        assert_eq!(b["kca_known_stdout_0"], json!("a done."));
    }

    #[test]
    fn other_readings_and_literals_across_holes_are_undecidable() {
        let pieces = [Text::known("a "), hole(), Text::known("done.")];
        let refs: Vec<&Text> = pieces.iter().collect();
        let mut b = Bindings::new();
        for check in [
            json!({"(contains($stdout, 'a done.'))": true}),
            json!({"($stdout)": "a"}),
            json!({"(trim_space($stdout))": "a"}),
            json!({"(contains($stdout, $x))": true}),
        ] {
            assert!(bind(&check, "stdout", &refs, &mut b).is_err(), "{check}");
        }
        // Another binding with a longer name is not the stream.
        let check = json!({"($stdoutx)": "a"});
        assert!(bind(&check, "stdout", &refs, &mut b).is_ok());
    }
}

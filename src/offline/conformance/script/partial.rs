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
        let mut out = String::new();
        let mut from = 0;
        for u in contains_uses(s, self.name)? {
            let Some(run) = self.runs.iter().position(|r| r.contains(&u.literal)) else {
                return Err(format!(
                    "contains(${}, '{}') on text the replay knows only in part",
                    self.name, u.literal
                ));
            };
            let bound = format!("kca_known_{}_{}", self.name, self.bound.len());
            out.push_str(&s[from..u.at]);
            out.push('$');
            out.push_str(&bound);
            self.bound.push((bound, run));
            from = u.end;
        }
        out.push_str(&s[from..]);
        Ok(out)
    }
}

/// Most uses of one stream a check may make to be read this way.
const MAX_USES: usize = 64;

/// One `contains($name, 'literal')` in a check's text: where `$name` is, and the literal.
pub(super) struct ContainsUse {
    pub at: usize,
    pub end: usize,
    pub literal: String,
}

/// Every use of `$name` in `s`, when each is `contains($name, 'literal')` with a plain
/// literal (quoted `'` or `"`, no escapes); `Err` with why otherwise.
pub(super) fn contains_uses(s: &str, name: &str) -> Result<Vec<ContainsUse>, String> {
    let var = format!("${name}");
    let mut uses = Vec::new();
    let mut from = 0;
    while let Some(i) = find_var(&s[from..], &var) {
        let at = from + i;
        let end = at + var.len();
        if uses.len() >= MAX_USES {
            return Err(format!("more than {MAX_USES} uses of ${name}"));
        }
        let by_contains = s[..at]
            .trim_end()
            .strip_suffix('(')
            .is_some_and(|call| call.trim_end().ends_with("contains"));
        if !by_contains {
            return Err(format!("the check reads ${name} other than by contains()"));
        }
        let literal = literal_argument(&s[end..]).ok_or_else(|| {
            format!("contains(${name}, …) of something other than a plain literal")
        })?;
        uses.push(ContainsUse {
            at,
            end,
            literal: literal.to_string(),
        });
        from = end;
    }
    Ok(uses)
}

/// `, 'literal')` (or double quotes) at the start of `s`: the literal, without escapes.
fn literal_argument(s: &str) -> Option<&str> {
    let s = s.trim_start().strip_prefix(',')?.trim_start();
    let quote = s.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let body = &s[1..];
    let end = body.find(quote)?;
    let literal = &body[..end];
    (body[end + 1..].trim_start().starts_with(')') && !literal.contains('\\')).then_some(literal)
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
                exact_under: Vec::new(),
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

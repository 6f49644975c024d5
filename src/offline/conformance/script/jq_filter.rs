//! The jq filters beyond a plain path that scripts build objects and tests with (jq 1.7
//! manual, "Types and Values" and "Builtin operators"): literals (`"s"`, numbers,
//! `null`, `true`, `false`), object construction `{key: f, "key": f}`, array
//! construction `[f, f]`, and `f == f` / `f != f`, over the paths of [`super::path`].
//! Every filter here gives exactly one value per input; anything else (pipes,
//! generators, functions, `{a}` shorthand) is not parsed and stays a skip.

use serde_json::{Map, Value};

/// Most nested constructions in one filter.
const MAX_DEPTH: usize = 32;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Filter {
    Path(Vec<super::Step>),
    Literal(Value),
    Object(Vec<(String, Filter)>),
    Array(Vec<Filter>),
    Compare {
        equal: bool,
        lhs: Box<Filter>,
        rhs: Box<Filter>,
    },
}

/// Parses `src` as a whole; `None` when it is outside the subset.
pub(super) fn parse(src: &str) -> Option<Filter> {
    let cs: Vec<char> = src.chars().collect();
    let mut p = Parser { cs, i: 0 };
    let f = p.comparison(0)?;
    p.blank();
    (p.i == p.cs.len()).then_some(f)
}

/// The paths `f` reads.
pub(super) fn paths(f: &Filter) -> Vec<&[super::Step]> {
    match f {
        Filter::Path(steps) => vec![steps.as_slice()],
        Filter::Literal(_) => Vec::new(),
        Filter::Object(entries) => entries.iter().flat_map(|(_, f)| paths(f)).collect(),
        Filter::Array(items) => items.iter().flat_map(paths).collect(),
        Filter::Compare { lhs, rhs, .. } => paths(lhs).into_iter().chain(paths(rhs)).collect(),
    }
}

/// `f` applied to `input`; `Err` is jq's error.
pub(super) fn eval(f: &Filter, input: &Value) -> Result<Value, String> {
    match f {
        Filter::Path(steps) => super::apply(input, steps),
        Filter::Literal(v) => Ok(v.clone()),
        Filter::Object(entries) => {
            let mut m = Map::new();
            for (k, f) in entries {
                m.insert(k.clone(), eval(f, input)?);
            }
            Ok(Value::Object(m))
        }
        Filter::Array(items) => items
            .iter()
            .map(|f| eval(f, input))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        Filter::Compare { equal, lhs, rhs } => {
            let same = json_equal(&eval(lhs, input)?, &eval(rhs, input)?);
            Ok(Value::Bool(same == *equal))
        }
    }
}

/// jq compares numbers by value (`1 == 1.0`), everything else structurally.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

struct Parser {
    cs: Vec<char>,
    i: usize,
}

impl Parser {
    fn blank(&mut self) {
        while self.cs.get(self.i).is_some_and(|c| c.is_whitespace()) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: char) -> bool {
        self.blank();
        if self.cs.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn comparison(&mut self, depth: usize) -> Option<Filter> {
        let lhs = self.term(depth)?;
        self.blank();
        let rest: String = self.cs[self.i..].iter().take(2).collect();
        let equal = match rest.as_str() {
            "==" => true,
            "!=" => false,
            _ => return Some(lhs),
        };
        self.i += 2;
        let rhs = self.term(depth)?;
        Some(Filter::Compare {
            equal,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
        })
    }

    fn term(&mut self, depth: usize) -> Option<Filter> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.blank();
        match *self.cs.get(self.i)? {
            '{' => self.object(depth),
            '[' => self.array(depth),
            '"' => {
                let (s, next) = super::quoted(&self.cs, self.i)?;
                self.i = next;
                Some(Filter::Literal(Value::String(s)))
            }
            '.' => self.path(),
            c if c.is_ascii_digit() || c == '-' => {
                let word = self.word(|c| c.is_ascii_digit() || matches!(c, '-' | '.'));
                let n: serde_json::Number = word.parse().ok()?;
                Some(Filter::Literal(Value::Number(n)))
            }
            _ => match self.word(|c| c.is_ascii_alphabetic()).as_str() {
                "null" => Some(Filter::Literal(Value::Null)),
                "true" => Some(Filter::Literal(Value::Bool(true))),
                "false" => Some(Filter::Literal(Value::Bool(false))),
                _ => None,
            },
        }
    }

    fn word(&mut self, part: impl Fn(char) -> bool) -> String {
        let start = self.i;
        while self.cs.get(self.i).is_some_and(|c| part(*c)) {
            self.i += 1;
        }
        self.cs[start..self.i].iter().collect()
    }

    /// A path: up to the first character no path holds outside brackets.
    fn path(&mut self) -> Option<Filter> {
        let start = self.i;
        let (mut in_string, mut brackets) = (false, 0usize);
        while let Some(&c) = self.cs.get(self.i) {
            match c {
                '"' => in_string = !in_string,
                '\\' if in_string => self.i += 1,
                '[' if !in_string => brackets += 1,
                ']' if !in_string && brackets == 0 => break,
                ']' if !in_string => brackets -= 1,
                c if !(in_string || c.is_ascii_alphanumeric() || "._[]-".contains(c)) => {
                    break;
                }
                _ => {}
            }
            self.i += 1;
        }
        let text: String = self.cs[start..self.i.min(self.cs.len())].iter().collect();
        super::path(&text).ok().map(Filter::Path)
    }

    fn object(&mut self, depth: usize) -> Option<Filter> {
        self.i += 1;
        let mut entries = Vec::new();
        if self.eat('}') {
            return Some(Filter::Object(entries));
        }
        loop {
            self.blank();
            let key = if self.cs.get(self.i) == Some(&'"') {
                let (s, next) = super::quoted(&self.cs, self.i)?;
                self.i = next;
                s
            } else {
                let k = self.word(|c| c.is_ascii_alphanumeric() || c == '_');
                if k.is_empty() || k.starts_with(|c: char| c.is_ascii_digit()) {
                    return None;
                }
                k
            };
            if !self.eat(':') {
                return None;
            }
            entries.push((key, self.comparison(depth + 1)?));
            if self.eat('}') {
                return Some(Filter::Object(entries));
            }
            if !self.eat(',') {
                return None;
            }
        }
    }

    fn array(&mut self, depth: usize) -> Option<Filter> {
        self.i += 1;
        let mut items = Vec::new();
        if self.eat(']') {
            return Some(Filter::Array(items));
        }
        loop {
            items.push(self.comparison(depth + 1)?);
            if self.eat(']') {
                return Some(Filter::Array(items));
            }
            if !self.eat(',') {
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(filter: &str, input: Value) -> Option<Value> {
        parse(filter).map(|f| eval(&f, &input).unwrap_or(json!("ERR")))
    }

    #[test]
    fn objects_arrays_literals_and_comparisons() {
        let doc = json!({"metadata": {"uid": "u-1", "name": "n"}});
        assert_eq!(
            run(
                r#"{ "owner": [{"kind": "ConfigMap", uid: .metadata.uid}] }"#,
                doc.clone()
            ),
            Some(json!({"owner": [{"kind": "ConfigMap", "uid": "u-1"}]}))
        );
        assert_eq!(
            run(".metadata.missing == null", doc.clone()),
            Some(json!(true))
        );
        assert_eq!(
            run(".metadata.name != \"n\"", doc.clone()),
            Some(json!(false))
        );
        assert_eq!(
            run("[1, .metadata.name]", doc.clone()),
            Some(json!([1, "n"]))
        );
        // Outside the subset: not parsed, so the caller skips.
        assert_eq!(run(".metadata | keys", doc.clone()), None);
        assert_eq!(run("{name}", doc.clone()), None);
        assert_eq!(run(".a == ", doc), None);
    }
}

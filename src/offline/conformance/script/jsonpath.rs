//! The subset of kubectl's JSONPath templates (`-o jsonpath='{.items[*].metadata.name}'`)
//! the replay prints: literal text, `{.a.b}` fields (`\.` escapes a dot), `[n]`, `[*]`,
//! `['key']`; missing fields print nothing (kubectl allows missing keys). Filters,
//! `range` and recursive descent are errors (the caller skips).

use serde_json::Value;

const MAX_RESULTS: usize = 10_000;

/// The template rendered against `root`.
pub fn render(template: &str, root: &Value) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else {
            return Err("a jsonpath template with an unclosed `{`".into());
        };
        let expr = rest[open + 1..open + close].trim();
        let values = eval(expr, root)?;
        let printed: Vec<String> = values.iter().map(print).collect();
        out.push_str(&printed.join(" "));
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn print(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => sorted_json(other),
    }
}

/// Go's `json.Marshal` of a decoded value: compact, map keys sorted.
fn sorted_json(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), sorted_json(&m[k])))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(sorted_json).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

#[derive(Debug, PartialEq)]
enum Step {
    Field(String),
    Index(usize),
    All,
}

fn steps(expr: &str) -> Result<Vec<Step>, String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    if chars.first() == Some(&'$') {
        i = 1;
    }
    while i < chars.len() {
        match chars[i] {
            '.' => {
                i += 1;
                if chars.get(i) == Some(&'.') {
                    return Err("jsonpath recursive descent".into());
                }
                let mut name = String::new();
                while i < chars.len() && chars[i] != '.' && chars[i] != '[' {
                    if chars[i] == '\\' && i + 1 < chars.len() {
                        name.push(chars[i + 1]);
                        i += 2;
                        continue;
                    }
                    name.push(chars[i]);
                    i += 1;
                }
                if !name.is_empty() {
                    out.push(Step::Field(name));
                }
            }
            '[' => {
                let Some(end) = chars[i..].iter().position(|c| *c == ']') else {
                    return Err("a jsonpath `[` without `]`".into());
                };
                let inner: String = chars[i + 1..i + end].iter().collect();
                let inner = inner.trim();
                if inner == "*" {
                    out.push(Step::All);
                } else if let Ok(n) = inner.parse::<usize>() {
                    out.push(Step::Index(n));
                } else if let Some(k) = inner
                    .strip_prefix('\'')
                    .and_then(|k| k.strip_suffix('\''))
                    .or_else(|| inner.strip_prefix('"').and_then(|k| k.strip_suffix('"')))
                {
                    out.push(Step::Field(k.to_string()));
                } else {
                    return Err(format!("the jsonpath subscript [{inner}]"));
                }
                i += end + 1;
            }
            c => return Err(format!("the jsonpath expression {expr} (at `{c}`)")),
        }
    }
    Ok(out)
}

fn eval(expr: &str, root: &Value) -> Result<Vec<Value>, String> {
    if expr.starts_with("range") || expr.starts_with("end") || expr.contains("?(") {
        return Err(format!("the jsonpath {{{expr}}}"));
    }
    let mut current = vec![root.clone()];
    for step in steps(expr)? {
        let mut next = Vec::new();
        for v in &current {
            match (&step, v) {
                (Step::Field(f), Value::Object(m)) => {
                    if let Some(x) = m.get(f) {
                        next.push(x.clone());
                    }
                }
                (Step::Index(n), Value::Array(a)) => {
                    if let Some(x) = a.get(*n) {
                        next.push(x.clone());
                    }
                }
                (Step::All, Value::Array(a)) => next.extend(a.iter().cloned()),
                (Step::All, Value::Object(m)) => next.extend(m.values().cloned()),
                _ => {}
            }
            if next.len() > MAX_RESULTS {
                return Err("a jsonpath result past the replay's bound".into());
            }
        }
        current = next;
    }
    Ok(current)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_lists_and_escapes() {
        let v = json!({"items": [{"metadata": {"labels": {"foo": "bar"}}}, {"metadata": {}}],
            "data": {"tls.crt": "x"}, "subjects": [{"name": "a", "kind": "User"}]});
        assert_eq!(
            render("{.items[*].metadata.labels.foo}", &v).unwrap(),
            "bar"
        );
        assert_eq!(render("{.data.tls\\.crt}", &v).unwrap(), "x");
        assert_eq!(
            render("{.subjects}", &v).unwrap(),
            r#"[{"kind":"User","name":"a"}]"#
        );
        assert_eq!(render("n={.missing.key}!", &v).unwrap(), "n=!");
        assert!(render("{range .items[*]}{end}", &v).is_err());
    }
}

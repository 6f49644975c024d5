//! Kubernetes' typed object literals in mutation expressions (`Object{…}`,
//! `Object.spec.template{…}`, `JSONPatch{…}`), rewritten as map literals before
//! compiling: the interpreter has no schema to build those types from, and a map with
//! the same fields is what an apply configuration or a JSON patch operation is read as.
//! It only rewrites text; it must not evaluate anything.

/// What an open bracket began: a typed literal (whose field names become string keys),
/// a map literal, or a list/call.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Frame {
    Typed,
    Other,
}

/// `expr` with every typed literal written as a map literal. Strings and names inside
/// expressions are left as they are.
pub fn rewrite_typed_literals(expr: &str) -> String {
    let chars: Vec<char> = expr.chars().collect();
    let mut out = String::with_capacity(expr.len() + 16);
    let mut stack: Vec<Frame> = Vec::new();
    // Right after `{` or `,` of a typed literal: an identifier there is a field name.
    let mut field_next = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' {
            let end = string_end(&chars, i);
            out.extend(&chars[i..end]);
            i = end;
            field_next = false;
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '.')
            {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            // A raw or bytes string prefix (`r"…"`, `b'…'`).
            if matches!(
                word.as_str(),
                "r" | "R" | "b" | "B" | "rb" | "br" | "RB" | "BR"
            ) && i < chars.len()
                && (chars[i] == '"' || chars[i] == '\'')
            {
                let end = string_end(&chars, i);
                out.push_str(&word);
                out.extend(&chars[i..end]);
                i = end;
                field_next = false;
                continue;
            }
            let next = chars[i..].iter().find(|c| !c.is_whitespace()).copied();
            let after_dot = out.trim_end().ends_with('.');
            if field_next && next == Some(':') {
                out.push('"');
                out.push_str(&word);
                out.push('"');
            } else if !after_dot && next == Some('{') && is_type_name(&word) {
                // Drop the type name; the `{` that follows opens the map.
                while i < chars.len() && chars[i] != '{' {
                    i += 1;
                }
                out.push('{');
                stack.push(Frame::Typed);
                i += 1;
                field_next = true;
                continue;
            } else {
                out.push_str(&word);
            }
            field_next = false;
            continue;
        }
        match c {
            '{' | '(' | '[' => stack.push(Frame::Other),
            '}' | ')' | ']' => {
                stack.pop();
            }
            _ => {}
        }
        out.push(c);
        if c == ',' && stack.last() == Some(&Frame::Typed) {
            field_next = true;
        } else if !c.is_whitespace() {
            field_next = false;
        }
        i += 1;
    }
    out
}

/// The names Kubernetes declares for mutation literals: `Object` and its nested field
/// types, and `JSONPatch`.
fn is_type_name(word: &str) -> bool {
    word == "JSONPatch" || word == "Object" || word.starts_with("Object.")
}

/// The index just past the string literal that starts at `start` (a quote).
fn string_end(chars: &[char], start: usize) -> usize {
    let q = chars[start];
    let triple = chars.len() >= start + 3 && chars[start + 1] == q && chars[start + 2] == q;
    let raw = start > 0 && matches!(chars[start - 1], 'r' | 'R');
    let mut i = start + if triple { 3 } else { 1 };
    while i < chars.len() {
        if chars[i] == '\\' && !raw {
            i += 2;
            continue;
        }
        if chars[i] == q {
            if !triple {
                return i + 1;
            }
            if i + 2 < chars.len() && chars[i + 1] == q && chars[i + 2] == q {
                return i + 3;
            }
        }
        i += 1;
    }
    chars.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_literals_become_maps() {
        let cases = [
            (
                "Object{metadata: Object.metadata{labels: {'a': 'b'}}}",
                "{\"metadata\": {\"labels\": {'a': 'b'}}}",
            ),
            (
                "[JSONPatch{op: \"add\", path: \"/x\", value: f(a, b)}]",
                "[{\"op\": \"add\", \"path\": \"/x\", \"value\": f(a, b)}]",
            ),
            // Names in strings, member access and map keys stay.
            (
                "{'Object{': object.spec, x: Object{spec: 'a: b'}}",
                "{'Object{': object.spec, x: {\"spec\": 'a: b'}}",
            ),
            (
                "Object{spec: Object.spec{containers: [Object.spec.containers{name: \"c\", image: r'x\\'}]}}",
                "{\"spec\": {\"containers\": [{\"name\": \"c\", \"image\": r'x\\'}]}}",
            ),
        ];
        for (from, to) in cases {
            assert_eq!(rewrite_typed_literals(from), to, "{from}");
        }
    }
}

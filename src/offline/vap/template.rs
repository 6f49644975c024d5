//! A GeneratingPolicy's YAML `template` generation (`spec.generate[].template`), as
//! Kyverno 1.19 renders it (`pkg/cel/policies/gpol/template`): the template's YAML
//! documents are the resources; with `interpolate: cel`, a `(( … ))` placeholder that is a
//! whole scalar is replaced by its CEL value (any shape), placeholders inside a longer
//! string by their scalar text, `\((` is a literal `((`, and a placeholder in a mapping
//! key is an error.

use super::*;

/// The resources one template renders, in document order.
pub(super) fn render(scope: &Scope<'_>, template: &Value) -> Result<Vec<Value>, EvalError> {
    let text = template.get("value").and_then(Value::as_str).unwrap_or("");
    let interpolate = template.get("interpolate").and_then(Value::as_str) == Some("cel");
    let docs = crate::yaml::parse_json_stream(text)
        .map_err(|e| EvalError::failed(format!("failed to parse YAML: {e}")))?;
    if docs.is_empty() {
        return Err(EvalError::failed(
            "template must contain at least one YAML document",
        ));
    }
    let mut out = Vec::with_capacity(docs.len());
    for (i, doc) in docs.iter().enumerate() {
        let rendered = if interpolate {
            render_value(scope, doc)
        } else {
            Ok(doc.clone())
        }
        .map_err(|e| e.within(format_args!("document {}", i + 1)))?;
        if !rendered.is_object() {
            return Err(EvalError::failed(format!(
                "document {}: expected a mapping describing a resource",
                i + 1
            )));
        }
        out.push(rendered);
    }
    Ok(out)
}

fn render_value(scope: &Scope<'_>, v: &Value) -> Result<Value, EvalError> {
    match v {
        Value::String(s) => render_scalar(scope, s),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                render_value(scope, item).map_err(|e| e.within(format_args!("item {i}")))
            })
            .collect::<Result<_, _>>()
            .map(Value::Array),
        Value::Object(m) => {
            let mut out = serde_json::Map::with_capacity(m.len());
            for (k, item) in m {
                if has_placeholder(k) {
                    return Err(EvalError::failed(format!(
                        "placeholders are not supported in mapping keys ({k:?}); use a whole-value placeholder on the parent field instead"
                    )));
                }
                let rendered =
                    render_value(scope, item).map_err(|e| e.within(format_args!("field {k:?}")))?;
                out.insert(k.clone(), rendered);
            }
            Ok(Value::Object(out))
        }
        other => Ok(other.clone()),
    }
}

/// Piece of a scalar: literal text or a placeholder's expression.
#[derive(Debug, PartialEq)]
enum Piece {
    Text(String),
    Expr(String),
}

fn render_scalar(scope: &Scope<'_>, s: &str) -> Result<Value, EvalError> {
    let pieces = pieces(s).map_err(EvalError::failed)?;
    let value_of = |expr: &str| {
        let v = eval(scope, expr)
            .map_err(|e| e.within(format_args!("failed to evaluate placeholder {expr:?}")))?;
        from_cel(&v).map_err(|e| {
            EvalError::failed(format!(
                "failed to convert placeholder {expr:?} result: {e}"
            ))
        })
    };
    if let [Piece::Expr(expr)] = pieces.as_slice() {
        return value_of(expr);
    }
    let mut out = String::new();
    for piece in &pieces {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Expr(expr) => match value_of(expr)? {
                Value::String(t) => out.push_str(&t),
                v @ (Value::Bool(_) | Value::Number(_)) => out.push_str(&v.to_string()),
                other => {
                    return Err(EvalError::failed(format!(
                        "placeholder {expr:?} embedded in a string must evaluate to a scalar, got {}; use a whole-value placeholder for structured results",
                        if other.is_null() {
                            "null"
                        } else if other.is_array() {
                            "a list"
                        } else {
                            "a map"
                        }
                    )));
                }
            },
        }
    }
    Ok(Value::String(out))
}

fn has_placeholder(s: &str) -> bool {
    let mut rest = s;
    while let Some(i) = rest.find("((") {
        if !rest[..i].ends_with('\\') {
            return true;
        }
        rest = &rest[i + 2..];
    }
    false
}

/// Splits a scalar at its `(( … ))` placeholders. Inside one, parentheses nest and
/// quoted strings (with their `\` escapes) are skipped, so `))` closes only at depth 0.
fn pieces(s: &str) -> Result<Vec<Piece>, String> {
    let b = s.as_bytes();
    let (mut out, mut text, mut i) = (Vec::new(), String::new(), 0);
    while i < b.len() {
        if s[i..].starts_with("\\((") {
            text.push_str("((");
            i += 3;
        } else if s[i..].starts_with("((") {
            let (expr, next) = placeholder(s, i)?;
            if !text.is_empty() {
                out.push(Piece::Text(std::mem::take(&mut text)));
            }
            out.push(Piece::Expr(expr));
            i = next;
        } else {
            let c = s[i..].chars().next().expect("inside the string");
            text.push(c);
            i += c.len_utf8();
        }
    }
    if !text.is_empty() {
        out.push(Piece::Text(text));
    }
    Ok(out)
}

/// The trimmed expression of the placeholder opening at `start`, and where it ends.
fn placeholder(s: &str, start: usize) -> Result<(String, usize), String> {
    let b = s.as_bytes();
    let (mut depth, mut quote, mut i) = (0usize, None::<u8>, start + 2);
    while i < b.len() {
        let c = b[i];
        if let Some(q) = quote {
            if c == b'\\' {
                i += 2;
                continue;
            }
            if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        match c {
            b'"' | b'\'' => quote = Some(c),
            b'(' => depth += 1,
            b')' if depth > 0 => depth -= 1,
            b')' if b.get(i + 1) == Some(&b')') => {
                let expr = s[start + 2..i].trim();
                if expr.is_empty() {
                    return Err(format!("empty placeholder at offset {start}"));
                }
                return Ok((expr.to_string(), i + 2));
            }
            b')' => {
                return Err(format!(
                    "unbalanced parenthesis in placeholder starting at offset {start}"
                ));
            }
            _ => {}
        }
        i += 1;
    }
    Err(match quote {
        Some(_) => format!("unterminated string literal in placeholder starting at offset {start}"),
        None => {
            format!("unterminated placeholder starting at offset {start}: missing closing '))'")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_split_at_placeholders_aware_of_parentheses_and_quotes() {
        let e = |s: &str| Piece::Expr(s.into());
        let t = |s: &str| Piece::Text(s.into());
        assert_eq!(pieces("(( a ))").unwrap(), vec![e("a")]);
        assert_eq!(
            pieces("x-(( string(f(y)) ))-z").unwrap(),
            vec![t("x-"), e("string(f(y))"), t("-z")]
        );
        assert_eq!(
            pieces("(( ':))'.size() ))").unwrap(),
            vec![e("':))'.size()")]
        );
        assert_eq!(pieces("\\((not)) here").unwrap(), vec![t("((not)) here")]);
        for bad in ["(( ))", "(( a", "(( a) ))", "(( 'a ))"] {
            assert!(pieces(bad).is_err(), "{bad}");
        }
        assert!(has_placeholder("a((b))"));
        assert!(!has_placeholder("a\\((b))"));
    }

    fn scope_for_namespace() -> Scope<'static> {
        let req = VapRequest {
            operation: "CREATE".into(),
            object: json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}),
            ..Default::default()
        };
        base_context(&req, &Value::Null)
    }

    #[test]
    fn whole_placeholders_splice_values_and_embedded_ones_interpolate_text() {
        let scope = scope_for_namespace();
        let tpl = json!({"interpolate": "cel", "value":
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: (( object.metadata.name ))-config\n  namespace: (( object.metadata.name ))\n  labels: \"(( {'team': 'a', 'n': string(2)} ))\"\ndata:\n  size: n=(( 1 + 1 ))\n  raw: \\((kept))\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n"});
        let docs = render(&scope, &tpl).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(
            docs[0]["metadata"],
            json!({"name": "team-a-config", "namespace": "team-a", "labels": {"n": "2", "team": "a"}})
        );
        assert_eq!(docs[0]["data"], json!({"size": "n=2", "raw": "((kept))"}));
        // Without `interpolate: cel` the text is the resource as written.
        let plain = json!({"value": "kind: ConfigMap\nmetadata:\n  name: (( x ))\n"});
        assert_eq!(
            render(&scope, &plain).unwrap()[0]["metadata"]["name"],
            "(( x ))"
        );
    }

    #[test]
    fn template_errors_are_the_policys() {
        let scope = scope_for_namespace();
        for value in [
            "kind: ConfigMap\nmetadata:\n  name: a-(( object.metadata ))\n",
            "kind: ConfigMap\ndata:\n  (( object.metadata.name )): x\n",
            "- a\n- b\n",
            "kind: ConfigMap\ndata:\n  x: (( object.missing ))\n",
        ] {
            let e = render(&scope, &json!({"interpolate": "cel", "value": value})).unwrap_err();
            assert_eq!(e.unsupported, None, "{value}: {e:?}");
        }
    }
}

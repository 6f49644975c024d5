//! `{{ … }}` substitution into policy values, and the errors a substitution reports. The
//! JMESPath queries it runs are [`super::jmes`]. It must not decide rule outcomes.

use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::Context;

#[derive(Debug, Clone, thiserror::Error)]
pub enum VarError {
    #[error("variable {0} could not be resolved")]
    NotResolved(String),
    #[error("invalid expression {expr}: {reason}")]
    Invalid { expr: String, reason: String },
    /// A context entry the expression reads failed to load.
    #[error("{0}")]
    Load(String),
    /// A context entry failed to load, with Kyverno's own text of the failure.
    #[error("{message}")]
    LoadWorded { message: String, kyverno: String },
    /// A failure resolving `variable` in the string at JSON pointer `path` of the
    /// document being substituted; said as the failure itself.
    #[error("{inner}")]
    Resolving {
        variable: String,
        path: String,
        inner: Box<VarError>,
    },
    /// A failure substituting a condition's `key` or `value` (`side`); said as the
    /// failure itself.
    #[error("{inner}")]
    InCondition {
        side: &'static str,
        inner: Box<VarError>,
    },
}

impl VarError {
    /// Kyverno's own text of the failure, where it is known: a context entry's load
    /// failure as its loader says it, inside `failed to resolve V at path P: …`
    /// (pkg/engine/variables/vars.go `substituteVariablesIfAny`) and `failed to substitute
    /// variables in condition key|value: …` (pkg/engine/variables/evaluate.go `Evaluate`).
    pub fn kyverno_text(&self) -> Option<String> {
        match self {
            VarError::Load(s) => Some(s.clone()),
            VarError::LoadWorded { kyverno, .. } => Some(kyverno.clone()),
            VarError::Resolving {
                variable,
                path,
                inner,
            } => inner
                .kyverno_text()
                .map(|t| format!("failed to resolve {variable} at path {path}: {t}")),
            VarError::InCondition { side, inner } => inner
                .kyverno_text()
                .map(|t| format!("failed to substitute variables in condition {side}: {t}")),
            VarError::NotResolved(_) | VarError::Invalid { .. } => None,
        }
    }

    /// The failure under the wrappers that only say where it happened.
    pub fn root(&self) -> &VarError {
        match self {
            VarError::Resolving { inner, .. } | VarError::InCondition { inner, .. } => inner.root(),
            other => other,
        }
    }
}

/// Replaces every `{{ }}` in every string of `value`; an unresolvable variable is an error.
pub fn substitute(value: &Value, ctx: &Context) -> Result<Value, VarError> {
    substitute_with(value, ctx, false)
}

/// Like [`substitute`], but an unresolvable variable becomes an empty string, as Kyverno
/// does for preconditions.
pub fn substitute_lenient(value: &Value, ctx: &Context) -> Result<Value, VarError> {
    substitute_with(value, ctx, true)
}

/// Replaces `{{@}}` in the strings of a patch with a variable naming the same place in
/// the object being patched (`target.…` for a mutate-existing target, else
/// `request.object.…`), so it substitutes the current value there, as Kyverno does
/// (pkg/engine/variables/vars.go `substituteVariablesIfAny`, the path made by
/// pkg/utils/jsonpointer `JMESPath`).
pub fn resolve_current_value(patch: &Value, ctx: &Context) -> Value {
    if !any_text(patch, &|s| s.contains('@') && s.contains("{{")) {
        return patch.clone();
    }
    let root = if ctx.document().get("target").is_some_and(|t| !t.is_null()) {
        "target"
    } else {
        "request.object"
    };
    let mut path = vec![root.to_string()];
    at_paths(patch, &mut path)
}

fn at_paths(value: &Value, path: &mut Vec<String>) -> Value {
    match value {
        Value::String(s) if s.contains('@') => {
            let re = at_variable();
            Value::String(
                re.replace_all(s, |_: &regex::Captures| {
                    format!("{{{{{}}}}}", jmes_path(path))
                })
                .into_owned(),
            )
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    path.push(i.to_string());
                    let out = at_paths(v, path);
                    path.pop();
                    out
                })
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    path.push(k.clone());
                    let out = at_paths(v, path);
                    path.pop();
                    (k.clone(), out)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

fn at_variable() -> &'static regex::Regex {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    RE.get_or_init(|| regex::Regex::new(r"\{\{\s*@\s*\}\}").expect("valid regex"))
}

/// A JSON pointer's components as JMESPath: indexes in brackets, identifiers bare,
/// other keys quoted.
fn jmes_path(parts: &[String]) -> String {
    let mut out = String::new();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 && part.parse::<u64>().is_ok() {
            out.push_str(&format!("[{part}]"));
            continue;
        }
        if !out.is_empty() {
            out.push('.');
        }
        let bare = part
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
        if bare && !part.contains('.') || i == 0 {
            out.push_str(part);
        } else {
            out.push_str(&serde_json::to_string(part).unwrap_or_default());
        }
    }
    out
}

/// Whether a key or a string anywhere in `value` holds `{{` (a variable, or an escaped
/// `\{{` that substitution unescapes). Without one, substitution is the identity.
pub fn has_variables(value: &Value) -> bool {
    any_text(value, &|s| s.contains("{{"))
}

/// Whether `test` holds for a map key or a string anywhere in `value`.
pub fn any_text(value: &Value, test: &impl Fn(&str) -> bool) -> bool {
    match value {
        Value::String(s) => test(s),
        Value::Array(items) => items.iter().any(|v| any_text(v, test)),
        Value::Object(map) => map.iter().any(|(k, v)| test(k) || any_text(v, test)),
        _ => false,
    }
}

fn substitute_with(value: &Value, ctx: &Context, lenient: bool) -> Result<Value, VarError> {
    substitute_at(value, ctx, lenient, &mut Vec::new())
}

/// One step of the path to a value: a list index or a map key.
enum Step<'a> {
    Index(usize),
    Key(&'a str),
}

/// [`substitute_with`] of the value at `path` in the document; the path is written out
/// only for a failure that names it.
fn substitute_at<'a>(
    value: &'a Value,
    ctx: &Context,
    lenient: bool,
    path: &mut Vec<Step<'a>>,
) -> Result<Value, VarError> {
    match value {
        Value::String(s) if !s.contains("{{") => Ok(value.clone()),
        Value::String(s) => substitute_str(s, ctx, lenient).map_err(|e| at_path(e, path)),
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, v) in items.iter().enumerate() {
                path.push(Step::Index(i));
                let r = substitute_at(v, ctx, lenient, path);
                path.pop();
                out.push(r?);
            }
            Ok(Value::Array(out))
        }
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                let key = match substitute_str(k, ctx, lenient).map_err(|e| at_path(e, path))? {
                    Value::String(s) => s,
                    other => to_text(&other),
                };
                path.push(Step::Key(k));
                let r = substitute_at(v, ctx, lenient, path);
                path.pop();
                out.insert(key, r?);
            }
            Ok(Value::Object(out))
        }
        other => Ok(other.clone()),
    }
}

/// Names the path of a resolving failure that does not have one yet, as Kyverno's
/// traversal writes it: `/`-separated, a key's own `/` escaped as `\/` and nothing else
/// (pkg/engine/jsonutils/traverse.go `traverseObject`), not RFC 6901's `~0`/`~1`.
fn at_path(e: VarError, path: &[Step<'_>]) -> VarError {
    match e {
        VarError::Resolving {
            variable, inner, ..
        } => {
            let mut written = String::new();
            for step in path {
                written.push('/');
                match step {
                    Step::Index(i) => written.push_str(&i.to_string()),
                    Step::Key(k) => written.push_str(&k.replace('/', "\\/")),
                }
            }
            VarError::Resolving {
                variable,
                path: written,
                inner,
            }
        }
        other => other,
    }
}

/// Finds the innermost `{{ … }}` (inside it only single-brace groups such as `{a: b}`)
/// not preceded by a backslash; returns its byte range.
fn find_variable(s: &str, from: usize) -> Option<(usize, usize)> {
    let b = s.as_bytes();
    let mut i = from;
    'outer: while i + 1 < b.len() {
        if !(b[i] == b'{' && b[i + 1] == b'{') || (i > 0 && b[i - 1] == b'\\') {
            i += 1;
            continue;
        }
        let mut j = i + 2;
        while j < b.len() {
            match b[j] {
                b'}' if j + 1 < b.len() && b[j + 1] == b'}' => return Some((i, j + 2)),
                b'}' => {
                    i += 1;
                    continue 'outer;
                }
                b'{' if j + 1 < b.len() && b[j + 1] == b'{' => {
                    i = j;
                    continue 'outer;
                }
                b'{' => {
                    // A single-brace group must close before any other brace.
                    let mut k = j + 1;
                    while k < b.len() && b[k] != b'{' && b[k] != b'}' {
                        k += 1;
                    }
                    if k >= b.len() || b[k] == b'{' {
                        i = if k < b.len() { k } else { i + 1 };
                        continue 'outer;
                    }
                    j = k + 1;
                }
                _ => j += 1,
            }
        }
        return None;
    }
    None
}

fn substitute_str(s: &str, ctx: &Context, lenient: bool) -> Result<Value, VarError> {
    let mut current = s.to_string();
    let mut guard = 0;
    let mut from = 0;
    while let Some((start, end)) = find_variable(&current, from) {
        guard += 1;
        if guard > 1000 {
            return Err(VarError::Invalid {
                expr: s.into(),
                reason: "too many nested variables".into(),
            });
        }
        let expr = current[start + 2..end - 2].trim().to_string();
        let value = match query(&expr, ctx) {
            Ok(v) => v,
            Err(VarError::NotResolved(_)) if lenient => Value::String(String::new()),
            Err(e @ (VarError::Load(_) | VarError::LoadWorded { .. })) => {
                return Err(VarError::Resolving {
                    variable: expr,
                    path: String::new(),
                    inner: Box::new(e),
                });
            }
            Err(e) => return Err(e),
        };
        if start == 0 && end == current.len() {
            // The whole string is one variable: it takes the value's own type.
            if let Value::String(text) = &value
                && find_variable(text, 0).is_some()
                && text != &current
            {
                current = text.clone();
                from = 0;
                continue;
            }
            return Ok(value);
        }
        let text = to_text(&value);
        current.replace_range(start..end, &text);
        // Rescan from the start: the substitution may complete an enclosing variable.
        from = 0;
    }
    Ok(Value::String(current.replace("\\{{", "{{")))
}

/// How a value is spliced into a longer string: strings raw, others as JSON.
pub fn to_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}

pub use super::jmes::{num, query};

#[cfg(test)]
#[path = "vars_tests.rs"]
mod tests;

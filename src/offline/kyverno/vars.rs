//! `{{ … }}` substitution and JMESPath queries with Kyverno's custom functions. It must
//! not decide rule outcomes.
//!
//! Longer than our usual file on purpose: about a third of it is `register`, the table of
//! Kyverno's JMESPath functions (one entry each, as pkg/engine/jmespath/functions.go lists
//! them), which reads best as one table beside the helpers it calls.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use jmespath::functions::Function;
use jmespath::{Context as JpContext, ErrorReason, JmespathError, Rcvar, Runtime, Variable};
use serde_json::{Map, Value, json};

use super::matching::wildcard_match;
use super::quantity::{format_duration, format_quantity, parse_duration, parse_quantity};
use super::{Context, budget};

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

/// Evaluates one JMESPath expression against the context, within kca's bounds
/// ([`super::budget`]).
pub fn query(expr: &str, ctx: &Context) -> Result<Value, VarError> {
    if let Err(reason) = budget::check_shape(expr) {
        return Err(VarError::Invalid {
            expr: abbreviated(expr),
            reason: reason.to_string(),
        });
    }
    budget::scoped(|| query_unbounded(expr, ctx))
}

/// The start of a long expression, for messages.
fn abbreviated(expr: &str) -> String {
    match expr.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &expr[..i]),
        None => expr.to_string(),
    }
}

fn query_unbounded(expr: &str, ctx: &Context) -> Result<Value, VarError> {
    let mut expr = expr.trim().to_string();
    if ctx
        .document()
        .pointer("/request/operation")
        .and_then(Value::as_str)
        == Some("DELETE")
    {
        expr = expr.replace("request.object", "request.oldObject");
    }
    ctx.load_mentioned(&expr)?;
    if expr == "@" {
        return Ok(ctx.document().get("@").cloned().unwrap_or(Value::Null));
    }
    let compiled = compiled_expression(&expr)?;
    let data = ctx.variable();
    let mut jp = JpContext::new(&expr, runtime());
    let result = super::interp::interpret(&data, compiled.as_ast(), &mut jp).map_err(|e| {
        VarError::Invalid {
            expr: abbreviated(&expr),
            reason: e.to_string(),
        }
    })?;
    finish(&expr, &compiled, &result, ctx)
}

/// Compiled expressions, kept per thread: the same rule runs against every resource.
type Compiled = std::rc::Rc<jmespath::Expression<'static>>;

fn compiled_expression(expr: &str) -> Result<Compiled, VarError> {
    thread_local! {
        static CACHE: std::cell::RefCell<std::collections::HashMap<String, Compiled>> =
            std::cell::RefCell::new(std::collections::HashMap::new());
    }
    if let Some(hit) = CACHE.with(|c| c.borrow().get(expr).cloned()) {
        return Ok(hit);
    }
    let compiled = std::rc::Rc::new(compile(expr)?);
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= 4096 {
            c.clear();
        }
        c.insert(expr.to_string(), compiled.clone());
    });
    Ok(compiled)
}

fn compile(expr: &str) -> Result<jmespath::Expression<'static>, VarError> {
    let expr = expr.to_string();
    let compiled = match runtime().compile(&expr) {
        Ok(c) => c,
        // go-jmespath also takes multiselect hashes whose keys are not comma-separated.
        Err(e) => match add_hash_commas(&expr).and_then(|fixed| runtime().compile(&fixed).ok()) {
            Some(c) => c,
            None => {
                return Err(VarError::Invalid {
                    expr: expr.clone(),
                    reason: e.to_string(),
                });
            }
        },
    };
    let ast = null_safe(compiled.as_ast().clone());
    Ok(jmespath::Expression::new(expr.as_str(), ast, runtime()))
}

fn finish(
    expr: &str,
    compiled: &jmespath::Expression<'static>,
    result: &Rcvar,
    ctx: &Context,
) -> Result<Value, VarError> {
    let result = result.clone();
    if budget::size(&result, budget::MAX_PRODUCED + 1) > budget::MAX_PRODUCED {
        return Err(VarError::Invalid {
            expr: abbreviated(expr),
            reason: format!(
                "the result is larger than {} MiB; kca stops it there",
                budget::MAX_PRODUCED / (1024 * 1024)
            ),
        });
    }
    let value = to_value(&result);
    if value.is_null() && path_missing(compiled.as_ast(), &ctx.document()) {
        return Err(VarError::NotResolved(expr.to_string()));
    }
    Ok(value)
}

/// Puts the comma go-jmespath does not require before a hash key that starts a line
/// (`key: value` with no `,` after the previous entry). `None` when nothing changes.
fn add_hash_commas(expr: &str) -> Option<String> {
    let mut out = String::with_capacity(expr.len() + 8);
    let mut changed = false;
    for line in expr.split_inclusive('\n') {
        let t = line.trim_start();
        let is_key = t.split_once(':').is_some_and(|(k, _)| {
            !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        let prev = out.trim_end().chars().last();
        if is_key && prev.is_some_and(|c| c != ',' && c != '{') {
            let trimmed_len = out.trim_end().len();
            out.insert(trimmed_len, ',');
            changed = true;
        }
        out.push_str(line);
    }
    changed.then_some(out)
}

/// Go's JMESPath stops a sub-expression at a null left side; this crate would call the
/// right side's function with null and fail. Guard `x.f(…)` with `x != null`.
fn null_safe(ast: jmespath::ast::Ast) -> jmespath::ast::Ast {
    use jmespath::ast::{Ast, Comparator};
    let b = |a: Box<Ast>| Box::new(null_safe(*a));
    match ast {
        Ast::Subexpr { offset, lhs, rhs } => {
            let lhs = b(lhs);
            let rhs = b(rhs);
            if matches!(*rhs, Ast::Function { .. }) {
                Ast::Condition {
                    offset,
                    predicate: Box::new(Ast::Comparison {
                        offset,
                        comparator: Comparator::NotEqual,
                        lhs: lhs.clone(),
                        rhs: Box::new(Ast::Literal {
                            offset,
                            value: Rcvar::new(Variable::Null),
                        }),
                    }),
                    then: Box::new(Ast::Subexpr { offset, lhs, rhs }),
                }
            } else {
                Ast::Subexpr { offset, lhs, rhs }
            }
        }
        Ast::Comparison {
            offset,
            comparator,
            lhs,
            rhs,
        } => Ast::Comparison {
            offset,
            comparator,
            lhs: b(lhs),
            rhs: b(rhs),
        },
        Ast::Condition {
            offset,
            predicate,
            then,
        } => Ast::Condition {
            offset,
            predicate: b(predicate),
            then: b(then),
        },
        Ast::Expref { offset, ast } => Ast::Expref {
            offset,
            ast: b(ast),
        },
        Ast::Flatten { offset, node } => Ast::Flatten {
            offset,
            node: b(node),
        },
        Ast::Function { offset, name, args } => Ast::Function {
            offset,
            name,
            args: args.into_iter().map(null_safe).collect(),
        },
        Ast::MultiList { offset, elements } => Ast::MultiList {
            offset,
            elements: elements.into_iter().map(null_safe).collect(),
        },
        Ast::Not { offset, node } => Ast::Not {
            offset,
            node: b(node),
        },
        Ast::Projection { offset, lhs, rhs } => Ast::Projection {
            offset,
            lhs: b(lhs),
            rhs: b(rhs),
        },
        Ast::ObjectValues { offset, node } => Ast::ObjectValues {
            offset,
            node: b(node),
        },
        Ast::And { offset, lhs, rhs } => Ast::And {
            offset,
            lhs: b(lhs),
            rhs: b(rhs),
        },
        Ast::Or { offset, lhs, rhs } => Ast::Or {
            offset,
            lhs: b(lhs),
            rhs: b(rhs),
        },
        other => other,
    }
}

/// Kyverno fails on a plain path that walks past an absent key (`a.missing.b`); a missing
/// last key, projections and functions yield null.
fn path_missing(ast: &jmespath::ast::Ast, doc: &Value) -> bool {
    let mut segs = Vec::new();
    if !plain_path(ast, &mut segs) {
        return false;
    }
    let mut cur = doc;
    let last = segs.len().saturating_sub(1);
    for (i, seg) in segs.into_iter().enumerate() {
        match (seg, cur) {
            // A missing last key is null; walking on past a missing key is an error.
            (Seg::Key(k), Value::Object(m)) => match m.get(&k) {
                Some(v) => cur = v,
                None => return i < last,
            },
            (Seg::Key(_), _) => return true,
            (Seg::Index, _) => return false,
        }
    }
    false
}

enum Seg {
    Key(String),
    Index,
}

fn plain_path(ast: &jmespath::ast::Ast, out: &mut Vec<Seg>) -> bool {
    use jmespath::ast::Ast;
    match ast {
        Ast::Field { name, .. } => {
            out.push(Seg::Key(name.clone()));
            true
        }
        Ast::Index { idx, .. } => {
            let _ = idx;
            out.push(Seg::Index);
            true
        }
        Ast::Subexpr { lhs, rhs, .. } => plain_path(lhs, out) && plain_path(rhs, out),
        _ => false,
    }
}

pub(crate) fn to_value(v: &Variable) -> Value {
    match v {
        Variable::Null => Value::Null,
        Variable::String(s) => Value::String(s.clone()),
        Variable::Bool(b) => Value::Bool(*b),
        Variable::Number(n) => normalize_number(n.as_f64().unwrap_or(0.0), n),
        Variable::Array(items) => Value::Array(items.iter().map(|i| to_value(i)).collect()),
        Variable::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), to_value(v)))
                .collect::<Map<_, _>>(),
        ),
        Variable::Expref(_) => Value::Null,
    }
}

fn normalize_number(f: f64, n: &serde_json::Number) -> Value {
    if n.is_i64() || n.is_u64() {
        return Value::Number(n.clone());
    }
    num(f)
}

/// A JSON number, integral when the float is whole (Go prints `3`, not `3.0`).
pub fn num(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        json!(f as i64)
    } else {
        serde_json::Number::from_f64(f)
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
}

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

fn runtime() -> &'static Runtime {
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

#[cfg(test)]
#[path = "vars_tests.rs"]
mod tests;

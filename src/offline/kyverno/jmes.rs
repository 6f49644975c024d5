//! JMESPath queries as Kyverno runs them: compiled once per thread, made null-safe as
//! go-jmespath is, interpreted within kca's budget, and a missing path told apart from a
//! null. Kyverno's own functions are [`super::jmes_functions`].
use jmespath::{Context as JpContext, Rcvar, Variable};
use serde_json::{Map, Value, json};

use super::jmes_functions::runtime;
use super::vars::VarError;
use super::{Context, budget};

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

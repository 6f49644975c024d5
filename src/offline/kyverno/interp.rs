//! The JMESPath interpreter kca runs, so that every value an expression makes is charged
//! to the query's budget ([`super::budget`]) where it is made. The crate's own interpreter
//! shares values (`[@, @]` holds the same value twice, at no cost), which is right, but
//! then walks the shared structure whole for `to_string`, `==`, projections and flatten,
//! with no bound: a 1 KB policy doubling its object 30 times aborted kca at 1.6 GB. Here:
//! each node evaluated costs one; a list or map built (projection, flatten, multiselect,
//! `values`, slice) costs its entries; `==`/`!=` cost what they compare (a budgeted walk,
//! the same value shared on both sides costing one); a function is charged what it walks
//! before it runs (its arguments in full for `to_string`, `contains` and Kyverno's
//! functions, which copy or compare them whole; their top level for the other built-ins)
//! and what it returns. `map`, `sort_by`, `max_by` and `min_by` evaluate their expression
//! here, charged, and leave ordering and errors to the crate's functions. Semantics are
//! the crate's (jmespath 0.5, src/interpreter.rs); only the cost is new.

use std::collections::BTreeMap;
use std::rc::Rc;

use jmespath::ast::{Ast, Comparator};
use jmespath::{Context, ErrorReason, JmespathError, Rcvar, RuntimeError, Variable};

use super::budget;

type Result = std::result::Result<Rcvar, JmespathError>;

fn spend(n: usize, ctx: &Context<'_>) -> std::result::Result<(), JmespathError> {
    budget::spend(n).map_err(|e| over(ctx, e))
}

fn over(ctx: &Context<'_>, e: budget::BudgetError) -> JmespathError {
    JmespathError::new(
        ctx.expression,
        ctx.offset,
        ErrorReason::Parse(e.to_string()),
    )
}

fn null() -> Rcvar {
    Rcvar::new(Variable::Null)
}

fn array(items: Vec<Rcvar>, ctx: &Context<'_>) -> Result {
    spend(items.len(), ctx)?;
    Ok(Rcvar::new(Variable::Array(items)))
}

/// Evaluates `node` against `data`, charging as the module says.
pub fn interpret(data: &Rcvar, node: &Ast, ctx: &mut Context<'_>) -> Result {
    spend(1, ctx)?;
    match node {
        Ast::Field { name, .. } => Ok(data.get_field(name)),
        Ast::Subexpr { lhs, rhs, .. } => {
            let left = interpret(data, lhs, ctx)?;
            interpret(&left, rhs, ctx)
        }
        Ast::Identity { .. } => Ok(data.clone()),
        Ast::Literal { value, .. } => Ok(value.clone()),
        Ast::Index { idx, .. } => Ok(if *idx >= 0 {
            data.get_index(*idx as usize)
        } else {
            data.get_negative_index((-idx) as usize)
        }),
        Ast::Or { lhs, rhs, .. } => {
            let left = interpret(data, lhs, ctx)?;
            if left.is_truthy() {
                Ok(left)
            } else {
                interpret(data, rhs, ctx)
            }
        }
        Ast::And { lhs, rhs, .. } => {
            let left = interpret(data, lhs, ctx)?;
            if !left.is_truthy() {
                Ok(left)
            } else {
                interpret(data, rhs, ctx)
            }
        }
        Ast::Not { node, .. } => {
            let v = interpret(data, node, ctx)?;
            Ok(Rcvar::new(Variable::Bool(!v.is_truthy())))
        }
        Ast::Condition {
            predicate, then, ..
        } => {
            if interpret(data, predicate, ctx)?.is_truthy() {
                interpret(data, then, ctx)
            } else {
                Ok(null())
            }
        }
        Ast::Comparison {
            comparator,
            lhs,
            rhs,
            ..
        } => {
            let left = interpret(data, lhs, ctx)?;
            let right = interpret(data, rhs, ctx)?;
            let answer = match comparator {
                Comparator::Equal => Some(equal(&left, &right, ctx)?),
                Comparator::NotEqual => Some(!equal(&left, &right, ctx)?),
                // Ordering is between numbers only: constant work.
                other => left.compare(other, &right),
            };
            Ok(answer.map_or_else(null, |b| Rcvar::new(Variable::Bool(b))))
        }
        Ast::ObjectValues { node, .. } => match &*interpret(data, node, ctx)? {
            Variable::Object(m) => array(m.values().cloned().collect(), ctx),
            _ => Ok(null()),
        },
        Ast::Projection { lhs, rhs, .. } => match interpret(data, lhs, ctx)?.as_array() {
            None => Ok(null()),
            Some(left) => {
                let mut collected = Vec::new();
                for element in left {
                    let current = interpret(element, rhs, ctx)?;
                    if !current.is_null() {
                        collected.push(current);
                    }
                }
                array(collected, ctx)
            }
        },
        Ast::Flatten { node, .. } => match interpret(data, node, ctx)?.as_array() {
            None => Ok(null()),
            Some(items) => {
                let entries = items
                    .iter()
                    .map(|e| e.as_array().map_or(1, Vec::len))
                    .fold(0usize, usize::saturating_add);
                spend(entries, ctx)?;
                let mut collected = Vec::with_capacity(entries);
                for element in items {
                    match element.as_array() {
                        Some(inner) => collected.extend(inner.iter().cloned()),
                        None => collected.push(element.clone()),
                    }
                }
                Ok(Rcvar::new(Variable::Array(collected)))
            }
        },
        Ast::MultiList { elements, .. } => {
            if data.is_null() {
                return Ok(null());
            }
            let mut collected = Vec::with_capacity(elements.len());
            for e in elements {
                collected.push(interpret(data, e, ctx)?);
            }
            array(collected, ctx)
        }
        Ast::MultiHash { elements, .. } => {
            if data.is_null() {
                return Ok(null());
            }
            let mut collected = BTreeMap::new();
            for kv in elements {
                let value = interpret(data, &kv.value, ctx)?;
                collected.insert(kv.key.clone(), value);
            }
            spend(collected.len(), ctx)?;
            Ok(Rcvar::new(Variable::Object(collected)))
        }
        Ast::Function { name, args, offset } => {
            let mut values = Vec::with_capacity(args.len());
            for a in args {
                values.push(interpret(data, a, ctx)?);
            }
            ctx.offset = *offset;
            call(name, &values, ctx)
        }
        Ast::Expref { ast, .. } => Ok(Rcvar::new(Variable::Expref((**ast).clone()))),
        Ast::Slice {
            start,
            stop,
            step,
            offset,
        } => {
            if *step == 0 {
                ctx.offset = *offset;
                let reason = ErrorReason::Runtime(RuntimeError::InvalidSlice);
                return Err(JmespathError::from_ctx(ctx, reason));
            }
            match data.slice(*start, *stop, *step) {
                Some(items) => array(items, ctx),
                None => Ok(null()),
            }
        }
    }
}

/// The crate's built-ins (jmespath 0.5 src/runtime.rs); every other name is Kyverno's.
const BUILTINS: &[&str] = &[
    "abs",
    "avg",
    "ceil",
    "contains",
    "ends_with",
    "floor",
    "join",
    "keys",
    "length",
    "map",
    "max",
    "max_by",
    "merge",
    "min",
    "min_by",
    "not_null",
    "reverse",
    "sort",
    "sort_by",
    "starts_with",
    "sum",
    "to_array",
    "to_number",
    "to_string",
    "type",
    "values",
];

fn call(name: &str, args: &[Rcvar], ctx: &mut Context<'_>) -> Result {
    let Some(f) = ctx.runtime.get_function(name) else {
        let reason = ErrorReason::Runtime(RuntimeError::UnknownFunction(name.to_owned()));
        return Err(JmespathError::from_ctx(ctx, reason));
    };
    let builtin = BUILTINS.contains(&name);
    // What the function will walk, charged before it walks it.
    let whole = !builtin || matches!(name, "to_string" | "contains");
    for a in args {
        let walked = if whole {
            budget::size(a, budget::remaining().saturating_add(1))
        } else {
            top_level(a)
        };
        spend(walked, ctx)?;
    }
    if let ("map" | "sort_by" | "max_by" | "min_by", Some(out)) =
        (name, by_expression(name, args, ctx))
    {
        return out;
    }
    let out = f.evaluate(args, ctx)?;
    if builtin {
        spend(top_level(&out), ctx)?;
    }
    Ok(out)
}

/// `map(&e, xs)`, `sort_by(xs, &e)`, `max_by(xs, &e)`, `min_by(xs, &e)` with `e`
/// evaluated here (charged); `None` when the arguments are not of that shape (the crate's
/// function then says what is wrong).
fn by_expression(name: &str, args: &[Rcvar], ctx: &mut Context<'_>) -> Option<Result> {
    let (items, expr) = match (name, args) {
        ("map", [e, xs]) => (xs.as_array()?, e.as_expref()?.clone()),
        (_, [xs, e]) if name != "map" => (xs.as_array()?, e.as_expref()?.clone()),
        _ => return None,
    };
    let mut keys = Vec::with_capacity(items.len());
    for item in items {
        match interpret(item, &expr, ctx) {
            Ok(k) => keys.push(k),
            Err(e) => return Some(Err(e)),
        }
    }
    if name == "map" {
        return Some(array(keys, ctx));
    }
    // The crate orders `[item, key]` pairs by `&[1]` (constant work each), with its own
    // type checks and messages; the items come back out of the pairs.
    let pairs: Vec<Rcvar> = items
        .iter()
        .zip(keys)
        .map(|(i, k)| Rcvar::new(Variable::Array(vec![i.clone(), k])))
        .collect();
    if let Err(e) = spend(pairs.len() * 3, ctx) {
        return Some(Err(e));
    }
    let second = Rcvar::new(Variable::Expref(Ast::Index { offset: 0, idx: 1 }));
    let f = ctx.runtime.get_function(name)?;
    let out = match f.evaluate(&[Rcvar::new(Variable::Array(pairs)), second], ctx) {
        Ok(o) => o,
        Err(e) => return Some(Err(e)),
    };
    Some(Ok(match (name, &*out) {
        ("sort_by", Variable::Array(sorted)) => Rcvar::new(Variable::Array(
            sorted.iter().map(|p| p.get_index(0)).collect(),
        )),
        // max_by/min_by: one pair, or null for no items.
        (_, Variable::Null) => out.clone(),
        _ => out.get_index(0),
    }))
}

/// A value's own entries and text, not what they hold: what a built-in that reads one
/// level (`join`, `sort`, `keys`, `length`, …) walks or makes.
fn top_level(v: &Variable) -> usize {
    let text = |v: &Rcvar| v.as_string().map_or(1, String::len);
    match v {
        Variable::String(s) => s.len(),
        Variable::Array(items) => items
            .iter()
            .map(text)
            .fold(items.len(), usize::saturating_add),
        Variable::Object(m) => m
            .iter()
            .map(|(k, v)| k.len() + text(v))
            .fold(m.len(), usize::saturating_add),
        _ => 1,
    }
}

/// `a == b` as the crate's `PartialEq` decides it, walking both at a cost of one per pair
/// of values compared (plus text compared); the same value on both sides costs one.
fn equal(a: &Rcvar, b: &Rcvar, ctx: &Context<'_>) -> std::result::Result<bool, JmespathError> {
    let mut pending: Vec<(&Rcvar, &Rcvar)> = vec![(a, b)];
    while let Some((x, y)) = pending.pop() {
        spend(1, ctx)?;
        if Rc::ptr_eq(x, y) {
            continue;
        }
        match (&**x, &**y) {
            (Variable::Array(p), Variable::Array(q)) => {
                if p.len() != q.len() {
                    return Ok(false);
                }
                pending.extend(p.iter().zip(q));
            }
            (Variable::Object(p), Variable::Object(q)) => {
                if p.len() != q.len() {
                    return Ok(false);
                }
                for ((k, v), (l, w)) in p.iter().zip(q) {
                    spend(k.len(), ctx)?;
                    if k != l {
                        return Ok(false);
                    }
                    pending.push((v, w));
                }
            }
            (Variable::String(s), Variable::String(t)) => {
                spend(s.len().min(t.len()), ctx)?;
                if s != t {
                    return Ok(false);
                }
            }
            (Variable::Array(_) | Variable::Object(_), _)
            | (_, Variable::Array(_) | Variable::Object(_)) => {
                return Ok(false);
            }
            (p, q) => {
                if p != q {
                    return Ok(false);
                }
            }
        }
    }
    Ok(true)
}

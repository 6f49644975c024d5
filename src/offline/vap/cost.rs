//! CEL cost limits as the API server applies them to admission policies: an estimated
//! cost per expression when a policy is loaded (k8s.io/apiserver `celconfig.PerCallLimit`,
//! refused with "estimated rule cost exceeds budget by factor of …"), and a limit while
//! evaluating — per expression ("operation cancelled: actual cost limit exceeded") and per
//! policy evaluation (`celconfig.RuntimeCELCostBudget`, "validation failed due to running
//! out of cost budget, no further validation rules will be run").
//!
//! The interpreter cannot be interrupted, so the evaluation limit is checked before an
//! expression runs, on an upper bound of its cost computed from the actual values it
//! reads (list, map and string sizes): an expression that would run past the limit is
//! refused before it uses the time or memory. Without schemas, an input's size is only
//! known at evaluation: the estimate at load counts literals, `lists.range`, and
//! variables built from them. Costs follow cel-go's model in spirit (one per call or
//! access, a tenth per character of a string traversed, comprehensions multiply by their
//! range), not to the unit. It only measures; it must not evaluate anything.
//!
//! Values are measured as the interpreter holds them (`cel::Value`, whose lists and maps
//! share their parts), never as JSON copies: a walk visits each shared part once
//! (`v_i = [v_{i-1}, v_{i-1}]` is measured in n steps), and [`Shape::total`] says how many
//! values the interpreter would make by copying it, which kca's own budget charges.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use cel::IdedExpr;
use cel::Value;
use cel::common::ast::{EntryExpr, Expr, LiteralValue, operators};
use cel::objects::Key;

/// `celconfig.PerCallLimit`: the most one expression may cost.
pub const PER_CALL_LIMIT: f64 = 1_000_000.0;
/// `celconfig.RuntimeCELCostBudget`: the most one policy evaluation may cost.
pub const RUNTIME_BUDGET: f64 = 10_000_000.0;

pub const ACTUAL_LIMIT_EXCEEDED: &str = "operation cancelled: actual cost limit exceeded";
pub const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// How large a value is (length of a string, list or map), the largest size anywhere
/// inside it, which bounds what a loop over any part of it can see, and how many values
/// it holds counting each shared part as often as it appears (what a copy makes).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Shape {
    pub size: f64,
    pub deep: f64,
    pub total: f64,
}

impl Shape {
    fn of(size: f64) -> Shape {
        Shape {
            size,
            deep: size,
            total: 1.0,
        }
    }

    fn max(self, o: Shape) -> Shape {
        Shape {
            size: self.size.max(o.size),
            deep: self.deep.max(o.deep),
            total: self.total.max(o.total),
        }
    }

    /// The shape of any element or field of a value of this shape.
    fn inner(self) -> Shape {
        Shape::of(self.deep)
    }
}

/// The shape of a CEL value. Each list or map the value shares is walked once (a memo
/// keyed by its allocation), so the walk is linear in the distinct parts however often
/// they repeat.
pub fn shape_of(v: &Value) -> Shape {
    shape_memo(v, &mut HashMap::new())
}

fn shape_memo(v: &Value, memo: &mut HashMap<usize, Shape>) -> Shape {
    let key = match v {
        Value::String(s) => return Shape::of(s.chars().count() as f64),
        Value::List(l) => Arc::as_ptr(l) as *const () as usize,
        Value::Map(m) => Arc::as_ptr(&m.map) as *const () as usize,
        _ => {
            return Shape {
                total: 1.0,
                ..Shape::default()
            };
        }
    };
    if let Some(s) = memo.get(&key) {
        return *s;
    }
    let (size, mut deep, mut total) = match v {
        Value::List(l) => (l.len() as f64, 0.0f64, 1.0),
        Value::Map(m) => (m.map.len() as f64, 0.0f64, 1.0),
        _ => unreachable!("only lists and maps are memoised"),
    };
    match v {
        Value::List(l) => {
            for x in l.iter() {
                let s = shape_memo(x, memo);
                deep = deep.max(s.deep);
                total += s.total;
            }
        }
        Value::Map(m) => {
            for (k, x) in m.map.iter() {
                let s = shape_memo(x, memo);
                let klen = match k {
                    Key::String(k) => k.chars().count() as f64,
                    _ => 0.0,
                };
                deep = deep.max(s.deep).max(klen);
                total += s.total + 1.0;
            }
        }
        _ => {}
    }
    let shape = Shape {
        size,
        deep: deep.max(size),
        total,
    };
    memo.insert(key, shape);
    shape
}

/// A field of a CEL map, as `m.field` or `m['field']` reads it.
pub fn field<'v>(v: &'v Value, name: &str) -> Option<&'v Value> {
    match v {
        Value::Map(m) => m.map.get(&Key::String(Arc::new(name.to_string()))),
        _ => None,
    }
}

/// What an expression reads: the actual values of its variables at evaluation, or only
/// the shapes of `variables.*` known at load.
pub enum Inputs<'a> {
    /// At load: nothing is known of the request; variables have estimated shapes.
    Load(&'a BTreeMap<String, Shape>),
    /// At evaluation: the root variables (`object`, `request`, …) and each evaluated
    /// variable (as `variables.NAME`), as the interpreter holds them.
    Eval(&'a BTreeMap<String, Value>),
}

struct Est<'a> {
    cost: f64,
    shape: Shape,
    /// The value itself, when the expression is a path into an input.
    actual: Option<&'a Value>,
}

impl Est<'_> {
    /// The value's shape: measured on the value itself when it is known (only when
    /// asked, as most paths are only compared), else the estimate.
    fn shape(&self) -> Shape {
        self.actual.map_or(self.shape, shape_of)
    }

    fn sized(cost: f64, shape: Shape) -> Self {
        Est {
            cost,
            shape,
            actual: None,
        }
    }
}

/// The estimated cost of `expr` on `inputs`, with the shape of its result.
pub fn estimate(expr: &IdedExpr, inputs: &Inputs<'_>) -> (f64, Shape) {
    let mut e = Estimator {
        inputs,
        locals: Vec::new(),
    };
    let est = e.walk(expr);
    (est.cost, est.shape())
}

struct Estimator<'a, 'i> {
    inputs: &'a Inputs<'i>,
    locals: Vec<(String, Shape)>,
}

impl<'a, 'i: 'a> Estimator<'a, 'i> {
    fn walk(&mut self, e: &IdedExpr) -> Est<'a> {
        match &e.expr {
            Expr::Literal(LiteralValue::String(s)) => {
                Est::sized(0.0, Shape::of(s.inner().chars().count() as f64))
            }
            Expr::Literal(LiteralValue::Bytes(b)) => {
                Est::sized(0.0, Shape::of(b.inner().len() as f64))
            }
            Expr::Literal(_) | Expr::Unspecified => Est::sized(0.0, Shape::default()),
            Expr::Ident(name) => self.ident(name),
            Expr::Select(s) => {
                let operand = self.walk(&s.operand);
                if let Expr::Ident(root) = &s.operand.expr
                    && root == "variables"
                {
                    match self.inputs {
                        Inputs::Load(vars) => {
                            let shape = vars.get(&s.field).copied().unwrap_or_default();
                            return Est::sized(operand.cost + 1.0, shape);
                        }
                        Inputs::Eval(roots) => {
                            if let Some(v) = roots.get(&format!("variables.{}", s.field)) {
                                return Est {
                                    cost: operand.cost + 1.0,
                                    shape: Shape::default(),
                                    actual: Some(v),
                                };
                            }
                        }
                    }
                }
                let actual = operand.actual.and_then(|v| field(v, &s.field));
                Est {
                    cost: operand.cost + 1.0,
                    // A missing field of a known value is null.
                    shape: if operand.actual.is_some() {
                        Shape::default()
                    } else {
                        operand.shape.inner()
                    },
                    actual,
                }
            }
            Expr::List(l) => {
                let mut cost = 10.0;
                let mut deep: f64 = l.elements.len() as f64;
                let mut total = 1.0;
                for x in &l.elements {
                    let est = self.walk(x);
                    let shape = est.shape();
                    cost += est.cost;
                    deep = deep.max(shape.deep);
                    total += shape.total;
                }
                Est::sized(
                    cost,
                    Shape {
                        size: l.elements.len() as f64,
                        deep,
                        total,
                    },
                )
            }
            Expr::Map(m) => self.entries(&m.entries),
            Expr::Struct(s) => self.entries(&s.entries),
            Expr::Comprehension(c) => {
                let range = self.walk(&c.iter_range);
                let init = self.walk(&c.accu_init);
                let n = range.shape().size;
                let element = match range.actual {
                    Some(Value::List(a)) => {
                        let mut memo = HashMap::new();
                        a.iter()
                            .map(|x| shape_memo(x, &mut memo))
                            .fold(Shape::default(), Shape::max)
                    }
                    Some(Value::Map(m)) => m
                        .map
                        .keys()
                        .map(|k| match k {
                            Key::String(k) => Shape::of(k.chars().count() as f64),
                            _ => Shape::of(0.0),
                        })
                        .fold(Shape::default(), Shape::max),
                    _ => range.shape().inner(),
                };
                self.locals.push((c.iter_var.clone(), element));
                if let Some(v2) = &c.iter_var2 {
                    self.locals.push((v2.clone(), element));
                }
                // The accumulator of `map`/`filter` grows to the range; appending is cheap.
                self.locals
                    .push((c.accu_var.clone(), init.shape().max(Shape::of(0.0))));
                let cond = self.walk(&c.loop_cond);
                let step = self.walk(&c.loop_step);
                let result = self.walk(&c.result);
                self.locals
                    .truncate(self.locals.len() - 2 - usize::from(c.iter_var2.is_some()));
                let step_shape = step.shape();
                let shape = Shape {
                    size: n.max(result.shape().size),
                    deep: element.deep.max(n).max(step_shape.deep),
                    // `map`/`filter` collect up to one element per step.
                    total: (n * element.total.max(1.0)).max(step_shape.total) + 1.0,
                };
                Est::sized(
                    range.cost + init.cost + n * (cond.cost + step.cost + 1.0) + result.cost,
                    shape,
                )
            }
            Expr::Call(call) => self.call(&call.func_name, call.target.as_deref(), &call.args),
        }
    }

    fn entries(&mut self, entries: &[cel::common::ast::IdedEntryExpr]) -> Est<'a> {
        let mut cost = 30.0;
        let mut deep = entries.len() as f64;
        let mut total = 1.0;
        for entry in entries {
            let value = match &entry.expr {
                EntryExpr::MapEntry(m) => {
                    cost += self.walk(&m.key).cost;
                    &m.value
                }
                EntryExpr::StructField(f) => &f.value,
            };
            let est = self.walk(value);
            let shape = est.shape();
            cost += est.cost;
            deep = deep.max(shape.deep);
            total += shape.total + 1.0;
        }
        Est::sized(
            cost,
            Shape {
                size: entries.len() as f64,
                deep,
                total,
            },
        )
    }

    fn ident(&self, name: &str) -> Est<'a> {
        if let Some((_, shape)) = self.locals.iter().rev().find(|(n, _)| n == name) {
            return Est::sized(1.0, *shape);
        }
        match self.inputs {
            Inputs::Eval(roots) => Est {
                cost: 1.0,
                shape: Shape::default(),
                actual: roots.get(name),
            },
            Inputs::Load(_) => Est::sized(1.0, Shape::default()),
        }
    }

    fn call(&mut self, name: &str, target: Option<&IdedExpr>, raw: &[IdedExpr]) -> Est<'a> {
        let target = target.map(|t| self.walk(t));
        let args: Vec<Est<'a>> = raw.iter().map(|a| self.walk(a)).collect();
        let mut cost: f64 = 1.0 + target.as_ref().map_or(0.0, |t| t.cost);
        cost += args.iter().map(|a| a.cost).sum::<f64>();
        let recv = target.as_ref().map(|t| t.shape()).unwrap_or_default();
        let arg = |i: usize| args.get(i).map(|a| a.shape()).unwrap_or_default();
        let widest = args.iter().map(|a| a.shape()).fold(recv, Shape::max);
        // A tenth per character or element traversed, as cel-go charges strings.
        let traverse = |s: Shape| 0.1 * s.size;
        let shape = match name {
            operators::ADD => {
                let (l, r) = (arg(0), arg(1));
                cost += traverse(l) + traverse(r);
                Shape {
                    size: l.size + r.size,
                    deep: (l.size + r.size).max(l.deep).max(r.deep),
                    total: l.total + r.total,
                }
            }
            // Comparing walks the smaller side whole, shared parts as often as they
            // appear.
            operators::EQUALS | operators::NOT_EQUALS => {
                cost += traverse(arg(0))
                    .min(traverse(arg(1)))
                    .max(0.1 * arg(0).total.min(arg(1).total));
                Shape::default()
            }
            operators::IN => {
                cost += arg(1).size.max(0.1 * arg(1).total);
                Shape::default()
            }
            operators::CONDITIONAL => {
                // Only one branch runs; the condition and the dearer branch bound it.
                let (c, a, b) = (&args[0], &args[1], &args[2]);
                cost = 1.0 + c.cost + a.cost.max(b.cost);
                a.shape().max(b.shape())
            }
            operators::INDEX | operators::OPT_INDEX | operators::OPT_SELECT => {
                let on = &args[0];
                let actual = match (on.actual, raw.get(1).map(|k| &k.expr)) {
                    (Some(v), Some(Expr::Literal(LiteralValue::String(k)))) => field(v, k.inner()),
                    (Some(Value::List(l)), Some(Expr::Literal(LiteralValue::Int(i)))) => {
                        usize::try_from(*i.inner()).ok().and_then(|i| l.get(i))
                    }
                    _ => None,
                };
                return Est {
                    cost,
                    shape: if actual.is_some() {
                        Shape::default()
                    } else {
                        on.shape().inner()
                    },
                    actual,
                };
            }
            // An authorization check costs a fixed 350000 in place of a call's 1, so that
            // one expression makes at most two (k8s.io/apiserver pkg/cel/library/cost.go
            // `CallCost`, `EstimateCallCost`).
            "check" => {
                cost += 349_999.0;
                Shape::default()
            }
            "size" | "has" | "type" | "int" | "uint" | "double" | "bool" | "dyn" => {
                Shape::default()
            }
            "string" => arg(0).max(recv),
            "contains" | "startsWith" | "endsWith" | "matches" | "find" | "indexOf"
            | "lastIndexOf" => {
                cost += traverse(recv) + traverse(arg(0));
                Shape::of(recv.size)
            }
            "replace" => {
                cost += traverse(recv);
                // Every occurrence may grow by the replacement.
                let grown = recv.size * arg(1).size.max(1.0);
                Shape::of(grown)
            }
            "join" => {
                cost += traverse(Shape::of(recv.size * recv.deep.max(1.0)));
                Shape::of(recv.size * (recv.deep + arg(0).size))
            }
            "split" | "findAll" | "lowerAscii" | "upperAscii" | "trim" | "reverse"
            | "substring" | "charAt" | "format" | "quote" => {
                cost += traverse(recv.max(arg(0)));
                recv.max(arg(0))
            }
            "lists.range" => match raw.first().and_then(literal_int) {
                Some(n) => {
                    cost += n;
                    Shape::of(n)
                }
                None => Shape::default(),
            },
            "flatten" | "distinct" | "sort" | "slice" | "sortBy" => {
                cost += recv.deep;
                Shape::of(recv.deep)
            }
            _ => widest,
        };
        Est::sized(cost, shape)
    }
}

/// The integer a literal argument states (`lists.range(1000)`).
fn literal_int(a: &IdedExpr) -> Option<f64> {
    match &a.expr {
        Expr::Literal(LiteralValue::Int(n)) => Some(*n.inner() as f64),
        Expr::Literal(LiteralValue::UInt(n)) => Some(*n.inner() as f64),
        _ => None,
    }
}

/// The API server's message for an expression whose estimated cost exceeds the
/// per-expression limit.
pub fn exceeds_budget(cost: f64) -> String {
    let factor = cost / PER_CALL_LIMIT;
    let factor = if factor > 100.0 {
        "more than 100x".to_string()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "estimated rule cost exceeds budget by factor of {factor} (try simplifying the rule, or \
         adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

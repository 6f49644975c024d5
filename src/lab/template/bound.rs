//! A bound on the memory rendering a template can take, computed from its syntax tree
//! before it runs. Rendering is refused when the bound is over [`MAX_MEMORY`].
//!
//! Why the bound holds (tera 1.20, `renderer/processor.rs`, `call_stack.rs`,
//! `stack_frame.rs`, `for_loop.rs`): while a template renders, memory is held by
//! - the values of `set` variables: one per `set` the renderer has passed in the current
//!   frame. A loop's frame is emptied at every turn (`increment_for_loop` →
//!   `clear_context`) and dropped after the loop, and `set_global`, macros and `include`
//!   (the only ways to write outside the frame or to recurse) are refused. So a loop body
//!   holds at most what one turn of it sets, and the analysis walks each body once;
//! - the list a loop walks (plus, for a key–value loop, a copy of its keys);
//! - the text a `{% filter %}` section collects, which does grow with every turn;
//! - the text written out, which kca caps while it is written ([`super::MAX_OUTPUT`]);
//! - the values made while one expression is evaluated, freed when it is done.
//!
//! Each value gets a [`Val`]: a bound on its memory, on its text, on how many items a
//! loop over it can take, on any one item and on how deeply it nests. Literals and the
//! variables kca provides are measured; `~` adds its parts; a list adds its items; every
//! filter has a rule ([`super::filters`]); looking a variable up may copy it; a value built
//! piece by piece may hold three times its size while its buffer grows. What has no rule
//! (a filter, test or function kca does not know, `__tera_context`, macros) is refused.
//! The bound for a point of the template is what is held there plus what its expression
//! makes (with tera's bookkeeping per step, the error message it may write, the regular
//! expressions some filters compile once), and the largest over the whole template must
//! stay under [`MAX_MEMORY`]. `tests/template_memory.rs` checks the bound against the
//! bytes rendering really allocates.
//!
//! Not part of the bound: parsing, which takes memory in proportion to the template's
//! text, capped at [`super::MAX_TEMPLATE`]; nesting, which [`super::locate::check_nesting`]
//! limits before tera parses, so that its recursion fits a thread's stack. The analysis
//! also counts the bytes made or scanned over the whole run ([`MAX_WORK`]), so that a
//! template it accepts ends quickly; the timer stays as a backstop.

use std::collections::HashMap;

use tera::Context;
use tera::ast::{Expr, ExprVal, FunctionCall, Node};

use super::filters::{self, Arg};
use super::locate::Tags;
pub use super::val::Val;

/// The most memory (estimated as below) rendering one template may need at any time.
pub const MAX_MEMORY: u64 = 16 << 20;
/// Values may nest this deep (lists of lists …); tera copies and drops them recursively.
pub const MAX_DEPTH: u32 = 32;
/// Working memory of one filter or test call, as a multiple of its input: the copy tera
/// makes of it, its text in an error message, a per-character index (`truncate`).
const WORK: u64 = 32;
/// The most bytes rendering may make or scan in all (every turn of a loop counted), so
/// that it ends quickly; the timer ([`super::TIME_LIMIT`]) stays as a backstop.
pub const MAX_WORK: u64 = 1 << 30;
/// A text or list built piece by piece grows its buffer up to twice its length, and while
/// it grows holds the old buffer too: up to three times its size at the last step.
const GROWTH: u64 = 3;
/// Bookkeeping of one step (an expression, a call's argument map, a variable's entry in
/// its frame, a loop's frame), beyond the values themselves.
const STEP: u64 = 512;
/// An error message (and its chain) may quote the tag at fault, even as tera's debug
/// form of it: this many bytes per byte of the longest tag, plus a fixed part.
const ERROR_PER_BYTE: u64 = 32;
const ERROR_FIXED: u64 = 16 << 10;
/// Memory a regular expression (`matching`) may take to compile and run (kca's own
/// `matching` limits its size).
pub const REGEX_MEMORY: u64 = 2 << 20;

/// A refusal, placed at a tag once known.
pub struct Refusal {
    pub msg: String,
    placed: bool,
}

impl From<String> for Refusal {
    fn from(msg: String) -> Self {
        Refusal { msg, placed: false }
    }
}

impl From<&str> for Refusal {
    fn from(msg: &str) -> Self {
        msg.to_string().into()
    }
}

type Res<T> = Result<T, Refusal>;

/// What running a list of nodes once does, relative to the memory held before it.
#[derive(Default, Clone, Copy)]
struct Effect {
    /// Text it writes.
    out: u64,
    /// The most memory it needs at any time.
    peak: u64,
    /// Memory it leaves held (variables it sets).
    grow: u64,
}

/// What the analysis found for a template that may run.
#[derive(Debug)]
pub struct Bounds {
    /// The most memory rendering needs at any time, in bytes.
    pub memory: u64,
}

pub struct Analysis<'a> {
    ctx: &'a Context,
    tags: Tags<'a>,
    scopes: Vec<HashMap<String, Val>>,
    /// Memory held by enclosing loops and variables, at the start of the current list.
    base: u64,
    iterations: u64,
    memory: u64,
    work: u64,
    /// tera's filters that compile a regular expression of their own on first use (once
    /// per process): `title`, `striptags`, `spaceless`, as bits.
    lazy_regex: std::cell::Cell<u8>,
}

/// Bounds rendering `ast` (the tree of `text`) with `ctx`, or says what is refused.
pub fn analyse(text: &str, ast: &[Node], ctx: &Context) -> Result<Bounds, String> {
    let mut a = Analysis {
        ctx,
        tags: Tags::new(text, ast),
        scopes: vec![HashMap::new()],
        base: 0,
        iterations: 0,
        memory: 0,
        work: 0,
        lazy_regex: std::cell::Cell::new(0),
    };
    let e = a.nodes(ast, 1).map_err(|r| r.msg)?;
    let error = ERROR_FIXED + ERROR_PER_BYTE * a.tags.longest() as u64;
    let regexes = REGEX_MEMORY * a.lazy_regex.get().count_ones() as u64;
    // The text written out, in its buffer (capped while it is written).
    let output = GROWTH * e.out.min(super::MAX_OUTPUT as u64);
    let memory = a.memory.max(e.peak) + error + regexes + output;
    if memory > MAX_MEMORY {
        return Err(memory_error(memory));
    }
    Ok(Bounds { memory })
}

impl Analysis<'_> {
    fn nodes(&mut self, nodes: &[Node], times: u64) -> Res<Effect> {
        let mut e = Effect::default();
        for node in nodes {
            let n = self.node(node, times).map_err(|r| self.place(r, node))?;
            e.peak = e.peak.max(e.grow.saturating_add(n.peak));
            e.grow = e.grow.saturating_add(n.grow);
            e.out = e.out.saturating_add(n.out);
            let held = self.base.saturating_add(e.peak);
            self.memory = self.memory.max(held);
            if held > MAX_MEMORY {
                return Err(self.place(memory_error(held).into(), node));
            }
        }
        Ok(e)
    }

    /// Counts `bytes` made or scanned, `times` over.
    fn spend(&mut self, times: u64, bytes: u64) -> Res<()> {
        self.work = self.work.saturating_add(times.saturating_mul(bytes));
        if self.work > MAX_WORK {
            return Err(format!(
                "rendering may make or scan {} of values in all; a template may use at most \
                 {} GiB (a loop repeats what its body does; a loop over a text steps through \
                 it again at every turn): loop over shorter lists",
                human(self.work),
                MAX_WORK >> 30
            )
            .into());
        }
        Ok(())
    }

    fn place<T>(&self, r: Refusal, key: &T) -> Refusal {
        if r.placed {
            return r;
        }
        let at = self.tags.describe(key, "");
        Refusal {
            msg: if at.is_empty() {
                r.msg
            } else {
                format!("{at}: {}", r.msg)
            },
            placed: !at.is_empty(),
        }
    }

    fn node(&mut self, node: &Node, times: u64) -> Res<Effect> {
        Ok(match node {
            Node::Text(s) | Node::Raw(_, s, _) => Effect {
                out: s.len() as u64,
                ..Effect::default()
            },
            Node::Comment(..) | Node::Break(_) | Node::Continue(_) | Node::Super => {
                Effect::default()
            }
            Node::VariableBlock(_, e) => {
                let (v, t) = self.expr(e)?;
                self.spend(times, t)?;
                Effect {
                    out: v.text,
                    peak: t,
                    grow: 0,
                }
            }
            Node::Set(_, set) if set.global => {
                return Err("`set_global` is not available in starters; use `set`".into());
            }
            Node::Set(_, set) => {
                let (v, t) = self.expr(&set.value)?;
                self.spend(times, t)?;
                if v.depth > MAX_DEPTH {
                    return Err(format!(
                        "`{}` may nest lists more than {MAX_DEPTH} deep; a starter needs \
                         no deeper values",
                        set.key
                    )
                    .into());
                }
                self.scopes
                    .last_mut()
                    .expect("a scope")
                    .insert(set.key.clone(), v);
                Effect {
                    out: 0,
                    peak: t,
                    grow: v.size.saturating_add(STEP),
                }
            }
            Node::Forloop(_, f, _) => self.for_loop(f, times)?,
            Node::If(i, _) => {
                let mut branches: Vec<&[Node]> = Vec::new();
                let mut peak = 0u64;
                for (_, cond, body) in &i.conditions {
                    let (_, t) = self.expr(cond).map_err(|r| self.place(r, cond))?;
                    self.spend(times, t).map_err(|r| self.place(r, cond))?;
                    peak = peak.max(t);
                    branches.push(body);
                }
                branches.push(i.otherwise.as_ref().map_or(&[][..], |(_, b)| b));
                let e = self.branches(&branches, times)?;
                Effect {
                    peak: peak.max(e.peak),
                    ..e
                }
            }
            Node::FilterSection(_, f, _) => {
                let body = self.nodes(&f.body, times)?;
                let input = Val::string(body.out);
                let (v, t) = self.filter(input, &f.filter)?;
                self.spend(times, t.saturating_add(body.out))?;
                Effect {
                    out: v.text,
                    // The section collects the body's text, then filters it.
                    peak: (body.peak.saturating_add(body.out.saturating_mul(GROWTH)))
                        .max(body.grow.saturating_add(input.size).saturating_add(t)),
                    grow: body.grow,
                }
            }
            Node::Block(_, b, _) => self.nodes(&b.body, times)?,
            Node::MacroDefinition(..) => {
                return Err("macros are not available in starters".into());
            }
            Node::Extends(..) | Node::Include(..) | Node::ImportMacro(..) => {
                return Err(
                    "`extends`, `include` and `import` are not available in starters".into(),
                );
            }
        })
    }

    /// Exactly one of `branches` runs, in the current frame: each starts from the
    /// variables as they are (its own sets go to a scope of its own, so nothing is copied),
    /// and afterwards a variable is as large as any branch, or the time before, left it.
    fn branches(&mut self, branches: &[&[Node]], times: u64) -> Res<Effect> {
        let mut sets: HashMap<String, Val> = HashMap::new();
        let mut out = Effect::default();
        for body in branches {
            self.scopes.push(HashMap::new());
            let e = self.nodes(body, times);
            let own = self.scopes.pop().expect("a scope");
            let e = e?;
            out.peak = out.peak.max(e.peak);
            out.grow = out.grow.max(e.grow);
            out.out = out.out.max(e.out);
            for (k, v) in own {
                let joined = sets.get(&k).map_or(v, |w| Val::max(v, *w));
                sets.insert(k, joined);
            }
        }
        for (k, v) in sets {
            let v = self.lookup(&k).map_or(v, |before| Val::max(v, before));
            self.scopes.last_mut().expect("a scope").insert(k, v);
        }
        Ok(out)
    }

    fn for_loop(&mut self, f: &tera::ast::Forloop, times: u64) -> Res<Effect> {
        let (list, t) = self.expr(&f.container)?;
        let turns = self.turns(&f.container, list);
        let all = times.saturating_mul(turns);
        self.iterations = self.iterations.saturating_add(all);
        if all > super::MAX_ITERATIONS || self.iterations > super::MAX_ITERATIONS {
            return Err(super::loop_error(self.iterations.max(all)).into());
        }
        // tera finds the n-th character of a text from its start at every turn.
        self.spend(times, t)?;
        let scan = if list.textual { list.text } else { 0 };
        self.spend(all, scan.saturating_add(STEP))?;
        // The list, and for a key–value loop a copy of its keys and values' handles.
        let held = list.size.saturating_mul(2).saturating_add(STEP);
        let mut scope = HashMap::new();
        scope.insert(f.value.clone(), list.element());
        if let Some(k) = &f.key {
            scope.insert(k.clone(), Val::string(list.size));
        }
        scope.insert("loop".to_string(), Val::number());
        self.scopes.push(scope);
        self.base = self.base.saturating_add(held);
        let body = self.nodes(&f.body, all);
        self.base -= held;
        self.scopes.pop();
        let body = body?;
        // With nothing to walk, the `else` body runs in the current frame instead.
        let empty = self.branches(&[&[], f.empty_body.as_deref().unwrap_or(&[])], times)?;
        Ok(Effect {
            out: body.out.saturating_mul(turns).max(empty.out),
            peak: t.max(held.saturating_add(body.peak)).max(empty.peak),
            grow: empty.grow,
        })
    }

    /// How many times a loop over `container` can turn.
    fn turns(&self, container: &Expr, list: Val) -> u64 {
        if let ExprVal::FunctionCall(call) = &container.val
            && call.name == "range"
            && container.filters.is_empty()
        {
            return range_count(call);
        }
        list.len
    }

    fn lookup(&self, root: &str) -> Option<Val> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.get(root).copied())
            .or_else(|| self.ctx.get(root).map(Val::of))
    }

    /// A variable read: `a`, `a.b`, `a[b]`. Reading copies the value.
    fn ident(&self, name: &str) -> Res<(Option<Val>, u64)> {
        if name.starts_with("__tera_context") {
            return Err("`__tera_context` is not available in starters".into());
        }
        let root = name.split(['.', '[']).next().unwrap_or(name);
        let v = self.lookup(root);
        let mut t = v.map_or(0, |v| v.size);
        // `a[b]`: tera looks `b` up and rewrites the name with its text, several times.
        for inner in name.split('[').skip(1) {
            let inner = inner.split(']').next().unwrap_or("");
            if inner.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
                let (sub, st) = self.ident(inner)?;
                let sub_text = sub.map_or(0, |s| s.text);
                t = t
                    .saturating_add(st)
                    .saturating_add(sub_text.saturating_add(name.len() as u64) * 8);
            }
        }
        Ok((v, t))
    }

    /// Bounds on an expression's value, and the memory its evaluation needs.
    fn expr(&self, e: &Expr) -> Res<(Val, u64)> {
        let (mut v, mut t) = match &e.val {
            ExprVal::String(s) => {
                let v = Val::string(s.len() as u64);
                (v, v.size)
            }
            ExprVal::Int(i) => (
                Val {
                    text: i.to_string().len() as u64,
                    ..Val::number()
                },
                Val::NODE,
            ),
            ExprVal::Float(_) | ExprVal::Math(_) => {
                if let ExprVal::Math(m) = &e.val {
                    let (_, tl) = self.number_operand(&m.lhs)?;
                    let (_, tr) = self.number_operand(&m.rhs)?;
                    (Val::number(), tl.saturating_add(tr))
                } else {
                    (Val::number(), Val::NODE)
                }
            }
            ExprVal::Bool(_) => (Val::small(), Val::NODE),
            ExprVal::Ident(name) => {
                let (found, t) = self.ident(name)?;
                match (found, e.filters.first()) {
                    (found, Some(f)) if f.name == "default" => {
                        let (d, td) = match f.args.get("value") {
                            Some(d) => self.expr(d)?,
                            None => (Val::small(), 0),
                        };
                        let v = found.map_or(d, |v| Val::max(v, d));
                        (v, t.saturating_add(td))
                    }
                    (found, _) => (found.unwrap_or(Val::small()), t),
                }
            }
            ExprVal::Logic(l) => {
                let (_, tl) = self.expr(&l.lhs)?;
                let (_, tr) = self.expr(&l.rhs)?;
                (Val::small(), tl.saturating_add(tr))
            }
            ExprVal::In(i) => {
                let (lhs, tl) = self.expr(&i.lhs)?;
                let (_, tr) = self.expr(&i.rhs)?;
                // A mismatch writes the needle into the error message.
                let t = tl
                    .saturating_add(tr)
                    .saturating_add(lhs.size.saturating_mul(8));
                (Val::small(), t)
            }
            ExprVal::Test(test) => (Val::small(), self.test(test)?),
            ExprVal::MacroCall(_) => return Err("macros are not available in starters".into()),
            ExprVal::FunctionCall(call) => self.call(call)?,
            ExprVal::Array(items) => {
                let mut v = Val::list(Val::NODE, 2, items.len() as u64, 1, 0);
                let mut t = 0u64;
                for item in items {
                    let (i, ti) = self.expr(item)?;
                    v.size = v.size.saturating_add(i.size).saturating_add(Val::ITEM);
                    v.text = v.text.saturating_add(i.text).saturating_add(2);
                    v.depth = v.depth.max(i.depth.saturating_add(1));
                    v.item = v.item.max(i.size);
                    // Each item is copied into the list.
                    t = t.saturating_add(ti).saturating_add(i.size);
                }
                check_depth(v, "a list")?;
                (v, t.saturating_add(v.size.saturating_mul(GROWTH)))
            }
            ExprVal::StringConcat(c) => {
                let mut text = 0u64;
                let mut t = 0u64;
                for part in &c.values {
                    let (p, tp) = self.expr(&Expr::new(part.clone()))?;
                    text = text.saturating_add(p.text);
                    t = t.saturating_add(tp);
                }
                let v = Val::string(text);
                (v, t.saturating_add(v.size.saturating_mul(GROWTH)))
            }
        };
        for f in &e.filters {
            if f.name == "default" || f.name == "safe" {
                continue;
            }
            let (out, tf) = self.filter(v, f)?;
            t = t.saturating_add(tf);
            v = out;
        }
        if e.negated {
            v = Val::small();
        }
        Ok((v, t.saturating_add(STEP)))
    }

    /// An operand of `+ - * / %`. tera's arithmetic panics on a list, a condition or an
    /// `in` (`unreachable!` in `eval_as_number`): refused here instead.
    fn number_operand(&self, e: &Expr) -> Res<(Val, u64)> {
        if e.filters.is_empty()
            && matches!(
                e.val,
                ExprVal::Array(_) | ExprVal::In(_) | ExprVal::Logic(_) | ExprVal::MacroCall(_)
            )
        {
            return Err("arithmetic (`+ - * / %`) works on numbers only".into());
        }
        self.expr(e)
    }

    fn args<'e>(&self, call: &'e FunctionCall) -> Res<(HashMap<&'e str, Arg<'e>>, u64)> {
        let mut args = HashMap::new();
        let mut t = 0u64;
        for (k, e) in &call.args {
            let (val, te) = self.expr(e)?;
            // tera copies each argument before the call.
            t = t.saturating_add(te).saturating_add(val.size);
            args.insert(k.as_str(), Arg { val, expr: e });
        }
        Ok((args, t))
    }

    fn filter(&self, input: Val, f: &FunctionCall) -> Res<(Val, u64)> {
        let (args, ta) = self.args(f)?;
        let out = filters::result(&f.name, input, &args)?;
        if let Some(bit) = ["title", "striptags", "spaceless"]
            .iter()
            .position(|n| *n == f.name)
        {
            self.lazy_regex.set(self.lazy_regex.get() | 1 << bit);
        }
        check_depth(out, &f.name)?;
        let inputs = args
            .values()
            .fold(input.size, |s, a| s.saturating_add(a.val.size));
        let t = ta
            .saturating_add(inputs.saturating_mul(WORK))
            .saturating_add(out.size.saturating_mul(GROWTH))
            .saturating_add(STEP);
        Ok((out, t))
    }

    fn call(&self, call: &FunctionCall) -> Res<(Val, u64)> {
        let (args, ta) = self.args(call)?;
        let v = match call.name.as_str() {
            "range" => {
                let n = range_count(call).min(super::MAX_RANGE as u64);
                Val::list(
                    Val::NODE.saturating_add(n.saturating_mul(Val::ITEM + Val::NODE)),
                    n.saturating_mul(22).saturating_add(2),
                    n,
                    1,
                    Val::NODE,
                )
            }
            "throw" => Val::small(),
            "get_env" => return Err(super::NO_ENV.into()),
            "get_random" => return Err(super::NO_RANDOM.into()),
            other => {
                return Err(format!(
                    "function `{other}` is not available in starters (only `range`)"
                )
                .into());
            }
        };
        let _ = args;
        Ok((v, ta.saturating_add(v.size).saturating_add(STEP)))
    }

    /// `x is name(args)`: tera copies `x` and each argument.
    fn test(&self, test: &tera::ast::Test) -> Res<u64> {
        const TESTS: &[&str] = &[
            "defined",
            "undefined",
            "odd",
            "even",
            "string",
            "number",
            "divisibleby",
            "iterable",
            "object",
            "starting_with",
            "ending_with",
            "containing",
            "matching",
        ];
        if !TESTS.contains(&test.name.as_str()) {
            return Err(format!(
                "test `{}` is not available in starters (known: {})",
                test.name,
                TESTS.join(", ")
            )
            .into());
        }
        let (found, mut t) = self.ident(&test.ident)?;
        t = t
            .saturating_add(found.map_or(0, |v| v.size.saturating_mul(2)))
            .saturating_add(STEP);
        for a in &test.args {
            let (v, ta) = self.expr(a)?;
            t = t
                .saturating_add(ta)
                .saturating_add(v.size.saturating_mul(2));
            if test.name == "matching" {
                t = t
                    .saturating_add(REGEX_MEMORY)
                    .saturating_add(v.text.saturating_mul(WORK));
            }
        }
        Ok(t)
    }
}

/// How many numbers `range(...)` asks for: exact for literal arguments, else kca's limit
/// (`range` itself refuses more than that).
pub fn range_count(call: &FunctionCall) -> u64 {
    let lit = |k: &str| match call.args.get(k).map(|e| (&e.val, e.filters.is_empty())) {
        Some((ExprVal::Int(i), true)) => Some(*i),
        _ => None,
    };
    let start = if call.args.contains_key("start") {
        lit("start")
    } else {
        Some(0)
    };
    let step = if call.args.contains_key("step_by") {
        lit("step_by")
    } else {
        Some(1)
    };
    match (start, lit("end"), step) {
        (Some(s), Some(e), Some(st)) if st > 0 => {
            (e.saturating_sub(s).max(0) as u64).div_ceil(st as u64)
        }
        _ => super::MAX_RANGE as u64,
    }
}

fn check_depth(v: Val, what: &str) -> Res<()> {
    if v.depth > MAX_DEPTH {
        return Err(format!(
            "`{what}` may nest lists more than {MAX_DEPTH} deep; a starter needs no deeper \
             values"
        )
        .into());
    }
    Ok(())
}

fn memory_error(bytes: u64) -> String {
    format!(
        "rendering may need {} of memory; a template may use at most {} MiB (each `~` \
         adds its parts, a list adds its items, a filter such as `replace` or `indent` can \
         multiply a text, a loop holds its list): build long text from shorter pieces in \
         the lab's `vars`, or write it into the file as is",
        human(bytes),
        MAX_MEMORY >> 20
    )
}

fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("more than {} GiB", b >> 30),
        b if b >= 1 << 20 => format!("about {} MiB", b >> 20),
        b => format!("about {} KiB", b >> 10),
    }
}

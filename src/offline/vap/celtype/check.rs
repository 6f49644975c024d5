//! cel-go's type checker (v0.26.0, which k8s.io/apiserver v0.36.3 pins:
//! `checker/checker.go`) over the `cel` crate's AST, for the constructs and functions kca
//! models ([`super::decls`]), and the validators the API server adds after it. Anything
//! else stops the check with
//! [`Stop::Unknown`]: a finding is only reported when the whole expression was checked.
//! Errors are located as cel-go's parser places node ids (an operator's token, a call's
//! `(`, a selection's `.`), which the `cel` crate's ANTLR parser records alike.

use std::collections::HashMap;
use std::rc::Rc;

use cel::common::ast::{ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue, operators};

use super::decls::overloads;
use super::schema::{self, Lookup};
use super::types::{
    Fields, Mapping, Ty, assignable, assignable_list, format, most_general, substitute,
};

/// Why the check stopped without a verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Stop {
    Unknown(String),
}

type Res<T> = Result<T, Stop>;

fn unknown<T>(why: impl Into<String>) -> Res<T> {
    Err(Stop::Unknown(why.into()))
}

/// Most AST nodes checked in one expression.
const MAX_NODES: usize = 10_000;
/// Deepest AST nesting followed.
const MAX_DEPTH: usize = 200;

/// One error: its source offset (code points) and message.
#[derive(Debug, Clone)]
pub(super) struct Found {
    pub offset: u32,
    pub message: String,
}

pub(super) struct Checker<'a> {
    vars: &'a HashMap<&'static str, Ty>,
    offsets: &'a dyn Fn(u64) -> Option<u32>,
    scopes: Vec<(String, Ty)>,
    mapping: Mapping,
    next_param: u32,
    nodes: usize,
    /// Ids of the nodes a macro made (their errors have no place kca can vouch for).
    generated: Vec<u64>,
    pub errors: Vec<Found>,
    /// Whether only the presence of errors matters, not their text or place (a variable's
    /// check: one with errors is `dyn`, and its errors are reported nowhere).
    pub presence_only: bool,
    /// The list and map literals met outside a `format` call, for the validators
    /// (`cel.ValidateHomogeneousAggregateLiterals`): each group's (node id, type).
    pub literals: Vec<Literal>,
    /// The string literals `matches` takes first (`cel.ValidateRegexLiterals`), by node id.
    pub patterns: Vec<(u64, String)>,
    in_format: usize,
}

/// One aggregate literal's element types: a list's elements (checked up to the first
/// mismatch), or a map's keys and values (each entry checked).
pub(super) enum Literal {
    List(Vec<(u64, Ty)>),
    Map(Vec<(u64, Ty)>, Vec<(u64, Ty)>),
}

impl<'a> Checker<'a> {
    pub fn new(
        vars: &'a HashMap<&'static str, Ty>,
        offsets: &'a dyn Fn(u64) -> Option<u32>,
    ) -> Self {
        Checker {
            vars,
            offsets,
            scopes: Vec::new(),
            mapping: Mapping::default(),
            next_param: 0,
            nodes: 0,
            generated: Vec::new(),
            errors: Vec::new(),
            presence_only: false,
            literals: Vec::new(),
            patterns: Vec::new(),
            in_format: 0,
        }
    }

    /// The expression's type with parameters resolved (`ast.OutputType`).
    pub fn output(&self, t: &Ty) -> Ty {
        substitute(&self.mapping, t, true)
    }

    fn report(&mut self, id: u64, message: String) -> Res<()> {
        let offset = if self.generated.contains(&id) {
            None
        } else {
            (self.offsets)(id)
        };
        let offset = match offset {
            Some(o) => o,
            None if self.presence_only => 0,
            None if self.generated.contains(&id) => {
                return unknown("a type error inside a macro's expansion");
            }
            None => return unknown("an error without a source position"),
        };
        self.errors.push(Found { offset, message });
        Ok(())
    }

    /// `FormatCELType` of `t` as cel-go has it at the error: with the parameters bound so far
    /// substituted, and the unbound ones made `dyn` when `to_dyn` (only `noMatchingOverload`
    /// does so). A parameter left is printed by cel-go under its generated name: unknown.
    fn printed(&self, t: &Ty, to_dyn: bool) -> Res<String> {
        let t = if to_dyn {
            substitute(&self.mapping, t, true)
        } else {
            t.clone()
        };
        match format(&t) {
            Some(s) if !t.has_param() => Ok(s),
            _ if self.presence_only => Ok("?".into()),
            _ => unknown("a type error naming a type kca cannot print as cel-go does"),
        }
    }

    fn fresh(&mut self) -> Ty {
        self.next_param += 1;
        Ty::Param(self.next_param)
    }

    pub fn check(&mut self, e: &IdedExpr, depth: usize) -> Res<Ty> {
        self.nodes += 1;
        if self.nodes > MAX_NODES || depth > MAX_DEPTH {
            return unknown("the expression is larger than kca type-checks");
        }
        let t = match &e.expr {
            Expr::Literal(l) => match l {
                LiteralValue::Boolean(_) => Ty::Bool,
                LiteralValue::Bytes(_) => Ty::Bytes,
                LiteralValue::Double(_) => Ty::Double,
                LiteralValue::Int(_) => Ty::Int,
                LiteralValue::UInt(_) => Ty::Uint,
                LiteralValue::Null => Ty::Null,
                LiteralValue::String(_) => Ty::Str,
            },
            Expr::Ident(name) => self.ident(name)?,
            Expr::Select(sel) => {
                let operand = self.check(&sel.operand, depth + 1)?;
                let t = self.select_field(e.id, &operand, &sel.field, false)?;
                if sel.test {
                    Ty::Bool
                } else {
                    substitute(&self.mapping, &t, false)
                }
            }
            Expr::Call(call) => self.call(e.id, call, depth)?,
            Expr::List(list) => {
                let mut elems: Option<Ty> = None;
                let mut seen = Vec::with_capacity(list.elements.len());
                for (i, el) in list.elements.iter().enumerate() {
                    let mut t = self.check(el, depth + 1)?;
                    if list.optional_indices.contains(&i) {
                        t = self.unwrap_optional_entry(el.id, t)?;
                    }
                    seen.push((el.id, t.clone()));
                    elems = Some(self.join(elems, t));
                }
                if self.in_format == 0 {
                    self.literals.push(Literal::List(seen));
                }
                let elems = match elems {
                    Some(t) => t,
                    None => self.fresh(),
                };
                Ty::list(elems)
            }
            Expr::Map(map) => {
                let (mut keys, mut values): (Option<Ty>, Option<Ty>) = (None, None);
                let (mut seen_keys, mut seen_values) = (Vec::new(), Vec::new());
                for entry in &map.entries {
                    let EntryExpr::MapEntry(m) = &entry.expr else {
                        return unknown("a struct field in a map literal");
                    };
                    let k = self.check(&m.key, depth + 1)?;
                    seen_keys.push((m.key.id, k.clone()));
                    keys = Some(self.join(keys, k));
                    let mut v = self.check(&m.value, depth + 1)?;
                    if m.optional {
                        v = self.unwrap_optional_entry(m.value.id, v)?;
                    }
                    seen_values.push((m.value.id, v.clone()));
                    values = Some(self.join(values, v));
                }
                if self.in_format == 0 {
                    self.literals.push(Literal::Map(seen_keys, seen_values));
                }
                let k = match keys {
                    Some(t) => t,
                    None => self.fresh(),
                };
                let v = match values {
                    Some(t) => t,
                    None => self.fresh(),
                };
                Ty::map(k, v)
            }
            Expr::Comprehension(c) => self.comprehension(c, depth)?,
            Expr::Struct(_) => return unknown("message construction"),
            Expr::Unspecified => return unknown("an unparsed expression"),
        };
        if t.unsure() {
            return unknown("a field whose type kca does not know as the API server does");
        }
        Ok(t)
    }

    /// An optional element `[?e]` or entry `{?k: e}`: `e` must be optional (or `dyn`); the
    /// literal holds what it wraps (`checkCreateList`, `checkCreateMap`).
    fn unwrap_optional_entry(&mut self, id: u64, t: Ty) -> Res<Ty> {
        match t {
            Ty::Opt(inner) => Ok(*inner),
            Ty::Dyn => Ok(Ty::Dyn),
            other => {
                let want = self.printed(&Ty::opt(other.clone()), false)?;
                let found = self.printed(&other, false)?;
                self.report(id, format!("expected type '{want}' but found '{found}'"))?;
                Ok(other)
            }
        }
    }

    /// `joinTypes` with aggregate literals of mixed types made `dyn` (cel-go's default).
    fn join(&mut self, previous: Option<Ty>, current: Ty) -> Ty {
        let Some(previous) = previous else {
            return current;
        };
        match assignable(&self.mapping, &previous, &current) {
            Some(m) => {
                self.mapping = m;
                most_general(&previous, &current)
            }
            None => Ty::Dyn,
        }
    }

    fn ident(&mut self, name: &str) -> Res<Ty> {
        if let Some((_, t)) = self.scopes.iter().rev().find(|(n, _)| n == name) {
            return Ok(t.clone());
        }
        match self.vars.get(name) {
            Some(Ty::Unsure) => unknown(format!("the type of `{name}`")),
            Some(t) => Ok(t.clone()),
            None => unknown(format!("the identifier `{name}`")),
        }
    }

    /// `checkSelectField`: an optional operand is looked into, and the result of a selection
    /// on one, or of `.?`, is optional.
    fn select_field(&mut self, id: u64, operand: &Ty, field: &str, optional: bool) -> Res<Ty> {
        let mut target = substitute(&self.mapping, operand, false);
        let mut was_optional = false;
        if let Ty::Opt(inner) = target {
            target = *inner;
            was_optional = true;
        }
        let t = self.select_plain(id, &target, field)?;
        Ok(if was_optional || optional {
            Ty::opt(t)
        } else {
            t
        })
    }

    fn select_plain(&mut self, id: u64, target: &Ty, field: &str) -> Res<Ty> {
        Ok(match target {
            Ty::Map(_, v) => (**v).clone(),
            Ty::Struct(s) => match &s.fields {
                Fields::Fixed(f) => match f.iter().find(|(n, _)| *n == field) {
                    Some((_, t)) => t.clone(),
                    None => {
                        self.report(id, format!("undefined field '{field}'"))?;
                        Ty::Error
                    }
                },
                Fields::Named(f) => match f.iter().find(|(n, _)| n == field) {
                    Some((_, t)) if t.unsure() => {
                        return unknown(format!("the type of variables.{field}"));
                    }
                    Some((_, t)) => t.clone(),
                    // `kubernetes.variables` has a field per variable compiled so far
                    // (`compositionState.AddField`).
                    None => {
                        self.report(id, format!("undefined field '{field}'"))?;
                        Ty::Error
                    }
                },
                Fields::Schema(node) => match schema::field(node, &s.id, field) {
                    Lookup::Found(t) if t.unsure() => {
                        return unknown(format!("the schema of the field `{field}`"));
                    }
                    Lookup::Found(t) => t,
                    Lookup::Missing => {
                        self.report(id, format!("undefined field '{field}'"))?;
                        Ty::Error
                    }
                },
            },
            Ty::Param(_) => {
                if let Some(m) = assignable(&self.mapping, &Ty::Dyn, target) {
                    self.mapping = m;
                }
                Ty::Dyn
            }
            Ty::Dyn | Ty::Error => Ty::Dyn,
            // The authorizer's types are object types (`cel.ObjectType`) no provider
            // describes: cel-go's text for a field of one is not modelled.
            Ty::Opaque(name) => return unknown(format!("a field of `{name}`")),
            other => {
                let name = self.printed(other, false)?;
                self.report(
                    id,
                    format!("type '{name}' does not support field selection"),
                )?;
                Ty::Dyn
            }
        })
    }

    fn call(&mut self, id: u64, call: &cel::common::ast::CallExpr, depth: usize) -> Res<Ty> {
        let name = call.func_name.clone();
        if name == operators::OPT_SELECT {
            return self.opt_select(id, call, depth);
        }
        // Literals anywhere under `format` are exempt from the homogeneity check (the
        // strings library configures it so, `ext/formatting_v2.go`).
        let format = name == "format";
        self.in_format += usize::from(format);
        let t = self.call_inner(id, call, name.clone(), depth);
        self.in_format -= usize::from(format);
        if name == "matches"
            && let Some(first) = call.args.first()
            && let Expr::Literal(l) = &first.expr
        {
            // Another literal fails the type check first, and the validators do not run.
            if let LiteralValue::String(p) = l {
                self.patterns.push((first.id, p.to_string()));
            }
        }
        t
    }

    fn call_inner(
        &mut self,
        id: u64,
        call: &cel::common::ast::CallExpr,
        mut name: String,
        depth: usize,
    ) -> Res<Ty> {
        let mut arg_types = Vec::with_capacity(call.args.len() + 1);
        for a in &call.args {
            arg_types.push(self.check(a, depth + 1)?);
        }
        let mut member = call.target.is_some();
        if let Some(t) = &call.target {
            // `a.b.f()` names the function `a.b.f` when one is declared (`checkCall`):
            // kca knows `optional.of` and its kin; any other one (`strings.quote`,
            // `sets.contains`, …) may exist unless the root is a variable.
            let qualified = qualified_name(&t.expr, 0);
            let namespaced = qualified.as_ref().map(|q| format!("{q}.{name}"));
            if let Some(n) = namespaced.filter(|n| overloads(n).is_some()) {
                name = n;
                member = false;
            } else {
                if let Some(q) = &qualified {
                    let root = q.split('.').next().unwrap_or_default();
                    if !self.scopes.iter().any(|(n, _)| n == root) && !self.vars.contains_key(root)
                    {
                        return unknown(format!("the call `{q}.{name}`"));
                    }
                }
                let tt = self.check(t, depth + 1)?;
                arg_types.insert(0, tt);
            }
        }
        let name = name.as_str();
        if !member && (name == operators::LOGICAL_AND || name == operators::LOGICAL_OR) {
            return self.logical(call, &arg_types);
        }
        let Some((decls, complete)) = overloads(name) else {
            return unknown(format!("the function `{name}`"));
        };
        let mut result: Option<Ty> = None;
        for o in decls.iter().filter(|o| o.member == member) {
            // Fresh parameters for this overload.
            let a = self.fresh();
            let b = self.fresh();
            let inst = |t: &Ty| instantiate(t, &a, &b);
            let params: Vec<Ty> = o.args.iter().map(inst).collect();
            if let Some(m) = assignable_list(&self.mapping, &arg_types, &params) {
                self.mapping = m;
                let r = substitute(&self.mapping, &inst(&o.result), false);
                result = Some(match result {
                    None => r,
                    Some(prev) if !matches!(prev, Ty::Dyn) && !r.exact(&prev) => Ty::Dyn,
                    Some(prev) => prev,
                });
            }
        }
        match result {
            Some(t) => Ok(t),
            None => {
                if !complete {
                    return unknown(format!("the overloads of `{name}`"));
                }
                let mut printed = Vec::with_capacity(arg_types.len());
                for t in &arg_types {
                    printed.push(self.printed(t, true)?);
                }
                let signature = if member {
                    format!("{}.({})", printed[0], printed[1..].join(", "))
                } else {
                    format!("({})", printed.join(", "))
                };
                self.report(
                    id,
                    format!("found no matching overload for '{name}' applied to '{signature}'"),
                )?;
                Ok(Ty::Error)
            }
        }
    }

    /// The validators the API server's environment runs once the expression checks
    /// (`cel/validator.go`; `pkg/cel/environment/base.go` adds them from 1.29): mixed
    /// aggregate literals are errors, and so are invalid regex literals, which kca
    /// cannot decide as Go's `regexp` does unless [`super::regex::surely_valid`] is sure.
    pub fn validate(&mut self) -> Res<()> {
        for (_, p) in &self.patterns {
            if !super::regex::surely_valid(p) {
                return unknown("a regex literal Go's regexp may refuse");
            }
        }
        let literals = std::mem::take(&mut self.literals);
        for lit in &literals {
            match lit {
                Literal::List(elems) => self.homogeneous(elems, true)?,
                Literal::Map(keys, values) => {
                    self.homogeneous(keys, false)?;
                    self.homogeneous(values, false)?;
                }
            }
        }
        Ok(())
    }

    /// `homogeneousAggregateLiteralValidator`: each type against the first, by
    /// `IsEquivalentType` of the final (`dyn`-substituted) types.
    fn homogeneous(&mut self, group: &[(u64, Ty)], stop_at_first: bool) -> Res<()> {
        let Some((_, first)) = group.first() else {
            return Ok(());
        };
        let first = substitute(&self.mapping, first, true);
        for (id, t) in &group[1..] {
            let t = substitute(&self.mapping, t, true);
            if !t.exact(&first) {
                let want = self.printed(&first, false)?;
                let found = self.printed(&t, false)?;
                self.report(*id, format!("expected type '{want}' but found '{found}'"))?;
                if stop_at_first {
                    break;
                }
            }
        }
        Ok(())
    }

    /// `checkOptSelect`: `x.?f`, parsed as `_?._(x, "f")`, placed at the `.`.
    fn opt_select(&mut self, id: u64, call: &cel::common::ast::CallExpr, depth: usize) -> Res<Ty> {
        let (Some(operand), Some(field), None, 2) = (
            call.args.first(),
            call.args.get(1),
            &call.target,
            call.args.len(),
        ) else {
            return unknown("an optional selection of another shape");
        };
        let Expr::Literal(LiteralValue::String(field)) = &field.expr else {
            return unknown("an optional selection of another shape");
        };
        let operand = self.check(operand, depth + 1)?;
        let t = self.select_field(id, &operand, field, true)?;
        Ok(substitute(&self.mapping, &t, false))
    }

    /// `_&&_` and `_||_`: each argument must be a bool, else a type mismatch at it.
    fn logical(&mut self, call: &cel::common::ast::CallExpr, args: &[Ty]) -> Res<Ty> {
        let mut failed = false;
        for (i, t) in args.iter().enumerate() {
            match assignable(&self.mapping, t, &Ty::Bool) {
                Some(m) => self.mapping = m,
                None => {
                    let found = self.printed(t, false)?;
                    let Some(arg) = call.args.get(i) else {
                        return unknown("a logical operator's operands");
                    };
                    self.report(arg.id, format!("expected type 'bool' but found '{found}'"))?;
                    failed = true;
                }
            }
        }
        Ok(if failed { Ty::Error } else { Ty::Bool })
    }

    /// `checkComprehension`.
    fn comprehension(&mut self, c: &ComprehensionExpr, depth: usize) -> Res<Ty> {
        if c.iter_var2.is_some() {
            return unknown("two-variable comprehensions");
        }
        for e in [&c.accu_init, &c.loop_cond, &c.loop_step, &c.result] {
            self.generated.push(e.id);
        }
        let range = self.check(&c.iter_range, depth + 1)?;
        let init = self.check(&c.accu_init, depth + 1)?;
        let range = substitute(&self.mapping, &range, false);
        let var = match &range {
            Ty::List(e) => (**e).clone(),
            Ty::Map(k, _) => (**k).clone(),
            Ty::Dyn | Ty::Error | Ty::Param(_) => {
                if let Some(m) = assignable(&self.mapping, &Ty::Dyn, &range) {
                    self.mapping = m;
                }
                Ty::Dyn
            }
            other => {
                let name = self.printed(other, false)?;
                self.report(
                    c.iter_range.id,
                    format!(
                        "expression of type '{name}' cannot be range of a comprehension (must be list, map, or dynamic)"
                    ),
                )?;
                Ty::Error
            }
        };
        self.scopes.push((c.accu_var.clone(), init.clone()));
        self.scopes.push((c.iter_var.clone(), var));
        let cond = self.check(&c.loop_cond, depth + 1)?;
        self.assert(c.loop_cond.id, &Ty::Bool, &cond)?;
        let step = self.check(&c.loop_step, depth + 1)?;
        self.assert(c.loop_step.id, &init, &step)?;
        self.scopes.pop();
        let result = self.check(&c.result, depth + 1)?;
        self.scopes.pop();
        Ok(substitute(&self.mapping, &result, false))
    }

    /// `assertType`: `found` must be assignable to `want`.
    fn assert(&mut self, id: u64, want: &Ty, found: &Ty) -> Res<()> {
        match assignable(&self.mapping, want, found) {
            Some(m) => {
                self.mapping = m;
                Ok(())
            }
            None => self.report(id, "type mismatch".into()),
        }
    }
}

/// The qualified name `e` spells (`a.b.c`), if it spells one (`containers.ToQualifiedName`).
fn qualified_name(e: &Expr, depth: usize) -> Option<String> {
    match e {
        Expr::Ident(n) => Some(n.clone()),
        Expr::Select(s) if !s.test && depth < MAX_DEPTH => Some(format!(
            "{}.{}",
            qualified_name(&s.operand.expr, depth + 1)?,
            s.field
        )),
        _ => None,
    }
}

fn instantiate(t: &Ty, a: &Ty, b: &Ty) -> Ty {
    match t {
        Ty::Param(1000) => a.clone(),
        Ty::Param(1001) => b.clone(),
        Ty::List(e) => Ty::list(instantiate(e, a, b)),
        Ty::Map(k, v) => Ty::map(instantiate(k, a, b), instantiate(v, a, b)),
        Ty::Opt(e) => Ty::opt(instantiate(e, a, b)),
        t => t.clone(),
    }
}

/// A fixed struct type of the admission environment.
pub(super) fn fixed(name: &'static str, fields: Vec<(&'static str, Ty)>) -> Ty {
    Ty::Struct(Rc::new(super::types::Struct {
        id: name.to_string(),
        printed: Some(name),
        fields: Fields::Fixed(fields),
    }))
}

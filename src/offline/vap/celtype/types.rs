//! CEL types as cel-go's checker (v0.26.0, `checker/types.go`) relates them: type
//! parameters with a substitution mapping, assignability with `dyn` and the error type as
//! wildcards, the more general of two types, and the names `checker/format.go` prints.

use std::collections::HashMap;
use std::rc::Rc;

use super::schema::ObjectNode;

/// A checked type. [`Ty::Unsure`] is a type kca does not know exactly: the checker stops
/// with "unknown" when one is used.
#[derive(Clone, Debug)]
pub(super) enum Ty {
    Dyn,
    Error,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    Str,
    Bytes,
    Timestamp,
    Duration,
    List(Box<Ty>),
    Map(Box<Ty>, Box<Ty>),
    Struct(Rc<Struct>),
    /// An object type declared by name only (the authorizer's types).
    Opaque(&'static str),
    /// `optional_type(T)`, the opaque type of `cel.OptionalTypes` (`common/types/optional.go`).
    Opt(Box<Ty>),
    Param(u32),
    Unsure,
}

/// A struct type: a schema object (its CEL name is made per policy with a clock reading,
/// so never printed) or one of the hand-built types of the admission environment.
#[derive(Debug)]
pub(super) struct Struct {
    /// What makes two struct types the same type: the schema path or the fixed name.
    pub id: String,
    /// The name cel-go prints, when it is fixed.
    pub printed: Option<&'static str>,
    pub fields: Fields,
}

#[derive(Debug)]
pub(super) enum Fields {
    Fixed(Vec<(&'static str, Ty)>),
    Named(Vec<(String, Ty)>),
    Schema(ObjectNode),
}

impl Ty {
    pub fn list(t: Ty) -> Ty {
        Ty::List(Box::new(t))
    }

    pub fn map(k: Ty, v: Ty) -> Ty {
        Ty::Map(Box::new(k), Box::new(v))
    }

    pub fn opt(t: Ty) -> Ty {
        Ty::Opt(Box::new(t))
    }

    pub fn is_dyn_or_error(&self) -> bool {
        matches!(self, Ty::Dyn | Ty::Error)
    }

    fn same_kind(&self, o: &Ty) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(o)
    }

    /// `IsExactType`: same kind, name and parameters.
    pub fn exact(&self, o: &Ty) -> bool {
        match (self, o) {
            (Ty::List(a), Ty::List(b)) => a.exact(b),
            (Ty::Map(a, b), Ty::Map(c, d)) => a.exact(c) && b.exact(d),
            (Ty::Struct(a), Ty::Struct(b)) => a.id == b.id,
            (Ty::Opaque(a), Ty::Opaque(b)) => a == b,
            (Ty::Opt(a), Ty::Opt(b)) => a.exact(b),
            (Ty::Param(a), Ty::Param(b)) => a == b,
            (a, b) => a.same_kind(b) && !matches!(a, Ty::Unsure),
        }
    }

    /// Whether the type mentions something kca does not know exactly.
    pub fn unsure(&self) -> bool {
        match self {
            Ty::Unsure => true,
            Ty::List(t) | Ty::Opt(t) => t.unsure(),
            Ty::Map(k, v) => k.unsure() || v.unsure(),
            _ => false,
        }
    }

    /// Whether the type mentions a type parameter (cel-go prints those by their generated
    /// names, `_var0`, which kca does not reproduce).
    pub fn has_param(&self) -> bool {
        match self {
            Ty::Param(_) => true,
            Ty::List(t) | Ty::Opt(t) => t.has_param(),
            Ty::Map(k, v) => k.has_param() || v.has_param(),
            _ => false,
        }
    }
}

/// `FormatCELType`, for the types whose printed name kca knows; `None` otherwise.
pub(super) fn format(t: &Ty) -> Option<String> {
    Some(match t {
        Ty::Dyn => "dyn".into(),
        Ty::Null => "null".into(),
        Ty::Bool => "bool".into(),
        Ty::Int => "int".into(),
        Ty::Uint => "uint".into(),
        Ty::Double => "double".into(),
        Ty::Str => "string".into(),
        Ty::Bytes => "bytes".into(),
        Ty::List(e) => format!("list({})", format(e)?),
        Ty::Map(k, v) => format!("map({}, {})", format(k)?, format(v)?),
        Ty::Opt(t) => format!("optional_type({})", format(t)?),
        Ty::Timestamp => "timestamp".into(),
        Ty::Duration => "duration".into(),
        Ty::Error => "!error!".into(),
        Ty::Struct(s) => s.printed?.to_string(),
        Ty::Opaque(name) => name.to_string(),
        _ => return None,
    })
}

/// The substitutions of type parameters made while checking one expression.
#[derive(Clone, Default, Debug)]
pub(super) struct Mapping(HashMap<u32, Ty>);

impl Mapping {
    fn find(&self, t: &Ty) -> Option<&Ty> {
        match t {
            Ty::Param(p) => self.0.get(p),
            _ => None,
        }
    }

    fn add(&mut self, p: &Ty, t: Ty) {
        if let Ty::Param(p) = p {
            self.0.insert(*p, t);
        }
    }
}

/// `substitute`: bound parameters replaced, unbound ones by `dyn` when `to_dyn`. `depth`
/// bounds the walk (a mapping is acyclic by the occurs check; the bound is a guard).
pub(super) fn substitute(m: &Mapping, t: &Ty, to_dyn: bool) -> Ty {
    substitute_at(m, t, to_dyn, 0)
}

fn substitute_at(m: &Mapping, t: &Ty, to_dyn: bool, depth: usize) -> Ty {
    if depth > 64 {
        return Ty::Unsure;
    }
    if let Some(s) = m.find(t) {
        return substitute_at(m, s, to_dyn, depth + 1);
    }
    match t {
        Ty::Param(_) if to_dyn => Ty::Dyn,
        Ty::List(e) => Ty::list(substitute_at(m, e, to_dyn, depth + 1)),
        Ty::Map(k, v) => Ty::map(
            substitute_at(m, k, to_dyn, depth + 1),
            substitute_at(m, v, to_dyn, depth + 1),
        ),
        Ty::Opt(e) => Ty::opt(substitute_at(m, e, to_dyn, depth + 1)),
        t => t.clone(),
    }
}

/// `isEqualOrLessSpecific`.
fn less_specific(t1: &Ty, t2: &Ty) -> bool {
    if matches!(t1, Ty::Dyn | Ty::Param(_)) {
        return true;
    }
    if matches!(t2, Ty::Dyn | Ty::Param(_)) {
        return false;
    }
    match (t1, t2) {
        (Ty::List(a), Ty::List(b)) | (Ty::Opt(a), Ty::Opt(b)) => less_specific(a, b),
        (Ty::Map(a, b), Ty::Map(c, d)) => less_specific(a, c) && less_specific(b, d),
        (a, b) => a.exact(b),
    }
}

/// `mostGeneral`.
pub(super) fn most_general(t1: &Ty, t2: &Ty) -> Ty {
    if less_specific(t1, t2) {
        t1.clone()
    } else {
        t2.clone()
    }
}

/// `isAssignable`: the mapping extended when `t1` is assignable to `t2`.
pub(super) fn assignable(m: &Mapping, t1: &Ty, t2: &Ty) -> Option<Mapping> {
    let mut copy = m.clone();
    internal_assignable(&mut copy, t1, t2, 0).then_some(copy)
}

/// `isAssignableList`.
pub(super) fn assignable_list(m: &Mapping, l1: &[Ty], l2: &[Ty]) -> Option<Mapping> {
    let mut copy = m.clone();
    (l1.len() == l2.len()
        && l1
            .iter()
            .zip(l2)
            .all(|(a, b)| internal_assignable(&mut copy, a, b, 0)))
    .then_some(copy)
}

fn internal_assignable(m: &mut Mapping, t1: &Ty, t2: &Ty, depth: usize) -> bool {
    if depth > 64 {
        return false;
    }
    if matches!(t2, Ty::Param(_)) {
        let (valid, has_sub) = valid_substitution(m, t1, t2, depth);
        if valid {
            return true;
        }
        if has_sub {
            return false;
        }
    }
    if matches!(t1, Ty::Param(_)) {
        return valid_substitution(m, t2, t1, depth).0;
    }
    if t1.is_dyn_or_error() || t2.is_dyn_or_error() {
        return true;
    }
    if matches!(t1, Ty::Null) {
        return nullable(t2);
    }
    if matches!(t2, Ty::Null) {
        return nullable(t1);
    }
    match (t1, t2) {
        (Ty::List(a), Ty::List(b)) | (Ty::Opt(a), Ty::Opt(b)) => {
            internal_assignable(m, a, b, depth + 1)
        }
        (Ty::Map(a, b), Ty::Map(c, d)) => {
            internal_assignable(m, a, c, depth + 1) && internal_assignable(m, b, d, depth + 1)
        }
        (a, b) => a.exact(b),
    }
}

/// `internalIsAssignableNull` of the types kca has.
fn nullable(t: &Ty) -> bool {
    matches!(
        t,
        Ty::Struct(_) | Ty::Opaque(_) | Ty::Opt(_) | Ty::Timestamp | Ty::Duration | Ty::Null
    )
}

/// `isValidTypeSubstitution`: whether `t2` (a parameter) can stand for `t1`, and whether
/// it had a substitution already.
fn valid_substitution(m: &mut Mapping, t1: &Ty, t2: &Ty, depth: usize) -> (bool, bool) {
    if t1.exact(t2) {
        return (true, true);
    }
    if let Some(sub) = m.find(t2).cloned() {
        if t1.exact(&sub) {
            return (true, true);
        }
        if internal_assignable(m, t1, &sub, depth + 1) {
            let general = most_general(t1, &sub);
            if not_referenced_in(m, t2, &general, 0) {
                m.add(t2, general);
            }
            return (true, true);
        }
        return (false, true);
    }
    if not_referenced_in(m, t2, t1, 0) {
        m.add(t2, t1.clone());
        return (true, false);
    }
    (false, false)
}

/// `notReferencedIn`: the occurs check.
fn not_referenced_in(m: &Mapping, t: &Ty, within: &Ty, depth: usize) -> bool {
    if depth > 64 || t.exact(within) {
        return false;
    }
    match within {
        Ty::Param(_) => match m.find(within) {
            Some(sub) => not_referenced_in(m, t, sub, depth + 1),
            None => true,
        },
        Ty::List(e) | Ty::Opt(e) => not_referenced_in(m, t, e, depth + 1),
        Ty::Map(k, v) => {
            not_referenced_in(m, t, k, depth + 1) && not_referenced_in(m, t, v, depth + 1)
        }
        _ => true,
    }
}

//! The functions and overloads kca declares of the API server's CEL environment
//! (`pkg/cel/environment/base.go` of k8s.io/apiserver v0.36.3: cel-go's standard library
//! v0.26.0 `checker/decls`, `cel.OptionalTypes` (`cel/library.go`), the strings extension
//! as far as listed, and `library/authz.go`). A name kca does not list is "unknown"; a
//! name whose overloads are not all listed is "unknown" when none of those listed fits.

use cel::common::ast::operators;

use super::types::Ty;

/// Which overloads a function has, as (member style, argument types, result type), with
/// type parameters numbered from 1000 (`A` = 1000, `B` = 1001).
pub(super) struct Overload {
    pub member: bool,
    pub args: Vec<Ty>,
    pub result: Ty,
}

const A: Ty = Ty::Param(1000);
const B: Ty = Ty::Param(1001);

fn ov(member: bool, args: Vec<Ty>, result: Ty) -> Overload {
    Overload {
        member,
        args,
        result,
    }
}

/// The overloads of `name`, and whether kca knows every overload the API server's
/// environment declares for it (when not, a failed resolution is "unknown").
pub(super) fn overloads(name: &str) -> Option<(Vec<Overload>, bool)> {
    use Ty::*;
    let g = |args: Vec<Ty>, r: Ty| ov(false, args, r);
    let m = |args: Vec<Ty>, r: Ty| ov(true, args, r);
    let numeric = [Int, Uint, Double];
    Some(match name {
        operators::LOGICAL_NOT | operators::NOT_STRICTLY_FALSE => (vec![g(vec![Bool], Bool)], true),
        operators::NEGATE => (vec![g(vec![Int], Int), g(vec![Double], Double)], true),
        operators::EQUALS | operators::NOT_EQUALS => (vec![g(vec![A, A], Bool)], true),
        operators::LESS
        | operators::LESS_EQUALS
        | operators::GREATER
        | operators::GREATER_EQUALS => {
            let mut v: Vec<Overload> = [Bool, Int, Uint, Double, Str, Bytes, Timestamp, Duration]
                .into_iter()
                .map(|t| g(vec![t.clone(), t], Bool))
                .collect();
            for a in &numeric {
                for b in &numeric {
                    if !a.exact(b) {
                        v.push(g(vec![a.clone(), b.clone()], Bool));
                    }
                }
            }
            (v, true)
        }
        operators::ADD => {
            let mut v: Vec<Overload> = [Int, Uint, Double, Str, Bytes]
                .into_iter()
                .map(|t| g(vec![t.clone(), t.clone()], t))
                .collect();
            v.push(g(vec![Ty::list(A), Ty::list(A)], Ty::list(A)));
            v.push(g(vec![Timestamp, Duration], Timestamp));
            v.push(g(vec![Duration, Timestamp], Timestamp));
            v.push(g(vec![Duration, Duration], Duration));
            (v, true)
        }
        operators::SUBSTRACT => {
            let mut v: Vec<Overload> = numeric
                .iter()
                .map(|t| g(vec![t.clone(), t.clone()], t.clone()))
                .collect();
            v.push(g(vec![Timestamp, Timestamp], Duration));
            v.push(g(vec![Timestamp, Duration], Timestamp));
            v.push(g(vec![Duration, Duration], Duration));
            (v, true)
        }
        operators::MULTIPLY | operators::DIVIDE => (
            numeric
                .iter()
                .map(|t| g(vec![t.clone(), t.clone()], t.clone()))
                .collect(),
            true,
        ),
        operators::MODULO => (
            vec![g(vec![Int, Int], Int), g(vec![Uint, Uint], Uint)],
            true,
        ),
        operators::CONDITIONAL => (vec![g(vec![Bool, A, A], A)], true),
        "dyn" => (vec![g(vec![A], Dyn)], true),
        // The standard overloads and `cel.OptionalTypes`' (`cel/library.go`: `optionalLib`)
        // on an optional list or map.
        operators::INDEX => (
            vec![
                g(vec![Ty::list(A), Int], A),
                g(vec![Ty::map(A, B), A], B),
                g(vec![Ty::opt(Ty::list(A)), Int], Ty::opt(A)),
                g(vec![Ty::opt(Ty::map(A, B)), A], Ty::opt(B)),
            ],
            true,
        ),
        operators::OPT_INDEX => (
            vec![
                g(vec![Ty::list(A), Int], Ty::opt(A)),
                g(vec![Ty::opt(Ty::list(A)), Int], Ty::opt(A)),
                g(vec![Ty::map(A, B), A], Ty::opt(B)),
                g(vec![Ty::opt(Ty::map(A, B)), A], Ty::opt(B)),
            ],
            true,
        ),
        "optional.of" | "optional.ofNonZeroValue" => (vec![g(vec![A], Ty::opt(A))], true),
        "optional.none" => (vec![g(vec![], Ty::opt(A))], true),
        "value" => (vec![m(vec![Ty::opt(A)], A)], true),
        "hasValue" => (vec![m(vec![Ty::opt(A)], Bool)], true),
        "or" => (vec![m(vec![Ty::opt(A), Ty::opt(A)], Ty::opt(A))], true),
        "orValue" => (vec![m(vec![Ty::opt(A), A], A)], true),
        // `first` and `last` of the optional library (version 2 on; the API server takes the
        // latest); other libraries may declare more overloads.
        "first" | "last" => (vec![m(vec![Ty::list(A)], Ty::opt(A))], false),
        operators::IN => (
            vec![
                g(vec![A, Ty::list(A)], Bool),
                g(vec![A, Ty::map(A, B)], Bool),
            ],
            true,
        ),
        "size" => {
            let mut v = Vec::new();
            for member in [false, true] {
                for t in [Str, Bytes, Ty::list(A), Ty::map(A, B)] {
                    v.push(ov(member, vec![t], Int));
                }
            }
            (v, true)
        }
        // `library/cidr.go` adds `contains` overloads on CIDRs, a type only `cidr()` (which
        // kca leaves unknown) or `dyn` reaches: on any type kca gives, the string one is
        // the only one that can fit, and all give `bool`.
        "contains" | "startsWith" | "endsWith" => (vec![m(vec![Str, Str], Bool)], true),
        "matches" => (vec![m(vec![Str, Str], Bool), g(vec![Str, Str], Bool)], true),
        "lowerAscii" | "upperAscii" | "trim" => (vec![m(vec![Str], Str)], false),
        "split" => (vec![m(vec![Str, Str], Ty::list(Str))], false),
        "replace" => (vec![m(vec![Str, Str, Str], Str)], false),
        "join" => (
            vec![
                m(vec![Ty::list(Str)], Str),
                m(vec![Ty::list(Str), Str], Str),
            ],
            false,
        ),
        // Conversions: kca lists cel-go's standard overloads, not necessarily all the
        // environment declares, so a failed resolution stays unknown.
        "string" => conversions(
            &[Str, Int, Uint, Double, Bytes, Bool, Timestamp, Duration],
            Str,
        ),
        "int" => conversions(&[Int, Uint, Double, Str, Timestamp, Duration], Int),
        "uint" => conversions(&[Int, Uint, Double, Str], Uint),
        "double" => conversions(&[Int, Uint, Double, Str], Double),
        "bool" => conversions(&[Bool, Str], Bool),
        "bytes" => conversions(&[Bytes, Str], Bytes),
        // library/authz.go
        "path" => (
            vec![m(vec![Opaque(AUTHORIZER), Str], Opaque(PATH_CHECK))],
            true,
        ),
        "group" => (
            vec![m(vec![Opaque(AUTHORIZER), Str], Opaque(GROUP_CHECK))],
            true,
        ),
        "serviceAccount" => (
            vec![m(vec![Opaque(AUTHORIZER), Str, Str], Opaque(AUTHORIZER))],
            true,
        ),
        "resource" => (
            vec![m(vec![Opaque(GROUP_CHECK), Str], Opaque(RESOURCE_CHECK))],
            true,
        ),
        "subresource" | "namespace" | "name" => (
            vec![m(vec![Opaque(RESOURCE_CHECK), Str], Opaque(RESOURCE_CHECK))],
            true,
        ),
        "check" => (
            vec![
                m(vec![Opaque(PATH_CHECK), Str], Opaque(DECISION)),
                m(vec![Opaque(RESOURCE_CHECK), Str], Opaque(DECISION)),
            ],
            true,
        ),
        "allowed" | "errored" => (vec![m(vec![Opaque(DECISION)], Bool)], true),
        "reason" | "error" => (vec![m(vec![Opaque(DECISION)], Str)], true),
        _ => return None,
    })
}

fn conversions(from: &[Ty], to: Ty) -> (Vec<Overload>, bool) {
    let v = from
        .iter()
        .map(|t| ov(false, vec![t.clone()], to.clone()))
        .collect();
    (v, false)
}

pub(super) const AUTHORIZER: &str = "kubernetes.authorization.Authorizer";
const PATH_CHECK: &str = "kubernetes.authorization.PathCheck";
const GROUP_CHECK: &str = "kubernetes.authorization.GroupCheck";
const RESOURCE_CHECK: &str = "kubernetes.authorization.ResourceCheck";
const DECISION: &str = "kubernetes.authorization.Decision";

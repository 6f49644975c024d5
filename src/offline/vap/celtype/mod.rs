//! The API server's CEL type checker on a ValidatingAdmissionPolicy, as Kyverno's policy
//! webhook runs it on a `validate.cel` rule (k8s.io/apiserver v0.36.3
//! `pkg/admission/plugin/policy/validating/typechecking.go`): one check per kind the
//! match constraints name (sorted, at most 10), `object`/`oldObject` typed by that kind's
//! OpenAPI schema, `params` by the param kind's, `request`, `namespaceObject`,
//! `authorizer` and `variables` as `pkg/admission/plugin/cel` declares them. Sound: a
//! result is given only when every construct was modelled ([`schema`] for the types,
//! [`check`] for the checker); anything else is [`TypeCheck::Unknown`] with the reason.
//! Pure; it reads no cluster.

mod check;
mod decls;
mod regex;
mod schema;
mod types;

use std::collections::HashMap;
use std::rc::Rc;

use serde_json::Value;

use crate::offline::rbac::resource::Mapper;
use check::{Checker, Stop, fixed};
use decls::AUTHORIZER;
use types::{Fields, Struct, Ty};

/// `maxTypesToCheck`.
const MAX_TYPES: usize = 10;
/// Most errors cel-go reports in full (`maxErrorsToReport`).
const MAX_ERRORS: usize = 100;
/// Longest source line cel-go prints under an error (`maxSnippetLength`).
const MAX_SNIPPET: usize = 16_384;

/// The outcome of type-checking one expression: cel-go's result text per kind, joined as
/// `TypeCheckingResults.String` does (empty when the expression checks), or why kca
/// cannot say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeCheck {
    Known(String),
    Unknown(String),
}

/// What the checker needs of a policy: the kinds (`group/version, Kind=…` as printed,
/// and their types), the params' type when the policy has a param kind, its variables.
pub struct TypeContext {
    kinds: Vec<(String, Ty)>,
    params: Option<Ty>,
    variables: Vec<(String, String)>,
}

/// The context of a VAP with these `resourceRules` (each `apiGroups`, `apiVersions`,
/// `resources`), `paramKind` and `variables`, against the cluster's discovery. `Err` when
/// a kind's schema is not one kca has (a custom resource, an API version it lacks).
pub fn context(
    resource_rules: &[Value],
    param_kind: Option<&Value>,
    variables: Option<&Value>,
    mapper: &Mapper,
) -> Result<TypeContext, String> {
    let mut gvks: Vec<(String, String, String)> = Vec::new();
    let strs = |r: &Value, k: &str| -> Vec<String> {
        crate::offline::str_items(r.get(k))
            .map(str::to_string)
            .collect()
    };
    for rule in resource_rules {
        let groups = strs(rule, "apiGroups");
        let versions = strs(rule, "apiVersions");
        if groups.iter().any(|g| g.contains('*')) || versions.iter().any(|v| v.contains('*')) {
            continue;
        }
        let mut resources = strs(rule, "resources");
        resources.retain(|r| !r.contains(['*', '/']));
        for g in &groups {
            for v in &versions {
                for r in &resources {
                    let Some(res) = mapper
                        .resources()
                        .iter()
                        .find(|a| &a.group == g && &a.plural == r)
                    else {
                        continue;
                    };
                    let gvk = (g.clone(), v.clone(), res.kind.clone());
                    if !gvks.contains(&gvk) {
                        gvks.push(gvk);
                    }
                }
            }
        }
    }
    if gvks.len() >= MAX_TYPES {
        return Err(format!("more than {} kinds to type-check", MAX_TYPES - 1));
    }
    gvks.sort();
    let mut kinds = Vec::with_capacity(gvks.len());
    for (g, v, k) in gvks {
        let Some(t) = schema::kind_type(&g, &v, &k) else {
            return Err(format!("the OpenAPI schema of {g}/{v}, Kind={k}"));
        };
        kinds.push((format!("{g}/{v}, Kind={k}"), t));
    }
    let params = param_kind.and_then(|p| {
        let av = p.get("apiVersion").and_then(Value::as_str)?;
        let kind = p.get("kind").and_then(Value::as_str).unwrap_or("");
        let (g, v) = match av.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", av),
        };
        if v.is_empty() || v.contains('/') {
            return None;
        }
        Some(match schema::kind_type(g, v, kind) {
            Some(t) => t,
            // A kind the cluster serves without a schema kca has (a custom resource).
            None if mapper.for_kind(av, kind).is_some() => Ty::Unsure,
            // `ErrSchemaNotFound`: params are `dyn`.
            None => Ty::Dyn,
        })
    });
    let variables = variables
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|v| {
            let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            (s("name"), s("expression"))
        })
        .collect();
    Ok(TypeContext {
        kinds,
        params,
        variables,
    })
}

/// `CheckExpression`: the expression checked against each kind.
pub fn check_expression(ctx: &TypeContext, expression: &str) -> TypeCheck {
    let mut out = Vec::new();
    for (gvk, object) in &ctx.kinds {
        let mut vars = base_vars(object, ctx.params.as_ref());
        let mut declared: Vec<(String, Ty)> = Vec::new();
        for (name, expr) in &ctx.variables {
            vars.insert("variables", variables_type(&declared));
            let t = match compile(&vars, expr, true) {
                Ok((errors, t)) if errors.is_empty() => as_variable(&t),
                Ok(_) => Ty::Dyn,
                Err(Stop::Unknown(_)) => Ty::Unsure,
            };
            declared.retain(|(n, _)| n != name);
            declared.push((name.clone(), t));
        }
        vars.insert("variables", variables_type(&declared));
        match compile(&vars, expression, false) {
            Ok((errors, _)) if errors.is_empty() => {}
            Ok((errors, _)) => out.push(format!("{gvk}: {}\n", errors.join("\n"))),
            Err(Stop::Unknown(why)) => {
                return TypeCheck::Unknown(format!(
                    "the CEL type checker on `{expression}`: {why}"
                ));
            }
        }
    }
    TypeCheck::Known(out.join("\n"))
}

fn variables_type(declared: &[(String, Ty)]) -> Ty {
    Ty::Struct(Rc::new(Struct {
        id: "kubernetes.variables".into(),
        printed: Some("kubernetes.variables"),
        fields: Fields::Named(declared.to_vec()),
    }))
}

/// `convertCelTypeToDeclType`: what a variable's type becomes (objects are `dyn`).
fn as_variable(t: &Ty) -> Ty {
    match t {
        Ty::List(e) => Ty::list(as_variable(e)),
        Ty::Map(k, v) => Ty::map(as_variable(k), as_variable(v)),
        Ty::Struct(_) | Ty::Opaque(_) | Ty::Opt(_) | Ty::Param(_) | Ty::Error => Ty::Dyn,
        t => t.clone(),
    }
}

fn base_vars(object: &Ty, params: Option<&Ty>) -> HashMap<&'static str, Ty> {
    let mut vars = HashMap::new();
    vars.insert("object", object.clone());
    vars.insert("oldObject", object.clone());
    vars.insert("request", request_type());
    vars.insert("namespaceObject", namespace_type());
    vars.insert("authorizer", Ty::Opaque(AUTHORIZER));
    if let Some(p) = params {
        vars.insert("params", p.clone());
    }
    vars
}

/// Parses and checks one expression: cel-go's error lines, sorted by position, and its
/// output type. With `presence_only` (a variable) the lines may lack their exact text.
fn compile(
    vars: &HashMap<&'static str, Ty>,
    expr: &str,
    presence_only: bool,
) -> Result<(Vec<String>, Ty), Stop> {
    if !expr.is_ascii() {
        return Err(Stop::Unknown("a non-ASCII expression".into()));
    }
    if let Err(e) = super::shape::check(expr) {
        return Err(Stop::Unknown(e.to_string()));
    }
    let parsed = super::shape::on_parse_stack(|| {
        cel::parser::Parser::default()
            .enable_optional_syntax(true)
            .parse_with_source_info(expr)
    });
    let Ok((ast, info)) = parsed else {
        return Err(Stop::Unknown("an expression kca's parser refuses".into()));
    };
    let offsets = |id: u64| info.offset_for(id).map(|(start, _)| start);
    let mut checker = Checker::new(vars, &offsets);
    checker.presence_only = presence_only;
    let t = super::shape::on_parse_stack(|| checker.check(&ast, 0))?;
    // `Env.Check` runs the validators only on an expression without type errors.
    if checker.errors.is_empty() {
        checker.validate()?;
    }
    let out = checker.output(&t);
    let mut errors = std::mem::take(&mut checker.errors);
    if errors.len() > MAX_ERRORS && !presence_only {
        return Err(Stop::Unknown(format!(
            "more than {MAX_ERRORS} type errors (cel-go truncates its report there)"
        )));
    }
    let place = |offset: u32| -> (usize, usize) {
        let before = &expr[..(offset as usize).min(expr.len())];
        let line = before.matches('\n').count() + 1;
        let col = before
            .rfind('\n')
            .map_or(before.len(), |n| before.len() - n - 1);
        (line, col)
    };
    errors.sort_by_key(|e| place(e.offset));
    let lines = errors
        .iter()
        .map(|e| {
            let (line, col) = place(e.offset);
            let mut s = format!("ERROR: <input>:{line}:{}: {}", col + 1, e.message);
            if let Some(snippet) = expr.split('\n').nth(line - 1)
                && snippet.len() <= MAX_SNIPPET
            {
                s.push_str(&format!(
                    "\n | {}\n | {}^",
                    snippet.replace('\t', " "),
                    ".".repeat(col)
                ));
            }
            s
        })
        .collect();
    Ok((lines, out))
}

/// `BuildRequestType`.
fn request_type() -> Ty {
    let gvk = fixed(
        "kubernetes.GroupVersionKind",
        vec![("group", Ty::Str), ("version", Ty::Str), ("kind", Ty::Str)],
    );
    let gvr = fixed(
        "kubernetes.GroupVersionResource",
        vec![
            ("group", Ty::Str),
            ("version", Ty::Str),
            ("resource", Ty::Str),
        ],
    );
    let user = fixed(
        "kubernetes.UserInfo",
        vec![
            ("username", Ty::Str),
            ("uid", Ty::Str),
            ("groups", Ty::list(Ty::Str)),
            ("extra", Ty::map(Ty::Str, Ty::list(Ty::Str))),
        ],
    );
    fixed(
        "kubernetes.AdmissionRequest",
        vec![
            ("kind", gvk.clone()),
            ("resource", gvr.clone()),
            ("subResource", Ty::Str),
            ("requestKind", gvk),
            ("requestResource", gvr),
            ("requestSubResource", Ty::Str),
            ("name", Ty::Str),
            ("namespace", Ty::Str),
            ("operation", Ty::Str),
            ("userInfo", user),
            ("dryRun", Ty::Bool),
            ("options", Ty::Dyn),
        ],
    )
}

/// `BuildNamespaceType`.
fn namespace_type() -> Ty {
    let spec = fixed(
        "kubernetes.NamespaceSpec",
        vec![("finalizers", Ty::list(Ty::Str))],
    );
    let condition = fixed(
        "kubernetes.NamespaceCondition",
        vec![
            ("status", Ty::Str),
            ("type", Ty::Str),
            ("lastTransitionTime", Ty::Timestamp),
            ("message", Ty::Str),
            ("reason", Ty::Str),
        ],
    );
    let status = fixed(
        "kubernetes.NamespaceStatus",
        vec![("conditions", Ty::list(condition)), ("phase", Ty::Str)],
    );
    let strings = || Ty::map(Ty::Str, Ty::Str);
    let metadata = fixed(
        "kubernetes.NamespaceMetadata",
        vec![
            ("name", Ty::Str),
            ("generateName", Ty::Str),
            ("namespace", Ty::Str),
            ("labels", strings()),
            ("annotations", strings()),
            ("UID", Ty::Str),
            ("creationTimestamp", Ty::Timestamp),
            ("deletionGracePeriodSeconds", Ty::Int),
            ("deletionTimestamp", Ty::Timestamp),
            ("generation", Ty::Int),
            ("resourceVersion", Ty::Str),
            ("finalizers", Ty::list(Ty::Str)),
        ],
    );
    fixed(
        "kubernetes.Namespace",
        vec![("metadata", metadata), ("spec", spec), ("status", status)],
    )
}

#[cfg(test)]
mod adversarial_tests;
#[cfg(test)]
mod corpus_sweep;
#[cfg(test)]
mod tests;

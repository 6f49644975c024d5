//! Params for a binding: `paramKind` + `paramRef` (name, namespace, selector) looked up
//! among the given objects, and `parameterNotFoundAction`.

use super::*;
use crate::offline::labels::labels_of;

pub(super) enum ParamsMissing {
    Allow,
    Deny(String),
}

/// The params objects a binding selects (one `null` when the policy takes none).
pub(super) fn params_for(
    objects: &[Value],
    spec: &Value,
    binding: Option<&Value>,
    req: &VapRequest,
) -> Result<Vec<Value>, ParamsMissing> {
    let Some(kind) = spec.get("paramKind") else {
        return Ok(vec![Value::Null]);
    };
    let Some(binding) = binding else {
        return Ok(vec![Value::Null]);
    };
    let Some(pref) = binding.pointer("/spec/paramRef") else {
        return Err(ParamsMissing::Deny(
            "the policy has a paramKind and the binding no paramRef".into(),
        ));
    };
    let found = find_params(objects, kind, pref, req);
    if !found.is_empty() {
        return Ok(found);
    }
    match pref.get("parameterNotFoundAction").and_then(Value::as_str) {
        Some("Allow") => Err(ParamsMissing::Allow),
        _ => Err(ParamsMissing::Deny(
            "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
        )),
    }
}

/// The objects of `paramKind` that a `paramRef` names or selects.
pub(super) fn find_params(
    objects: &[Value],
    kind: &Value,
    pref: &Value,
    req: &VapRequest,
) -> Vec<Value> {
    let api_version = kind.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let pkind = kind.get("kind").and_then(Value::as_str).unwrap_or("");
    let req_ns = request_namespace(req);
    let want_ns = pref.get("namespace").and_then(Value::as_str);
    objects
        .iter()
        .filter(|o| {
            o.get("apiVersion").and_then(Value::as_str) == Some(api_version) && kind_of(o) == pkind
        })
        .filter(|o| {
            let ns = o.pointer("/metadata/namespace").and_then(Value::as_str);
            match (want_ns, ns) {
                (Some(w), Some(n)) => w == n,
                (Some(_), None) => false,
                // Namespaced params without a namespace come from the request's.
                (None, Some(n)) => req_ns.as_deref() == Some(n),
                (None, None) => true,
            }
        })
        .filter(|o| match pref.get("name").and_then(Value::as_str) {
            Some(n) => name_of(o) == n,
            None => pref
                .get("selector")
                .is_some_and(|sel| selector_matches(sel, &labels_of(o))),
        })
        .cloned()
        .collect()
}

pub(super) fn request_namespace(req: &VapRequest) -> Option<String> {
    let o = if req.object.is_null() {
        &req.old_object
    } else {
        &req.object
    };
    o.pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .map(str::to_string)
}

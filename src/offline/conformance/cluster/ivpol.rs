//! Kyverno's ImageValidatingPolicies at admission, as far as they are decided without a
//! registry. The engine (pkg/cel/policies/ivpol/engine/engine.go `matchPolicy`,
//! `filterPolicies`) takes up a policy for a request its `matchConstraints` select and
//! its `matchConditions` admit; a NamespacedImageValidatingPolicy only for requests in
//! its namespace. A request no policy takes up is decided here (the policies do not
//! touch it); one a policy takes up has its images fetched and verified
//! (pkg/image/verification/evaluator/policy.go: `ictx.AddImages` before any validation
//! runs, even when no image matches `matchImageReferences`), which is a registry's — the
//! operation is a registry skip.

use serde_json::Value;

use super::super::Skip;
use super::text;
use crate::offline::vap::{self, VapRequest};

/// The ImageValidatingPolicy kinds.
pub(crate) fn is_image_policy(kind: &str) -> bool {
    matches!(
        kind,
        "ImageValidatingPolicy" | "NamespacedImageValidatingPolicy"
    )
}

/// The registry skip for `req` when a stored image policy (with admission on) takes it up.
pub(super) fn registry_needed(objects: &[Value], req: &VapRequest) -> Option<Skip> {
    let obj = if req.object.is_null() {
        &req.old_object
    } else {
        &req.object
    };
    let ns = text(obj, "/metadata/namespace");
    for p in objects
        .iter()
        .filter(|o| is_image_policy(&text(o, "/kind")))
    {
        if text(p, "/kind").starts_with("Namespaced") && text(p, "/metadata/namespace") != ns {
            continue;
        }
        let admission = p
            .pointer("/spec/evaluation/admission/enabled")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        if !admission {
            continue;
        }
        let name = text(p, "/metadata/name");
        match vap::engine_selects(p, req) {
            Some(false) => {}
            Some(true) => {
                return Some(Skip::Registry(format!(
                    "ImageValidatingPolicy {name} verifies the request's images"
                )));
            }
            None => {
                return Some(Skip::Engine(format!(
                    "a matchCondition of ImageValidatingPolicy {name} is not a boolean"
                )));
            }
        }
    }
    None
}

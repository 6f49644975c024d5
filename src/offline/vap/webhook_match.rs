//! The `matchConditions` Kyverno puts on a CEL policy's own webhook, as the API server
//! evaluates them before it calls Kyverno. Kyverno 1.19 (pkg/controllers/webhook/validating.go,
//! `validConditions` and `webhookMatchConditions` in match_conditions.go) copies a policy's
//! conditions onto its fine-grained webhook when every one of them compiles in the API
//! server's webhook environment, less those naming `namespaceObject`; the API server
//! (k8s.io/apiserver pkg/admission/plugin/webhook/matchconditions) then skips the webhook
//! when one is false, and on an error refuses the request under `failurePolicy: Fail`
//! or skips the webhook under `Ignore`.

use serde_json::Value;

use super::cel_env::{base_context, eval};
use super::matching::matches_resources;
use super::{VapRequest, validating_autogen_copy};

/// What the API server does with a policy's webhook for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebhookCall {
    /// The webhook is called (no condition on it stops it, or the policy does not match).
    Called,
    /// A condition is false, or one failed under `failurePolicy: Ignore`: Kyverno never
    /// sees the request for this policy.
    Skipped,
    /// A condition failed under `failurePolicy: Fail`: the API server's error text.
    Refused(String),
}

/// The variables of the API server's webhook match-condition environment.
const WEBHOOK_VARIABLES: [&str; 5] = [
    "object",
    "oldObject",
    "request",
    "authorizer",
    "namespaceObject",
];

/// The conditions that end up on a CEL policy's webhook: none when one of them would not
/// compile for the API server (Kyverno's `variables`, its libraries), those naming
/// `namespaceObject` left to Kyverno.
fn offloaded(conditions: &[Value]) -> Vec<Value> {
    offloadable(conditions).unwrap_or_default()
}

/// `validConditions` then `webhookMatchConditions`: `None` when one of `conditions` does
/// not compile in the API server's webhook environment, else those it can evaluate (not
/// naming `namespaceObject`).
pub fn offloadable(conditions: &[Value]) -> Option<Vec<Value>> {
    let mut kept = Vec::new();
    for mc in conditions {
        let expr = mc.get("expression").and_then(Value::as_str).unwrap_or("");
        super::shape::check(expr).ok()?;
        let program = super::shape::on_parse_stack(|| cel::Program::compile(expr)).ok()?;
        let refs = program.references();
        let vars = refs.variables();
        if vars.iter().any(|v| !WEBHOOK_VARIABLES.contains(v)) {
            return None;
        }
        if !vars.contains(&"namespaceObject") {
            kept.push(mc.clone());
        }
    }
    Some(kept)
}

/// The API server's decision on a Kyverno CEL policy's webhook for `req`.
pub fn webhook_call(policy: &Value, req: &VapRequest) -> WebhookCall {
    let obj = if req.object.is_null() {
        &req.old_object
    } else {
        &req.object
    };
    // On a Pod controller the webhook carries the autogen copy's conditions.
    let copy = validating_autogen_copy(policy, super::kind_of(obj));
    let policy = copy.as_ref().unwrap_or(policy);
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let constraints = spec.get("matchConstraints").unwrap_or(&Value::Null);
    let conditions = spec
        .get("matchConditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let kept = offloaded(conditions);
    if kept.is_empty() || !matches_resources(constraints, req, true) {
        return WebhookCall::Called;
    }
    let failure_policy = spec.get("failurePolicy").and_then(Value::as_str);
    webhook_conditions(&kept, failure_policy, req)
}

/// The API server's evaluation of a webhook's `conditions` (`failurePolicy` `Fail`
/// unless given) for a request its rules select.
pub fn webhook_conditions(
    conditions: &[Value],
    failure_policy: Option<&str>,
    req: &VapRequest,
) -> WebhookCall {
    let ctx = base_context(req, &Value::Null);
    let mut errors = Vec::new();
    for mc in conditions {
        let expr = mc.get("expression").and_then(Value::as_str).unwrap_or("");
        match eval(&ctx, expr) {
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => return WebhookCall::Skipped,
            Ok(_) => errors.push(format!(
                "expression '{expr}' resulted in error: value was not a boolean"
            )),
            // What only this interpreter lacks is left to the engine, which reports it.
            Err(e) if e.unsupported.is_some() => return WebhookCall::Called,
            Err(e) => errors.push(format!(
                "expression '{expr}' resulted in error: {}",
                e.message
            )),
        }
    }
    if errors.is_empty() {
        return WebhookCall::Called;
    }
    if failure_policy == Some("Ignore") {
        return WebhookCall::Skipped;
    }
    // The API server aggregates several errors as `[a, b]`.
    WebhookCall::Refused(if errors.len() == 1 {
        errors.remove(0)
    } else {
        format!("[{}]", errors.join(", "))
    })
}

/// Whether Kyverno's engine takes up `policy` (a Kyverno CEL policy) for `req`: its
/// `matchConstraints` select the request and its `matchConditions` hold
/// (pkg/cel/policies/ivpol/engine/engine.go `matchPolicy`). `None` when a condition does
/// not evaluate to a boolean (the outcome then depends on `failurePolicy` wording the
/// replay does not model).
pub fn engine_selects(policy: &Value, req: &VapRequest) -> Option<bool> {
    let obj = if req.object.is_null() {
        &req.old_object
    } else {
        &req.object
    };
    // On a Pod controller the engine runs the autogen copy
    // (pkg/cel/policies/ivpol/autogen/autogen.go, same configs as a ValidatingPolicy's).
    let copy = validating_autogen_copy(policy, super::kind_of(obj));
    let policy = copy.as_ref().unwrap_or(policy);
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let constraints = spec.get("matchConstraints").unwrap_or(&Value::Null);
    if !matches_resources(constraints, req, true) {
        return Some(false);
    }
    let conditions = spec
        .get("matchConditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    match webhook_conditions(conditions, Some("Fail"), req) {
        WebhookCall::Called => Some(true),
        WebhookCall::Skipped => Some(false),
        WebhookCall::Refused(_) => None,
    }
}

//! Running a policy's matchConditions, variables and validations on one request, and
//! recording each failure under the binding's actions (Deny, Warn, Audit) with the API
//! server's denial text and failure policy.

use super::*;

/// Whether a policy ran its validations on a request and how they came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    NotMatched,
    Passed,
    Failed,
    Errored,
}

pub(super) struct Report<'a> {
    pub(super) policy: String,
    pub(super) binding: String,
    pub(super) actions: Vec<String>,
    pub(super) fail_closed: bool,
    pub(super) out: &'a mut VapOutcome,
    pub(super) applied: Applied,
}

impl Report<'_> {
    pub(super) fn failed(&mut self, message: String, reason: &str) {
        self.applied = Applied::Failed;
        for action in self.actions.clone() {
            match action.as_str() {
                "Deny" => self.out.denials.push(VapDenial {
                    policy: self.policy.clone(),
                    binding: self.binding.clone(),
                    message: message.clone(),
                    reason: reason.to_string(),
                    code: code_of(reason),
                }),
                "Warn" => self.out.warnings.push(format!(
                    "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                    self.policy, self.binding, message
                )),
                "Audit" => self
                    .out
                    .audits
                    .push(format!("{}/{}: {}", self.policy, self.binding, message)),
                _ => {}
            }
        }
    }

    /// An evaluation error: recorded, then a failure under `failurePolicy: Fail`.
    pub(super) fn errored(&mut self, message: String, unsupported: Option<Unsupported>) {
        self.out.errors.push(VapError {
            policy: self.policy.clone(),
            binding: self.binding.clone(),
            message: message.clone(),
            unsupported,
        });
        if self.fail_closed {
            self.failed(message, "Invalid");
        }
        if self.applied != Applied::Failed {
            self.applied = Applied::Errored;
        }
    }
}

pub(super) fn code_of(reason: &str) -> u16 {
    match reason {
        "Unauthorized" => 401,
        "Forbidden" => 403,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    }
}

/// `kyverno_env`: a Kyverno ValidatingPolicy, whose match conditions are compiled with
/// `variables` declared (and evaluated without it bound).
pub(super) fn run_validations(
    spec: &Value,
    req: &VapRequest,
    params: &Value,
    rep: &mut Report<'_>,
    kyverno_env: bool,
) {
    let mut ctx = base_context(req, params);
    if kyverno_env {
        ctx.declare_variables_unbound();
    }
    match conditions_hold(&ctx, spec.get("matchConditions").unwrap_or(&Value::Null)) {
        Ok(true) => {}
        Ok(false) => {
            if rep.applied == Applied::Passed {
                rep.applied = Applied::NotMatched;
            }
            return;
        }
        Err(e) => return rep.errored(e.message, e.unsupported),
    }
    ctx.define_variables(spec);
    for v in list(spec, "validations") {
        let expr = v.get("expression").and_then(Value::as_str).unwrap_or("");
        match eval(&ctx, expr) {
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => {
                let message = failure_message(&ctx, v, expr);
                let reason = v.get("reason").and_then(Value::as_str).unwrap_or("Invalid");
                rep.failed(message, reason);
            }
            Ok(other) => rep.errored(
                format!(
                    "expression '{}' resulted in error: not a bool: {}",
                    expr.trim(),
                    type_name(&other)
                ),
                None,
            ),
            Err(e) => rep.errored(
                format!(
                    "expression '{}' resulted in error: {}",
                    expr.trim(),
                    e.message
                ),
                e.unsupported,
            ),
        }
    }
}

/// A list of `matchConditions`: one false is `false` whatever the others do; otherwise
/// the first error (with its `unsupported` reason) is returned.
pub(super) fn conditions_hold(ctx: &Scope<'_>, conditions: &Value) -> Result<bool, EvalError> {
    let mut condition_error = None;
    for mc in conditions.as_array().into_iter().flatten() {
        let expr = mc.get("expression").and_then(Value::as_str).unwrap_or("");
        let name = mc.get("name").and_then(Value::as_str).unwrap_or("");
        match eval(ctx, expr) {
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => return Ok(false),
            Ok(other) => {
                condition_error.get_or_insert(EvalError::failed(format!(
                    "matchCondition '{name}' did not return a bool: {}",
                    type_name(&other)
                )));
            }
            Err(e) => {
                condition_error.get_or_insert(
                    e.within(format_args!("failed to evaluate matchCondition '{name}'")),
                );
            }
        }
    }
    condition_error.map_or(Ok(true), Err)
}

/// `messageExpression` when it yields a non-empty string, else `message`, else the
/// API server's `failed expression: …`.
pub(super) fn failure_message(ctx: &Scope<'_>, v: &Value, expr: &str) -> String {
    if let Some(me) = v.get("messageExpression").and_then(Value::as_str)
        && let Ok(cel::Value::String(s)) = eval(ctx, me)
        && !s.trim().is_empty()
        && !s.contains('\n')
    {
        return s.to_string();
    }
    match v.get("message").and_then(Value::as_str) {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => format!("failed expression: {}", expr.trim()),
    }
}

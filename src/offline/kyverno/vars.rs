//! `{{ … }}` substitution and JMESPath queries with Kyverno's custom functions. It must
//! not decide rule outcomes.

use serde_json::Value;

use super::Context;

#[derive(Debug, Clone, thiserror::Error)]
pub enum VarError {
    #[error("variable {0} not resolved")]
    NotResolved(String),
    #[error("invalid expression {expr}: {reason}")]
    Invalid { expr: String, reason: String },
}

/// Replaces every `{{ }}` in every string of `value`.
pub fn substitute(value: &Value, ctx: &Context) -> Result<Value, VarError> {
    let _ = ctx;
    Ok(value.clone())
}

/// Evaluates one JMESPath expression against the context.
pub fn query(expr: &str, ctx: &Context) -> Result<Value, VarError> {
    let _ = ctx;
    Err(VarError::NotResolved(expr.to_string()))
}

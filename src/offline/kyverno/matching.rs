//! `match`/`exclude` of a rule against a request. It must not evaluate conditions.

use super::{Policy, Request};
use serde_json::Value;

/// `Ok(true)` when the rule applies; `Err(why)` when a block cannot be evaluated.
pub fn rule_matches(rule: &Value, policy: &Policy, req: &Request) -> Result<bool, String> {
    let _ = (rule, policy, req);
    Ok(false)
}

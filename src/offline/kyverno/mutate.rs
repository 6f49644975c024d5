//! Placeholder until the mutate helper lands its module (owned by the mutate/generate helper).

use serde_json::Value;

use super::Context;

pub fn apply_rule(rule: &Value, resource: &Value, ctx: &Context) -> Result<Value, String> {
    let _ = (rule, resource, ctx);
    Err("mutate not built yet".into())
}

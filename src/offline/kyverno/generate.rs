//! Placeholder until the generate helper lands its module (owned by the mutate/generate helper).

use serde_json::Value;

use super::Context;

pub fn apply_rule(
    rule: &Value,
    trigger: &Value,
    ctx: &Context,
    cluster: &[Value],
) -> Result<Vec<Value>, String> {
    let _ = (rule, trigger, ctx, cluster);
    Err("generate not built yet".into())
}

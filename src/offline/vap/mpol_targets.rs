//! A MutatingPolicy's `targetMatchConstraints.expression` in the background: on a
//! trigger the policy matches, the expression names the objects to mutate; each is
//! routed through the target rules' (sub)resource, checked against those rules and
//! `targetMatchConditions`, then mutated (Kyverno pkg/background/mpol/processor.go
//! `getTargetsFromExpression`, `resolveTargetRoute`;
//! pkg/cel/policies/mpol/compiler/policy.go `EvaluateTargetExpression`, `EvaluateTarget`).
//! Offline, `request.*` on a target describe the target itself (Kyverno keeps the
//! trigger's admission request there).

use super::cel_policy::{mutate, prepare};
use super::*;

/// The targets `policy` mutates for the trigger in `req`, each as it becomes (those
/// its mutations leave as they were included).
pub fn mutate_targets(policy: &Value, req: &VapRequest) -> CelPolicyOutcome<Vec<Value>> {
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let Some(expr) = spec
        .pointer("/targetMatchConstraints/expression")
        .and_then(Value::as_str)
    else {
        return CelPolicyOutcome::NotMatched;
    };
    let ctx = match prepare(policy, "NamespacedMutatingPolicy", req) {
        Ok(ctx) => ctx,
        Err(outcome) => return outcome,
    };
    let found = match eval(&ctx, expr).map(|v| from_cel(&v)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => return CelPolicyOutcome::Error(format!("targetMatchConstraints: {e}")),
        Err(e) => return CelPolicyOutcome::from_error(e.within("targetMatchConstraints")),
    };
    let targets = match found.get("items").and_then(Value::as_array) {
        Some(items) => items.clone(),
        None if found.is_object() && found.get("kind").is_some() => vec![found],
        None => Vec::new(),
    };
    let mut constraints = spec
        .get("targetMatchConstraints")
        .cloned()
        .unwrap_or(json!({}));
    if let Some(m) = constraints.as_object_mut() {
        m.remove("expression");
    }
    let mut runnable = policy.clone();
    runnable["spec"]["matchConstraints"] = constraints.clone();
    runnable["spec"]["matchConditions"] = spec
        .get("targetMatchConditions")
        .cloned()
        .unwrap_or(json!([]));
    // The target runs as written: no pod-controller copies.
    runnable["spec"]["autogen"] = json!({"podControllers": {"controllers": []}});
    let mut out = Vec::new();
    for target in targets {
        let mut treq = req.clone();
        treq.operation = "UPDATE".into();
        treq.object = target.clone();
        treq.old_object = target.clone();
        treq.sub_resource = route(&constraints, &target);
        match mutate(&runnable, &treq) {
            CelPolicyOutcome::Applied(o) => out.push(o),
            CelPolicyOutcome::NotMatched => {}
            CelPolicyOutcome::Error(e) => return CelPolicyOutcome::Error(e),
            CelPolicyOutcome::Unsupported { message, why } => {
                return CelPolicyOutcome::Unsupported { message, why };
            }
        }
    }
    CelPolicyOutcome::Applied(out)
}

/// The subresource a target is updated through: the first target rule naming one of
/// the target's resource (`pods/resize`), else none.
fn route(constraints: &Value, target: &Value) -> String {
    let (_, _, plural) = resource_of(target);
    list(constraints, "resourceRules")
        .flat_map(|r| list(r, "resources"))
        .filter_map(Value::as_str)
        .filter_map(|r| r.split_once('/'))
        .find(|(parent, sub)| *parent == plural && *sub != "*")
        .map(|(_, sub)| sub.to_string())
        .unwrap_or_default()
}

//! A MutatingPolicy's mutate-existing evaluation as `kyverno test` runs it on the test's
//! `targetResources` (`cmd/cli/kubectl-kyverno/processor/policy_processor.go`:
//! `discoverCELTargets`, `targetMatchPredicate`; `pkg/cel/policies/mpol/engine`
//! `Evaluate`): a policy with `evaluation.mutateExisting.enabled` selects a target by its
//! `targetMatchConstraints.expression` (evaluated on the trigger; the objects it returns,
//! one or a list's `items`, by namespace and name) or else by its
//! `targetMatchConstraints` resource rules (its `matchConstraints` when it has none),
//! whatever their operations; the mutations then run on the target.

use super::cel_policy::{mutations, prepare_matched};
use super::*;

/// The target after the policy's mutations, for `trigger` (the admission request of a
/// test resource); `NotMatched` when the policy does not select the target.
pub fn mutate_existing_target(
    policy: &Value,
    trigger: &VapRequest,
    target: &Value,
) -> CelPolicyOutcome<Value> {
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    if spec.pointer("/evaluation/mutateExisting/enabled") != Some(&Value::Bool(true)) {
        return CelPolicyOutcome::NotMatched;
    }
    let tc = spec.get("targetMatchConstraints").unwrap_or(&Value::Null);
    let mut on_target = trigger.clone();
    on_target.object = target.clone();
    on_target.old_object = Value::Null;
    on_target.parent = None;
    on_target.sub_resource = String::new();
    match tc
        .get("expression")
        .and_then(Value::as_str)
        .filter(|e| !e.is_empty())
    {
        Some(expr) => match selected_by_expression(spec, trigger, expr, target) {
            Ok(true) => {}
            Ok(false) => return CelPolicyOutcome::NotMatched,
            Err(e) => return CelPolicyOutcome::from_eval(e, "targetMatchConstraints"),
        },
        None => {
            let mut constraints = if list(tc, "resourceRules").next().is_some() {
                tc.clone()
            } else {
                spec.get("matchConstraints").cloned().unwrap_or(Value::Null)
            };
            if let Some(rules) = constraints
                .get_mut("resourceRules")
                .and_then(Value::as_array_mut)
            {
                for r in rules {
                    r["operations"] = json!(["*"]);
                }
            }
            if !matches_resources(&constraints, &on_target, true) {
                return CelPolicyOutcome::NotMatched;
            }
        }
    }
    match prepare_matched(policy, "NamespacedMutatingPolicy", &on_target, false) {
        Ok(ctx) => mutations(policy, &on_target, ctx),
        Err(outcome) => outcome,
    }
}

/// Whether the expression, on the trigger, returns the target (by namespace and name).
fn selected_by_expression(
    spec: &Value,
    trigger: &VapRequest,
    expr: &str,
    target: &Value,
) -> Result<bool, EvalError> {
    let mut scope = base_context(trigger, &Value::Null);
    scope.define_variables(spec);
    let out = eval(&scope, expr)?;
    let out = from_cel(&out).map_err(|e| EvalError::failed(e.to_string()))?;
    if !out.is_object() {
        return Err(EvalError::failed(
            "output type of the target selector expression must be a map",
        ));
    }
    let key = |o: &Value| {
        let ns = o.pointer("/metadata/namespace").and_then(Value::as_str);
        (ns.unwrap_or("").to_string(), name_of(o).to_string())
    };
    let want = key(target);
    Ok(match out.get("items").and_then(Value::as_array) {
        Some(items) => items.iter().any(|i| key(i) == want),
        None => key(&out) == want,
    })
}

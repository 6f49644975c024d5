//! The API server's MutatingAdmissionPolicy plugin (admissionregistration.k8s.io, on
//! ahead of the mutating webhooks): each policy with a binding naming it mutates the
//! request with its CEL mutations, as Kyverno's MutatingPolicy evaluator runs them
//! (the same `matchConstraints`/`matchConditions`/`variables`/`mutations` shape;
//! k8s.io/apiserver pkg/admission/plugin/policy/mutating). A binding's `matchResources`
//! narrows it; params (`paramKind`/`paramRef`) are not modelled and make the test
//! undecidable. A failing policy refuses the request unless its `failurePolicy` is
//! `Ignore`.

use serde_json::{Value, json};

use super::{Answer, Skip, text};
use crate::offline::vap::{self, CelPolicyOutcome, VapRequest};

pub(crate) fn is_admission_group(o: &Value) -> bool {
    text(o, "/apiVersion").starts_with("admissionregistration.k8s.io/")
}

/// `policy` as a MutatingPolicy the CEL evaluator runs: no autogen copies (the API
/// server has none), and `constraints` as its match constraints.
pub(crate) fn as_mutating_policy(policy: &Value, constraints: &Value) -> Value {
    let mut copy = policy.clone();
    copy["kind"] = json!("MutatingPolicy");
    copy["spec"]["autogen"] = json!({"podControllers": {"controllers": []}});
    copy["spec"]["matchConstraints"] = constraints.clone();
    copy
}

/// Whether a binding's `matchResources` selects the request: its selectors added to
/// the policy's rules, its own rules (when it has any) checked as a policy of their own.
pub(crate) fn binding_selects(
    policy: &Value,
    binding: &Value,
    req: &VapRequest,
) -> Result<bool, Answer> {
    let Some(mr) = binding
        .pointer("/spec/matchResources")
        .filter(|m| m.is_object())
    else {
        return Ok(true);
    };
    let mut constraints = policy
        .pointer("/spec/matchConstraints")
        .cloned()
        .unwrap_or(json!({}));
    for k in [
        "namespaceSelector",
        "objectSelector",
        "excludeResourceRules",
    ] {
        if let Some(v) = mr.get(k) {
            constraints[k] = v.clone();
        }
    }
    if mr
        .get("resourceRules")
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty())
    {
        constraints["resourceRules"] = mr["resourceRules"].clone();
    }
    let mut probe = as_mutating_policy(policy, &constraints);
    probe["spec"]["matchConditions"] = json!([]);
    probe["spec"]["mutations"] = json!([]);
    match vap::evaluate_mutating_policy(&probe, req) {
        CelPolicyOutcome::NotMatched => Ok(false),
        CelPolicyOutcome::Unsupported { message, .. } => {
            Err(Answer::Undecidable(Skip::Engine(message)))
        }
        _ => Ok(true),
    }
}

/// The MutatingAdmissionPolicyBindings among `objects` that name the policy `name`.
pub(crate) fn bindings_of<'a>(objects: &'a [Value], name: &str) -> Vec<&'a Value> {
    objects
        .iter()
        .filter(|o| {
            text(o, "/kind") == "MutatingAdmissionPolicyBinding"
                && is_admission_group(o)
                && text(o, "/spec/policyName") == name
        })
        .collect()
}

/// The object after every bound MutatingAdmissionPolicy among `objects`, in name order.
pub(super) fn mutate(objects: &[Value], req: &VapRequest) -> Result<Value, Answer> {
    let mut policies: Vec<&Value> = objects
        .iter()
        .filter(|o| text(o, "/kind") == "MutatingAdmissionPolicy" && is_admission_group(o))
        .collect();
    policies.sort_by_key(|p| text(p, "/metadata/name"));
    let mut req = req.clone();
    for policy in policies {
        let name = text(policy, "/metadata/name");
        for binding in bindings_of(objects, &name) {
            if policy.pointer("/spec/paramKind").is_some()
                || binding.pointer("/spec/paramRef").is_some()
            {
                return Err(Answer::Undecidable(Skip::Engine(
                    "MutatingAdmissionPolicy params are not modelled".into(),
                )));
            }
            if !binding_selects(policy, binding, &req)? {
                continue;
            }
            let constraints = policy
                .pointer("/spec/matchConstraints")
                .cloned()
                .unwrap_or(json!({}));
            let runnable = as_mutating_policy(policy, &constraints);
            match vap::evaluate_mutating_policy(&runnable, &req) {
                CelPolicyOutcome::NotMatched => {}
                CelPolicyOutcome::Applied(object) => req.object = object,
                CelPolicyOutcome::Unsupported { message, .. } => {
                    return Err(Answer::Undecidable(Skip::Engine(message)));
                }
                CelPolicyOutcome::Error(message) => {
                    if text(policy, "/spec/failurePolicy") != "Ignore" {
                        return Err(Answer::Refused(format!(
                            "policy '{name}' with binding '{}' denied request: {message}",
                            text(binding, "/metadata/name")
                        )));
                    }
                }
            }
        }
    }
    Ok(req.object)
}

//! Kubernetes ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) evaluated
//! in-process: binding and policy matching, params, matchConditions, variables and CEL
//! validations, with the API server's actions, failure policy and denial text; also
//! Kyverno's `validate.cel` rules and `ValidatingPolicy` (with its autogen copies for
//! Pod controllers), which run on the same evaluator. Pure and
//! synchronous; it must not touch the network, and what the CEL interpreter cannot do
//! comes back as an error with its typed reason ([`Unsupported`]), never as an allow.

mod authz;
mod autogen;
mod cel_env;
mod cel_policy;
pub mod celtype;
mod codecs;
pub(crate) use codecs::gunzip;
#[cfg(test)]
pub(crate) use codecs::gzip;
mod cost;
mod dpol;
mod generator;
mod image;
mod kyverno;
mod libs;
mod literal;
mod matching;
mod mpol_targets;
mod mutate_existing;
mod params;
mod resource_lib;
mod services;
mod shape;
mod template;
mod unsupported;
mod validation;
mod webhook_match;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use cel::extractors::This;
use cel::{Context, Env, ExecutionError, Program};
use serde_json::{Value, json};

pub use autogen::{autogen_kinds, validating_autogen_copy};
use cel_env::*;
pub use cel_policy::{
    CelPolicyOutcome, audit_annotations, evaluate_generating_policy, evaluate_mutating_policy,
    generate_with_policies, mutate_with_policies,
};
pub use dpol::{deleting_policy_unparsed, deleting_policy_uses_http, evaluate_deleting_policy};
pub use generator::generator_overload_mismatch;
pub use kyverno::{
    CelVerdict, Exemption, evaluate_json_policy, evaluate_kyverno_cel, evaluate_validating_policy,
    exception_applies, exemption,
};
use matching::*;
pub use matching::{
    CliUnselected, namespace_object, resource_of, selector_matches, unselected_in_cli,
};
pub use mpol_targets::mutate_targets;
pub use mutate_existing::mutate_existing_target;
use params::*;
pub use services::{CliServices, GlobalData};
pub use unsupported::{CostExceeded, EvalError, NoJsonForm, PolicyError, Unsupported};
pub use validation::Applied;
use validation::*;
pub use webhook_match::{
    ImageCheck, WebhookCall, engine_selects, image_policy_check, offloadable, webhook_call,
    webhook_conditions,
};

/// One admission request as the API server hands it to validating admission.
#[derive(Debug, Clone, Default)]
pub struct VapRequest {
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub operation: String,
    /// Null on DELETE.
    pub object: Value,
    /// Null on CREATE.
    pub old_object: Value,
    /// The request's namespace object (null for cluster-scoped objects); a missing
    /// Namespace manifest is best given as `{metadata: {name, labels}}`.
    pub namespace_object: Value,
    pub user: VapUser,
    pub dry_run: bool,
    pub sub_resource: String,
    /// The `apiVersion` and `kind` of the resource a subresource request is for, when the
    /// object is the subresource's (a `Binding` for `pods/binding`); `None` takes the
    /// object's own.
    pub parent: Option<(String, String)>,
    /// The objects Kyverno's `resource.get` reads in a ValidatingPolicy (a test's
    /// cluster resources); `None` leaves the library out, as for a VAP.
    pub cluster: Option<Arc<Vec<Value>>>,
    /// What `kyverno test` serves Kyverno's `globalContext`, `http` and `image` libraries
    /// from the test file; `None` leaves those libraries out (an expression calling one
    /// is `unsupported`).
    pub services: Option<Arc<CliServices>>,
    /// What the CEL PolicyExceptions that hold for this request allow without exempting
    /// it whole (`exceptions.allowedImages`, `exceptions.allowedValues`).
    pub exceptions: Allowances,
    /// The admission request that triggered a background mutation of this object (a
    /// MutatingPolicy's mutate-existing target): `request` is the trigger's, `object` the
    /// target (pkg/background/mpol/processor.go passes the UpdateRequest's admission
    /// request with the target's attributes).
    pub trigger: Option<Arc<VapRequest>>,
    /// The cluster's RBAC, which the `authorizer` library asks; `None` leaves it
    /// unsupported.
    pub authorizer: Option<Arc<crate::offline::rbac::Authorizer>>,
}

/// The images and values CEL PolicyExceptions allow (their `images` and
/// `allowedValues`), which a policy reads as `exceptions.allowedImages` and
/// `exceptions.allowedValues`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowances {
    pub images: Vec<String>,
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct VapUser {
    pub username: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

/// A Deny-action failure, as the API server reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VapDenial {
    pub policy: String,
    pub binding: String,
    pub message: String,
    /// `Invalid` unless the validation names another reason.
    pub reason: String,
    pub code: u16,
}

impl VapDenial {
    /// The text after `… is forbidden: ` in the API server's Status message.
    pub fn text(&self) -> String {
        format!(
            "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {}",
            self.policy, self.binding, self.message
        )
    }

    /// The whole Status message for `object`, as `kubectl` shows it.
    pub fn status_message(&self, object: &Value) -> String {
        forbidden(object, &self.text())
    }
}

/// The API server's `<resource>.<group> "<name>" is forbidden: <why>` for `object`.
pub fn forbidden(object: &Value, why: &str) -> String {
    let (group, _, resource) = resource_of(object);
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let res = if group.is_empty() {
        resource
    } else {
        format!("{resource}.{group}")
    };
    format!("{res} \"{name}\" is forbidden: {why}")
}

/// An evaluation that could not be completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VapError {
    pub policy: String,
    pub binding: String,
    pub message: String,
    /// Why the interpreter (or offline evaluation) cannot do this, as opposed to an
    /// error the API server would hit too (a missing field, a type mismatch).
    pub unsupported: Option<Unsupported>,
}

impl VapError {
    /// The reason alone when offline evaluation is the cause, else the message.
    pub fn reason(&self) -> String {
        match &self.unsupported {
            Some(why) => why.to_string(),
            None => self.message.clone(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VapOutcome {
    pub allowed: bool,
    /// In evaluation order; the API server reports the first.
    pub denials: Vec<VapDenial>,
    pub warnings: Vec<String>,
    /// Audit-action failures (`policy/binding: message`).
    pub audits: Vec<String>,
    pub errors: Vec<VapError>,
}

impl VapOutcome {
    /// The first error the interpreter could not evaluate, if any.
    pub fn unsupported(&self) -> Option<&VapError> {
        self.errors.iter().find(|e| e.unsupported.is_some())
    }
}

pub(super) fn kind_of(v: &Value) -> &str {
    v.get("kind").and_then(Value::as_str).unwrap_or("")
}

pub(super) fn name_of(v: &Value) -> &str {
    v.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Runs every ValidatingAdmissionPolicyBinding in `objects` against `req`. Params are
/// looked up in `objects` too.
pub fn evaluate(objects: &[Value], req: &VapRequest) -> VapOutcome {
    let policies: BTreeMap<&str, &Value> = objects
        .iter()
        .filter(|o| kind_of(o) == "ValidatingAdmissionPolicy")
        .map(|o| (name_of(o), o))
        .collect();
    let mut out = VapOutcome {
        allowed: true,
        ..Default::default()
    };
    for binding in objects
        .iter()
        .filter(|o| kind_of(o) == "ValidatingAdmissionPolicyBinding")
    {
        let policy_name = binding
            .pointer("/spec/policyName")
            .and_then(Value::as_str)
            .unwrap_or("");
        let Some(policy) = policies.get(policy_name) else {
            continue;
        };
        evaluate_binding(objects, policy, Some(binding), req, &mut out);
    }
    out.allowed = out.denials.is_empty();
    out
}

/// Runs one policy, with a binding or, as `kyverno test` does for a policy without any,
/// on its own match constraints with the Deny action.
pub fn evaluate_binding(
    objects: &[Value],
    policy: &Value,
    binding: Option<&Value>,
    req: &VapRequest,
    out: &mut VapOutcome,
) -> Applied {
    let pname = name_of(policy).to_string();
    let bname = binding.map(name_of).unwrap_or("").to_string();
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let constraints = spec.get("matchConstraints").unwrap_or(&Value::Null);
    if !matches_resources(constraints, req, true) {
        return Applied::NotMatched;
    }
    if let Some(b) = binding
        && let Some(mr) = b.pointer("/spec/matchResources")
        && !matches_resources(mr, req, false)
    {
        return Applied::NotMatched;
    }
    // The API server would have refused to create a policy over the cost limit: it
    // exists only as the error.
    if let Err(message) = check_spec_cost(spec) {
        out.errors.push(VapError {
            policy: pname,
            binding: bname,
            message: format!("{} {}: {message}", kind_of(policy), name_of(policy)),
            unsupported: None,
        });
        return Applied::Errored;
    }
    let actions: Vec<String> = match binding {
        Some(b) => b
            .pointer("/spec/validationActions")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        // A Kyverno ValidatingPolicy carries its actions itself; a bare VAP denies.
        None => {
            let own: Vec<String> = list(spec, "validationActions")
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
            if own.is_empty() {
                vec!["Deny".into()]
            } else {
                own
            }
        }
    };
    let fail_closed = spec.get("failurePolicy").and_then(Value::as_str) != Some("Ignore");
    let mut ctx = Report {
        policy: pname,
        binding: bname,
        actions,
        fail_closed,
        out,
        applied: Applied::Passed,
    };

    let params_list = match params_for(objects, spec, binding, req) {
        Ok(p) => p,
        Err(ParamsMissing::Allow) => return Applied::NotMatched,
        Err(ParamsMissing::Deny(msg)) => {
            // A binding that cannot be configured denies under `Fail`, whatever its
            // actions say, and is skipped under `Ignore`.
            let message = format!("failed to configure binding: {msg}");
            ctx.out.errors.push(VapError {
                policy: ctx.policy.clone(),
                binding: ctx.binding.clone(),
                message: message.clone(),
                unsupported: None,
            });
            if !ctx.fail_closed {
                return Applied::Errored;
            }
            ctx.out.denials.push(VapDenial {
                policy: ctx.policy.clone(),
                binding: ctx.binding.clone(),
                message,
                reason: "Invalid".into(),
                code: 422,
            });
            return Applied::Failed;
        }
    };
    let kyverno_env = matches!(
        kind_of(policy),
        "ValidatingPolicy" | "NamespacedValidatingPolicy"
    );
    for params in params_list {
        run_validations(spec, req, &params, &mut ctx, kyverno_env);
    }
    ctx.applied
}

#[cfg(test)]
mod bounds_tests;
#[cfg(test)]
mod env_tests;
#[cfg(test)]
mod exception_tests;
#[cfg(test)]
mod json_tests;
#[cfg(test)]
mod services_tests;
#[cfg(test)]
mod tests;

//! The background-scan results of ValidatingPolicies and NamespacedValidatingPolicies,
//! as the reports controller writes them.
//!
//! Modelled from Kyverno v1.19.0:
//! - pkg/controllers/report/background/controller.go (`reconcile`: the policies of
//!   `celpolicies.RemoveNoneBackgroundPolicies`, a NamespacedValidatingPolicy only for its
//!   namespace's resources; a generated policy is left out) and
//!   pkg/controllers/report/utils/scanner.go (`ScanResource`: a CREATE by an empty user,
//!   results of unmet match conditions dropped by `filterMatchConditionSkips`).
//! - pkg/cel/policies/vpol/engine/engine.go (`handlePolicy`): match constraints first, no
//!   result when they do not match; then pkg/cel/policies/vpol/compiler/policy.go
//!   (`evaluateWithData`): the CEL PolicyExceptions (a whole exemption is a `pass` or
//!   `skip` result of the rule `exception`, by the `reportResult` of the one with the
//!   highest `polex.kyverno.io/priority`), the match conditions, then the validations in
//!   order, the first failure or error deciding: `fail` with the validation's message and
//!   the `cel.validationIndex` property, `error`, or `pass` with the message `success`.
//! - pkg/utils/report/results.go (`ToPolicyReportResult`): source
//!   `KyvernoValidatingPolicy`, no rule name, `process` from `selectProcess`, the
//!   `exceptions` property naming the exceptions that held.
//! - pkg/controllers/report/aggregate/utils.go (`MergeReports`): one result per
//!   (source, policy) and resource.
//!
//! Not modelled (the report is then a typed skip): admission reports of a policy whose
//! background scan is off, `auditAnnotations` as properties, JSON-mode policies, and the
//! wording of errors and of messages Kyverno words differently from the API server.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::super::cluster::{Cluster, text};
use super::reports::{Reported, reference};
use crate::offline::kyverno::RuleStatus;
use crate::offline::vap;

pub const VPOL_KINDS: &[&str] = &["ValidatingPolicy", "NamespacedValidatingPolicy"];

/// `evaluation.<field>.enabled`, on unless turned off.
pub(super) fn enabled(p: &Value, field: &str) -> bool {
    p.pointer(&format!("/spec/evaluation/{field}/enabled"))
        .and_then(Value::as_bool)
        .unwrap_or(true)
}

fn is_vpol(o: &Value) -> bool {
    VPOL_KINDS.contains(&text(o, "/kind").as_str())
}

/// `IsPolicyReportable`.
pub(super) fn reportable(p: &Value) -> bool {
    p.pointer("/metadata/labels/reports.kyverno.io~1disabled")
        .is_none()
}

/// Why the ValidatingPolicies of the cluster make reports the model cannot tell, if any.
pub fn vpols_unmodelled(cluster: &Cluster) -> Option<String> {
    let p = cluster.objects.iter().find(|p| {
        is_vpol(p)
            && reportable(p)
            && ((!enabled(p, "background") && enabled(p, "admission"))
                || text(p, "/spec/evaluation/mode") == "JSON")
    })?;
    Some(if text(p, "/spec/evaluation/mode") == "JSON" {
        "reports of a JSON-mode ValidatingPolicy".into()
    } else {
        "admission reports of a ValidatingPolicy without background scan".into()
    })
}

/// The ValidatingPolicies the background scan runs.
pub fn background_vpols(cluster: &Cluster) -> Vec<&Value> {
    cluster
        .objects
        .iter()
        .filter(|p| {
            is_vpol(p) && enabled(p, "background") && reportable(p) && !super::left_to_generated(p)
        })
        .collect()
}

/// `cache.MetaNamespaceKeyFunc`: `namespace/name` for a namespaced policy kind.
pub(super) fn policy_key(p: &Value) -> String {
    let (ns, name) = (text(p, "/metadata/namespace"), text(p, "/metadata/name"));
    if text(p, "/kind").starts_with("Namespaced") && !ns.is_empty() {
        format!("{ns}/{name}")
    } else {
        name
    }
}

/// What the background scan of `object` gives for `vpols`.
pub fn vpol_scan(cluster: &Cluster, object: &Value, vpols: &[&Value]) -> Vec<Reported> {
    let objects = cluster.cel_policy_objects();
    let mut req = cluster.vap_request(object, None);
    req.user = vap::VapUser::default();
    req.cluster = Some(Arc::new(cluster.objects.clone()));
    vpols
        .iter()
        .filter_map(|p| scan_one(&objects, p, &req))
        .collect()
}

/// A copy of `p` with `validations` and Deny as its action (the result, not the action,
/// makes a report).
fn with_validations(p: &Value, validations: Value) -> Value {
    let mut p = p.clone();
    p["spec"]["validations"] = validations;
    p["spec"]["validationActions"] = json!(["Deny"]);
    p
}

/// The decision of one policy on one resource, and why it cannot be written, if it
/// cannot.
pub(super) struct Decision {
    pub(super) status: RuleStatus,
    pub(super) rule: &'static str,
    pub(super) message: Option<String>,
    pub(super) properties: Map<String, Value>,
    pub(super) unmodelled: Option<String>,
    /// What the engine lacked was a registry's or the network's.
    pub(super) registry: bool,
}

fn scan_one(objects: &[Value], p: &Value, req: &vap::VapRequest) -> Option<Reported> {
    // Match constraints alone (no conditions, no validations, no exceptions).
    let mut probe = with_validations(p, json!([]));
    if let Some(spec) = probe.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("matchConditions");
    }
    let mut out = vap::VapOutcome::default();
    if vap::evaluate_validating_policy(&[], &probe, req, &mut out) == vap::Applied::NotMatched {
        return None;
    }
    let decision = match exempted(objects, p, req) {
        Some(d) => d,
        None => validated(objects, p, req)?,
    };
    let process = if enabled(p, "background") {
        "background scan"
    } else {
        "admission review"
    };
    Some(reported(
        p,
        "KyvernoValidatingPolicy",
        decision,
        process,
        "the events of a ValidatingPolicy",
    ))
}

/// A CEL policy's decision as its report result (pkg/utils/report/results.go
/// `ToPolicyReportResult`: the `process` property, a failure of an unscored policy a
/// warning); `events` says why the events it makes are not told.
pub(super) fn reported(
    p: &Value,
    source: &'static str,
    decision: Decision,
    process: &str,
    events: &str,
) -> Reported {
    let annotations = p
        .pointer("/metadata/annotations")
        .cloned()
        .unwrap_or(Value::Null);
    let unscored = text(&annotations, "/policies.kyverno.io~1scored") == "false";
    let mut properties = decision.properties;
    properties.insert("process".into(), json!(process));
    Reported {
        source,
        policy: policy_key(p),
        rule: decision.rule.to_string(),
        status: match decision.status {
            RuleStatus::Fail if unscored => RuleStatus::Warn,
            s => s,
        },
        message: decision.message,
        unmodelled: decision.unmodelled,
        annotations,
        properties,
        policy_ref: reference(p),
        events_unmodelled: Some(events.into()),
        registry: decision.registry,
    }
}

/// The result of a whole exemption by the CEL PolicyExceptions that hold, if one holds
/// (the same for the ValidatingPolicies, MutatingPolicies and GeneratingPolicies:
/// pkg/cel/policies/{vpol,mpol,gpol}/engine/engine.go). Only a ValidatingPolicy under
/// `failurePolicy: Ignore` takes an exception that fails to evaluate as not holding.
pub(super) fn exempted(objects: &[Value], p: &Value, req: &vap::VapRequest) -> Option<Decision> {
    let (name, kind) = (text(p, "/metadata/name"), text(p, "/kind"));
    let ignore = is_vpol(p) && text(p, "/spec/failurePolicy") == "Ignore";
    let mut held: Vec<&Value> = Vec::new();
    let mut whole = false;
    for e in objects.iter().filter(|e| {
        text(e, "/kind") == "PolicyException"
            && text(e, "/apiVersion").starts_with("policies.kyverno.io/")
            && e.pointer("/spec/policyRefs")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|r| text(r, "/name") == name && text(r, "/kind") == kind)
    }) {
        let holds = match vap::exception_applies(e, req) {
            Ok(h) => h,
            Err(_) if whole => continue,
            // As the admission path takes it (`vap::exemption`).
            Err(_) if ignore => false,
            Err(err) => {
                return Some(Decision {
                    status: RuleStatus::Error,
                    rule: "evaluation",
                    message: None,
                    properties: Map::new(),
                    registry: err
                        .unsupported
                        .as_ref()
                        .is_some_and(vap::Unsupported::needs_registry),
                    unmodelled: err
                        .unsupported
                        .map(|u| format!("a PolicyException the engine did not evaluate: {u}")),
                });
            }
        };
        if holds {
            held.push(e);
            let empty = |k: &str| {
                e.pointer(&format!("/spec/{k}"))
                    .and_then(Value::as_array)
                    .is_none_or(Vec::is_empty)
            };
            whole |= empty("images") && empty("allowedValues");
        }
    }
    if !whole {
        return None;
    }
    // The first of the highest priority above 0, else the first.
    let mut selected = held[0];
    let mut highest = 0;
    for e in &held {
        if let Ok(n) = text(e, "/metadata/labels/polex.kyverno.io~1priority").parse::<i64>()
            && n > highest
        {
            highest = n;
            selected = e;
        }
    }
    let keys: Vec<String> = held
        .iter()
        .map(|e| {
            let (ns, n) = (text(e, "/metadata/namespace"), text(e, "/metadata/name"));
            if ns.is_empty() {
                n
            } else {
                format!("{ns}/{n}")
            }
        })
        .collect();
    let names: Vec<String> = held.iter().map(|e| text(e, "/metadata/name")).collect();
    let (status, verb) = match text(selected, "/spec/reportResult").as_str() {
        "pass" => (RuleStatus::Pass, "passed"),
        _ => (RuleStatus::Skip, "skipped"),
    };
    let mut properties = Map::new();
    properties.insert("exceptions".into(), json!(names.join(",")));
    Some(Decision {
        status,
        rule: "exception",
        message: Some(format!(
            "rule is {verb} due to policy exception: {}",
            keys.join(", ")
        )),
        properties,
        unmodelled: None,
        registry: false,
    })
}

/// The validations run in order: the first that fails or errs decides; `None` when the
/// match conditions do not hold.
fn validated(objects: &[Value], p: &Value, req: &vap::VapRequest) -> Option<Decision> {
    let validations: Vec<Value> = p
        .pointer("/spec/validations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut properties = Map::new();
    let mut unmodelled = None;
    if p.pointer("/spec/auditAnnotations")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
    {
        unmodelled = Some("a ValidatingPolicy's auditAnnotations in a result's properties".into());
    }
    // One more validation at a time, so that the first to fail or err is known.
    for i in 0..validations.len().max(1) {
        let upto = validations.get(..=i).unwrap_or_default().to_vec();
        let mut out = vap::VapOutcome::default();
        let applied = vap::evaluate_validating_policy(
            objects,
            &with_validations(p, json!(upto)),
            req,
            &mut out,
        );
        if applied == vap::Applied::NotMatched {
            return None;
        }
        if let Some(e) = out.errors.first() {
            return Some(Decision {
                status: RuleStatus::Error,
                rule: "",
                message: None,
                properties,
                registry: e
                    .unsupported
                    .as_ref()
                    .is_some_and(vap::Unsupported::needs_registry),
                unmodelled: e
                    .unsupported
                    .as_ref()
                    .map(|u| format!("a ValidatingPolicy the engine did not evaluate: {u}"))
                    .or(unmodelled),
            });
        }
        if let Some(d) = out.denials.first() {
            properties.insert("cel.validationIndex".into(), json!(i.to_string()));
            return Some(Decision {
                status: RuleStatus::Fail,
                rule: "",
                message: worded(&validations[i], &d.message),
                properties,
                unmodelled,
                registry: false,
            });
        }
    }
    Some(Decision {
        status: RuleStatus::Pass,
        rule: "",
        message: Some("success".into()),
        properties,
        unmodelled,
        registry: false,
    })
}

/// The failure message when Kyverno's wording is the evaluator's: a `messageExpression`
/// that gave its own text, or a plain non-empty `message`. A `messageExpression` that
/// fails or gives nothing is worded otherwise by Kyverno (`failed to evaluate message
/// expression: …`, `CEL expression validation failed at index N`).
fn worded(validation: &Value, message: &str) -> Option<String> {
    let plain = text(validation, "/message");
    let fallback = format!(
        "failed expression: {}",
        text(validation, "/expression").trim()
    );
    if message == fallback {
        return None;
    }
    if validation.get("messageExpression").is_some() && message == plain {
        return None;
    }
    Some(message.to_string())
}

#[cfg(test)]
#[path = "reports_cel_tests.rs"]
mod tests;

//! The background-scan results of MutatingPolicies, NamespacedMutatingPolicies and
//! labelled MutatingAdmissionPolicies, as the reports controller writes them.
//!
//! Modelled from Kyverno v1.19.0:
//! - pkg/controllers/report/background/controller.go (`reconcile`: the MutatingPolicies
//!   of `celpolicies.RemoveNoneBackgroundPolicies`, a NamespacedMutatingPolicy only for
//!   its namespace's resources, one whose MutatingAdmissionPolicy was generated left out;
//!   the MutatingAdmissionPolicies labelled `reports.kyverno.io/enabled`, from
//!   pkg/controllers/report/utils/utils.go `FetchMutatingAdmissionPolicies*`, with every
//!   binding naming them).
//! - pkg/controllers/report/utils/scanner.go (`ScanResource`): each resource as a CREATE
//!   by an empty user; a MutatingPolicy's `pass` without exceptions becomes `fail`
//!   "mutation is not applied" when its mutations would still change the resource (its
//!   match-condition skips are kept, unlike a ValidatingPolicy's).
//! - pkg/cel/policies/mpol/engine/engine.go (`handlePolicy`): no result when the match
//!   constraints do not select the resource; a whole CEL PolicyException gives the
//!   `exception` result (reports_cel.rs); unmet match conditions a `skip` "skip"; an
//!   evaluation error the `evaluation` error; else `pass` "success" with the evaluated
//!   `auditAnnotations` as properties (pkg/cel/policies/mpol/compiler/policy.go).
//! - pkg/admissionpolicy/mutate.go (`Mutate`, `processMAPWithClient`,
//!   `processMAPNoBindings`, `mutateResource`): a MutatingAdmissionPolicy as a CREATE by
//!   the sentinel user; of the bindings that select the resource, the last decides:
//!   `skip` "match conditions aren't met", `fail` "mutation is not applied" when its
//!   mutations would change the resource, else `pass` "mutation is successfully applied".
//! - pkg/utils/report/results.go (`ToPolicyReportResult`): sources
//!   `KyvernoMutatingPolicy` (the policy's key, the rule's name, `process` from
//!   `selectProcess`) and `MutatingAdmissionPolicy` (policy and rule the policy's name,
//!   the `mapBinding` property, `process` "background scan").
//!
//! Not modelled (the report is then a typed skip): admission reports of a MutatingPolicy
//! whose background scan is off, or that the scan does not redo (an UPDATE-only match),
//! the reports of mutate-existing policies, params, failing match conditions or patches
//! of a MutatingAdmissionPolicy, and the wording of evaluation errors.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::super::cluster::map::{
    as_mutating_policy, binding_selects, bindings_of, is_admission_group,
};
use super::super::cluster::{Cluster, text};
use super::reports::{Reported, background_user, vap_reported};
use super::reports_cel::{Decision, enabled, exempted, reportable, reported};
use crate::offline::kyverno::RuleStatus;
use crate::offline::vap::{self, CelPolicyOutcome, VapRequest};

/// The policy kinds whose reports this module tells.
pub const KINDS: &[&str] = &[
    "MutatingPolicy",
    "NamespacedMutatingPolicy",
    "MutatingAdmissionPolicy",
];

fn is_mpol(o: &Value) -> bool {
    matches!(
        text(o, "/kind").as_str(),
        "MutatingPolicy" | "NamespacedMutatingPolicy"
    )
}

/// Why the MutatingPolicies of the cluster make reports the model cannot tell, if any.
pub fn mpols_unmodelled(cluster: &Cluster) -> Option<String> {
    let p = cluster.objects.iter().find(|p| {
        is_mpol(p)
            && reportable(p)
            && ((!enabled(p, "background") && enabled(p, "admission")) || mutates_existing(p))
    })?;
    Some(if mutates_existing(p) {
        "reports of a MutatingPolicy's mutate-existing updates".into()
    } else {
        "admission reports of a MutatingPolicy without background scan".into()
    })
}

/// `evaluation.mutateExisting.enabled` (off unless turned on).
fn mutates_existing(p: &Value) -> bool {
    p.pointer("/spec/evaluation/mutateExisting/enabled")
        .and_then(Value::as_bool)
        == Some(true)
}

/// The mutating policies the background scan runs.
pub struct Background<'c> {
    mpols: Vec<&'c Value>,
    maps: Vec<&'c Value>,
}

impl<'c> Background<'c> {
    pub fn of(cluster: &'c Cluster) -> Background<'c> {
        let mpols = cluster
            .objects
            .iter()
            .filter(|p| {
                is_mpol(p)
                    && enabled(p, "background")
                    && reportable(p)
                    && p.pointer("/status/generated").and_then(Value::as_bool) != Some(true)
            })
            .collect();
        let maps = cluster
            .objects
            .iter()
            .filter(|p| {
                text(p, "/kind") == "MutatingAdmissionPolicy"
                    && is_admission_group(p)
                    && vap_reported(p)
            })
            .collect();
        Background { mpols, maps }
    }

    /// What the background scan of `object` gives for these policies.
    pub fn scan(&self, cluster: &Cluster, object: &Value) -> Vec<Reported> {
        if self.mpols.is_empty() && self.maps.is_empty() {
            return Vec::new();
        }
        let objects = cluster.cel_policy_objects();
        let mut req = cluster.vap_request(object, None);
        req.user = vap::VapUser::default();
        req.cluster = Some(Arc::new(cluster.objects.clone()));
        let mut out: Vec<Reported> = self
            .mpols
            .iter()
            .filter_map(|p| mpol_one(&objects, p, &req))
            .collect();
        req.user = background_user();
        out.extend(self.maps.iter().filter_map(|p| map_one(cluster, p, &req)));
        out
    }
}

/// `p` with its match constraints alone: no conditions, no mutations.
fn constraints_only(p: &Value) -> Value {
    let mut probe = p.clone();
    if let Some(spec) = probe.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("matchConditions");
        spec.insert("mutations".into(), json!([]));
    }
    probe
}

fn selects(p: &Value, req: &VapRequest) -> bool {
    vap::evaluate_mutating_policy(&constraints_only(p), req) != CelPolicyOutcome::NotMatched
}

fn decision(status: RuleStatus, rule: &'static str, message: Option<&str>) -> Decision {
    Decision {
        status,
        rule,
        message: message.map(str::to_string),
        properties: Map::new(),
        unmodelled: None,
        registry: false,
    }
}

/// One MutatingPolicy on one resource.
fn mpol_one(objects: &[Value], p: &Value, req: &VapRequest) -> Option<Reported> {
    if !selects(p, req) {
        // Admission ran the policy on an UPDATE the scan (a CREATE) does not redo: its
        // admission result stays in the report.
        let mut update = req.clone();
        update.operation = "UPDATE".into();
        update.old_object = req.object.clone();
        if !selects(p, &update) {
            return None;
        }
        let mut d = decision(RuleStatus::Skip, "", None);
        d.unmodelled = Some(
            "an admission result of a MutatingPolicy the background scan does not redo".into(),
        );
        return Some(reported(p, "KyvernoMutatingPolicy", d, "", EVENTS));
    }
    let d = exempted(objects, p, req).unwrap_or_else(|| mutated(objects, p, req));
    let process = if enabled(p, "background") {
        "background scan"
    } else {
        "admission review"
    };
    Some(reported(p, "KyvernoMutatingPolicy", d, process, EVENTS))
}

const EVENTS: &str = "the events of a MutatingPolicy";

/// `req` with what partial CEL PolicyExceptions allow (`exceptions.allowedImages`,
/// `exceptions.allowedValues`).
pub(super) fn allowed(objects: &[Value], p: &Value, req: &VapRequest) -> VapRequest {
    let mut req = req.clone();
    if let Ok(vap::Exemption::Partial(a)) = vap::exemption(p, objects, &req) {
        req.exceptions.images.extend(a.images);
        req.exceptions.values.extend(a.values);
    }
    req
}

/// The decision of a MutatingPolicy no exception exempts.
fn mutated(objects: &[Value], p: &Value, req: &VapRequest) -> Decision {
    let req = allowed(objects, p, req);
    match vap::evaluate_mutating_policy(p, &req) {
        CelPolicyOutcome::NotMatched => decision(RuleStatus::Skip, "", Some("skip")),
        CelPolicyOutcome::Applied(patched) if patched != req.object => {
            decision(RuleStatus::Fail, "", Some("mutation is not applied"))
        }
        CelPolicyOutcome::Applied(patched) => {
            let mut after = req.clone();
            after.object = patched;
            match vap::audit_annotations(p, &after) {
                Ok(annotations) => {
                    let mut d = decision(RuleStatus::Pass, "", Some("success"));
                    for (k, v) in annotations {
                        d.properties.insert(k, json!(v));
                    }
                    d
                }
                Err(e) => evaluation_error(e.unsupported.map(|u| u.to_string())),
            }
        }
        CelPolicyOutcome::Error(_) => evaluation_error(None),
        CelPolicyOutcome::Unsupported { message, .. } => evaluation_error(Some(message)),
    }
}

/// `failed to evaluate policy: …` (the Go error's wording is not modelled).
fn evaluation_error(unsupported: Option<String>) -> Decision {
    let mut d = decision(RuleStatus::Error, "evaluation", None);
    d.unmodelled =
        unsupported.map(|u| format!("a MutatingPolicy the engine did not evaluate: {u}"));
    d
}

/// One MutatingAdmissionPolicy on one resource: of the bindings that select it, the
/// last one's result.
fn map_one(cluster: &Cluster, p: &Value, req: &VapRequest) -> Option<Reported> {
    let bindings = bindings_of(&cluster.objects, &text(p, "/metadata/name"));
    let constraints = p
        .pointer("/spec/matchConstraints")
        .cloned()
        .unwrap_or(json!({}));
    let runnable = as_mutating_policy(p, &constraints);
    if !selects(&runnable, req) {
        return None;
    }
    let each: Vec<Option<&Value>> = if bindings.is_empty() {
        vec![None]
    } else {
        bindings.into_iter().map(Some).collect()
    };
    // Each binding mutates the resource as it was; the result compares with what the
    // bindings before it made.
    let mut current = req.object.clone();
    let mut decided = None;
    for binding in each {
        if let Some(b) = binding {
            match binding_selects(p, b, req) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(_) => return Some(map_unmodelled(p, "a binding the engine did not match")),
            }
        }
        if p.pointer("/spec/paramKind").is_some()
            || binding.is_some_and(|b| b.pointer("/spec/paramRef").is_some())
        {
            return Some(map_unmodelled(p, "params"));
        }
        let mut conditions = runnable.clone();
        conditions["spec"]["mutations"] = json!([]);
        let (status, message) = match vap::evaluate_mutating_policy(&conditions, req) {
            CelPolicyOutcome::NotMatched => (RuleStatus::Skip, "match conditions aren't met"),
            CelPolicyOutcome::Applied(_) => match vap::evaluate_mutating_policy(&runnable, req) {
                CelPolicyOutcome::Applied(patched) => {
                    let same = patched == current;
                    current = patched;
                    if same {
                        (RuleStatus::Pass, "mutation is successfully applied")
                    } else {
                        (RuleStatus::Fail, "mutation is not applied")
                    }
                }
                _ => return Some(map_unmodelled(p, "a mutation that fails")),
            },
            _ => return Some(map_unmodelled(p, "match conditions that fail")),
        };
        let mut properties = Map::new();
        if let Some(b) = binding {
            properties.insert("mapBinding".into(), json!(text(b, "/metadata/name")));
        }
        decided = Some(map_reported(p, status, message, properties, None));
    }
    decided
}

fn map_unmodelled(p: &Value, what: &str) -> Reported {
    map_reported(
        p,
        RuleStatus::Error,
        "",
        Map::new(),
        Some(format!("a MutatingAdmissionPolicy's {what} in a report")),
    )
}

fn map_reported(
    p: &Value,
    status: RuleStatus,
    message: &str,
    properties: Map<String, Value>,
    unmodelled: Option<String>,
) -> Reported {
    let d = Decision {
        status,
        rule: "",
        message: Some(message.to_string()),
        properties,
        unmodelled,
        registry: false,
    };
    let mut r = reported(
        p,
        "MutatingAdmissionPolicy",
        d,
        "background scan",
        "the events of a MutatingAdmissionPolicy",
    );
    r.rule = text(p, "/metadata/name");
    r
}

#[cfg(test)]
#[path = "reports_mpol_tests.rs"]
mod tests;

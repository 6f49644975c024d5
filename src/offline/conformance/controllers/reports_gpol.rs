//! The report results of GeneratingPolicies and NamespacedGeneratingPolicies: each
//! UpdateRequest the background controller processes for a trigger leaves one, which
//! the reports controller merges into the trigger's report.
//!
//! Modelled from Kyverno v1.19.0:
//! - pkg/background/gpol/generate_controller.go (`ProcessUR`, `createReports`): a policy
//!   that matched nothing leaves no result; the others, when the policy is reportable,
//!   go into the trigger's ephemeral report (pkg/utils/report/new.go
//!   `BuildGenerateReport`).
//! - pkg/cel/policies/gpol/engine/engine.go (`generate`): no result when the match
//!   constraints do not select the trigger; a whole CEL PolicyException gives the
//!   `exception` result (reports_cel.rs); unmet match conditions no result
//!   (pkg/cel/policies/gpol/compiler/policy.go `Evaluate`); an evaluation error an error
//!   named by the policy; else `pass` "policy evaluated successfully", named by the
//!   policy, with the evaluated `auditAnnotations` as properties.
//! - pkg/utils/report/results.go (`ToPolicyReportResult`,
//!   `GenerationEngineResponseToReportResults`, `getResourceInfo`): source
//!   `KyvernoGeneratingPolicy`, `process` "admission review", the `generated-resources`
//!   property (`group/version, Kind=… Name=… Namespace=…`, joined by `; `).
//! - pkg/controllers/report/aggregate/utils.go (`MergeReports`): one result per (source,
//!   policy) and resource, the latest; results of policies gone are dropped.
//!
//! Not modelled (the report is then a typed skip): the wording of evaluation errors and
//! what the interpreter cannot evaluate.

use serde_json::{Map, Value, json};

use super::super::cluster::{Cluster, text};
use super::reports::Reported;
use super::reports_cel::{Decision, exempted, policy_key, reportable, reported};
use super::reports_mpol::allowed;
use crate::offline::kyverno::RuleStatus;
use crate::offline::vap::{self, CelPolicyOutcome, VapRequest};

/// The policy kinds whose reports this module tells.
pub const KINDS: &[&str] = &["GeneratingPolicy", "NamespacedGeneratingPolicy"];

const SOURCE: &str = "KyvernoGeneratingPolicy";

/// The result the UpdateRequest of `p` for the trigger in `req` leaves, `None` when it
/// leaves none; `made` are the objects it generated, as stored.
pub fn generated(
    objects: &[Value],
    p: &Value,
    req: &VapRequest,
    made: &[Value],
) -> Option<Reported> {
    // A deleted trigger has no report left.
    if !reportable(p) || req.object.is_null() {
        return None;
    }
    let mut probe = p.clone();
    if let Some(spec) = probe.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("matchConditions");
        spec.insert("generate".into(), json!([]));
    }
    if vap::evaluate_generating_policy(&probe, req) == CelPolicyOutcome::NotMatched {
        return None;
    }
    let d = match exempted(objects, p, req) {
        Some(d) if d.status == RuleStatus::Error => evaluation_error(d.unmodelled),
        Some(d) => d,
        None => evaluated(objects, p, req, made)?,
    };
    let rule = if d.rule.is_empty() {
        text(p, "/metadata/name")
    } else {
        d.rule.to_string()
    };
    let mut r = reported(
        p,
        SOURCE,
        d,
        "admission review",
        "the events of a GeneratingPolicy",
    );
    r.rule = rule;
    Some(r)
}

/// The decision of a GeneratingPolicy no exception exempts; `None` when its match
/// conditions do not hold. An empty rule stands for the policy's name.
fn evaluated(objects: &[Value], p: &Value, req: &VapRequest, made: &[Value]) -> Option<Decision> {
    let req = allowed(objects, p, req);
    match vap::evaluate_generating_policy(p, &req) {
        CelPolicyOutcome::NotMatched => None,
        CelPolicyOutcome::Applied(_) => Some(match vap::audit_annotations(p, &req) {
            Ok(annotations) => {
                let mut properties = Map::new();
                for (k, v) in annotations {
                    properties.insert(k, json!(v));
                }
                if !made.is_empty() {
                    let info: Vec<String> = made.iter().map(resource_info).collect();
                    properties.insert("generated-resources".into(), json!(info.join("; ")));
                }
                Decision {
                    status: RuleStatus::Pass,
                    rule: "",
                    message: Some("policy evaluated successfully".into()),
                    properties,
                    unmodelled: None,
                    registry: false,
                }
            }
            Err(e) => evaluation_error(e.unsupported.map(|u| u.to_string())),
        }),
        CelPolicyOutcome::Error(_) => Some(evaluation_error(None)),
        CelPolicyOutcome::Unsupported { message, .. } => Some(evaluation_error(Some(message))),
    }
}

/// `failed to evaluate policy: …` (the Go error's wording is not modelled).
fn evaluation_error(unsupported: Option<String>) -> Decision {
    Decision {
        status: RuleStatus::Error,
        rule: "",
        message: None,
        properties: Map::new(),
        unmodelled: unsupported
            .map(|u| format!("a GeneratingPolicy the engine did not evaluate: {u}")),
        registry: false,
    }
}

/// `getResourceInfo`: the object's group/version and kind (`GroupVersionKind.String`),
/// name and namespace.
fn resource_info(o: &Value) -> String {
    let av = text(o, "/apiVersion");
    let (group, version) = av.rsplit_once('/').unwrap_or(("", av.as_str()));
    let mut info = format!(
        "{group}/{version}, Kind={} Name={}",
        text(o, "/kind"),
        text(o, "/metadata/name")
    );
    let ns = text(o, "/metadata/namespace");
    if !ns.is_empty() {
        info.push_str(&format!(" Namespace={ns}"));
    }
    info
}

/// Whether `r` is a GeneratingPolicy's result whose policy is still there to report.
pub fn still_current(cluster: &Cluster, r: &Reported) -> bool {
    r.source == SOURCE
        && cluster.objects.iter().any(|p| {
            KINDS.contains(&text(p, "/kind").as_str()) && reportable(p) && policy_key(p) == r.policy
        })
}

#[cfg(test)]
#[path = "reports_gpol_tests.rs"]
mod tests;

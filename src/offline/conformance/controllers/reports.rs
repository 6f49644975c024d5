//! Kyverno's policy reports, as its reports controller keeps them at rest (level-triggered:
//! a function of the policies, the resources and what admission recorded).
//!
//! Modelled from Kyverno v1.19.0:
//! - pkg/webhooks/resource/validation/validation.go (`HandleValidationEnforce`,
//!   `HandleValidationAudit`, `createReports`) and utils.go `NeedsReports`: an admitted
//!   create or update leaves an ephemeral report with the validate results of the
//!   policies admission ran; a refused request, a deletion, a dry run leave none.
//! - pkg/controllers/report/background/controller.go (`reconcile`, `reconcileReport`) and
//!   pkg/controllers/report/utils/{scanner.go,utils.go} (`ScanResource`,
//!   `validateResource`, `CanBackgroundProcess`): every resource is scanned against the
//!   policies with `background` on (the default), whose admission policy was not
//!   generated, as a CREATE by no user; only their validate and verifyImages rules.
//! - pkg/controllers/report/aggregate/{controller.go,utils.go} (`MergeReports`): the
//!   ephemeral reports of a resource merge into one PolicyReport (ClusterPolicyReport for
//!   a cluster-scoped resource) named by its uid, owned by it, `scope` naming it; per
//!   (source, policy, rule) the latest result wins (the background scan runs after
//!   admission); results of policies or rules gone are dropped; no results, no report.
//!   The ephemeral reports are deleted once merged.
//! - pkg/utils/report/results.go (`ToPolicyReportResult`, `SortReportResults`,
//!   `CalculateSummary`, `selectProcess`) and new.go (`NewPolicyReport`: managed by
//!   Kyverno): each result's policy (`namespace/name` for a Policy), rule, result,
//!   message, `scored`, `category`/`severity` from the policy's annotations, the
//!   `process` property; a failure of an unscored policy is a warning; the `exceptions`
//!   a skip names and `addPodSecurityProperties` (a failed podSecurity rule's
//!   `standard`, `version`, `controls`, `controlsJSON`: kyverno::pss `Controls`).
//!
//! ValidatingPolicies' background results: reports_cel.rs; MutatingPolicies' and
//! MutatingAdmissionPolicies': reports_mpol.rs; GeneratingPolicies': reports_gpol.rs.
//!
//! What is not modelled makes the assertion a typed skip with its reason: the reports of
//! ImageValidatingPolicies, results of mutate and generate rules, the order of pod
//! security controls exclusions left, `reportProperties`, and messages whose wording the
//! engine does not keep
//! (see [`Reported::message`]).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::super::Skip;
use super::super::cluster::{Cluster, Key, text};
use crate::offline::kyverno::{self, Policy, RuleKind, RuleResult, RuleStatus};
use crate::offline::vap;

/// The report kinds a test may assert.
pub fn is_report_kind(kind: &str) -> bool {
    matches!(
        kind,
        "PolicyReport"
            | "ClusterPolicyReport"
            | "EphemeralReport"
            | "ClusterEphemeralReport"
            | "BackgroundScanReport"
            | "ClusterBackgroundScanReport"
            | "AdmissionReport"
            | "ClusterAdmissionReport"
    )
}

/// Policy kinds whose events are not modelled here, nor their reports but for the
/// ValidatingPolicies (reports_cel.rs), MutatingPolicies, MutatingAdmissionPolicies
/// (reports_mpol.rs) and GeneratingPolicies (reports_gpol.rs) (their results come from
/// the CEL engines or the API server's mutating admission policies).
pub const UNMODELLED_SOURCES: &[&str] = &[
    "ValidatingPolicy",
    "NamespacedValidatingPolicy",
    "MutatingPolicy",
    "NamespacedMutatingPolicy",
    "GeneratingPolicy",
    "NamespacedGeneratingPolicy",
    "ImageValidatingPolicy",
    "NamespacedImageValidatingPolicy",
    "MutatingAdmissionPolicy",
];

/// `getIncludeReportingLabelRequirement`: only admission policies labelled
/// `reports.kyverno.io/enabled` are scanned (pkg/controllers/report/utils/utils.go).
pub(super) fn vap_reported(o: &Value) -> bool {
    o.pointer("/metadata/labels/reports.kyverno.io~1enabled")
        .is_some()
}

/// What the background scan of `object` gives for ValidatingAdmissionPolicies
/// (pkg/admissionpolicy/validate.go `Validate`, `processVAPWithClient`,
/// `processVAPNoBindings`, `validateResource`): a CREATE by no user; of the bindings that
/// match, the last decides; one result per policy, named by it, failing with the failed
/// validation's message (whatever the binding's actions), erring on an evaluation error.
fn vap_scan(cluster: &Cluster, object: &Value, vaps: &[&Value]) -> Vec<Reported> {
    use crate::offline::vap;
    let mut req = cluster.vap_request(object, None);
    req.user = background_user();
    let mut out = Vec::new();
    for policy in vaps {
        let name = text(policy, "/metadata/name");
        let bindings: Vec<Value> = cluster
            .objects
            .iter()
            .filter(|b| {
                text(b, "/kind") == "ValidatingAdmissionPolicyBinding"
                    && text(b, "/spec/policyName") == name
            })
            .map(|b| {
                let mut b = b.clone();
                // The decision, not the binding's actions, makes the result.
                b["spec"]["validationActions"] = json!(["Deny"]);
                b
            })
            .collect();
        let has_conditions = policy
            .pointer("/spec/matchConditions")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        let each: Vec<Option<&Value>> = if bindings.is_empty() {
            vec![None]
        } else {
            bindings.iter().map(Some).collect()
        };
        let mut decided: Option<Reported> = None;
        for binding in each {
            let mut outcome = vap::VapOutcome::default();
            let applied =
                vap::evaluate_binding(&cluster.objects, policy, binding, &req, &mut outcome);
            let (status, message, mut unmodelled) = match applied {
                vap::Applied::NotMatched if has_conditions => (
                    RuleStatus::Skip,
                    None,
                    Some("a ValidatingAdmissionPolicy's match conditions in a report".to_string()),
                ),
                vap::Applied::NotMatched => continue,
                _ if !outcome.errors.is_empty() => {
                    let e = &outcome.errors[0];
                    let why = e.unsupported.as_ref().map(|u| {
                        format!("a ValidatingAdmissionPolicy the engine did not evaluate: {u}")
                    });
                    (RuleStatus::Error, Some(e.message.clone()), why)
                }
                _ => match outcome.denials.first() {
                    Some(d) => (RuleStatus::Fail, Some(d.message.clone()), None),
                    None => (RuleStatus::Pass, Some(String::new()), None),
                },
            };
            if policy.pointer("/spec/paramKind").is_some() {
                unmodelled = Some("a ValidatingAdmissionPolicy with params in a report".into());
            }
            let mut properties = Map::new();
            if let Some(b) = binding {
                properties.insert("binding".into(), json!(text(b, "/metadata/name")));
            }
            properties.insert("process".into(), json!("background scan"));
            decided = Some(Reported {
                source: "ValidatingAdmissionPolicy",
                policy: name.clone(),
                rule: name.clone(),
                status,
                message,
                annotations: policy
                    .pointer("/metadata/annotations")
                    .cloned()
                    .unwrap_or(Value::Null),
                properties,
                policy_ref: reference(policy),
                events_unmodelled: unmodelled.clone(),
                unmodelled,
                registry: false,
            });
        }
        out.extend(decided);
    }
    out
}

/// `ResolveUser`: no admission user, so the sentinel identity fills username, uid and
/// groups (pkg/admissionpolicy/user_info.go).
pub(super) fn background_user() -> crate::offline::vap::VapUser {
    let sentinel = "system:kyverno:background-scan";
    crate::offline::vap::VapUser {
        username: sentinel.into(),
        uid: sentinel.into(),
        groups: vec![sentinel.into()],
        ..Default::default()
    }
}

/// Marks a result whose message the model does not word (the judge ignores keys the
/// expectation does not name).
const UNWORDED: &str = "kca.unworded";

/// One rule's result for one resource, before it is written into a report.
#[derive(Debug, Clone, PartialEq)]
pub struct Reported {
    /// `kyverno`, `ValidatingAdmissionPolicy`.
    pub source: &'static str,
    /// `name`, or `namespace/name` for a Policy.
    pub policy: String,
    pub rule: String,
    pub status: RuleStatus,
    /// Kyverno's wording, when the engine's result carries it; `None` when the wording
    /// is not modelled (an assertion naming it is then skipped).
    pub message: Option<String>,
    /// Why the result cannot be written faithfully, if it cannot.
    pub unmodelled: Option<String>,
    /// The policy's annotations (`scored`, `category`, `severity`).
    pub annotations: Value,
    /// The result's properties (`process`, a VAP's `binding`).
    pub properties: Map<String, Value>,
    /// The policy object (`apiVersion`, `kind`, `name`, `namespace`, `uid`), as events
    /// name it.
    pub policy_ref: Value,
    /// Why the events this result makes cannot be told, if they cannot.
    pub events_unmodelled: Option<String>,
    /// The result needed a registry or the network (verifyImages, image data): what
    /// cannot be written of it is the registry's to tell, not the report model's.
    pub registry: bool,
}

/// The ephemeral reports admission left, by the resource's uid (the latest request's).
#[derive(Debug, Clone, Default)]
pub struct Admissions {
    by_uid: BTreeMap<String, Vec<Reported>>,
    /// Why admission may have emitted events (kyverno-admission) the model does not
    /// write; `None` while it emitted none (pkg/webhooks/utils/event.go
    /// `GenerateEvents`: failures, errors and exceptions make events; successes make
    /// PolicyApplied events, dropped without `generateSuccessEvents`).
    pub events_possible: Option<String>,
    /// The PolicyApplied events Kyverno emitted: admission's
    /// ([`super::events::admission_applied`]), the generate controller's
    /// ([`super::events::generated`]).
    pub applied: Vec<Value>,
}

impl Admissions {
    /// Records what admission of `object` (admitted) gave; `policies` are those
    /// admission ran. A later request replaces the earlier results of the same rules.
    pub fn admitted(
        &mut self,
        object: &Value,
        policies: &[Policy],
        resp: &kyverno::Response,
        settings: &super::install::Settings,
    ) {
        match super::events::admission_applied(object, policies, resp, settings) {
            Ok(applied) => self.applied.extend(applied),
            Err(why) => self.events_possible = Some(why),
        }
        if resp.results.iter().any(|r| {
            matches!(r.status, RuleStatus::Fail | RuleStatus::Error)
                || (r.status == RuleStatus::Skip && r.message.contains("PolicyException"))
        }) {
            self.events_possible = Some("events of admission's failures".into());
        }
        // A deletion (no object) makes no report.
        let uid = text(object, "/metadata/uid");
        if uid.is_empty() || text(object, "/kind") == "Event" {
            return;
        }
        let ns = text(object, "/metadata/namespace");
        let mut fresh: Vec<Reported> = Vec::new();
        for r in &resp.results {
            let Some(policy) = policies
                .iter()
                .find(|p| p.name == r.policy && p.namespace.as_deref().is_none_or(|n| n == ns))
            else {
                continue;
            };
            if !reportable(policy) {
                continue;
            }
            fresh.push(reported(policy, r));
        }
        let entries = self.by_uid.entry(uid).or_default();
        for f in fresh {
            entries.retain(|e| !(e.source == f.source && e.policy == f.policy && e.rule == f.rule));
            entries.push(f);
        }
    }
}

/// An object reference to `o` (`corev1.ObjectReference`: no empty fields).
pub fn reference(o: &Value) -> Value {
    let mut m = Map::new();
    for (k, p) in [
        ("apiVersion", "/apiVersion"),
        ("kind", "/kind"),
        ("name", "/metadata/name"),
        ("namespace", "/metadata/namespace"),
        ("uid", "/metadata/uid"),
    ] {
        let v = text(o, p);
        if !v.is_empty() {
            m.insert(k.into(), json!(v));
        }
    }
    Value::Object(m)
}

impl Admissions {
    /// Records a CEL policy's result for `object` from outside admission's webhooks (a
    /// GeneratingPolicy's UpdateRequest): it replaces the policy's earlier result, as
    /// `MergeReports` keys CEL results by (source, policy).
    pub fn record(&mut self, object: &Value, r: Reported) {
        let uid = text(object, "/metadata/uid");
        if uid.is_empty() {
            return;
        }
        let entries = self.by_uid.entry(uid).or_default();
        entries.retain(|e| !(e.source == r.source && e.policy == r.policy));
        entries.push(r);
    }

    /// A request admission refused: Kyverno may have emitted its events (blocked).
    pub fn refused(&mut self) {
        self.events_possible = Some("events of a refused request".into());
    }
}

/// `IsPolicyReportable`: a policy labelled `reports.kyverno.io/disabled` makes none.
fn reportable(policy: &Policy) -> bool {
    policy
        .raw
        .pointer("/metadata/labels/reports.kyverno.io~1disabled")
        .is_none()
}

fn policy_key(policy: &Policy) -> String {
    match &policy.namespace {
        Some(ns) => format!("{ns}/{}", policy.name),
        None => policy.name.clone(),
    }
}

/// The raw rule named `name` (autogen copies have no raw rule: their base's).
fn raw_rule<'a>(policy: &'a Policy, name: &str) -> Option<&'a Value> {
    let base = name
        .strip_prefix("autogen-cronjob-")
        .or_else(|| name.strip_prefix("autogen-"))
        .unwrap_or(name);
    policy
        .raw
        .pointer("/spec/rules")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| text(r, "/name") == name || text(r, "/name") == base)
}

/// A rule result as the report holds it.
fn reported(policy: &Policy, r: &RuleResult) -> Reported {
    let rule = policy.rules.iter().find(|x| x.name == r.rule);
    let validate = rule.and_then(|x| x.validate.as_ref());
    let has = |k: &str| {
        validate
            .and_then(|v| v.get(k))
            .is_some_and(|v| !v.is_null())
    };
    let mut unmodelled = match r.kind {
        RuleKind::Validate => None,
        RuleKind::Mutate => Some("results of mutate rules".to_string()),
        RuleKind::Generate => Some("results of generate rules".to_string()),
        RuleKind::VerifyImages => Some("results of verifyImages rules (a registry)".to_string()),
    };
    if let Some(u) = &r.unsupported {
        unmodelled = Some(format!("a rule the engine did not evaluate: {u}"));
    }
    let mut events_unmodelled = unmodelled.clone();
    if raw_rule(policy, &r.rule).is_some_and(|x| x.get("reportProperties").is_some()) {
        unmodelled = Some("a rule's reportProperties".into());
    }
    if !r.exceptions.is_empty() {
        events_unmodelled = Some("the events of PolicyExceptions".into());
    }
    // Two or more controls left by exclusions come in a Go map's order (pss.rs).
    if r.pod_security
        .as_ref()
        .is_some_and(|c| c.reordered && c.failed.len() > 1)
    {
        unmodelled = Some("the order of the pod security controls exclusions left".into());
    }
    // Kyverno's wording (pkg/engine/handlers/validation/validate_resource.go,
    // validate_cel.go, validate_pss.go): the engine's `upstream` where it has it.
    let message = match r.status {
        _ if r.upstream.is_some() => r.upstream.clone(),
        RuleStatus::Fail | RuleStatus::Warn => Some(r.message.clone()),
        RuleStatus::Pass if has("cel") || has("podSecurity") => {
            Some(format!("Validation rule '{}' passed.", r.rule))
        }
        RuleStatus::Pass if has("pattern") || has("deny") => {
            Some(format!("validation rule '{}' passed.", r.rule))
        }
        RuleStatus::Skip
            if r.message
                == "skipping the rule evaluation as pre-existing violations are allowed" =>
        {
            Some(r.message.clone())
        }
        _ => None,
    };
    let admission = policy
        .raw
        .pointer("/spec/admission")
        .and_then(Value::as_bool)
        != Some(false);
    let process = match (policy.background, admission) {
        (true, _) => "background scan",
        (false, true) => "admission review",
        _ => "",
    };
    let mut properties = Map::new();
    properties.insert("process".into(), json!(process));
    // `ToPolicyReportResult`: the exceptions a skip names, the failed controls.
    if !r.exceptions.is_empty() {
        properties.insert("exceptions".into(), json!(r.exceptions.join(",")));
    }
    for (k, v) in r.pod_security.iter().flat_map(|c| c.properties()) {
        properties.insert(k.into(), json!(v));
    }
    Reported {
        source: "kyverno",
        policy: policy_key(policy),
        rule: r.rule.clone(),
        status: r.status,
        message,
        unmodelled,
        annotations: policy
            .raw
            .pointer("/metadata/annotations")
            .cloned()
            .unwrap_or(Value::Null),
        properties,
        policy_ref: reference(&policy.raw),
        events_unmodelled,
        registry: r.kind == RuleKind::VerifyImages
            || r.unsupported.as_ref().is_some_and(|u| u.needs_registry()),
    }
}

/// What a background scan of `object` gives (`ScanResource` over the background
/// policies: validate and verifyImages rules only).
fn scan(cluster: &Cluster, object: &Value, policies: &[Policy]) -> Vec<Reported> {
    let ns = text(object, "/metadata/namespace");
    let req = kyverno::Request {
        operation: "CREATE".into(),
        object: object.clone(),
        namespace_labels: cluster.namespace_labels(&ns),
        ..Default::default()
    };
    let opts = cluster.engine_options();
    let mut conditions_req = None;
    let mut out = Vec::new();
    for policy in policies {
        if policy.namespace.as_deref().is_some_and(|n| n != ns) {
            continue;
        }
        // The engine asks a policy's `webhookConfiguration.matchConditions` itself, in
        // the background too (pkg/engine/internal/match.go `checkMatchConditions`): the
        // scanner's request is a CREATE with no user (pkg/controllers/report/utils/
        // scanner.go), and a condition false or failing leaves the policy out.
        if let Some(conditions) = policy
            .raw
            .pointer("/spec/webhookConfiguration/matchConditions")
            .and_then(Value::as_array)
            .filter(|c| !c.is_empty())
        {
            let req = conditions_req.get_or_insert_with(|| {
                let mut r = cluster.vap_request(object, None);
                r.user = vap::VapUser::default();
                r
            });
            if !matches!(
                vap::webhook_conditions(conditions, None, req),
                vap::WebhookCall::Called
            ) {
                continue;
            }
        }
        let resp = kyverno::admit_with(std::slice::from_ref(policy), &req, &opts);
        out.extend(
            resp.results
                .iter()
                .filter(|r| matches!(r.kind, RuleKind::Validate | RuleKind::VerifyImages))
                .map(|r| reported(policy, r)),
        );
    }
    out
}

/// The policies the background scan runs (`RemoveNonBackgroundPolicies`,
/// `RemoveNonValidationPolicies`), with only their validate and verifyImages rules.
fn background_policies(cluster: &Cluster) -> Vec<Policy> {
    let (policies, _) = kyverno::load_policies(&cluster.objects);
    policies
        .into_iter()
        .filter(|p| p.background && reportable(p) && !super::left_to_generated(&p.raw))
        .map(|mut p| {
            p.rules
                .retain(|r| r.validate.is_some() || r.verify_images.is_some());
            p
        })
        .filter(|p| !p.rules.is_empty())
        .collect()
}

/// What the background scan gives for each resource at rest (ClusterPolicies, Policies,
/// labelled ValidatingAdmissionPolicies), with the resource.
pub fn scanned(cluster: &Cluster) -> Vec<(&Value, Vec<Reported>)> {
    let background = background_policies(cluster);
    let vpols = super::reports_cel::background_vpols(cluster);
    let vaps: Vec<&Value> = cluster
        .objects
        .iter()
        .filter(|o| text(o, "/kind") == "ValidatingAdmissionPolicy" && vap_reported(o))
        .collect();
    let mutating = super::reports_mpol::Background::of(cluster);
    cluster
        .objects
        .iter()
        .filter(|o| {
            let kind = text(o, "/kind");
            !text(o, "/metadata/uid").is_empty()
                && kind != "Event"
                && !is_report_kind(&kind)
                && !cluster.filtered(o)
        })
        .map(|o| {
            let r: Vec<Reported> = scan(cluster, o, &background)
                .into_iter()
                .chain(vap_scan(cluster, o, &vaps))
                .chain(super::reports_cel::vpol_scan(cluster, o, &vpols))
                .chain(mutating.scan(cluster, o))
                .collect();
            (o, r)
        })
        .collect()
}

/// One resource's report, and why it cannot be written faithfully if it cannot.
#[derive(Debug, Clone)]
pub struct Built {
    pub report: Value,
    pub unmodelled: Option<Skip>,
}

/// The PolicyReports and ClusterPolicyReports of the cluster at rest, or why they cannot
/// be told.
pub fn policy_reports(cluster: &Cluster) -> Result<Vec<Built>, String> {
    if let Some(o) = cluster.objects.iter().find(|o| {
        let kind = text(o, "/kind");
        UNMODELLED_SOURCES.contains(&kind.as_str())
            && !super::reports_cel::VPOL_KINDS.contains(&kind.as_str())
            && !super::reports_mpol::KINDS.contains(&kind.as_str())
            && !super::reports_gpol::KINDS.contains(&kind.as_str())
    }) {
        return Err(format!("reports of a {}", text(o, "/kind")));
    }
    if let Some(why) = super::reports_cel::vpols_unmodelled(cluster)
        .or_else(|| super::reports_mpol::mpols_unmodelled(cluster))
    {
        return Err(why);
    }
    let (current, _) = kyverno::load_policies(&cluster.objects);
    let mut scans: BTreeMap<String, Vec<Reported>> = scanned(cluster)
        .into_iter()
        .map(|(o, r)| (text(o, "/metadata/uid"), r))
        .collect();
    let mut reports = Vec::new();
    for object in &cluster.objects {
        let uid = text(object, "/metadata/uid");
        let kind = text(object, "/kind");
        if uid.is_empty() || kind == "Event" || is_report_kind(&kind) {
            continue;
        }
        let mut results: Vec<Reported> = cluster
            .reports
            .by_uid
            .get(&uid)
            .cloned()
            .unwrap_or_default();
        // Results of policies or rules no longer there are dropped.
        results.retain(|r| {
            super::reports_gpol::still_current(cluster, r)
                || current
                    .iter()
                    .any(|p| policy_key(p) == r.policy && p.rules.iter().any(|x| x.name == r.rule))
        });
        for b in scans.remove(&uid).unwrap_or_default() {
            results.retain(|r| !(r.source == b.source && r.policy == b.policy && r.rule == b.rule));
            results.push(b);
        }
        super::reports_list::allowed_only(cluster.features, &mut results);
        if results.is_empty() {
            continue;
        }
        let unmodelled = results.iter().find_map(|r| {
            let why = r.unmodelled.clone()?;
            Some(if r.registry {
                Skip::Registry(why)
            } else {
                Skip::Reports(why)
            })
        });
        reports.push(Built {
            report: report(object, results),
            unmodelled,
        });
    }
    Ok(reports)
}

fn summary(results: &[Reported]) -> Value {
    let count = |s: RuleStatus| results.iter().filter(|r| r.status == s).count();
    json!({"error": count(RuleStatus::Error), "fail": count(RuleStatus::Fail),
        "pass": count(RuleStatus::Pass), "skip": count(RuleStatus::Skip),
        "warn": count(RuleStatus::Warn)})
}

/// `SeverityFromString`.
fn severity(s: &str) -> Option<&'static str> {
    match s {
        "critical" => Some("critical"),
        "high" => Some("high"),
        "medium" => Some("medium"),
        "low" => Some("low"),
        "info" => Some("info"),
        _ => None,
    }
}

fn report(object: &Value, mut results: Vec<Reported>) -> Value {
    results.sort_by(|a, b| (&a.policy, &a.rule, a.source).cmp(&(&b.policy, &b.rule, b.source)));
    let ns = text(object, "/metadata/namespace");
    let uid = text(object, "/metadata/uid");
    let (av, kind, name) = (
        text(object, "/apiVersion"),
        text(object, "/kind"),
        text(object, "/metadata/name"),
    );
    let written: Vec<Value> = results
        .iter()
        .map(|r| {
            let annotation = |k: &str| text(&r.annotations, &format!("/{}", k.replace('/', "~1")));
            let mut m = Map::new();
            m.insert("source".into(), json!(r.source));
            m.insert("policy".into(), json!(r.policy));
            if !r.rule.is_empty() {
                m.insert("rule".into(), json!(r.rule));
            }
            match &r.message {
                Some(msg) if !msg.is_empty() => {
                    m.insert("message".into(), json!(msg));
                }
                // An empty description is left out (`omitempty`).
                Some(_) => {}
                None => {
                    m.insert(UNWORDED.into(), json!(true));
                }
            }
            m.insert("properties".into(), Value::Object(r.properties.clone()));
            m.insert("result".into(), json!(r.status.as_str()));
            m.insert(
                "scored".into(),
                json!(annotation("policies.kyverno.io/scored") != "false"),
            );
            let category = annotation("policies.kyverno.io/category");
            if !category.is_empty() {
                m.insert("category".into(), json!(category));
            }
            if let Some(s) = severity(&annotation("policies.kyverno.io/severity")) {
                m.insert("severity".into(), json!(s));
            }
            Value::Object(m)
        })
        .collect();
    let mut scope = json!({"apiVersion": av, "kind": kind, "name": name, "uid": uid});
    let mut meta = json!({
        "name": uid,
        "labels": {super::admission::MANAGED_BY.0: super::admission::MANAGED_BY.1},
        "ownerReferences": [{"apiVersion": av, "kind": kind, "name": name, "uid": uid}],
    });
    let report_kind = if ns.is_empty() {
        "ClusterPolicyReport"
    } else {
        scope["namespace"] = json!(ns);
        meta["namespace"] = json!(ns);
        "PolicyReport"
    };
    json!({
        "apiVersion": "wgpolicyk8s.io/v1alpha2",
        "kind": report_kind,
        "metadata": meta,
        "scope": scope,
        "results": written,
        "summary": summary(&results),
    })
}

/// The objects of `kind` an assertion on `expected` is judged against, or why it cannot
/// be: PolicyReports and ClusterPolicyReports as modelled; ephemeral reports are merged
/// and deleted by the reports controller, so none is left at rest (an `error` on one
/// holds, an `assert` cannot be decided by a replay without the controller's timing).
/// What cannot be judged is a typed skip: a registry's when a result needed one.
pub fn candidates(cluster: &Cluster, expected: &Value, present: bool) -> Result<Vec<Value>, Skip> {
    let kind = text(expected, "/kind");
    match kind.as_str() {
        "PolicyReport" | "ClusterPolicyReport" => {}
        "EphemeralReport" | "ClusterEphemeralReport" if !present => return Ok(Vec::new()),
        "EphemeralReport" | "ClusterEphemeralReport" => {
            return Err(Skip::Reports(
                "an ephemeral report, before the reports controller merges it".into(),
            ));
        }
        _ => {
            return Err(Skip::Reports(format!(
                "{kind}, a report kind Kyverno 1.19 no longer makes"
            )));
        }
    }
    // A report's generation counts the controller's rewrites of it (admission, then
    // each scan and merge), whose timing the model does not follow.
    if expected.pointer("/metadata/generation").is_some() {
        return Err(Skip::Reports(
            "a report's generation (the controller's rewrites of it)".into(),
        ));
    }
    if let Some(skip) = super::reports_ivpol::registry_scan(cluster) {
        return Err(skip);
    }
    let all = policy_reports(cluster).map_err(Skip::Reports)?;
    let ns = text(expected, "/metadata/namespace");
    let name = text(expected, "/metadata/name");
    // The resource a report is for, when the assertion names it.
    let subject = ["/scope/name", "/metadata/ownerReferences/0/name"]
        .iter()
        .map(|p| text(expected, p))
        .find(|s| !s.is_empty() && !s.starts_with('('));
    let mut out = Vec::new();
    for b in all {
        let k = Key::of(&b.report);
        let fits = k.kind == kind
            && (kind == "ClusterPolicyReport" || ns.is_empty() || k.namespace == ns)
            && (name.is_empty() || k.name == name)
            && subject
                .as_ref()
                .is_none_or(|s| text(&b.report, "/scope/name") == *s);
        if !fits {
            continue;
        }
        if let Some(why) = b.unmodelled {
            return Err(why);
        }
        out.push(b.report);
    }
    messages_modelled(expected, &out).map_err(Skip::Reports)?;
    Ok(out)
}

/// An expected result naming a `message` the model does not word: the assertion is
/// skipped rather than judged on a wording the replay does not know.
fn messages_modelled(expected: &Value, candidates: &[Value]) -> Result<(), String> {
    let Some(wanted) = expected.get("results").and_then(Value::as_array) else {
        return Ok(());
    };
    for w in wanted.iter().filter(|w| w.get("message").is_some()) {
        let (policy, rule) = (text(w, "/policy"), text(w, "/rule"));
        let unworded = candidates
            .iter()
            .filter_map(|c| c.get("results").and_then(Value::as_array))
            .flatten()
            .any(|r| {
                (policy.is_empty() || text(r, "/policy") == policy)
                    && (rule.is_empty() || text(r, "/rule") == rule)
                    && r.get(UNWORDED).is_some()
            });
        if unworded {
            return Err(format!(
                "the message of a result of {policy}/{rule} (its wording is not modelled)"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "reports_tests.rs"]
mod tests;

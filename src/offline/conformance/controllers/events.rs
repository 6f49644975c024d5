//! The events Kyverno emits about policy results, as a test sees them at rest through the
//! core/v1 Event API (`involvedObject`, `reportingComponent`, `message`).
//!
//! Modelled from Kyverno v1.19.0:
//! - pkg/controllers/report/utils/events.go (`GenerateEvents`, `generateFailEventsPerEr`):
//!   every background scan result that is neither a pass nor a skip makes two
//!   PolicyViolation events from `kyverno-scan`: one on the resource, one on the policy;
//!   successes make PolicyApplied events only with `generateSuccessEvents` (off in the
//!   suite), skips by an exception make exception events (not modelled: a skip).
//! - pkg/event/events.go (`NewResourceViolationEvent`, `NewPolicyFailEvent`,
//!   `buildPolicyEventMessage`), pkg/event/controller.go (`emitEvent`: an events.k8s.io
//!   Event in the regarding object's namespace or `default`, its note cut to 1024
//!   characters, `Warning` for a violation), pkg/event/source.go, action.go.
//! - pkg/webhooks/utils/event.go (`GenerateEvents`): admission's events
//!   (`kyverno-admission`) come from failures, errors, exceptions and refusals; while
//!   none of those happened there are none, otherwise an assertion on them is skipped.
//!
//! - pkg/background/generate/controller.go, pkg/background/gpol/generate_controller.go,
//!   pkg/webhooks/resource/generation/handler.go, updaterequest.go: `kyverno-generate`
//!   events come only from UpdateRequests — their failures (PolicyError), GeneratingPolicy
//!   exceptions (PolicySkipped), successes (PolicyApplied, dropped without
//!   `generateSuccessEvents`) — and from failing to create one. While no generate rule or
//!   GeneratingPolicy has had a request ([`Cluster::update_requests`]) there are none;
//!   otherwise an assertion on them is skipped.
//! - pkg/event/controller.go (`emitEvent`): Kyverno's events carry no labels, no
//!   annotations and no `source` (an events.k8s.io Event: its `reportingController` is
//!   one of pkg/event/source.go's); an expected Event that has any of them, or another
//!   reporting component, is not Kyverno's own and is judged against the Events the
//!   cluster holds (those a generate rule made or the test wrote).
//!
//! Events accumulate (a scan repeats, an old failure's event stays): the model knows the
//! events of the latest scan, so it can tell a background event is present, not that
//! none is.

use serde_json::{Value, json};

use super::super::cluster::{Cluster, text};
use super::install::Settings;
use super::reports::{self, Reported};
use crate::offline::kyverno::{Policy, Response, RuleKind, RuleStatus};

const SCAN: &str = "kyverno-scan";
const ADMISSION: &str = "kyverno-admission";
const GENERATE: &str = "kyverno-generate";
/// pkg/event/source.go: every component Kyverno's events are reported by.
const SOURCES: &[&str] = &[
    ADMISSION,
    SCAN,
    GENERATE,
    "kyverno-mutate",
    "kyverno-cleanup",
];

/// `emitEvent`: the note cut to 1024 characters.
fn note(message: String) -> String {
    if message.len() <= 1024 {
        return message;
    }
    let mut end = 1021;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &message[..end])
}

fn event(regarding: &Value, related: Option<&Value>, message: String, component: &str) -> Value {
    let ns = regarding
        .get("namespace")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .unwrap_or("default");
    let mut e = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"namespace": ns},
        "involvedObject": regarding,
        "reason": "PolicyViolation",
        "action": "Resource Passed",
        "type": "Warning",
        "reportingComponent": component,
        "message": note(message),
    });
    if let Some(r) = related {
        e["related"] = r.clone();
    }
    e
}

/// `buildPolicyEventMessage` (not blocked).
fn policy_message(resource: &Value, r: &Reported, message: &str) -> String {
    let (kind, ns, name) = (
        text(resource, "/kind"),
        text(resource, "/metadata/namespace"),
        text(resource, "/metadata/name"),
    );
    let mut b = if ns.is_empty() {
        format!("{kind} {name}")
    } else {
        format!("{kind} {ns}/{name}")
    };
    if r.rule.is_empty() {
        b.push_str(&format!(": {}", r.status.as_str()));
    } else {
        b.push_str(&format!(": [{}] {}", r.rule, r.status.as_str()));
    }
    if !message.is_empty() {
        b.push_str(&format!("; {message}"));
    }
    b
}

/// The events of the latest background scan of every resource.
fn scan_events(cluster: &Cluster) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for (resource, results) in reports::scanned(cluster) {
        for r in results {
            if matches!(r.status, RuleStatus::Pass | RuleStatus::Skip) {
                if r.status == RuleStatus::Skip
                    && let Some(why) = r.events_unmodelled
                {
                    return Err(why);
                }
                continue;
            }
            if let Some(why) = r.events_unmodelled.clone() {
                return Err(why);
            }
            let Some(message) = r.message.clone() else {
                return Err("the message of an event (its wording is not modelled)".into());
            };
            let policy_name = text(&r.policy_ref, "/name");
            let regarding = reports::reference(resource);
            out.push(event(
                &regarding,
                None,
                format!(
                    "policy {policy_name}/{} {}: {message}",
                    r.rule,
                    r.status.as_str()
                ),
                SCAN,
            ));
            out.push(event(
                &r.policy_ref,
                Some(&regarding),
                policy_message(resource, &r, &message),
                SCAN,
            ));
        }
    }
    Ok(out)
}

/// The Events an assertion on `expected` (placed: its namespace filled in) is judged
/// against, or why it cannot be: the Events the cluster holds, and Kyverno's own when
/// `expected` could be one of them.
pub fn candidates(
    cluster: &Cluster,
    expected: &Value,
    present: bool,
) -> Result<Vec<Value>, String> {
    let ns = text(expected, "/metadata/namespace");
    let in_ns = |e: &Value| ns.is_empty() || text(e, "/metadata/namespace") == ns;
    let mut out: Vec<Value> = cluster
        .objects
        .iter()
        .filter(|o| text(o, "/kind") == "Event" && in_ns(o))
        .cloned()
        .collect();
    if could_be_kyvernos(expected) {
        out.extend(
            kyvernos(cluster, expected, present)?
                .into_iter()
                .filter(in_ns),
        );
    }
    Ok(out)
}

/// Whether an Event shaped as `expected` could be one Kyverno emits (`emitEvent`: no
/// labels, annotations or `source`, reported by one of Kyverno's components). A key
/// that is an expression could be anything.
fn could_be_kyvernos(expected: &Value) -> bool {
    let Some(top) = expected.as_object() else {
        return true;
    };
    if top.keys().any(|k| k.starts_with('(')) {
        return true;
    }
    let meta = expected.get("metadata");
    let set = |v: Option<&Value>| match v {
        Some(Value::Object(m)) => m.keys().any(|k| !k.starts_with('(')),
        Some(Value::String(s)) => !s.is_empty() && !s.starts_with('('),
        Some(Value::Null) | None => false,
        Some(_) => true,
    };
    if meta.is_some_and(|m| {
        m.as_object()
            .is_some_and(|m| m.keys().any(|k| k.starts_with('(')))
    }) {
        return true;
    }
    if set(meta.and_then(|m| m.get("labels")))
        || set(meta.and_then(|m| m.get("annotations")))
        || set(expected.pointer("/source/component"))
        || set(expected.pointer("/source/host"))
    {
        return false;
    }
    let component = text(expected, "/reportingComponent");
    component.is_empty() || component.starts_with('(') || SOURCES.contains(&component.as_str())
}

/// Kyverno's own Events the model makes for `expected`, or why it cannot tell.
fn kyvernos(cluster: &Cluster, expected: &Value, present: bool) -> Result<Vec<Value>, String> {
    if let Some(o) = cluster
        .objects
        .iter()
        .find(|o| reports::UNMODELLED_SOURCES.contains(&text(o, "/kind").as_str()))
    {
        return Err(format!("events of a {}", text(o, "/kind")));
    }
    let component = text(expected, "/reportingComponent");
    match component.as_str() {
        SCAN if !present => Err("the absence of past background scans' events".into()),
        // A scan's successes are PolicyApplied events with generateSuccessEvents.
        SCAN if super::install::settings(&cluster.objects).success_events => {
            Err("the success events of background scans".into())
        }
        SCAN => scan_events(cluster),
        // Admission emitted no event unless one of its causes happened, besides the
        // successes it recorded.
        ADMISSION => match &cluster.reports.events_possible {
            Some(why) => Err(why.clone()),
            None => Ok(cluster
                .reports
                .applied
                .iter()
                .filter(|e| text(e, "/reportingComponent") == ADMISSION)
                .cloned()
                .collect()),
        },
        // No UpdateRequest, no event of the generate controller.
        GENERATE if !cluster.update_requests => Ok(Vec::new()),
        GENERATE => generate_events(cluster, expected, present),
        "" => Err("an event whatever its reporting component".into()),
        other => Err(format!("events of {other}")),
    }
}

/// pkg/event/action.go: the actions of PolicyApplied events.
const RESOURCE_PASSED: &str = "Resource Passed";
const RESOURCE_MUTATED: &str = "Resource Mutated";

/// A reference to a Kyverno policy as its events carry it (`kyverno.io/v1`).
fn policy_reference(policy: &Policy) -> Value {
    let mut r = reports::reference(&policy.raw);
    r["apiVersion"] = json!("kyverno.io/v1");
    r["kind"] = json!(if policy.namespace.is_some() {
        "Policy"
    } else {
        "ClusterPolicy"
    });
    r["name"] = json!(policy.name);
    if let Some(ns) = &policy.namespace {
        r["namespace"] = json!(ns);
    }
    r
}

/// The PolicyApplied events admission of `object` emits (pkg/webhooks/utils/event.go
/// `GenerateEvents`, pkg/event/events.go `NewPolicyAppliedEvent`): one per engine
/// response — a policy's standard mutate rules (mutation.go), its validate rules
/// (handlers.go) — that has results, none failing or erring and none skipped; on the
/// policy, related to the resource. Those `settings` drop are left out (controller.go
/// `Add`). `Err` when admission ran what the model has no success events for (image
/// verification).
pub fn admission_applied(
    object: &Value,
    policies: &[Policy],
    resp: &Response,
    settings: &Settings,
) -> Result<Vec<Value>, String> {
    if !settings.success_events {
        return Ok(Vec::new());
    }
    if resp
        .results
        .iter()
        .any(|r| r.kind == RuleKind::VerifyImages)
    {
        return Err("the success events of image verification".into());
    }
    let name = text(object, "/metadata/name");
    if name.is_empty() {
        // A deletion's response names the old object: its successes are not made here.
        return if resp.results.iter().any(|r| r.status == RuleStatus::Pass) {
            Err("the success events of a deletion".into())
        } else {
            Ok(Vec::new())
        };
    }
    let ns = text(object, "/metadata/namespace");
    let subject = if ns.is_empty() {
        format!("{} {name}", text(object, "/kind"))
    } else {
        format!("{} {ns}/{name}", text(object, "/kind"))
    };
    let mut out = Vec::new();
    for policy in policies {
        let validates = policy
            .rules
            .iter()
            .any(|r| r.validate.is_some() || r.verify_images.is_some());
        let standard_mutate = |rule: &str| {
            policy.rules.iter().any(|r| {
                r.name == rule
                    && r.mutate
                        .as_ref()
                        .is_some_and(|m| m.get("targets").is_none())
            })
        };
        for webhook in [RuleKind::Mutate, RuleKind::Validate] {
            let rules: Vec<RuleStatus> = resp
                .results
                .iter()
                .filter(|r| r.policy == policy.name && r.kind == webhook)
                .filter(|r| webhook != RuleKind::Mutate || standard_mutate(&r.rule))
                .map(|r| r.status)
                .collect();
            let failed = rules
                .iter()
                .any(|s| matches!(s, RuleStatus::Fail | RuleStatus::Error));
            if rules.is_empty() || failed || rules.contains(&RuleStatus::Skip) {
                continue;
            }
            let (message, action) = if validates {
                (format!("{subject}: pass"), RESOURCE_PASSED)
            } else {
                (
                    format!("{subject} is successfully mutated"),
                    RESOURCE_MUTATED,
                )
            };
            if !settings.emits_success(action) {
                continue;
            }
            let e = event(
                &policy_reference(policy),
                Some(&reports::reference(object)),
                message,
                ADMISSION,
            );
            out.push(applied(e, action));
        }
    }
    Ok(out)
}

/// pkg/event/action.go: the action of a generated resource's event.
const RESOURCE_GENERATED: &str = "Resource Generated";
const NO_ACTION: &str = "None";

/// The PolicyApplied events of the generate controller when an UpdateRequest made or
/// updated `made` (pkg/background/generate/controller.go `applyGenerate`, events.go
/// `NewResourceGenerationEvent` on the resource, `NewBackgroundSuccessEvent` on the
/// policy, related to the resource), as `settings` let them through. The policy and rule
/// are read from the labels Kyverno puts on what it generates.
pub fn generated(objects: &[Value], made: &Value, settings: &Settings) -> Vec<Value> {
    use crate::offline::kyverno::generate::{POLICY_NAME, POLICY_NAMESPACE, RULE_NAME};
    let label = |k: &str| {
        made.pointer("/metadata/labels")
            .and_then(|l| l.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let (name, ns, rule) = (
        label(POLICY_NAME),
        label(POLICY_NAMESPACE),
        label(RULE_NAME),
    );
    if name.is_empty() {
        return Vec::new();
    }
    let kind = if ns.is_empty() {
        "ClusterPolicy"
    } else {
        "Policy"
    };
    let mut regarding = objects
        .iter()
        .find(|o| {
            text(o, "/kind") == kind
                && text(o, "/metadata/name") == name
                && text(o, "/metadata/namespace") == ns
        })
        .map(reports::reference)
        .unwrap_or_else(|| json!({"kind": kind, "name": name}));
    regarding["apiVersion"] = json!("kyverno.io/v1");
    let key = if ns.is_empty() {
        name.clone()
    } else {
        format!("{ns}/{name}")
    };
    let resource = reports::reference(made);
    let mut out = Vec::new();
    if settings.emits_success(NO_ACTION) {
        let message = format!(
            "Created {} {} as a result of applying policy {key}/{rule}",
            text(made, "/kind"),
            text(made, "/metadata/name")
        );
        out.push(applied(
            event(&resource, None, message, GENERATE),
            NO_ACTION,
        ));
    }
    if settings.emits_success(RESOURCE_GENERATED) {
        let e = event(
            &regarding,
            Some(&resource),
            "resource generated".into(),
            GENERATE,
        );
        out.push(applied(e, RESOURCE_GENERATED));
    }
    out
}

fn applied(mut e: Value, action: &str) -> Value {
    e["reason"] = json!("PolicyApplied");
    e["type"] = json!("Normal");
    e["action"] = json!(action);
    e
}

/// The generate controller's events an assertion on `expected` is judged against: the
/// successes recorded when `expected` is one of them; otherwise (a failure, an absence,
/// a success the model missed) the UpdateRequests' events are not known.
fn generate_events(
    cluster: &Cluster,
    expected: &Value,
    present: bool,
) -> Result<Vec<Value>, String> {
    let unknown = || Err("the events of kyverno-generate's UpdateRequests".to_string());
    let cel = cluster.objects.iter().any(|o| {
        matches!(
            text(o, "/kind").as_str(),
            "GeneratingPolicy" | "NamespacedGeneratingPolicy"
        )
    });
    if !present || cel {
        return unknown();
    }
    let recorded: Vec<Value> = cluster
        .reports
        .applied
        .iter()
        .filter(|e| text(e, "/reportingComponent") == GENERATE)
        .cloned()
        .collect();
    let bindings = Default::default();
    let found = recorded.iter().any(|e| {
        matches!(
            crate::offline::conformance::assert::judge(expected, e, &bindings),
            crate::offline::conformance::assert::Judged::Match
        )
    });
    if found { Ok(recorded) } else { unknown() }
}

/// Kyverno's reasons (pkg/event/reason.go): no event of Kubernetes' own components
/// carries them, so whether a listing of Events holds one is told by Kyverno's events.
pub const REASONS: &[&str] = &[
    "PolicyViolation",
    "PolicyApplied",
    "PolicyError",
    "PolicySkipped",
];

/// Every Event in `namespace` (all namespaces when empty) the cluster holds and Kyverno
/// emitted, when the model knows all of Kyverno's; Kubernetes' own components' events are
/// not among them.
pub fn listed(cluster: &Cluster, namespace: &str) -> Result<Vec<Value>, String> {
    if let Some(o) = cluster
        .objects
        .iter()
        .find(|o| reports::UNMODELLED_SOURCES.contains(&text(o, "/kind").as_str()))
    {
        return Err(format!("events of a {}", text(o, "/kind")));
    }
    if reports::scanned(cluster).iter().any(|(_, results)| {
        results
            .iter()
            .any(|r| !matches!(r.status, RuleStatus::Skip) || r.events_unmodelled.is_some())
    }) {
        return Err("the events of background scans".into());
    }
    if cluster.update_requests || cluster.made_in_background {
        return Err("the events of Kyverno's background controller".into());
    }
    if let Some(why) = &cluster.reports.events_possible {
        return Err(why.clone());
    }
    let in_ns = |e: &&Value| namespace.is_empty() || text(e, "/metadata/namespace") == namespace;
    Ok(cluster
        .objects
        .iter()
        .filter(|o| text(o, "/kind") == "Event")
        .chain(cluster.reports.applied.iter())
        .filter(in_ns)
        .cloned()
        .collect())
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;

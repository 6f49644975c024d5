//! `DeletingPolicy`/`NamespacedDeletingPolicy`: their admission by Kyverno's policy
//! webhook, and what the cleanup controller's deleting controller deletes at one of their
//! cron ticks. When the ticks fall is the replay clock's business ([`super::super::clock`]);
//! this module says only what a tick would delete, now.

use serde_json::Value;

use super::super::Skip;
use super::super::cluster::{Cluster, Key, text};
use super::cleanup::{cleanup_may, valid_schedule};
use crate::offline::kyverno::validation::{self, Problem};
use crate::offline::rbac::Authorizer;
use crate::offline::rbac::resource::Mapper;
use crate::offline::vap::{self, CelPolicyOutcome};

/// The kinds the deleting controller runs.
pub fn is_deleting_policy(kind: &str) -> bool {
    matches!(kind, "DeletingPolicy" | "NamespacedDeletingPolicy")
}

/// Whether Kyverno's policy webhook sees writes of `policy`: its rules name
/// `deletingpolicies` and not `namespaceddeletingpolicies`
/// (pkg/controllers/webhook/controller.go `deletingPolicyRule`), so a
/// NamespacedDeletingPolicy meets only its CRD's schema.
pub fn validated(policy: &Value) -> bool {
    text(policy, "/kind") == "DeletingPolicy"
        && text(policy, "/apiVersion").starts_with("policies.kyverno.io/")
}

/// The policy webhook on a DeletingPolicy (pkg/webhooks/policy/handlers.go →
/// pkg/cel/policies/dpol/validate.go `Validate`): the compile step (here: every condition
/// and variable parses), a `matchConstraints` with resource rules, a cron `schedule`, and
/// no `http.*` in a namespaced policy. Each error is also a warning. `Ok(None)`: admitted;
/// `Ok(Some(text))`: refused; `Err`: not decidable offline (the compiler's wording).
pub fn admission(policy: &Value, warnings: &mut Vec<String>) -> Result<Option<String>, Skip> {
    if let Some(why) = vap::deleting_policy_unparsed(policy) {
        return Err(Skip::Engine(format!(
            "DeletingPolicy compile error (the CEL compiler's wording): {why}"
        )));
    }
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let mut problems = Vec::new();
    let rules = spec
        .pointer("/matchConstraints/resourceRules")
        .and_then(Value::as_array);
    if rules.is_none_or(Vec::is_empty) {
        problems.push("spec.matchConstraints: Required value: a matchConstraints with at least one resource rule is required".to_string());
    }
    let schedule = text(policy, "/spec/schedule");
    if schedule.is_empty() {
        problems.push("spec.schedule: Required value: schedule is required".to_string());
    } else if !valid_schedule(&schedule) || schedule.trim().starts_with('@') {
        // supercronic's cronexpr parses more than robfig's standard form (seconds, years)
        // and words its own errors.
        return Err(Skip::Engine(format!(
            "DeletingPolicy schedule {schedule:?} (cronexpr's parser)"
        )));
    }
    let namespaced = !text(policy, "/metadata/namespace").is_empty();
    if namespaced && vap::deleting_policy_uses_http(policy) {
        problems.push("spec: Forbidden: http.* is not allowed in namespaced policies; set --allowHTTPInNamespacedPolicies to enable".to_string());
    }
    warnings.extend(problems.iter().cloned());
    let problems: Vec<Problem> = problems
        .into_iter()
        .map(|message| Problem { message })
        .collect();
    Ok(validation::denial_text(&problems))
}

/// What one tick of `policy` deletes (controller.go `deleting`): the objects of the
/// resources its rules name (in its namespace when namespaced; no cluster-scoped ones
/// then) that the controller may `list`, less Kyverno's resourceFilters, that the engine
/// selects (match constraints, conditions) and that the controller may `delete`. An
/// object the engine errs on stays; one a CEL library needs the network for is a Skip.
pub fn selected(
    cluster: &Cluster,
    policy: &Value,
    authorizer: &Authorizer,
    mapper: &Mapper,
) -> Result<Vec<Key>, Skip> {
    let policy_ns = text(policy, "/metadata/namespace");
    let mut out = Vec::new();
    // The cleanup controller's CEL libraries read the cluster through its dynamic client
    // (cmd/cleanup-controller/main.go `libs.NewContextProvider`; the dpol compiler's
    // `resource.Lib`): the policy's conditions see the objects as they are.
    let readable = std::sync::Arc::new(cluster.objects.clone());
    for obj in &cluster.objects {
        let (api_version, kind) = (text(obj, "/apiVersion"), text(obj, "/kind"));
        let Some(r) = mapper.for_kind(&api_version, &kind) else {
            continue;
        };
        let ns = text(obj, "/metadata/namespace");
        if !policy_ns.is_empty() && (!r.namespaced || ns != policy_ns) {
            continue;
        }
        if !rules_name(policy, &r.group, &api_version, &r.plural)
            || cluster.filtered_for_cleanup(obj)
        {
            continue;
        }
        let may = |verb: &str, namespace: &str, name: &str| {
            cleanup_may(authorizer, r, verb, namespace, name)
        };
        // A list refused is skipped as a recoverable error (dclient.IsRecoverableError).
        if !may("list", &policy_ns, "") {
            continue;
        }
        let mut req = cluster.vap_request(obj, None);
        req.cluster = Some(readable.clone());
        match vap::evaluate_deleting_policy(policy, &req) {
            CelPolicyOutcome::Applied(true) => {}
            CelPolicyOutcome::Unsupported { why, .. } => return Err(Skip::from_cel(&why)),
            _ => continue,
        }
        let name = text(obj, "/metadata/name");
        if may("delete", &ns, &name) {
            no_dependents(cluster, obj)?;
            out.push(Key::of(obj));
        }
    }
    Ok(out)
}

/// What the garbage collector does to the dependents of a deleted object (by the
/// policy's `deletionPropagationPolicy`) is kube-controller-manager's, not modelled: an
/// object with dependents in the cluster is a skip when a tick deletes it.
pub(crate) fn no_dependents(cluster: &Cluster, obj: &Value) -> Result<(), Skip> {
    let uid = obj.pointer("/metadata/uid");
    let owned = |o: &&Value| {
        o.pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .is_some_and(|refs| refs.iter().any(|r| r.get("uid") == uid))
    };
    if uid.is_some() && cluster.objects.iter().any(|o| owned(&o)) {
        return Err(Skip::Controller(super::Maker::KubeControllerManager {
            from: text(obj, "/kind"),
            makes: "garbage collection of its dependents".into(),
        }));
    }
    Ok(())
}

/// Whether a resource rule of the policy names the resource (`admissionpolicy.GetGVRs`:
/// groups, versions and resources, `*` for any; subresources are not listed).
fn rules_name(policy: &Value, group: &str, api_version: &str, plural: &str) -> bool {
    let version = api_version.rsplit('/').next().unwrap_or(api_version);
    let rules = policy
        .pointer("/spec/matchConstraints/resourceRules")
        .and_then(Value::as_array);
    rules.into_iter().flatten().any(|rule| {
        let has = |k: &str, v: &str| {
            rule.get(k)
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|x| x == "*" || x == v))
        };
        has("apiGroups", group) && has("apiVersions", version) && has("resources", plural)
    })
}

/// One scheduled policy's next tick: what it deletes, on which schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    /// The policy, as `Kind namespace/name`.
    pub policy: String,
    pub schedule: String,
    pub targets: Vec<Key>,
}

/// The kinds whose objects the cleanup controller runs on a schedule.
pub fn is_scheduled_kind(kind: &str) -> bool {
    is_deleting_policy(kind) || super::cleanup::is_cleanup_policy(kind)
}

/// Whether a scheduled policy in the cluster may delete objects of `observed_kind` at
/// ticks this model does not compute.
pub fn ticks_unknown(cluster: &Cluster, observed_kind: &str) -> bool {
    !is_scheduled_kind(observed_kind) && ticks(cluster).is_err()
}

/// What a tick of each scheduled policy in the cluster would delete now.
pub fn ticks(cluster: &Cluster) -> Result<Vec<Tick>, Skip> {
    let policies: Vec<&Value> = (cluster.objects.iter())
        .filter(|o| is_scheduled_kind(&text(o, "/kind")))
        .collect();
    if policies.is_empty() {
        return Ok(Vec::new());
    }
    let authorizer = cluster.cleanup_authorizer();
    let mapper = cluster.mapper();
    let mut out = Vec::new();
    for p in policies {
        let kind = text(p, "/kind");
        let targets = if is_deleting_policy(&kind) {
            selected(cluster, p, &authorizer, &mapper)?
        } else {
            super::cleanup_run::selected(cluster, p, &authorizer, &mapper)?
        };
        let ns = text(p, "/metadata/namespace");
        let name = text(p, "/metadata/name");
        out.push(Tick {
            policy: if ns.is_empty() {
                format!("{kind} {name}")
            } else {
                format!("{kind} {ns}/{name}")
            },
            schedule: text(p, "/spec/schedule"),
            targets,
        });
    }
    Ok(out)
}

#[cfg(test)]
#[path = "deleting_tests.rs"]
mod tests;

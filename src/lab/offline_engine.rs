//! The calls into the offline engines: the RBAC authorizer (`crate::offline::rbac`), the
//! Kyverno engine (`crate::offline::kyverno::{load_policies, admit_with, denial}`) and
//! ValidatingAdmissionPolicy (`crate::offline::vap::evaluate`).

use serde_json::Value;

use std::sync::Arc;

use crate::offline::kyverno::background::{Access, FailedRequest};
use crate::offline::rbac::Authorizer;
use crate::offline::{kyverno, vap};
use crate::target::{AccessAnswer, AccessQuery, Admission, Denial, DeniedBy};

/// A policy the policy webhook refuses, as the API server answers its creation.
pub fn refused_policy(message: String) -> Admission {
    Admission::Denied(Denial {
        by: DeniedBy::Other,
        message,
        code: 400,
        all: vec![DeniedBy::Other],
    })
}

/// The lab's objects as the engines share them: the run's own set is handed on as it
/// is (an `Arc`); a plain list (unit tests) is put into one.
pub trait Cluster {
    fn shared(&self) -> Arc<Vec<Value>>;
}

impl Cluster for Arc<Vec<Value>> {
    fn shared(&self) -> Arc<Vec<Value>> {
        self.clone()
    }
}

impl Cluster for Vec<Value> {
    fn shared(&self) -> Arc<Vec<Value>> {
        Arc::new(self.clone())
    }
}

/// What the background controller made of one trigger.
pub struct GenerateRun {
    pub generated: Vec<Value>,
    pub failed_requests: Vec<FailedRequest>,
    /// Policies with a generate rule that matched the trigger.
    pub matched: Vec<String>,
}

impl GenerateRun {
    pub fn matched(&self, policy: Option<&str>) -> bool {
        match policy {
            Some(p) => self.matched.iter().any(|m| m == p),
            None => !self.matched.is_empty(),
        }
    }
}

/// The offline RBAC authorizer over the lab's objects, asked as `kubectl auth can-i
/// --as` would ask (the impersonated user gets the groups the API server adds).
pub fn can_i(authorizer: &Authorizer, q: &AccessQuery) -> Result<AccessAnswer, String> {
    use crate::offline::rbac::{AccessRequest, impersonated};
    let (user, groups) = impersonated(&q.user, &q.groups);
    let d = authorizer.authorize(&AccessRequest {
        user,
        groups,
        verb: q.verb.clone(),
        api_group: q.group.clone(),
        resource: q.resource.clone(),
        subresource: q.subresource.clone(),
        namespace: q.namespace.clone(),
        name: q.name.clone(),
        non_resource_path: None,
    });
    Ok(AccessAnswer {
        allowed: d.allowed,
        reason: d.reason,
    })
}

/// Admission in-process, in the API server's order: Kyverno's mutate rules (the
/// mutating webhook), then on the result the ValidatingAdmissionPolicies, then
/// Kyverno's validate rules (the validating webhook). The first denial is reported.
/// The lab's objects are the cluster (clone sources, namespace labels, params). `Err`
/// when a policy cannot be evaluated offline.
pub fn admit(
    objects: &impl Cluster,
    object: &Value,
    update: bool,
    user: Option<&(String, Vec<String>)>,
) -> Result<Admission, String> {
    let objects = &objects.shared();
    // The API server names a `generateName` object before admission.
    let mut object = object.clone();
    super::name_offline_trigger(&mut object);
    // Kyverno's MutatingPolicies (CEL) first, then its classic mutate rules.
    let mut request = vap_request(objects, &object, update, user);
    request.cluster = Some(objects.clone());
    let object = vap::mutate_with_policies(objects, &request)?;
    let (policies, resp) = run(objects, &object, update, user);
    if let Some(d) = rule_error(&resp) {
        return Ok(Admission::Denied(d));
    }
    // Validating admission sees the mutated object; the API server runs the
    // ValidatingAdmissionPolicy plugin before the validating webhooks.
    let vap = validating_admission_policies(objects, &resp.patched, update, user);
    if let Some(e) = vap.unsupported() {
        return Err(format!(
            "ValidatingAdmissionPolicy `{}` (binding `{}`) cannot be evaluated offline: {}",
            e.policy,
            e.binding,
            e.reason()
        ));
    }
    if let Some(first) = vap.denials.first() {
        let all = vap
            .denials
            .iter()
            .map(|d| DeniedBy::ValidatingAdmissionPolicy {
                policy: d.policy.clone(),
                binding: d.binding.clone(),
            })
            .collect::<Vec<_>>();
        return Ok(Admission::Denied(Denial {
            by: all[0].clone(),
            message: first.status_message(&resp.patched),
            code: first.code,
            all,
        }));
    }
    let all: Vec<DeniedBy> = enforced_failures(&policies, &resp);
    match kyverno::denial(&policies, &resp) {
        Some((policy, rule, message)) => Ok(Admission::Denied(Denial {
            by: DeniedBy::Kyverno { policy, rule },
            message,
            code: 400,
            all,
        })),
        None => {
            // A validate rule the engine could not evaluate (a CEL `authorizer`
            // check, say) leaves the webhook's answer unknown: never an allow.
            if let Some((r, why)) = resp.results.iter().find_map(|r| {
                let why = r.unsupported.as_ref()?;
                (r.kind == kyverno::RuleKind::Validate).then_some((r, why))
            }) {
                return Err(format!(
                    "Kyverno rule `{}/{}` cannot be evaluated offline: {why}",
                    r.policy, r.rule,
                ));
            }
            Ok(Admission::Allowed {
                object: resp.patched,
                warnings: vap.warnings,
            })
        }
    }
}

/// Every ValidatingAdmissionPolicyBinding among the lab's objects on `object`.
fn validating_admission_policies(
    objects: &[Value],
    object: &Value,
    update: bool,
    user: Option<&(String, Vec<String>)>,
) -> vap::VapOutcome {
    let req = vap_request(objects, object, update, user);
    let mut out = vap::evaluate(objects, &req);
    // Kyverno's ValidatingPolicies (policies.kyverno.io) hold their own
    // validationActions; Kyverno's webhook evaluates them like a Deny-bound VAP.
    for p in objects.iter().filter(|o| {
        matches!(
            o.get("kind").and_then(Value::as_str),
            Some("ValidatingPolicy" | "NamespacedValidatingPolicy")
        )
    }) {
        vap::evaluate_validating_policy(objects, p, &req, &mut out);
    }
    out.allowed = out.denials.is_empty();
    out
}

/// The admission request the CEL evaluators see for `object`.
fn vap_request(
    objects: &[Value],
    object: &Value,
    update: bool,
    user: Option<&(String, Vec<String>)>,
) -> vap::VapRequest {
    let (username, groups) = identity(user);
    // A namespaced probe without a namespace lands in `default`, as it does live.
    let mut object = object.clone();
    crate::offline::kyverno::runner::default_namespace(&mut object);
    let namespace_object = match object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
    {
        Some(ns) => vap::namespace_object(objects, ns, super::namespace_labels(objects, ns)),
        None => Value::Null,
    };
    vap::VapRequest {
        operation: if update { "UPDATE" } else { "CREATE" }.into(),
        old_object: if update { object.clone() } else { Value::Null },
        object,
        namespace_object,
        user: vap::VapUser {
            username,
            groups,
            ..Default::default()
        },
        dry_run: true,
        ..Default::default()
    }
}

/// The user a probe runs as: `--as` with the groups the API server adds, else the
/// kind cluster's admin.
fn identity(user: Option<&(String, Vec<String>)>) -> (String, Vec<String>) {
    match user {
        Some((u, g)) => crate::offline::rbac::impersonated(u, g),
        None => (
            "kubernetes-admin".to_string(),
            vec![
                "system:masters".to_string(),
                "system:authenticated".to_string(),
            ],
        ),
    }
}

/// The object the validating stage sees: the mutating stage's output (Kyverno's
/// MutatingPolicies and mutate rules), whatever validation then says.
pub fn mutated(objects: &impl Cluster, object: &Value) -> Result<Value, String> {
    let objects = &objects.shared();
    let mut object = object.clone();
    super::name_offline_trigger(&mut object);
    let mut request = vap_request(objects, &object, false, None);
    request.cluster = Some(objects.clone());
    let object = vap::mutate_with_policies(objects, &request)?;
    let (_, resp) = run(objects, &object, false, None);
    Ok(resp.patched)
}

/// The objects generate rules would create for this trigger (dry runs never generate;
/// offline there is no background controller to wait for).
pub fn generate(
    objects: &impl Cluster,
    trigger: &Value,
    access: &Arc<Access>,
) -> Result<GenerateRun, String> {
    let objects = &objects.shared();
    let (_, resp) = run_with(objects, trigger, false, None, Some(access.clone()));
    if let Some(e) = resp
        .results
        .iter()
        .find(|r| r.kind == kyverno::RuleKind::Generate && r.status == kyverno::RuleStatus::Error)
    {
        return Err(format!(
            "generate rule {}/{} failed offline: {}",
            e.policy, e.rule, e.message
        ));
    }
    let matched = resp
        .results
        .iter()
        .filter(|r| r.kind == kyverno::RuleKind::Generate)
        .map(|r| r.policy.clone())
        .collect();
    let mut generated = resp.generated;
    let mut request = vap_request(objects, trigger, false, None);
    request.cluster = Some(objects.clone());
    generated.extend(vap::generate_with_policies(objects, &request)?);
    Ok(GenerateRun {
        generated,
        failed_requests: resp.failed_requests,
        matched,
    })
}

fn run(
    objects: &Arc<Vec<Value>>,
    object: &Value,
    update: bool,
    user: Option<&(String, Vec<String>)>,
) -> (Vec<kyverno::Policy>, kyverno::Response) {
    run_with(objects, object, update, user, None)
}

fn run_with(
    objects: &Arc<Vec<Value>>,
    object: &Value,
    update: bool,
    user: Option<&(String, Vec<String>)>,
    background: Option<Arc<Access>>,
) -> (Vec<kyverno::Policy>, kyverno::Response) {
    let (policies, _not_policies) = kyverno::load_policies(objects);
    let ns = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("default");
    let namespace_labels = super::namespace_labels(objects, ns);
    let (username, groups) = identity(user);
    let req = kyverno::Request {
        operation: if update { "UPDATE" } else { "CREATE" }.into(),
        object: object.clone(),
        old_object: if update { object.clone() } else { Value::Null },
        user_info: kyverno::UserInfo {
            username,
            groups,
            ..Default::default()
        },
        namespace_labels,
        ..Default::default()
    };
    let opts = kyverno::Options {
        cluster: objects.clone(),
        background,
        ..Default::default()
    };
    let resp = kyverno::admit_with(&policies, &req, &opts);
    (policies, resp)
}

/// A mutate rule that cannot be applied makes Kyverno refuse the request.
fn rule_error(resp: &kyverno::Response) -> Option<Denial> {
    let e = resp
        .results
        .iter()
        .find(|r| r.kind == kyverno::RuleKind::Mutate && r.status == kyverno::RuleStatus::Error)?;
    let by = DeniedBy::Kyverno {
        policy: e.policy.clone(),
        rule: e.rule.clone(),
    };
    Some(Denial {
        by: by.clone(),
        message: format!("mutation failed: {}", e.message),
        code: 400,
        all: vec![by],
    })
}

fn enforced_failures(policies: &[kyverno::Policy], resp: &kyverno::Response) -> Vec<DeniedBy> {
    resp.results
        .iter()
        .filter(|r| {
            r.kind == kyverno::RuleKind::Validate
                && r.status == kyverno::RuleStatus::Fail
                && kyverno::enforced(policies, resp, r)
        })
        .map(|r| DeniedBy::Kyverno {
            policy: r.policy.clone(),
            rule: r.rule.clone(),
        })
        .collect()
}

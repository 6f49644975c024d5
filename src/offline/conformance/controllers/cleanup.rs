//! The cleanup controller: admission of `CleanupPolicy`/`ClusterCleanupPolicy` as its
//! webhook does it (its TTL controller is [`super::ttl`]'s). What
//! its ticks delete is [`super::cleanup_run`]'s and [`super::deleting`]'s; when they fall,
//! the replay clock's. It does not delete anything.

use serde_json::Value;

use super::super::Skip;
use super::super::cluster::text;
use crate::offline::rbac::resource::Mapper;
use crate::offline::rbac::{AccessRequest, Authorizer};

/// The kinds the cleanup controller's policy webhook validates.
pub fn is_cleanup_policy(kind: &str) -> bool {
    matches!(kind, "CleanupPolicy" | "ClusterCleanupPolicy")
}

/// Every kind whose objects start the cleanup controller's scheduled work.
pub fn is_cleanup_kind(kind: &str) -> bool {
    is_cleanup_policy(kind) || matches!(kind, "DeletingPolicy" | "NamespacedDeletingPolicy")
}

/// The cleanup controller's service account (`config.KyvernoUserName` of the chart's
/// `kyverno-cleanup-controller`).
pub const CLEANUP_SA: &str = "system:serviceaccount:kyverno:kyverno-cleanup-controller";

/// The prefix of the cleanup webhook's refusals.
const WEBHOOK: &str = "kyverno-cleanup-controller.kyverno.svc";

/// Admission of a cleanup policy by the cleanup controller's webhook
/// (cmd/cleanup-controller/handlers/admission/policy/handlers.go →
/// pkg/validation/cleanuppolicy/validate.go `Validate`): the spec's own checks
/// (api/kyverno/v2/cleanup_policy_types.go `CleanupPolicySpec.Validate`: context entries,
/// the cron `schedule`, match/exclude), then the controller's permission to delete and list
/// each matched kind. `Ok(None)`: admitted; `Ok(Some(text))`: refused; `Err`: not decidable.
pub fn admission(
    policy: &Value,
    authorizer: &Authorizer,
    mapper: &Mapper,
) -> Result<Option<String>, Skip> {
    let mut errs = Vec::new();
    if let Some(Value::Array(entries)) = policy.pointer("/spec/context") {
        for e in entries {
            if e.get("imageRegistry").is_some() {
                errs.push(
                    "spec.context: Invalid value: ImageRegistry is not allowed in CleanUp Policy"
                        .to_string(),
                );
            } else if e.get("configMap").is_some() {
                errs.push(
                    "spec.context: Invalid value: ConfigMap is not allowed in CleanUp Policy"
                        .to_string(),
                );
            }
        }
    }
    let schedule = text(policy, "/spec/schedule");
    if !valid_schedule(&schedule) {
        errs.push(format!(
            "spec.schedule: Invalid value: {schedule:?}: schedule spec in the cleanupPolicy is not in proper cron format"
        ));
    }
    if matches_empty_set(policy) {
        errs.push("spec: Invalid value: CleanupPolicy is matching an empty set".to_string());
    }
    if let Some(why) = match_problem(policy, mapper) {
        return Err(why);
    }
    if !errs.is_empty() {
        return Ok(Some(refusal(&errs)));
    }
    if let Some(why) = permission(policy, authorizer, mapper)? {
        return Ok(Some(format!(
            "admission webhook \"{WEBHOOK}\" denied the request: {why}"
        )));
    }
    Ok(None)
}

/// `field.ErrorList.ToAggregate()`: one error bare, several in brackets.
fn refusal(errs: &[String]) -> String {
    let body = if errs.len() == 1 {
        errs[0].clone()
    } else {
        format!("[{}]", errs.join(", "))
    };
    format!("admission webhook \"{WEBHOOK}\" denied the request: {body}")
}

/// What of the match/exclude blocks this model does not check: user info
/// (`ValidateNoUserInfo`) and what `MatchResources.Validate` judges
/// (api/kyverno/v2beta1/match_resources_types.go, resource_description_types.go: `any`
/// with `all`, names, selectors, and in a namespaced policy namespaces and cluster-wide
/// kinds), each refused with its own wording.
fn match_problem(policy: &Value, mapper: &Mapper) -> Option<Skip> {
    let namespaced = text(policy, "/kind") == "CleanupPolicy";
    let unmodelled = |what: &str| Some(Skip::Engine(format!("cleanup policy {what}")));
    for block in ["match", "exclude"] {
        let Some(m) = policy.pointer(&format!("/spec/{block}")) else {
            continue;
        };
        let nonempty = |k: &str| {
            m.get(k)
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
        };
        if nonempty("any") && nonempty("all") {
            return unmodelled(&format!("`{block}` with both any and all"));
        }
        for f in filters(m) {
            let r = f.get("resources").unwrap_or(&Value::Null);
            for key in ["names", "selector"] {
                if r.get(key).is_some() {
                    return unmodelled(&format!("`{block}` resources with {key}"));
                }
            }
            if namespaced {
                if r.get("namespaces").is_some() {
                    return unmodelled(&format!("`{block}` namespaces in a namespaced policy"));
                }
                let kinds = r.get("kinds").and_then(Value::as_array);
                for k in kinds.into_iter().flatten().filter_map(Value::as_str) {
                    if resolve(mapper, k).is_none_or(|r| !r.namespaced) {
                        return unmodelled(&format!("`{block}` kind {k:?} in a namespaced policy"));
                    }
                }
            }
            for key in ["subjects", "roles", "clusterRoles"] {
                if f.get(key).is_some() {
                    return Some(Skip::Engine(format!(
                        "cleanup policy `{block}` with user info ({key})"
                    )));
                }
            }
        }
    }
    None
}

/// `CleanupPolicySpec.ValidateMatchExcludeConflict`: an exclude that takes away every
/// matched resource (only `any` blocks are compared, as Kyverno does).
fn matches_empty_set(policy: &Value) -> bool {
    let Some(exclude) = policy.pointer("/spec/exclude") else {
        return false;
    };
    let nonempty = |v: Option<&Value>| v.and_then(Value::as_array).is_some_and(|a| !a.is_empty());
    let matched = policy.pointer("/spec/match");
    if nonempty(exclude.get("all")) || nonempty(matched.and_then(|m| m.get("all"))) {
        return false;
    }
    let m_any = matched.and_then(|m| m.get("any")).and_then(Value::as_array);
    let e_any = exclude.get("any").and_then(Value::as_array);
    if let (Some(m), Some(e)) = (m_any, e_any)
        && !m.is_empty()
        && !e.is_empty()
    {
        return m.iter().any(|a| e.contains(a));
    }
    let is_empty_block = exclude.as_object().is_none_or(|o| {
        o.values()
            .all(|v| v.is_null() || v.as_array().is_some_and(|a| a.is_empty()))
    });
    !is_empty_block
}

/// The resource filters of a match block (`MatchResources.GetResourceFilters`: `any`, else
/// `all`).
fn filters(m: &Value) -> Vec<&Value> {
    let pick = |k: &str| {
        m.get(k)
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
            .map(|a| a.iter().collect::<Vec<_>>())
    };
    pick("any").or_else(|| pick("all")).unwrap_or_default()
}

/// pkg/validation/cleanuppolicy/validate.go `validateAuth`: for each kind (and name) of the
/// match filters, the controller may `delete`, then `list`, in the policy's namespace.
fn permission(
    policy: &Value,
    authorizer: &Authorizer,
    mapper: &Mapper,
) -> Result<Option<String>, Skip> {
    let namespace = text(policy, "/metadata/namespace");
    let Some(m) = policy.pointer("/spec/match") else {
        return Ok(None);
    };
    for f in filters(m) {
        let resources = f.get("resources").unwrap_or(&Value::Null);
        let kinds: Vec<&str> = resources
            .get("kinds")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut names: Vec<&str> = resources
            .get("names")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if names.is_empty() {
            names.push("");
        }
        for kind in kinds {
            let Some(r) = resolve(mapper, kind) else {
                return Err(Skip::Engine(format!(
                    "cleanup policy kind {kind:?} (discovery of wildcards or unknown kinds)"
                )));
            };
            for name in &names {
                for verb in ["delete", "list"] {
                    if !cleanup_may(authorizer, r, verb, &namespace, name) {
                        return Ok(Some(format!(
                            "cleanup controller has no permission to {verb} kind {kind}"
                        )));
                    }
                }
            }
        }
    }
    Ok(None)
}

/// A match kind (`Pod`, `v1/Pod`, `apps/v1/Deployment`) as discovery resolves it; `None`
/// for wildcards and kinds discovery does not serve.
pub(crate) fn resolve<'a>(
    mapper: &'a Mapper,
    kind: &str,
) -> Option<&'a crate::offline::rbac::resource::ApiResource> {
    if kind.contains('*') || kind.contains('?') {
        return None;
    }
    match kind.rsplit_once('/') {
        Some((gv, k)) => mapper.for_kind(gv, k),
        None => mapper.for_bare_kind(kind),
    }
}

/// Whether `spec` parses as robfig/cron's `ParseStandard` (v1) parses it: a descriptor
/// (`@hourly`, `@every 5m`, …) or five fields (minute, hour, day of month, month, day of
/// week), each a comma list of `*`/`?`/`n`/`n-m`, optionally `/step`, with month and
/// weekday names.
pub fn valid_schedule(spec: &str) -> bool {
    let spec = spec.trim();
    if let Some(d) = spec.strip_prefix('@') {
        return match d {
            "yearly" | "annually" | "monthly" | "weekly" | "daily" | "midnight" | "hourly" => true,
            _ => d.strip_prefix("every ").is_some_and(|dur| {
                crate::offline::kyverno::quantity::parse_duration(dur).is_some()
            }),
        };
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return false;
    }
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
    let bounds: [(u32, u32, &[&str]); 5] = [
        (0, 59, &[]),
        (0, 23, &[]),
        (1, 31, &[]),
        (1, 12, &MONTHS),
        (0, 6, &DAYS),
    ];
    fields
        .iter()
        .zip(bounds)
        .all(|(f, (lo, hi, names))| valid_field(f, lo, hi, names))
}

fn valid_field(field: &str, lo: u32, hi: u32, names: &[&str]) -> bool {
    let value = |s: &str| -> Option<u32> {
        let first = if names.len() == 12 { 1 } else { 0 };
        if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(s)) {
            return Some(i as u32 + first);
        }
        s.parse::<u32>().ok()
    };
    field.split(',').all(|part| {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => (r, Some(s)),
            None => (part, None),
        };
        if let Some(s) = step
            && s.parse::<u32>().ok().is_none_or(|n| n == 0)
        {
            return false;
        }
        if range == "*" || range == "?" {
            return true;
        }
        let (start, end) = match range.split_once('-') {
            Some((a, b)) => match (value(a), value(b)) {
                (Some(a), Some(b)) => (a, b),
                _ => return false,
            },
            None => match value(range) {
                Some(a) => (a, if step.is_some() { hi } else { a }),
                None => return false,
            },
        };
        start >= lo && end <= hi && start <= end
    })
}

/// Whether the cleanup controller's service account may `verb` objects of resource `r`
/// (in `namespace`, named `name`; empty for all), by the cluster's RBAC.
pub(crate) fn cleanup_may(
    authorizer: &Authorizer,
    r: &crate::offline::rbac::resource::ApiResource,
    verb: &str,
    namespace: &str,
    name: &str,
) -> bool {
    authorizer
        .authorize(&AccessRequest {
            user: CLEANUP_SA.into(),
            groups: sa_groups(),
            verb: verb.into(),
            api_group: r.group.clone(),
            resource: r.plural.clone(),
            subresource: String::new(),
            namespace: namespace.into(),
            name: name.into(),
            non_resource_path: None,
        })
        .allowed
}

pub(crate) fn sa_groups() -> Vec<String> {
    vec![
        "system:serviceaccounts".into(),
        "system:serviceaccounts:kyverno".into(),
        "system:authenticated".into(),
    ]
}

#[cfg(test)]
#[path = "cleanup_tests.rs"]
mod tests;

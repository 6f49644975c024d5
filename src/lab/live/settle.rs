//! What an admission probe waits for, and when it asks again.
//!
//! Before the probe: every policy it relies on must have arrived where it acts — the
//! policies the check names, and the learner's own policies (workspace files) that apply
//! to the probe's kind, a ValidatingPolicy without `deniedBy` included; a
//! ValidatingAdmissionPolicy of the workspace must have been read by the API server
//! (`status.observedGeneration` at its `metadata.generation`). Each wait ends with a
//! verdict (`Readiness`), and a wait that ended unready is remembered for the run.
//!
//! After a probe that did not go as expected: it is asked again only while the learner's
//! admission configuration is fresh — one of those objects, or Kyverno's webhook
//! configurations, written less than `SETTLE` ago (their `managedFields` times) — and
//! only until `SETTLE` after that write. A wrong answer applied a while ago is judged at
//! once, as fast as a right one.

use chrono::{DateTime, Utc};

use super::*;
use crate::target::live::Readiness;

/// How long after a write of the admission configuration a probe may still miss it
/// (webhook configurations and bindings reach the API server's admission chain a moment
/// after they are stored).
pub(super) const SETTLE: Duration = Duration::from_secs(8);

/// Kyverno's resource webhook configurations (pkg/config/config.go, v1.19.0).
const KYVERNO_WEBHOOKS: [(&str, &str); 2] = [
    (
        "MutatingWebhookConfiguration",
        "kyverno-resource-mutating-webhook-cfg",
    ),
    (
        "ValidatingWebhookConfiguration",
        "kyverno-resource-validating-webhook-cfg",
    ),
];

/// Kinds of Kyverno policy whose readiness a probe waits for.
fn is_policy(api_version: &str, kind: &str) -> bool {
    (api_version.starts_with("kyverno.io/") && matches!(kind, "ClusterPolicy" | "Policy"))
        || (api_version.starts_with("policies.kyverno.io/")
            && matches!(
                kind,
                "ValidatingPolicy"
                    | "NamespacedValidatingPolicy"
                    | "MutatingPolicy"
                    | "NamespacedMutatingPolicy"
                    | "ImageValidatingPolicy"
            ))
}

fn is_vap(api_version: &str, kind: &str) -> bool {
    api_version.starts_with("admissionregistration.k8s.io/")
        && matches!(
            kind,
            "ValidatingAdmissionPolicy"
                | "ValidatingAdmissionPolicyBinding"
                | "MutatingAdmissionPolicy"
                | "MutatingAdmissionPolicyBinding"
        )
}

/// Pod controllers Kyverno's autogen extends a Pod rule to.
const POD_CONTROLLERS: [&str; 6] = [
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "ReplicaSet",
    "Job",
    "CronJob",
];

/// Whether a kind named in a `kyverno.io` rule (`Pod`, `v1/Pod`, `apps/v1/Deployment`,
/// `*`) covers the probe's kind.
fn kind_covers(name: &str, kind: &str) -> bool {
    let last = name.rsplit('/').next().unwrap_or(name);
    last == "*" || last == kind || (last == "Pod" && POD_CONTROLLERS.contains(&kind))
}

/// Whether a policy applies to the probe, as far as its kinds and namespaces say (a
/// selector is not evaluated here: it counts as applying).
pub(super) fn applies_to(policy: &Value, probe: &Value) -> bool {
    let kind = probe.get("kind").and_then(Value::as_str).unwrap_or("");
    let ns = probe
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("default");
    let api = policy
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if api.starts_with("policies.kyverno.io/") {
        let plural = crate::offline::rbac::resource::Mapper::built_in()
            .for_kind(
                probe
                    .get("apiVersion")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
                kind,
            )
            .map(|r| r.plural.clone())
            .unwrap_or_else(|| format!("{}s", kind.to_lowercase()));
        let rules = policy
            .pointer("/spec/matchConstraints/resourceRules")
            .and_then(Value::as_array);
        return rules.is_none_or(|rules| {
            rules.iter().any(|r| {
                r.get("resources")
                    .and_then(Value::as_array)
                    .is_some_and(|rs| {
                        rs.iter().filter_map(Value::as_str).any(|s| {
                            let base = s.split('/').next().unwrap_or(s);
                            base == "*" || base == plural
                        })
                    })
            })
        });
    }
    let rules = policy
        .pointer("/spec/rules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    rules.iter().any(|rule| {
        let Some(m) = rule.get("match") else {
            return false;
        };
        let mut filters: Vec<&Value> = Vec::new();
        for key in ["any", "all"] {
            if let Some(list) = m.get(key).and_then(Value::as_array) {
                filters.extend(list.iter().filter_map(|f| f.get("resources")));
            }
        }
        if let Some(r) = m.get("resources") {
            filters.push(r);
        }
        filters.iter().any(|r| {
            let kinds = r.get("kinds").and_then(Value::as_array);
            let kind_ok = kinds.is_some_and(|ks| {
                ks.iter()
                    .filter_map(Value::as_str)
                    .any(|k| kind_covers(k, kind))
            });
            let ns_ok = match r.get("namespaces").and_then(Value::as_array) {
                Some(list) if !list.is_empty() => list
                    .iter()
                    .filter_map(Value::as_str)
                    .any(|p| crate::offline::kyverno::matching::wildcard_match(p, ns)),
                _ => true,
            };
            kind_ok && ns_ok
        })
    })
}

/// The learner's admission configuration a probe relies on, from the workspace.
pub(super) struct Config {
    /// Kyverno policies that apply to the probe.
    pub policies: Vec<ObjRef>,
    /// ValidatingAdmissionPolicies and bindings (and their mutating kin).
    pub vaps: Vec<ObjRef>,
}

pub(super) fn workspace_config(env: Submission<'_>, probe: &Value) -> Config {
    let objs = crate::lab::workspace::manifests(env.lab, env.workspace).objects;
    let mut out = Config {
        policies: Vec::new(),
        vaps: Vec::new(),
    };
    for o in &objs {
        let Some(r) = ObjRef::of(o) else { continue };
        if is_policy(&r.api_version, &r.kind) && applies_to(o, probe) {
            out.policies.push(r);
        } else if is_vap(&r.api_version, &r.kind) {
            out.vaps.push(r);
        }
    }
    out
}

/// The outcome a policy's readiness gives a check, when it is not Ready: Kyverno's own
/// "not ready" is the learner's (`fail`, with its reason); no status at all, or none that
/// decides, is the environment's (`error`, with what to look at).
pub(super) fn unready_outcome(r: &ObjRef, how: &Readiness, timeout: Duration) -> Option<Outcome> {
    match how {
        Readiness::Ready => None,
        Readiness::Missing => Some(Outcome::fail(Detail::PolicyMissing {
            what: r.to_string(),
        })),
        Readiness::NotReady(why) => Some(Outcome::fail(Detail::PolicyNotReady {
            what: r.to_string(),
            why: why.to_string(),
        })),
        Readiness::NotSeen => Some(Outcome::error(Detail::PolicyNoStatus {
            what: r.to_string(),
            seconds: timeout.as_secs(),
        })),
        Readiness::Pending => Some(Outcome::error(Detail::PolicyPending {
            what: r.to_string(),
            seconds: timeout.as_secs(),
        })),
    }
}

/// Waits (briefly) until the API server has read each ValidatingAdmissionPolicy of the
/// workspace: `status.observedGeneration` at `metadata.generation`. Never a verdict: a
/// server that writes no status is simply not waited for longer than `limit`.
pub(super) async fn await_vaps(
    live: &Live,
    vaps: &[ObjRef],
    limit: Duration,
) -> Result<(), LiveError> {
    let until = Instant::now() + limit;
    for r in vaps.iter().filter(|r| r.kind.ends_with("AdmissionPolicy")) {
        loop {
            let Some(obj) = live.get(r).await? else { break };
            let generation = obj.pointer("/metadata/generation").and_then(Value::as_i64);
            let observed = obj
                .pointer("/status/observedGeneration")
                .and_then(Value::as_i64);
            if generation.is_none() || observed >= generation || Instant::now() >= until {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    Ok(())
}

/// The newest write of an object: its `managedFields` times and creation.
fn last_write(obj: &Value) -> Option<DateTime<Utc>> {
    let parse = |v: &Value| {
        v.as_str()
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc))
    };
    let mut times: Vec<DateTime<Utc>> = obj
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|mf| {
            mf.iter()
                .filter_map(|m| m.get("time").and_then(parse))
                .collect()
        })
        .unwrap_or_default();
    times.extend(obj.pointer("/metadata/creationTimestamp").and_then(parse));
    times.into_iter().max()
}

/// Until when a probe that missed may be asked again: `SETTLE` after the newest write of
/// the configuration it relies on (None when that write is older, or nothing is there).
pub(super) async fn settle_until(
    live: &Live,
    config: &Config,
    named: &[ObjRef],
) -> Result<Option<DateTime<Utc>>, LiveError> {
    let mut refs: Vec<ObjRef> = config.policies.clone();
    refs.extend(config.vaps.iter().cloned());
    refs.extend(named.iter().cloned());
    for (kind, name) in KYVERNO_WEBHOOKS {
        refs.push(ObjRef::new(
            "admissionregistration.k8s.io/v1",
            kind,
            None,
            name,
        ));
    }
    let mut newest: Option<DateTime<Utc>> = None;
    for r in &refs {
        let obj = match live.get(r).await {
            Ok(Some(o)) => o,
            Ok(None) | Err(LiveError::NotServed { .. }) => continue,
            Err(e) => return Err(e),
        };
        newest = newest.max(last_write(&obj));
    }
    let settle = chrono::Duration::from_std(SETTLE).unwrap_or_default();
    Ok(newest
        .map(|t| t + settle)
        .filter(|until| *until > Utc::now()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(ns: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": ns}})
    }

    #[test]
    fn a_policy_applies_by_kind_autogen_and_namespace() {
        let cp = json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "spec": {"rules": [
            {"match": {"any": [{"resources": {"kinds": ["Pod"], "namespaces": ["kca-*"]}}]}}]}});
        assert!(applies_to(&cp, &pod("kca-admission")));
        assert!(!applies_to(&cp, &pod("default")));
        let dep = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"namespace": "kca-x"}});
        assert!(applies_to(&cp, &dep));
        let cm =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "kca-x"}});
        assert!(!applies_to(&cp, &cm));
        let vpol = json!({"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy",
            "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
             "operations": ["CREATE"], "resources": ["pods"]}]}}});
        assert!(applies_to(&vpol, &pod("anything")));
        assert!(!applies_to(&vpol, &cm));
    }

    #[test]
    fn the_newest_write_is_read_from_managed_fields() {
        let o = json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z", "managedFields": [
            {"manager": "kubectl", "time": "2026-01-02T00:00:00Z"},
            {"manager": "kyverno", "time": "2026-01-03T00:00:00Z"}]}});
        assert_eq!(
            last_write(&o).unwrap().to_rfc3339(),
            "2026-01-03T00:00:00+00:00"
        );
        assert_eq!(last_write(&json!({"metadata": {}})), None);
    }
}

//! `kubectl get policyreports -n <ns>`: the PolicyReports of one namespace at rest, as
//! reports.rs tells them, when the replay can tell them all. A namespace also holds
//! objects the replay does not (a controller's Pods, `kube-root-ca.crt`, the `default`
//! ServiceAccount; in `default`, the `kubernetes` Service and its endpoints): their
//! reports are known to be none only when no policy that reports at all can select
//! their kind (Kyverno v1.19.0 pkg/utils/report `IsPolicyReportable` — the
//! `reports.kyverno.io/disabled` label — and, for admission policies,
//! pkg/controllers/report/utils/utils.go `getIncludeReportingLabelRequirement`: only
//! those labelled `reports.kyverno.io/enabled`). Otherwise the list is a reason.

use serde_json::Value;

use super::super::cluster::{Cluster, Key, text};
use super::reports;
use crate::offline::kyverno::{self, RuleStatus};

/// Kinds a namespace may hold objects of that the replay does not (made by controllers
/// or the cluster itself), less those Kyverno's `resourceFilters` keep out of reports.
const UNHELD: &[&str] = &[
    "Pod",
    "Job",
    "ControllerRevision",
    "ConfigMap",
    "Secret",
    "ServiceAccount",
    "Endpoints",
    "EndpointSlice",
    "Lease",
];

/// What the `default` namespace starts with besides (the `kubernetes` Service).
const UNHELD_IN_DEFAULT: &[&str] = &["Service"];

/// Pod controllers: a CEL policy on Pods runs on them too (its autogen copies).
const POD_CONTROLLERS: &[&str] = &[
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "CronJob",
];

/// The PolicyReports in `namespace`, or why the replay cannot list them all.
pub fn listed(cluster: &Cluster, namespace: &str) -> Result<Vec<Value>, String> {
    if namespace.is_empty() {
        return Err("policy reports across namespaces".into());
    }
    let unheld: Vec<&str> = UNHELD
        .iter()
        .chain(if namespace == "default" {
            UNHELD_IN_DEFAULT
        } else {
            &[]
        })
        .copied()
        .collect();
    if let Some(kind) = unheld.iter().find(|k| selects(cluster, namespace, k)) {
        return Err(format!(
            "reports of {kind} objects the replay does not hold (a reporting policy selects them)"
        ));
    }
    let built = reports::policy_reports(cluster)?;
    Ok(built
        .into_iter()
        .map(|b| b.report)
        .filter(|r| {
            let k = Key::of(r);
            k.kind == "PolicyReport" && k.namespace == namespace
        })
        .collect())
}

/// The results `--allowedResults` lets into reports (pkg/utils/report/results.go
/// `EngineResponseToReportResults`, `MutationEngineResponseToReportResults`: a status
/// not allowed is left out). A GeneratingPolicy's result is filtered only when it made
/// something (`GenerationEngineResponseToReportResults`), which the results here do not
/// say: such a result under a filter is unmodelled.
pub(super) fn allowed_only(features: super::Features, results: &mut Vec<reports::Reported>) {
    if !features.report_only_failures {
        return;
    }
    results.retain_mut(|r| {
        if r.status == RuleStatus::Fail {
            return true;
        }
        if r.source == "KyvernoGeneratingPolicy" {
            r.unmodelled =
                Some("a GeneratingPolicy's result under reporting.allowedResults".into());
            return true;
        }
        false
    });
}

/// Whether a policy that reports may select objects of `kind` in `namespace`.
fn selects(cluster: &Cluster, namespace: &str, kind: &str) -> bool {
    let (classic, _) = kyverno::load_policies(&cluster.objects);
    let classic_selects = classic.iter().any(|p| {
        p.raw
            .pointer("/metadata/labels/reports.kyverno.io~1disabled")
            .is_none()
            && p.namespace.as_deref().is_none_or(|n| n == namespace)
            && classic_kinds(&p.raw).iter().any(|k| kind_matches(k, kind))
    });
    classic_selects
        || cluster.objects.iter().any(|o| {
            let pkind = text(o, "/kind");
            let labels = |l: &str| {
                o.pointer(&format!("/metadata/labels/{}", l.replace('/', "~1")))
                    .is_some()
            };
            let reporting = match pkind.as_str() {
                "ValidatingAdmissionPolicy" | "MutatingAdmissionPolicy" => {
                    labels("reports.kyverno.io/enabled")
                }
                k if reports::UNMODELLED_SOURCES.contains(&k) => {
                    !labels("reports.kyverno.io/disabled")
                        && (!k.starts_with("Namespaced")
                            || text(o, "/metadata/namespace") == namespace)
                }
                _ => false,
            };
            reporting && cel_kinds(cluster, o).iter().any(|k| kind_matches(k, kind))
        })
}

fn kind_matches(selector: &str, kind: &str) -> bool {
    selector == "*" || selector.rsplit('/').next() == Some(kind)
}

/// The kind selectors of a ClusterPolicy's or Policy's rules (after autogen).
fn classic_kinds(raw: &Value) -> Vec<String> {
    let expanded = kyverno::autogen::expand(raw);
    let mut out = Vec::new();
    for rule in expanded
        .pointer("/spec/rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let m = &rule["match"];
        let mut blocks = vec![m.get("resources")];
        for b in ["any", "all"] {
            blocks.extend(
                m.get(b)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|f| f.get("resources")),
            );
        }
        // A rule without kinds (an invalid one) is taken to select anything.
        let mut kinds: Vec<String> = Vec::new();
        let mut any_kind = false;
        for b in blocks.into_iter().flatten() {
            match b.get("kinds").and_then(Value::as_array) {
                Some(k) => kinds.extend(k.iter().filter_map(Value::as_str).map(str::to_string)),
                None => any_kind = true,
            }
        }
        if any_kind || kinds.is_empty() {
            kinds.push("*".into());
        }
        out.extend(kinds);
    }
    out
}

/// The kinds a CEL policy's `matchConstraints.resourceRules` name (Pod controllers too
/// when it names Pods); `*` for a wildcard or a resource discovery does not know.
fn cel_kinds(cluster: &Cluster, policy: &Value) -> Vec<String> {
    let mapper = cluster.mapper();
    let mut out = Vec::new();
    let rules = policy
        .pointer("/spec/matchConstraints/resourceRules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if rules.is_empty() {
        out.push("*".to_string());
    }
    for rule in rules {
        let strings = |k: &str| -> Vec<String> {
            crate::offline::str_items(rule.get(k))
                .map(str::to_string)
                .collect()
        };
        for group in strings("apiGroups") {
            for res in strings("resources") {
                let plural = res.split('/').next().unwrap_or("");
                let found = mapper
                    .resources()
                    .iter()
                    .find(|r| (group == "*" || r.group == group) && r.plural == plural);
                match found {
                    Some(r) if !group.contains('*') && !plural.contains('*') => {
                        if r.kind == "Pod" {
                            out.extend(POD_CONTROLLERS.iter().map(|k| k.to_string()));
                        }
                        out.push(r.kind.clone());
                    }
                    _ => out.push("*".to_string()),
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offline::conformance::cluster::Answer;
    use serde_json::json;

    fn policy(labels: Value, kinds: Value) -> Value {
        json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "p", "labels": labels},
            "spec": {"rules": [{"name": "r", "match": {"any": [{"resources": {"kinds": kinds}}]},
                "validate": {"failureAction": "Audit", "pattern": {"metadata": {"labels": {"a": "?*"}}}}}]}})
    }

    #[test]
    fn a_reporting_policy_on_kinds_the_replay_does_not_hold_leaves_the_list_unknown() {
        let mut c = Cluster::new("chainsaw-kca");
        assert!(matches!(
            c.apply(&policy(json!({}), json!(["Pod"])), false),
            Answer::Ok
        ));
        assert!(listed(&c, "default").unwrap_err().contains("Pod"));
        assert!(listed(&c, "").is_err());
    }

    #[test]
    fn policies_that_do_not_report_or_select_held_kinds_only_give_the_list() {
        let mut c = Cluster::new("chainsaw-kca");
        let disabled = policy(
            json!({"reports.kyverno.io/disabled": "true"}),
            json!(["Pod"]),
        );
        assert!(matches!(c.apply(&disabled, false), Answer::Ok));
        assert_eq!(listed(&c, "default").unwrap(), Vec::<Value>::new());
        let mut c = Cluster::new("chainsaw-kca");
        assert!(matches!(
            c.apply(&policy(json!({}), json!(["Namespace", "Service"])), false),
            Answer::Ok
        ));
        // Not in `default`, where the `kubernetes` Service is not the replay's.
        assert!(listed(&c, "default").is_err());
        assert!(listed(&c, "other").is_ok());
    }
}

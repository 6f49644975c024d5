//! The parts of a Kyverno CEL policy's webhook that come from its autogen copies for Pod
//! controllers (pkg/controllers/webhook/validating.go with pkg/cel/autogen/match.go,
//! data.go): their resource rules, and on a fine-grained webhook their match conditions,
//! each guarded by the targets of its config.

use serde_json::{Value, json};

use super::webhook_rules::strings;
use super::webhooks::rule;
use crate::offline::conformance::cluster::text;
use crate::offline::vap;

/// Pod controllers' resources as the CEL autogen configs group them
/// (pkg/cel/autogen/data.go, match.go `CreateMatchConstraints`: one rule per group and
/// version of a config; CronJobs are a config of their own).
pub(super) fn autogen_rules(policy: &Value) -> Vec<Value> {
    let kinds = vap::autogen_kinds(policy);
    if kinds.is_empty() {
        return Vec::new();
    }
    let ops: Vec<&str> = policy
        .pointer("/spec/matchConstraints/resourceRules/0/operations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let apps: Vec<&str> = [
        ("DaemonSet", "daemonsets"),
        ("Deployment", "deployments"),
        ("ReplicaSet", "replicasets"),
        ("StatefulSet", "statefulsets"),
    ]
    .iter()
    .filter(|(k, _)| kinds.contains(k))
    .map(|(_, r)| *r)
    .collect();
    let mut out = Vec::new();
    if !apps.is_empty() {
        out.push(rule(&["apps"], &["v1"], &apps, &ops));
    }
    if kinds.contains(&"Job") {
        out.push(rule(&["batch"], &["v1"], &["jobs"], &ops));
    }
    if kinds.contains(&"CronJob") {
        out.push(rule(&["batch"], &["v1"], &["cronjobs"], &ops));
    }
    out
}

/// `CreateMatchConditions` (pkg/cel/autogen/match.go): each condition renamed after the
/// autogen config and made to hold only for the config's targets.
pub(super) fn guarded(config: &str, targets: &[&str], conditions: Vec<Value>) -> Vec<Value> {
    let prefix = if config.is_empty() {
        "autogen".to_string()
    } else {
        format!("autogen-{config}")
    };
    let mut targets = targets.to_vec();
    targets.sort();
    targets.dedup();
    let pre = targets.join(" || ");
    conditions
        .into_iter()
        .map(|c| {
            json!({"name": format!("{prefix}-{}", text(&c, "/name")),
                "expression": format!("!({pre}) || ({})", text(&c, "/expression"))})
        })
        .collect()
}

/// The conditions the autogen copies of a ValidatingPolicy add to its fine-grained
/// webhook, per config in order (`cronjobs`, `defaults`; validating.go); `None` when the
/// copies' conditions cannot be built.
pub(super) fn autogen_conditions(p: &Value) -> Option<Vec<Value>> {
    let kinds = vap::autogen_kinds(p);
    let target = |k: &str| {
        let group = if matches!(k, "Job" | "CronJob") {
            "batch"
        } else {
            "apps"
        };
        format!("(object.apiVersion == '{group}/v1' && object.kind =='{k}')")
    };
    let mut out = Vec::new();
    for (config, members) in [
        ("cronjobs", vec!["CronJob"]),
        (
            "defaults",
            vec![
                "DaemonSet",
                "Deployment",
                "Job",
                "ReplicaSet",
                "StatefulSet",
            ],
        ),
    ] {
        let present: Vec<&str> = members.into_iter().filter(|k| kinds.contains(k)).collect();
        let Some(first) = present.first() else {
            continue;
        };
        let copy = vap::validating_autogen_copy(p, first)?;
        let conditions = copy
            .pointer("/spec/matchConditions")
            .and_then(Value::as_array);
        let kept = conditions
            .and_then(|c| vap::offloadable(c))
            .unwrap_or_default();
        let targets: Vec<String> = present.iter().map(|k| target(k)).collect();
        let targets: Vec<&str> = targets.iter().map(String::as_str).collect();
        out.extend(guarded(config, &targets, kept));
    }
    Some(out)
}

/// Whether a CEL policy matches Pods alone (`CanAutoGen`), whatever its autogen says.
pub(super) fn pods_only(p: &Value) -> bool {
    let rules = p
        .pointer("/spec/matchConstraints/resourceRules")
        .and_then(Value::as_array);
    let is = |r: &Value, k: &str, want: &str| strings(r.get(k)).eq([want]);
    matches!(rules.map(Vec::as_slice), Some([r]) if is(r, "apiGroups", "")
        && is(r, "apiVersions", "v1") && is(r, "resources", "pods"))
}

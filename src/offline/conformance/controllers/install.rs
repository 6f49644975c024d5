//! Kyverno's own install in its namespace as a test meets it: the `kyverno` ConfigMap
//! with the chart's default data, the configuration keys the replay honours, and which of
//! the install's other objects (Deployments, Pods, the cert controller's Secrets, …) the
//! replay does not hold — reading those is a skip, never a `NotFound`.
//!
//! Modelled from Kyverno v1.19.0:
//! - charts/kyverno/templates/config/configmap.yaml, config/_helpers.tpl and values.yaml
//!   `config:` (the suite's configurations, scripts/config/*/kyverno.yaml, leave them):
//!   the ConfigMap `kyverno` in namespace `kyverno`, its labels (`kyverno.config.labels`
//!   of Chart.yaml's version 3.9.0), its annotations (`preserve`, and the release Helm
//!   records on what it installs) and its data, `resourceFilters` ([`super::filters`])
//!   and `webhooks` (`kyverno.config.webhooks`: the chart's namespace selector with the
//!   Kyverno namespace excluded, as sprig's `toJson` writes it, keys sorted) included.
//! - pkg/config/config.go (`load`, `unload`): the keys Kyverno reads, each reset to its
//!   default on every load; `generateSuccessEvents` is `strconv.ParseBool` (an invalid
//!   value leaves it off), `successEventActions` a comma-separated set. A deleted
//!   ConfigMap unloads to the defaults.
//! - pkg/background/update_request_controller.go (`reconcileURStatus`): a Completed
//!   UpdateRequest is deleted; pkg/background/common/util.go (`UpdateStatus`,
//!   `retryOrDeleteOnFailure`): a Failed one is retried and deleted after 3 retries.
//!   `Skip` (common/status.go) has no caller. The replay does each request's work at once,
//!   so none is left to list.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::super::Skip;
use super::super::cluster::text;

/// `config.KyvernoNamespace()` as the suite installs it.
pub const NAMESPACE: &str = "kyverno";
/// `kyverno.config.configMapName`: the release's full name.
pub const CONFIG_MAP: &str = "kyverno";

/// config.go's keys whose change the replay follows.
const HONOURED: &[&str] = &[
    "generateSuccessEvents",
    "successEventActions",
    "resourceFilters",
];

/// The default data the chart renders as plain strings (values.yaml `config:`); with
/// `resourceFilters` and `webhooks` ([`objects`]).
const RENDERED: &[(&str, &str)] = &[
    ("enableDefaultRegistryMutation", "true"),
    ("defaultRegistry", "docker.io"),
    ("generateSuccessEvents", "false"),
    ("excludeGroups", "system:nodes"),
    ("updateRequestThreshold", "1000"),
    (
        "webhookAnnotations",
        r#"{"admissions.enforcer/disabled":"true"}"#,
    ),
];

/// `webhooks`: values.yaml's selector (`NotIn kube-system`) with the Kyverno namespace
/// appended, `matchLabels` of the empty selector kept as null.
const WEBHOOKS: &str = r#"{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system"]},{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kyverno"]}],"matchLabels":null}}"#;

/// Kinds the install keeps in its namespace besides the ConfigMap (its controllers'
/// Deployments and their ReplicaSets and Pods, Services, accounts and roles, leases, the
/// cert controller's TLS Secrets, the Helm hooks' Jobs, events).
const INSTALL_KINDS: &[&str] = &[
    "ConfigMap",
    "Secret",
    "ServiceAccount",
    "Service",
    "Endpoints",
    "EndpointSlice",
    "Deployment",
    "ReplicaSet",
    "Pod",
    "Role",
    "RoleBinding",
    "Lease",
    "Job",
    "NetworkPolicy",
    "PodDisruptionBudget",
    "ControllerRevision",
    "Event",
];

/// The install's objects a fresh cluster holds: the `kyverno` ConfigMap.
pub fn objects() -> Vec<Value> {
    let mut data: Map<String, Value> = RENDERED
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    data.insert(
        "resourceFilters".into(),
        json!(super::filters::chart_default()),
    );
    data.insert("webhooks".into(), json!(WEBHOOKS));
    vec![json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": CONFIG_MAP,
            "namespace": NAMESPACE,
            "labels": {
                "app.kubernetes.io/component": "config",
                "app.kubernetes.io/instance": "kyverno",
                "app.kubernetes.io/managed-by": "Helm",
                "app.kubernetes.io/part-of": "kyverno",
                "app.kubernetes.io/version": "3.9.0",
                "helm.sh/chart": "kyverno-3.9.0",
            },
            "annotations": {
                "helm.sh/resource-policy": "keep",
                "meta.helm.sh/release-name": "kyverno",
                "meta.helm.sh/release-namespace": NAMESPACE,
            },
        },
        "data": data,
    })]
}

/// Whether `obj` is Kyverno's ConfigMap.
pub fn is_config_map(obj: &Value) -> bool {
    text(obj, "/kind") == "ConfigMap"
        && text(obj, "/metadata/namespace") == NAMESPACE
        && text(obj, "/metadata/name") == CONFIG_MAP
}

/// What Kyverno's configuration holds of the keys the replay honours.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// `generateSuccessEvents`.
    pub success_events: bool,
    /// `successEventActions`: when not empty, only PolicyApplied events of these actions.
    pub success_actions: BTreeSet<String>,
}

impl Settings {
    /// Whether a PolicyApplied event of `action` is emitted (pkg/event/controller.go
    /// `Add`).
    pub fn emits_success(&self, action: &str) -> bool {
        self.success_events
            && (self.success_actions.is_empty() || self.success_actions.contains(action))
    }
}

/// Go's `strconv.ParseBool`.
fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// The settings `objects` configure (config.go `load`, or `unload` without the ConfigMap).
pub fn settings(objects: &[Value]) -> Settings {
    let Some(cm) = objects.iter().find(|o| is_config_map(o)) else {
        return Settings::default();
    };
    let data = |k: &str| cm.pointer(&format!("/data/{k}")).and_then(Value::as_str);
    Settings {
        success_events: data("generateSuccessEvents")
            .and_then(parse_bool)
            .unwrap_or(false),
        success_actions: data("successEventActions")
            .map(|s| {
                s.split(',')
                    .map(str::trim)
                    .filter(|a| !a.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// Why writing `new` over `old` changes Kyverno in a way the replay does not follow: a
/// ConfigMap of Kyverno's namespace other than `kyverno`, or a key of it besides the
/// honoured ones.
pub fn unmodelled_write(new: &Value, old: Option<&Value>) -> Option<Skip> {
    if text(new, "/kind") != "ConfigMap" || text(new, "/metadata/namespace") != NAMESPACE {
        return None;
    }
    if !is_config_map(new) {
        return Some(Skip::KyvernoConfig);
    }
    let empty = Map::new();
    let data = |o: Option<&Value>| {
        o.and_then(|o| o.get("data"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_else(|| empty.clone())
    };
    let (before, after) = (data(old), data(Some(new)));
    let keys: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    keys.into_iter()
        .any(|k| before.get(k) != after.get(k) && !HONOURED.contains(&k.as_str()))
        .then_some(Skip::KyvernoConfig)
}

/// Why a read of `kind` in `namespace` (named `name`, or a list) is of Kyverno's install
/// objects the replay does not hold; `held`: the cluster holds the named object.
pub fn unheld(kind: &str, namespace: &str, name: Option<&str>, held: bool) -> Option<String> {
    if namespace != NAMESPACE || !INSTALL_KINDS.contains(&kind) {
        return None;
    }
    match name {
        Some(_) if held => None,
        Some(n) if kind == "Secret" && n.contains(".kyverno.svc") => Some(format!(
            "Secret {n}: the TLS Secrets Kyverno's cert controller makes \
             (pkg/controllers/certmanager)"
        )),
        Some(n) => Some(format!("{kind} {n} of Kyverno's own install")),
        None => Some(format!("the {kind}s of Kyverno's own install")),
    }
}

#[cfg(test)]
#[path = "install_tests.rs"]
mod tests;

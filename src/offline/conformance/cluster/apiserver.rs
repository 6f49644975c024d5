//! What the API server itself changes in an object before the webhooks see it: its
//! decoding and defaulting ([`decoded`]: a Secret's `stringData`, RBAC subjects' API
//! group, the empty lists a built-in type's encoding leaves out) and its own admission
//! plugins. Only the ServiceAccount plugin is modelled (k8s.io/kubernetes
//! plugin/pkg/admission/serviceaccount/admission.go, on by default, ahead of
//! MutatingAdmissionWebhook): a new Pod runs as `default` unless it names an account,
//! gets the account's image pull secrets when it has none, and — unless the Pod or the
//! account turns automounting off — a projected `kube-api-access-*` token volume mounted
//! read-only at the token path in every init and regular container that does not mount
//! something there already.

use serde_json::{Map, Value, json};

use super::{Cluster, Key, text};
use crate::offline::kyverno;

const TOKEN_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
const VOLUME_PREFIX: &str = "kube-api-access-";

/// The characters of apimachinery's `rand.String` (no vowels, no ambiguous digits).
const NAME_CHARS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The projected volume the plugin adds (`TokenVolumeSource`).
fn token_volume(name: &str) -> Value {
    json!({"name": name, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
    ]}})
}

impl Cluster {
    /// The ServiceAccount plugin on a Pod CREATE (`Admit`).
    pub(super) fn service_account_admission(&mut self, pod: &mut Value) {
        if text(pod, "/kind") != "Pod"
            || text(pod, "/apiVersion") != "v1"
            || pod
                .pointer("/metadata/annotations/kubernetes.io~1config.mirror")
                .is_some()
        {
            return;
        }
        let ns = text(pod, "/metadata/namespace");
        let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        let account = match spec.get("serviceAccountName").and_then(Value::as_str) {
            Some(n) if !n.is_empty() => n.to_string(),
            _ => "default".to_string(),
        };
        spec.insert("serviceAccountName".into(), json!(account));
        spec.insert("serviceAccount".into(), json!(account));
        let sa = self
            .find(&Key {
                group: String::new(),
                kind: "ServiceAccount".into(),
                namespace: ns,
                name: account,
            })
            .cloned()
            .unwrap_or(Value::Null);
        let automount = spec
            .get("automountServiceAccountToken")
            .and_then(Value::as_bool)
            .or_else(|| {
                sa.get("automountServiceAccountToken")
                    .and_then(Value::as_bool)
            })
            .unwrap_or(true);
        if automount {
            let existing = spec
                .get("volumes")
                .and_then(Value::as_array)
                .and_then(|vs| {
                    vs.iter()
                        .map(|v| text(v, "/name"))
                        .find(|n| n.starts_with(VOLUME_PREFIX))
                });
            let name = existing
                .clone()
                .unwrap_or_else(|| format!("{VOLUME_PREFIX}{}", self.random_suffix()));
            let mount = json!({"name": name, "readOnly": true, "mountPath": TOKEN_PATH});
            let mut needs_volume = false;
            for list in ["initContainers", "containers"] {
                let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
                    continue;
                };
                for c in containers.iter_mut().filter_map(Value::as_object_mut) {
                    let mounts = c.entry("volumeMounts").or_insert_with(|| json!([]));
                    let Some(mounts) = mounts.as_array_mut() else {
                        continue;
                    };
                    if !mounts.iter().any(|m| text(m, "/mountPath") == TOKEN_PATH) {
                        mounts.push(mount.clone());
                        needs_volume = true;
                    }
                }
            }
            if existing.is_none() && needs_volume {
                let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
                if let Some(v) = volumes.as_array_mut() {
                    v.push(token_volume(&name));
                }
            }
        }
        let no_pull_secrets = spec
            .get("imagePullSecrets")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        if let Some(secrets) = sa
            .get("imagePullSecrets")
            .and_then(Value::as_array)
            .filter(|s| no_pull_secrets && !s.is_empty())
        {
            let names: Vec<Value> = secrets
                .iter()
                .map(|s| json!({"name": text(s, "/name")}))
                .collect();
            spec.insert("imagePullSecrets".into(), Value::Array(names));
        }
    }

    /// Five characters for a generated name, drawn from the uid counter.
    fn random_suffix(&mut self) -> String {
        self.uid += 1;
        let mut n = self.uid.wrapping_mul(2_654_435_761);
        (0..5)
            .map(|_| {
                let c = NAME_CHARS[(n % NAME_CHARS.len() as u64) as usize] as char;
                n /= NAME_CHARS.len() as u64;
                c
            })
            .collect()
    }
}

/// What the API server's decoding and defaulting change in an object it is sent.
pub(super) fn decoded(obj: &mut Value) {
    secret_string_data(obj);
    rbac_subject_defaults(obj);
    omitted_empty_lists(obj);
    global_context_defaults(obj);
}

/// The defaults of a GlobalContextEntry's `apiCall` in its CRD's schema, which the API
/// server fills in (config/crds/kyverno/kyverno.io_globalcontextentries.yaml, every
/// version: `method: GET`, `refreshInterval: 10m`, `retryLimit: 3`).
fn global_context_defaults(obj: &mut Value) {
    if text(obj, "/kind") != "GlobalContextEntry"
        || !text(obj, "/apiVersion").starts_with("kyverno.io/")
    {
        return;
    }
    let Some(call) = obj
        .pointer_mut("/spec/apiCall")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    for (field, default) in [
        ("method", json!("GET")),
        ("refreshInterval", json!("10m")),
        ("retryLimit", json!(3)),
    ] {
        call.entry(field).or_insert(default);
    }
}

/// List fields of built-in types whose JSON tag has no `omitempty`, so an empty list is
/// kept (k8s.io/api core/v1 `PodSpec.Containers`, `ProjectedVolumeSource.Sources`,
/// `NodeSelector.NodeSelectorTerms`; rbac/v1 `Role.Rules`, `PolicyRule.Verbs`;
/// networking/v1 `HTTPIngressRuleValue.Paths`).
const LISTS_KEPT_EMPTY: &[&str] = &[
    "containers",
    "sources",
    "nodeSelectorTerms",
    "rules",
    "verbs",
    "paths",
];

/// How deep the walk goes; built-in objects are far shallower.
const MAX_DEPTH: usize = 64;

/// A built-in kind is a Go type on the API server: every write is decoded into it and
/// stored as it encodes again, and the optional list fields are `omitempty` (the API
/// conventions), so an empty list — a request's, or what a webhook's patch left after
/// removing every element — is not stored (k8s.io/apiserver pkg/endpoints/handlers
/// decodes with the scheme's codec; encoding/json drops an empty `omitempty` slice), and
/// so are empty `labels` and `annotations` maps (`ObjectMeta`). Custom resources are
/// stored as sent. A CustomResourceDefinition's schema and a ControllerRevision's data
/// hold raw JSON, so they are left as they are.
fn omitted_empty_lists(obj: &mut Value) {
    let api_version = text(obj, "/apiVersion");
    let kind = text(obj, "/kind");
    let group = crate::offline::rbac::resource::group_of(&api_version);
    let typed = crate::offline::rbac::resource::Mapper::built_in()
        .for_kind(&api_version, &kind)
        .is_some()
        && !group.ends_with("kyverno.io")
        && group != "wgpolicyk8s.io"
        && !matches!(
            kind.as_str(),
            "CustomResourceDefinition" | "ControllerRevision"
        );
    if !typed {
        return;
    }
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in ["labels", "annotations"] {
            if meta
                .get(field)
                .and_then(Value::as_object)
                .is_some_and(Map::is_empty)
            {
                meta.shift_remove(field);
            }
        }
    }
    drop_empty_lists(obj, 0);
}

fn drop_empty_lists(v: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match v {
        Value::Object(m) => {
            m.retain(|k, v| {
                !(LISTS_KEPT_EMPTY.iter().all(|f| f != k)
                    && v.as_array().is_some_and(Vec::is_empty))
            });
            for v in m.values_mut() {
                drop_empty_lists(v, depth + 1);
            }
        }
        Value::Array(items) => {
            for v in items {
                drop_empty_lists(v, depth + 1);
            }
        }
        _ => {}
    }
}

/// A binding's User and Group subjects get the RBAC API group, a ServiceAccount's none
/// (k8s.io/kubernetes pkg/apis/rbac/v1/defaults.go `SetDefaults_Subject`).
fn rbac_subject_defaults(obj: &mut Value) {
    if !matches!(
        text(obj, "/kind").as_str(),
        "RoleBinding" | "ClusterRoleBinding"
    ) || !text(obj, "/apiVersion").starts_with("rbac.authorization.k8s.io/")
    {
        return;
    }
    let Some(subjects) = obj.get_mut("subjects").and_then(Value::as_array_mut) else {
        return;
    };
    for s in subjects.iter_mut().filter_map(Value::as_object_mut) {
        if s.get("apiGroup")
            .and_then(Value::as_str)
            .is_some_and(|g| !g.is_empty())
        {
            continue;
        }
        let group = match s.get("kind").and_then(Value::as_str) {
            Some("User" | "Group") => "rbac.authorization.k8s.io",
            Some("ServiceAccount") => "",
            _ => continue,
        };
        s.insert("apiGroup".into(), json!(group));
    }
}

/// The API server folds a Secret's `stringData` into `data` (base64) and drops it.
fn secret_string_data(obj: &mut Value) {
    if text(obj, "/kind") != "Secret" || text(obj, "/apiVersion") != "v1" {
        return;
    }
    let Some(m) = obj.as_object_mut() else {
        return;
    };
    let Some(Value::Object(sd)) = m.shift_remove("stringData") else {
        return;
    };
    let data = m.entry("data").or_insert_with(|| Value::Object(Map::new()));
    if !data.is_object() {
        *data = Value::Object(Map::new());
    }
    let data = data.as_object_mut().expect("made an object above");
    for (k, v) in sd {
        if let Some(v) = v.as_str() {
            data.insert(
                k,
                json!(kyverno::jmes_functions::base64_encode(v.as_bytes())),
            );
        }
    }
}

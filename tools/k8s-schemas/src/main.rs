//! Writes the compact schema data kca's CEL type checker reads
//! (`src/offline/vap/celtype/k8s-schemas.json`): the OpenAPI schemas of the built-in
//! kinds of Kubernetes 1.35 (the `kindest/node:v1.35.1` cluster of Kyverno 1.19.0's
//! conformance runs), taken from k8s-openapi 0.29's `v1_35` module through its `schemars`
//! implementations. Only what `k8s.io/apiserver/pkg/cel/common/schemas.go` reads to make
//! CEL types is kept: type, format, items, properties, additionalProperties and the
//! `x-kubernetes-*` extensions; descriptions, defaults and required lists are dropped.
//!
//! Output shape: `{"about": text, "kinds": {"group/version/Kind": def}, "defs": {def: node}}`
//! where a node is an object with `t` (type), `f` (format), `p` (properties), `i` (items),
//! `a` (additionalProperties), `r` (a reference to another def), `ios`
//! (x-kubernetes-int-or-string), `emb` (x-kubernetes-embedded-resource), `pres`
//! (x-kubernetes-preserve-unknown-fields), `lt`/`lk`/`mt` (list type, list-map keys, map
//! type). The one correction: `Quantity` is written `{"t": "?"}` (not known): the API
//! server's OpenAPI v3 document gives it as `oneOf: [string, number]` without a type
//! (apimachinery `Quantity.OpenAPIV3OneOfTypes`), while k8s-openapi's schema says
//! int-or-string; kca's checker answers "unknown" for any expression that reaches it.
//!
//! Regenerate: `cargo run --release > ../../src/offline/vap/celtype/k8s-schemas.json`.

use std::collections::BTreeMap;

use schemars::SchemaGenerator;
use serde_json::{Map, Value, json};

macro_rules! kinds {
    ($($path:path,)*) => {
        fn roots(generator: &mut SchemaGenerator) -> Vec<(String, String)> {
            let mut out = Vec::new();
            $({
                use k8s_openapi::*;
                type T = $path;
                let schema = generator.subschema_for::<T>();
                let def = reference(schema.as_value()).expect("a kind's schema is a $ref");
                let av = <T as k8s_openapi::Resource>::API_VERSION;
                let gv = if av.contains('/') { av.to_string() } else { format!("/{av}") };
                out.push((format!("{gv}/{}", <T as k8s_openapi::Resource>::KIND), def));
            })*
            out
        }
    };
}

kinds! {
    api::admissionregistration::v1::MutatingWebhookConfiguration,
    api::admissionregistration::v1::ValidatingAdmissionPolicy,
    api::admissionregistration::v1::ValidatingAdmissionPolicyBinding,
    api::admissionregistration::v1::ValidatingWebhookConfiguration,
    api::apps::v1::ControllerRevision,
    api::apps::v1::DaemonSet,
    api::apps::v1::Deployment,
    api::apps::v1::ReplicaSet,
    api::apps::v1::StatefulSet,
    api::autoscaling::v1::HorizontalPodAutoscaler,
    api::autoscaling::v2::HorizontalPodAutoscaler,
    api::batch::v1::CronJob,
    api::batch::v1::Job,
    api::certificates::v1::CertificateSigningRequest,
    api::coordination::v1::Lease,
    api::core::v1::ComponentStatus,
    api::core::v1::ConfigMap,
    api::core::v1::Endpoints,
    api::core::v1::Event,
    api::core::v1::LimitRange,
    api::core::v1::Namespace,
    api::core::v1::Node,
    api::core::v1::PersistentVolume,
    api::core::v1::PersistentVolumeClaim,
    api::core::v1::Pod,
    api::core::v1::PodTemplate,
    api::core::v1::ReplicationController,
    api::core::v1::ResourceQuota,
    api::core::v1::Secret,
    api::core::v1::Service,
    api::core::v1::ServiceAccount,
    api::discovery::v1::EndpointSlice,
    api::events::v1::Event,
    api::flowcontrol::v1::FlowSchema,
    api::flowcontrol::v1::PriorityLevelConfiguration,
    api::networking::v1::IPAddress,
    api::networking::v1::Ingress,
    api::networking::v1::IngressClass,
    api::networking::v1::NetworkPolicy,
    api::networking::v1::ServiceCIDR,
    api::node::v1::RuntimeClass,
    api::policy::v1::PodDisruptionBudget,
    api::rbac::v1::ClusterRole,
    api::rbac::v1::ClusterRoleBinding,
    api::rbac::v1::Role,
    api::rbac::v1::RoleBinding,
    api::resource::v1::DeviceClass,
    api::resource::v1::ResourceClaim,
    api::resource::v1::ResourceClaimTemplate,
    api::resource::v1::ResourceSlice,
    api::scheduling::v1::PriorityClass,
    api::storage::v1::CSIDriver,
    api::storage::v1::CSINode,
    api::storage::v1::CSIStorageCapacity,
    api::storage::v1::StorageClass,
    api::storage::v1::VolumeAttachment,
    api::storage::v1::VolumeAttributesClass,
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    kube_aggregator::pkg::apis::apiregistration::v1::APIService,
}

const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";

fn reference(v: &Value) -> Option<String> {
    let r = v.get("$ref")?.as_str()?;
    Some(r.rsplit('/').next()?.to_string())
}

/// The compact node of one schema (see the module comment).
fn compact(v: &Value) -> Value {
    let mut out = Map::new();
    if let Some(r) = reference(v) {
        out.insert("r".into(), json!(r));
        return Value::Object(out);
    }
    let Some(m) = v.as_object() else {
        return Value::Object(out);
    };
    if let Some(t) = m.get("type") {
        let t = match t {
            Value::Array(a) => a.first().cloned().unwrap_or(Value::Null),
            t => t.clone(),
        };
        out.insert("t".into(), t);
    }
    if let Some(f) = m.get("format") {
        out.insert("f".into(), f.clone());
    }
    if let Some(p) = m.get("properties").and_then(Value::as_object) {
        let props: Map<String, Value> = p.iter().map(|(k, s)| (k.clone(), compact(s))).collect();
        out.insert("p".into(), Value::Object(props));
    }
    if let Some(i) = m.get("items").filter(|i| i.is_object()) {
        out.insert("i".into(), compact(i));
    }
    if let Some(a) = m.get("additionalProperties").filter(|a| a.is_object()) {
        out.insert("a".into(), compact(a));
    }
    for (ext, key) in [
        ("x-kubernetes-int-or-string", "ios"),
        ("x-kubernetes-embedded-resource", "emb"),
        ("x-kubernetes-preserve-unknown-fields", "pres"),
        ("x-kubernetes-list-type", "lt"),
        ("x-kubernetes-list-map-keys", "lk"),
        ("x-kubernetes-map-type", "mt"),
    ] {
        if let Some(x) = m.get(ext) {
            out.insert(key.into(), x.clone());
        }
    }
    for k in m.keys() {
        let known = [
            "type", "format", "properties", "items", "additionalProperties", "description",
            "required", "default", "enum", "x-kubernetes-int-or-string",
            "x-kubernetes-embedded-resource", "x-kubernetes-preserve-unknown-fields",
            "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
            "x-kubernetes-patch-strategy", "x-kubernetes-patch-merge-key",
            "x-kubernetes-group-version-kind", "x-kubernetes-unions",
        ];
        if !known.contains(&k.as_str()) {
            // A keyword the checker would not read: say so rather than drop it silently.
            out.insert(format!("?{k}"), json!(true));
        }
    }
    Value::Object(out)
}

fn main() {
    let mut generator = SchemaGenerator::default();
    let roots = roots(&mut generator);
    let mut defs: BTreeMap<String, Value> = generator
        .definitions()
        .iter()
        .map(|(k, v)| (k.clone(), compact(v)))
        .collect();
    defs.insert(QUANTITY.into(), json!({"t": "?"}));
    let kinds: BTreeMap<String, String> = roots.into_iter().collect();
    let about = "Built-in kinds' OpenAPI schemas of Kubernetes 1.35 for kca's CEL type checker, \
        generated by tools/k8s-schemas (k8s-openapi 0.29, feature v1_35, schemars); \
        regenerate with `cargo run --release` there.";
    let out = json!({"about": about, "kinds": kinds, "defs": defs});
    println!("{}", serde_json::to_string(&out).expect("JSON"));
}

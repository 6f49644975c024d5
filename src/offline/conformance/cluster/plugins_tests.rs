//! The API server's admission plugins, the CEL CRDs' required fields and GeneratingPolicy
//! clone synchronization, in the simulated cluster.

use super::background::tests::{key, ok};
use super::{Answer, Cluster};
use serde_json::{Value, json};

fn pod(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
        "spec": spec})
}

/// A created Pod had no token volume, so lists of volumes and mounts were shorter than
/// a live cluster's.
#[test]
fn a_new_pod_gets_the_service_account_token_volume() {
    let mut c = Cluster::new("t");
    ok(c.apply(
        &pod(
            "p",
            json!({"initContainers": [{"name": "i", "image": "busybox"}],
                "containers": [{"name": "c", "image": "nginx"}]}),
        ),
        false,
    ));
    let p = c.find(&key("Pod", "default", "p")).unwrap();
    assert_eq!(p["spec"]["serviceAccountName"], "default");
    let volumes = p["spec"]["volumes"].as_array().unwrap();
    assert_eq!(volumes.len(), 1);
    let name = volumes[0]["name"].as_str().unwrap();
    assert!(
        name.starts_with("kube-api-access-") && name.len() == 21,
        "{name}"
    );
    for list in ["initContainers", "containers"] {
        let m = &p["spec"][list][0]["volumeMounts"][0];
        assert_eq!(
            m["mountPath"],
            "/var/run/secrets/kubernetes.io/serviceaccount"
        );
        assert_eq!(m["name"], name);
    }
    ok(c.apply(
        &pod(
            "q",
            json!({"automountServiceAccountToken": false, "containers": [{"name": "c"}]}),
        ),
        false,
    ));
    let q = c.find(&key("Pod", "default", "q")).unwrap();
    assert!(q["spec"].get("volumes").is_none(), "automount off");
}

/// A bound MutatingAdmissionPolicy did not mutate; an unbound one must not.
#[test]
fn a_bound_mutating_admission_policy_mutates() {
    let mut c = Cluster::new("t");
    let map = |name: &str| {
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
            "operations": ["CREATE"], "resources": ["configmaps"]}]},
          "failurePolicy": "Fail",
          "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
            format!("Object{{metadata: Object.metadata{{labels: {{\"{name}\": \"yes\"}}}}}}")}}]}})
    };
    ok(c.apply(&map("bound"), false));
    ok(c.apply(&map("unbound"), false));
    ok(c.apply(
        &json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": "b"},
        "spec": {"policyName": "bound"}}),
        false,
    ));
    ok(c.apply(
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "default"}}),
        false,
    ));
    let cm = c.find(&key("ConfigMap", "default", "cm")).unwrap();
    assert_eq!(cm["metadata"]["labels"], json!({"bound": "yes"}));
}

/// A CEL PolicyException without `policyRefs` was accepted.
#[test]
fn a_cel_exception_without_policy_refs_is_invalid() {
    let mut c = Cluster::new("t");
    let a = c.apply(
        &json!({"apiVersion": "policies.kyverno.io/v1beta1", "kind": "PolicyException",
        "metadata": {"name": "e", "namespace": "default"}, "spec": {}}),
        false,
    );
    assert!(
        matches!(&a, Answer::Refused(m) if m.ends_with("spec.policyRefs: Required value")),
        "{a:?}"
    );
}

/// A synchronized clone stayed when its source was deleted and kept old data when the
/// source changed.
#[test]
fn a_synchronized_clone_follows_its_source() {
    let mut c = Cluster::new("t");
    let secret = |data: &str| {
        json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "src", "namespace": "default"}, "data": {"k": data}})
    };
    ok(c.apply(&secret("YQ=="), false));
    ok(c.apply(
        &json!({"apiVersion": "policies.kyverno.io/v1beta1", "kind": "GeneratingPolicy",
        "metadata": {"name": "g"},
        "spec": {"evaluation": {"synchronize": {"enabled": true}},
          "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"], "resources": ["namespaces"]}]},
          "variables": [{"name": "src", "expression": "resource.Get(\"v1\", \"secrets\", \"default\", \"src\")"}],
          "generate": [{"expression": "generator.Apply(object.metadata.name, [variables.src])"}]}}),
        false,
    ));
    ok(c.apply(
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}),
        false,
    ));
    let copy = c.find(&key("Secret", "n", "src")).cloned().unwrap();
    assert_eq!(copy["data"]["k"], "YQ==");
    assert!(copy["metadata"]["labels"]["generate.kyverno.io/source-uid"].is_string());
    ok(c.apply(&secret("Yg=="), false));
    let copy = c.find(&key("Secret", "n", "src")).cloned().unwrap();
    assert_eq!(copy["data"]["k"], "Yg==", "follows the update");
    ok(c.delete(
        &json!({"apiVersion": "v1", "kind": "Secret", "name": "src", "namespace": "default"}),
    ));
    assert!(
        c.find(&key("Secret", "n", "src")).is_none(),
        "deleted with the source"
    );
}

/// A MutatingPolicy's target rules were ignored: neither the scan at creation nor an
/// admitted trigger mutated the targets.
#[test]
fn mutating_policy_targets_are_mutated() {
    let mut c = Cluster::new("t");
    ok(c.apply(
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "before", "namespace": "default"}}),
        false,
    ));
    ok(c.apply(
        &json!({"apiVersion": "policies.kyverno.io/v1beta1", "kind": "MutatingPolicy",
        "metadata": {"name": "m"},
        "spec": {"evaluation": {"mutateExisting": {"enabled": true}},
          "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"], "resources": ["namespaces"],
            "resourceNames": ["trigger"]}]},
          "targetMatchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]},
          "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
            "Object{metadata: Object.metadata{labels: {\"done\": \"yes\"}}}"}}]}}),
        false,
    ));
    let done = |c: &Cluster, name: &str| {
        c.find(&key("ConfigMap", "default", name))
            .and_then(|o| o.pointer("/metadata/labels/done"))
            .cloned()
    };
    assert_eq!(
        done(&c, "before"),
        Some(json!("yes")),
        "scanned at creation"
    );
    ok(c.apply(
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "after", "namespace": "default"}}),
        false,
    ));
    assert_eq!(done(&c, "after"), None, "a target is not a trigger");
    ok(c.apply(
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "trigger"}}),
        false,
    ));
    assert_eq!(
        done(&c, "after"),
        Some(json!("yes")),
        "mutated for the trigger"
    );
}

/// A webhook's patch that removed every `env` entry left `env: []` stored, where the API
/// server's encoding of a Pod leaves the empty list out; a custom resource keeps it.
#[test]
fn an_empty_list_of_a_built_in_type_is_not_stored() {
    let mut c = Cluster::new("t");
    ok(c.apply(
        &json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default", "labels": {}},
            "spec": {"containers": [{"name": "c", "image": "nginx", "env": [], "args": []}]}}),
        false,
    ));
    let p = c.find(&key("Pod", "default", "p")).unwrap();
    let container = p["spec"]["containers"][0].as_object().unwrap();
    assert!(
        !container.contains_key("env") && !container.contains_key("args"),
        "{p}"
    );
    assert!(p["metadata"].get("labels").is_none(), "{p}");
    ok(c.apply(
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "r", "namespace": "default"}, "rules": []}),
        false,
    ));
    let role = c
        .find(&super::Key {
            group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            namespace: "default".into(),
            name: "r".into(),
        })
        .unwrap();
    assert_eq!(role["rules"], json!([]));
}

/// A GlobalContextEntry's `apiCall` was stored without its schema's defaults.
#[test]
fn a_global_context_entry_gets_its_schema_defaults() {
    let mut c = Cluster::new("t");
    let _ = c.apply(
        &json!({"apiVersion": "kyverno.io/v2alpha1", "kind": "GlobalContextEntry",
            "metadata": {"name": "g"},
            "spec": {"apiCall": {"urlPath": "/api/v1/namespaces", "refreshInterval": "1h"}}}),
        false,
    );
    let g = c
        .find(&super::Key {
            group: "kyverno.io".into(),
            kind: "GlobalContextEntry".into(),
            namespace: String::new(),
            name: "g".into(),
        })
        .unwrap();
    assert_eq!(
        g["spec"]["apiCall"],
        json!({"urlPath": "/api/v1/namespaces", "refreshInterval": "1h", "method": "GET", "retryLimit": 3})
    );
}

//! GlobalContextEntries in the simulated cluster: refused as the CRD schema and Kyverno's
//! webhook refuse them, and served to CEL policies and `globalReference` entries.

use super::background::tests::{key, ok};
use super::{Answer, Cluster};
use serde_json::{Value, json};

fn gce(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "kyverno.io/v2alpha1", "kind": "GlobalContextEntry",
        "metadata": {"name": name}, "spec": spec})
}

fn refused(a: Answer) -> String {
    match a {
        Answer::Refused(m) => m,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn entries_are_refused_as_the_schema_and_the_webhook_refuse_them() {
    let mut c = Cluster::new("t");
    let call = json!({"urlPath": "/api/v1/configmaps", "refreshInterval": "1h"});
    let resource = json!({"group": "apps", "version": "v1", "resource": "deployments"});
    let both = refused(c.apply(
        &gce(
            "two",
            json!({"apiCall": call, "kubernetesResource": resource}),
        ),
        false,
    ));
    assert_eq!(
        both,
        "GlobalContextEntry.kyverno.io \"two\" is invalid: <nil>: Invalid value: \"\": \"spec\" must validate one and only one schema (oneOf). Found 2 valid alternatives"
    );
    let none = refused(c.apply(&gce("none", json!({})), false));
    assert!(
        none.ends_with("Found none valid, spec.kubernetesResource: Required value]"),
        "{none}"
    );
    let with_data = json!({"urlPath": "/api/v1/configmaps", "data": [{"key": "a", "value": 1}]});
    let m = refused(c.apply(&gce("d", json!({"apiCall": with_data})), false));
    assert!(
        m.contains("An External API call with data should have method as POST"),
        "{m}"
    );
    let projection = json!({"projections": [{"name": "p", "jmesPath": ""}], "apiCall": call});
    let m = refused(c.apply(&gce("p", projection), false));
    assert!(
        m.contains("spec.projections[0].jmesPath: Required value"),
        "{m}"
    );
    ok(c.apply(&gce("fine", json!({"apiCall": call})), false));
    // An answered apiCall entry records its refresh.
    let mut k = key("GlobalContextEntry", "", "fine");
    k.group = "kyverno.io".into();
    let stored = c.find(&k).unwrap();
    assert!(
        stored.pointer("/status/lastRefreshTime").is_some(),
        "{stored}"
    );
}

/// A ValidatingPolicy reads a `kubernetesResource` entry (the objects as listed) and a
/// projection of an `apiCall` entry; a ClusterPolicy's `globalReference` the same store.
#[test]
fn policies_read_the_entries_of_the_cluster() {
    let mut c = Cluster::new("t");
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "t", "labels": {"app": "x"}}});
    ok(c.apply(&cm, false));
    ok(c.apply(&gce("cms", json!({"kubernetesResource": {"version": "v1", "resource": "configmaps", "namespace": "t"}})), false));
    ok(c.apply(&gce("labels", json!({"apiCall": {"urlPath": "/api/v1/namespaces/t/configmaps", "refreshInterval": "1h"},
        "projections": [{"name": "apps", "jmesPath": "items[].metadata.labels.app"}]})), false));
    let vpol = json!({"apiVersion": "policies.kyverno.io/v1beta1", "kind": "ValidatingPolicy",
        "metadata": {"name": "vp"},
        "spec": {"validationActions": ["Deny"],
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["pods"]}]},
            "validations": [{"expression":
                "size(globalContext.get('cms', '')) == 1 && globalContext.get('labels', 'apps') == ['x'] && globalContext.get('missing', '') == null",
                "message": "not served"}]}});
    ok(c.apply(&vpol, false));
    let pod = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "t"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    };
    ok(c.apply(&pod("p"), false));
    let cpol = json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "cp"},
        "spec": {"rules": [{"name": "r",
            "context": [{"name": "n", "globalReference": {"name": "cms", "jmesPath": "length(@)"}}],
            "match": {"any": [{"resources": {"kinds": ["ConfigMap"]}}]},
            "validate": {"failureAction": "Enforce", "deny": {"conditions": {"any": [
                {"key": "{{ n }}", "operator": "Equals", "value": 1}]}}}}]}});
    ok(c.apply(&cpol, false));
    let m = refused(c.apply(
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "other", "namespace": "t"}}),
        false,
    ));
    assert!(m.contains("cp"), "{m}");
}

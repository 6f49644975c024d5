//! The match conditions Kyverno puts on its webhooks, evaluated by the simulated API
//! server before Kyverno sees the request.

use super::background::tests::ok;
use super::{Answer, Cluster};
use serde_json::{Value, json};

fn vpol(failure_policy: Option<&str>, condition: &str) -> Value {
    let mut p = json!({"apiVersion": "policies.kyverno.io/v1beta1", "kind": "ValidatingPolicy",
        "metadata": {"name": "v"},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["apps"],
            "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
            "resources": ["deployments"]}]},
            "variables": [{"name": "one", "expression": "1"}],
            "matchConditions": [{"name": "c", "expression": condition}],
            "validations": [{"expression": "false", "message": "never"}]}});
    if let Some(f) = failure_policy {
        p["spec"]["failurePolicy"] = json!(f);
    }
    p
}

fn deployment(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

fn refused(a: Answer) -> String {
    match a {
        Answer::Refused(m) => m,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_failing_webhook_condition_is_the_api_servers_refusal_under_fail() {
    for failure_policy in [None, Some("Fail")] {
        let mut c = Cluster::new("t");
        ok(c.apply(&vpol(failure_policy, "2 / 0 == 1"), false));
        assert_eq!(
            refused(c.apply(&deployment("web"), false)),
            "deployments.apps \"web\" is forbidden: expression '2 / 0 == 1' resulted in error: division by zero"
        );
    }
}

#[test]
fn under_ignore_or_when_false_the_webhook_is_skipped() {
    for (failure_policy, condition) in [(Some("Ignore"), "2 / 0 == 1"), (None, "1 == 2")] {
        let mut c = Cluster::new("t");
        ok(c.apply(&vpol(failure_policy, condition), false));
        ok(c.apply(&deployment("web"), false));
    }
}

#[test]
fn conditions_the_api_server_cannot_compile_stay_with_kyverno() {
    let mut c = Cluster::new("t");
    // `namespaceObject` is null for webhook conditions: Kyverno keeps them (match_conditions.go).
    ok(c.apply(
        &vpol(
            None,
            "namespaceObject.metadata.name == 'default' && 2 / 0 == 1",
        ),
        false,
    ));
    let m = refused(c.apply(&deployment("web"), false));
    assert!(
        m.starts_with("admission webhook \"vpol.validate.kyverno.svc-fail\""),
        "{m}"
    );
}

fn cpol(condition: &str, failure_policy: &str) -> Value {
    json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "deny"},
        "spec": {"validationFailureAction": "Enforce", "failurePolicy": failure_policy,
            "webhookConfiguration": {"matchConditions": [{"name": "c", "expression": condition}]},
            "rules": [{"name": "r", "match": {"any": [{"resources": {"kinds": ["ConfigMap"]}}]},
                "validate": {"message": "no", "deny": {}}}]}})
}

fn config_map() -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"}})
}

#[test]
fn a_cluster_policys_own_webhook_conditions_filter_its_requests() {
    let mut c = Cluster::new("t");
    ok(c.apply(&cpol("object.metadata.name == 'other'", "Fail"), false));
    ok(c.apply(&config_map(), false));

    let mut c = Cluster::new("t");
    ok(c.apply(&cpol("object.metadata.name == 'cm'", "Fail"), false));
    let m = refused(c.apply(&config_map(), false));
    assert!(
        m.contains("was blocked due to the following policies"),
        "{m}"
    );

    let mut c = Cluster::new("t");
    ok(c.apply(&cpol("object.spec.x == 1", "Fail"), false));
    assert_eq!(
        refused(c.apply(&config_map(), false)),
        "configmaps \"cm\" is forbidden: expression 'object.spec.x == 1' resulted in error: no such key: spec"
    );
    // Requests of kinds its rules do not match never reach its webhook.
    ok(c.apply(&deployment("web"), false));

    let mut c = Cluster::new("t");
    ok(c.apply(&cpol("object.spec.x == 1", "Ignore"), false));
    ok(c.apply(&config_map(), false));
}

/// Kyverno's refusal reads as a live one: the rule's message in its words, the failures
/// written by yaml.v3 and folded at 80 columns (pkg/webhooks/utils/block.go).
#[test]
fn a_blocked_request_is_worded_and_folded_as_kyvernos() {
    let mut c = Cluster::new("default");
    let policy = json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
        "metadata": {"name": "require-ns-owner-label"},
        "spec": {"validationFailureAction": "Enforce", "rules": [{
            "name": "check-for-namespace-owner-label",
            "match": {"any": [{"resources": {"kinds": ["Namespace"]}}]},
            "validate": {"message": "The label `uw.systems/owner` is required. Check policy at https://example.com/a/very/long/path/that/does/not/break/require-ns-owner-label.yaml for allowed label values.",
                "pattern": {"metadata": {"labels": {"uw.systems/owner": "?*"}}}}}]}});
    ok(c.apply(&policy, false));
    let ns = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "asdfhl", "labels": {"a": "b"}}});
    assert_eq!(
        refused(c.apply(&ns, false)),
        "admission webhook \"validate.kyverno.svc-fail\" denied the request: \n\nresource Namespace//asdfhl was blocked due to the following policies \n\nrequire-ns-owner-label:\n  check-for-namespace-owner-label: 'validation error: The label `uw.systems/owner`\n    is required. Check policy at https://example.com/a/very/long/path/that/does/not/break/require-ns-owner-label.yaml\n    for allowed label values. rule check-for-namespace-owner-label failed at path\n    /metadata/labels/uw.systems/owner/'\n"
    );
    assert_eq!(c.unworded, None);
}

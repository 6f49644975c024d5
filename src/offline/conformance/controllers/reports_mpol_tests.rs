use serde_json::{Value, json};

use super::super::reports::{candidates, policy_reports};
use crate::offline::conformance::Skip;
use crate::offline::conformance::assert::{Judged, judge};
use crate::offline::conformance::cluster::{Answer, Cluster, text};

fn ok(a: Answer) {
    assert!(matches!(a, Answer::Ok), "{a:?}");
}

fn configmap(ns: &str, name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns}, "data": {"key1": "value1"}})
}

fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

/// Adds `foo: bar` to the ConfigMaps of namespace `team`.
fn mpol(evaluation: Value) -> Value {
    json!({"apiVersion": "policies.kyverno.io/v1beta1", "kind": "MutatingPolicy",
        "metadata": {"name": "add-foo"},
        "spec": {"evaluation": evaluation,
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["configmaps"]}]},
            "matchConditions": [{"name": "team", "expression": "object.metadata.namespace == 'team'"}],
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
                "Object{metadata: Object.metadata{labels: Object.metadata.labels{foo: \"bar\"}}}"}}],
            "auditAnnotations": [{"key": "resource-name",
                "valueExpression": "'cm/' + string(object.metadata.name)"}]}})
}

fn result_for(c: &Cluster, ns: &str, name: &str, source: &str) -> Option<Value> {
    policy_reports(c)
        .unwrap()
        .into_iter()
        .map(|b| b.report)
        .find(|r| text(r, "/scope/name") == name && text(r, "/scope/namespace") == ns)
        .and_then(|r| {
            r["results"]
                .as_array()
                .and_then(|rs| rs.iter().find(|x| text(x, "/source") == source).cloned())
        })
}

#[test]
fn the_background_scan_writes_a_mutating_policys_pass_fail_and_skip() {
    let mut c = Cluster::new("t");
    ok(c.apply(&namespace("team"), false));
    ok(c.apply(&namespace("other"), false));
    ok(c.apply(&configmap("team", "before"), false));
    ok(c.apply(&mpol(json!({})), false));
    ok(c.apply(&configmap("team", "after"), false));
    ok(c.apply(&configmap("other", "elsewhere"), false));
    let src = "KyvernoMutatingPolicy";
    // Mutated at admission: the scan's mutation changes nothing.
    let after = result_for(&c, "team", "after", src).expect("a result for the mutated one");
    assert_eq!(text(&after, "/result"), "pass");
    assert_eq!(text(&after, "/message"), "success");
    assert_eq!(text(&after, "/policy"), "add-foo");
    assert!(after.get("rule").is_none(), "{after}");
    assert_eq!(text(&after, "/properties/resource-name"), "cm/after");
    assert_eq!(text(&after, "/properties/process"), "background scan");
    // Made before the policy: the scan would still mutate it.
    let before = result_for(&c, "team", "before", src).expect("a result for the old one");
    assert_eq!(text(&before, "/result"), "fail");
    assert_eq!(text(&before, "/message"), "mutation is not applied");
    assert!(before.pointer("/properties/resource-name").is_none());
    // Match conditions unmet: a skip (not filtered, unlike a ValidatingPolicy's).
    let other = result_for(&c, "other", "elsewhere", src).expect("a skip result");
    assert_eq!(text(&other, "/result"), "skip");
    assert_eq!(text(&other, "/message"), "skip");
}

#[test]
fn a_whole_exception_makes_a_mutating_policys_result_the_exceptions() {
    let mut c = Cluster::new("t");
    ok(c.apply(&namespace("team"), false));
    ok(c.apply(
        &json!({"apiVersion": "policies.kyverno.io/v1alpha1", "kind": "PolicyException",
            "metadata": {"name": "spare", "namespace": "team"},
            "spec": {"policyRefs": [{"name": "add-foo", "kind": "MutatingPolicy"}],
                "matchConditions": [{"name": "n", "expression": "object.metadata.name == 'spared'"}]}}),
        false,
    ));
    ok(c.apply(&mpol(json!({})), false));
    ok(c.apply(&configmap("team", "spared"), false));
    let r = result_for(&c, "team", "spared", "KyvernoMutatingPolicy").unwrap();
    assert_eq!(text(&r, "/result"), "skip");
    assert_eq!(text(&r, "/rule"), "exception");
    assert_eq!(text(&r, "/properties/exceptions"), "spare");
    assert_eq!(
        text(&r, "/message"),
        "rule is skipped due to policy exception: team/spare"
    );
}

#[test]
fn a_wrong_expectation_on_a_mutating_policys_report_does_not_match() {
    let mut c = Cluster::new("t");
    ok(c.apply(&namespace("team"), false));
    ok(c.apply(&mpol(json!({})), false));
    ok(c.apply(&configmap("team", "after"), false));
    let expected = |result: &str, annotation: &str| {
        json!({"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
            "metadata": {"namespace": "team", "ownerReferences": [{"name": "after"}]},
            "results": [{"policy": "add-foo", "result": result, "source": "KyvernoMutatingPolicy",
                "message": "success",
                "properties": {"resource-name": annotation, "process": "background scan"}}],
            "summary": {"pass": 1}})
    };
    let judged = |e: &Value| {
        let found = candidates(&c, e, true).unwrap();
        assert_eq!(found.len(), 1);
        judge(e, &found[0], &Default::default())
    };
    assert_eq!(judged(&expected("pass", "cm/after")), Judged::Match);
    for wrong in [expected("fail", "cm/after"), expected("pass", "cm/other")] {
        assert!(matches!(judged(&wrong), Judged::Mismatch(_)), "{wrong}");
    }
}

#[test]
fn mutating_policies_the_model_cannot_report_are_typed_skips() {
    for (evaluation, why) in [
        (
            json!({"background": {"enabled": false}}),
            "without background scan",
        ),
        (
            json!({"mutateExisting": {"enabled": true}}),
            "mutate-existing",
        ),
    ] {
        let mut c = Cluster::new("t");
        ok(c.apply(&mpol(evaluation), false));
        let err = policy_reports(&c).unwrap_err();
        assert!(err.contains(why), "{err}");
    }
    // An UPDATE-only policy's admission results are not redone by the scan.
    let mut c = Cluster::new("t");
    ok(c.apply(&namespace("team"), false));
    let mut p = mpol(json!({}));
    p["spec"]["matchConstraints"]["resourceRules"][0]["operations"] = json!(["UPDATE"]);
    ok(c.apply(&p, false));
    ok(c.apply(&configmap("team", "cm"), false));
    let built = policy_reports(&c).unwrap();
    let cm = built
        .iter()
        .find(|b| text(&b.report, "/scope/name") == "cm")
        .expect("a report");
    assert!(matches!(&cm.unmodelled, Some(Skip::Reports(why)) if why.contains("does not redo")));
}

fn map(labelled: bool) -> Value {
    let mut p = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicy", "metadata": {"name": "add-mark"},
        "spec": {"failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["configmaps"]}]},
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
                "Object{metadata: Object.metadata{labels: {\"mark\": \"yes\"}}}"}}]}});
    if labelled {
        p["metadata"]["labels"] = json!({"reports.kyverno.io/enabled": "true"});
    }
    p
}

fn map_binding() -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": "add-mark-binding"},
        "spec": {"policyName": "add-mark"}})
}

#[test]
fn a_labelled_mutating_admission_policy_reports_its_binding_and_result() {
    let mut c = Cluster::new("t");
    ok(c.apply(&configmap("default", "before"), false));
    ok(c.apply(&map(true), false));
    ok(c.apply(&map_binding(), false));
    ok(c.apply(&configmap("default", "after"), false));
    let src = "MutatingAdmissionPolicy";
    let after = result_for(&c, "default", "after", src).expect("a result");
    assert_eq!(text(&after, "/result"), "pass");
    assert_eq!(text(&after, "/message"), "mutation is successfully applied");
    assert_eq!(text(&after, "/policy"), "add-mark");
    assert_eq!(text(&after, "/rule"), "add-mark");
    assert_eq!(text(&after, "/properties/mapBinding"), "add-mark-binding");
    assert_eq!(text(&after, "/properties/process"), "background scan");
    let before = result_for(&c, "default", "before", src).expect("a result");
    assert_eq!(text(&before, "/result"), "fail");
    assert_eq!(text(&before, "/message"), "mutation is not applied");
    // Without the label, no report at all.
    let mut c = Cluster::new("t");
    ok(c.apply(&map(false), false));
    ok(c.apply(&map_binding(), false));
    ok(c.apply(&configmap("default", "after"), false));
    assert!(result_for(&c, "default", "after", src).is_none());
}

use serde_json::{Value, json};

use super::super::reports::{candidates, policy_reports};
use crate::offline::conformance::assert::{Judged, judge};
use crate::offline::conformance::cluster::{Answer, Cluster, Key, text};

fn ok(a: Answer) {
    assert!(matches!(a, Answer::Ok), "{a:?}");
}

/// Generates a ConfigMap `cm` in each new Namespace but `skipped`.
fn gpol() -> Value {
    json!({"apiVersion": "policies.kyverno.io/v1beta1", "kind": "GeneratingPolicy",
        "metadata": {"name": "make-cm"},
        "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["namespaces"]}]},
            "matchConditions": [{"name": "not-skipped", "expression": "object.metadata.name != 'skipped'"}],
            "variables": [{"name": "ns", "expression": "object.metadata.name"}],
            "generate": [{"expression": "generator.Apply(variables.ns, [{\"apiVersion\": dyn(\"v1\"), \"kind\": dyn(\"ConfigMap\"), \"metadata\": dyn({\"name\": \"cm\"}), \"data\": dyn({\"k\": \"v\"})}])"}],
            "auditAnnotations": [{"key": "env", "valueExpression":
                "has(object.metadata.labels) && 'env' in object.metadata.labels ? object.metadata.labels['env'] : 'unknown'"}]}})
}

fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "labels": {"env": "staging"}}})
}

fn report_for(c: &Cluster, name: &str) -> Option<Value> {
    policy_reports(c)
        .unwrap()
        .into_iter()
        .map(|b| b.report)
        .find(|r| text(r, "/scope/name") == name)
}

#[test]
fn a_generating_policy_reports_what_it_generated_for_its_trigger() {
    let mut c = Cluster::new("t");
    ok(c.apply(&gpol(), false));
    ok(c.apply(&namespace("made"), false));
    ok(c.apply(&namespace("skipped"), false));
    let report = report_for(&c, "made").expect("a report for the trigger");
    assert_eq!(text(&report, "/kind"), "ClusterPolicyReport");
    let r = &report["results"][0];
    assert_eq!(text(r, "/source"), "KyvernoGeneratingPolicy");
    assert_eq!(text(r, "/policy"), "make-cm");
    assert_eq!(text(r, "/rule"), "make-cm");
    assert_eq!(text(r, "/result"), "pass");
    assert_eq!(text(r, "/message"), "policy evaluated successfully");
    assert_eq!(
        text(r, "/properties/generated-resources"),
        "/v1, Kind=ConfigMap Name=cm Namespace=made"
    );
    assert_eq!(text(r, "/properties/env"), "staging");
    assert_eq!(text(r, "/properties/process"), "admission review");
    // Match conditions unmet: no result, so no report.
    assert!(report_for(&c, "skipped").is_none());
    // The policy gone, its results go with it.
    ok(
        c.delete(&json!({"apiVersion": "policies.kyverno.io/v1beta1",
        "kind": "GeneratingPolicy", "name": "make-cm"})),
    );
    assert!(report_for(&c, "made").is_none());
}

#[test]
fn an_exception_makes_a_generating_policys_result_its_report_result() {
    let mut c = Cluster::new("t");
    for (name, result) in [("spared-pass", "pass"), ("spared-skip", "skip")] {
        ok(c.apply(
            &json!({"apiVersion": "policies.kyverno.io/v1alpha1", "kind": "PolicyException",
                "metadata": {"name": name},
                "spec": {"policyRefs": [{"name": "make-cm", "kind": "GeneratingPolicy"}],
                    "reportResult": result,
                    "matchConditions": [{"name": "n",
                        "expression": format!("object.metadata.name == '{name}'")}]}}),
            false,
        ));
    }
    ok(c.apply(&gpol(), false));
    for (name, result) in [("spared-pass", "pass"), ("spared-skip", "skip")] {
        ok(c.apply(&namespace(name), false));
        let report = report_for(&c, name).expect("a report");
        let r = &report["results"][0];
        assert_eq!(text(r, "/result"), result);
        assert_eq!(text(r, "/rule"), "exception");
        assert_eq!(text(r, "/properties/exceptions"), name);
        assert!(r.pointer("/properties/generated-resources").is_none());
        let cm = Key {
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: name.into(),
            name: "cm".into(),
        };
        assert!(c.find(&cm).is_none(), "nothing generated for {name}");
    }
}

#[test]
fn a_wrong_expectation_on_a_generating_policys_report_does_not_match() {
    let mut c = Cluster::new("t");
    ok(c.apply(&gpol(), false));
    ok(c.apply(&namespace("made"), false));
    let expected = |generated: &str, process: &str| {
        json!({"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "ClusterPolicyReport",
            "metadata": {"ownerReferences": [{"name": "made"}]},
            "results": [{"policy": "make-cm", "result": "pass", "source": "KyvernoGeneratingPolicy",
                "message": "policy evaluated successfully",
                "properties": {"generated-resources": generated, "process": process}}]})
    };
    let judged = |e: &Value| {
        let found = candidates(&c, e, true).unwrap();
        assert_eq!(found.len(), 1);
        judge(e, &found[0], &Default::default())
    };
    let right = "/v1, Kind=ConfigMap Name=cm Namespace=made";
    assert_eq!(judged(&expected(right, "admission review")), Judged::Match);
    for wrong in [
        expected(right, "background scan"),
        expected(
            "/v1, Kind=ConfigMap Name=other Namespace=made",
            "admission review",
        ),
    ] {
        assert!(matches!(judged(&wrong), Judged::Mismatch(_)), "{wrong}");
    }
}

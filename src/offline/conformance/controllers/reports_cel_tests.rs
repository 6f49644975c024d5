use serde_json::{Value, json};

use super::super::reports::policy_reports;
use crate::offline::conformance::cluster::{Answer, Cluster, text};

fn vpol(evaluation: Value, validations: Value) -> Value {
    json!({"apiVersion": "policies.kyverno.io/v1beta1", "kind": "ValidatingPolicy",
        "metadata": {"name": "owner", "annotations": {"policies.kyverno.io/severity": "high"}},
        "spec": {"validationActions": ["Audit"], "evaluation": evaluation,
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["namespaces"]}]},
            "validations": validations}})
}

fn checks() -> Value {
    json!([
        {"expression": "has(object.metadata.labels)", "message": "labels required"},
        {"expression": "'owner' in object.metadata.labels",
            "messageExpression": "'owner missing on ' + object.metadata.name"}
    ])
}

fn namespace(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "labels": labels}})
}

fn ok(a: Answer) {
    assert!(matches!(a, Answer::Ok), "{a:?}");
}

fn result_for(c: &Cluster, name: &str) -> Option<Value> {
    policy_reports(c)
        .unwrap()
        .into_iter()
        .map(|b| b.report)
        .find(|r| text(r, "/scope/name") == name)
        .map(|r| r["results"][0].clone())
}

#[test]
fn the_background_scan_writes_a_validating_policys_first_failure_and_its_passes() {
    let mut c = Cluster::new("t");
    ok(c.apply(&namespace("bad", json!({"team": "a"})), false));
    ok(c.apply(&vpol(json!({}), checks()), false));
    ok(c.apply(&namespace("good", json!({"owner": "me"})), false));
    let bad = result_for(&c, "bad").expect("a report for the namespace made before");
    assert_eq!(text(&bad, "/source"), "KyvernoValidatingPolicy");
    assert_eq!(text(&bad, "/policy"), "owner");
    assert!(bad.get("rule").is_none(), "{bad}");
    assert_eq!(text(&bad, "/result"), "fail");
    assert_eq!(text(&bad, "/message"), "owner missing on bad");
    assert_eq!(text(&bad, "/properties/cel.validationIndex"), "1");
    assert_eq!(text(&bad, "/properties/process"), "background scan");
    assert_eq!(text(&bad, "/severity"), "high");
    let good = result_for(&c, "good").expect("a report for the namespace made after");
    assert_eq!(text(&good, "/result"), "pass");
    assert_eq!(text(&good, "/message"), "success");
}

#[test]
fn a_whole_exception_makes_the_result_its_report_result_with_its_name() {
    let mut c = Cluster::new("t");
    ok(c.apply(&vpol(json!({}), checks()), false));
    for (name, result) in [("let-pass", "pass"), ("let-skip", "")] {
        let mut e = json!({"apiVersion": "policies.kyverno.io/v1alpha1", "kind": "PolicyException",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"policyRefs": [{"name": "owner", "kind": "ValidatingPolicy"}],
                "matchConditions": [{"name": "n",
                    "expression": format!("object.metadata.name == '{name}-ns'")}]}});
        if !result.is_empty() {
            e["spec"]["reportResult"] = json!(result);
        }
        ok(c.apply(&e, false));
        ok(c.apply(&namespace(&format!("{name}-ns"), json!({})), false));
    }
    let passed = result_for(&c, "let-pass-ns").unwrap();
    assert_eq!(text(&passed, "/result"), "pass");
    assert_eq!(text(&passed, "/rule"), "exception");
    assert_eq!(text(&passed, "/properties/exceptions"), "let-pass");
    assert_eq!(
        text(&passed, "/message"),
        "rule is passed due to policy exception: default/let-pass"
    );
    assert_eq!(
        text(&result_for(&c, "let-skip-ns").unwrap(), "/result"),
        "skip"
    );
}

#[test]
fn unmatched_or_unscanned_policies_make_no_result_and_admission_only_ones_are_skipped() {
    let mut c = Cluster::new("t");
    // Match conditions that do not hold: no result (`filterMatchConditionSkips`).
    let mut p = vpol(json!({}), checks());
    p["spec"]["matchConditions"] = json!([{"name": "never", "expression": "false"}]);
    ok(c.apply(&p, false));
    ok(c.apply(&namespace("x", json!({})), false));
    assert!(result_for(&c, "x").is_none());
    // Background off, admission on: the admission reports are not modelled.
    let mut c = Cluster::new("t");
    ok(c.apply(
        &vpol(json!({"background": {"enabled": false}}), checks()),
        false,
    ));
    let why = policy_reports(&c).unwrap_err();
    assert!(why.contains("without background scan"), "{why}");
    // Neither: no report at all.
    let mut c = Cluster::new("t");
    ok(c.apply(
        &vpol(
            json!({"background": {"enabled": false}, "admission": {"enabled": false}}),
            checks(),
        ),
        false,
    ));
    ok(c.apply(&namespace("y", json!({})), false));
    assert!(result_for(&c, "y").is_none());
}

#[test]
fn an_assertion_on_a_reports_generation_is_a_typed_skip() {
    let mut c = Cluster::new("t");
    ok(c.apply(&vpol(json!({}), checks()), false));
    ok(c.apply(&namespace("x", json!({})), false));
    let expected = json!({"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "ClusterPolicyReport",
        "metadata": {"generation": 1}});
    let why = super::super::reports::candidates(&c, &expected, true).unwrap_err();
    assert!(why.to_string().contains("generation"), "{why}");
}

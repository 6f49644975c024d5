use serde_json::{Value, json};

use super::*;
use crate::offline::conformance::cluster::{Answer, Cluster};

fn labels_policy(background: bool, action: &str) -> Value {
    json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
        "metadata": {"name": "require-owner",
            "annotations": {"policies.kyverno.io/category": "Best Practices",
                "policies.kyverno.io/severity": "medium"}},
        "spec": {"background": background, "rules": [{"name": "check-owner",
            "match": {"any": [{"resources": {"kinds": ["Namespace"]}}]},
            "validate": {"failureAction": action, "message": "owner label required",
                "pattern": {"metadata": {"labels": {"owner": "?*"}}}}}]}})
}

fn namespace(name: &str, owner: Option<&str>) -> Value {
    let mut ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    if let Some(o) = owner {
        ns["metadata"]["labels"] = json!({"owner": o});
    }
    ns
}

fn ok(a: Answer) {
    assert!(matches!(a, Answer::Ok), "{a:?}");
}

fn report_for<'a>(reports: &'a [Built], name: &str) -> Option<&'a Value> {
    reports
        .iter()
        .map(|b| &b.report)
        .find(|r| text(r, "/scope/name") == name)
}

#[test]
fn admission_results_of_an_admission_only_policy_make_a_cluster_report() {
    let mut c = Cluster::new("t");
    ok(c.apply(&labels_policy(false, "Audit"), false));
    ok(c.apply(&namespace("bar", Some("david")), false));
    ok(c.apply(&namespace("baz", None), false));
    let reports = policy_reports(&c).unwrap();
    let bar = report_for(&reports, "bar").expect("a report for bar");
    assert_eq!(text(bar, "/kind"), "ClusterPolicyReport");
    assert_eq!(text(bar, "/metadata/ownerReferences/0/kind"), "Namespace");
    assert_eq!(
        text(bar, "/metadata/labels/app.kubernetes.io~1managed-by"),
        "kyverno"
    );
    let r = &bar["results"][0];
    assert_eq!(text(r, "/result"), "pass");
    assert_eq!(text(r, "/message"), "validation rule 'check-owner' passed.");
    assert_eq!(text(r, "/properties/process"), "admission review");
    assert_eq!(text(r, "/category"), "Best Practices");
    assert_eq!(text(r, "/severity"), "medium");
    assert_eq!(bar["summary"]["pass"], json!(1));
    let baz = report_for(&reports, "baz").expect("a report for baz");
    assert_eq!(text(&baz["results"][0], "/result"), "fail");
    assert_eq!(baz["summary"]["fail"], json!(1));
    // Namespaces that existed before the policy were never admitted under it, and it
    // does not scan in the background.
    assert!(report_for(&reports, "default").is_none());
}

#[test]
fn the_background_scan_reports_resources_that_existed_before_the_policy() {
    let mut c = Cluster::new("t");
    ok(c.apply(&namespace("early", None), false));
    ok(c.apply(&labels_policy(true, "Enforce"), false));
    let reports = policy_reports(&c).unwrap();
    let early = report_for(&reports, "early").expect("scanned");
    assert_eq!(text(&early["results"][0], "/result"), "fail");
    assert_eq!(
        text(&early["results"][0], "/properties/process"),
        "background scan"
    );
    // Enforce refuses a bad namespace: no object, no report.
    assert!(matches!(
        c.apply(&namespace("late", None), false),
        Answer::Refused(_)
    ));
    let reports = policy_reports(&c).unwrap();
    assert!(report_for(&reports, "late").is_none());
    // The policy gone, its results go with it.
    ok(c.delete(&labels_policy(true, "Enforce")));
    assert!(report_for(&policy_reports(&c).unwrap(), "early").is_none());
}

#[test]
fn reports_of_unmodelled_sources_are_a_typed_skip() {
    let mut c = Cluster::new("t");
    ok(c.apply(
        &json!({"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy",
            "metadata": {"name": "m"},
            "spec": {"evaluation": {"mutateExisting": {"enabled": true}},
                "matchConstraints": {"resourceRules": [{"apiGroups": [""],
                "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}]},
                "mutations": [{"patchType": "ApplyConfiguration",
                    "applyConfiguration": {"expression": "Object{}"}}]}}),
        false,
    ));
    let expected = json!({"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
        "metadata": {"namespace": "t"}});
    let err = candidates(&c, &expected, true).unwrap_err();
    assert!(err.to_string().contains("MutatingPolicy"), "{err}");
    // Ephemeral reports are merged and deleted: none is left to find.
    let eph = json!({"apiVersion": "reports.kyverno.io/v1", "kind": "EphemeralReport"});
    assert!(candidates(&c, &eph, false).unwrap().is_empty());
    assert!(candidates(&c, &eph, true).is_err());
}

#[test]
fn a_labelled_admission_policy_reports_its_failed_expression() {
    let mut c = Cluster::new("t");
    let vap = |labelled: bool| {
        let mut v = json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "replicas"},
            "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["apps"],
                "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                "resources": ["deployments"]}]},
                "validations": [{"expression": "object.spec.replicas <= 5"}]}});
        if labelled {
            v["metadata"]["labels"] = json!({"reports.kyverno.io/enabled": "true"});
        }
        v
    };
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d"}, "spec": {"replicas": 7,
            "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    ok(c.apply(&deployment, false));
    ok(c.apply(&vap(false), false));
    assert!(report_for(&policy_reports(&c).unwrap(), "d").is_none());
    ok(c.apply(&vap(true), false));
    let reports = policy_reports(&c).unwrap();
    let d = report_for(&reports, "d").expect("scanned");
    let r = &d["results"][0];
    assert_eq!(text(r, "/source"), "ValidatingAdmissionPolicy");
    assert_eq!(text(r, "/policy"), "replicas");
    assert_eq!(text(r, "/result"), "fail");
    assert_eq!(
        text(r, "/message"),
        "failed expression: object.spec.replicas <= 5"
    );
}

#[test]
fn a_failing_background_result_makes_scan_events_on_the_resource_and_the_policy() {
    let mut c = Cluster::new("t");
    ok(c.apply(&namespace("early", None), false));
    ok(c.apply(&labels_policy(true, "Audit"), false));
    let expected = json!({"apiVersion": "v1", "kind": "Event",
        "reportingComponent": "kyverno-scan"});
    let events = super::super::events::candidates(&c, &expected, true).unwrap();
    let on_ns = events
        .iter()
        .find(|e| {
            text(e, "/involvedObject/kind") == "Namespace"
                && text(e, "/involvedObject/name") == "early"
        })
        .expect("an event on the namespace");
    assert_eq!(text(on_ns, "/metadata/namespace"), "default");
    assert_eq!(text(on_ns, "/reason"), "PolicyViolation");
    assert!(text(on_ns, "/message").starts_with("policy require-owner/check-owner fail: "));
    let on_policy = events
        .iter()
        .find(|e| {
            text(e, "/involvedObject/kind") == "ClusterPolicy"
                && text(e, "/related/name") == "early"
        })
        .expect("an event on the policy");
    assert!(text(on_policy, "/message").starts_with("Namespace early: [check-owner] fail; "));
    // Admission emitted none: the policy came after the namespace.
    let admission = json!({"apiVersion": "v1", "kind": "Event",
        "reportingComponent": "kyverno-admission"});
    assert!(
        super::super::events::candidates(&c, &admission, false)
            .unwrap()
            .is_empty()
    );
    // An audit failure at admission may have made admission events: not told.
    ok(c.apply(&namespace("late", None), false));
    assert!(super::super::events::candidates(&c, &admission, false).is_err());
    // The absence of scan events is not told (past scans' events stay).
    assert!(super::super::events::candidates(&c, &expected, false).is_err());
}

/// The engine asks a policy's `webhookConfiguration.matchConditions` in the background
/// too, on the scanner's CREATE with no user: a condition on the requester's groups does
/// not hold there, one on the object does.
#[test]
fn the_background_scan_asks_a_policys_webhook_match_conditions() {
    for (condition, scanned) in [
        ("'system:masters' in request.userInfo.groups", false),
        ("object.metadata.name.startsWith('ea')", true),
        ("object.metadata.name.startsWith('zz')", false),
    ] {
        let mut c = Cluster::new("t");
        ok(c.apply(&namespace("early", None), false));
        let mut policy = labels_policy(true, "Audit");
        policy["spec"]["webhookConfiguration"] =
            json!({"matchConditions": [{"name": "c", "expression": condition}]});
        ok(c.apply(&policy, false));
        let reports = policy_reports(&c).unwrap();
        assert_eq!(
            report_for(&reports, "early").is_some(),
            scanned,
            "{condition}: {reports:?}"
        );
    }
}

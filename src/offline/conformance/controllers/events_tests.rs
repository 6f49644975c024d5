use serde_json::{Value, json};

use super::candidates;
use crate::offline::conformance::assert::{Judged, judge};
use crate::offline::conformance::cluster::{Answer, Cluster, text};

fn ok(a: Answer) {
    assert!(matches!(a, Answer::Ok), "{a:?}");
}

/// A generate rule for Namespaces, `ns-1` excluded.
fn netpol_policy() -> Value {
    json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
        "metadata": {"name": "default"},
        "spec": {"rules": [{"name": "deny-all",
            "match": {"any": [{"resources": {"kinds": ["Namespace"]}}]},
            "exclude": {"any": [{"resources": {"namespaces": ["ns-1"]}}]},
            "generate": {"apiVersion": "v1", "kind": "ConfigMap", "name": "made",
                "namespace": "{{request.object.metadata.name}}",
                "data": {"data": {"k": "v"}}}}]}})
}

fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

fn generate_event() -> Value {
    json!({"apiVersion": "v1", "kind": "Event", "metadata": {"namespace": "default"},
        "involvedObject": {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
            "name": "default"},
        "reportingComponent": "kyverno-generate"})
}

#[test]
fn without_update_requests_the_generate_controller_has_no_events() {
    let mut c = Cluster::new("t");
    ok(c.apply(&netpol_policy(), false));
    ok(c.apply(&namespace("ns-1"), false));
    assert!(candidates(&c, &generate_event(), false).unwrap().is_empty());
    // A trigger the rule takes has a request: what it reported is not told.
    ok(c.apply(&namespace("ns-2"), false));
    let why = candidates(&c, &generate_event(), false).unwrap_err();
    assert!(why.contains("kyverno-generate"), "{why}");
}

/// An Event a generate rule makes on a ConfigMap's update, labelled as downstreams are.
fn event_policy() -> Value {
    json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
        "metadata": {"name": "on-edit"},
        "spec": {"background": false, "rules": [{"name": "on-edit",
            "match": {"any": [{"resources": {"kinds": ["ConfigMap"]}}]},
            "preconditions": {"any": [{"key": "{{ request.operation }}",
                "operator": "Equals", "value": "UPDATE"}]},
            "generate": {"apiVersion": "v1", "kind": "Event", "name": "edit.one",
                "namespace": "{{request.object.metadata.namespace}}",
                "synchronize": false,
                "data": {"involvedObject": {"apiVersion": "v1", "kind": "ConfigMap",
                    "name": "{{ request.name }}",
                    "namespace": "{{ request.namespace }}"},
                    "reason": "Edit", "type": "Warning",
                    "source": {"component": "kyverno"}}}}]}})
}

fn configmap(value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "t"}, "data": {"k": value}})
}

fn labelled_event(rule: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Event", "metadata": {"namespace": "t",
            "labels": {"app.kubernetes.io/managed-by": "kyverno",
                "generate.kyverno.io/rule-name": rule}},
        "involvedObject": {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm"},
        "source": {"component": "kyverno"}})
}

#[test]
fn an_event_that_is_not_kyvernos_own_is_judged_against_the_clusters_events() {
    let mut c = Cluster::new("t");
    ok(c.apply(&event_policy(), false));
    ok(c.apply(&configmap("a"), false));
    // Created: the precondition does not hold, nothing made.
    assert!(
        candidates(&c, &labelled_event("on-edit"), true)
            .unwrap()
            .is_empty()
    );
    ok(c.apply(&configmap("b"), false));
    let found = candidates(&c, &labelled_event("on-edit"), true).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(text(&found[0], "/reason"), "Edit");
    assert_eq!(
        judge(&labelled_event("on-edit"), &found[0], &Default::default()),
        Judged::Match
    );
    // A wrong expectation does not match.
    assert!(matches!(
        judge(&labelled_event("other"), &found[0], &Default::default()),
        Judged::Mismatch(_)
    ));
}

#[test]
fn an_event_whatever_its_component_is_still_not_told() {
    let c = Cluster::new("t");
    let any = json!({"apiVersion": "v1", "kind": "Event",
        "involvedObject": {"kind": "ConfigMap", "name": "cm"}});
    assert!(candidates(&c, &any, true).is_err());
    // Another component than Kyverno's: only the cluster's Events.
    let other = json!({"apiVersion": "v1", "kind": "Event", "reportingComponent": "kubelet"});
    assert!(candidates(&c, &other, true).unwrap().is_empty());
}

fn require_team(action: &str) -> Value {
    json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
        "metadata": {"name": "require-team"},
        "spec": {"background": false, "rules": [{"name": "team",
            "match": {"any": [{"resources": {"kinds": ["ConfigMap"]}}]},
            "validate": {"failureAction": action, "message": "team",
                "pattern": {"metadata": {"labels": {"team": "?*"}}}}}]}})
}

fn applied_event() -> Value {
    json!({"apiVersion": "v1", "kind": "Event", "metadata": {"namespace": "default"},
        "involvedObject": {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
            "name": "require-team"},
        "type": "Normal", "reason": "PolicyApplied", "action": "Resource Passed",
        "message": "ConfigMap t/foo: pass", "reportingComponent": "kyverno-admission"})
}

fn config_map(labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "foo", "namespace": "t", "labels": labels}})
}

fn success_events(c: &mut Cluster, on: &str) {
    let mut cm = crate::offline::conformance::controllers::install::objects().remove(0);
    cm["data"]["generateSuccessEvents"] = json!(on);
    ok(c.apply(&cm, false));
}

#[test]
fn a_passing_admission_emits_policy_applied_only_with_generate_success_events() {
    let found = |c: &Cluster| {
        candidates(c, &applied_event(), true)
            .unwrap()
            .iter()
            .any(|e| {
                matches!(
                    judge(&applied_event(), e, &Default::default()),
                    Judged::Match
                )
            })
    };
    let mut c = Cluster::new("t");
    ok(c.apply(&require_team("Enforce"), false));
    ok(c.apply(&config_map(json!({"team": "a"})), false));
    assert!(!found(&c));
    let mut c = Cluster::new("t");
    success_events(&mut c, "true");
    ok(c.apply(&require_team("Enforce"), false));
    ok(c.apply(&config_map(json!({"team": "a"})), false));
    assert!(found(&c));
}

#[test]
fn a_failing_rule_makes_no_policy_applied_event() {
    let mut c = Cluster::new("t");
    success_events(&mut c, "true");
    ok(c.apply(&require_team("Audit"), false));
    ok(c.apply(&config_map(json!({})), false));
    assert!(c.reports.applied.is_empty());
}

#[test]
fn a_generated_resource_has_its_success_events_with_generate_success_events() {
    let policy_event = json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"namespace": "default"},
        "involvedObject": {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
            "name": "default"},
        "type": "Normal", "reason": "PolicyApplied", "message": "resource generated",
        "action": "Resource Generated", "reportingComponent": "kyverno-generate"});
    let resource_event = json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"namespace": "ns-2"},
        "involvedObject": {"apiVersion": "v1", "kind": "ConfigMap", "name": "made",
            "namespace": "ns-2"},
        "type": "Normal", "reason": "PolicyApplied", "action": "None",
        "reportingComponent": "kyverno-generate"});
    let mut c = Cluster::new("t");
    success_events(&mut c, "true");
    ok(c.apply(&netpol_policy(), false));
    ok(c.apply(&namespace("ns-2"), false));
    for expected in [&policy_event, &resource_event] {
        let found = candidates(&c, expected, true).unwrap();
        assert!(
            found
                .iter()
                .any(|e| matches!(judge(expected, e, &Default::default()), Judged::Match)),
            "{expected}"
        );
    }
    // Without the setting the successes are dropped, and a failure is not told.
    let mut c = Cluster::new("t");
    ok(c.apply(&netpol_policy(), false));
    ok(c.apply(&namespace("ns-2"), false));
    assert!(candidates(&c, &policy_event, true).is_err());
}

use serde_json::{Value, json};

use super::super::chainsaw::{Op, Resources, Step, Test};
use super::super::{Verdict, replay};

fn pod() -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "example", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
}

fn policy() -> Value {
    json!({"apiVersion": "policies.kyverno.io/v1beta1", "kind": "DeletingPolicy",
        "metadata": {"name": "delete-example"},
        "spec": {"schedule": "*/1 * * * *",
            "conditions": [{"name": "n", "expression": "object.metadata.name == 'example'"}],
            "matchConstraints": {"resourceRules": [{"apiGroups": [""],
                "apiVersions": ["v1"], "resources": ["pods"]}]}}})
}

fn apply(v: Value) -> Op {
    Op::Apply {
        create_only: false,
        resources: Resources::Inline(v),
        expect: Vec::new(),
    }
}

fn observe(present: bool, timeout: f64) -> Op {
    Op::Assert {
        present,
        resources: Resources::Inline(json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "example", "namespace": "default"}})),
        timeout,
    }
}

fn run(after_policy: Vec<Op>) -> Verdict {
    let mut ops = vec![apply(pod()), observe(true, 30.0), apply(policy())];
    ops.extend(after_policy);
    replay(&Test {
        name: "clock".into(),
        dir: std::path::PathBuf::from("."),
        skip: false,
        namespace: None,
        bindings: Default::default(),
        steps: vec![Step {
            name: "only".into(),
            ops,
            bindings: Default::default(),
        }],
    })
}

fn is_timing_skip(v: &Verdict) -> bool {
    matches!(v, Verdict::Skipped(super::Skip::Cleanup(why)) if why.contains("wall clock"))
}

#[test]
fn a_sleep_past_the_longest_gap_sees_the_object_deleted() {
    assert_eq!(
        run(vec![Op::Sleep(Some(65.0)), observe(false, 30.0)]),
        Verdict::Agree
    );
    let kept = run(vec![Op::Sleep(Some(65.0)), observe(true, 30.0)]);
    assert!(matches!(kept, Verdict::Disagree(_)), "{kept:?}");
}

#[test]
fn an_error_retried_past_the_longest_gap_waits_for_the_tick() {
    assert_eq!(run(vec![observe(false, 90.0)]), Verdict::Agree);
}

#[test]
fn a_tick_that_may_or_may_not_have_come_is_a_skip() {
    let short_error = run(vec![observe(false, 30.0)]);
    assert!(is_timing_skip(&short_error), "{short_error:?}");
    let half_sleep = run(vec![Op::Sleep(Some(30.0)), observe(true, 30.0)]);
    assert!(is_timing_skip(&half_sleep), "{half_sleep:?}");
}

#[test]
fn no_time_passed_no_tick_came() {
    assert_eq!(run(vec![observe(true, 30.0)]), Verdict::Agree);
}

#[test]
fn an_error_that_waited_for_a_tick_leaves_the_clock_at_its_earliest() {
    // Held after the tick, which may have come at once: 30 more seconds do not make a
    // second object's deletion certain.
    let other = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "example", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    let v = run(vec![
        observe(false, 90.0),
        apply(other),
        Op::Sleep(Some(30.0)),
        observe(true, 30.0),
    ]);
    assert!(is_timing_skip(&v), "{v:?}");
}

fn ttl_run(label: &str, ops: Vec<Op>) -> Verdict {
    let mut pod = pod();
    pod["metadata"]["labels"] = json!({"cleanup.kyverno.io/ttl": label});
    let mut all = vec![apply(pod)];
    all.extend(ops);
    replay(&Test {
        name: "ttl".into(),
        // The suite's `ttl` configuration lets the cleanup controller watch Pods.
        dir: std::path::PathBuf::from("ttl"),
        skip: false,
        namespace: None,
        bindings: Default::default(),
        steps: vec![Step {
            name: "only".into(),
            ops: all,
            bindings: Default::default(),
        }],
    })
}

#[test]
fn a_ttl_label_deletes_its_object_that_long_after_its_creation() {
    assert_eq!(
        ttl_run("10s", vec![observe(true, 30.0), observe(false, 30.0)]),
        Verdict::Agree
    );
    assert_eq!(
        ttl_run("10s", vec![Op::Sleep(Some(15.0)), observe(false, 1.0)]),
        Verdict::Agree
    );
    let early = ttl_run("10s", vec![observe(false, 5.0)]);
    assert!(matches!(early, Verdict::Disagree(_)), "{early:?}");
    // Made again after its deletion, it lives its ten seconds anew.
    let mut again = pod();
    again["metadata"]["labels"] = json!({"cleanup.kyverno.io/ttl": "10s"});
    assert_eq!(
        ttl_run(
            "10s",
            vec![observe(false, 30.0), apply(again), observe(true, 30.0)]
        ),
        Verdict::Agree
    );
}

#[test]
fn a_ttl_time_passed_deletes_at_once_racing_a_look_made_then() {
    assert_eq!(
        ttl_run("2023-07-19T120000Z", vec![observe(false, 5.0)]),
        Verdict::Agree
    );
    let raced = ttl_run("2023-07-19", vec![observe(true, 5.0)]);
    assert!(is_timing_skip(&raced), "{raced:?}");
}

#[test]
fn without_watch_on_its_kind_the_ttl_controller_leaves_the_object() {
    let mut pod = pod();
    pod["metadata"]["labels"] = json!({"cleanup.kyverno.io/ttl": "10s"});
    let v = replay(&Test {
        name: "standard".into(),
        dir: std::path::PathBuf::from("."),
        skip: false,
        namespace: None,
        bindings: Default::default(),
        steps: vec![Step {
            name: "only".into(),
            ops: vec![apply(pod), Op::Sleep(Some(60.0)), observe(true, 5.0)],
            bindings: Default::default(),
        }],
    });
    assert_eq!(v, Verdict::Agree);
}

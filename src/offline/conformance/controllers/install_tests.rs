use serde_json::json;

use super::*;

fn config(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "kyverno", "namespace": "kyverno"}, "data": data})
}

#[test]
fn the_chart_default_emits_no_success_events() {
    let s = settings(&objects());
    assert!(!s.success_events);
    assert!(!s.emits_success("Resource Passed"));
}

#[test]
fn generate_success_events_parses_as_go_booleans() {
    for (v, on) in [
        ("true", true),
        ("T", true),
        ("1", true),
        ("yes", false),
        ("false", false),
    ] {
        let s = settings(&[config(json!({"generateSuccessEvents": v}))]);
        assert_eq!(s.success_events, on, "{v}");
    }
    assert_eq!(settings(&[]), Settings::default());
}

#[test]
fn success_event_actions_limit_the_applied_events() {
    let s = settings(&[config(
        json!({"generateSuccessEvents": "true", "successEventActions": "Resource Generated, "}),
    )]);
    assert!(s.emits_success("Resource Generated"));
    assert!(!s.emits_success("Resource Passed"));
}

#[test]
fn only_the_honoured_keys_may_change() {
    let old = objects().remove(0);
    let mut new = old.clone();
    new["data"]["generateSuccessEvents"] = json!("true");
    assert_eq!(unmodelled_write(&new, Some(&old)), None);
    new["data"]["resourceFilters"] = json!("[Event,*,*]");
    assert_eq!(
        unmodelled_write(&new, Some(&old)),
        Some(Skip::KyvernoConfig)
    );
    let mut other = old.clone();
    other["metadata"]["name"] = json!("kyverno-metrics");
    assert_eq!(unmodelled_write(&other, None), Some(Skip::KyvernoConfig));
    let mut elsewhere = old.clone();
    elsewhere["metadata"]["namespace"] = json!("default");
    elsewhere["data"]["resourceFilters"] = json!("x");
    assert_eq!(unmodelled_write(&elsewhere, None), None);
}

#[test]
fn reads_of_unrendered_keys_are_unmodelled() {
    assert_eq!(
        unmodelled_read(&config(json!({"generateSuccessEvents": "true"}))),
        None
    );
    assert!(unmodelled_read(&config(json!({"resourceFilters": "x"}))).is_some());
    let out = |o: &str| unmodelled_output(&objects()[0], Some(o));
    assert_eq!(out("jsonpath={.data.generateSuccessEvents}"), None);
    assert!(out("json").is_some());
    assert!(out("jsonpath={.data.webhooks}").is_some());
}

#[test]
fn the_install_objects_the_replay_lacks_are_named() {
    let tls = unheld(
        "Secret",
        "kyverno",
        Some("kyverno-svc.kyverno.svc.kyverno-tls-ca"),
        false,
    );
    assert!(tls.is_some_and(|w| w.contains("cert controller")));
    assert!(unheld("Deployment", "kyverno", None, false).is_some());
    assert_eq!(unheld("ConfigMap", "kyverno", Some("kyverno"), true), None);
    assert_eq!(unheld("Secret", "default", Some("x"), false), None);
    assert_eq!(unheld("UpdateRequest", "kyverno", None, false), None);
}

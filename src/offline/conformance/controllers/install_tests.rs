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
    assert_eq!(unmodelled_write(&new, Some(&old)), None);
    new["data"]["webhooks"] = json!("{}");
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
fn the_config_map_is_the_charts_rendering() {
    let cm = objects().remove(0);
    let filters = cm["data"]["resourceFilters"].as_str().unwrap_or_default();
    assert!(filters.starts_with("[*/*,kyverno,*] [Event,*,*] [*/*,kube-system,*]"));
    assert!(filters.ends_with("[Secret,kyverno,kyverno-cleanup-controller.kyverno.svc.*]"));
    let webhooks: Value =
        serde_json::from_str(cm["data"]["webhooks"].as_str().unwrap_or("")).unwrap_or_default();
    assert_eq!(
        webhooks.pointer("/namespaceSelector/matchExpressions/1/values/0"),
        Some(&json!("kyverno"))
    );
    assert_eq!(
        cm["metadata"]["labels"]["app.kubernetes.io/component"],
        "config"
    );
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

use serde_json::json;

use super::*;

fn allowed(verbs: &[&str]) -> Authorizer {
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "r"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": verbs}]});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "b"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "r"},
        "subjects": [{"kind": "ServiceAccount", "name": "kyverno-cleanup-controller", "namespace": "kyverno"}]});
    Authorizer::new(&[role, binding])
}

fn labelled(value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"cleanup.kyverno.io/ttl": value}}})
}

#[test]
fn ttl_labels_read_as_the_ttl_controller_reads_them() {
    for (ok, seconds) in [
        ("10s", 10.0),
        ("1h30m", 5400.0),
        ("2 days", 172_800.0),
        ("1w", 604_800.0),
        ("3m 5s", 185.0),
    ] {
        assert_eq!(lifetime(ok), Some(Lifetime::AfterCreation(seconds)), "{ok}");
    }
    assert_eq!(lifetime("2026-12-03"), Some(Lifetime::At(1_796_256_000)));
    assert_eq!(
        lifetime("2026-12-03T101500Z"),
        Some(Lifetime::At(1_796_256_000 + 10 * 3600 + 15 * 60))
    );
    for bad in [
        "10ay",
        "",
        "2026-13-03",
        "2026-02-30",
        "2026-12-03T10:15:00Z",
        "2026-12-03T251500Z",
        "tomorrow",
    ] {
        assert_eq!(lifetime(bad), None, "{bad}");
    }
}

#[test]
fn the_ttl_controller_acts_only_where_it_may_watch_list_and_delete() {
    let mapper = Mapper::built_in();
    let cm = labelled("10s");
    assert_eq!(deletion(&cm, &allowed(&["list", "delete"]), &mapper), None);
    let auth = allowed(&["watch", "list", "delete"]);
    assert_eq!(deletion(&cm, &auth, &mapper), Some(Ok(10.0)));
    assert_eq!(deletion(&labelled("10ay"), &auth, &mapper), None);
}

#[test]
fn a_ttl_date_before_the_release_has_passed_and_one_after_it_is_unknown() {
    let mapper = Mapper::built_in();
    let auth = allowed(&["watch", "list", "delete"]);
    let past = deletion(&labelled("2024-01-31T000000Z"), &auth, &mapper);
    assert_eq!(past, Some(Ok(f64::NEG_INFINITY)));
    let later = deletion(&labelled("2031-01-31"), &auth, &mapper);
    assert!(matches!(later, Some(Err(Skip::Cleanup(_)))), "{later:?}");
}

use serde_json::json;

use super::*;

#[test]
fn schedules_parse_as_robfig_cron_parse_standard() {
    for ok in [
        "*/2 * * * *",
        "0 0 1 jan *",
        "5-10/2 1,2 * * MON-FRI",
        "@hourly",
        "@every 5m",
    ] {
        assert!(valid_schedule(ok), "{ok}");
    }
    for bad in [
        "invalid-schedule",
        "* * * *",
        "60 * * * *",
        "*/0 * * * *",
        "* * * * * *",
        "@every x",
    ] {
        assert!(!valid_schedule(bad), "{bad}");
    }
}

fn policy(spec: serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "kyverno.io/v2", "kind": "ClusterCleanupPolicy",
        "metadata": {"name": "p"}, "spec": spec})
}

fn pods_allowed() -> Authorizer {
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "r"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "delete"]}]});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "b"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "r"},
        "subjects": [{"kind": "ServiceAccount", "name": "kyverno-cleanup-controller", "namespace": "kyverno"}]});
    Authorizer::new(&[role, binding])
}

#[test]
fn context_entries_and_schedule_are_refused_and_permissions_checked() {
    let auth = pods_allowed();
    let mapper = Mapper::built_in();
    let m = json!({"any": [{"resources": {"kinds": ["Pod"]}}]});
    let ok = policy(json!({"match": m, "schedule": "*/1 * * * *"}));
    assert_eq!(admission(&ok, &auth, &mapper), Ok(None));
    let cm = policy(json!({"match": m, "schedule": "*/1 * * * *",
        "context": [{"name": "c", "configMap": {"name": "x", "namespace": "default"}}]}));
    let why = admission(&cm, &auth, &mapper)
        .ok()
        .flatten()
        .unwrap_or_default();
    assert!(
        why.contains("ConfigMap is not allowed in CleanUp Policy"),
        "{why}"
    );
    let bad = policy(json!({"match": m, "schedule": "invalid-schedule"}));
    let why = admission(&bad, &auth, &mapper)
        .ok()
        .flatten()
        .unwrap_or_default();
    assert!(why.contains("not in proper cron format"), "{why}");
    let secrets = policy(
        json!({"match": {"any": [{"resources": {"kinds": ["Secret"]}}]},
        "schedule": "*/1 * * * *"}),
    );
    let why = admission(&secrets, &auth, &mapper)
        .ok()
        .flatten()
        .unwrap_or_default();
    assert!(
        why.ends_with("cleanup controller has no permission to delete kind Secret"),
        "{why}"
    );
    let empty = policy(json!({"match": m, "exclude": m, "schedule": "*/1 * * * *"}));
    let why = admission(&empty, &auth, &mapper)
        .ok()
        .flatten()
        .unwrap_or_default();
    assert!(why.contains("matching an empty set"), "{why}");
}

#[test]
fn match_validation_it_does_not_model_is_a_skip() {
    let auth = pods_allowed();
    let mapper = Mapper::built_in();
    let ns = json!({"apiVersion": "kyverno.io/v2", "kind": "CleanupPolicy",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"match": {"any": [{"resources": {"kinds": ["Namespace"]}}]}, "schedule": "* * * * *"}});
    assert!(matches!(
        admission(&ns, &auth, &mapper),
        Err(Skip::Engine(_))
    ));
    let names = policy(
        json!({"match": {"any": [{"resources": {"kinds": ["Pod"], "names": ["a"]}}]},
        "schedule": "* * * * *"}),
    );
    assert!(matches!(
        admission(&names, &auth, &mapper),
        Err(Skip::Engine(_))
    ));
}

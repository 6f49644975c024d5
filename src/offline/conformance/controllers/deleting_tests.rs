use serde_json::json;

use super::*;

fn dpol(ns: Option<&str>, spec: Value) -> Value {
    let mut p = json!({"apiVersion": "policies.kyverno.io/v1beta1",
        "kind": if ns.is_some() { "NamespacedDeletingPolicy" } else { "DeletingPolicy" },
        "metadata": {"name": "p"}, "spec": spec});
    if let Some(ns) = ns {
        p["metadata"]["namespace"] = json!(ns);
    }
    p
}

fn rules(resource: &str) -> Value {
    json!({"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
        "resources": [resource]}]})
}

#[test]
fn the_policy_webhook_refuses_what_validate_go_refuses() {
    let mut w = Vec::new();
    let ok = dpol(
        None,
        json!({"schedule": "*/1 * * * *", "matchConstraints": rules("pods")}),
    );
    assert_eq!(admission(&ok, &mut w), Ok(None));
    let bare = dpol(None, json!({"schedule": "*/1 * * * *"}));
    let text = admission(&bare, &mut w).ok().flatten().unwrap_or_default();
    assert!(
        text.contains("denied the request: spec.matchConstraints: Required value"),
        "{text}"
    );
    assert_eq!(w.len(), 1);
    let http = dpol(
        Some("ns"),
        json!({"schedule": "*/1 * * * *", "matchConstraints": rules("pods"),
        "conditions": [{"name": "h", "expression": "http.Get('http://x').ok == true"}]}),
    );
    let text = admission(&http, &mut w).ok().flatten().unwrap_or_default();
    assert!(
        text.contains("http.* is not allowed in namespaced policies"),
        "{text}"
    );
    let cron = dpol(
        None,
        json!({"schedule": "0 0 0 * * *", "matchConstraints": rules("pods")}),
    );
    assert!(matches!(admission(&cron, &mut w), Err(Skip::Engine(_))));
}

#[test]
fn a_tick_deletes_only_what_the_controller_may_list_and_delete() {
    let mut cluster = Cluster::new("default");
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default"}});
    cluster.store(cm);
    let policy = dpol(
        None,
        json!({"schedule": "*/1 * * * *", "matchConstraints": rules("configmaps")}),
    );
    cluster.store(policy.clone());
    let targets = |c: &Cluster| selected(c, &policy, &c.cleanup_authorizer(), &c.mapper());
    assert_eq!(targets(&cluster), Ok(Vec::new()));
    cluster.store(
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "cm"}, "rules": [{"apiGroups": [""], "resources": ["configmaps"],
        "verbs": ["list", "delete"]}]}),
    );
    cluster.store(json!({"apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding", "metadata": {"name": "cm"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cm"},
        "subjects": [{"kind": "ServiceAccount", "name": "kyverno-cleanup-controller",
            "namespace": "kyverno"}]}));
    let got = targets(&cluster).unwrap_or_default();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].name, "c");
}

#[test]
fn a_namespaced_policy_deletes_in_its_namespace_only() {
    let mut cluster = Cluster::new("default");
    for ns in ["a", "b"] {
        cluster.store(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}));
        cluster.store(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": ns}, "spec": {"containers": []}}));
    }
    let policy = dpol(
        Some("a"),
        json!({"schedule": "*/1 * * * *", "matchConstraints": rules("pods")}),
    );
    let got = selected(
        &cluster,
        &policy,
        &cluster.cleanup_authorizer(),
        &cluster.mapper(),
    )
    .unwrap_or_default();
    assert_eq!(
        got.iter().map(|k| k.namespace.as_str()).collect::<Vec<_>>(),
        vec!["a"]
    );
}

#[test]
fn deleting_an_owner_of_dependents_is_left_to_the_garbage_collector() {
    let mut cluster = Cluster::new("default");
    let owner = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "owner", "namespace": "default", "uid": "u-1"}});
    cluster.store(owner.clone());
    assert_eq!(no_dependents(&cluster, &owner), Ok(()));
    cluster.store(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "child", "namespace": "default",
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                "uid": "u-1"}]}}));
    assert!(matches!(
        no_dependents(&cluster, &owner),
        Err(Skip::Controller(_))
    ));
}

/// A condition that read another object with `resource.get` was a skip: the tick's
/// evaluation had no cluster objects to read.
#[test]
fn a_condition_reads_the_cluster_with_the_resource_library() {
    let mut cluster = Cluster::new("default");
    cluster.store(
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "cm"}, "rules": [{"apiGroups": [""], "resources": ["configmaps"],
        "verbs": ["list", "delete"]}]}),
    );
    cluster.store(json!({"apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding", "metadata": {"name": "cm"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cm"},
        "subjects": [{"kind": "ServiceAccount", "name": "kyverno-cleanup-controller",
            "namespace": "kyverno"}]}));
    for (name, doomed) in [("switch", "no"), ("a", "yes"), ("b", "no")] {
        cluster.store(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"}, "data": {"doomed": doomed}}));
    }
    let policy = dpol(
        None,
        json!({"schedule": "*/1 * * * *", "matchConstraints": rules("configmaps"),
        "conditions": [{"name": "c", "expression":
            "resource.get('v1', 'configmaps', 'default', 'switch').data.doomed != object.data.doomed"}]}),
    );
    let got = selected(
        &cluster,
        &policy,
        &cluster.cleanup_authorizer(),
        &cluster.mapper(),
    );
    assert_eq!(
        got.map(|keys| keys.into_iter().map(|k| k.name).collect::<Vec<_>>()),
        Ok(vec!["a".to_string()])
    );
}

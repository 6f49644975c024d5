use serde_json::{Value, json};

use super::*;

fn policy(generate: Value) -> Value {
    json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "p"},
        "spec": {"rules": [{"name": "r",
            "match": {"any": [{"resources": {"kinds": ["Namespace"]}}]},
            "generate": generate}]}})
}

fn netpol(synchronize: bool) -> Value {
    policy(
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "name": "default-deny", "namespace": "{{request.object.metadata.name}}",
        "synchronize": synchronize, "data": {"spec": {"podSelector": {}}}}),
    )
}

fn cluster_role(name: &str, resource: &str, group: &str, verbs: &[&str]) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [{"apiGroups": [group], "resources": [resource], "verbs": verbs}]})
}

fn binding(kind: &str, namespace: Option<&str>, role_kind: &str, role: &str, sa: &str) -> Value {
    let mut meta = json!({"name": format!("{role}-{sa}")});
    if let Some(ns) = namespace {
        meta["namespace"] = json!(ns);
    }
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": "kyverno"}]})
}

/// ClusterRoleBindings of `role` to each of Kyverno's service accounts `sas`.
fn bound(role: &str, sas: &[&str]) -> Vec<Value> {
    sas.iter()
        .map(|sa| binding("ClusterRoleBinding", None, "ClusterRole", role, sa))
        .collect()
}

fn in_cluster(p: &Value, objects: &[Value]) -> Vec<String> {
    let authorizer = Authorizer::new(objects);
    let mapper = Mapper::built_in();
    validate_policy(
        p,
        Mode::Cluster {
            authorizer: &authorizer,
            mapper: &mapper,
        },
    )
    .into_iter()
    .map(|p| p.message)
    .collect()
}

#[test]
fn generate_without_the_background_controllers_permissions_is_rejected() {
    // Reading is granted (as the chart's `view` binding does); writing is not.
    let objects = vec![
        cluster_role(
            "read",
            "networkpolicies",
            "networking.k8s.io",
            &["get", "list"],
        ),
        binding(
            "ClusterRoleBinding",
            None,
            "ClusterRole",
            "read",
            "kyverno-background-controller",
        ),
        binding(
            "ClusterRoleBinding",
            None,
            "ClusterRole",
            "read",
            "kyverno-admission-controller",
        ),
    ];
    assert_eq!(
        in_cluster(&netpol(true), &objects),
        vec![
            "path: spec.rules[0].generate..: system:serviceaccount:kyverno:kyverno-background-controller \
             requires permissions create,update,delete for resource networking.k8s.io/v1/NetworkPolicy \
             in namespace {{request.object.metadata.name}}"
        ]
    );
    // Without synchronize only get and create are asked for.
    let msg = in_cluster(&netpol(false), &objects);
    assert!(
        msg[0].contains("requires permissions create for resource"),
        "{msg:?}"
    );
}

#[test]
fn admission_controller_needs_list_and_get_with_synchronize() {
    let mut objects = bound("all", &["kyverno-background-controller"]);
    objects.push(cluster_role(
        "all",
        "networkpolicies",
        "networking.k8s.io",
        &["*"],
    ));
    let msg = in_cluster(&netpol(true), &objects);
    assert_eq!(
        msg,
        vec![
            "path: spec.rules[0].generate..: system:serviceaccount:kyverno:kyverno-admission-controller \
             requires permissions list,get for resource networking.k8s.io/v1/NetworkPolicy \
             in namespace {{request.object.metadata.name}}"
        ]
    );
    assert!(in_cluster(&netpol(false), &objects).is_empty());
}

#[test]
fn a_variable_namespace_is_checked_literally() {
    // A RoleBinding in some real namespace never covers `{{request.object.metadata.name}}`.
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "all", "namespace": "team-a"},
        "rules": [{"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": ["*"]}]});
    let objects = vec![
        role,
        binding(
            "RoleBinding",
            Some("team-a"),
            "Role",
            "all",
            "kyverno-background-controller",
        ),
    ];
    let msg = in_cluster(&netpol(false), &objects);
    assert!(
        msg[0].contains("requires permissions get,create"),
        "{msg:?}"
    );
}

#[test]
fn data_and_clone_in_one_rule_are_refused() {
    let p = policy(json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "c",
        "namespace": "x", "data": {"data": {}}, "clone": {"namespace": "a", "name": "b"}}));
    let want = vec![
        "spec.rules[0].generate: Forbidden: only one of generate patterns(data, clone, cloneList and foreach) can be specified"
            .to_string(),
    ];
    assert_eq!(
        validate_policy(&p, Mode::Cli)
            .into_iter()
            .map(|p| p.message)
            .collect::<Vec<_>>(),
        want
    );
    assert_eq!(in_cluster(&p, &[]), want);
}

#[test]
fn target_namespace_against_the_kinds_scope() {
    let ns_target = policy(json!({"apiVersion": "v1", "kind": "Namespace", "name": "n",
        "namespace": "x", "data": {}}));
    assert_eq!(
        in_cluster(&ns_target, &[])[0],
        "spec.rules[0].generate.namespace: Forbidden: target namespace must not be set for a cluster-wide resource"
    );
    let no_ns = policy(json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "data": {}}));
    assert_eq!(
        validate_policy(&no_ns, Mode::Cli)[0].message,
        "spec.rules[0].generate.namespace: Forbidden: target namespace must be set for a namespaced resource"
    );
}

#[test]
fn json_patch_paths_begin_with_a_slash() {
    let p = json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "p"},
        "spec": {"rules": [{"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
            "mutate": {"patchesJson6902": "- op: add\n  path: metadata/labels/x\n  value: y\n"}}]}});
    assert_eq!(
        message(&validate_policy(&p, Mode::Cli)).unwrap(),
        "path must begin with a forward slash: spec.rules[0]: metadata/labels/x"
    );
}

#[test]
fn a_clusterpolicy_with_a_namespace_is_refused() {
    let mut p = netpol(false);
    p["metadata"]["namespace"] = json!("x");
    assert_eq!(
        denial_text(&validate_policy(&p, Mode::Cli)).unwrap(),
        "admission webhook \"validate-policy.kyverno.svc\" denied the request: \
         A clusterpolicy should not have the namespace defined"
    );
}

#[test]
fn the_cli_leaves_out_policies_kyverno_refuses() {
    let bad = policy(json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "c",
        "namespace": "x", "data": {"data": {}}, "clone": {"namespace": "a", "name": "b"}}));
    let good = netpol(false);
    let mut good = good;
    good["metadata"]["name"] = json!("good");
    let (policies, _) = crate::offline::kyverno::load_policies(&[bad, good]);
    let (valid, invalid) = crate::offline::kyverno::split_invalid(policies);
    assert_eq!(valid.len(), 1);
    assert_eq!(valid[0].name, "good");
    assert_eq!(invalid[0].0, "p");
    assert!(
        invalid[0].1.contains("only one of generate patterns"),
        "{invalid:?}"
    );
}

#[test]
fn a_generated_kind_with_a_subresource_is_checked_on_that_subresource() {
    // `Kind/subresource` is split once on `/` (Kyverno's `SplitSubresource`), not read
    // as a group/version ending in kind `status`.
    let p = policy(
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy/status",
        "name": "n", "namespace": "default", "data": {}}),
    );
    let msg = in_cluster(&p, &[]);
    assert_eq!(msg.len(), 1, "{msg:?}");
    assert!(
        msg[0].contains("requires permissions")
            && msg[0].contains("for resource networking.k8s.io/v1/NetworkPolicy/status"),
        "{msg:?}"
    );
    let mut objects = bound(
        "all",
        &[
            "kyverno-background-controller",
            "kyverno-admission-controller",
        ],
    );
    objects.push(cluster_role(
        "all",
        "networkpolicies/status",
        "networking.k8s.io",
        &["*"],
    ));
    assert_eq!(in_cluster(&p, &objects), Vec::<String>::new());
}

#[test]
fn a_clone_list_keeps_one_scope_and_names_a_namespace_only_for_namespaced_sources() {
    let list = |kinds: Value, ns: Option<&str>| {
        let mut clone_list = json!({"kinds": kinds, "selector": {"matchLabels": {"a": "b"}}});
        if let Some(ns) = ns {
            clone_list["namespace"] = json!(ns);
        }
        policy(json!({"namespace": "team", "cloneList": clone_list}))
    };
    let at = "spec.rules[0].generate.cloneList";
    let mixed = list(json!(["v1/ConfigMap", "v1/Namespace"]), Some("src"));
    assert_eq!(
        in_cluster(&mixed, &[]),
        vec![format!(
            "{at}.kinds: Forbidden: mixed scope of target resources is forbidden"
        )]
    );
    let cluster_wide_with_ns = list(json!(["storage.k8s.io/v1/StorageClass"]), Some("src"));
    assert_eq!(
        in_cluster(&cluster_wide_with_ns, &[]),
        vec![format!(
            "{at}.namespace: Forbidden: namespace is forbidden for cluster-wide target resources"
        )]
    );
    let namespaced_without_ns = list(json!(["v1/ConfigMap"]), None);
    assert_eq!(
        in_cluster(&namespaced_without_ns, &[])[0],
        format!("{at}.namespace: Forbidden: namespace is required for namespaced target resources")
    );
    // A namespaced Policy clones namespaced sources from its own namespace only.
    let mut own = list(
        json!(["v1/ConfigMap", "storage.k8s.io/v1/StorageClass"]),
        Some("other"),
    );
    own["kind"] = json!("Policy");
    own["metadata"]["namespace"] = json!("team");
    let msg = in_cluster(&own, &[]);
    assert!(
        msg.contains(&format!(
            "{at}.kinds: Forbidden: the source in cloneList must be a namespaced resource: storage.k8s.io/v1/StorageClass"
        )) && msg
            .iter()
            .filter(|m| m.contains("cannot clone resources from other namespace"))
            .count()
            == 2,
        "{msg:?}"
    );
}

#[test]
fn a_webhook_configuration_timeout_out_of_bounds_or_beside_its_deprecated_field_is_refused() {
    let mut p = netpol(false);
    p["spec"]["webhookConfiguration"] = json!({"timeoutSeconds": 45});
    assert_eq!(
        message(&validate_policy(&p, Mode::Cli)).unwrap(),
        "spec.webhookConfiguration.timeoutSeconds: Invalid value: 45: the timeout value must be between 1 and 30 seconds"
    );
    p["spec"]["webhookConfiguration"] = json!({"timeoutSeconds": 5, "failurePolicy": "Fail"});
    p["spec"]["webhookTimeoutSeconds"] = json!(5);
    p["spec"]["failurePolicy"] = json!("Ignore");
    assert_eq!(
        message(&validate_policy(&p, Mode::Cli)).unwrap(),
        "[spec.webhookTimeoutSeconds: Forbidden: remove the deprecated field and use spec.webhookConfiguration.timeoutSeconds instead, \
         spec.failurePolicy: Forbidden: remove the deprecated field and use spec.webhookConfiguration.failurePolicy instead]"
    );
}

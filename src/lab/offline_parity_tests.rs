//! The offline target models the cluster a lab runs on: the pinned install's RBAC,
//! Kyverno's policy validation at creation, the background controller's permissions.

use serde_json::{Value, json};

use super::*;
use crate::offline::kyverno::validation::BACKGROUND_SA;
use crate::offline::rbac::{AccessRequest, impersonated};

/// A ClusterRole on `resource` and its ClusterRoleBinding to the background controller.
pub fn grant_background(resource: &str, group: &str, verbs: &[&str]) -> Vec<Value> {
    vec![
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": format!("grant-{resource}")},
            "rules": [{"apiGroups": [group], "resources": [resource], "verbs": verbs}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": format!("grant-{resource}")},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": format!("grant-{resource}")},
            "subjects": [{"kind": "ServiceAccount", "name": "kyverno-background-controller",
                          "namespace": "kyverno"}]}),
    ]
}

fn background_can(o: &Offline, verb: &str, group: &str, resource: &str, ns: &str) -> bool {
    let (user, groups) = impersonated(BACKGROUND_SA, &[]);
    o.access
        .authorizer()
        .authorize(&AccessRequest {
            user,
            groups,
            verb: verb.into(),
            api_group: group.into(),
            resource: resource.into(),
            namespace: ns.into(),
            ..AccessRequest::default()
        })
        .allowed
}

fn cluster_policy(name: &str, rule: Value) -> Value {
    json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
           "metadata": {"name": name}, "spec": {"rules": [rule]}})
}

#[test]
fn baseline_is_the_charts_rbac_and_the_built_in_roles() {
    let names: Vec<&str> = baseline_rbac()
        .iter()
        .filter_map(|o| o.pointer("/metadata/name").and_then(Value::as_str))
        .collect();
    for want in [
        "kyverno:background-controller:core",
        "kyverno:background-controller:view",
        "view",
        "edit",
        "admin",
        "cluster-admin",
        "system:aggregate-to-view",
    ] {
        assert!(names.contains(&want), "{want} missing from the baseline");
    }
}

#[test]
fn background_controller_reads_configmaps_everywhere_on_the_stock_install() {
    // Live, the chart's core role and its `view` binding let the controller read
    // ConfigMaps in any namespace; offline agrees. It writes nothing and reads no Secret.
    let o = Offline::new(Vec::new(), Vec::new());
    assert!(background_can(
        &o,
        "get",
        "",
        "configmaps",
        "kca-mutate-source"
    ));
    assert!(background_can(
        &o,
        "list",
        "networking.k8s.io",
        "networkpolicies",
        "x"
    ));
    assert!(!background_can(
        &o,
        "get",
        "",
        "secrets",
        "kca-mutate-source"
    ));
    assert!(!background_can(&o, "create", "", "configmaps", "x"));
}

#[test]
fn a_policy_kyverno_refuses_never_reaches_the_cluster() {
    let netpol = cluster_policy(
        "deny",
        json!({"name": "default-deny",
            "match": {"any": [{"resources": {"kinds": ["Namespace"]}}]},
            "generate": {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                "name": "default-deny", "namespace": "{{request.object.metadata.name}}",
                "data": {"spec": {"podSelector": {}}}}}),
    );
    let refused = Offline::new(vec![netpol.clone()], Vec::new());
    assert!(!refused.has_policy("deny"));
    assert_eq!(
        refused.rejected[0].denial,
        "admission webhook \"validate-policy.kyverno.svc\" denied the request: \
         path: spec.rules[0].generate..: system:serviceaccount:kyverno:kyverno-background-controller \
         requires permissions create for resource networking.k8s.io/v1/NetworkPolicy \
         in namespace {{request.object.metadata.name}}"
    );
    assert!(
        refused
            .missing_policy("deny")
            .to_string()
            .contains("requires permissions create")
    );
    // With the grant applied beside it, the same policy is accepted.
    let mut objects = grant_background("networkpolicies", "networking.k8s.io", &["create"]);
    objects.push(netpol);
    let accepted = Offline::new(objects, Vec::new());
    assert!(accepted.rejected.is_empty(), "{:?}", accepted.rejected);
    assert!(accepted.has_policy("deny"));
}

#[test]
fn generate_stops_where_the_background_controller_cannot_read_the_clone_source() {
    // The target namespace is fixed, so a RoleBinding there satisfies Kyverno's
    // creation check; the source namespace stays unreadable.
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "w", "namespace": "team-a"},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "create"]}]});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "w", "namespace": "team-a"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "w"},
        "subjects": [{"kind": "ServiceAccount", "name": "kyverno-background-controller",
                      "namespace": "kyverno"}]});
    let source = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "regcred", "namespace": "src"}, "data": {}});
    let policy = cluster_policy(
        "copy",
        json!({"name": "clone",
            "match": {"any": [{"resources": {"kinds": ["ConfigMap"]}}]},
            "generate": {"apiVersion": "v1", "kind": "Secret", "name": "copy",
                "namespace": "team-a", "clone": {"namespace": "src", "name": "regcred"}}}),
    );
    let o = Offline::new(vec![role, binding, source, policy], Vec::new());
    assert!(o.rejected.is_empty(), "{:?}", o.rejected);
    let trigger = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "t", "namespace": "team-a"}});
    let run = engine::generate(&o.objects, &trigger, &o.access).unwrap();
    assert!(run.generated.is_empty(), "{:?}", run.generated);
    assert_eq!(
        run.failed_requests[0].message,
        "rule clone failed: source resource v1/Secret/team-a/copy not found: secrets \"regcred\" \
         is forbidden: User \"system:serviceaccount:kyverno:kyverno-background-controller\" \
         cannot get resource \"secrets\" in API group \"\" in the namespace \"src\""
    );
    let want = ObjRef {
        api_version: "v1".into(),
        kind: "Secret".into(),
        namespace: Some("team-a".into()),
        name: "copy".into(),
    };
    let why = o.why_not_generated(&run, &want, Some("copy")).to_string();
    assert!(
        why.starts_with("the UpdateRequest failed: rule clone failed: source resource"),
        "{why}"
    );
    assert!(
        why.ends_with(&format!("can {BACKGROUND_SA} create secrets? yes")),
        "{why}"
    );
}

#[test]
fn a_refused_policy_as_a_probe_is_denied_with_kyvernos_message() {
    let both = cluster_policy(
        "both",
        json!({"name": "r", "match": {"any": [{"resources": {"kinds": ["Namespace"]}}]},
            "generate": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "namespace": "x",
                "data": {"data": {}}, "clone": {"namespace": "a", "name": "b"}}}),
    );
    let o = Offline::new(Vec::new(), Vec::new());
    let denial = refusal(&o.access, &both).unwrap();
    assert!(
        denial.ends_with(
            "spec.rules[0].generate: Forbidden: only one of generate patterns(data, clone, cloneList and foreach) can be specified"
        ),
        "{denial}"
    );
}

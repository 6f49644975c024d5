//! The objects a fresh conformance cluster holds before a test: what kind, kubeadm and
//! Kubernetes' bootstrap policy make (`kind-state-rbac.yaml`, with its sources) and the
//! RBAC bindings Kyverno's chart renders (kind-config/baseline-rbac.yaml), and the Node
//! every kind cluster named `kind` has, `kind-control-plane`, in part ([`partly_held`]).
//! It says which kinds the cluster then holds every object of; it does not model what
//! the system's controllers do later (that is the listing's and the controllers'
//! business).

use std::sync::OnceLock;

use serde_json::{Value, json};

use super::text;

/// Kinds whose every initial object is held: a list of them is complete.
const HELD_KINDS: &[&str] = &["ClusterRoleBinding", "RoleBinding"];

/// The bootstrap, kubeadm and kind RBAC objects (`kind-state-rbac.yaml`).
fn system_rbac() -> &'static [Value] {
    static RBAC: OnceLock<Vec<Value>> = OnceLock::new();
    RBAC.get_or_init(|| {
        crate::yaml::parse_own_content(include_str!("kind-state-rbac.yaml"))
            .expect("kind-state-rbac.yaml is valid YAML (a unit test reads it)")
    })
}

fn is_binding(o: &Value) -> bool {
    matches!(
        text(o, "/kind").as_str(),
        "ClusterRoleBinding" | "RoleBinding"
    )
}

/// Whether `o` is of Kyverno's chart (its `app.kubernetes.io/part-of` label).
fn of_the_chart(o: &Value) -> bool {
    o.pointer("/metadata/labels/app.kubernetes.io~1part-of")
        .and_then(Value::as_str)
        == Some("kyverno")
}

/// The objects of a fresh cluster besides namespaces and Kyverno's own install: the
/// system's RBAC and the chart's bindings.
pub fn objects() -> impl Iterator<Item = Value> {
    let chart = crate::lab::offline::baseline_rbac()
        .iter()
        .filter(|o| is_binding(o) && of_the_chart(o));
    system_rbac()
        .iter()
        .chain(chart)
        .cloned()
        .chain(std::iter::once(control_plane_node()))
}

/// kind names a cluster's first control-plane node `<cluster>-control-plane`
/// (sigs.k8s.io/kind pkg/cluster/internal/create/actions/config); kubeadm and the
/// kubelet label it. The labels held are those every kind node image and
/// configuration of the suite gives it (a GitHub runner is amd64); the rest of the
/// object — its other labels, annotations, spec and the status the kubelet reports —
/// is not held, and the suite's configurations add other nodes (a worker).
fn control_plane_node() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "kind-control-plane",
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": "kind-control-plane",
                "kubernetes.io/os": "linux",
                "node-role.kubernetes.io/control-plane": "",
                "node.kubernetes.io/exclude-from-external-load-balancers": "",
            },
        },
    })
}

/// Why `obj` is held only in part (an assertion it does not satisfy, or a printing of
/// it, is then undecided): the Node, whose other fields kind, kubeadm and the kubelet
/// write.
pub fn partly_held(obj: &Value) -> Option<&'static str> {
    (text(obj, "/kind") == "Node" && text(obj, "/apiVersion") == "v1")
        .then_some("a Node's fields that kind, kubeadm and the kubelet write")
}

/// The roles the authorizer knows besides the cluster's objects: the chart's and the
/// built-in ones kind-config/baseline-rbac.yaml records (their bindings are the
/// cluster's objects, [`objects`]).
pub fn roles<'a>() -> impl Iterator<Item = &'a Value> {
    crate::lab::offline::baseline_rbac()
        .iter()
        .filter(|o| matches!(text(o, "/kind").as_str(), "ClusterRole" | "Role"))
}

/// Whether the cluster holds every object of `kind` it started with.
pub fn holds_all_initial(kind: &str) -> bool {
    HELD_KINDS.contains(&kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kind_state_parses_and_names_each_object_once() {
        let all: Vec<Value> = objects().collect();
        assert!(all.len() > 60);
        let mut keys: Vec<(String, String, String)> = all
            .iter()
            .map(|o| {
                (
                    text(o, "/kind"),
                    text(o, "/metadata/namespace"),
                    text(o, "/metadata/name"),
                )
            })
            .collect();
        let n = keys.len();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), n, "an object is listed twice");
        // The kubeconfig's admin group is bound to cluster-admin (kubeadm since v1.29).
        assert!(
            all.iter()
                .any(|o| text(o, "/metadata/name") == "kubeadm:cluster-admins"
                    && text(o, "/roleRef/name") == "cluster-admin")
        );
        // The chart's bindings are held.
        assert!(all.iter().any(
            |o| text(o, "/metadata/name") == "kyverno:background-controller"
                && text(o, "/kind") == "ClusterRoleBinding"
        ));
    }
}

//! `kubectl get TYPE` (no names) of a kind the replay does not hold every object of: the
//! list is the replay's when nothing in the scope makes more of them (a controller's
//! Pods in a namespace without workloads), or the replay's with the `kube-root-ca.crt`
//! ConfigMap kube-controller-manager publishes in every namespace
//! (pkg/controller/certificates/rootcacertpublisher/publisher.go: a name and an
//! annotation, the cluster's CA as `ca.crt`, no labels) when no policy may have changed
//! it; else a skip naming who makes the rest. What of that ConfigMap the replay cannot
//! know is [`UNKNOWN_VALUE`]: output showing it is unknown text.

use serde_json::{Value, json};

use super::Kubectl;
use crate::offline::conformance::cluster::{Key, text};
use crate::offline::conformance::controllers::Maker;
use crate::offline::vap::{self, CelPolicyOutcome};

/// A value of an object the replay models without knowing it (the CA bundle, the uid).
pub(super) const UNKNOWN_VALUE: &str = "<kca: a value the replay does not know>";

/// The ConfigMap kube-controller-manager publishes in each namespace.
const ROOT_CA: &str = "kube-root-ca.crt";

/// Workload kinds and the objects kube-controller-manager makes from them.
const WORKLOADS: &[(&str, &str)] = &[
    ("Deployment", "ReplicaSets, Pods"),
    ("ReplicaSet", "Pods"),
    ("StatefulSet", "Pods, ControllerRevisions"),
    ("DaemonSet", "Pods, ControllerRevisions"),
    ("Job", "Pods"),
    ("CronJob", "Jobs, Pods"),
    ("ReplicationController", "Pods"),
];

/// Kinds only workload controllers make.
const WORKLOAD_MADE: &[&str] = &["Pod", "ReplicaSet", "Job", "ControllerRevision"];

/// Namespaces a kind cluster with Kyverno runs its own workloads in (`default` starts
/// with objects the replay does not hold too: the `kubernetes` Service, its endpoints).
pub(in crate::offline::conformance::script) const SYSTEM_NAMESPACES: &[&str] = &[
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "kyverno",
    "local-path-storage",
];

/// What a list of `kind` in `namespace` (`""`: every namespace) is.
pub(in crate::offline::conformance::script) enum Listing {
    /// The replay holds every object of it.
    Held,
    /// The replay's objects and the ones a controller makes, known in part.
    With(Vec<Value>),
    /// A controller the replay does not run makes some.
    Made(Maker),
}

impl Kubectl<'_> {
    pub(in crate::offline::conformance::script) fn listing(
        &self,
        kind: &str,
        namespace: &str,
    ) -> Listing {
        if self.cluster_holds_all_of(kind) {
            return Listing::Held;
        }
        if WORKLOAD_MADE.contains(&kind) {
            if namespace == "kyverno" {
                return Listing::Made(Maker::Kyverno(format!("its own {kind}s")));
            }
            if namespace.is_empty() || SYSTEM_NAMESPACES.contains(&namespace) {
                return Listing::Made(Maker::Other(format!(
                    "{kind}s of the cluster's own and Kyverno's workloads"
                )));
            }
            let workload = self.cluster.objects.iter().find_map(|o: &Value| {
                let k = text(o, "/kind");
                (text(o, "/metadata/namespace") == namespace)
                    .then(|| WORKLOADS.iter().find(|(w, _)| *w == k))
                    .flatten()
            });
            return match workload {
                Some((from, makes)) => Listing::Made(Maker::KubeControllerManager {
                    from: from.to_string(),
                    makes: makes.to_string(),
                }),
                None => Listing::Held,
            };
        }
        if kind == "ConfigMap"
            && !namespace.is_empty()
            && !SYSTEM_NAMESPACES.contains(&namespace)
            && self.root_ca_unchanged(namespace)
        {
            let held = Key {
                group: String::new(),
                kind: "ConfigMap".into(),
                namespace: namespace.into(),
                name: ROOT_CA.into(),
            };
            return Listing::With(if self.cluster.find(&held).is_some() {
                Vec::new()
            } else {
                vec![root_ca(namespace)]
            });
        }
        Listing::Made(match kind {
            "ConfigMap" | "ServiceAccount" | "Secret" => Maker::KubeControllerManager {
                from: "Namespace".into(),
                makes: "kube-root-ca.crt, the default ServiceAccount".into(),
            },
            "UpdateRequest" => Maker::Kyverno("UpdateRequests".into()),
            other => Maker::Other(format!("{other}s of the cluster's components")),
        })
    }
}

/// `kube-root-ca.crt` in `namespace`, as published (what varies unknown).
fn root_ca(namespace: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": ROOT_CA, "namespace": namespace,
            "annotations": {"kubernetes.io/description": UNKNOWN_VALUE},
            "uid": UNKNOWN_VALUE, "resourceVersion": UNKNOWN_VALUE,
            "creationTimestamp": UNKNOWN_VALUE, "managedFields": UNKNOWN_VALUE},
        "data": {"ca.crt": UNKNOWN_VALUE}})
}

impl Kubectl<'_> {
    /// Whether no policy may have changed the namespace's `kube-root-ca.crt` (written
    /// once, never updated by the tests): none mutates existing objects but
    /// MutatingPolicies whose target rules do not select it.
    fn root_ca_unchanged(&self, namespace: &str) -> bool {
        if self
            .cluster
            .find(&Key {
                group: String::new(),
                kind: "Namespace".into(),
                namespace: String::new(),
                name: namespace.into(),
            })
            .is_none()
        {
            return false;
        }
        let object = root_ca(namespace);
        self.cluster.objects.iter().all(|p| {
            let kind = text(p, "/kind");
            match kind.as_str() {
                "ClusterPolicy" | "Policy" => {
                    !p.to_string().contains("\"targets\"")
                        && p.pointer("/spec/mutateExistingOnPolicyUpdate")
                            .and_then(Value::as_bool)
                            != Some(true)
                }
                "MutatingPolicy" | "NamespacedMutatingPolicy" => {
                    let existing = p
                        .pointer("/spec/evaluation/mutateExisting/enabled")
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                    if !existing {
                        return true;
                    }
                    let by_expression = p
                        .pointer("/spec/targetMatchConstraints/expression")
                        .and_then(Value::as_str)
                        .is_some_and(|e| !e.is_empty());
                    if p.pointer("/spec/targetMatchConstraints").is_none() || by_expression {
                        return false;
                    }
                    let req = self.cluster.vap_request(&object, None);
                    match vap::mutate_targets(p, None, vec![req]) {
                        CelPolicyOutcome::Applied(t) => t.is_empty(),
                        CelPolicyOutcome::NotMatched => true,
                        _ => false,
                    }
                }
                _ => true,
            }
        })
    }
}

//! `kubectl get TYPE` (no names) of a kind the replay does not hold every object of: the
//! list is the replay's when nothing in the scope makes more of them (a controller's
//! Pods in a namespace without workloads), else a skip naming who makes the rest.

use serde_json::Value;

use super::Kubectl;
use crate::offline::conformance::cluster::text;
use crate::offline::conformance::controllers::Maker;

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
const SYSTEM_NAMESPACES: &[&str] = &[
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "kyverno",
    "local-path-storage",
];

/// What a list of `kind` in `namespace` (`""`: every namespace) is.
pub(super) enum Listing {
    /// The replay holds every object of it.
    Held,
    /// A controller the replay does not run makes some.
    Made(Maker),
}

impl Kubectl<'_> {
    pub(super) fn listing(&self, kind: &str, namespace: &str) -> Listing {
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

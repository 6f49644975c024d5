//! What Kyverno's controllers and the API server's own controllers make of the objects a
//! test writes, done at once after each write (they are level-triggered: the result is a
//! function of the objects, not of the order of events):
//! - the admission-policy generator's ValidatingAdmissionPolicies and
//!   MutatingAdmissionPolicies with their bindings ([`admission`]), and garbage collection
//!   of those whose policy is gone (their owner reference);
//! - the status of policies and CRDs ([`status`]);
//! - policy reports, built from admission's results and a background scan when asserted
//!   ([`reports`]), and the events of their results ([`events`]);
//! - the webhook configurations Kyverno's webhook controller keeps, with their `webhooks`
//!   ([`webhooks`], their rules from [`webhook_rules`]); what of them is not modelled
//!   makes an assertion on them a controller skip ([`unmodelled_part`]).
//!
//! What truly needs a kube-controller-manager (a Deployment's Pods, scale status) is not
//! here; see [`super::Skip::Controller`].

pub mod admission;
pub mod cleanup;
pub mod cleanup_run;
pub mod deleting;
pub mod events;
pub mod filters;
pub mod install;
pub mod reports;
pub mod reports_cel;
pub mod reports_gpol;
mod reports_ivpol;
pub mod reports_list;
pub mod reports_mpol;
pub mod schedule;
pub mod status;
pub mod ttl;
pub mod webhook_rules;
pub mod webhooks;
mod webhooks_autogen;
mod webhooks_ivpol;
pub use webhooks_ivpol::validating_webhook_name;

use serde_json::{Value, json};

use super::cluster::{Cluster, Key, text};
use crate::offline::rbac::Authorizer;
use crate::offline::rbac::resource::Mapper;
use admission::{Generation, MANAGED_BY};

/// The Kyverno features of the suite's Helm configurations that change what the
/// controllers make (scripts/config/*/kyverno.yaml at v1.19.0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Features {
    /// `features.generateValidatingAdmissionPolicy` (on in the chart's defaults).
    pub generate_vap: bool,
    /// `features.generateMutatingAdmissionPolicy` (off by default; the
    /// `generate-mutating-admission-policy` configuration turns it on).
    pub generate_map: bool,
    /// `features.forceFailurePolicyIgnore` (the `force-failure-policy-ignore`
    /// configuration): every policy's webhook fails open.
    pub force_failure_ignore: bool,
    /// `features.reporting.allowedResults` (`--allowedResults`): only failures are
    /// reported under the `exclude-result` configuration, every status otherwise.
    pub report_only_failures: bool,
    /// The `ttl` configuration: the cleanup controller may also `watch` Pods, so its TTL
    /// controller acts on them (the standard one grants only `list` and `delete`).
    pub ttl_watches_pods: bool,
}

impl Default for Features {
    fn default() -> Self {
        Features {
            generate_vap: true,
            generate_map: false,
            force_failure_ignore: false,
            report_only_failures: false,
            ttl_watches_pods: false,
        }
    }
}

impl Features {
    /// The features a test's folder runs with (.github/workflows/tests-conformance.yaml
    /// names each area's configurations).
    pub fn for_test(dir: &std::path::Path) -> Features {
        let in_area = |area: &str| {
            dir.components()
                .any(|c| c.as_os_str().to_string_lossy().starts_with(area))
        };
        Features {
            generate_map: in_area("generate-mutating-admission-policy"),
            force_failure_ignore: in_area("force-failure-policy-ignore"),
            report_only_failures: in_area("reports-exclude-result"),
            ttl_watches_pods: dir.components().any(|c| c.as_os_str() == "ttl"),
            ..Features::default()
        }
    }
}

/// A controller the replay does not run, and what of it a test needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Maker {
    /// kube-controller-manager's workload controllers: what `from` makes (a Deployment's
    /// ReplicaSets and Pods, a workload's replica counts).
    KubeControllerManager { from: String, makes: String },
    /// The kubelet: a Pod's status (phase, conditions, container states).
    Kubelet,
    /// A Kyverno controller's work not modelled here (its UpdateRequests, its webhooks).
    Kyverno(String),
    /// Objects or status nothing in the replay makes and no known controller explains.
    Other(String),
}

/// Workload kinds and the objects their kube-controller-manager controllers make.
const WORKLOADS: &[(&str, &str)] = &[
    ("Deployment", "ReplicaSets, Pods"),
    ("ReplicaSet", "Pods"),
    ("StatefulSet", "Pods"),
    ("DaemonSet", "Pods"),
    ("Job", "Pods"),
    ("CronJob", "Jobs"),
    ("ReplicationController", "Pods"),
];

impl Maker {
    /// Who sets the `status` of a `kind` object that the replay does not model.
    pub fn of_status(kind: &str) -> Maker {
        if kind == "Pod" {
            return Maker::Kubelet;
        }
        if WORKLOADS.iter().any(|(k, _)| *k == kind) {
            return Maker::KubeControllerManager {
                from: kind.into(),
                makes: "status".into(),
            };
        }
        if super::is_policy_kind(kind) {
            return Maker::Kyverno(format!("parts of a {kind}'s status"));
        }
        Maker::Other(format!("status of {kind}"))
    }

    /// Who makes `kind` objects when the test wrote none.
    pub fn of_objects(kind: &str) -> Maker {
        if let Some((from, _)) = WORKLOADS
            .iter()
            .find(|(_, makes)| makes.split(", ").any(|m| m.trim_end_matches('s') == kind))
        {
            return Maker::KubeControllerManager {
                from: (*from).into(),
                makes: format!("{kind}s"),
            };
        }
        Maker::Other(format!("{kind} made by a controller"))
    }
}

impl std::fmt::Display for Maker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Maker::KubeControllerManager { from, makes } => {
                write!(f, "kube-controller-manager ({from} → {makes})")
            }
            Maker::Kubelet => f.write_str("kubelet (Pod status)"),
            Maker::Kyverno(what) => write!(f, "Kyverno ({what})"),
            Maker::Other(what) => f.write_str(what),
        }
    }
}

/// Kinds whose every object the replay knows — those the controllers here make, and
/// Namespaces (no controller makes one) — so an assertion on one is judged even when the
/// test wrote none.
pub fn makes(kind: &str) -> bool {
    matches!(
        kind,
        "Namespace"
            | "ValidatingAdmissionPolicy"
            | "ValidatingAdmissionPolicyBinding"
            | "MutatingAdmissionPolicy"
            | "MutatingAdmissionPolicyBinding"
            | "ValidatingWebhookConfiguration"
            | "MutatingWebhookConfiguration"
    )
}

/// Why an assertion on an object of `kind` asks for more than is modelled: the
/// `webhooks` of a webhook configuration whose webhooks [`webhooks::build`] cannot make
/// in full for `cluster`'s policies.
pub fn unmodelled_part(cluster: &Cluster, kind: &str, expected: &Value) -> Option<String> {
    if !kind.ends_with("WebhookConfiguration") || expected.get("webhooks").is_none() {
        return None;
    }
    let mapper = Mapper::built_in().with_crds(&cluster.objects);
    let built = webhooks::build(&cluster.objects, cluster.features, &mapper);
    let name = text(expected, "/metadata/name");
    built.unmodelled(&name).map(|why| format!("{why} ({name})"))
}

/// The objects a fresh cluster with Kyverno holds besides namespaces: its webhook
/// configurations and its ConfigMap, no policy yet.
pub fn initial_objects() -> Vec<Value> {
    let mut out = webhooks::build(&[], Features::default(), &Mapper::built_in()).configurations;
    out.extend(install::objects());
    out.extend(super::cluster::kindstate::objects());
    out
}

fn generated_kind(kind: &str) -> bool {
    matches!(
        kind,
        "ValidatingAdmissionPolicy"
            | "ValidatingAdmissionPolicyBinding"
            | "MutatingAdmissionPolicy"
            | "MutatingAdmissionPolicyBinding"
    )
}

fn managed_by_kyverno(o: &Value) -> bool {
    o.pointer("/metadata/labels")
        .and_then(|l| l.get(MANAGED_BY.0))
        .and_then(Value::as_str)
        == Some(MANAGED_BY.1)
}

/// Brings the cluster to what the controllers would make of its objects.
pub fn reconcile(cluster: &mut Cluster) {
    let features = cluster.features;
    let mapper = Mapper::built_in().with_crds(&cluster.objects);
    let mut desired: Vec<Value> = Vec::new();
    let mut verdicts: Vec<(Key, Option<(bool, String)>)> = Vec::new();
    for policy in &cluster.objects {
        let kind = text(policy, "/kind");
        let applies = match kind.as_str() {
            "ClusterPolicy" | "ValidatingPolicy" => features.generate_vap,
            // controller.go: without the global toggle only a policy that asks for it.
            "MutatingPolicy" => {
                features.generate_map
                    || policy
                        .pointer("/spec/autogen/mutatingAdmissionPolicy/enabled")
                        .and_then(Value::as_bool)
                        == Some(true)
            }
            _ => false,
        };
        let verdict = if applies {
            match admission::generate(policy, &cluster.objects, &mapper) {
                Generation::Untouched => None,
                Generation::Declined(m) => Some((false, m)),
                Generation::Made(objs) => {
                    desired.extend(objs);
                    Some((true, String::new()))
                }
            }
        } else {
            None
        };
        verdicts.push((Key::of(policy), verdict));
    }
    // Generated objects no policy wants any more are deleted (by the generator, or by
    // garbage collection once their owner is gone).
    let stale: Vec<Key> = cluster
        .objects
        .iter()
        .filter(|o| generated_kind(&text(o, "/kind")) && managed_by_kyverno(o))
        .filter(|o| !desired.iter().any(|d| Key::of(d) == Key::of(o)))
        .map(Key::of)
        .collect();
    for k in &stale {
        cluster.remove(k);
    }
    for d in desired {
        cluster.store(d);
    }
    // Only the policies.kyverno.io kinds have an RBAC condition.
    let cel = cluster.objects.iter().any(|o| {
        let av = text(o, "/apiVersion");
        av.starts_with("policies.kyverno.io/") && super::is_policy_kind(&text(o, "/kind"))
    });
    let reports = if cel {
        reports_authorizer(&cluster.objects)
    } else {
        Authorizer::new(&[])
    };
    for (key, verdict) in verdicts {
        set_status(cluster, &key, verdict, &reports);
    }
    let crds: Vec<Key> = cluster
        .objects
        .iter()
        .filter(|o| text(o, "/kind") == "CustomResourceDefinition")
        .map(Key::of)
        .collect();
    for key in crds {
        set_status(cluster, &key, None, &reports);
    }
    // The webhook controller, once the policies' status says which are left to
    // generated admission policies.
    let mapper = Mapper::built_in().with_crds(&cluster.objects);
    for c in webhooks::build(&cluster.objects, features, &mapper).configurations {
        cluster.store(c);
    }
}

/// The RBAC of a cluster with Kyverno's chart installed (kind-config/baseline-rbac.yaml:
/// the reports controller reads what the `view` role and its own roles allow) and the
/// roles the test applies.
fn reports_authorizer(objects: &[Value]) -> Authorizer {
    let mut all: Vec<Value> = crate::lab::offline::baseline_rbac().to_vec();
    all.extend(rbac_objects(objects).cloned());
    Authorizer::new(&all)
}

/// The RBAC objects among `objects` (roles and bindings a test applies).
pub fn rbac_objects(objects: &[Value]) -> impl Iterator<Item = &Value> {
    objects.iter().filter(|o| {
        matches!(
            text(o, "/kind").as_str(),
            "ClusterRole" | "ClusterRoleBinding" | "Role" | "RoleBinding"
        )
    })
}

/// `metadata.generation` as the API server keeps it: 1 when created, one more each time
/// the spec changes.
pub fn generation(old: Option<&Value>, new: &mut Value) {
    let next = match old {
        None => 1,
        Some(o) => {
            let g = o
                .pointer("/metadata/generation")
                .and_then(Value::as_u64)
                .unwrap_or(1);
            if o.get("spec") == new.get("spec") {
                g
            } else {
                g + 1
            }
        }
    };
    if let Some(m) = new.get_mut("metadata").and_then(Value::as_object_mut) {
        m.insert("generation".into(), json!(next));
    }
}

fn set_status(
    cluster: &mut Cluster,
    key: &Key,
    verdict: Option<(bool, String)>,
    reports: &Authorizer,
) {
    let Some(obj) = cluster.objects.iter_mut().find(|o| key.is_of(o)) else {
        return;
    };
    if let Some(s) = status::status(obj, verdict, reports)
        && let Some(m) = obj.as_object_mut()
    {
        m.insert("status".into(), s);
    }
}

/// Whether Kyverno's webhooks leave `policy` to a generated admission policy: a
/// ClusterPolicy or ValidatingPolicy whose ValidatingAdmissionPolicy was generated
/// (pkg/controllers/webhook/controller.go `getAllPolicies`, `getValidatingPolicies`).
pub fn left_to_generated(policy: &Value) -> bool {
    policy
        .pointer("/status/validatingadmissionpolicy/generated")
        .or_else(|| {
            (text(policy, "/kind") == "ValidatingPolicy")
                .then(|| policy.pointer("/status/generated"))
                .flatten()
        })
        .and_then(Value::as_bool)
        == Some(true)
}

#[cfg(test)]
mod tests;

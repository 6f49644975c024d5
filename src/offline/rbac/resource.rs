//! `TYPE` → API group and resource, as kubectl's REST mapper and shortcut expander resolve
//! it against a cluster's discovery data. Offline, "discovery" is a built-in table of the
//! Kubernetes 1.33 resources and Kyverno's (the course cluster runs Kyverno), plus any
//! CustomResourceDefinitions among the loaded manifests. No requests, no printing.

use serde_json::Value;

/// One discoverable resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiResource {
    pub group: String,
    pub plural: String,
    /// Lower-case kind, as discovery reports it.
    pub singular: String,
    /// The kind as written in objects (`NetworkPolicy`).
    pub kind: String,
    pub short_names: Vec<String>,
    pub namespaced: bool,
}

/// (group, plural, Kind, short names, namespaced). Core first: when a name is served by
/// two groups (`events`), kubectl prefers the legacy core group.
#[rustfmt::skip]
const BUILT_IN: &[(&str, &str, &str, &[&str], bool)] = &[
    ("", "bindings", "Binding", &[], true),
    ("", "componentstatuses", "ComponentStatus", &["cs"], false),
    ("", "configmaps", "ConfigMap", &["cm"], true),
    ("", "endpoints", "Endpoints", &["ep"], true),
    ("", "events", "Event", &["ev"], true),
    ("", "limitranges", "LimitRange", &["limits"], true),
    ("", "namespaces", "Namespace", &["ns"], false),
    ("", "nodes", "Node", &["no"], false),
    ("", "persistentvolumeclaims", "PersistentVolumeClaim", &["pvc"], true),
    ("", "persistentvolumes", "PersistentVolume", &["pv"], false),
    ("", "pods", "Pod", &["po"], true),
    ("", "podtemplates", "PodTemplate", &[], true),
    ("", "replicationcontrollers", "ReplicationController", &["rc"], true),
    ("", "resourcequotas", "ResourceQuota", &["quota"], true),
    ("", "secrets", "Secret", &[], true),
    ("", "serviceaccounts", "ServiceAccount", &["sa"], true),
    ("", "services", "Service", &["svc"], true),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicies", "MutatingAdmissionPolicy", &[], false),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings", "MutatingAdmissionPolicyBinding", &[], false),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", &[], false),
    ("admissionregistration.k8s.io", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", &[], false),
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", &[], false),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", &[], false),
    ("apiextensions.k8s.io", "customresourcedefinitions", "CustomResourceDefinition", &["crd", "crds"], false),
    ("apiregistration.k8s.io", "apiservices", "APIService", &[], false),
    ("apps", "controllerrevisions", "ControllerRevision", &[], true),
    ("apps", "daemonsets", "DaemonSet", &["ds"], true),
    ("apps", "deployments", "Deployment", &["deploy"], true),
    ("apps", "replicasets", "ReplicaSet", &["rs"], true),
    ("apps", "statefulsets", "StatefulSet", &["sts"], true),
    ("authentication.k8s.io", "selfsubjectreviews", "SelfSubjectReview", &[], false),
    ("authentication.k8s.io", "tokenreviews", "TokenReview", &[], false),
    ("authorization.k8s.io", "localsubjectaccessreviews", "LocalSubjectAccessReview", &[], true),
    ("authorization.k8s.io", "selfsubjectaccessreviews", "SelfSubjectAccessReview", &[], false),
    ("authorization.k8s.io", "selfsubjectrulesreviews", "SelfSubjectRulesReview", &[], false),
    ("authorization.k8s.io", "subjectaccessreviews", "SubjectAccessReview", &[], false),
    ("autoscaling", "horizontalpodautoscalers", "HorizontalPodAutoscaler", &["hpa"], true),
    ("batch", "cronjobs", "CronJob", &["cj"], true),
    ("batch", "jobs", "Job", &[], true),
    ("certificates.k8s.io", "certificatesigningrequests", "CertificateSigningRequest", &["csr"], false),
    ("coordination.k8s.io", "leases", "Lease", &[], true),
    ("discovery.k8s.io", "endpointslices", "EndpointSlice", &[], true),
    ("events.k8s.io", "events", "Event", &["ev"], true),
    ("flowcontrol.apiserver.k8s.io", "flowschemas", "FlowSchema", &[], false),
    ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations", "PriorityLevelConfiguration", &[], false),
    ("networking.k8s.io", "ingressclasses", "IngressClass", &[], false),
    ("networking.k8s.io", "ingresses", "Ingress", &["ing"], true),
    ("networking.k8s.io", "ipaddresses", "IPAddress", &["ip"], false),
    ("networking.k8s.io", "networkpolicies", "NetworkPolicy", &["netpol"], true),
    ("networking.k8s.io", "servicecidrs", "ServiceCIDR", &[], false),
    ("node.k8s.io", "runtimeclasses", "RuntimeClass", &[], false),
    ("policy", "poddisruptionbudgets", "PodDisruptionBudget", &["pdb"], true),
    // RBAC resources have no short names in Kubernetes: `kubectl get rb` is an error.
    ("rbac.authorization.k8s.io", "clusterrolebindings", "ClusterRoleBinding", &[], false),
    ("rbac.authorization.k8s.io", "clusterroles", "ClusterRole", &[], false),
    ("rbac.authorization.k8s.io", "rolebindings", "RoleBinding", &[], true),
    ("rbac.authorization.k8s.io", "roles", "Role", &[], true),
    ("scheduling.k8s.io", "priorityclasses", "PriorityClass", &["pc"], false),
    ("storage.k8s.io", "csidrivers", "CSIDriver", &[], false),
    ("storage.k8s.io", "csinodes", "CSINode", &[], false),
    ("storage.k8s.io", "csistoragecapacities", "CSIStorageCapacity", &[], true),
    ("storage.k8s.io", "storageclasses", "StorageClass", &["sc"], false),
    ("storage.k8s.io", "volumeattachments", "VolumeAttachment", &[], false),
    // Kyverno's CRDs, as its Helm chart installs them.
    ("kyverno.io", "cleanuppolicies", "CleanupPolicy", &["cleanpol"], true),
    ("kyverno.io", "clustercleanuppolicies", "ClusterCleanupPolicy", &["ccleanpol"], false),
    ("kyverno.io", "clusterpolicies", "ClusterPolicy", &["cpol"], false),
    ("kyverno.io", "globalcontextentries", "GlobalContextEntry", &["gctxentry"], false),
    ("kyverno.io", "policies", "Policy", &["pol"], true),
    ("kyverno.io", "policyexceptions", "PolicyException", &["polex"], true),
    ("kyverno.io", "updaterequests", "UpdateRequest", &["ur"], true),
    // config/crds/policies.kyverno.io at v1.19.0.
    ("policies.kyverno.io", "deletingpolicies", "DeletingPolicy", &["dpol"], false),
    ("policies.kyverno.io", "generatingpolicies", "GeneratingPolicy", &["gpol"], false),
    ("policies.kyverno.io", "imagevalidatingpolicies", "ImageValidatingPolicy", &["ivpol"], false),
    ("policies.kyverno.io", "mutatingpolicies", "MutatingPolicy", &["mpol"], false),
    ("policies.kyverno.io", "namespaceddeletingpolicies", "NamespacedDeletingPolicy", &["ndpol"], true),
    ("policies.kyverno.io", "namespacedgeneratingpolicies", "NamespacedGeneratingPolicy", &["ngpol"], true),
    ("policies.kyverno.io", "namespacedimagevalidatingpolicies", "NamespacedImageValidatingPolicy", &["nivpol"], true),
    ("policies.kyverno.io", "namespacedmutatingpolicies", "NamespacedMutatingPolicy", &["nmpol"], true),
    ("policies.kyverno.io", "namespacedvalidatingpolicies", "NamespacedValidatingPolicy", &["nvpol"], true),
    ("policies.kyverno.io", "policyexceptions", "PolicyException", &[], true),
    ("policies.kyverno.io", "validatingpolicies", "ValidatingPolicy", &["vpol"], false),
    ("reports.kyverno.io", "clusterephemeralreports", "ClusterEphemeralReport", &["cephrep"], false),
    ("reports.kyverno.io", "ephemeralreports", "EphemeralReport", &["ephrep"], true),
    ("wgpolicyk8s.io", "clusterpolicyreports", "ClusterPolicyReport", &["cpolr"], false),
    ("wgpolicyk8s.io", "policyreports", "PolicyReport", &["polr"], true),
];

/// The discovery data a type is resolved against.
#[derive(Debug, Clone)]
pub struct Mapper {
    resources: Vec<ApiResource>,
}

impl Default for Mapper {
    fn default() -> Self {
        Mapper::built_in()
    }
}

impl Mapper {
    pub fn built_in() -> Mapper {
        let resources = BUILT_IN
            .iter()
            .map(|(group, plural, kind, shorts, namespaced)| ApiResource {
                group: group.to_string(),
                plural: plural.to_string(),
                singular: kind.to_lowercase(),
                kind: kind.to_string(),
                short_names: shorts.iter().map(|s| s.to_string()).collect(),
                namespaced: *namespaced,
            })
            .collect();
        Mapper { resources }
    }

    /// Adds the resources that CustomResourceDefinitions among `objects` serve, as the
    /// cluster's discovery would once they are applied. Entries already known are kept.
    pub fn with_crds(mut self, objects: &[Value]) -> Mapper {
        for o in objects {
            if o.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition") {
                continue;
            }
            let spec = o.get("spec").unwrap_or(&Value::Null);
            let names = spec.get("names").unwrap_or(&Value::Null);
            let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
            let (Some(group), Some(plural)) = (s(spec, "group"), s(names, "plural")) else {
                continue;
            };
            let kind = s(names, "kind").unwrap_or_default();
            let singular = s(names, "singular").unwrap_or_else(|| kind.to_lowercase());
            let short_names = names
                .get("shortNames")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            if self
                .resources
                .iter()
                .any(|r| r.group == group && r.plural == plural)
            {
                continue;
            }
            self.resources.push(ApiResource {
                namespaced: s(spec, "scope").as_deref() != Some("Cluster"),
                group,
                plural,
                singular,
                kind,
                short_names,
            });
        }
        self
    }

    /// Resolves a kubectl `TYPE` (case-insensitive): `*`; a plural, singular or Kind;
    /// a short name; any of those with `.group` or `.version.group`. Short names also
    /// accept a prefix of their group (`hpa.autoscal`), as kubectl's expander does.
    /// `None` when discovery has no such type.
    pub fn resolve(&self, ty: &str) -> Option<&ApiResource> {
        let ty = ty.to_lowercase();
        // `resource.version.group`: kubectl tries this reading first when it can.
        if let Some((resource, rest)) = ty.split_once('.')
            && let Some((version, group)) = rest.split_once('.')
            && is_version(version)
            && let Some(r) = self.find_name(resource, Some(group))
        {
            return Some(r);
        }
        let (resource, group) = match ty.split_once('.') {
            Some((r, g)) => (r, Some(g)),
            None => (ty.as_str(), None),
        };
        if let Some(r) = self.find_name(resource, group) {
            return Some(r);
        }
        if let Some(r) = self.resources.iter().find(|r| {
            group.is_none_or(|g| g == r.group) && r.short_names.iter().any(|s| s == resource)
        }) {
            return Some(r);
        }
        let group = group?;
        self.resources
            .iter()
            .find(|r| r.group.starts_with(group) && r.short_names.iter().any(|s| s == resource))
    }

    fn find_name(&self, name: &str, group: Option<&str>) -> Option<&ApiResource> {
        self.resources.iter().find(|r| {
            group.is_none_or(|g| g == r.group) && (r.plural == name || r.singular == name)
        })
    }

    /// The resource that serves `kind` in the group of `api_version` (`networking.k8s.io/v1`,
    /// `NetworkPolicy` → `networkpolicies`), as a REST mapper resolves a GVK: the one
    /// kind → resource resolver for every offline caller. `None` when discovery has no
    /// such kind (the API server would answer "no matches for kind").
    pub fn for_kind(&self, api_version: &str, kind: &str) -> Option<&ApiResource> {
        let group = group_of(api_version);
        self.resources
            .iter()
            .find(|r| r.group == group && r.kind == kind)
    }

    /// [`Mapper::for_kind`] for a kind without a known group (Kyverno's `match.kinds: [Pod]`):
    /// the first group serving it, core first.
    pub fn for_bare_kind(&self, kind: &str) -> Option<&ApiResource> {
        self.resources.iter().find(|r| r.kind == kind)
    }

    /// Every resource discovery serves (what a webhook controller resolves kinds against).
    pub fn resources(&self) -> &[ApiResource] {
        &self.resources
    }

    /// Whether `plural` in `group` is namespaced; `None` when unknown.
    pub fn namespaced(&self, group: &str, plural: &str) -> Option<bool> {
        self.resources
            .iter()
            .find(|r| r.group == group && r.plural == plural)
            .map(|r| r.namespaced)
    }
}

/// The resource (plural) that serves `kind` in `api_version`'s group: the built-in
/// discovery table (for an empty `api_version`, the first group serving the kind), then
/// CustomResourceDefinitions among `objects`, and for a kind neither knows, the guess
/// Kubernetes' own fake REST mapper makes (`meta.UnsafeGuessKindToResource`: lower case,
/// `y` → `ies`, `s`/`x`/`ch`/`sh` → `…es`), which is what Kyverno's CLI resolves with. The
/// one kind → resource resolver of the offline engines (the live target asks the server's
/// discovery, after this table).
pub fn resource_for_kind(api_version: &str, kind: &str, objects: &[Value]) -> String {
    static BUILT_IN_MAPPER: std::sync::OnceLock<Mapper> = std::sync::OnceLock::new();
    let built_in = BUILT_IN_MAPPER.get_or_init(Mapper::built_in);
    let known = if api_version.is_empty() {
        built_in.for_bare_kind(kind)
    } else {
        built_in.for_kind(api_version, kind)
    };
    if let Some(r) = known {
        return r.plural.clone();
    }
    if !objects.is_empty() {
        let crds = Mapper {
            resources: Vec::new(),
        }
        .with_crds(objects);
        if let Some(r) = crds.for_kind(api_version, kind) {
            return r.plural.clone();
        }
    }
    guess_resource(kind)
}

/// [`resource_for_kind`] without objects to read CRDs from.
pub fn plural_of(api_version: &str, kind: &str) -> String {
    resource_for_kind(api_version, kind, &[])
}

/// `meta.UnsafeGuessKindToResource` of k8s.io/apimachinery (which leaves `endpoints`
/// alone), and the metrics kinds that are their own plural.
fn guess_resource(kind: &str) -> String {
    let k = kind.to_lowercase();
    if k == "endpoints" || k.ends_with("metrics") {
        k
    } else if k.ends_with('s') || k.ends_with('x') || k.ends_with("ch") || k.ends_with("sh") {
        format!("{k}es")
    } else if let Some(stem) = k.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'i', 'o', 'u'])
    {
        format!("{stem}ies")
    } else {
        format!("{k}s")
    }
}

/// The API group of an `apiVersion`: `apps/v1` → `apps`, `v1` → `` (core).
pub fn group_of(api_version: &str) -> &str {
    api_version
        .rsplit_once('/')
        .map(|(group, _)| group)
        .unwrap_or("")
}

/// `v1`, `v2beta1`, `v1alpha3`: the shape of a Kubernetes API version.
fn is_version(s: &str) -> bool {
    let Some(rest) = s.strip_prefix('v') else {
        return false;
    };
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 {
        return false;
    }
    let tail = &rest[digits..];
    tail.is_empty()
        || ["alpha", "beta"].iter().any(|stage| {
            tail.strip_prefix(stage)
                .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        })
}

/// kubectl-style type resolution against the built-in discovery table:
/// `deploy` → `("apps", "deployments")`, `*` → `("", "*")`; `None` for unknown types
/// (kubectl then warns and uses the type exactly as given, with no group).
pub fn resolve_resource(ty: &str) -> Option<(String, String)> {
    if ty == "*" {
        return Some((String::new(), "*".into()));
    }
    Mapper::built_in()
        .resolve(ty)
        .map(|r| (r.group.clone(), r.plural.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resource_for_kind_uses_discovery_then_crds_then_the_guess() {
        assert_eq!(
            resource_for_kind("networking.k8s.io/v1", "NetworkPolicy", &[]),
            "networkpolicies"
        );
        assert_eq!(resource_for_kind("v1", "Endpoints", &[]), "endpoints");
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "spec": {"group": "x.io", "scope": "Namespaced",
                     "names": {"plural": "gizmata", "kind": "Gizmo"}}});
        assert_eq!(resource_for_kind("x.io/v1", "Gizmo", &[crd]), "gizmata");
        assert_eq!(
            resource_for_kind("x.io/v1", "ComputeClass", &[]),
            "computeclasses"
        );
        assert_eq!(resource_for_kind("x.io/v1", "Policy", &[]), "policies");
    }

    #[test]
    fn resolve_table() {
        #[rustfmt::skip]
        let cases: &[(&str, Option<(&str, &str)>)] = &[
            ("*", Some(("", "*"))),
            ("pods", Some(("", "pods"))),
            ("pod", Some(("", "pods"))),
            ("Pod", Some(("", "pods"))),
            ("po", Some(("", "pods"))),
            ("PODS", Some(("", "pods"))),
            ("deploy", Some(("apps", "deployments"))),
            ("Deployment", Some(("apps", "deployments"))),
            ("deployments.apps", Some(("apps", "deployments"))),
            ("deployments.v1.apps", Some(("apps", "deployments"))),
            ("deploy.apps", Some(("apps", "deployments"))),
            ("cm", Some(("", "configmaps"))),
            ("sa", Some(("", "serviceaccounts"))),
            ("ns", Some(("", "namespaces"))),
            ("events", Some(("", "events"))),
            ("events.events.k8s.io", Some(("events.k8s.io", "events"))),
            ("hpa.autoscal", Some(("autoscaling", "horizontalpodautoscalers"))),
            ("jobs.batch", Some(("batch", "jobs"))),
            ("rolebindings", Some(("rbac.authorization.k8s.io", "rolebindings"))),
            ("ClusterRoleBinding", Some(("rbac.authorization.k8s.io", "clusterrolebindings"))),
            ("clusterpolicies.kyverno.io", Some(("kyverno.io", "clusterpolicies"))),
            ("cpol", Some(("kyverno.io", "clusterpolicies"))),
            ("ClusterPolicy", Some(("kyverno.io", "clusterpolicies"))),
            ("polr", Some(("wgpolicyk8s.io", "policyreports"))),
            ("crd", Some(("apiextensions.k8s.io", "customresourcedefinitions"))),
            // kubectl has no short names for RBAC resources.
            ("rb", None),
            ("crb", None),
            ("deployments.batch", None),
            ("widgets", None),
            ("widgets.example.com", None),
        ];
        for (ty, want) in cases {
            let got = resolve_resource(ty);
            let want = want.map(|(g, r)| (g.to_string(), r.to_string()));
            assert_eq!(got, want, "{ty}");
        }
    }

    #[test]
    fn crds_extend_discovery() {
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "spec": {"group": "example.com", "scope": "Cluster",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]}}
        });
        let m = Mapper::built_in().with_crds(&[crd]);
        for ty in [
            "widgets",
            "Widget",
            "wd",
            "widgets.example.com",
            "widgets.v1.example.com",
        ] {
            let r = m.resolve(ty).unwrap_or_else(|| panic!("{ty}"));
            assert_eq!(
                (r.group.as_str(), r.plural.as_str()),
                ("example.com", "widgets")
            );
        }
        assert_eq!(m.namespaced("example.com", "widgets"), Some(false));
    }

    #[test]
    fn namespaced_flags() {
        let m = Mapper::built_in();
        assert_eq!(m.namespaced("", "nodes"), Some(false));
        assert_eq!(m.namespaced("", "pods"), Some(true));
        assert_eq!(m.namespaced("", "widgets"), None);
    }

    #[test]
    fn versions() {
        for (s, want) in [
            ("v1", true),
            ("v2beta1", true),
            ("v1alpha3", true),
            ("v1beta", false),
            ("apps", false),
            ("v", false),
        ] {
            assert_eq!(is_version(s), want, "{s}");
        }
    }
}

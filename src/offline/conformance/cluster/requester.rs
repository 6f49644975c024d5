//! Who a request comes from: the test's `kubectl` acts as the cluster's admin unless it
//! impersonates someone (`--as`, `--as-group`). The API server then authorizes the write
//! as that user before admission (RBAC over the cluster's bindings), and Kyverno sees
//! that user: its webhooks add the user's roles and cluster roles
//! (pkg/webhooks/handlers/enrich.go `withRoles`, pkg/userinfo/roleRef.go `GetRoleRef`),
//! and requests from its own background controller skip the policies that skip
//! background requests (pkg/webhooks/resource/utils.go `skipBackgroundRequests`,
//! pkg/webhooks/resource/{gpol,mpol}/handler.go).

use serde_json::Value;
#[cfg(test)]
use serde_json::json;

use super::{Answer, Cluster, text};
use crate::offline::kyverno;
use crate::offline::kyverno::validation::BACKGROUND_SA;
use crate::offline::rbac::resource::ApiResource;
use crate::offline::rbac::{self, AccessRequest};
use crate::offline::vap;

/// The user and groups the API server authenticated (or impersonated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requester {
    pub username: String,
    pub groups: Vec<String>,
}

/// The group of the admin kubeconfig kubeadm writes since v1.29 (cmd/kubeadm/app/phases/
/// kubeconfig: the client certificate's organization; bound to `cluster-admin` by the
/// `kubeadm:cluster-admins` ClusterRoleBinding, kind-state-rbac.yaml), no longer
/// `system:masters`.
const KIND_ADMIN_GROUP: &str = "kubeadm:cluster-admins";

impl Default for Requester {
    /// The kubeconfig's user of a kind cluster.
    fn default() -> Requester {
        Requester {
            username: "kubernetes-admin".into(),
            groups: vec![KIND_ADMIN_GROUP.into(), rbac::AUTHENTICATED.into()],
        }
    }
}

impl Requester {
    /// `kubectl --as USER [--as-group G]…`: what the API server's impersonation filter
    /// makes of it (service-account groups, `system:authenticated`).
    pub fn impersonating(user: &str, groups: &[String]) -> Requester {
        let (username, groups) = rbac::impersonated(user, groups);
        Requester { username, groups }
    }

    /// Kyverno's background controller, by the name Kyverno compares
    /// (`--backgroundServiceAccountName`).
    pub fn is_background_controller(&self) -> bool {
        self.username == BACKGROUND_SA
    }
}

/// One binding subject names the user (pkg/userinfo/roleRef.go `matchBindingSubjects`):
/// a ServiceAccount by its user name (a RoleBinding's namespace when the subject has
/// none), a Group among the user's groups, a User by name.
fn names_user(binding: &Value, who: &Requester) -> bool {
    let own_ns = text(binding, "/metadata/namespace");
    binding
        .get("subjects")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|s| {
            let name = text(s, "/name");
            match text(s, "/kind").as_str() {
                "ServiceAccount" => {
                    let ns = match text(s, "/namespace") {
                        ns if ns.is_empty() => own_ns.clone(),
                        ns => ns,
                    };
                    !ns.is_empty() && who.username == format!("system:serviceaccount:{ns}:{name}")
                }
                "Group" => who.groups.contains(&name),
                "User" => who.username == name,
                _ => false,
            }
        })
}

/// The user's roles (`NS:NAME`) and cluster roles, as Kyverno's webhook finds them for a
/// request in `namespace` (pkg/userinfo/roleRef.go `GetRoleRef`): a RoleBinding's
/// ClusterRole counts only in the request's namespace; both lists sorted, without
/// duplicates.
pub(super) fn role_refs<'a>(
    bindings: impl Iterator<Item = &'a Value>,
    who: &Requester,
    namespace: &str,
) -> (Vec<String>, Vec<String>) {
    let (mut roles, mut cluster_roles) = (Vec::new(), Vec::new());
    for b in bindings {
        let kind = text(b, "/kind");
        if !matches!(kind.as_str(), "RoleBinding" | "ClusterRoleBinding") || !names_user(b, who) {
            continue;
        }
        let (ref_kind, ref_name) = (text(b, "/roleRef/kind"), text(b, "/roleRef/name"));
        match (kind.as_str(), ref_kind.as_str()) {
            ("RoleBinding", "Role") => {
                roles.push(format!("{}:{ref_name}", text(b, "/metadata/namespace")))
            }
            ("RoleBinding", "ClusterRole") if text(b, "/metadata/namespace") == namespace => {
                cluster_roles.push(ref_name)
            }
            ("ClusterRoleBinding", "ClusterRole") => cluster_roles.push(ref_name),
            _ => {}
        }
    }
    for list in [&mut roles, &mut cluster_roles] {
        list.sort();
        list.dedup();
    }
    (roles, cluster_roles)
}

impl Cluster {
    /// Every RoleBinding and ClusterRoleBinding the cluster holds (the system's and the
    /// chart's from the start, kindstate.rs, and the test's), with the roles it knows.
    fn all_bindings(&self) -> impl Iterator<Item = &Value> {
        super::kindstate::roles().chain(super::super::controllers::rbac_objects(&self.objects))
    }

    /// The requester as Kyverno's webhook sees it for a request in `namespace`.
    pub(crate) fn user_info(&self, namespace: &str) -> kyverno::UserInfo {
        self.user_info_of(&self.requester, namespace)
    }

    /// Whether a write comes from Kyverno's background controller: its own (a generated
    /// object admitted) or one a test makes as it (`--as`).
    pub(super) fn background_writes(&self, writer: super::Writer) -> bool {
        writer == super::Writer::Background || self.requester.is_background_controller()
    }

    /// A MutatingPolicy or GeneratingPolicy the current request skips: it comes from
    /// Kyverno's background controller and the policy's `evaluation.skipBackgroundRequests`
    /// is not false (the default skips).
    pub(super) fn skips_cel_policy(&self, policy: &Value) -> bool {
        self.requester.is_background_controller()
            && policy
                .pointer("/spec/evaluation/skipBackgroundRequests")
                .and_then(Value::as_bool)
                .unwrap_or(true)
    }

    /// `who` as Kyverno's webhook sees them for a request in `namespace`.
    pub(super) fn user_info_of(&self, who: &Requester, namespace: &str) -> kyverno::UserInfo {
        let (roles, cluster_roles) = role_refs(self.all_bindings(), who, namespace);
        kyverno::UserInfo {
            username: who.username.clone(),
            groups: who.groups.clone(),
            roles,
            cluster_roles,
        }
    }

    /// The requester as a CEL policy's `request.userInfo`.
    pub(crate) fn vap_user(&self) -> vap::VapUser {
        vap::VapUser {
            username: self.requester.username.clone(),
            groups: self.requester.groups.clone(),
            ..Default::default()
        }
    }

    /// The API server's authorization of the requester's `verb` on `obj` (its
    /// `subresource`, if any), before admission: the RBAC refusal as kubectl shows it
    /// (k8s.io/apiserver endpoints/handlers/responsewriters `forbiddenMessage`).
    pub(crate) fn authorize(
        &self,
        verb: &str,
        obj: &Value,
        subresource: &str,
    ) -> Result<(), Answer> {
        if self.requester == Requester::default() {
            return Ok(());
        }
        let (av, kind) = (text(obj, "/apiVersion"), text(obj, "/kind"));
        let mapper = self.mapper();
        let Some(r) = mapper.for_kind(&av, &kind) else {
            return Err(Answer::Undecidable(super::Skip::Operation(format!(
                "authorizing {verb} of kind {kind} (not served)"
            ))));
        };
        // The request's attributes as the API server's RequestInfo parses its path
        // (k8s.io/apiserver pkg/endpoints/request/requestinfo.go): a create posts to the
        // collection (no name) unless it is of a subresource of a named object
        // (`pods/NAME/eviction`, `pods/NAME/exec`); a path through `namespaces/NAME`
        // is in that namespace, the Namespace's own included.
        let name = if verb == "create" && subresource.is_empty() {
            String::new()
        } else {
            text(obj, "/metadata/name")
        };
        let namespace = if r.namespaced {
            text(obj, "/metadata/namespace")
        } else {
            String::new()
        };
        self.authorize_request(verb, r, subresource, &namespace, &name)
    }

    /// The API server's authorization of the requester's read (`get` of `name`, `list`
    /// or `watch` without one) of resource `r` in `namespace` (`""`: cluster-wide), as
    /// kubectl sends it: the refusal is the API server's Forbidden text
    /// (k8s.io/apiserver endpoints/handlers/responsewriters/errors.go `forbiddenMessage`,
    /// k8s.io/apimachinery api/errors `NewForbidden`).
    pub(crate) fn authorize_read(
        &self,
        verb: &str,
        r: &ApiResource,
        namespace: &str,
        name: &str,
    ) -> Result<(), Answer> {
        if self.requester == Requester::default() {
            return Ok(());
        }
        let namespace = if r.namespaced { namespace } else { "" };
        self.authorize_request(verb, r, "", namespace, name)
    }

    /// RBAC over one request's attributes; a path through `namespaces/NAME` (the
    /// Namespace's own) is in that namespace.
    fn authorize_request(
        &self,
        verb: &str,
        r: &ApiResource,
        subresource: &str,
        namespace: &str,
        name: &str,
    ) -> Result<(), Answer> {
        let namespace = if !r.namespaced && r.group.is_empty() && r.plural == "namespaces" {
            name.to_string()
        } else {
            namespace.to_string()
        };
        let req = AccessRequest {
            user: self.requester.username.clone(),
            groups: self.requester.groups.clone(),
            verb: verb.into(),
            api_group: r.group.clone(),
            resource: r.plural.clone(),
            subresource: subresource.into(),
            namespace: namespace.clone(),
            name: name.to_string(),
            non_resource_path: None,
        };
        if self.kyverno_authorizer().authorize(&req).allowed {
            return Ok(());
        }
        let qualified = if r.group.is_empty() {
            r.plural.clone()
        } else {
            format!("{}.{}", r.plural, r.group)
        };
        let resource = if subresource.is_empty() {
            r.plural.clone()
        } else {
            format!("{}/{subresource}", r.plural)
        };
        let what = if name.is_empty() {
            qualified
        } else {
            format!("{qualified} \"{name}\"")
        };
        let scope = if namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace \"{namespace}\"")
        };
        Err(Answer::Refused(format!(
            "{what} is forbidden: User \"{}\" cannot {verb} resource \"{resource}\" in API group \"{}\" {scope}",
            self.requester.username, r.group
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rb(kind: &str, ns: &str, role_kind: &str, role: &str, subjects: Value) -> Value {
        let mut meta = json!({"name": format!("{kind}-{role}")});
        if !ns.is_empty() {
            meta["namespace"] = json!(ns);
        }
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
            "subjects": subjects})
    }

    #[test]
    fn roles_are_found_as_kyverno_finds_them() {
        let chip = Requester::impersonating("chip", &["mygroup".to_string()]);
        let bindings = [
            rb(
                "RoleBinding",
                "qa",
                "ClusterRole",
                "chip",
                json!([{"kind": "User", "name": "chip"}]),
            ),
            rb(
                "RoleBinding",
                "qa",
                "Role",
                "special",
                json!([{"kind": "User", "name": "chip"}]),
            ),
            rb(
                "RoleBinding",
                "other",
                "ClusterRole",
                "elsewhere",
                json!([{"kind": "User", "name": "chip"}]),
            ),
            rb(
                "ClusterRoleBinding",
                "",
                "ClusterRole",
                "grouped",
                json!([{"kind": "Group", "name": "mygroup"}]),
            ),
            rb(
                "ClusterRoleBinding",
                "",
                "ClusterRole",
                "not-mine",
                json!([{"kind": "User", "name": "ned"}]),
            ),
        ];
        let mut all: Vec<Value> = super::super::kindstate::objects().collect();
        all.extend(bindings);
        let (roles, cluster_roles) = role_refs(all.iter(), &chip, "qa");
        assert_eq!(roles, vec!["qa:special".to_string()]);
        assert_eq!(
            cluster_roles,
            [
                "chip",
                "grouped",
                "system:basic-user",
                "system:discovery",
                "system:public-info-viewer"
            ]
            .map(String::from)
            .to_vec()
        );
    }

    #[test]
    fn a_service_account_subject_takes_the_binding_namespace() {
        let sa = Requester::impersonating("system:serviceaccount:default:robot", &[]);
        assert!(
            sa.groups
                .contains(&"system:serviceaccounts:default".to_string())
        );
        let b = rb(
            "RoleBinding",
            "default",
            "Role",
            "r",
            json!([{"kind": "ServiceAccount", "name": "robot"}]),
        );
        assert_eq!(
            role_refs([b].iter(), &sa, "default").0,
            vec!["default:r".to_string()]
        );
    }

    #[test]
    fn an_impersonated_write_is_authorized_first() {
        let mut c = Cluster::new("default");
        c.requester = Requester::impersonating("nancy", &[]);
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}});
        match c.authorize("create", &ns, "") {
            Err(Answer::Refused(m)) => assert_eq!(
                m,
                "namespaces is forbidden: User \"nancy\" cannot create resource \"namespaces\" in API group \"\" at the cluster scope"
            ),
            other => panic!("{other:?}"),
        }
        c.requester = Requester::default();
        assert!(c.authorize("create", &ns, "").is_ok());
    }

    #[test]
    fn a_refused_requester_is_told_forbidden_before_not_found() {
        let mut c = Cluster::new("default");
        c.requester = Requester::impersonating("nancy", &[]);
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "missing"}, "spec": {}});
        for create_only in [true, false] {
            match c.apply(&pod, create_only) {
                Answer::Refused(m) => assert!(
                    m.starts_with("pods is forbidden") || m.starts_with("pods \"p\" is forbidden"),
                    "{m}"
                ),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn a_named_request_is_refused_with_its_name_and_namespace() {
        let mut c = Cluster::new("default");
        c.requester = Requester::impersonating("nancy", &[]);
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}});
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "x"}});
        let refused = |r: Result<(), Answer>| match r {
            Err(Answer::Refused(m)) => m,
            other => panic!("{other:?}"),
        };
        // A path through `namespaces/x` is in the namespace x.
        assert_eq!(
            refused(c.authorize("delete", &ns, "")),
            "namespaces \"x\" is forbidden: User \"nancy\" cannot delete resource \"namespaces\" in API group \"\" in the namespace \"x\""
        );
        // A create of a named object's subresource names the object.
        assert_eq!(
            refused(c.authorize("create", &pod, "eviction")),
            "pods \"p\" is forbidden: User \"nancy\" cannot create resource \"pods/eviction\" in API group \"\" in the namespace \"x\""
        );
        assert_eq!(
            refused(c.authorize("create", &pod, "")),
            "pods is forbidden: User \"nancy\" cannot create resource \"pods\" in API group \"\" in the namespace \"x\""
        );
        // A RoleBinding in the namespace x grants access to the Namespace x itself.
        c.store(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "nancy", "namespace": "x"},
            "subjects": [{"kind": "User", "name": "nancy"}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"}}));
        assert!(c.authorize("get", &ns, "").is_ok());
    }

    #[test]
    fn the_background_controller_is_known_by_name() {
        let bg = Requester::impersonating(BACKGROUND_SA, &[]);
        assert!(bg.is_background_controller());
        assert!(!Requester::default().is_background_controller());
    }
}

//! What Kyverno's background controller may do in the cluster being modelled: generate
//! runs only as far as its RBAC allows (read the clone source, read and create the
//! target), and a refusal is reported the way the controller records it on the failed
//! UpdateRequest (`pkg/background/generate`: `rule NAME failed: …`), with the API
//! server's "forbidden" wording. Pure: an RBAC [`Authorizer`] and a discovery [`Mapper`].

use serde_json::Value;

use super::validation::BACKGROUND_SA;
use crate::offline::rbac::resource::Mapper;
use crate::offline::rbac::{AccessRequest, Authorizer, impersonated};

/// The background controller's view of the cluster's RBAC.
#[derive(Debug, Clone)]
pub struct Access {
    authorizer: Authorizer,
    mapper: Mapper,
}

/// A generate rule whose objects the background controller could not (all) produce: what
/// its failed UpdateRequest says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedRequest {
    pub policy: String,
    pub rule: String,
    /// The UpdateRequest's status message.
    pub message: String,
}

impl Access {
    /// Over every object of the cluster (baseline RBAC included); CRDs among them extend
    /// discovery.
    pub fn new(objects: &[Value]) -> Access {
        Access {
            authorizer: Authorizer::new(objects),
            mapper: Mapper::built_in().with_crds(objects),
        }
    }

    pub fn authorizer(&self) -> &Authorizer {
        &self.authorizer
    }

    pub fn mapper(&self) -> &Mapper {
        &self.mapper
    }

    /// `None` when the controller may `verb` the object; else the API server's refusal.
    pub fn refusal(
        &self,
        verb: &str,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Option<String> {
        let found = if api_version.is_empty() {
            self.mapper.for_bare_kind(kind)
        } else {
            self.mapper.for_kind(api_version, kind)
        };
        let Some(resource) = found else {
            return Some(format!(
                "no matches for kind \"{kind}\" in version \"{api_version}\""
            ));
        };
        let (user, groups) = impersonated(BACKGROUND_SA, &[]);
        let decision = self.authorizer.authorize(&AccessRequest {
            user: user.clone(),
            groups,
            verb: verb.to_string(),
            api_group: resource.group.clone(),
            resource: resource.plural.clone(),
            namespace: namespace.to_string(),
            name: name.to_string(),
            ..AccessRequest::default()
        });
        if decision.allowed {
            return None;
        }
        let scope = if namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace \"{namespace}\"")
        };
        Some(format!(
            "{plural} \"{name}\" is forbidden: User \"{user}\" cannot {verb} resource \"{plural}\" in API group \"{group}\" {scope}",
            plural = resource.plural,
            group = resource.group,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refusal_names_the_user_verb_and_namespace() {
        let a = Access::new(&[]);
        assert_eq!(
            a.refusal("get", "v1", "ConfigMap", "src", "org-ca")
                .unwrap(),
            "configmaps \"org-ca\" is forbidden: User \"system:serviceaccount:kyverno:kyverno-background-controller\" \
             cannot get resource \"configmaps\" in API group \"\" in the namespace \"src\""
        );
        let granted = Access::new(&[
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "r"},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "r"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "r"},
                "subjects": [{"kind": "ServiceAccount", "name": "kyverno-background-controller", "namespace": "kyverno"}]}),
        ]);
        assert_eq!(
            granted.refusal("get", "v1", "ConfigMap", "src", "org-ca"),
            None
        );
    }
}

//! Grading targets: the target-neutral vocabulary (object references, identities, access
//! questions, admission outcomes) shared by the live cluster client and the offline engine,
//! and the parser that turns an API server's denial text into who denied it. No I/O here.

pub mod denial;
pub mod live;

pub use denial::parse_denial;

use serde::Serialize;
use serde_json::Value;

/// Names one object: apiVersion, kind, and namespace (None for cluster-scoped) and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct ObjRef {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjRef {
    pub fn new(
        api_version: impl Into<String>,
        kind: impl Into<String>,
        namespace: Option<&str>,
        name: impl Into<String>,
    ) -> Self {
        ObjRef {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: namespace.map(str::to_string),
            name: name.into(),
        }
    }

    /// The reference to a manifest's object (its `metadata.namespace` as written, if any).
    pub fn of(obj: &Value) -> Option<ObjRef> {
        let s = |p: &str| obj.pointer(p).and_then(Value::as_str);
        Some(ObjRef {
            api_version: s("/apiVersion")?.to_string(),
            kind: s("/kind")?.to_string(),
            namespace: s("/metadata/namespace").map(str::to_string),
            name: s("/metadata/name")?.to_string(),
        })
    }
}

impl std::fmt::Display for ObjRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {}/{}", self.kind, ns, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

/// Who a request is made as (impersonation). A service account is the user
/// `system:serviceaccount:NS:NAME`; see [`Identity::service_account`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Identity {
    pub user: String,
    pub groups: Vec<String>,
}

impl Identity {
    pub fn user(user: impl Into<String>, groups: Vec<String>) -> Self {
        Identity {
            user: user.into(),
            groups,
        }
    }

    /// Who `kubectl --as NAME` (without `--as-group`) acts as: the API server adds the
    /// service-account groups to a service-account name and `system:authenticated` to any
    /// other user. A SubjectAccessReview adds nothing, so can-i questions need these spelled
    /// out to get kubectl's answer.
    pub fn kubectl_as(name: &str) -> Self {
        if let Some((ns, sa)) = name
            .strip_prefix("system:serviceaccount:")
            .and_then(|rest| rest.split_once(':'))
        {
            return Identity::service_account(ns, sa);
        }
        let groups = if name == "system:anonymous" {
            vec!["system:unauthenticated".to_string()]
        } else {
            vec!["system:authenticated".to_string()]
        };
        Identity::user(name, groups)
    }

    /// A service account with the groups the API server gives every service account
    /// token; impersonating only the user name would leave them out.
    pub fn service_account(namespace: &str, name: &str) -> Self {
        Identity {
            user: format!("system:serviceaccount:{namespace}:{name}"),
            groups: vec![
                "system:serviceaccounts".to_string(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".to_string(),
            ],
        }
    }
}

/// The question `kubectl auth can-i --as` asks: a SubjectAccessReview's resource attributes.
/// Empty strings mean "not set" (all namespaces, any name, core group).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AccessQuery {
    pub user: String,
    pub groups: Vec<String>,
    pub verb: String,
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AccessAnswer {
    pub allowed: bool,
    /// The authorizer's reason (e.g. which binding allowed it), possibly empty.
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Operation {
    Create,
    Update,
}

/// Which admission stage or authorizer refused a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum DeniedBy {
    Kyverno { policy: String, rule: String },
    ValidatingAdmissionPolicy { policy: String, binding: String },
    Rbac,
    Other,
}

/// A refused request. For Kyverno denials naming several policies or rules, `by` is the
/// first and `all` lists every (policy, rule) pair in message order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Denial {
    pub by: DeniedBy,
    pub message: String,
    pub code: u16,
    /// Every denier the message names (Kyverno can name several); `by` is the first.
    pub all: Vec<DeniedBy>,
}

impl Denial {
    /// True when `policy` (and `rule`, if given) is among the deniers.
    pub fn denied_by_kyverno(&self, policy: &str, rule: Option<&str>) -> bool {
        self.all.iter().any(|d| match d {
            // A namespaced Policy may be named `ns/name` in the message.
            DeniedBy::Kyverno { policy: p, rule: r } => {
                (p == policy || p.rsplit_once('/').is_some_and(|(_, n)| n == policy))
                    && rule.is_none_or(|want| want == r)
            }
            _ => false,
        })
    }
}

/// The outcome of a server-side dry run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Admission {
    /// Admitted; `object` is what the server would store (mutations applied).
    Allowed {
        object: Value,
        warnings: Vec<String>,
    },
    Denied(Denial),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_as_adds_the_groups_the_api_server_would() {
        assert_eq!(
            Identity::kubectl_as("system:serviceaccount:kyverno:kyverno-background-controller"),
            Identity::service_account("kyverno", "kyverno-background-controller")
        );
        assert_eq!(
            Identity::kubectl_as("alice").groups,
            vec!["system:authenticated".to_string()]
        );
        assert_eq!(
            Identity::kubectl_as("system:anonymous").groups,
            vec!["system:unauthenticated".to_string()]
        );
        // Not a well-formed service-account name: an ordinary user.
        assert_eq!(
            Identity::kubectl_as("system:serviceaccount:only-ns").groups,
            vec!["system:authenticated".to_string()]
        );
    }

    #[test]
    fn obj_ref_of_a_manifest() {
        let r = ObjRef::of(&serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "lab"}}))
        .unwrap();
        assert_eq!(r, ObjRef::new("v1", "ConfigMap", Some("lab"), "a"));
        assert_eq!(r.to_string(), "ConfigMap lab/a");
        assert!(ObjRef::of(&serde_json::json!({"kind": "ConfigMap"})).is_none());
    }

    #[test]
    fn namespaced_kyverno_policy_names_match_by_name() {
        let d = Denial {
            by: DeniedBy::Kyverno {
                policy: "lab/require-team".into(),
                rule: "r".into(),
            },
            message: String::new(),
            code: 400,
            all: vec![DeniedBy::Kyverno {
                policy: "lab/require-team".into(),
                rule: "r".into(),
            }],
        };
        assert!(d.denied_by_kyverno("require-team", Some("r")));
        assert!(d.denied_by_kyverno("lab/require-team", None));
        assert!(!d.denied_by_kyverno("team", None));
    }
}

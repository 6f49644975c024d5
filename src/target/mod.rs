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

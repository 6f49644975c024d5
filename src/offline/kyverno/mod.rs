//! Kyverno `ClusterPolicy`/`Policy` evaluated in-process: policy model, admission flow and
//! verdicts. Pure and synchronous; it never talks to a cluster or a registry.

mod anchors;
pub mod autogen;
pub mod background;
pub mod budget;
pub mod command;
pub mod conditions;
pub mod context;
pub mod engine;
pub mod entries;
pub mod existing;
mod failure_action;
pub mod gctx;
pub mod generate;
pub mod gofmt;
mod interp;
mod jmes;
pub(crate) mod jmes_functions;
pub mod jsonpatch;
mod manifest_sig;
pub mod matching;
pub mod mutate;
pub mod outcome;
pub mod pattern;
pub mod pss;
pub mod quantity;
pub mod regen;
pub mod rule;
pub mod runner;
pub mod smp;
pub mod validation;
mod validation_kinds;
pub mod vap_candidate;
pub mod vars;
pub mod x509;

use std::collections::BTreeMap;

use serde_json::Value;

pub use context::Context;
pub use engine::admit_with;
pub use entries::Options;
pub use outcome::{ContextSource, Outcome, Unsupported};
pub use rule::Rule;
pub use vars::VarError;

/// A parsed `ClusterPolicy` or `Policy` (after autogen expansion).
#[derive(Debug, Clone)]
pub struct Policy {
    pub name: String,
    /// `Some` for a namespaced `Policy`: its rules only apply in this namespace.
    pub namespace: Option<String>,
    /// The rules, decoded once when the policy is loaded.
    pub rules: Vec<Rule>,
    pub background: bool,
    /// Policy-level `validationFailureAction` (`Enforce` or `Audit`).
    pub failure_action: String,
    /// `policies.kyverno.io/scored: "false"`: failures are reported as warnings.
    pub unscored: bool,
    /// The policy as read, before autogen.
    pub raw: Value,
}

#[derive(Debug, Clone, Default)]
pub struct UserInfo {
    pub username: String,
    pub groups: Vec<String>,
    pub roles: Vec<String>,
    pub cluster_roles: Vec<String>,
}

/// One admission request as the API server would send it to Kyverno.
#[derive(Debug, Clone)]
pub struct Request {
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub operation: String,
    pub object: Value,
    pub old_object: Value,
    pub user_info: UserInfo,
    pub namespace_labels: BTreeMap<String, String>,
    /// Extra context values (test `values` file, globals, context entries by name).
    pub values: Value,
    /// Set when the object is a subresource (`PodExecOptions` for `pods/exec`).
    pub subresource: Option<Subresource>,
}

/// The parent of a subresource request: `Pod` + `exec` for `pods/exec`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subresource {
    pub parent_api_version: String,
    pub parent_kind: String,
    /// `exec`, `scale`, `status`, …
    pub name: String,
    /// The parent object's namespace and name: the admission request's `namespace` and
    /// `name`, which a subresource object without metadata (`PodExecOptions`) does not
    /// carry itself.
    pub parent_namespace: String,
    pub parent_name: String,
}

impl Default for Request {
    fn default() -> Self {
        Request {
            operation: "CREATE".into(),
            object: Value::Null,
            old_object: Value::Null,
            user_info: UserInfo::default(),
            namespace_labels: BTreeMap::new(),
            values: Value::Null,
            subresource: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RuleStatus {
    Pass,
    Fail,
    Warn,
    Error,
    Skip,
}

impl RuleStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleStatus::Pass => "pass",
            RuleStatus::Fail => "fail",
            RuleStatus::Warn => "warn",
            RuleStatus::Error => "error",
            RuleStatus::Skip => "skip",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleKind {
    Validate,
    Mutate,
    Generate,
    VerifyImages,
}

#[derive(Debug, Clone)]
pub struct RuleResult {
    pub policy: String,
    pub rule: String,
    pub kind: RuleKind,
    pub status: RuleStatus,
    pub message: String,
    /// Set when the rule was skipped because the offline engine cannot evaluate it.
    pub unsupported: Option<Unsupported>,
    /// The controls a failed `podSecurity` rule reports.
    pub pod_security: Option<Box<pss::Controls>>,
    /// The names of the PolicyExceptions that made the rule skip.
    pub exceptions: Vec<String>,
    /// Kyverno's own wording of the message, where the engine knows it (`message` is
    /// kca's, for learners).
    pub upstream: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct Response {
    pub results: Vec<RuleResult>,
    /// The object after all mutate rules.
    pub patched: Value,
    pub generated: Vec<Value>,
    /// Existing resources patched by mutate rules with `targets`.
    pub patched_targets: Vec<Value>,
    /// Generate rules the background controller could not carry out (permissions).
    pub failed_requests: Vec<background::FailedRequest>,
    /// The labels of the request's namespace, which failure-action overrides select on
    /// (Kyverno's `EngineResponse.namespaceLabels`).
    pub namespace_labels: BTreeMap<String, String>,
}

/// Reads `ClusterPolicy`/`Policy` objects; anything else comes back as a skip reason.
pub fn load_policies(objects: &[Value]) -> (Vec<Policy>, Vec<String>) {
    let mut policies = Vec::new();
    let mut skipped = Vec::new();
    for obj in objects {
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if kind != "ClusterPolicy" && kind != "Policy" {
            skipped.push(format!("{kind} {name}: kind not evaluated offline"));
            continue;
        }
        let expanded = autogen::expand(obj);
        let spec = expanded.get("spec").cloned().unwrap_or(Value::Null);
        let rules = spec
            .get("rules")
            .and_then(Value::as_array)
            .map(|rules| rules.iter().map(Rule::decode).collect())
            .unwrap_or_default();
        let failure_action = spec
            .get("validationFailureAction")
            .or_else(|| spec.get("failureAction"))
            .and_then(Value::as_str)
            .unwrap_or("Audit")
            .to_string();
        policies.push(Policy {
            name,
            namespace: if kind == "Policy" {
                Some(
                    obj.pointer("/metadata/namespace")
                        .and_then(Value::as_str)
                        .unwrap_or("default")
                        .to_string(),
                )
            } else {
                None
            },
            rules,
            background: spec
                .get("background")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            failure_action,
            unscored: obj
                .pointer("/metadata/annotations/policies.kyverno.io~1scored")
                .and_then(Value::as_str)
                == Some("false"),
            raw: obj.clone(),
        });
    }
    (policies, skipped)
}

/// Leaves out the policies Kyverno's CLI refuses before evaluating (`kyverno apply/test`
/// validate in mock mode: field checks, no permission checks), with Kyverno's message
/// per refused policy name.
pub fn split_invalid(policies: Vec<Policy>) -> (Vec<Policy>, Vec<(String, String)>) {
    let mut valid = Vec::new();
    let mut invalid = Vec::new();
    for p in policies {
        let problems = validation::validate_policy(&p.raw, validation::Mode::Cli);
        match validation::message(&problems) {
            Some(message) => invalid.push((p.name, message)),
            None => valid.push(p),
        }
    }
    (valid, invalid)
}

/// Full admission as the API server sees it: all mutate rules of all policies first (in
/// order), then validate against the mutated object.
pub fn admit(policies: &[Policy], req: &Request) -> Response {
    admit_with(policies, req, &Options::default())
}

/// Whether an Enforce-mode validate failure denies this request, and by which
/// policy/rule/message.
pub fn denial(policies: &[Policy], resp: &Response) -> Option<(String, String, String)> {
    resp.results
        .iter()
        .filter(|r| r.kind == RuleKind::Validate && r.status == RuleStatus::Fail)
        .find(|r| enforced(policies, resp, r))
        .map(|r| (r.policy.clone(), r.rule.clone(), r.message.clone()))
}

/// Whether `result`, were it a failure, blocks the request `resp` answers: its rule's
/// failure action for the patched resource's namespace ([`failure_action`]).
pub fn enforced(policies: &[Policy], resp: &Response, result: &RuleResult) -> bool {
    let Some(policy) = policies.iter().find(|p| p.name == result.policy) else {
        return false;
    };
    let namespace = resp
        .patched
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let scope = failure_action::Scope {
        namespace,
        labels: &resp.namespace_labels,
    };
    failure_action::blocks(policy, &result.rule, &scope)
}

//! Kubernetes ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) evaluated
//! in-process: binding and policy matching, params, matchConditions, variables and CEL
//! validations, with the API server's actions, failure policy and denial text; also
//! Kyverno's `validate.cel` rules and `ValidatingPolicy` (with its autogen copies for
//! Pod controllers), which run on the same evaluator. Pure and
//! synchronous; it must not touch the network, and what the CEL interpreter cannot do
//! comes back as an `unsupported` error, never as an allow.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use cel::extractors::This;
use cel::{Context, Env, ExecutionError, Program};
use serde_json::{Value, json};

/// One admission request as the API server hands it to validating admission.
#[derive(Debug, Clone, Default)]
pub struct VapRequest {
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub operation: String,
    /// Null on DELETE.
    pub object: Value,
    /// Null on CREATE.
    pub old_object: Value,
    /// The request's namespace object (null for cluster-scoped objects); a missing
    /// Namespace manifest is best given as `{metadata: {name, labels}}`.
    pub namespace_object: Value,
    pub user: VapUser,
    pub dry_run: bool,
    pub sub_resource: String,
    /// The objects Kyverno's `resource.get` reads in a ValidatingPolicy (a test's
    /// cluster resources); `None` leaves the library out, as for a VAP.
    pub cluster: Option<Arc<Vec<Value>>>,
}

#[derive(Debug, Clone, Default)]
pub struct VapUser {
    pub username: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

/// A Deny-action failure, as the API server reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VapDenial {
    pub policy: String,
    pub binding: String,
    pub message: String,
    /// `Invalid` unless the validation names another reason.
    pub reason: String,
    pub code: u16,
}

impl VapDenial {
    /// The text after `… is forbidden: ` in the API server's Status message.
    pub fn text(&self) -> String {
        format!(
            "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {}",
            self.policy, self.binding, self.message
        )
    }

    /// The whole Status message for `object`, as `kubectl` shows it.
    pub fn status_message(&self, object: &Value) -> String {
        let (group, _, resource) = resource_of(object);
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let res = if group.is_empty() {
            resource
        } else {
            format!("{resource}.{group}")
        };
        format!("{res} \"{name}\" is forbidden: {}", self.text())
    }
}

/// An evaluation that could not be completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VapError {
    pub policy: String,
    pub binding: String,
    pub message: String,
    /// Why the interpreter (or offline evaluation) cannot do this, as opposed to an
    /// error the API server would hit too (a missing field, a type mismatch).
    pub unsupported: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VapOutcome {
    pub allowed: bool,
    /// In evaluation order; the API server reports the first.
    pub denials: Vec<VapDenial>,
    pub warnings: Vec<String>,
    /// Audit-action failures (`policy/binding: message`).
    pub audits: Vec<String>,
    pub errors: Vec<VapError>,
}

impl VapOutcome {
    /// The first error the interpreter could not evaluate, if any.
    pub fn unsupported(&self) -> Option<&VapError> {
        self.errors.iter().find(|e| e.unsupported.is_some())
    }
}

fn kind_of(v: &Value) -> &str {
    v.get("kind").and_then(Value::as_str).unwrap_or("")
}

fn name_of(v: &Value) -> &str {
    v.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Runs every ValidatingAdmissionPolicyBinding in `objects` against `req`. Params are
/// looked up in `objects` too.
pub fn evaluate(objects: &[Value], req: &VapRequest) -> VapOutcome {
    let policies: BTreeMap<&str, &Value> = objects
        .iter()
        .filter(|o| kind_of(o) == "ValidatingAdmissionPolicy")
        .map(|o| (name_of(o), o))
        .collect();
    let mut out = VapOutcome {
        allowed: true,
        ..Default::default()
    };
    for binding in objects
        .iter()
        .filter(|o| kind_of(o) == "ValidatingAdmissionPolicyBinding")
    {
        let policy_name = binding
            .pointer("/spec/policyName")
            .and_then(Value::as_str)
            .unwrap_or("");
        let Some(policy) = policies.get(policy_name) else {
            continue;
        };
        evaluate_binding(objects, policy, Some(binding), req, &mut out);
    }
    out.allowed = out.denials.is_empty();
    out
}

/// Runs one policy, with a binding or, as `kyverno test` does for a policy without any,
/// on its own match constraints with the Deny action.
pub fn evaluate_binding(
    objects: &[Value],
    policy: &Value,
    binding: Option<&Value>,
    req: &VapRequest,
    out: &mut VapOutcome,
) -> Applied {
    let pname = name_of(policy).to_string();
    let bname = binding.map(name_of).unwrap_or("").to_string();
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let constraints = spec.get("matchConstraints").unwrap_or(&Value::Null);
    if !matches_resources(constraints, req, true) {
        return Applied::NotMatched;
    }
    if let Some(b) = binding
        && let Some(mr) = b.pointer("/spec/matchResources")
        && !matches_resources(mr, req, false)
    {
        return Applied::NotMatched;
    }
    let actions: Vec<String> = match binding {
        Some(b) => b
            .pointer("/spec/validationActions")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        // A Kyverno ValidatingPolicy carries its actions itself; a bare VAP denies.
        None => {
            let own: Vec<String> = list(spec, "validationActions")
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
            if own.is_empty() {
                vec!["Deny".into()]
            } else {
                own
            }
        }
    };
    let fail_closed = spec.get("failurePolicy").and_then(Value::as_str) != Some("Ignore");
    let mut ctx = Report {
        policy: pname,
        binding: bname,
        actions,
        fail_closed,
        out,
        applied: Applied::Passed,
    };

    let params_list = match params_for(objects, spec, binding, req) {
        Ok(p) => p,
        Err(ParamsMissing::Allow) => return Applied::NotMatched,
        Err(ParamsMissing::Deny(msg)) => {
            // A binding that cannot be configured denies under `Fail`, whatever its
            // actions say, and is skipped under `Ignore`.
            let message = format!("failed to configure binding: {msg}");
            ctx.out.errors.push(VapError {
                policy: ctx.policy.clone(),
                binding: ctx.binding.clone(),
                message: message.clone(),
                unsupported: None,
            });
            if !ctx.fail_closed {
                return Applied::Errored;
            }
            ctx.out.denials.push(VapDenial {
                policy: ctx.policy.clone(),
                binding: ctx.binding.clone(),
                message,
                reason: "Invalid".into(),
                code: 422,
            });
            return Applied::Failed;
        }
    };
    for params in params_list {
        run_validations(spec, req, &params, &mut ctx);
    }
    ctx.applied
}

/// How a Kyverno `validate.cel` block came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CelVerdict {
    Pass,
    /// A `celPreconditions` entry was false.
    Skip(String),
    /// The first failing expression's message (an evaluation error fails too, as
    /// Kyverno's validator runs with failure policy `Fail`).
    Fail(String),
    /// The rule could not run: its params are missing.
    Error(String),
    /// What the offline interpreter cannot evaluate (never a pass).
    Unsupported(String),
}

/// A Kyverno rule's `validate.cel` block (`expressions`, `variables`, `paramKind`,
/// `paramRef`) with its `celPreconditions`, on a request the rule's `match`/`exclude`
/// already selected. It runs on the same evaluator as a ValidatingAdmissionPolicy
/// bound with `Deny`; `auditAnnotations` only annotate audit events and are not
/// evaluated. Params are looked up in `objects`: a named one that is missing, or none
/// selected under `parameterNotFoundAction: Deny`, is an error; none selected otherwise
/// leaves nothing to validate, as in Kyverno.
pub fn evaluate_kyverno_cel(
    objects: &[Value],
    cel: &Value,
    rule_message: Option<&str>,
    preconditions: Option<&Value>,
    req: &VapRequest,
) -> CelVerdict {
    let mut spec = serde_json::Map::new();
    for (from, to) in [
        ("paramKind", "paramKind"),
        ("variables", "variables"),
        ("expressions", "validations"),
    ] {
        if let Some(v) = cel.get(from).filter(|v| !v.is_null()) {
            spec.insert(to.into(), v.clone());
        }
    }
    // An expression without a message takes the rule's.
    if let (Some(Value::Array(exprs)), Some(m)) = (spec.get_mut("validations"), rule_message)
        && !m.is_empty()
    {
        for e in exprs.iter_mut() {
            if e.get("message")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                e["message"] = Value::String(m.to_string());
            }
        }
    }
    if let Some(p) = preconditions.filter(|p| !p.is_null()) {
        spec.insert("matchConditions".into(), p.clone());
    }
    let spec = Value::Object(spec);
    let params_list = match (cel.get("paramKind"), cel.get("paramRef")) {
        (Some(kind), Some(pref)) if !kind.is_null() && !pref.is_null() => {
            let found = find_params(objects, kind, pref, req);
            let deny = pref.get("parameterNotFoundAction").and_then(Value::as_str) == Some("Deny");
            if let Some(name) = pref.get("name").and_then(Value::as_str)
                && found.is_empty()
            {
                return CelVerdict::Error(format!(
                    "error in parameterized resource: {} {name} not found",
                    kind.get("kind").and_then(Value::as_str).unwrap_or("")
                ));
            }
            if found.is_empty() && deny {
                return CelVerdict::Error(
                    "error in parameterized resource: no params found".into(),
                );
            }
            found
        }
        _ => vec![Value::Null],
    };
    let mut out = VapOutcome::default();
    let mut report = Report {
        policy: String::new(),
        binding: String::new(),
        actions: vec!["Deny".into()],
        fail_closed: true,
        out: &mut out,
        applied: Applied::Passed,
    };
    for params in &params_list {
        run_validations(&spec, req, params, &mut report);
    }
    let applied = report.applied;
    if let Some(e) = out.unsupported() {
        return CelVerdict::Unsupported(e.unsupported.clone().unwrap_or_else(|| e.message.clone()));
    }
    if let Some(d) = out.denials.first() {
        return CelVerdict::Fail(d.message.clone());
    }
    match applied {
        Applied::NotMatched => CelVerdict::Skip("celPreconditions not met".into()),
        _ => CelVerdict::Pass,
    }
}

/// Whether a policy ran its validations on a request and how they came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    NotMatched,
    Passed,
    Failed,
    Errored,
}

struct Report<'a> {
    policy: String,
    binding: String,
    actions: Vec<String>,
    fail_closed: bool,
    out: &'a mut VapOutcome,
    applied: Applied,
}

impl Report<'_> {
    fn failed(&mut self, message: String, reason: &str) {
        self.applied = Applied::Failed;
        for action in self.actions.clone() {
            match action.as_str() {
                "Deny" => self.out.denials.push(VapDenial {
                    policy: self.policy.clone(),
                    binding: self.binding.clone(),
                    message: message.clone(),
                    reason: reason.to_string(),
                    code: code_of(reason),
                }),
                "Warn" => self.out.warnings.push(format!(
                    "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                    self.policy, self.binding, message
                )),
                "Audit" => self
                    .out
                    .audits
                    .push(format!("{}/{}: {}", self.policy, self.binding, message)),
                _ => {}
            }
        }
    }

    /// An evaluation error: recorded, then a failure under `failurePolicy: Fail`.
    fn errored(&mut self, message: String, unsupported: Option<String>) {
        self.out.errors.push(VapError {
            policy: self.policy.clone(),
            binding: self.binding.clone(),
            message: message.clone(),
            unsupported,
        });
        if self.fail_closed {
            self.failed(message, "Invalid");
        }
        if self.applied != Applied::Failed {
            self.applied = Applied::Errored;
        }
    }
}

fn code_of(reason: &str) -> u16 {
    match reason {
        "Unauthorized" => 401,
        "Forbidden" => 403,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    }
}

enum ParamsMissing {
    Allow,
    Deny(String),
}

/// The params objects a binding selects (one `null` when the policy takes none).
fn params_for(
    objects: &[Value],
    spec: &Value,
    binding: Option<&Value>,
    req: &VapRequest,
) -> Result<Vec<Value>, ParamsMissing> {
    let Some(kind) = spec.get("paramKind") else {
        return Ok(vec![Value::Null]);
    };
    let Some(binding) = binding else {
        return Ok(vec![Value::Null]);
    };
    let Some(pref) = binding.pointer("/spec/paramRef") else {
        return Err(ParamsMissing::Deny(
            "the policy has a paramKind and the binding no paramRef".into(),
        ));
    };
    let found = find_params(objects, kind, pref, req);
    if !found.is_empty() {
        return Ok(found);
    }
    match pref.get("parameterNotFoundAction").and_then(Value::as_str) {
        Some("Allow") => Err(ParamsMissing::Allow),
        _ => Err(ParamsMissing::Deny(
            "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
        )),
    }
}

/// The objects of `paramKind` that a `paramRef` names or selects.
fn find_params(objects: &[Value], kind: &Value, pref: &Value, req: &VapRequest) -> Vec<Value> {
    let api_version = kind.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let pkind = kind.get("kind").and_then(Value::as_str).unwrap_or("");
    let req_ns = request_namespace(req);
    let want_ns = pref.get("namespace").and_then(Value::as_str);
    objects
        .iter()
        .filter(|o| {
            o.get("apiVersion").and_then(Value::as_str) == Some(api_version) && kind_of(o) == pkind
        })
        .filter(|o| {
            let ns = o.pointer("/metadata/namespace").and_then(Value::as_str);
            match (want_ns, ns) {
                (Some(w), Some(n)) => w == n,
                (Some(_), None) => false,
                // Namespaced params without a namespace come from the request's.
                (None, Some(n)) => req_ns.as_deref() == Some(n),
                (None, None) => true,
            }
        })
        .filter(|o| match pref.get("name").and_then(Value::as_str) {
            Some(n) => name_of(o) == n,
            None => pref
                .get("selector")
                .is_some_and(|sel| selector_matches(sel, &labels_of(o))),
        })
        .cloned()
        .collect()
}

fn request_namespace(req: &VapRequest) -> Option<String> {
    let o = if req.object.is_null() {
        &req.old_object
    } else {
        &req.object
    };
    o.pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn run_validations(spec: &Value, req: &VapRequest, params: &Value, rep: &mut Report<'_>) {
    let mut ctx = base_context(req, params);
    match conditions_hold(&ctx, spec.get("matchConditions").unwrap_or(&Value::Null)) {
        Ok(true) => {}
        Ok(false) => {
            if rep.applied == Applied::Passed {
                rep.applied = Applied::NotMatched;
            }
            return;
        }
        Err((message, unsupported)) => return rep.errored(message, unsupported),
    }
    // Variables are bound in order; one that fails only matters where it is used.
    let mut vars: BTreeMap<String, cel::Value> = BTreeMap::new();
    let mut var_errors: BTreeMap<String, EvalError> = BTreeMap::new();
    for v in list(spec, "variables") {
        let name = v.get("name").and_then(Value::as_str).unwrap_or("");
        let expr = v.get("expression").and_then(Value::as_str).unwrap_or("");
        bind_variables(&mut ctx, &vars);
        // A variable built on a failed one fails the same way.
        if let Some((_, e)) = var_errors
            .iter()
            .find(|(n, _)| expr.contains(&format!("variables.{n}")))
        {
            let e = e.clone();
            var_errors.insert(name.to_string(), e);
            continue;
        }
        match eval(&ctx, expr) {
            Ok(val) => {
                vars.insert(name.to_string(), val);
            }
            Err(e) => {
                var_errors.insert(name.to_string(), e);
            }
        }
    }
    bind_variables(&mut ctx, &vars);
    for v in list(spec, "validations") {
        let expr = v.get("expression").and_then(Value::as_str).unwrap_or("");
        if let Some((name, e)) = var_errors
            .iter()
            .find(|(n, _)| expr.contains(&format!("variables.{n}")))
        {
            rep.errored(
                format!(
                    "expression '{}' resulted in error: variable '{name}': {}",
                    expr.trim(),
                    e.message
                ),
                e.unsupported(),
            );
            continue;
        }
        match eval(&ctx, expr) {
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => {
                let message = failure_message(&ctx, v, expr);
                let reason = v.get("reason").and_then(Value::as_str).unwrap_or("Invalid");
                rep.failed(message, reason);
            }
            Ok(other) => rep.errored(
                format!(
                    "expression '{}' resulted in error: not a bool: {other:?}",
                    expr.trim()
                ),
                None,
            ),
            Err(e) => rep.errored(
                format!(
                    "expression '{}' resulted in error: {}",
                    expr.trim(),
                    e.message
                ),
                e.unsupported(),
            ),
        }
    }
}

/// A list of `matchConditions`: one false is `false` whatever the others do; otherwise
/// the first error (with its `unsupported` reason) is returned.
fn conditions_hold(
    ctx: &Context<'_, '_>,
    conditions: &Value,
) -> Result<bool, (String, Option<String>)> {
    let mut condition_error = None;
    for mc in conditions.as_array().into_iter().flatten() {
        let expr = mc.get("expression").and_then(Value::as_str).unwrap_or("");
        let name = mc.get("name").and_then(Value::as_str).unwrap_or("");
        match eval(ctx, expr) {
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => return Ok(false),
            Ok(other) => {
                condition_error.get_or_insert((
                    format!("matchCondition '{name}' did not return a bool: {other:?}"),
                    None,
                ));
            }
            Err(e) => {
                condition_error.get_or_insert((
                    format!("failed to evaluate matchCondition '{name}': {}", e.message),
                    e.unsupported(),
                ));
            }
        }
    }
    condition_error.map_or(Ok(true), Err)
}

/// Whether every `matchConditions` entry of a Kyverno CEL `PolicyException` holds for
/// `req`; an error (or what the interpreter cannot evaluate) is `Err` with the reason.
pub fn exception_applies(exception: &Value, req: &VapRequest) -> Result<bool, String> {
    let ctx = base_context(req, &Value::Null);
    let conditions = exception
        .pointer("/spec/matchConditions")
        .unwrap_or(&Value::Null);
    conditions_hold(&ctx, conditions).map_err(|(m, u)| u.unwrap_or(m))
}

/// Pod controllers and where their Pod template sits, as Kyverno's autogen for CEL
/// policies knows them.
const POD_CONTROLLERS: &[(&str, &str, &str)] = &[
    ("Deployment", "apps", "spec.template"),
    ("DaemonSet", "apps", "spec.template"),
    ("StatefulSet", "apps", "spec.template"),
    ("ReplicaSet", "apps", "spec.template"),
    ("ReplicationController", "", "spec.template"),
    ("Job", "batch", "spec.template"),
    ("CronJob", "batch", "spec.jobTemplate.spec.template"),
];

/// A Kyverno `ValidatingPolicy`/`NamespacedValidatingPolicy` (policies.kyverno.io) on
/// one request: VAP-shaped (`matchConstraints`, `matchConditions`, `variables`,
/// `validations`, `failurePolicy`) with its `validationActions` in the policy itself.
/// On a Pod controller a policy written for Pods runs as its autogen copy (the
/// controllers in `spec.autogen.podControllers.controllers`, all of them by default),
/// with `object.spec`/`object.metadata` moved to the Pod template.
pub fn evaluate_validating_policy(
    objects: &[Value],
    policy: &Value,
    req: &VapRequest,
    out: &mut VapOutcome,
) -> Applied {
    let obj = if req.object.is_null() {
        &req.old_object
    } else {
        &req.object
    };
    // A namespaced policy sees only its own namespace's requests.
    if kind_of(policy) == "NamespacedValidatingPolicy"
        && let Some(ns) = policy
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
        && request_namespace(req).as_deref() != Some(ns)
    {
        return Applied::NotMatched;
    }
    match autogen_policy(policy, kind_of(obj)) {
        Some(copy) => evaluate_binding(objects, &copy, None, req, out),
        None => evaluate_binding(objects, policy, None, req, out),
    }
}

/// The autogen copy of a Pod policy for a controller `kind`, or `None` when the policy
/// is not written for Pods alone or the controller is not one it covers.
fn autogen_policy(policy: &Value, kind: &str) -> Option<Value> {
    let &(kind, group, template) = POD_CONTROLLERS.iter().find(|(k, _, _)| *k == kind)?;
    let spec = policy.get("spec")?;
    let rules: Vec<&Value> = spec
        .pointer("/matchConstraints/resourceRules")
        .and_then(Value::as_array)?
        .iter()
        .collect();
    let pods_only = !rules.is_empty()
        && rules.iter().all(|r| {
            let resources: Vec<&str> = list(r, "resources").filter_map(Value::as_str).collect();
            resources == ["pods"]
        });
    if !pods_only {
        return None;
    }
    if let Some(wanted) = spec
        .pointer("/autogen/podControllers/controllers")
        .and_then(Value::as_array)
        && !wanted
            .iter()
            .filter_map(Value::as_str)
            .any(|c| c.eq_ignore_ascii_case(kind) || c == plural(kind))
    {
        return None;
    }
    let operations = rules[0].get("operations").cloned().unwrap_or(json!([]));
    let mut copy = policy.clone();
    let cspec = &mut copy["spec"];
    cspec["matchConstraints"] = json!({"resourceRules": [{
        "apiGroups": [group], "apiVersions": ["v1"],
        "resources": [plural(kind)], "operations": operations}]});
    for key in ["matchConditions", "variables", "validations"] {
        if let Some(v) = cspec.get_mut(key) {
            retarget_expressions(v, template);
        }
    }
    Some(copy)
}

/// Moves `object.spec`/`object.metadata` (and `oldObject.…`) to the Pod template in
/// every string of `v`; the controller's own `metadata.name`/`metadata.namespace` stay.
fn retarget_expressions(v: &mut Value, template: &str) {
    match v {
        Value::String(s) => *s = retarget(s, template),
        Value::Array(a) => a.iter_mut().for_each(|x| retarget_expressions(x, template)),
        Value::Object(m) => m
            .values_mut()
            .for_each(|x| retarget_expressions(x, template)),
        _ => {}
    }
}

fn retarget(expr: &str, template: &str) -> String {
    let mut out = String::with_capacity(expr.len() + 32);
    let mut rest = expr;
    while let Some(i) = rest.find("bject.") {
        // `object.` or `oldObject.`, not a longer identifier.
        let start = if rest[..i].ends_with('o') {
            i - 1
        } else if rest[..i].ends_with("oldO") {
            i - 4
        } else {
            out.push_str(&rest[..i + 6]);
            rest = &rest[i + 6..];
            continue;
        };
        let ident_before = rest[..start]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.');
        let after = &rest[i + 6..];
        let field = ["spec", "metadata"].into_iter().find(|f| {
            after.starts_with(f)
                && !after[f.len()..]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
        });
        out.push_str(&rest[..i + 6]);
        rest = after;
        let Some(field) = field.filter(|_| !ident_before) else {
            continue;
        };
        let tail = &after[field.len()..];
        let protected = field == "metadata"
            && [".name", ".namespace"].iter().any(|p| {
                tail.starts_with(p)
                    && !tail[p.len()..]
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_alphanumeric() || c == '_')
            });
        if !protected {
            out.push_str(template);
            out.push('.');
        }
        out.push_str(field);
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// `messageExpression` when it yields a non-empty string, else `message`, else the
/// API server's `failed expression: …`.
fn failure_message(ctx: &Context<'_, '_>, v: &Value, expr: &str) -> String {
    if let Some(me) = v.get("messageExpression").and_then(Value::as_str)
        && let Ok(cel::Value::String(s)) = eval(ctx, me)
        && !s.trim().is_empty()
        && !s.contains('\n')
    {
        return s.to_string();
    }
    match v.get("message").and_then(Value::as_str) {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => format!("failed expression: {}", expr.trim()),
    }
}

fn bind_variables(ctx: &mut Context<'_, '_>, vars: &BTreeMap<String, cel::Value>) {
    let map: std::collections::HashMap<String, cel::Value> =
        vars.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    ctx.add_variable_from_value("variables", map);
}

fn list<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    v.get(key).and_then(Value::as_array).into_iter().flatten()
}

/// JSON as the API server hands it to CEL: whole numbers are `int` (serde would make
/// positive ones `uint`, and `uint + int` has no overload).
fn to_cel(v: &Value) -> cel::Value {
    match v {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => cel::Value::Int(i),
            (None, Some(u)) => cel::Value::UInt(u),
            _ => cel::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(a) => cel::Value::List(Arc::new(a.iter().map(to_cel).collect())),
        Value::Object(m) => {
            let map: std::collections::HashMap<String, cel::Value> =
                m.iter().map(|(k, v)| (k.clone(), to_cel(v))).collect();
            cel::Value::from(map)
        }
    }
}

fn base_context<'a>(req: &VapRequest, params: &Value) -> Context<'a, 'a> {
    let mut ctx = Context::with_env(env().clone());
    register_functions(&mut ctx);
    let obj = if req.object.is_null() {
        &req.old_object
    } else {
        &req.object
    };
    let (group, version, resource) = resource_of(obj);
    let request = json!({
        "kind": {"group": group, "version": version, "kind": kind_of(obj)},
        "resource": {"group": group, "version": version, "resource": resource},
        "subResource": req.sub_resource,
        "requestKind": {"group": group, "version": version, "kind": kind_of(obj)},
        "requestResource": {"group": group, "version": version, "resource": resource},
        "name": name_of(obj),
        "namespace": request_namespace(req).unwrap_or_default(),
        "operation": req.operation,
        "userInfo": {
            "username": req.user.username,
            "uid": req.user.uid,
            "groups": req.user.groups,
            "extra": req.user.extra,
        },
        "dryRun": req.dry_run,
    });
    ctx.add_variable_from_value("object", to_cel(&req.object));
    ctx.add_variable_from_value("oldObject", to_cel(&req.old_object));
    ctx.add_variable_from_value("request", to_cel(&request));
    ctx.add_variable_from_value("params", to_cel(params));
    ctx.add_variable_from_value("namespaceObject", to_cel(&req.namespace_object));
    if let Some(cluster) = &req.cluster {
        add_resource_library(&mut ctx, cluster.clone());
    }
    ctx
}

/// Kyverno's `resource.get(apiVersion, resource, namespace, name)` (also spelt
/// `resource.Get`) over a fixed set of objects; one that is not there is an evaluation
/// error, as a failed GET would be.
fn add_resource_library(ctx: &mut Context<'_, '_>, cluster: Arc<Vec<Value>>) {
    // The receiver marks the library, so `Get` on anything else is not a lookup.
    ctx.add_variable_from_value("resource", to_cel(&json!({RESOURCE_LIBRARY: true})));
    let get = move |This(target): This<cel::Value>,
                    api_version: Arc<String>,
                    resource: Arc<String>,
                    namespace: Arc<String>,
                    name: Arc<String>|
          -> cel::ResolveResult {
        if target != to_cel(&json!({RESOURCE_LIBRARY: true})) {
            return Err(ExecutionError::function_error(
                "get",
                "only the `resource` library has `get` offline",
            ));
        }
        cluster
            .iter()
            .find(|o| {
                o.get("apiVersion").and_then(Value::as_str) == Some(api_version.as_str())
                    && plural(kind_of(o)) == *resource
                    && name_of(o) == *name
                    && o.pointer("/metadata/namespace")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        == *namespace
            })
            .map(to_cel)
            .ok_or_else(|| {
                ExecutionError::function_error(
                    "resource.get",
                    format!("{resource} \"{name}\" not found in namespace \"{namespace}\""),
                )
            })
    };
    // Fixed names that are no standard overload.
    let added = [
        ctx.add_function("get", get.clone()),
        ctx.add_function("Get", get),
    ];
    debug_assert!(added.iter().all(Result::is_ok), "{added:?}");
}

const RESOURCE_LIBRARY: &str = "kca.dev/resource-library";

/// The CEL environment: the standard library, its macros and optional values, and the
/// strings extension Kubernetes enables.
fn env() -> &'static Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Env::stdlib();
        // Declaring a well-known extension on a fresh stdlib cannot conflict.
        env.add_extension(cel::extensions::strings)
            .expect("strings extension on a fresh environment");
        Arc::new(env)
    })
}

/// Kubernetes' library members the interpreter lacks: `isSorted`, regex `find` and
/// `findAll`, quantities. Quantities are their numeric value, which is enough for
/// comparisons.
fn register_functions(ctx: &mut Context<'_, '_>) {
    fn quantity(s: Arc<String>) -> Result<f64, ExecutionError> {
        crate::offline::kyverno::quantity::parse_quantity(&s).ok_or_else(|| {
            ExecutionError::function_error("quantity", format!("invalid quantity {s:?}"))
        })
    }
    fn is_sorted(This(list): This<Arc<Vec<cel::Value>>>) -> bool {
        list.windows(2)
            .all(|w| w[0].partial_cmp(&w[1]).is_some_and(|o| o.is_le()))
    }
    fn compare_to(This(a): This<f64>, b: f64) -> i64 {
        match a.partial_cmp(&b) {
            Some(std::cmp::Ordering::Less) => -1,
            Some(std::cmp::Ordering::Greater) => 1,
            _ => 0,
        }
    }
    fn regex_of(pattern: &str, function: &str) -> Result<regex::Regex, ExecutionError> {
        regex::Regex::new(pattern).map_err(|e| ExecutionError::function_error(function, e))
    }
    fn find(This(s): This<Arc<String>>, pattern: Arc<String>) -> cel::ResolveResult {
        let re = regex_of(&pattern, "find")?;
        let hit = re
            .find(&s)
            .map(|m| m.as_str().to_string())
            .unwrap_or_default();
        Ok(cel::Value::String(Arc::new(hit)))
    }
    fn find_all(This(s): This<Arc<String>>, pattern: Arc<String>) -> cel::ResolveResult {
        let re = regex_of(&pattern, "findAll")?;
        let hits = re
            .find_iter(&s)
            .map(|m| cel::Value::String(Arc::new(m.as_str().to_string())))
            .collect();
        Ok(cel::Value::List(Arc::new(hits)))
    }
    let results = [
        ctx.add_function("find", find),
        ctx.add_function("findAll", find_all),
        ctx.add_function("quantity", quantity),
        ctx.add_function("isQuantity", |s: Arc<String>| {
            crate::offline::kyverno::quantity::parse_quantity(&s).is_some()
        }),
        ctx.add_function("isSorted", is_sorted),
        ctx.add_function("compareTo", compare_to),
        ctx.add_function("isLessThan", |This(a): This<f64>, b: f64| a < b),
        ctx.add_function("isGreaterThan", |This(a): This<f64>, b: f64| a > b),
        ctx.add_function("asApproximateFloat", |This(a): This<f64>| a),
        ctx.add_function("isInteger", |This(a): This<f64>| a.fract() == 0.0),
        ctx.add_function("asInteger", |This(a): This<f64>| a as i64),
    ];
    // The names are fixed and none is a standard overload.
    debug_assert!(results.iter().all(Result::is_ok), "{results:?}");
}

#[derive(Clone)]
struct EvalError {
    message: String,
    unsupported: bool,
}

impl EvalError {
    fn unsupported(&self) -> Option<String> {
        self.unsupported.then(|| self.message.clone())
    }
}

/// Compiles and runs one expression. Compile failures, the `authorizer` and calls the
/// interpreter does not know are `unsupported`.
fn eval(ctx: &Context<'_, '_>, expr: &str) -> Result<cel::Value, EvalError> {
    if mentions(expr, "authorizer") {
        return Err(EvalError {
            message: "`authorizer` (authorization checks from CEL) is not evaluated offline".into(),
            unsupported: true,
        });
    }
    let program = compiled(expr).map_err(|message| EvalError {
        message,
        unsupported: true,
    })?;
    program.execute(ctx).map_err(|e| {
        let unsupported = matches!(
            e,
            ExecutionError::UndeclaredReference(_)
                | ExecutionError::NoSuchOverload(_)
                | ExecutionError::NotSupportedAsMethod { .. }
        );
        let message = if unsupported {
            format!(
                "the offline CEL interpreter cannot evaluate this (a function it lacks, or a \
                 type error the API server would reject when the policy is created): {e}"
            )
        } else {
            e.to_string()
        };
        EvalError {
            message,
            unsupported,
        }
    })
}

/// Compiles `expr` once per thread: a corpus run evaluates the same few hundred
/// expressions on thousands of objects, and parsing them again took a third of it.
fn compiled(expr: &str) -> Result<std::rc::Rc<Program>, String> {
    thread_local! {
        static PROGRAMS: std::cell::RefCell<std::collections::HashMap<String, std::rc::Rc<Program>>> =
            Default::default();
    }
    if let Some(p) = PROGRAMS.with_borrow(|m| m.get(expr).cloned()) {
        return Ok(p);
    }
    let program = std::rc::Rc::new(
        env()
            .compile(expr)
            .map_err(|e| format!("the offline CEL interpreter cannot compile it: {e}"))?,
    );
    PROGRAMS.with_borrow_mut(|m| m.insert(expr.to_string(), program.clone()));
    Ok(program)
}

/// `word` as an identifier in `expr` (not inside a longer name).
fn mentions(expr: &str, word: &str) -> bool {
    expr.match_indices(word).any(|(i, _)| {
        let before = expr[..i].chars().next_back();
        let after = expr[i + word.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !ident(before) && !ident(after) && before != Some('.') && before != Some('\'')
    })
}

/// `(group, version, resource)` of an object: the resource is its kind's plural.
pub fn resource_of(obj: &Value) -> (String, String, String) {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), api_version.to_string()),
    };
    (group, version, plural(kind_of(obj)))
}

fn plural(kind: &str) -> String {
    let k = kind.to_lowercase();
    if k == "endpoints" || k.ends_with("metrics") {
        return k;
    }
    if let Some(stem) = k.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'i', 'o', 'u'])
    {
        return format!("{stem}ies");
    }
    if k.ends_with('s') || k.ends_with('x') || k.ends_with("ch") || k.ends_with("sh") {
        return format!("{k}es");
    }
    format!("{k}s")
}

/// The `namespaceObject` of a request in `ns`: its manifest among `objects` (or a bare
/// Namespace), with `labels` laid over its own, as the admission request would carry it.
pub fn namespace_object<'a>(
    objects: impl IntoIterator<Item = &'a Value>,
    ns: &str,
    labels: BTreeMap<String, String>,
) -> Value {
    let mut nso = objects
        .into_iter()
        .find(|o| kind_of(o) == "Namespace" && name_of(o) == ns)
        .cloned()
        .unwrap_or_else(
            || json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        );
    for (k, v) in labels {
        nso["metadata"]["labels"][k] = Value::String(v);
    }
    nso
}

use super::labels::labels_of;
pub use super::labels::selector_matches;

/// The policy's `matchConstraints` or a binding's `matchResources` against a request.
/// A binding without resource rules does not narrow the policy's; a policy without any
/// matches nothing.
fn matches_resources(mr: &Value, req: &VapRequest, is_policy: bool) -> bool {
    let obj = if req.object.is_null() {
        &req.old_object
    } else {
        &req.object
    };
    let (group, version, resource) = resource_of(obj);
    let namespaced = obj.pointer("/metadata/namespace").is_some();
    let exact = mr.get("matchPolicy").and_then(Value::as_str) == Some("Exact");
    let rule_hits = |rule: &Value| {
        rule_matches(
            rule,
            &RuleInput {
                group: &group,
                version: &version,
                resource: &resource,
                sub_resource: &req.sub_resource,
                operation: &req.operation,
                name: name_of(obj),
                namespaced,
                exact,
            },
        )
    };
    let rules: Vec<&Value> = list(mr, "resourceRules").collect();
    if rules.is_empty() {
        if is_policy {
            return false;
        }
    } else if !rules.iter().any(|r| rule_hits(r)) {
        return false;
    }
    if list(mr, "excludeResourceRules").any(rule_hits) {
        return false;
    }
    if let Some(sel) = mr.get("namespaceSelector") {
        // Cluster-scoped objects other than Namespaces are not selected by namespace.
        let labels = if kind_of(obj) == "Namespace" {
            Some(labels_of(obj))
        } else if namespaced {
            Some(labels_of(&req.namespace_object))
        } else {
            None
        };
        if let Some(labels) = labels
            && !selector_matches(sel, &labels)
        {
            return false;
        }
    }
    if let Some(sel) = mr.get("objectSelector") {
        let hit = |o: &Value| !o.is_null() && selector_matches(sel, &labels_of(o));
        if !hit(&req.object) && !hit(&req.old_object) {
            return false;
        }
    }
    true
}

struct RuleInput<'a> {
    group: &'a str,
    version: &'a str,
    resource: &'a str,
    sub_resource: &'a str,
    operation: &'a str,
    name: &'a str,
    namespaced: bool,
    exact: bool,
}

fn rule_matches(rule: &Value, r: &RuleInput<'_>) -> bool {
    let strs = |k: &str| -> Vec<&str> { list(rule, k).filter_map(Value::as_str).collect() };
    // The API server rejects a rule without these fields, so none reaches a live request;
    // `kyverno test` matches such a rule on what it does list.
    let any_or = |k: &str, v: &str| {
        let l = strs(k);
        rule.get(k).is_none() || l.contains(&"*") || l.contains(&v)
    };
    if !any_or("apiGroups", r.group) || !any_or("operations", r.operation) {
        return false;
    }
    // Under `Equivalent` a request for another version of a listed resource is
    // converted and matched; offline every listed version is taken as equivalent.
    if r.exact && !any_or("apiVersions", r.version) {
        return false;
    }
    let full = if r.sub_resource.is_empty() {
        r.resource.to_string()
    } else {
        format!("{}/{}", r.resource, r.sub_resource)
    };
    let res_hit = strs("resources").iter().any(|p| {
        *p == "*" && r.sub_resource.is_empty()
            || *p == "*/*"
            || *p == full
            || p.strip_suffix("/*")
                .is_some_and(|base| base == r.resource && !r.sub_resource.is_empty())
            || p.strip_prefix("*/")
                .is_some_and(|sub| sub == r.sub_resource)
    });
    if !res_hit {
        return false;
    }
    let names = strs("resourceNames");
    if !names.is_empty() && !names.contains(&r.name) {
        return false;
    }
    match rule.get("scope").and_then(Value::as_str).unwrap_or("*") {
        "Cluster" => !r.namespaced,
        "Namespaced" => r.namespaced,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(spec: Value) -> Value {
        let mut spec = spec;
        if spec.get("matchConstraints").is_none() {
            spec["matchConstraints"] = json!({"resourceRules": [{
                "apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]});
        }
        json!({"apiVersion": "admissionregistration.k8s.io/v1",
               "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "p"}, "spec": spec})
    }

    fn binding(spec: Value) -> Value {
        let mut spec = spec;
        spec["policyName"] = json!("p");
        if spec.get("validationActions").is_none() {
            spec["validationActions"] = json!(["Deny"]);
        }
        json!({"apiVersion": "admissionregistration.k8s.io/v1",
               "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "b"}, "spec": spec})
    }

    fn deploy(ns: &str, replicas: i64, labels: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "d", "namespace": ns, "labels": labels},
               "spec": {"replicas": replicas}})
    }

    fn create(obj: Value) -> VapRequest {
        let ns = obj
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("default")
            .to_string();
        VapRequest {
            operation: "CREATE".into(),
            object: obj,
            namespace_object: json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": ns, "labels": {"env": ns, "kubernetes.io/metadata.name": ns}}}),
            user: VapUser {
                username: "alice".into(),
                groups: vec!["dev".into()],
                ..Default::default()
            },
            ..Default::default()
        }
    }

    const REPLICAS: &str = "object.spec.replicas <= 3";

    /// (case, policy spec, binding spec, request, denied, message contains)
    #[test]
    fn table() {
        let v = |e: &str| json!({"validations": [{"expression": e}]});
        let cases: Vec<(&str, Value, Value, VapRequest, bool, &str)> = vec![
            (
                "passes",
                v(REPLICAS),
                json!({}),
                create(deploy("a", 2, json!({}))),
                false,
                "",
            ),
            (
                "fails with the default message",
                v(REPLICAS),
                json!({}),
                create(deploy("a", 5, json!({}))),
                true,
                "failed expression: object.spec.replicas <= 3",
            ),
            (
                "message",
                json!({"validations": [{"expression": REPLICAS, "message": "too many"}]}),
                json!({}),
                create(deploy("a", 5, json!({}))),
                true,
                "too many",
            ),
            (
                "messageExpression wins over message",
                json!({"validations": [{"expression": REPLICAS, "message": "m",
                "messageExpression": "'replicas ' + string(object.spec.replicas) + ' > 3'"}]}),
                json!({}),
                create(deploy("a", 5, json!({}))),
                true,
                "replicas 5 > 3",
            ),
            (
                "a failing messageExpression falls back to message",
                json!({"validations": [{"expression": REPLICAS, "message": "m",
                "messageExpression": "object.nope"}]}),
                json!({}),
                create(deploy("a", 5, json!({}))),
                true,
                "m",
            ),
            (
                "operation not matched",
                v(REPLICAS),
                json!({}),
                VapRequest {
                    operation: "DELETE".into(),
                    ..create(deploy("a", 5, json!({})))
                },
                false,
                "",
            ),
            (
                "other resource",
                v(REPLICAS),
                json!({}),
                create(
                    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "namespace": "a"}}),
                ),
                false,
                "",
            ),
            (
                "namespace selector out",
                v(REPLICAS),
                json!({"matchResources": {"namespaceSelector": {"matchLabels": {"env": "prod"}}}}),
                create(deploy("a", 5, json!({}))),
                false,
                "",
            ),
            (
                "namespace selector in",
                v(REPLICAS),
                json!({"matchResources": {"namespaceSelector": {"matchExpressions": [
                 {"key": "env", "operator": "In", "values": ["prod", "a"]}]}}}),
                create(deploy("a", 5, json!({}))),
                true,
                "failed expression",
            ),
            (
                "object selector out",
                v(REPLICAS),
                json!({"matchResources": {"objectSelector": {"matchLabels": {"app": "x"}}}}),
                create(deploy("a", 5, json!({"app": "y"}))),
                false,
                "",
            ),
            (
                "excluded by the binding",
                v(REPLICAS),
                json!({"matchResources": {"excludeResourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"],
                 "operations": ["*"], "resources": ["deployments"], "resourceNames": ["d"]}]}}),
                create(deploy("a", 5, json!({}))),
                false,
                "",
            ),
            (
                "warn does not deny",
                v(REPLICAS),
                json!({"validationActions": ["Warn"]}),
                create(deploy("a", 5, json!({}))),
                false,
                "",
            ),
            (
                "match condition false skips",
                json!({"matchConditions": [{"name": "only-prod", "expression": "request.namespace == 'prod'"}],
                    "validations": [{"expression": REPLICAS}]}),
                json!({}),
                create(deploy("a", 5, json!({}))),
                false,
                "",
            ),
            (
                "match condition true applies",
                json!({"matchConditions": [{"name": "alice", "expression": "request.userInfo.username == 'alice'"}],
                    "validations": [{"expression": REPLICAS}]}),
                json!({}),
                create(deploy("a", 5, json!({}))),
                true,
                "failed expression",
            ),
            (
                "variables",
                json!({"variables": [{"name": "max", "expression": "3"},
                                  {"name": "over", "expression": "object.spec.replicas > variables.max"}],
                    "validations": [{"expression": "!variables.over", "message": "over"}]}),
                json!({}),
                create(deploy("a", 5, json!({}))),
                true,
                "over",
            ),
            (
                "an error fails closed by default",
                v("object.spec.missing == 1"),
                json!({}),
                create(deploy("a", 1, json!({}))),
                true,
                "resulted in error",
            ),
            (
                "an error is ignored under Ignore",
                json!({"failurePolicy": "Ignore", "validations": [{"expression": "object.spec.missing == 1"}]}),
                json!({}),
                create(deploy("a", 1, json!({}))),
                false,
                "",
            ),
            (
                "reason Forbidden",
                json!({"validations": [{"expression": REPLICAS, "reason": "Forbidden"}]}),
                json!({}),
                create(deploy("a", 5, json!({}))),
                true,
                "failed expression",
            ),
            (
                "strings and macros",
                json!({"validations": [{"expression":
                "object.metadata.name.upperAscii() == 'D' && ['a','b'].join('-') == 'a-b' && 'x,y'.split(',').size() == 2 && object.metadata.name.matches('^d$') && [1,2,3].isSorted() && [1,2].exists_one(x, x == 2) && [1,2].map(x, x * 2).filter(x, x > 2) == [4]"}]}),
                json!({}),
                create(deploy("a", 1, json!({}))),
                false,
                "",
            ),
            (
                "quantities",
                json!({"validations": [{"expression": "quantity('1Gi').isGreaterThan(quantity('512Mi')) && quantity('100m').compareTo(quantity('0.1')) == 0"}]}),
                json!({}),
                create(deploy("a", 1, json!({}))),
                false,
                "",
            ),
            (
                "optional fields",
                json!({"validations": [{"expression": "object.spec.?template.orValue('none') == 'none'"}]}),
                json!({}),
                create(deploy("a", 1, json!({}))),
                false,
                "",
            ),
        ];
        for (name, pspec, bspec, req, denied, msg) in cases {
            let objs = vec![policy(pspec), binding(bspec)];
            let out = evaluate(&objs, &req);
            assert_eq!(!out.allowed, denied, "{name}: {out:?}");
            if denied {
                assert!(out.denials[0].message.contains(msg), "{name}: {out:?}");
            }
        }
    }

    #[test]
    fn actions_reason_and_status_text() {
        let objs = vec![
            policy(
                json!({"validations": [{"expression": REPLICAS, "message": "too many", "reason": "Forbidden"}]}),
            ),
            binding(json!({"validationActions": ["Deny", "Warn", "Audit"]})),
        ];
        let req = create(deploy("a", 5, json!({})));
        let out = evaluate(&objs, &req);
        assert_eq!(out.denials[0].code, 403);
        assert_eq!(out.warnings.len(), 1);
        assert_eq!(out.audits.len(), 1);
        assert_eq!(
            out.denials[0].status_message(&req.object),
            "deployments.apps \"d\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' \
             denied request: too many"
        );
    }

    #[test]
    fn denial_text_round_trips_through_the_live_parser() {
        let objs = vec![
            policy(json!({"validations": [{"expression": REPLICAS}]})),
            binding(json!({})),
        ];
        let req = create(deploy("a", 5, json!({})));
        let d = &evaluate(&objs, &req).denials[0];
        let parsed = crate::target::parse_denial(d.code, "Invalid", &d.status_message(&req.object));
        assert_eq!(
            parsed.by,
            crate::target::DeniedBy::ValidatingAdmissionPolicy {
                policy: "p".into(),
                binding: "b".into()
            }
        );
    }

    #[test]
    fn params_by_name_selector_and_missing() {
        let p = policy(json!({
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "validations": [{"expression": "object.spec.replicas <= int(params.data.max)",
                             "messageExpression": "'max is ' + params.data.max"}]}));
        let cm = |name: &str, ns: &str, max: &str| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns, "labels": {"role": "limits"}}, "data": {"max": max}})
        };
        let req = create(deploy("a", 5, json!({})));
        let cases: Vec<(&str, Value, Vec<Value>, bool, &str)> = vec![
            (
                "by name",
                json!({"paramRef": {"name": "lim", "namespace": "cfg"}}),
                vec![cm("lim", "cfg", "3")],
                true,
                "max is 3",
            ),
            (
                "by name, allows",
                json!({"paramRef": {"name": "lim", "namespace": "cfg"}}),
                vec![cm("lim", "cfg", "9")],
                false,
                "",
            ),
            (
                "namespaced params default to the request's namespace",
                json!({"paramRef": {"name": "lim"}}),
                vec![cm("lim", "a", "2")],
                true,
                "max is 2",
            ),
            (
                "selector, any denies",
                json!({"paramRef": {"selector": {"matchLabels": {"role": "limits"}}, "namespace": "cfg"}}),
                vec![cm("x", "cfg", "9"), cm("y", "cfg", "1")],
                true,
                "max is 1",
            ),
            (
                "missing denies by default",
                json!({"paramRef": {"name": "nope", "namespace": "cfg"}}),
                vec![],
                true,
                "no params found",
            ),
            (
                "missing with Allow",
                json!({"paramRef": {"name": "nope", "namespace": "cfg",
                "parameterNotFoundAction": "Allow"}}),
                vec![],
                false,
                "",
            ),
            (
                "a binding without paramRef is misconfigured",
                json!({}),
                vec![],
                true,
                "failed to configure binding",
            ),
        ];
        let mut ignoring = p.clone();
        ignoring["spec"]["failurePolicy"] = json!("Ignore");
        let missing = binding(json!({"paramRef": {"name": "nope", "namespace": "cfg"}}));
        let out = evaluate(&[ignoring, missing], &req);
        assert!(out.allowed && out.errors.len() == 1, "{out:?}");
        for (name, bspec, params, denied, msg) in cases {
            let mut objs = vec![p.clone(), binding(bspec)];
            objs.extend(params);
            let out = evaluate(&objs, &req);
            assert_eq!(!out.allowed, denied, "{name}: {out:?}");
            if denied {
                assert!(out.denials[0].message.contains(msg), "{name}: {out:?}");
            }
        }
    }

    #[test]
    fn authorizer_and_unknown_functions_are_unsupported_not_allowed() {
        for expr in [
            "authorizer.group('').resource('pods').check('get').allowed()",
            "object.metadata.name.noSuchFunction()",
            "url('https://x').getHost() == 'x'",
            "duration('1h') > duration('1m')",
        ] {
            let objs = vec![
                policy(json!({"validations": [{"expression": expr}]})),
                binding(json!({})),
            ];
            let out = evaluate(&objs, &create(deploy("a", 1, json!({}))));
            assert!(!out.allowed, "{expr}: {out:?}");
            assert!(out.unsupported().is_some(), "{expr}: {out:?}");
        }
        // Through a chain of variables the reason survives; an unused one does not matter.
        let chained = json!({"variables": [
                {"name": "a", "expression": "authorizer.group('').resource('pods').check('get').allowed()"},
                {"name": "b", "expression": "variables.a && true"},
                {"name": "unused", "expression": "url('x')"}],
            "validations": [{"expression": "variables.b"}]});
        let out = evaluate(
            &[policy(chained), binding(json!({}))],
            &create(deploy("a", 1, json!({}))),
        );
        let e = out.unsupported().expect("unsupported");
        assert!(
            e.unsupported.as_deref().unwrap().contains("authorizer"),
            "{out:?}"
        );
        let unused = json!({"variables": [{"name": "unused", "expression": "url('x')"}],
            "validations": [{"expression": "true"}]});
        let out = evaluate(
            &[policy(unused), binding(json!({}))],
            &create(deploy("a", 1, json!({}))),
        );
        assert!(out.allowed && out.errors.is_empty(), "{out:?}");
    }

    /// (case, cel block, celPreconditions, params objects, expected verdict)
    type CelCase = (&'static str, Value, Option<Value>, Vec<Value>, CelVerdict);

    #[test]
    fn kyverno_cel_blocks() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "lim", "namespace": "a"}, "data": {"max": "3"}});
        let with_params = json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "paramRef": {"name": "lim"},
            "expressions": [{"expression": "object.spec.replicas <= int(params.data.max)",
                             "messageExpression": "'at most ' + params.data.max"}]});
        let cases: Vec<CelCase> = vec![
            (
                "passes",
                json!({"expressions": [{"expression": "object.spec.replicas >= 1"}]}),
                None,
                vec![],
                CelVerdict::Pass,
            ),
            (
                "fails with its message",
                json!({"expressions": [{"expression": "true"},
                    {"expression": REPLICAS, "message": "too many"}]}),
                None,
                vec![],
                CelVerdict::Fail("too many".into()),
            ),
            (
                "variables and namespaceObject",
                json!({"variables": [{"name": "env", "expression": "namespaceObject.metadata.labels.env"}],
                    "expressions": [{"expression": "variables.env != 'a'",
                                     "messageExpression": "'not in ' + variables.env"}]}),
                None,
                vec![],
                CelVerdict::Fail("not in a".into()),
            ),
            (
                "a false celPrecondition skips",
                json!({"expressions": [{"expression": "false"}]}),
                Some(json!([{"name": "prod", "expression": "request.namespace == 'prod'"}])),
                vec![],
                CelVerdict::Skip("celPreconditions not met".into()),
            ),
            (
                "a true celPrecondition applies",
                json!({"expressions": [{"expression": "false", "message": "no"}]}),
                Some(
                    json!([{"name": "alice", "expression": "request.userInfo.username == 'alice'"}]),
                ),
                vec![],
                CelVerdict::Fail("no".into()),
            ),
            (
                "an evaluation error fails",
                json!({"expressions": [{"expression": "object.spec.missing == 1"}]}),
                None,
                vec![],
                CelVerdict::Fail(
                    "expression 'object.spec.missing == 1' resulted in error: No such key: missing"
                        .into(),
                ),
            ),
            (
                "params from the request's namespace",
                with_params.clone(),
                None,
                vec![cm],
                CelVerdict::Fail("at most 3".into()),
            ),
            (
                "a missing named param is an error",
                with_params,
                None,
                vec![],
                CelVerdict::Error(
                    "error in parameterized resource: ConfigMap lim not found".into(),
                ),
            ),
            (
                "none selected under Deny is an error",
                json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                    "paramRef": {"selector": {"matchLabels": {"x": "y"}},
                                 "parameterNotFoundAction": "Deny"},
                    "expressions": [{"expression": "false"}]}),
                None,
                vec![],
                CelVerdict::Error("error in parameterized resource: no params found".into()),
            ),
            (
                "none selected otherwise leaves nothing to validate",
                json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                    "paramRef": {"selector": {"matchLabels": {"x": "y"}}},
                    "expressions": [{"expression": "false"}]}),
                None,
                vec![],
                CelVerdict::Pass,
            ),
        ];
        let req = create(deploy("a", 5, json!({})));
        for (name, cel, pre, objects, want) in cases {
            let got = evaluate_kyverno_cel(&objects, &cel, None, pre.as_ref(), &req);
            assert_eq!(got, want, "{name}");
        }
        let untitled = json!({"expressions": [{"expression": "false"}]});
        assert_eq!(
            evaluate_kyverno_cel(&[], &untitled, Some("rule says no"), None, &req),
            CelVerdict::Fail("rule says no".into())
        );
        let auth = json!({"expressions": [{"expression":
            "authorizer.group('').resource('pods').check('get').allowed()"}]});
        match evaluate_kyverno_cel(&[], &auth, None, None, &req) {
            CelVerdict::Unsupported(why) => assert!(why.contains("authorizer"), "{why}"),
            other => panic!("authorizer: {other:?}"),
        }
    }

    fn vpol(spec: Value) -> Value {
        let mut spec = spec;
        spec["matchConstraints"] = json!({"resourceRules": [{
            "apiGroups": [""], "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}]});
        json!({"apiVersion": "policies.kyverno.io/v1alpha1", "kind": "ValidatingPolicy",
               "metadata": {"name": "vp"}, "spec": spec})
    }

    fn pod_spec(host_network: bool) -> Value {
        json!({"hostNetwork": host_network, "containers": [{"name": "c", "image": "nginx"}]})
    }

    /// (case, policy, object, expected)
    type VpolCase = (&'static str, Value, Value, Applied);

    #[test]
    fn validating_policies_and_their_autogen_copies() {
        let no_host = json!({"validations": [
            {"expression": "object.spec.?hostNetwork.orValue(false) == false", "message": "no"}]});
        let pod = |h: bool| {
            json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "a"}, "spec": pod_spec(h)})
        };
        let deployment = |h: bool| {
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "a"},
            "spec": {"template": {"metadata": {"labels": {"app": "x"}}, "spec": pod_spec(h)}}})
        };
        let cronjob = |h: bool| {
            json!({"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "c", "namespace": "a"},
            "spec": {"jobTemplate": {"spec": {"template": {"spec": pod_spec(h)}}}}})
        };
        let mut only_deployments = no_host.clone();
        only_deployments["autogen"] = json!({"podControllers": {"controllers": ["Deployment"]}});
        // The controller's own name stays; its labels move to the template's.
        let named = json!({"validations": [{"expression":
            "object.metadata.name != 'bad' && object.metadata.labels.app == 'x'"}]});
        let mut namespaced = vpol(no_host.clone());
        namespaced["kind"] = json!("NamespacedValidatingPolicy");
        namespaced["metadata"]["namespace"] = json!("other");
        let cases: Vec<VpolCase> = vec![
            (
                "pod passes",
                vpol(no_host.clone()),
                pod(false),
                Applied::Passed,
            ),
            (
                "pod fails",
                vpol(no_host.clone()),
                pod(true),
                Applied::Failed,
            ),
            (
                "deployment by autogen",
                vpol(no_host.clone()),
                deployment(true),
                Applied::Failed,
            ),
            (
                "deployment passes",
                vpol(no_host.clone()),
                deployment(false),
                Applied::Passed,
            ),
            (
                "cronjob by autogen",
                vpol(no_host.clone()),
                cronjob(true),
                Applied::Failed,
            ),
            (
                "controllers limited",
                vpol(only_deployments.clone()),
                cronjob(true),
                Applied::NotMatched,
            ),
            (
                "listed controller",
                vpol(only_deployments),
                deployment(true),
                Applied::Failed,
            ),
            (
                "template labels, own name",
                vpol(named),
                deployment(false),
                Applied::Passed,
            ),
            (
                "another namespace's policy",
                namespaced,
                pod(true),
                Applied::NotMatched,
            ),
        ];
        for (name, policy, obj, want) in cases {
            let mut out = VapOutcome::default();
            let got = evaluate_validating_policy(&[], &policy, &create(obj), &mut out);
            assert_eq!(got, want, "{name}: {out:?}");
        }
        // Audit-only policies fail without denying.
        let mut audit = vpol(no_host);
        audit["spec"]["validationActions"] = json!(["Audit"]);
        let mut out = VapOutcome::default();
        let got = evaluate_validating_policy(&[], &audit, &create(pod(true)), &mut out);
        assert_eq!(got, Applied::Failed);
        assert!(out.denials.is_empty() && out.audits.len() == 1, "{out:?}");
    }

    #[test]
    fn retargeting_moves_only_object_fields() {
        for (from, to) in [
            ("object.spec.x", "object.spec.template.spec.x"),
            ("oldObject.spec.x", "oldObject.spec.template.spec.x"),
            (
                "object.metadata.labels",
                "object.spec.template.metadata.labels",
            ),
            ("object.metadata.name", "object.metadata.name"),
            ("object.metadata.namespace", "object.metadata.namespace"),
            (
                "object.metadata.names",
                "object.spec.template.metadata.names",
            ),
            ("params.object.spec", "params.object.spec"),
            ("myobject.spec", "myobject.spec"),
            ("object.specs", "object.specs"),
            (
                "variables.x(object.spec)",
                "variables.x(object.spec.template.spec)",
            ),
        ] {
            assert_eq!(retarget(from, "spec.template"), to, "{from}");
        }
    }

    #[test]
    fn resource_get_reads_the_given_objects_only() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "regs", "namespace": "default"}, "data": {"r": "ghcr.io"}});
        let p = vpol(json!({"validations": [{"expression":
            "resource.get('v1', 'configmaps', 'default', 'regs').data.r == 'ghcr.io' && \
             resource.Get('v1', 'configmaps', 'default', 'regs') == \
             resource.get('v1', 'configmaps', 'default', 'regs')"}]}));
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "a"}, "spec": pod_spec(false)});
        let run = |cluster: Option<Vec<Value>>| {
            let mut req = create(pod.clone());
            req.cluster = cluster.map(Arc::new);
            let mut out = VapOutcome::default();
            let applied = evaluate_validating_policy(&[], &p, &req, &mut out);
            (applied, out)
        };
        assert_eq!(run(Some(vec![cm])).0, Applied::Passed);
        // Missing: an evaluation error, which fails closed.
        let (applied, out) = run(Some(vec![]));
        assert_eq!(applied, Applied::Failed);
        assert!(
            out.unsupported().is_none() && out.errors[0].message.contains("not found"),
            "{out:?}"
        );
        // Without the library (a VAP) the call cannot be evaluated: never a pass.
        assert!(run(None).1.unsupported().is_some());
    }

    #[test]
    fn cel_policy_exceptions() {
        let exc = |expr: &str| {
            json!({"apiVersion": "policies.kyverno.io/v1alpha1",
            "kind": "PolicyException", "metadata": {"name": "e"},
            "spec": {"matchConditions": [{"name": "c", "expression": expr}]}})
        };
        let req = create(deploy("test-ns", 1, json!({})));
        assert_eq!(
            exception_applies(&exc("object.metadata.namespace == 'test-ns'"), &req),
            Ok(true)
        );
        assert_eq!(
            exception_applies(&exc("object.metadata.namespace == 'x'"), &req),
            Ok(false)
        );
        assert!(
            exception_applies(&exc("resource.Get('v1', 'x', 'y', 'z') != null"), &req).is_err()
        );
    }

    #[test]
    fn plurals() {
        for (k, p) in [
            ("Pod", "pods"),
            ("Ingress", "ingresses"),
            ("NetworkPolicy", "networkpolicies"),
            ("Endpoints", "endpoints"),
            ("Gateway", "gateways"),
        ] {
            assert_eq!(plural(k), p);
        }
    }
}

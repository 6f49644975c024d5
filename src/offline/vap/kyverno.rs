//! Kyverno's CEL policies on the VAP evaluator: `validate.cel` rules, CEL `PolicyException`
//! match conditions, and `ValidatingPolicy` with its autogen copies for Pod controllers.

use super::*;

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
    Unsupported(Unsupported),
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
    if let Err(mut e) = check_spec_cost(&spec) {
        e.field = e
            .field
            .replacen("spec.validations", "validate.cel.expressions", 1)
            .replacen("spec.", "validate.cel.", 1);
        return CelVerdict::Error(e.to_string());
    }
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
        run_validations(&spec, req, params, &mut report, false);
    }
    let applied = report.applied;
    if let Some(why) = out.unsupported().and_then(|e| e.unsupported.clone()) {
        return CelVerdict::Unsupported(why);
    }
    if let Some(d) = out.denials.first() {
        return CelVerdict::Fail(d.message.clone());
    }
    match applied {
        Applied::NotMatched => CelVerdict::Skip("celPreconditions not met".into()),
        _ => CelVerdict::Pass,
    }
}

/// Whether every `matchConditions` entry of a Kyverno CEL `PolicyException` holds for
/// `req`; an error (or what the interpreter cannot evaluate) is `Err`, whose message is
/// the reason alone when the interpreter is the cause.
pub fn exception_applies(exception: &Value, req: &VapRequest) -> Result<bool, EvalError> {
    let ctx = base_context(req, &Value::Null);
    let conditions = exception
        .pointer("/spec/matchConditions")
        .unwrap_or(&Value::Null);
    conditions_hold(&ctx, conditions).map_err(|e| match e.unsupported {
        Some(why) => EvalError::unsupported(why),
        None => e,
    })
}

/// What the CEL PolicyExceptions for a policy do to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exemption {
    /// None of them holds.
    None,
    /// One that names neither `images` nor `allowedValues` holds: the policy does not
    /// run on the request (the exception's name).
    Whole(String),
    /// Those that hold only allow what they name: the policy runs and reads them as
    /// `exceptions.allowedImages` / `exceptions.allowedValues`.
    Partial(Allowances),
}

/// The CEL `PolicyException`s (policies.kyverno.io) among `exceptions` that name
/// `policy` (by name and kind) applied to `req`, as Kyverno's CEL engines do
/// (`pkg/cel/policies/{vpol,mpol,gpol}/compiler/policy.go`): one that holds with neither
/// `images` nor `allowedValues` exempts the request whole; the others that hold add what
/// they allow. An exception whose conditions fail to evaluate is the error, unless a whole
/// exemption was found before it; under the policy's `failurePolicy: Ignore` a
/// ValidatingPolicy takes such an exception as not holding.
pub fn exemption<'a>(
    policy: &Value,
    exceptions: impl IntoIterator<Item = &'a Value>,
    req: &VapRequest,
) -> Result<Exemption, EvalError> {
    let (name, kind) = (name_of(policy), kind_of(policy));
    let ignore = kind.ends_with("ValidatingPolicy")
        && policy
            .pointer("/spec/failurePolicy")
            .and_then(Value::as_str)
            == Some("Ignore");
    let mut allowed = Allowances::default();
    let mut whole: Option<String> = None;
    for e in exceptions.into_iter().filter(|e| {
        kind_of(e) == "PolicyException"
            && e.get("apiVersion")
                .and_then(Value::as_str)
                .is_some_and(|v| v.starts_with("policies.kyverno.io/"))
            && list(e.get("spec").unwrap_or(&Value::Null), "policyRefs").any(|r| {
                r.get("name").and_then(Value::as_str) == Some(name)
                    && r.get("kind").and_then(Value::as_str) == Some(kind)
            })
    }) {
        let holds = match exception_applies(e, req) {
            Ok(h) => h,
            Err(_) if whole.is_some() => continue,
            Err(_) if ignore => false,
            Err(err) => return Err(err),
        };
        if !holds {
            continue;
        }
        let strs = |k: &str| -> Vec<String> {
            list(e.get("spec").unwrap_or(&Value::Null), k)
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        };
        let (images, values) = (strs("images"), strs("allowedValues"));
        if images.is_empty() && values.is_empty() {
            whole.get_or_insert_with(|| name_of(e).to_string());
        } else if whole.is_none() {
            allowed.images.extend(images);
            allowed.values.extend(values);
        }
    }
    Ok(match whole {
        Some(n) => Exemption::Whole(n),
        None if allowed == Allowances::default() => Exemption::None,
        None => Exemption::Partial(allowed),
    })
}

/// `req` with what the CEL PolicyExceptions among `objects` allow for `policy`; `None`
/// when one of them exempts the request whole.
pub(super) fn with_exemptions<'r>(
    objects: &[Value],
    policy: &Value,
    req: &'r VapRequest,
) -> Result<Option<std::borrow::Cow<'r, VapRequest>>, EvalError> {
    Ok(match exemption(policy, objects, req)? {
        Exemption::Whole(_) => None,
        Exemption::Partial(a) => {
            let mut req = req.clone();
            req.exceptions.images.extend(a.images);
            req.exceptions.values.extend(a.values);
            Some(std::borrow::Cow::Owned(req))
        }
        Exemption::None => Some(std::borrow::Cow::Borrowed(req)),
    })
}

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
    let req = match with_exemptions(objects, policy, req) {
        Ok(Some(req)) => req,
        Ok(None) => return Applied::NotMatched,
        Err(e) => {
            out.errors.push(VapError {
                policy: name_of(policy).to_string(),
                binding: String::new(),
                message: e.message,
                unsupported: e.unsupported,
            });
            return Applied::Errored;
        }
    };
    match super::autogen::autogen_policy(policy, kind_of(obj), super::autogen::Rewrite::Validating)
    {
        Some(copy) => evaluate_binding(objects, &copy, None, &req, out),
        None => evaluate_binding(objects, policy, None, &req, out),
    }
}

/// A JSON-mode (`evaluation.mode: JSON`) ValidatingPolicy on a payload: no match
/// constraints (Kyverno's JSON engine has no matcher, `pkg/cel/policies/vpol/engine`),
/// `object` the payload, then match conditions, variables and validations as for a
/// Kubernetes object.
pub fn evaluate_json_policy(
    policy: &Value,
    payload: &Value,
    cluster: &Arc<Vec<Value>>,
    services: &Arc<CliServices>,
    out: &mut VapOutcome,
) -> Applied {
    let mut any = policy.clone();
    any["spec"]["matchConstraints"] = json!({"resourceRules": [{"apiGroups": ["*"],
        "apiVersions": ["*"], "resources": ["*"], "operations": ["*"]}]});
    let req = VapRequest {
        operation: "CREATE".into(),
        object: payload.clone(),
        cluster: Some(cluster.clone()),
        services: Some(services.clone()),
        ..Default::default()
    };
    evaluate_binding(&[], &any, None, &req, out)
}

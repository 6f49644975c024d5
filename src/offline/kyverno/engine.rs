//! Rule evaluation: exceptions, preconditions, validate (pattern, anyPattern, deny,
//! foreach, `cel` through `offline::vap`), and the calls into mutate/generate; context
//! entries are loaded by `entries`. It must not read files or print.

use serde_json::{Value, json};

use super::conditions;
use super::context::Context;
use super::entries::{Options, load_context, load_entries};
use super::matching::{Facts, rule_matches, rule_matches_with, wildcard_match};
use super::outcome::{Outcome, Unsupported, Upstream};
use super::pattern::{PatternError, check_as_written, validate_pattern};
use super::rule::Rule;
use super::vars::{self, VarError};
use super::{Policy, Request, Response, RuleKind, RuleResult, RuleStatus, generate, mutate};

/// Full admission with extra knowledge; see [`super::admit`].
pub fn admit_with(policies: &[Policy], req: &Request, opts: &Options) -> Response {
    let mut resp = Response {
        patched: req.object.clone(),
        namespace_labels: req.namespace_labels.clone(),
        ..Response::default()
    };
    // Mutation first, every policy in order, each seeing the previous result. The
    // context is built once per state of the object and shared by the rules.
    let mut current = req.clone();
    let mut base = Base::of(&current);
    for policy in policies {
        for rule in &policy.rules {
            if rule.mutate.is_none() {
                continue;
            }
            let (result, patched) = run_mutate(policy, rule, &current, opts, &base);
            match patched {
                Some(Patched::Request(p)) => {
                    resp.patched = p.clone();
                    current.object = p;
                    base = Base::of(&current);
                }
                Some(Patched::Targets(t)) => resp.patched_targets.extend(t),
                None => {}
            }
            if let Some(r) = result {
                resp.results.push(r);
            }
        }
    }
    let validated = current;
    for policy in policies {
        for rule in &policy.rules {
            if rule.validate.is_some() {
                if let Some(r) = run_validate(policy, rule, &validated, opts, &base) {
                    resp.results.push(r);
                }
            } else if rule.generate.is_some() {
                let (r, generated) = run_generate(policy, rule, &validated, opts, &base);
                if !generated.refused.is_empty() {
                    resp.failed_requests.push(super::background::FailedRequest {
                        policy: policy.name.clone(),
                        rule: rule.name.clone(),
                        message: generated.refused.join("; "),
                    });
                }
                resp.generated.extend(generated.objects);
                if let Some(r) = r {
                    resp.results.push(r);
                }
            } else if rule.verify_images.is_some()
                && rule_matches_with(rule, policy, &validated, &base.facts).unwrap_or(false)
            {
                resp.results.push(result(
                    policy,
                    rule,
                    RuleKind::VerifyImages,
                    Outcome::unsupported(Unsupported::VerifyImages),
                ));
            }
        }
    }
    resp
}

fn result(policy: &Policy, rule: &Rule, kind: RuleKind, outcome: Outcome) -> RuleResult {
    RuleResult {
        policy: policy.name.clone(),
        rule: rule.name.clone(),
        kind,
        status: outcome.status,
        message: outcome.message,
        unsupported: outcome.unsupported,
        pod_security: outcome.pod_security,
        exceptions: outcome.exceptions,
        upstream: outcome.upstream.map(|u| {
            let message = rule.validate_field("message").and_then(Value::as_str);
            u.render(&rule.name, message.unwrap_or(""))
        }),
    }
}

/// What every rule of one request (one state of its object) shares: the JMESPath
/// context and what matching reads of the object.
struct Base {
    ctx: Context,
    facts: Facts,
}

impl Base {
    fn of(req: &Request) -> Base {
        Base {
            ctx: Context::from_request(req),
            facts: Facts::of(req),
        }
    }
}

/// Outcome of the steps every rule shares before its body runs. `Run` carries the rule's
/// context and the PolicyExceptions that matched, all of them with `podSecurity`
/// controls (only a podSecurity rule runs with such exceptions).
enum Gate {
    Run(Context, PssExceptions),
    Done(Option<Outcome>),
}

/// The `podSecurity` controls of the matching PolicyExceptions and their keys
/// (`namespace/name`, comma-separated).
#[derive(Default)]
struct PssExceptions {
    controls: Vec<Value>,
    keys: String,
    /// The exceptions' names, for the result (`WithExceptions`).
    names: Vec<String>,
}

/// `base` is the request's context, shared by every rule (rules add their own values).
fn gate(policy: &Policy, rule: &Rule, req: &Request, opts: &Options, base: &Base) -> Gate {
    match rule_matches_with(rule, policy, req, &base.facts) {
        Ok(true) => {}
        Ok(false) => return Gate::Done(None),
        Err(e) => return Gate::Done(Some(Outcome::error(e.to_string()))),
    }
    let mut ctx = base.ctx.for_rule();
    let values = rule_values(policy, rule, opts);
    for (k, v) in values.into_iter().flatten() {
        ctx.add_variable(k, v.clone());
    }
    if !rule.context.is_empty() {
        // Names the test supplies (per rule or per resource) stand in for context entries.
        let mut supplied = values.cloned().unwrap_or_default();
        if let Value::Object(m) = &req.values {
            for (k, v) in m {
                supplied.entry(k.clone()).or_insert(v.clone());
            }
        }
        if let Err(e) = load_entries(&rule.context, &mut ctx, opts, Some(&supplied)) {
            return Gate::Done(Some(e));
        }
    }
    if let Some(pre) = &rule.preconditions {
        match conditions::evaluate_preconditions(pre, &ctx) {
            Ok(true) => {}
            Ok(false) => {
                let o = Outcome::skip("preconditions not met")
                    .worded(Upstream::Verbatim("preconditions not met".into()));
                return Gate::Done(Some(settle(o, &ctx)));
            }
            Err(e) => {
                let o = Outcome::error(format!("failed to evaluate preconditions: {e}"));
                return Gate::Done(Some(settle(o, &ctx)));
            }
        }
    }
    // Exceptions come after the context and the preconditions (pkg/engine/engine.go
    // `invokeRuleHandler`), so their conditions see the rule's context entries.
    let matched = matched_exceptions(policy, rule, req, opts, &ctx);
    if matched.is_empty() {
        return Gate::Run(ctx, PssExceptions::default());
    }
    let key = |ex: &Value| {
        let name = ex
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        match ex.pointer("/metadata/namespace").and_then(Value::as_str) {
            Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
            _ => name.to_string(),
        }
    };
    // Kyverno's exception index keeps them sorted by namespace, then name
    // (pkg/controllers/exceptions/controller.go `buildRuleIndex`); a result names them.
    let name_of = |ex: &Value| text_at(ex, "/metadata/name");
    let mut sorted = matched.clone();
    sorted.sort_by_key(|ex| (text_at(ex, "/metadata/namespace"), name_of(ex)));
    let pss_rule = rule
        .validate
        .as_ref()
        .is_some_and(|v| v.get("podSecurity").is_some_and(|p| !p.is_null()));
    let controls = |ex: &Value| {
        ex.pointer("/spec/podSecurity")
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
            .cloned()
    };
    // A podSecurity rule applies the exceptions' controls when every matching exception
    // has some; any other exception skips the rule (validate_pss.go).
    if pss_rule && matched.iter().all(|ex| controls(ex).is_some()) {
        let found = PssExceptions {
            controls: matched
                .iter()
                .filter_map(|ex| controls(ex))
                .flatten()
                .collect(),
            keys: matched
                .iter()
                .map(|ex| key(ex))
                .collect::<Vec<_>>()
                .join(", "),
            names: sorted.iter().map(|ex| name_of(ex)).collect(),
        };
        return Gate::Run(ctx, found);
    }
    let first = sorted.iter().find(|ex| !pss_rule || controls(ex).is_none());
    let mut o = Outcome::skip(format!(
        "rule excluded by PolicyException {}",
        first.map(|ex| key(ex)).unwrap_or_default()
    ));
    // A podSecurity rule names the one exception without controls (validate_pss.go);
    // any other rule every exception that matched (validate_resource.go and the other
    // handlers).
    o.exceptions = if pss_rule {
        first.map(|ex| name_of(ex)).into_iter().collect()
    } else {
        sorted.iter().map(|ex| name_of(ex)).collect()
    };
    Gate::Done(Some(o))
}

fn text_at(v: &Value, p: &str) -> String {
    v.pointer(p)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The values a test gives for this rule; values given for a rule also hold for its
/// autogen copies.
fn rule_values<'a>(
    policy: &Policy,
    rule: &Rule,
    opts: &'a Options,
) -> Option<&'a serde_json::Map<String, Value>> {
    if opts.rule_values.is_empty() {
        return None;
    }
    let exact = (policy.name.clone(), rule.name.clone());
    opts.rule_values.get(&exact).or_else(|| {
        opts.rule_values
            .get(&(policy.name.clone(), rule.base_name().to_string()))
    })
}

/// The `PolicyException`s that name this policy and rule and match the request
/// (pkg/engine/utils/exceptions.go `MatchesException`).
fn matched_exceptions<'a>(
    policy: &Policy,
    rule: &Rule,
    req: &Request,
    opts: &'a Options,
    ctx: &Context,
) -> Vec<&'a Value> {
    let rname = &rule.name;
    let mut out = Vec::new();
    for ex in &opts.exceptions {
        let Some(spec) = ex.get("spec") else {
            continue;
        };
        let Some(names) = spec.get("exceptions").and_then(Value::as_array) else {
            continue;
        };
        let covers = names.iter().any(|e| {
            let pname = e.get("policyName").and_then(Value::as_str).unwrap_or("");
            let pname_ok = wildcard_match(pname, &policy.name)
                || policy
                    .namespace
                    .as_ref()
                    .is_some_and(|ns| wildcard_match(pname, &format!("{ns}/{}", policy.name)));
            pname_ok
                && e.get("ruleNames")
                    .and_then(Value::as_array)
                    .is_some_and(|rs| {
                        rs.iter()
                            .filter_map(Value::as_str)
                            .any(|r| wildcard_match(r, rname))
                    })
        });
        if !covers {
            continue;
        }
        let as_rule =
            Rule::decode(&json!({"match": spec.get("match").cloned().unwrap_or(Value::Null)}));
        let any_policy = Policy {
            namespace: None,
            ..policy.clone()
        };
        if !rule_matches(&as_rule, &any_policy, req).unwrap_or(false) {
            continue;
        }
        if let Some(conds) = spec.get("conditions")
            && !conditions::evaluate_preconditions(conds, ctx).unwrap_or(false)
        {
            continue;
        }
        out.push(ex);
    }
    out
}

/// A rule that read a context entry the offline engine cannot load (a registry, a
/// service call) was not evaluated: its outcome is that entry's unsupported one, whatever
/// the rule made of the missing value (an error, or a variable's `default`).
fn settle(outcome: Outcome, ctx: &Context) -> Outcome {
    match ctx.load_failure() {
        Some(failed) if failed.unsupported.is_some() => failed,
        _ => outcome,
    }
}

/// What a mutate rule changed: the request's object, or existing resources (`targets`).
enum Patched {
    Request(Value),
    Targets(Vec<Value>),
}

fn run_mutate(
    policy: &Policy,
    rule: &Rule,
    req: &Request,
    opts: &Options,
    base: &Base,
) -> (Option<RuleResult>, Option<Patched>) {
    let ctx = match gate(policy, rule, req, opts, base) {
        Gate::Run(ctx, _) => ctx,
        Gate::Done(d) => {
            return (d.map(|o| result(policy, rule, RuleKind::Mutate, o)), None);
        }
    };
    let has_targets = rule
        .mutate
        .as_ref()
        .and_then(|m| m.get("targets"))
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty());
    let applied = if has_targets {
        super::existing::apply_targets(rule, &ctx, opts).map(|t| {
            let msg = format!("mutated {} target resource(s)", t.len());
            (msg, Patched::Targets(t))
        })
    } else {
        mutate::apply_rule_with(rule, &req.object, &ctx, opts)
            .map(|p| ("mutated resource".to_string(), Patched::Request(p)))
    };
    if let Some(failed) = ctx.load_failure().filter(|f| f.unsupported.is_some()) {
        return (Some(result(policy, rule, RuleKind::Mutate, failed)), None);
    }
    match applied {
        Ok((msg, patched)) => (
            Some(result(policy, rule, RuleKind::Mutate, Outcome::pass(msg))),
            Some(patched),
        ),
        Err(o) => (
            Some(result(policy, rule, RuleKind::Mutate, settle(o, &ctx))),
            None,
        ),
    }
}

fn run_generate(
    policy: &Policy,
    rule: &Rule,
    req: &Request,
    opts: &Options,
    base: &Base,
) -> (Option<RuleResult>, generate::Generated) {
    let ctx = match gate(policy, rule, req, opts, base) {
        Gate::Run(ctx, _) => ctx,
        Gate::Done(d) => {
            return (
                d.map(|o| result(policy, rule, RuleKind::Generate, o)),
                generate::Generated::default(),
            );
        }
    };
    let access = opts.background.as_deref();
    let generated = generate::apply_rule_as(rule, &req.object, &ctx, &opts.cluster, access);
    if let Some(failed) = ctx.load_failure().filter(|f| f.unsupported.is_some()) {
        return (
            Some(result(policy, rule, RuleKind::Generate, failed)),
            generate::Generated::default(),
        );
    }
    match generated {
        Ok(generate::Generated {
            objects: mut objs,
            refused,
        }) => {
            for o in &mut objs {
                generate::add_policy_labels(
                    o,
                    &policy.name,
                    policy.namespace.as_deref().unwrap_or(""),
                );
            }
            let msg = format!("generated {} object(s)", objs.len());
            (
                Some(result(policy, rule, RuleKind::Generate, Outcome::pass(msg))),
                generate::Generated {
                    objects: objs,
                    refused,
                },
            )
        }
        Err(o) => (
            Some(result(policy, rule, RuleKind::Generate, settle(o, &ctx))),
            generate::Generated::default(),
        ),
    }
}

fn run_validate(
    policy: &Policy,
    rule: &Rule,
    req: &Request,
    opts: &Options,
    base: &Base,
) -> Option<RuleResult> {
    let (ctx, pss_exceptions) = match gate(policy, rule, req, opts, base) {
        Gate::Run(ctx, pss) => (ctx, pss),
        Gate::Done(d) => {
            return d.map(|o| result(policy, rule, RuleKind::Validate, o));
        }
    };
    let validate = rule.validate.as_ref().unwrap_or(&Value::Null);
    let cel = validate.get("cel").filter(|c| !c.is_null());
    let pss = validate.get("podSecurity").filter(|c| !c.is_null());
    let manifests = validate.get("manifests").filter(|c| !c.is_null());
    // Kyverno runs neither pod security nor manifest validation on a deletion
    // (pkg/engine/handlers/validation/validate_pss.go and validate_manifest.go ask
    // `IsDeleteRequest`); its CEL handler does run, with `object` null and the deleted
    // object as `oldObject` (validate_cel.go `Process`).
    if req.operation == "DELETE" && (pss.is_some() || manifests.is_some()) {
        return None;
    }
    let outcome = match (cel, pss) {
        (Some(cel), _) => validate_cel(cel, rule, req, opts),
        (None, Some(pss)) => {
            let resource = super::matching::subject(req);
            let o = super::pss::validate_with(
                pss,
                resource,
                &pss_exceptions.controls,
                &pss_exceptions.keys,
            );
            let o = if o.status == RuleStatus::Skip {
                Outcome {
                    exceptions: pss_exceptions.names.clone(),
                    ..o
                }
            } else {
                o
            };
            match o.status {
                // Kyverno's message, without the rule's `validate.message`.
                RuleStatus::Fail => {
                    let message = format!("Validation rule '{}' failed. {}", rule.name, o.message);
                    Outcome {
                        upstream: Some(Box::new(Upstream::Verbatim(message.clone()))),
                        message,
                        ..o
                    }
                }
                _ => o,
            }
        }
        (None, None) => {
            let resource = super::matching::subject(req);
            validate_body(validate, resource, &ctx, opts, !rule.validate_vars)
        }
    };
    let Outcome {
        status,
        message: detail,
        unsupported,
        pod_security,
        exceptions,
        upstream,
    } = settle(outcome, &ctx);
    if status == RuleStatus::Fail
        && cel.is_none()
        && manifests.is_none()
        && existing_violation(policy, rule, req, opts)
    {
        let why = "skipping the rule evaluation as pre-existing violations are allowed";
        return Some(result(
            policy,
            rule,
            RuleKind::Validate,
            Outcome::skip(why).worded(Upstream::Verbatim(why.into())),
        ));
    }
    // Kyverno's words: `validate.message` with its variables, else an error of its own.
    let upstream = upstream.and_then(|u| {
        let Some(m) = validate.get("message") else {
            return Some(u.render(&rule.name, ""));
        };
        let substituted = if rule.validate_vars {
            vars::substitute(m, &ctx).ok()?
        } else {
            m.clone()
        };
        Some(u.render(&rule.name, &vars::to_text(&substituted)))
    });
    let message = match status {
        // Kyverno reports a CEL rule's failure with the expression's message alone, a
        // manifest rule's with the verification's reason alone.
        RuleStatus::Fail if cel.is_none() && pss.is_none() && manifests.is_none() => {
            let user_msg = validate
                .get("message")
                .map(|m| {
                    let substituted = rule
                        .validate_vars
                        .then(|| vars::substitute_lenient(m, &ctx).ok())
                        .flatten();
                    vars::to_text(substituted.as_ref().unwrap_or(m))
                })
                .unwrap_or_default();
            if user_msg.is_empty() {
                detail
            } else if let Some((ja, en)) = crate::error::halves(&user_msg) {
                // A course policy's `Japanese / English` message: the engine's detail
                // goes with each half, so the reader's half alone still says where.
                format!("{ja} ({detail}) / {en} ({detail})")
            } else {
                format!("{user_msg} ({detail})")
            }
        }
        _ => detail,
    };
    // An unscored policy reports its failures as warnings.
    let status = if policy.unscored && status == RuleStatus::Fail {
        RuleStatus::Warn
    } else {
        status
    };
    Some(result(
        policy,
        rule,
        RuleKind::Validate,
        Outcome {
            status,
            message,
            unsupported,
            pod_security,
            exceptions,
            upstream: upstream.map(|u| Box::new(Upstream::Verbatim(u))),
        },
    ))
}

/// An Enforce rule failing an UPDATE whose old object fails it too, with
/// `allowExistingViolations` (true by default): Kyverno then skips the rule
/// (pkg/engine/handlers/validation/validate_resource.go and validate_pss.go
/// `validateOldObject`: the old object is validated as if it were being created).
fn existing_violation(policy: &Policy, rule: &Rule, req: &Request, opts: &Options) -> bool {
    let validate = rule.validate.as_ref().unwrap_or(&Value::Null);
    let action = validate
        .get("failureAction")
        .and_then(Value::as_str)
        .unwrap_or(&policy.failure_action);
    let allowed = validate
        .get("allowExistingViolations")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    if req.operation != "UPDATE"
        || !action.eq_ignore_ascii_case("enforce")
        || !allowed
        || req.old_object.is_null()
    {
        return false;
    }
    // The old object is matched with its own kind and no subresource
    // (pkg/engine/handlers/validation/utils.go `matchResource`): an old `Scale` never
    // matches a `Deployment/scale` rule.
    let old = Request {
        operation: "CREATE".into(),
        object: req.old_object.clone(),
        old_object: Value::Null,
        subresource: None,
        ..req.clone()
    };
    run_validate(policy, rule, &old, opts, &Base::of(&old))
        .is_some_and(|r| r.status == RuleStatus::Fail)
}

/// A `validate.cel` rule through the ValidatingAdmissionPolicy evaluator, with the
/// admission request Kyverno hands it (object, oldObject, request, namespaceObject).
fn validate_cel(cel: &Value, rule: &Rule, req: &Request, opts: &Options) -> Outcome {
    use crate::offline::vap;
    let subject = super::matching::subject(req);
    let namespace_object = match subject
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
    {
        Some(ns) if subject.get("kind").and_then(Value::as_str) != Some("Namespace") => {
            let mut labels = req.namespace_labels.clone();
            labels.insert("kubernetes.io/metadata.name".into(), ns.into());
            vap::namespace_object(opts.cluster.iter(), ns, labels)
        }
        _ => Value::Null,
    };
    let vreq = vap::VapRequest {
        operation: req.operation.clone(),
        object: req.object.clone(),
        old_object: req.old_object.clone(),
        namespace_object,
        user: vap::VapUser {
            username: req.user_info.username.clone(),
            groups: req.user_info.groups.clone(),
            ..Default::default()
        },
        dry_run: false,
        sub_resource: req
            .subresource
            .as_ref()
            .map(|s| s.name.clone())
            .unwrap_or_default(),
        cluster: None,
        services: None,
        parent: None,
        exceptions: Default::default(),
        trigger: None,
        // The `authorizer` library asks the RBAC the API server answers access reviews
        // from, when the caller has it.
        authorizer: opts.authorizer.clone(),
    };
    let rule_message = rule.validate_field("message").and_then(Value::as_str);
    let preconditions = rule.cel_preconditions.as_ref();
    match vap::evaluate_kyverno_cel(&opts.cluster, cel, rule_message, preconditions, &vreq) {
        vap::CelVerdict::Pass => Outcome::pass("validation rule passed"),
        vap::CelVerdict::Skip(why) => Outcome::skip(why),
        vap::CelVerdict::Fail(message) => {
            Outcome::fail(message.clone()).worded(Upstream::Verbatim(message))
        }
        vap::CelVerdict::Error(message) => Outcome::error(message),
        vap::CelVerdict::Unsupported(why) => Outcome::unsupported(Unsupported::Cel(why)),
    }
}

/// Evaluates one `validate` block (or a foreach entry) against `resource`.
/// `as_written`: the block holds no variables (known when the rule was loaded).
fn validate_body(
    validate: &Value,
    resource: &Value,
    ctx: &Context,
    opts: &Options,
    as_written: bool,
) -> Outcome {
    if let Some(manifests) = validate.get("manifests") {
        let object = ctx.document().pointer("/request/object").cloned();
        return super::manifest_sig::validate(manifests, object.as_ref().unwrap_or(resource));
    }
    if let Some(pss) = validate.get("podSecurity") {
        return super::pss::validate(pss, resource);
    }
    if let Some(pattern) = validate.get("pattern") {
        let checked = if as_written {
            check_as_written(resource, pattern)
        } else {
            validate_pattern(resource, pattern, ctx)
        };
        return match checked {
            Ok(()) => Outcome::pass("validation rule passed").worded(Upstream::Passed),
            Err(e) => pattern_outcome(&e),
        };
    }
    if let Some(any) = validate.get("anyPattern") {
        let patterns = match vars::substitute(any, ctx) {
            Ok(Value::Array(p)) => p,
            Ok(_) => return Outcome::error("anyPattern must be a list"),
            Err(e) => return Outcome::error(format!("variable substitution failed: {e}")),
        };
        let mut failures = Vec::new();
        let mut worded = Vec::new();
        let mut skips = Vec::new();
        for (i, p) in patterns.iter().enumerate() {
            match validate_pattern(resource, p, ctx) {
                Ok(()) => {
                    return Outcome::pass("validation rule passed").worded(Upstream::AnyPassed(i));
                }
                Err(e) if e.skip => skips.push((i, e.message)),
                Err(e) if e.substitution => return Outcome::error(e.message),
                // A pattern that failed without a path fails with its error
                // (validate_resource.go `validatePatterns`).
                Err(e) if e.path.is_empty() => {
                    failures.push(format!("anyPattern[{i}] failed: {}", e.message));
                    worded.push((i, e.message, false));
                }
                Err(e) => {
                    failures.push(format!("anyPattern[{i}] failed at path {}", e.path));
                    worded.push((i, e.path, true));
                }
            }
        }
        if failures.is_empty() && !skips.is_empty() {
            return Outcome::skip("no pattern applies (conditional anchors)")
                .worded(Upstream::AnySkipped(skips));
        }
        return Outcome::fail(failures.join("; ")).worded(Upstream::AnyFailed(worded));
    }
    if let Some(deny) = validate.get("deny") {
        let conds = deny.get("conditions").cloned().unwrap_or(Value::Null);
        // Conditions' own `message`s join the rule's when they held; not modelled.
        let own_messages = has_key(&conds, "message");
        return match conditions::evaluate(&conds, ctx) {
            Ok(true) if own_messages => Outcome::fail("denied by conditions"),
            Ok(true) => {
                Outcome::fail("denied by conditions").worded(Upstream::Denied(String::new()))
            }
            Ok(false) => Outcome::pass("deny conditions not met").worded(Upstream::Passed),
            Err(e) => {
                let worded = e.kyverno_text().map(|t| {
                    // pkg/engine/handlers/validation/validate_resource.go `validateDeny`.
                    Upstream::Verbatim(format!("failed to check deny conditions: {t}"))
                });
                let o = Outcome::error(format!(
                    "failed to substitute variables in deny conditions: {e}"
                ));
                match worded {
                    Some(w) => o.worded(w),
                    None => o,
                }
            }
        };
    }
    if let Some(foreach) = validate.get("foreach").and_then(Value::as_array) {
        return validate_foreach(foreach, resource, ctx, 0, opts);
    }
    Outcome::error("validate rule has no pattern, anyPattern, deny, foreach or podSecurity")
}

/// Whether `key` is a key of some map in `v`.
fn has_key(v: &Value, key: &str) -> bool {
    match v {
        Value::Object(m) => m.contains_key(key) || m.values().any(|v| has_key(v, key)),
        Value::Array(a) => a.iter().any(|v| has_key(v, key)),
        _ => false,
    }
}

fn pattern_outcome(e: &PatternError) -> Outcome {
    if e.skip {
        Outcome::skip(e.message.clone()).worded(Upstream::Verbatim(e.message.clone()))
    } else if e.substitution {
        Outcome::error(e.message.clone())
    } else if e.path.is_empty() {
        Outcome::error(e.message.clone()).worded(Upstream::Execution(e.message.clone()))
    } else {
        // Kyverno's error names the path again at its end; once is enough here.
        let detail = e
            .message
            .strip_suffix(&format!(" at path {}", e.path))
            .unwrap_or(&e.message);
        Outcome::fail(format!("validation failed at path {}: {detail}", e.path))
            .worded(Upstream::FailedAt(e.path.clone()))
    }
}

fn validate_foreach(
    decls: &[Value],
    resource: &Value,
    ctx: &Context,
    nesting: usize,
    opts: &Options,
) -> Outcome {
    let mut applied = 0;
    for decl in decls {
        let list_expr = decl.get("list").and_then(Value::as_str).unwrap_or("");
        let expr = list_expr
            .trim()
            .trim_start_matches("{{")
            .trim_end_matches("}}")
            .trim();
        let list = match vars::query(expr, ctx) {
            Ok(Value::Array(items)) => items,
            Ok(Value::Null) | Err(VarError::NotResolved(_)) => Vec::new(),
            Ok(other) => vec![other],
            Err(e) => {
                return Outcome::error(format!("failed to evaluate foreach list {list_expr}: {e}"));
            }
        };
        let element_scope = decl.get("elementScope").and_then(Value::as_bool);
        for (i, item) in list.iter().enumerate() {
            // `element`/`elementIndex` are the innermost; `elementN` names each level.
            let mut ectx = ctx.with_element(item, i);
            ectx.add_variable(&format!("element{nesting}"), item.clone());
            ectx.add_variable(&format!("elementIndex{nesting}"), json!(i));
            // Context entries are per element: they may read `element`.
            if let Err(o) = load_context(decl, &mut ectx, opts, None) {
                return o;
            }
            if let Some(pre) = decl.get("preconditions") {
                match conditions::evaluate_preconditions(pre, &ectx) {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(e) => return Outcome::error(e.to_string()),
                }
            }
            // Patterns look at a map element by default, at the resource otherwise;
            // elementScope: true on a non-map element is an error, as in Kyverno.
            let target = match (element_scope, item.is_object()) {
                (Some(true), false) => {
                    return Outcome::error(format!(
                        "cannot use elementScope=true for foreach element {i}, which is not a map"
                    ));
                }
                (Some(false), _) | (None, false) => resource,
                _ => item,
            };
            let body = if let Some(nested) = decl.get("foreach").and_then(Value::as_array) {
                validate_foreach(nested, resource, &ectx, nesting + 1, opts)
            } else {
                validate_body(decl, target, &ectx, opts, false)
            };
            let wrapped = |u: Option<Box<Upstream>>| u.map(|u| Box::new(Upstream::Foreach(u)));
            match body.status {
                RuleStatus::Pass => applied += 1,
                RuleStatus::Skip => {}
                RuleStatus::Fail => {
                    let mut o = Outcome::fail(format!("foreach element {i}: {}", body.message));
                    o.upstream = wrapped(body.upstream);
                    return o;
                }
                _ => {
                    let upstream = wrapped(body.upstream.clone());
                    return Outcome { upstream, ..body };
                }
            }
        }
    }
    if applied == 0 {
        Outcome::skip("no foreach element applies")
    } else {
        Outcome::pass("validation rule passed").worded(Upstream::Verbatim("rule passed".into()))
    }
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;

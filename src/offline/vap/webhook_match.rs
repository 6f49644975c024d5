//! The `matchConditions` Kyverno puts on a CEL policy's own webhook, as the API server
//! evaluates them before it calls Kyverno. Kyverno 1.19 (pkg/controllers/webhook/validating.go,
//! `validConditions` and `webhookMatchConditions` in match_conditions.go) copies a policy's
//! conditions onto its fine-grained webhook when every one of them compiles in the API
//! server's webhook environment, less those naming `namespaceObject`; the API server
//! (k8s.io/apiserver pkg/admission/plugin/webhook/matchconditions) then skips the webhook
//! when one is false, and on an error refuses the request under `failurePolicy: Fail`
//! or skips the webhook under `Ignore`.
//!
//! Also what an ImageValidatingPolicy decides before it would fetch an image
//! ([`image_policy_check`]).

use serde_json::Value;

use super::cel_env::{base_context, eval};
use super::matching::matches_resources;
use super::{VapRequest, validating_autogen_copy};

/// What the API server does with a policy's webhook for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebhookCall {
    /// The webhook is called (no condition on it stops it, or the policy does not match).
    Called,
    /// A condition is false, or one failed under `failurePolicy: Ignore`: Kyverno never
    /// sees the request for this policy.
    Skipped,
    /// A condition failed under `failurePolicy: Fail`: the API server's error text.
    Refused(String),
}

/// The variables of the API server's webhook match-condition environment.
const WEBHOOK_VARIABLES: [&str; 5] = [
    "object",
    "oldObject",
    "request",
    "authorizer",
    "namespaceObject",
];

/// The conditions that end up on a CEL policy's webhook: none when one of them would not
/// compile for the API server (Kyverno's `variables`, its libraries), those naming
/// `namespaceObject` left to Kyverno.
fn offloaded(conditions: &[Value]) -> Vec<Value> {
    offloadable(conditions).unwrap_or_default()
}

/// `validConditions` then `webhookMatchConditions`: `None` when one of `conditions` does
/// not compile in the API server's webhook environment, else those it can evaluate (not
/// naming `namespaceObject`).
pub fn offloadable(conditions: &[Value]) -> Option<Vec<Value>> {
    let mut kept = Vec::new();
    for mc in conditions {
        let expr = mc.get("expression").and_then(Value::as_str).unwrap_or("");
        super::shape::check(expr).ok()?;
        let program = super::shape::on_parse_stack(|| cel::Program::compile(expr)).ok()?;
        let refs = program.references();
        let vars = refs.variables();
        if vars.iter().any(|v| !WEBHOOK_VARIABLES.contains(v)) {
            return None;
        }
        if !vars.contains(&"namespaceObject") {
            kept.push(mc.clone());
        }
    }
    Some(kept)
}

/// The API server's decision on a Kyverno CEL policy's webhook for `req`.
pub fn webhook_call(policy: &Value, req: &VapRequest) -> WebhookCall {
    let obj = if req.object.is_null() {
        &req.old_object
    } else {
        &req.object
    };
    // On a Pod controller the webhook carries the autogen copy's conditions.
    let copy = validating_autogen_copy(policy, super::kind_of(obj));
    let policy = copy.as_ref().unwrap_or(policy);
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let constraints = spec.get("matchConstraints").unwrap_or(&Value::Null);
    let conditions = spec
        .get("matchConditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let kept = offloaded(conditions);
    if kept.is_empty() || !matches_resources(constraints, req, true) {
        return WebhookCall::Called;
    }
    let failure_policy = spec.get("failurePolicy").and_then(Value::as_str);
    webhook_conditions(&kept, failure_policy, req)
}

/// The API server's evaluation of a webhook's `conditions` (`failurePolicy` `Fail`
/// unless given) for a request its rules select.
pub fn webhook_conditions(
    conditions: &[Value],
    failure_policy: Option<&str>,
    req: &VapRequest,
) -> WebhookCall {
    let ctx = base_context(req, &Value::Null);
    let mut errors = Vec::new();
    for mc in conditions {
        let expr = mc.get("expression").and_then(Value::as_str).unwrap_or("");
        match eval(&ctx, expr) {
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => return WebhookCall::Skipped,
            Ok(_) => errors.push(format!(
                "expression '{expr}' resulted in error: value was not a boolean"
            )),
            // What only this interpreter lacks is left to the engine, which reports it.
            Err(e) if e.unsupported.is_some() => return WebhookCall::Called,
            Err(e) => errors.push(format!(
                "expression '{expr}' resulted in error: {}",
                e.message
            )),
        }
    }
    if errors.is_empty() {
        return WebhookCall::Called;
    }
    if failure_policy == Some("Ignore") {
        return WebhookCall::Skipped;
    }
    // The API server aggregates several errors as `[a, b]`.
    WebhookCall::Refused(if errors.len() == 1 {
        errors.remove(0)
    } else {
        format!("[{}]", errors.join(", "))
    })
}

/// Whether Kyverno's engine takes up `policy` (a Kyverno CEL policy) for `req`: its
/// `matchConstraints` select the request and its `matchConditions` hold
/// (pkg/cel/policies/ivpol/engine/engine.go `matchPolicy`). `None` when a condition does
/// not evaluate to a boolean (the outcome then depends on `failurePolicy` wording the
/// replay does not model).
pub fn engine_selects(policy: &Value, req: &VapRequest) -> Option<bool> {
    let obj = if req.object.is_null() {
        &req.old_object
    } else {
        &req.object
    };
    // On a Pod controller the engine runs the autogen copy
    // (pkg/cel/policies/ivpol/autogen/autogen.go, same configs as a ValidatingPolicy's).
    let copy = validating_autogen_copy(policy, super::kind_of(obj));
    let policy = copy.as_ref().unwrap_or(policy);
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let constraints = spec.get("matchConstraints").unwrap_or(&Value::Null);
    if !matches_resources(constraints, req, true) {
        return Some(false);
    }
    let conditions = spec
        .get("matchConditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    match webhook_conditions(conditions, Some("Fail"), req) {
        WebhookCall::Called => Some(true),
        WebhookCall::Skipped => Some(false),
        WebhookCall::Refused(_) => None,
    }
}

/// What an ImageValidatingPolicy makes of a request when nothing needs a registry
/// (pkg/image/verification/evaluator/policy.go `Evaluate`, `MutateDigest`): the policy's
/// `matchConditions`, then its PolicyExceptions (one that holds skips the policy), then
/// the images its extractors find that `matchImageReferences` selects. An image selected
/// is fetched (`AddImages`; `MutateDigest` resolves its digest first), which is a
/// registry's — but an image without a digest fails `verifyDigest` before any fetch when
/// the policy does not pin digests. With no image selected, nothing is fetched and the
/// validations run over empty image lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageCheck {
    /// The policy does not take the request up.
    NotTaken,
    /// A PolicyException (its name) holds: the policy is skipped.
    Excepted(String),
    /// Verifying fetches these images from their registries.
    Registry(Vec<String>),
    /// Every validation held.
    Pass,
    /// The policy failed, with this message.
    Fail(String),
    /// What the replay does not decide, and why.
    Undecided(String),
}

/// The default image extractors of the request's resource (pkg/cel/compiler/images.go
/// `getImageExtractorsFromGVR`): the containers' path of each category, none for other
/// resources.
fn default_image_paths(req: &VapRequest) -> Option<&'static str> {
    let (group, version, resource, _) = super::matching::request_resource(req);
    if version != "v1" {
        return None;
    }
    match (group.as_str(), resource.as_str()) {
        ("", "pods") => Some("/spec"),
        ("apps", "deployments" | "statefulsets" | "daemonsets" | "replicasets")
        | ("batch", "jobs") => Some("/spec/template/spec"),
        ("batch", "cronjobs") => Some("/spec/jobTemplate/spec/template/spec"),
        _ => None,
    }
}

/// A `glob` of `matchImageReferences` (gobwas/glob without separators: `*` any run of
/// characters, `?` one); `None` for the syntax this does not read (`[…]`, `{…}`, `\`).
fn glob_matches(pattern: &str, text: &str) -> Option<bool> {
    if pattern.contains(['[', ']', '{', '}', '\\']) {
        return None;
    }
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    // Iterative wildcard matching with one backtrack point: linear in practice.
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) && p[pi] != '*' {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return Some(false);
        }
    }
    Some(p[pi..].iter().all(|c| *c == '*'))
}

/// Whether `matchImageReferences` selects `image` (none given selects every image;
/// pkg/cel/matching/image.go `MatchImage`); `Err` for what is not decided here.
fn image_selected(refs: &[Value], image: &str) -> Result<bool, String> {
    if refs.is_empty() {
        return Ok(true);
    }
    for r in refs {
        if let Some(g) = r.get("glob").and_then(Value::as_str) {
            match glob_matches(g, image) {
                Some(true) => return Ok(true),
                Some(false) => {}
                None => return Err(format!("the glob {g:?} of matchImageReferences")),
            }
        } else if let Some(e) = r.get("expression").and_then(Value::as_str) {
            let mut ctx = base_context(&VapRequest::default(), &Value::Null);
            ctx.set("ref", &Value::from(image));
            match eval(&ctx, e) {
                Ok(cel::Value::Bool(true)) => return Ok(true),
                Ok(cel::Value::Bool(false)) => {}
                _ => return Err(format!("the expression {e:?} of matchImageReferences")),
            }
        }
    }
    Ok(false)
}

/// Whether `image` is a reference `name.ParseReference` reads without a digest.
fn plain_tagged(image: &str) -> bool {
    !image.is_empty()
        && !image.contains('@')
        && image
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "./:_-".contains(c))
        && !image.starts_with(['.', '-', ':', '/'])
}

/// [`ImageCheck`] of `policy` (an admitted (Namespaced)ImageValidatingPolicy) for `req`,
/// with the CEL PolicyExceptions among `exceptions`.
pub fn image_policy_check<'a>(
    policy: &Value,
    exceptions: impl IntoIterator<Item = &'a Value>,
    req: &VapRequest,
) -> ImageCheck {
    let undecided = |why: &str| ImageCheck::Undecided(why.to_string());
    match engine_selects(policy, req) {
        Some(false) => return ImageCheck::NotTaken,
        Some(true) => {}
        None => return undecided("a matchCondition that is not a boolean"),
    }
    // On a Pod controller the engine runs the autogen copy.
    let obj = if req.object.is_null() {
        &req.old_object
    } else {
        &req.object
    };
    let copy = validating_autogen_copy(policy, super::kind_of(obj));
    let policy = copy.as_ref().unwrap_or(policy);
    match super::exemption(policy, exceptions, req) {
        Ok(super::Exemption::None) => {}
        Ok(super::Exemption::Whole(name)) => return ImageCheck::Excepted(name),
        // An ImageValidatingPolicy reads no allowances: any exception that holds skips
        // it, which `exemption` does not say for one naming images or values.
        Ok(super::Exemption::Partial(_)) => {
            return undecided("a PolicyException with images or allowedValues");
        }
        Err(_) => return undecided("a PolicyException whose conditions fail"),
    }
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    if spec.pointer("/evaluation/mode").and_then(Value::as_str) == Some("JSON") {
        return undecided("a JSON-mode ImageValidatingPolicy");
    }
    if spec
        .get("images")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
    {
        return undecided("custom image extractors");
    }
    let refs: Vec<Value> = spec
        .get("matchImageReferences")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut images = serde_json::Map::new();
    let mut selected: Vec<(&str, String)> = Vec::new();
    if let Some(path) = default_image_paths(req) {
        for category in ["containers", "initContainers", "ephemeralContainers"] {
            let mut kept = Vec::new();
            let containers = obj
                .pointer(&format!("{path}/{category}"))
                .and_then(Value::as_array);
            for c in containers.into_iter().flatten() {
                let Some(image) = c.get("image").and_then(Value::as_str) else {
                    return undecided("a container without an image");
                };
                match image_selected(&refs, image) {
                    Ok(true) => {
                        kept.push(Value::from(image));
                        selected.push((category, image.to_string()));
                    }
                    Ok(false) => {}
                    Err(why) => return ImageCheck::Undecided(why),
                }
            }
            images.insert(category.into(), Value::Array(kept));
        }
    }
    let flag = |k: &str| {
        spec.pointer(&format!("/validationConfigurations/{k}"))
            .and_then(Value::as_bool)
            != Some(false)
    };
    if !selected.is_empty() {
        // `checkDigests` runs before any fetch when nothing pinned the digests; which
        // image it names first follows Go's map order over the categories.
        let undigested: Vec<&(&str, String)> =
            selected.iter().filter(|(_, i)| !i.contains('@')).collect();
        if !flag("mutateDigest") && flag("verifyDigest") && !undigested.is_empty() {
            let one_category = undigested.iter().all(|(c, _)| *c == undigested[0].0);
            if one_category && undigested.iter().all(|(_, i)| plain_tagged(i)) {
                return ImageCheck::Fail(format!(
                    "image {} does not have a digest",
                    undigested[0].1
                ));
            }
        }
        return ImageCheck::Registry(selected.into_iter().map(|(_, i)| i).collect());
    }
    // Nothing is fetched: the validations run over empty image lists.
    let mut ctx = base_context(req, &Value::Null);
    ctx.set("images", &Value::Object(images));
    let attestations: serde_json::Map<String, Value> = spec
        .get("attestations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|a| a.get("name").and_then(Value::as_str))
        .map(|n| (n.to_string(), Value::from(n)))
        .collect();
    ctx.set("attestations", &Value::Object(attestations));
    ctx.define_variables(spec);
    let validations = spec.get("validations").and_then(Value::as_array);
    for (i, v) in validations.into_iter().flatten().enumerate() {
        let expr = v.get("expression").and_then(Value::as_str).unwrap_or("");
        match eval(&ctx, expr) {
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => {
                let message = match v.get("messageExpression").and_then(Value::as_str) {
                    Some(me) => match eval(&ctx, me) {
                        Ok(cel::Value::String(s)) => s.to_string(),
                        _ => return undecided("a messageExpression that does not evaluate"),
                    },
                    None => text_of(v, "message"),
                };
                return ImageCheck::Fail(if message.is_empty() {
                    format!("CEL expression validation failed at index {i}")
                } else {
                    message
                });
            }
            // What only a registry answers (image data, signatures), or an error.
            _ if reads_registry(spec) => return ImageCheck::Registry(Vec::new()),
            _ => return undecided("a validation the replay cannot evaluate"),
        }
    }
    // `evaluateAuditAnnotations`: one that does not evaluate to a string is an error.
    for a in spec
        .get("auditAnnotations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let expr = a
            .get("valueExpression")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !matches!(eval(&ctx, expr), Ok(cel::Value::String(_))) {
            return undecided("an audit annotation the replay cannot evaluate");
        }
    }
    ImageCheck::Pass
}

/// Whether the validations or variables of an image policy call the libraries that read
/// a registry (pkg/cel/libs/imageverify: `verifyImageSignatures`,
/// `verifyAttestationSignatures`, `extractPayload`; the sdk's imagedata: `GetMetadata`).
fn reads_registry(spec: &Value) -> bool {
    const CALLS: [&str; 4] = [
        "verifyImageSignatures",
        "verifyAttestationSignatures",
        "extractPayload",
        "GetMetadata",
    ];
    ["validations", "variables"].iter().any(|k| {
        spec.get(*k)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.get("expression").and_then(Value::as_str))
            .any(|e| CALLS.iter().any(|c| e.contains(c)))
    })
}

fn text_of(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod image_tests {
    use super::*;

    #[test]
    fn globs_match_across_slashes_and_refuse_what_they_do_not_read() {
        assert_eq!(glob_matches("ghcr.io/*", "ghcr.io/kyverno/x:1"), Some(true));
        assert_eq!(glob_matches("ghcr.io/**", "ghcr.io/a"), Some(true));
        assert_eq!(glob_matches("*", "docker.io/busybox"), Some(true));
        assert_eq!(
            glob_matches("ghcr.io/*", "docker.io/ghcr.io/x"),
            Some(false)
        );
        assert_eq!(glob_matches("a?c", "abc"), Some(true));
        assert_eq!(glob_matches("a?c", "ac"), Some(false));
        assert_eq!(glob_matches("{a,b}", "a"), None);
        assert!(plain_tagged("ghcr.io/kyverno/test:signed"));
        assert!(!plain_tagged("ghcr.io/x@sha256:00"));
    }
}

//! The rows of CEL policy kinds in a Kyverno CLI test: ValidatingAdmissionPolicy (scope
//! `vap`), ValidatingPolicy (`vpol`), MutatingPolicy (`mpol`) and GeneratingPolicy
//! (`gpol`), each evaluated by `offline::vap` on the admission request its resource makes.

use std::path::Path;

use serde_json::Value;

use super::compare::compare_file;
use super::testfile::ResultRow;
use super::{Row, Values, Verdict};
use crate::offline::kyverno::UserInfo;
use crate::offline::vap;

/// What a ValidatingAdmissionPolicy row is evaluated against.
pub(super) struct VapRow<'a> {
    pub(super) objects: &'a [Value],
    pub(super) policy: &'a Value,
    pub(super) resources: &'a [Value],
    pub(super) cluster: &'a [Value],
    pub(super) values: &'a Values,
    pub(super) user: &'a UserInfo,
    pub(super) services: &'a std::sync::Arc<vap::CliServices>,
    pub(super) json_payloads: &'a [(String, Value)],
}

/// A ValidatingAdmissionPolicy row: the policy through each of its bindings (on its own
/// match constraints with Deny when it has none, as `kyverno test` does). Any failing
/// binding fails the row; none matching is `skip`. Scope `vap`, outside the classic set.
pub(super) fn vap_row(out: &mut Row, row: &ResultRow, ctx: &VapRow<'_>) {
    use crate::offline::vap;
    out.scope = "vap";
    let Some(req) = admission_request(out, row, ctx) else {
        return;
    };
    let name = ctx
        .policy
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let bindings: Vec<&Value> = ctx
        .objects
        .iter()
        .filter(|o| {
            o.get("kind").and_then(Value::as_str) == Some("ValidatingAdmissionPolicyBinding")
                && o.pointer("/spec/policyName").and_then(Value::as_str) == Some(name)
        })
        .collect();
    let mut outcome = vap::VapOutcome::default();
    let applied: Vec<vap::Applied> = if bindings.is_empty() {
        vec![vap::evaluate_binding(
            ctx.objects,
            ctx.policy,
            None,
            &req,
            &mut outcome,
        )]
    } else {
        bindings
            .iter()
            .map(|b| vap::evaluate_binding(ctx.objects, ctx.policy, Some(b), &req, &mut outcome))
            .collect()
    };
    settle(out, &applied, &outcome);
}

/// A Kyverno ValidatingPolicy row (scope `vpol`): the policy with its own actions, its
/// autogen copy on Pod controllers, and the test's CEL `PolicyException`s (one whose
/// conditions hold makes the row `skip`). Payloads other than Kubernetes objects
/// (`evaluation.mode` JSON, HTTP, Envoy) are not evaluated.
pub(super) fn vpol_row(
    out: &mut Row,
    row: &ResultRow,
    ctx: &VapRow<'_>,
    exceptions: &[Value],
    readable: &std::sync::Arc<Vec<Value>>,
) {
    use crate::offline::vap;
    out.scope = "vpol";
    let mode = ctx
        .policy
        .pointer("/spec/evaluation/mode")
        .and_then(Value::as_str)
        .unwrap_or("Kubernetes");
    if mode == "JSON" {
        json_row(out, row, ctx, readable);
        return;
    }
    if mode != "Kubernetes" {
        out.reason =
            format!("evaluation mode {mode} (non-Kubernetes payloads) is not evaluated offline");
        return;
    }
    let Some(mut req) = admission_request(out, row, ctx) else {
        return;
    };
    req.cluster = Some(readable.clone());
    req.services = Some(ctx.services.clone());
    if excepted(out, ctx.policy, exceptions, &mut req) {
        return;
    }
    let mut outcome = vap::VapOutcome::default();
    let applied = vap::evaluate_validating_policy(ctx.objects, ctx.policy, &req, &mut outcome);
    if applied == vap::Applied::NotMatched && unselected(out, ctx.policy, &req) {
        return;
    }
    settle(out, &[applied], &outcome);
    // Kyverno stops at the first validation that does not pass; when that one errored,
    // the result is `error`, whatever the failure policy (`pkg/cel/policies/vpol/engine`).
    let first_failure = (outcome.denials.first().map(|d| &d.message))
        .or(outcome.audits.first())
        .or(outcome.warnings.first());
    if out.actual == "fail"
        && let (Some(e), Some(f)) = (outcome.errors.first(), first_failure)
        && f.ends_with(&e.message)
    {
        out.actual = "error".into();
        out.verdict = verdict(out);
    }
}

/// A JSON-mode ValidatingPolicy row: the policy on the named `jsonPayloads` file, or on a
/// test resource taken as plain JSON (`kyverno test` runs JSON-mode policies on both,
/// `processor/policy_processor.go`), without match constraints.
fn json_row(
    out: &mut Row,
    row: &ResultRow,
    ctx: &VapRow<'_>,
    readable: &std::sync::Arc<Vec<Value>>,
) {
    let payload = match ctx
        .json_payloads
        .iter()
        .find(|(name, _)| *name == out.resource)
    {
        Some((_, payload)) => payload.clone(),
        None => match admission_request(out, row, ctx) {
            Some(req) => req.object,
            None => return,
        },
    };
    let mut outcome = vap::VapOutcome::default();
    let applied =
        vap::evaluate_json_policy(ctx.policy, &payload, readable, ctx.services, &mut outcome);
    settle(out, &[applied], &outcome);
}

/// The admission request a CEL policy row is evaluated on; `None` (the row failed)
/// when the test does not hold the resource.
fn admission_request(
    out: &mut Row,
    row: &ResultRow,
    ctx: &VapRow<'_>,
) -> Option<crate::offline::vap::VapRequest> {
    let row_ns = row.namespace();
    let (ns, rname) = match out.resource.rsplit_once('/') {
        Some((n, r)) => (Some(n.to_string()), r.to_string()),
        None => (row_ns.map(str::to_string), out.resource.clone()),
    };
    let Some(resource) = ctx.resources.iter().find(|r| {
        r.pointer("/metadata/name").and_then(Value::as_str) == Some(rname.as_str())
            && (out.kind.is_empty()
                || r.get("kind").and_then(Value::as_str) == Some(out.kind.as_str()))
            && ns
                .as_deref()
                .is_none_or(|n| r.pointer("/metadata/namespace").and_then(Value::as_str) == Some(n))
    }) else {
        out.verdict = Verdict::Fail;
        out.reason = format!(
            "resource {} {} not found in the test's resources",
            out.kind, out.resource
        );
        return None;
    };
    Some(request_for(resource, row, ctx))
}

/// The admission request `resource` makes in a CEL policy row.
fn request_for(resource: &Value, row: &ResultRow, ctx: &VapRow<'_>) -> vap::VapRequest {
    let namespace_object = match resource
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
    {
        Some(ns) if resource.get("kind").and_then(Value::as_str) != Some("Namespace") => {
            let mut labels = ctx.values.namespaces.get(ns).cloned().unwrap_or_default();
            labels.insert("kubernetes.io/metadata.name".into(), ns.into());
            let known = ctx.values.namespace_objects.iter();
            vap::namespace_object(known.chain(ctx.cluster).chain(ctx.resources), ns, labels)
        }
        _ => Value::Null,
    };
    let operation = match row.operation.as_str() {
        "" => "CREATE".to_string(),
        op => op.to_string(),
    };
    let (object, old_object) = if operation == "DELETE" {
        (Value::Null, resource.clone())
    } else {
        (resource.clone(), Value::Null)
    };
    // A subresource's object (a `Binding`) stands for its parent's subresource, as the
    // values file's `subresources` say (`policy_processor.go`; the CEL requests carry it
    // since Kyverno's fix 3eaeeeb9, #17047, as the admission webhook always did).
    let kind = resource.get("kind").and_then(Value::as_str).unwrap_or("");
    let (parent, sub_resource) = match ctx.values.subresources.get(kind) {
        Some(s) => (
            Some((s.parent_api_version.clone(), s.parent_kind.clone())),
            s.name.clone(),
        ),
        None => (None, String::new()),
    };
    vap::VapRequest {
        operation,
        object,
        old_object,
        namespace_object,
        parent,
        sub_resource,
        user: vap::VapUser {
            username: ctx.user.username.clone(),
            groups: ctx.user.groups.clone(),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A CEL policy row's result from how its policy applied: any failure fails the row,
/// else an error is `error`, a pass `pass`, nothing matching `skip`; what the
/// interpreter cannot evaluate leaves the row skipped with the reason.
fn settle(
    out: &mut Row,
    applied: &[crate::offline::vap::Applied],
    outcome: &crate::offline::vap::VapOutcome,
) {
    use crate::offline::vap;
    if let Some(e) = outcome.unsupported() {
        out.verdict = Verdict::Skipped;
        out.reason = e.message.clone();
        return;
    }
    let has = |a: vap::Applied| applied.contains(&a);
    out.actual = if has(vap::Applied::Failed) {
        "fail"
    } else if has(vap::Applied::Errored) {
        "error"
    } else if has(vap::Applied::Passed) {
        "pass"
    } else {
        "skip"
    }
    .into();
    out.reason = outcome
        .errors
        .iter()
        .map(|e| e.message.clone())
        .chain(outcome.denials.iter().map(|d| d.message.clone()))
        .chain(outcome.warnings.iter().cloned())
        .chain(outcome.audits.iter().cloned())
        .collect::<Vec<_>>()
        .join("; ");
    out.verdict = if out.actual == out.expected {
        Verdict::Pass
    } else {
        Verdict::Fail
    };
}

/// Whether one of the test's CEL `PolicyException`s exempts `req` from `policy` whole:
/// the row is then `skip`. Those that only allow images or values are added to `req`.
/// An exception that cannot be evaluated leaves the row skipped with the reason (both
/// end the row: `true`).
fn excepted(
    out: &mut Row,
    policy: &Value,
    exceptions: &[Value],
    req: &mut vap::VapRequest,
) -> bool {
    match vap::exemption(policy, exceptions, req) {
        Ok(vap::Exemption::Whole(name)) => {
            out.actual = "skip".into();
            out.reason = format!("excepted by PolicyException {name}");
            out.verdict = verdict(out);
            true
        }
        Ok(vap::Exemption::Partial(allowed)) => {
            req.exceptions = allowed;
            false
        }
        Ok(vap::Exemption::None) => false,
        Err(why) => {
            out.reason = why.to_string();
            true
        }
    }
}

/// `kyverno test`'s row when the policy's match constraints, with a selector or
/// exclusions, do not select the resource (`vap::unselected_in_cli`): an empty response,
/// printed as a pass, "excluded", whatever the row expects. `false` otherwise (plain
/// constraints, or a false match condition: the row is compared as `skip`).
fn unselected(out: &mut Row, policy: &Value, req: &vap::VapRequest) -> bool {
    if vap::unselected_in_cli(policy, req) != Some(vap::CliUnselected::Excluded) {
        return false;
    }
    out.actual = "pass".into();
    out.reason = "excluded: the policy's selectors or exclusions do not select it, which kyverno test reports as a pass".into();
    out.verdict = Verdict::Pass;
    true
}

fn verdict(out: &Row) -> Verdict {
    if out.actual == out.expected {
        Verdict::Pass
    } else {
        Verdict::Fail
    }
}

/// What a MutatingPolicy or GeneratingPolicy row needs besides its policy.
pub(super) struct CelActionRow<'a> {
    pub(super) row: &'a ResultRow,
    pub(super) exceptions: &'a [Value],
    pub(super) readable: &'a std::sync::Arc<Vec<Value>>,
    pub(super) dir: &'a Path,
    /// The test's `targetResources` (what mutate-existing policies patch).
    pub(super) targets: &'a [Value],
}

/// The admission request of a MutatingPolicy or GeneratingPolicy row, with the test's
/// objects readable through `resource.Get`/`List`; `None` when the row is settled
/// (resource missing, excepted).
fn action_request(
    out: &mut Row,
    ctx: &VapRow<'_>,
    a: &CelActionRow<'_>,
) -> Option<vap::VapRequest> {
    let mut req = admission_request(out, a.row, ctx)?;
    req.cluster = Some(a.readable.clone());
    req.services = Some(ctx.services.clone());
    if excepted(out, ctx.policy, a.exceptions, &mut req) {
        return None;
    }
    Some(req)
}

/// A Kyverno MutatingPolicy row (scope `mpol`): `pass` when the policy mutated the
/// resource into the row's `patchedResources`, `skip` when it does not select it.
pub(super) fn mpol_row(out: &mut Row, ctx: &VapRow<'_>, a: &CelActionRow<'_>) {
    out.scope = "mpol";
    let Some(req) = action_request(out, ctx, a) else {
        if out.verdict == Verdict::Fail
            && let Some(target) = find_target(out, a.targets)
        {
            mutate_existing_row(out, ctx, a, target);
        }
        return;
    };
    let outcome = vap::evaluate_mutating_policy(ctx.policy, &req);
    if matches!(outcome, vap::CelPolicyOutcome::NotMatched) && unselected(out, ctx.policy, &req) {
        return;
    }
    settle_policy(
        out,
        outcome,
        "the policy does not select this resource",
        |out: &mut Row, patched: Value| patched_row(out, a, patched),
    );
}

/// The target resource a row names, among the test's `targetResources`.
fn find_target<'a>(out: &Row, targets: &'a [Value]) -> Option<&'a Value> {
    let (ns, name) = match out.resource.rsplit_once('/') {
        Some((n, r)) => (Some(n), r),
        None => (None, out.resource.as_str()),
    };
    targets.iter().find(|t| {
        t.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
            && (out.kind.is_empty() || t.get("kind").and_then(Value::as_str) == Some(&out.kind))
            && ns
                .is_none_or(|n| t.pointer("/metadata/namespace").and_then(Value::as_str) == Some(n))
    })
}

/// A MutatingPolicy row on a mutate-existing target: each test resource is a trigger
/// (`kyverno test` evaluates the targets for every one); the first that makes the policy
/// select the target decides, its patched target compared with `patchedResources`.
fn mutate_existing_row(out: &mut Row, ctx: &VapRow<'_>, a: &CelActionRow<'_>, target: &Value) {
    out.verdict = Verdict::Fail;
    for trigger in ctx.resources {
        let mut req = request_for(trigger, a.row, ctx);
        req.cluster = Some(a.readable.clone());
        req.services = Some(ctx.services.clone());
        let outcome = vap::mutate_existing_target(ctx.policy, &req, target);
        if matches!(outcome, vap::CelPolicyOutcome::NotMatched) {
            continue;
        }
        settle_policy(out, outcome, "", |out: &mut Row, patched: Value| {
            patched_row(out, a, patched)
        });
        return;
    }
    out.actual = "skip".into();
    out.reason = "no test resource makes the policy select this target".into();
    out.verdict = verdict(out);
}

/// A mutated resource compared with the row's `patchedResources`.
fn patched_row(out: &mut Row, a: &CelActionRow<'_>, patched: Value) {
    out.actual = "pass".into();
    out.reason = "mutated".into();
    if let Some(f) = a.row.patched_file()
        && let Err(why) = compare_file(
            &a.dir.join(f),
            std::slice::from_ref(&patched),
            &patched,
            false,
        )
    {
        out.actual = "fail".into();
        out.reason = format!("patched resource differs: {why}");
    }
}

/// A Kyverno GeneratingPolicy row (scope `gpol`): `pass` when the policy generates the
/// row's `generatedResource`, `skip` when it does not select the trigger.
pub(super) fn gpol_row(out: &mut Row, ctx: &VapRow<'_>, a: &CelActionRow<'_>) {
    out.scope = "gpol";
    let Some(req) = action_request(out, ctx, a) else {
        return;
    };
    settle_policy(
        out,
        vap::evaluate_generating_policy(ctx.policy, &req),
        "the policy does not select this trigger",
        |out: &mut Row, generated: Vec<Value>| {
            out.actual = "pass".into();
            out.reason = format!("{} object(s) generated", generated.len());
            if let Some(f) = a.row.generated_file() {
                let first = generated.first().cloned().unwrap_or(Value::Null);
                if let Err(why) = compare_file(&a.dir.join(f), &generated, &first, true) {
                    out.actual = "fail".into();
                    out.reason = format!("generated resource differs: {why}");
                }
            }
        },
    );
}

/// Records a CEL policy's outcome on a row: `skip` when the policy does not select the
/// request, `applied` judges what it produced, an evaluation error is `error`; what the
/// interpreter cannot evaluate leaves the row skipped with the reason (never a result).
fn settle_policy<T>(
    out: &mut Row,
    outcome: vap::CelPolicyOutcome<T>,
    unselected: &str,
    applied: impl FnOnce(&mut Row, T),
) {
    match outcome {
        vap::CelPolicyOutcome::NotMatched => {
            out.actual = "skip".into();
            out.reason = unselected.into();
        }
        vap::CelPolicyOutcome::Applied(x) => applied(out, x),
        vap::CelPolicyOutcome::Error(why) => {
            out.actual = "error".into();
            out.reason = why;
        }
        vap::CelPolicyOutcome::Unsupported { message, .. } => {
            out.reason = message;
            return;
        }
    }
    out.verdict = verdict(out);
}

//! The warnings Kyverno 1.19.0's policy webhook returns with its answer on a
//! `ClusterPolicy`/`Policy` (kubectl prints each as `Warning: …`), in the order
//! pkg/validation/policy/validate.go `Validate` collects them:
//! - `checkValidationFailureAction`: lower-case `enforce`/`audit` are deprecated;
//! - `GeneratePattern.Validate` (api/kyverno/v1/common_types.go): variables in a clone
//!   source or target kind;
//! - `immutableGenerateFields` (generate.go): a changed generate pattern;
//! - per rule: `jsonPatchOnPod`; the reports controller's permissions on the matched
//!   kinds (`validateAuthReports` of pkg/policy/mutate and pkg/policy/generate,
//!   `validateAuth` of pkg/policy/validate); `podControllerAutoGenExclusion`; the
//!   `scale`/`status` subresource hints; `predicateType`; the deprecated operators
//!   `In`/`NotIn` (pkg/engine/variables/operator/utils.go);
//! - the CEL type checker's findings on `validate.cel` (`cel_type_checks`);
//! - last, the handler's deprecation notice for the legacy kinds
//!   (pkg/webhooks/policy/handlers.go, pkg/deprecations/deprecations.go).
//!
//! Warnings gathered before the stage that refuses the policy are returned with the
//! refusal (pkg/utils/admission/response.go `Response`). The API server records each
//! distinct warning once.

use serde_json::Value;

use super::Mode;
use crate::offline::rbac::resource::Mapper;
use crate::offline::vap::celtype::{self, TypeCheck};

/// The reports controller's user, as the chart passes it (`--reportsServiceAccountName`).
pub const REPORTS_SA: &str = "system:serviceaccount:kyverno:kyverno-reports-controller";

const MIGRATION_GUIDE: &str = "https://kyverno.io/docs/guides/migration-to-cel/";

/// Warnings in the order they were made, and why the list may be incomplete.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Warned {
    pub lines: Vec<String>,
    /// Set when Kyverno may add warnings the replay does not make.
    pub unknown: Option<String>,
}

impl Warned {
    pub fn push(&mut self, line: impl Into<String>) {
        let line = line.into();
        if !self.lines.contains(&line) {
            self.lines.push(line);
        }
    }

    pub fn unknown(&mut self, why: impl Into<String>) {
        if self.unknown.is_none() {
            self.unknown = Some(why.into());
        }
    }
}

/// `deprecations.Warning`: the notice for a legacy `kyverno.io` kind, if it is one.
pub fn deprecation(kind: &str) -> Option<String> {
    let replacement = match kind {
        "ClusterPolicy" => {
            "ValidatingPolicy, MutatingPolicy, GeneratingPolicy or ImageValidatingPolicy"
        }
        "Policy" => {
            "NamespacedValidatingPolicy, NamespacedMutatingPolicy, NamespacedGeneratingPolicy or NamespacedImageValidatingPolicy"
        }
        "ClusterCleanupPolicy" => "DeletingPolicy",
        "CleanupPolicy" => "NamespacedDeletingPolicy",
        "PolicyException" => "PolicyException",
        _ => return None,
    };
    Some(format!(
        "{kind} (kyverno.io) is deprecated and will be removed in a future release; migrate to {replacement} (policies.kyverno.io), see {MIGRATION_GUIDE}"
    ))
}

/// `checkValidationFailureAction` for the spec and for each validate rule that sets its
/// own `failureAction`.
pub(super) fn failure_actions(spec: &Value, rules: &[Value], w: &mut Warned) {
    let deprecated = |action: Option<&Value>, overrides: Option<&Value>| {
        let lower =
            |v: Option<&Value>| matches!(v.and_then(Value::as_str), Some("enforce" | "audit"));
        lower(action)
            || overrides
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|o| lower(o.get("action")))
    };
    let msg = "Validation failure actions enforce/audit are deprecated, use Enforce/Audit instead.";
    if deprecated(
        spec.get("validationFailureAction"),
        spec.get("validationFailureActionOverrides"),
    ) {
        w.push(msg);
    }
    for rule in rules {
        let Some(v) = rule.get("validate").filter(|v| v.is_object()) else {
            continue;
        };
        if v.get("failureAction").is_some_and(|a| !a.is_null())
            && deprecated(v.get("failureAction"), v.get("failureActionOverrides"))
        {
            w.push(msg);
        }
    }
}

/// `GeneratePattern.Validate`'s warning: variables in the kind, apiVersion, clone or
/// cloneList of a generate target (`at` is the pattern's path).
pub(super) fn clone_variables(pattern: &Value, at: &str, w: &mut Warned) {
    let parts = ["kind", "apiVersion", "clone", "cloneList"];
    if parts
        .iter()
        .filter_map(|k| pattern.get(*k))
        .any(super::super::vars::has_variables)
    {
        w.push(format!(
            "variables in {at}.clone/cloneList would lead to incorrect synchronization behavior"
        ));
    }
}

/// `jsonPatchOnPod`: a JSON patch on a rule whose (top-level) match kinds hold `Pod`.
pub(super) fn json_patch_on_pod(rule: &Value, w: &mut Warned) {
    let pod = rule
        .pointer("/match/resources/kinds")
        .and_then(Value::as_array)
        .is_some_and(|k| k.iter().any(|k| k.as_str() == Some("Pod")));
    let patch = rule
        .pointer("/mutate/patchesJson6902")
        .and_then(Value::as_str)
        .is_some_and(|p| !p.is_empty());
    if pod && patch {
        w.push(
            "Pods managed by workload controllers should not be directly mutated using policies. \
             Use the autogen feature or write policies that match Pod controllers.",
        );
    }
}

/// `MatchResources.GetKinds`: the kinds of `any`, `all` and the top-level description.
fn kinds_of(block: Option<&Value>) -> Vec<String> {
    let Some(b) = block else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for list in ["any", "all"] {
        for f in b.get(list).and_then(Value::as_array).into_iter().flatten() {
            out.extend(strings(f.pointer("/resources/kinds")));
        }
    }
    out.extend(strings(b.pointer("/resources/kinds")));
    out
}

fn strings(v: Option<&Value>) -> impl Iterator<Item = String> + '_ {
    crate::offline::str_items(v).map(str::to_string)
}

/// The reports controller's permission warnings of `validateActions` for one rule:
/// get, list and watch on each matched kind. A validate rule stops at its first
/// missing kind; mutate and generate rules report each.
pub(super) fn reports_permissions(rule: &Value, mode: Mode<'_>, w: &mut Warned) {
    let Mode::Cluster { authorizer, mapper } = mode else {
        return;
    };
    let kinds = kinds_of(rule.get("match"));
    if kinds.iter().any(|k| k.contains('*') || k.contains('?')) {
        return;
    }
    let has = |a: &str| rule.get(a).is_some_and(Value::is_object);
    for (action, first_only) in [("mutate", false), ("validate", true), ("generate", false)] {
        if !has(action) {
            continue;
        }
        for k in &kinds {
            match reports_denied(authorizer, mapper, k) {
                Ok(None) => {}
                Ok(Some(msg)) => {
                    w.push(msg);
                    if first_only {
                        break;
                    }
                }
                Err(why) => {
                    w.unknown(why);
                    return;
                }
            }
        }
    }
}

/// `Auth.CanI` for the reports controller on a match kind: the message when a verb is
/// missing; `Err` when the kind is not one the replay resolves as Kyverno's discovery does.
fn reports_denied(
    authorizer: &crate::offline::rbac::Authorizer,
    mapper: &Mapper,
    selector: &str,
) -> Result<Option<String>, String> {
    let parts: Vec<&str> = selector.split('/').collect();
    let resource = match parts[..] {
        [kind] => mapper.for_bare_kind(kind),
        [v, kind] if v.starts_with('v') && v[1..].starts_with(|c: char| c.is_ascii_digit()) => {
            mapper.for_kind(v, kind)
        }
        [g, v, kind] => mapper.for_kind(&format!("{g}/{v}"), kind),
        _ => None,
    };
    let Some(resource) = resource else {
        return Err(format!(
            "the reports controller's permission check on the kind {selector}"
        ));
    };
    let failed = super::denied_verbs(
        authorizer,
        REPORTS_SA,
        &["get", "list", "watch"],
        resource,
        "",
        "",
        "",
    );
    if failed.is_empty() {
        return Ok(None);
    }
    Ok(Some(format!(
        "{REPORTS_SA} requires permissions {} for resource {selector}",
        failed.join(",")
    )))
}

/// The warnings after `validateActions` for one rule.
pub(super) fn rule_hints(policy: &Value, rule: &Value, w: &mut Warned) {
    autogen_exclusion(policy, rule, w);
    let mut all_kinds = kinds_of(rule.get("match"));
    all_kinds.extend(kinds_of(rule.get("exclude")));
    if let Some(v) = rule.get("validate").filter(|v| v.is_object()) {
        subresource_hints(&without_deny_conditions(v), &all_kinds, w);
    }
    if let Some(m) = rule.get("mutate").filter(|m| m.is_object()) {
        let mut kinds = all_kinds.clone();
        for t in m
            .get("targets")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            kinds.push(
                t.get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            );
        }
        subresource_hints(m, &kinds, w);
    }
    let images = rule.get("verifyImages").and_then(Value::as_array);
    for iv in images.into_iter().flatten() {
        for a in iv
            .get("attestations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(p) = a
                .get("predicateType")
                .and_then(Value::as_str)
                .filter(|p| !p.is_empty())
            {
                w.push(format!(
                    "predicateType has been deprecated use 'type: {p}' instead of 'predicateType: {p}'"
                ));
            }
        }
    }
    for iv in images.into_iter().flatten() {
        if let Some(v) = iv.get("validate").filter(|v| v.is_object()) {
            subresource_hints(&without_deny_conditions(v), &all_kinds, w);
        }
    }
    deprecated_operators(rule, w);
}

/// A validation with its deny conditions cleared, as Kyverno marshals it for the hints.
fn without_deny_conditions(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(d) = v.get_mut("deny").and_then(Value::as_object_mut) {
        d.shift_remove("conditions");
    }
    v
}

/// `podControllerAutoGenExclusion` on a rule that matches Pods only.
fn autogen_exclusion(policy: &Value, rule: &Value, w: &mut Warned) {
    let Some(val) = policy
        .pointer("/metadata/annotations/pod-policies.kyverno.io~1autogen-controllers")
        .and_then(Value::as_str)
    else {
        return;
    };
    if val == "none" {
        return;
    }
    let mut listed: Vec<String> = val.to_lowercase().split(',').map(str::to_string).collect();
    listed.sort();
    if listed == ["cronjob", "daemonset", "deployment", "job", "statefulset"] {
        return;
    }
    let mut types: Vec<String> = kinds_of(rule.get("match"))
        .iter()
        .map(|k| {
            let kind = k.rsplit('/').next().unwrap_or(k);
            kind.split('.').next().unwrap_or(kind).to_string()
        })
        .collect();
    types.sort();
    types.dedup();
    if types == ["Pod"] {
        w.push(
            "Policies that match Pods apply to all Pods including those created and managed by controllers \
             excluded from autogen. Use preconditions to exclude the Pods managed by controllers which are \
             excluded from autogen. Refer to https://kyverno.io/docs/policy-types/cluster-policy/autogen/ for details.",
        );
    }
}

/// `checkForScaleSubresource` and `checkForStatusSubresource` on a rule part's JSON.
fn subresource_hints(part: &Value, kinds: &[String], w: &mut Warned) {
    let json = serde_json::to_string(part).unwrap_or_default();
    let names = |s: &str| kinds.iter().any(|k| k.to_lowercase().contains(s));
    if json.contains("replicas") && !names("scale") {
        w.push(
            "You are matching on replicas but not including the scale subresource in the policy.",
        );
    }
    if (json.contains(".status") || json.contains("\"status\":")) && !names("status") {
        w.push(
            "You are matching on status but not including the status subresource in the policy.",
        );
    }
}

/// `checkForDeprecatedOperatorsInRule`: `In`/`NotIn` in deny conditions, foreach
/// preconditions and deny conditions, and attestation conditions.
fn deprecated_operators(rule: &Value, w: &mut Warned) {
    let mut blocks: Vec<&Value> = Vec::new();
    blocks.extend(rule.pointer("/validate/deny/conditions"));
    for fe in rule
        .pointer("/validate/foreach")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        blocks.extend(fe.get("preconditions"));
        blocks.extend(fe.pointer("/deny/conditions"));
    }
    for iv in rule
        .get("verifyImages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for a in iv
            .get("attestations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            blocks.extend(
                a.get("conditions")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten(),
            );
        }
    }
    for block in blocks {
        let conditions: Vec<&Value> = match block {
            Value::Array(list) => list.iter().collect(),
            Value::Object(m) => ["any", "all"]
                .iter()
                .filter_map(|k| m.get(*k).and_then(Value::as_array))
                .flatten()
                .collect(),
            _ => Vec::new(),
        };
        for c in conditions {
            let alternatives = match c.get("operator").and_then(Value::as_str) {
                Some("In") => "[\"AllIn\" \"AnyIn\"]",
                Some("NotIn") => "[\"AllNotIn\" \"AnyNotIn\"]",
                _ => continue,
            };
            let op = c.get("operator").and_then(Value::as_str).unwrap_or("");
            w.push(format!(
                "Operator {op} has been deprecated and will be removed soon. Use these instead: {alternatives}"
            ));
        }
    }
}

/// The CEL expression warnings of `Validate` (validate.go): when Kyverno has a cluster and
/// the policy can become a ValidatingAdmissionPolicy (`CanGenerateVAP(spec, nil, true)`),
/// the API server's type checker runs on each expression and message expression of the
/// first rule's `validate.cel` against the VAP built from it (see `vap::celtype`); each
/// finding is `spec.rules[0].validate.cel.expressions[i].expression:` and the checker's
/// text with its line breaks made `;`.
pub(super) fn cel_type_checks(spec: &Value, rules: &[Value], mode: Mode<'_>, w: &mut Warned) {
    let Mode::Cluster { mapper, .. } = mode else {
        return;
    };
    let Some(rule) = rules.first() else {
        return;
    };
    if super::super::vap_candidate::check_policy(spec, true).is_err() {
        return;
    }
    let mut resource_rules = Vec::new();
    let m = rule.get("match").unwrap_or(&Value::Null);
    let mut blocks: Vec<&Value> = m.get("resources").into_iter().collect();
    for key in ["any", "all"] {
        for f in m.get(key).and_then(Value::as_array).into_iter().flatten() {
            blocks.extend(f.get("resources"));
        }
    }
    for kind in blocks.into_iter().flat_map(|b| strings(b.get("kinds"))) {
        if kind == "*" {
            continue;
        }
        match super::super::vap_candidate::discover(&kind, mapper) {
            Some((group, version, resource)) => resource_rules.push(serde_json::json!({
                "apiGroups": [group], "apiVersions": [version], "resources": [resource],
            })),
            None => {
                w.unknown(format!(
                    "the ValidatingAdmissionPolicy Kyverno builds for the type check (the kind {kind})"
                ));
                return;
            }
        }
    }
    let cel = rule.pointer("/validate/cel").unwrap_or(&Value::Null);
    let ctx = match celtype::context(
        &resource_rules,
        cel.get("paramKind"),
        cel.get("variables"),
        mapper,
    ) {
        Ok(ctx) => ctx,
        Err(why) => {
            w.unknown(format!(
                "the CEL type checker's warnings on validate.cel: {why}"
            ));
            return;
        }
    };
    let expressions = cel.get("expressions").and_then(Value::as_array);
    for (i, e) in expressions.into_iter().flatten().enumerate() {
        for key in ["expression", "messageExpression"] {
            let Some(text) = e.get(key).and_then(Value::as_str) else {
                continue;
            };
            if key == "messageExpression" && text.is_empty() {
                continue;
            }
            match celtype::check_expression(&ctx, text) {
                TypeCheck::Known(found) if found.is_empty() => {}
                TypeCheck::Known(found) => w.push(format!(
                    "spec.rules[0].validate.cel.expressions[{i}].{key}:{}",
                    found.replace('\n', ";")
                )),
                TypeCheck::Unknown(why) => {
                    w.unknown(why);
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "validation_warnings_tests.rs"]
mod tests;

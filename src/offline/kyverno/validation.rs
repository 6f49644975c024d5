//! Kyverno's validation of a `ClusterPolicy`/`Policy` when it is created, as its policy
//! webhook (`validate-policy.kyverno.svc`) and its CLI run it: the field checks of
//! `api/kyverno/v1` (`Spec.Validate`, `Rule.Validate`, `Generation.Validate`) and the
//! checks of `pkg/validation/policy/validate.go` that the course and the corpus reach,
//! including the generate permission check of `pkg/policy/generate/validate.go`
//! (`canIGenerate`), `pkg/validation/policy/actions.go` and, for mutate-existing rules,
//! `pkg/policy/mutate/validate.go` (see `validation_mutate.rs`). Kyverno 1.19.0 is the
//! reference. Pure: the cluster is an RBAC [`Authorizer`] and a discovery [`Mapper`].

use serde_json::Value;

use crate::offline::rbac::resource::{ApiResource, Mapper};
use crate::offline::rbac::{AccessRequest, Authorizer, impersonated};

#[path = "validation_actions.rs"]
mod action_checks;
#[path = "validation_background.rs"]
mod background_checks;
#[path = "validation_exception.rs"]
mod exception_checks;
#[path = "validation_mutate.rs"]
mod mutate_checks;
#[path = "validation_pss.rs"]
mod pss_checks;
#[path = "validation_update.rs"]
mod update_checks;
#[path = "validation_warnings.rs"]
mod warnings;

pub use exception_checks::{EXCEPTION_WEBHOOK, validate_exception};
pub use update_checks::{Immutable, immutable_generate};
pub use warnings::{REPORTS_SA, Warned, deprecation};

/// The background controller's user, as the chart passes it to the admission
/// controller (`--backgroundServiceAccountName`).
pub const BACKGROUND_SA: &str = "system:serviceaccount:kyverno:kyverno-background-controller";
/// The admission controller's own user (`config.KyvernoServiceAccountName`).
pub const ADMISSION_SA: &str = "system:serviceaccount:kyverno:kyverno-admission-controller";
/// The webhook that validates policies, as the API server names it in a denial.
pub const POLICY_WEBHOOK: &str = "validate-policy.kyverno.svc";

/// One reason Kyverno refuses a policy, in Kyverno's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub message: String,
}

/// Where the policy is validated. The CLI (`kyverno apply/test`) validates in mock mode:
/// no discovery (every kind counts as namespaced) and no permission checks. The webhook
/// asks the cluster's discovery and RBAC.
#[derive(Clone, Copy)]
pub enum Mode<'a> {
    Cli,
    Cluster {
        authorizer: &'a Authorizer,
        mapper: &'a Mapper,
    },
}

/// The problems Kyverno reports for `policy`, empty when it is accepted. Kyverno stops at
/// the first failing stage: the field checks together, then the first rule-level error.
pub fn validate_policy(policy: &Value, mode: Mode<'_>) -> Vec<Problem> {
    validate_with(policy, None, mode, &mut Warned::default())
}

/// What the policy webhook answers on a create (`old` is `None`) or an update: its
/// problems and its warnings (see `validation_warnings.rs`). `None` when the CRD's
/// schema refuses the policy first: the webhook never sees it, and the text is the
/// schema's.
pub fn admission(policy: &Value, old: Option<&Value>, mode: Mode<'_>) -> (Vec<Problem>, Warned) {
    let mut w = Warned::default();
    let problems = validate_with(policy, old, mode, &mut w);
    let kind = policy.get("kind").and_then(Value::as_str).unwrap_or("");
    let schema = matches!(mode, Mode::Cluster { .. })
        && super::validation_kinds::subject_kinds(policy, &rules_of(policy)).is_some();
    if !schema && let Some(d) = deprecation(kind) {
        w.push(d);
    }
    if schema {
        w = Warned::default();
    }
    (problems, w)
}

fn validate_with(
    policy: &Value,
    old: Option<&Value>,
    mode: Mode<'_>,
    w: &mut Warned,
) -> Vec<Problem> {
    let kind = policy.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind != "ClusterPolicy" && kind != "Policy" {
        return Vec::new();
    }
    if kind == "ClusterPolicy"
        && policy
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .is_some_and(|ns| !ns.is_empty())
    {
        let msg = "A clusterpolicy should not have the namespace defined";
        w.push(msg);
        return problem(msg);
    }
    let rules = rules_of(policy);
    // The CRD's schema answers before the webhook sees the policy.
    if matches!(mode, Mode::Cluster { .. })
        && let Some(e) = super::validation_kinds::subject_kinds(policy, &rules)
    {
        return problem(e);
    }
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    warnings::failure_actions(spec, &rules, w);
    // `ValidateVariables` runs before the field checks.
    if let Some(e) = background_checks::background_problem(policy, &rules) {
        return problem(e);
    }
    if let Some(e) = mutate_checks::variables_problem(&rules) {
        return problem(e);
    }
    for (i, rule) in rules.iter().enumerate() {
        let Some(g) = rule.get("generate").filter(|g| g.is_object()) else {
            continue;
        };
        match g.get("foreach").and_then(Value::as_array) {
            Some(entries) => {
                for (j, e) in entries.iter().enumerate() {
                    let at = format!("spec.rules[{i}].generate.foreach[{j}]");
                    warnings::clone_variables(e, &at, w);
                }
            }
            None => warnings::clone_variables(g, &format!("spec.rules[{i}].generate"), w),
        }
    }
    let fields = field_checks(policy, mode);
    if !fields.is_empty() {
        return fields;
    }
    if let Some(e) = super::validation_kinds::policy_checks(policy, &rules, mode) {
        return problem(e);
    }
    if let Some(old) = old {
        match immutable_generate(policy, old) {
            Immutable::Kept => {}
            Immutable::Stale(why) => {
                w.push(format!(
                    "no synchronization will be performed to the old target resource upon policy updates: {why}"
                ));
                return Vec::new();
            }
            Immutable::Refused(p) => {
                w.push(
                    "no synchronization will be performed to the old target resource upon policy updates: ",
                );
                return vec![p];
            }
        }
    }
    for (i, rule) in rules.iter().enumerate() {
        if let Some(message) = rule_checks(i, rule, mode, w) {
            return problem(message);
        }
        warnings::rule_hints(policy, rule, w);
    }
    warnings::cel_type_checks(spec, &rules, mode, w);
    Vec::new()
}

/// The structural checks of the policy webhook on the CEL policy kinds
/// (pkg/cel/policies/{vpol,mpol,gpol}/validate.go `Validate`): a `matchConstraints` with
/// resource rules, and for a MutatingPolicy at least one evaluation mode. `None` for
/// other kinds. The CEL compiler's own errors are not modelled here.
pub fn cel_policy_problems(policy: &Value) -> Option<Vec<Problem>> {
    let group = policy
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = policy.get("kind").and_then(Value::as_str).unwrap_or("");
    let base = kind.strip_prefix("Namespaced").unwrap_or(kind);
    if !group.starts_with("policies.kyverno.io/")
        || !matches!(
            base,
            "ValidatingPolicy" | "MutatingPolicy" | "GeneratingPolicy"
        )
    {
        return None;
    }
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let mut out = Vec::new();
    let rules = spec
        .pointer("/matchConstraints/resourceRules")
        .and_then(Value::as_array);
    if rules.is_none_or(Vec::is_empty) {
        out.push(Problem {
            message: "spec.matchConstraints: Required value: a matchConstraints with at least one resource rule is required".into(),
        });
    }
    if base == "MutatingPolicy" {
        let enabled =
            |p: &str, default: bool| spec.pointer(p).and_then(Value::as_bool).unwrap_or(default);
        if !enabled("/evaluation/admission/enabled", true)
            && !enabled("/evaluation/mutateExisting/enabled", false)
        {
            out.push(forbidden(
                "spec.evaluation",
                "disabling both admission and mutateExisting evaluation modes is not allowed",
            ));
        }
    }
    Some(out)
}

/// The message Kyverno returns for these problems (field errors are aggregated as
/// `[a, b]`, as `field.ErrorList.ToAggregate` prints several).
pub fn message(problems: &[Problem]) -> Option<String> {
    match problems {
        [] => None,
        [one] => Some(one.message.clone()),
        many => Some(format!(
            "[{}]",
            many.iter()
                .map(|p| p.message.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The API server's text when the policy webhook refuses a policy.
pub fn denial_text(problems: &[Problem]) -> Option<String> {
    message(problems)
        .map(|m| format!("admission webhook \"{POLICY_WEBHOOK}\" denied the request: {m}"))
}

fn problem(message: impl Into<String>) -> Vec<Problem> {
    vec![Problem {
        message: message.into(),
    }]
}

fn rules_of(policy: &Value) -> Vec<Value> {
    policy
        .pointer("/spec/rules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn forbidden(path: &str, detail: &str) -> Problem {
    Problem {
        message: format!("{path}: Forbidden: {detail}"),
    }
}

/// `api/kyverno/v1`: `Spec.Validate` and the parts of `Rule.Validate` whose messages
/// carry no Go value dump (those are left to the API server's own schema answer).
fn field_checks(policy: &Value, mode: Mode<'_>) -> Vec<Problem> {
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let namespaced = policy.get("kind").and_then(Value::as_str) == Some("Policy");
    let policy_ns = policy
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("default");
    let mut out = Vec::new();
    // `validateDeprecatedFields`: a deprecated field beside its replacement.
    let hook = |k: &str| spec.pointer(&format!("/webhookConfiguration/{k}"));
    for (old, new) in [
        ("webhookTimeoutSeconds", "timeoutSeconds"),
        ("failurePolicy", "failurePolicy"),
    ] {
        if spec.get(old).is_some_and(|v| !v.is_null()) && hook(new).is_some_and(|v| !v.is_null()) {
            out.push(forbidden(
                &format!("spec.{old}"),
                &format!(
                    "remove the deprecated field and use spec.webhookConfiguration.{new} instead"
                ),
            ));
        }
    }
    if spec.get("generateExistingOnPolicyUpdate").is_some() {
        out.push(forbidden(
            "spec.generateExistingOnPolicyUpdate",
            "remove the deprecated field and use spec.generate[*].generateExisting instead",
        ));
    }
    let rules = rules_of(policy);
    let spec_mutate_existing = spec
        .get("mutateExistingOnPolicyUpdate")
        .and_then(Value::as_bool)
        == Some(true);
    for (i, rule) in rules.iter().enumerate() {
        let Some(mutate) = rule.get("mutate").filter(|m| m.is_object()) else {
            continue;
        };
        let rule_flag = mutate
            .get("mutateExistingOnPolicyUpdate")
            .and_then(Value::as_bool)
            == Some(true);
        let no_targets = mutate
            .get("targets")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        if (spec_mutate_existing || rule_flag) && no_targets {
            out.push(forbidden(
                "spec.mutateExistingOnPolicyUpdate",
                &format!(
                    "rules[{i}].mutate.targets has to be specified when mutateExistingOnPolicyUpdate is set"
                ),
            ));
        }
    }
    for (at, pointer) in [
        ("webhookTimeoutSeconds", "/webhookTimeoutSeconds"),
        (
            "webhookConfiguration.timeoutSeconds",
            "/webhookConfiguration/timeoutSeconds",
        ),
    ] {
        if let Some(t) = spec.pointer(pointer).and_then(Value::as_i64)
            && !(1..=30).contains(&t)
        {
            out.push(Problem {
                message: format!(
                    "spec.{at}: Invalid value: {t}: the timeout value must be between 1 and 30 seconds"
                ),
            });
        }
    }
    if namespaced {
        for (i, rule) in rules.iter().enumerate() {
            out.extend(namespaced_match_fields(i, rule, mode));
        }
    }
    for (i, rule) in rules.iter().enumerate() {
        out.extend(pss_checks::rule_problems(i, rule));
        if let Some(generate) = rule.get("generate").filter(|g| g.is_object()) {
            let at = format!("spec.rules[{i}].generate");
            out.extend(generation_fields(
                generate, &at, namespaced, policy_ns, mode,
            ));
        }
    }
    if namespaced
        && spec
            .get("validationFailureActionOverrides")
            .and_then(Value::as_array)
            .is_some_and(|o| !o.is_empty())
    {
        out.push(forbidden(
            "spec.validationFailureActionOverrides",
            "Use of validationFailureActionOverrides is supported only with ClusterPolicy",
        ));
    }
    out
}

/// `ResourceDescription.Validate` in a namespaced `Policy` (api/kyverno/v1
/// resource_description_types.go): no `namespaces` filter, no cluster-wide kind (as
/// discovery lists them: `Kind` or `group/version/Kind`).
fn namespaced_match_fields(i: usize, rule: &Value, mode: Mode<'_>) -> Vec<Problem> {
    let mut out = Vec::new();
    for (path, f) in super::validation_kinds::filters_of(rule) {
        let path = format!("spec.rules[{i}].{path}");
        let Some(res) = f.get("resources") else {
            continue;
        };
        if res
            .get("namespaces")
            .and_then(Value::as_array)
            .is_some_and(|n| !n.is_empty())
        {
            out.push(forbidden(
                &format!("{path}.namespaces"),
                "Filtering namespaces not allowed in namespaced policies",
            ));
        }
        let kinds = res.get("kinds").and_then(Value::as_array);
        for (k, kind) in kinds.into_iter().flatten().enumerate() {
            let Some(kind) = kind.as_str() else { continue };
            if listed_cluster_wide(mode, kind) {
                out.push(forbidden(
                    &format!("{path}.kinds[{k}]"),
                    &format!("Cluster wide resource '{kind}' not allowed in namespaced policy"),
                ));
            }
        }
    }
    out
}

/// Whether a kind is in Kyverno's set of cluster-wide kinds, which holds each such kind
/// as `Kind` and as `group/version/Kind` (validate.go `getClusteredResources`). The
/// CLI's mock mode has no discovery: the set is empty there.
fn listed_cluster_wide(mode: Mode<'_>, selector: &str) -> bool {
    let Mode::Cluster { mapper, .. } = mode else {
        return false;
    };
    let found = match selector.rsplit_once('/') {
        None => mapper.for_bare_kind(selector),
        // `/Kind` (a target without an apiVersion) is in no set.
        Some(("", _)) => None,
        Some((gv, kind)) => mapper.for_kind(gv, kind),
    };
    found.is_some_and(|r| !r.namespaced)
}

/// Whether a generate target `apiVersion`/`kind` is cluster-wide, looked up as Kyverno
/// does: `apiVersion/Kind` in the set, so nothing matches without an apiVersion.
fn cluster_scoped(mode: Mode<'_>, api_version: &str, kind: &str) -> bool {
    listed_cluster_wide(mode, &format!("{api_version}/{kind}"))
}

/// `Generation.Validate`: one pattern per rule, then each pattern's target.
fn generation_fields(
    generate: &Value,
    at: &str,
    namespaced: bool,
    policy_ns: &str,
    mode: Mode<'_>,
) -> Vec<Problem> {
    let present = |k: &str| generate.get(k).is_some_and(|v| !v.is_null());
    let clone_set = generate
        .get("clone")
        .and_then(Value::as_object)
        .is_some_and(|c| c.values().any(|v| v.as_str().is_none_or(|s| !s.is_empty())));
    let patterns = [
        present("data"),
        clone_set,
        generate.pointer("/cloneList/kinds").is_some(),
        present("foreach"),
    ];
    if patterns.iter().filter(|p| **p).count() > 1 {
        return vec![forbidden(
            at,
            "only one of generate patterns(data, clone, cloneList and foreach) can be specified",
        )];
    }
    if let Some(foreach) = generate.get("foreach").and_then(Value::as_array) {
        return foreach
            .iter()
            .enumerate()
            .flat_map(|(j, entry)| {
                pattern_fields(
                    entry,
                    &format!("{at}.foreach[{j}]"),
                    namespaced,
                    policy_ns,
                    mode,
                )
            })
            .collect();
    }
    pattern_fields(generate, at, namespaced, policy_ns, mode)
}

/// `GeneratePattern.Validate`: target scope and the fields a target needs.
fn pattern_fields(
    pattern: &Value,
    at: &str,
    namespaced: bool,
    policy_ns: &str,
    mode: Mode<'_>,
) -> Vec<Problem> {
    let s = |k: &str| pattern.get(k).and_then(Value::as_str).unwrap_or("");
    let mut out = Vec::new();
    let (kind, api_version, namespace) = (s("kind"), s("apiVersion"), s("namespace"));
    if namespaced && let Some(why) = namespaced_scope(pattern, mode, policy_ns) {
        out.push(forbidden(
            &format!("{at}.namespace"),
            &format!("target resource scope mismatched: {why} "),
        ));
    }
    if !kind.is_empty() {
        let cluster_wide = cluster_scoped(mode, api_version, kind);
        if !cluster_wide && namespace.is_empty() {
            out.push(forbidden(
                &format!("{at}.namespace"),
                "target namespace must be set for a namespaced resource",
            ));
        } else if cluster_wide && !namespace.is_empty() {
            out.push(forbidden(
                &format!("{at}.namespace"),
                "target namespace must not be set for a cluster-wide resource",
            ));
        }
    }
    let clone_list = pattern
        .pointer("/cloneList/kinds")
        .and_then(Value::as_array)
        .is_some_and(|k| !k.is_empty());
    if !clone_list {
        for (field, value) in [
            ("kind", kind),
            ("name", s("name")),
            ("apiVersion", api_version),
        ] {
            if value.is_empty() {
                out.push(forbidden(
                    &format!("{at}.{field}"),
                    &format!("{field} can not be empty"),
                ));
            }
        }
    }
    out.extend(clone_list_fields(pattern, at, namespaced, policy_ns, mode));
    out
}

/// `GeneratePattern.ValidateCloneList` (api/kyverno/v1/common_types.go): the listed
/// sources are all cluster-wide or all namespaced, a namespace exactly when they are
/// namespaced, and a namespaced `Policy` clones namespaced sources from its own
/// namespace (one error per listed kind, as Kyverno appends them in its loop).
fn clone_list_fields(
    pattern: &Value,
    at: &str,
    namespaced: bool,
    policy_ns: &str,
    mode: Mode<'_>,
) -> Vec<Problem> {
    let kinds: Vec<&str> = pattern
        .pointer("/cloneList/kinds")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|k| k.as_str().unwrap_or(""))
        .collect();
    let Some(first) = kinds.first() else {
        return Vec::new();
    };
    let source_ns = pattern
        .pointer("/cloneList/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let (at_kinds, at_ns) = (
        format!("{at}.cloneList.kinds"),
        format!("{at}.cloneList.namespace"),
    );
    let mut out = Vec::new();
    if namespaced {
        for kind in &kinds {
            if listed_cluster_wide(mode, kind) {
                out.push(forbidden(
                    &at_kinds,
                    &format!("the source in cloneList must be a namespaced resource: {kind}"),
                ));
            }
            if source_ns != policy_ns {
                out.push(forbidden(
                    &at_ns,
                    &format!(
                        "a namespaced policy cannot clone resources from other namespace, expected: {policy_ns}, received: {source_ns}"
                    ),
                ));
            }
        }
    }
    let cluster_wide = listed_cluster_wide(mode, first);
    if kinds[1..]
        .iter()
        .any(|k| listed_cluster_wide(mode, k) != cluster_wide)
    {
        out.push(forbidden(
            &at_kinds,
            "mixed scope of target resources is forbidden",
        ));
    }
    // Kyverno's loop stops at the first mismatch: the scope it goes on with is the
    // first kind's.
    if !cluster_wide && source_ns.is_empty() {
        out.push(forbidden(
            &at_ns,
            "namespace is required for namespaced target resources",
        ));
    } else if cluster_wide && !namespaced && !source_ns.is_empty() {
        out.push(forbidden(
            &at_ns,
            "namespace is forbidden for cluster-wide target resources",
        ));
    }
    out
}

/// `validateNamespacedTargetsScope`: a namespaced `Policy` generates and clones in its
/// own namespace only.
fn namespaced_scope(pattern: &Value, mode: Mode<'_>, policy_ns: &str) -> Option<String> {
    let s = |p: &str| pattern.pointer(p).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind) = (s("/apiVersion"), s("/kind"));
    if cluster_scoped(mode, api_version, kind) {
        return Some(format!(
            "the target must be a namespaced resource: {api_version}/{kind}"
        ));
    }
    if s("/namespace") != policy_ns {
        return Some(format!(
            "a namespaced policy cannot generate resources in other namespaces, expected: {policy_ns}, received: {}",
            s("/namespace")
        ));
    }
    if !s("/clone/name").is_empty() && s("/clone/namespace") != policy_ns {
        return Some(format!(
            "a namespaced policy cannot clone resources from other namespaces, expected: {policy_ns}, received: {}",
            s("/clone/namespace")
        ));
    }
    None
}

/// The rule-level checks of `pkg/validation/policy/validate.go`, first error only; the
/// warnings of `jsonPatchOnPod` and `validateActions` go to `w`.
fn rule_checks(i: usize, rule: &Value, mode: Mode<'_>, w: &mut Warned) -> Option<String> {
    if let Some(patch) = rule
        .pointer("/mutate/patchesJson6902")
        .and_then(Value::as_str)
        && let Some(e) = json_patch_problem(patch, i)
    {
        return Some(e);
    }
    warnings::json_patch_on_pod(rule, w);
    if let Some(e) = action_checks::mutate_problem(i, rule) {
        return Some(e);
    }
    if let Some(e) = mutate_checks::auth_problem(i, rule, mode) {
        return Some(e);
    }
    // `validateActions` returns its warnings only when it accepts the rule.
    let mut actions = Warned::default();
    warnings::reports_permissions(rule, mode, &mut actions);
    if let Some(e) = action_checks::validate_problem(i, rule, mode) {
        return Some(e);
    }
    if let Some(generate) = rule.get("generate").filter(|g| g.is_object()) {
        if let Some(e) = generate_action(i, rule, generate, mode) {
            return Some(e);
        }
        let gen_kind = generate.get("kind").and_then(Value::as_str).unwrap_or("");
        let match_kinds = rule
            .pointer("/match/resources/kinds")
            .and_then(Value::as_array);
        if match_kinds.is_some_and(|k| k.iter().any(|k| k.as_str() == Some(gen_kind))) {
            return Some("generation kind and match resource kind should not be the same".into());
        }
    }
    for line in actions.lines {
        w.push(line);
    }
    if let Some(why) = actions.unknown {
        w.unknown(why);
    }
    None
}

/// `validateJSONPatchPathForForwardSlash` and `validateJSONPatch`, with variables
/// replaced by a placeholder first as Kyverno does.
fn json_patch_problem(patch: &str, i: usize) -> Option<String> {
    let patch = replace_variables(patch);
    let docs = crate::yaml::parse_json_stream(&patch).ok()?;
    let ops = docs.first()?.as_array()?.clone();
    for op in &ops {
        let path = op.get("path").and_then(Value::as_str).unwrap_or("");
        if !path.starts_with('/') {
            return Some(format!(
                "path must begin with a forward slash: spec.rules[{i}]: {path}"
            ));
        }
    }
    for op in &ops {
        let kind = op.get("op").and_then(Value::as_str).unwrap_or("");
        if !["add", "remove", "replace", "move", "copy", "test"].contains(&kind) {
            return Some(format!("unexpected kind: spec.rules[{i}]: {kind}"));
        }
    }
    None
}

/// `{{ … }}` → `kyvernojsonpatchvariable`.
fn replace_variables(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let Some(end) = rest[start..].find("}}") else {
            break;
        };
        out.push_str(&rest[..start]);
        out.push_str("kyvernojsonpatchvariable");
        rest = &rest[start + end + 2..];
    }
    out.push_str(rest);
    out
}

/// `validateActions` for a generate rule: the permission checks (`canIGenerate`) for the
/// admission controller (list, get with `synchronize`) and the background controller
/// (get, create; update, delete with `synchronize`). The CLI's fake checker allows all.
fn generate_action(i: usize, rule: &Value, generate: &Value, mode: Mode<'_>) -> Option<String> {
    if rule.get("celPreconditions").is_some() {
        return Some(format!(
            "path: spec.rules[{i}].generate..: celPrecondition can only be used with validate.cel"
        ));
    }
    let Mode::Cluster { authorizer, mapper } = mode else {
        return None;
    };
    let synchronize = generate.get("synchronize").and_then(Value::as_bool) == Some(true);
    let mut checks: Vec<(&str, Vec<&str>)> = Vec::new();
    if synchronize {
        checks.push((ADMISSION_SA, vec!["list", "get"]));
    }
    let background: Vec<&str> = if synchronize {
        vec!["get", "create", "update", "delete"]
    } else {
        vec!["get", "create"]
    };
    checks.push((BACKGROUND_SA, background));
    for (user, verbs) in checks {
        let check = |pattern: &Value| can_i_generate(authorizer, mapper, user, &verbs, pattern);
        let failed = match generate.get("foreach").and_then(Value::as_array) {
            Some(entries) => entries.iter().find_map(check).map(|e| ("foreach", e)),
            None => check(generate).map(|e| ("", e)),
        };
        if let Some((path, e)) = failed {
            return Some(format!("path: spec.rules[{i}].generate.{path}.: {e}"));
        }
    }
    None
}

/// `canIGenerate` for one pattern: the kind (or the first cloneList kind) in the target
/// namespace, taken literally even when it is a variable.
fn can_i_generate(
    authorizer: &Authorizer,
    mapper: &Mapper,
    user: &str,
    verbs: &[&str],
    pattern: &Value,
) -> Option<String> {
    let s = |k: &str| pattern.get(k).and_then(Value::as_str).unwrap_or("");
    let namespace = s("namespace");
    let first_listed = pattern
        .pointer("/cloneList/kinds/0")
        .and_then(Value::as_str);
    // A cloneList kind names its subresource as `Kind.sub`; the pattern's `kind` as
    // `Kind/sub` (pkg/policy/generate/validate.go `validateAuth`, pkg/utils/kube/kind.go
    // `SplitSubresource`: exactly one `/`).
    let (gvk, subresource) = match first_listed {
        Some(listed) => {
            let (gv, kind) = listed.rsplit_once('/').unwrap_or(("", listed));
            let (kind, sub) = kind.split_once('.').unwrap_or((kind, ""));
            let gvk = if gv.is_empty() {
                kind.to_string()
            } else {
                format!("{gv}/{kind}")
            };
            (gvk, sub)
        }
        None => {
            let kind = s("kind");
            let (kind, sub) = match kind.split('/').collect::<Vec<_>>()[..] {
                [k, sub] => (k, sub),
                _ => (kind, ""),
            };
            (format!("{}/{kind}", s("apiVersion")), sub)
        }
    };
    if gvk.contains("{{") {
        return None;
    }
    let (api_version, kind) = gvk.rsplit_once('/').unwrap_or(("", gvk.as_str()));
    let resource = if api_version.is_empty() {
        mapper.for_bare_kind(kind)
    } else {
        mapper.for_kind(api_version, kind)
    };
    let Some(resource) = resource else {
        return Some(format!("failed to get GVR for kind {gvk}"));
    };
    // Kyverno asks without a name: the target's name may be a variable.
    let failed = denied_verbs(
        authorizer,
        user,
        verbs,
        resource,
        subresource,
        namespace,
        "",
    );
    if failed.is_empty() {
        return None;
    }
    let target = if subresource.is_empty() {
        gvk.clone()
    } else {
        format!("{gvk}/{subresource}")
    };
    let mut msg = format!(
        "{user} requires permissions {} for resource {target}",
        failed.join(",")
    );
    if !namespace.is_empty() {
        msg.push_str(&format!(" in namespace {namespace}"));
    }
    Some(msg)
}

/// The verbs of `verbs` that `user` may not use on the resource in `namespace`, on the
/// object `name` when one is given (a rule's `resourceNames` then count, as in the
/// SubjectAccessReview of pkg/auth/auth.go `RunAccessCheck`).
fn denied_verbs<'v>(
    authorizer: &Authorizer,
    user: &str,
    verbs: &[&'v str],
    resource: &ApiResource,
    subresource: &str,
    namespace: &str,
    name: &str,
) -> Vec<&'v str> {
    let (username, groups) = impersonated(user, &[]);
    verbs
        .iter()
        .copied()
        .filter(|verb| {
            !authorizer
                .authorize(&AccessRequest {
                    user: username.clone(),
                    groups: groups.clone(),
                    verb: verb.to_string(),
                    api_group: resource.group.clone(),
                    resource: resource.plural.clone(),
                    subresource: subresource.to_string(),
                    namespace: namespace.to_string(),
                    name: name.to_string(),
                    ..AccessRequest::default()
                })
                .allowed
        })
        .collect()
}

#[cfg(test)]
#[path = "validation_tests.rs"]
mod tests;

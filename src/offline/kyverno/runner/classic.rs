//! Rows of `kyverno.io/v1` ClusterPolicies and Policies: each resource through every
//! policy of the test in order (`engine::admit_with`), mutate-existing targets through
//! their triggers, and the verdict against the row's expectation and patched or
//! generated objects.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::compare::compare_file;
use super::testfile::ResultRow;
use super::{Row, Shared, Suite, Values, Verdict, scope_of};
use crate::offline::kyverno::engine::admit_with;
use crate::offline::kyverno::entries::Options;
use crate::offline::kyverno::{Policy, Request, RuleResult, RuleStatus, UserInfo};

/// A ClusterPolicy/Policy row: the policy named must be among the test's, the resource
/// among its resources (or, for a mutate-existing rule, its target resources); a
/// `validate.cel` rule's row is scope `cel`.
pub(super) fn classic_row(
    out: &mut Row,
    suite: &Suite,
    shared: &mut Shared,
    row: &ResultRow,
    policy_name: &str,
) {
    let Some(pi) = suite.policies.iter().position(|p| p.name == policy_name) else {
        out.verdict = Verdict::Fail;
        out.reason = if let Some((_, why)) = suite.invalid.iter().find(|i| i.0 == policy_name) {
            format!("policy {policy_name} is invalid: {why}")
        } else if suite.load_problems.is_empty() {
            format!("policy {policy_name} not found in the test's policies")
        } else {
            suite.load_problems.join("; ")
        };
        return;
    };
    let (ns, rname) = match out.resource.rsplit_once('/') {
        Some((n, r)) => (Some(n.to_string()), r.to_string()),
        None => (row.namespace().map(str::to_string), out.resource.clone()),
    };
    let kind = row.kind.as_str();
    let names_it = |r: &Value| {
        r.pointer("/metadata/name").and_then(Value::as_str) == Some(rname.as_str())
            && (kind.is_empty() || r.get("kind").and_then(Value::as_str) == Some(kind))
            && ns.as_deref().is_none_or(|n| {
                r.pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or("default")
                    == n
            })
    };
    let op = row.operation.clone();
    let run = |ri: usize| {
        evaluate(
            &suite.policies,
            &suite.resources[ri],
            &suite.values,
            &suite.user,
            &suite.opts,
            &op,
        )
    };
    if !suite.resources.iter().any(names_it) && suite.targets.iter().any(names_it) {
        // A mutate-existing target: the rule runs on a trigger from `resources`.
        for ri in 0..suite.resources.len() {
            shared
                .cache
                .entry((ri, op.clone()))
                .or_insert_with(|| run(ri));
        }
        let hit = (0..suite.resources.len())
            .filter_map(|ri| shared.cache.get(&(ri, op.clone())))
            .find(|e| e.results.iter().any(|r| r.policy == policy_name));
        match hit {
            Some(eval) => judge(out, row, eval, &suite.dir),
            None => {
                out.verdict = Verdict::Fail;
                out.actual = "skip".into();
                out.reason = "no trigger in the test's resources fires this rule".into();
            }
        }
        return;
    }
    let Some(ri) = suite.resources.iter().position(names_it) else {
        out.verdict = Verdict::Fail;
        out.reason = format!(
            "resource {kind} {} not found in the test's resources",
            out.resource
        );
        return;
    };
    // `validate.cel` rows are measured apart from the classic set.
    let rule = row.rule.as_str();
    let is_cel_rule = |r: &super::super::Rule| {
        r.is_cel() && (rule.is_empty() || r.name == rule || r.base_name() == rule)
    };
    if suite.policies[pi].rules.iter().any(is_cel_rule) {
        out.scope = "cel";
    }
    let eval = shared
        .cache
        .entry((ri, op.clone()))
        .or_insert_with(|| run(ri));
    judge(out, row, eval, &suite.dir);
}

pub(super) struct EvalOut {
    results: Vec<RuleResult>,
    patched: Value,
    /// The object right after each policy (policies apply in the test's order).
    patched_after: BTreeMap<String, Value>,
    generated: Vec<Value>,
    /// Existing resources patched by mutate rules with `targets`.
    targets: Vec<Value>,
}

/// Applies every policy of the test to one resource in order; each policy sees the object
/// the previous ones mutated, as `kyverno test` does.
fn evaluate(
    policies: &[Policy],
    resource: &Value,
    values: &Values,
    user: &UserInfo,
    opts: &Options,
    row_operation: &str,
) -> EvalOut {
    let res_name = resource
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let ns = resource
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut out = EvalOut {
        results: Vec::new(),
        patched: resource.clone(),
        patched_after: BTreeMap::new(),
        generated: Vec::new(),
        targets: Vec::new(),
    };
    for policy in policies {
        let mut vals = values.global.clone();
        if let Some(rv) = values
            .per_resource
            .get(&(policy.name.clone(), res_name.to_string()))
        {
            for (k, v) in rv {
                vals.insert(k.clone(), v.clone());
            }
        }
        let operation = if row_operation.is_empty() {
            vals.get("request.operation")
                .and_then(Value::as_str)
                .unwrap_or("CREATE")
                .to_string()
        } else {
            vals.insert(
                "request.operation".into(),
                Value::String(row_operation.into()),
            );
            row_operation.to_string()
        };
        // Values for `request.object.…` change the object itself, so match sees them too.
        let mut subject = out.patched.clone();
        for (k, v) in &vals {
            if let Some(path) = k.strip_prefix("request.object.") {
                crate::offline::kyverno::context::set_path(
                    &mut subject,
                    &crate::offline::kyverno::context::split_path(path),
                    v.clone(),
                );
            }
        }
        let (object, old_object) = if operation == "DELETE" {
            (Value::Null, subject)
        } else {
            (subject, Value::Null)
        };
        let req = Request {
            operation,
            object,
            old_object,
            user_info: user.clone(),
            namespace_labels: values.namespaces.get(ns).cloned().unwrap_or_default(),
            values: Value::Object(vals),
            subresource: resource
                .get("kind")
                .and_then(Value::as_str)
                .and_then(|k| values.subresources.get(k))
                .cloned(),
        };
        let resp = admit_with(std::slice::from_ref(policy), &req, opts);
        out.results.extend(resp.results);
        if !resp.patched.is_null() {
            out.patched = resp.patched;
        }
        out.patched_after
            .insert(policy.name.clone(), out.patched.clone());
        out.generated.extend(resp.generated);
        out.targets.extend(resp.patched_targets);
    }
    out
}

fn judge(out: &mut Row, row: &ResultRow, eval: &EvalOut, dir: &Path) {
    // A row names the rule as written; on Pod controllers it means the autogen copy.
    let policy_name = out
        .policy
        .rsplit('/')
        .next()
        .unwrap_or(&out.policy)
        .to_string();
    let found = eval
        .results
        .iter()
        .filter(|r| r.policy == policy_name)
        .find(|r| {
            out.rule.is_empty()
                || r.rule == out.rule
                || r.rule == format!("autogen-{}", out.rule)
                || r.rule == format!("autogen-cronjob-{}", out.rule)
        });
    let (actual, message) = match found {
        Some(r) => (r.status, r.message.clone()),
        None => (
            RuleStatus::Skip,
            "rule does not apply to this resource".to_string(),
        ),
    };
    out.actual = actual.as_str().to_string();
    let unsupported = found.and_then(|r| r.unsupported.as_ref());
    if let Some(why) = unsupported
        && out.expected != "skip"
    {
        out.verdict = Verdict::Skipped;
        out.reason = why.to_string();
        if out.scope == "classic" {
            out.scope = scope_of(&out.reason);
        }
        return;
    }
    let mut reason = message;
    // A rule that ran but produced something other than the expected object counts as
    // failed, as in `kyverno test`.
    if actual == RuleStatus::Pass {
        let patched = eval
            .patched_after
            .get(&policy_name)
            .unwrap_or(&eval.patched);
        // A mutate-existing rule patched its targets, not the trigger.
        let produced = if eval.targets.is_empty() {
            std::slice::from_ref(patched)
        } else {
            eval.targets.as_slice()
        };
        if let Some(f) = row.patched_file()
            && let Err(why) = compare_file(&dir.join(f), produced, patched, false)
        {
            out.actual = "fail".into();
            reason = format!("patched resource differs: {why}");
        }
        if let Some(f) = row.generated_file() {
            let first = eval.generated.first().cloned().unwrap_or(Value::Null);
            if let Err(why) = compare_file(&dir.join(f), &eval.generated, &first, true) {
                out.actual = "fail".into();
                reason = format!("generated resource differs: {why}");
            }
        }
    }
    out.verdict = if out.actual == out.expected {
        Verdict::Pass
    } else {
        Verdict::Fail
    };
    out.reason = reason;
}

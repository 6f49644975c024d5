//! `kca policy apply`: the policies on each resource (`Apply::evaluate`), each resource's
//! results rendered as soon as they are known and then dropped, so memory does not grow
//! with the number of results (JSON is streamed too, one resource at a time).

use serde::Serialize;
use serde_json::Value;

use super::{describe, read_path};
use crate::cli::policy::ApplyArgs;
use crate::ctx::Ctx;
use crate::error::{Error, Result, msg};
use crate::exit::Exit;
use crate::offline::kyverno::engine::admit_with;
use crate::offline::kyverno::entries::Options;
use crate::offline::kyverno::runner::{self, Values};
use crate::offline::kyverno::{Policy, Request, RuleStatus, UserInfo, load_policies};
use crate::settings::OutputFormat;
use crate::ui::{Printer, Style};

/// One resource's results.
#[derive(Serialize)]
struct ApplyResource {
    resource: String,
    results: Vec<ApplyRule>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mutated: Option<Value>,
}

#[derive(Serialize)]
struct ApplyRule {
    policy: String,
    rule: String,
    status: &'static str,
    message: String,
}

#[derive(Serialize, Default)]
struct ApplySummary {
    pass: usize,
    fail: usize,
    warn: usize,
    error: usize,
    skip: usize,
}

impl ApplySummary {
    fn count(&mut self, r: &ApplyResource) {
        for rule in &r.results {
            match rule.status {
                "pass" => self.pass += 1,
                "fail" => self.fail += 1,
                "warn" => self.warn += 1,
                "error" => self.error += 1,
                _ => self.skip += 1,
            }
        }
    }
}

/// What every resource is evaluated with, read once.
struct Apply {
    policies: Vec<Policy>,
    /// Policies Kyverno refuses: not applied, each counted as an error (as `kyverno apply`).
    invalid: usize,
    resources: Vec<Value>,
    values: Values,
    user: UserInfo,
    opts: Options,
    operation: String,
    print_mutated: bool,
}

impl Apply {
    fn load(ctx: &Ctx, args: &ApplyArgs) -> Result<Apply> {
        let mut objs = Vec::new();
        for p in &args.policies {
            objs.extend(read_path(p)?);
        }
        let (policies, skipped) = load_policies(&objs);
        let lang = ctx.settings.lang;
        for s in &skipped {
            let s = crate::escape::escape(s);
            ctx.printer.status(&crate::ui::tr_s(
                lang,
                format!("警告: 読み飛ばしました: {s}"),
                format!("warning: skipped {s}"),
            ));
        }
        let (policies, invalid) = crate::offline::kyverno::split_invalid(policies);
        for (name, why) in &invalid {
            let (name, why) = (
                crate::escape::escape(name),
                crate::escape::lines(&why.to_string()),
            );
            ctx.printer.status(&crate::ui::tr_s(
                lang,
                format!("警告: ポリシー {name} は正しくないため、使いませんでした: {why}"),
                format!("warning: policy {name} is invalid and was skipped: {why}"),
            ));
        }
        if policies.is_empty() {
            return Err(Error::usage(
                msg(
                    "ポリシーのファイルに ClusterPolicy も Policy もありません",
                    "no ClusterPolicy or Policy found in the policy files",
                ),
                msg(
                    "kyverno.io/v1 の ClusterPolicy か Policy を含むファイルを渡します",
                    "pass files holding kyverno.io/v1 ClusterPolicy or Policy objects",
                ),
            ));
        }
        let mut resources = Vec::new();
        for r in &args.resources {
            resources.extend(read_path(r)?);
        }
        resources.iter_mut().for_each(runner::default_namespace);
        let values = match &args.values_file {
            Some(f) => read_path(f)?
                .first()
                .map(runner::parse_values)
                .transpose()
                .map_err(|e| {
                    Error::usage_with(
                        msg(
                            format!(
                                "{} は kyverno apply が読む値ファイルの形ではありません",
                                f.display()
                            ),
                            format!("{}: not a values file kyverno apply reads", f.display()),
                        ),
                        msg(
                            "globalValues・values・foreachValues はマップ、policies・rules・resources・namespaceSelector・namespaces・subresources はリストです",
                            "globalValues, values and foreachValues are maps; policies, rules, resources, namespaceSelector, namespaces and subresources are lists",
                        ),
                        e,
                    )
                })?
                .unwrap_or_default(),
            None => Values::default(),
        };
        let user = match &args.userinfo {
            Some(f) => read_path(f)?
                .first()
                .map(runner::parse_user)
                .unwrap_or_default(),
            None => UserInfo::default(),
        };
        let mut opts = Options {
            rule_values: values.per_rule.clone(),
            ..Options::default()
        };
        for e in &args.exceptions {
            opts.exceptions.extend(read_path(e)?);
        }
        Ok(Apply {
            policies,
            invalid: invalid.len(),
            resources,
            values,
            user,
            opts,
            operation: args.operation.to_uppercase(),
            print_mutated: args.print_mutated,
        })
    }

    /// Every policy on one resource, in order.
    fn evaluate(&self, res: &Value) -> ApplyResource {
        let ns = res
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("");
        let (object, old_object) = if self.operation == "DELETE" {
            (Value::Null, res.clone())
        } else {
            (res.clone(), Value::Null)
        };
        let req = Request {
            operation: self.operation.clone(),
            object,
            old_object,
            user_info: self.user.clone(),
            namespace_labels: self.values.namespaces.get(ns).cloned().unwrap_or_default(),
            values: Value::Object(self.values.global.clone()),
            subresource: res
                .get("kind")
                .and_then(Value::as_str)
                .and_then(|k| self.values.subresources.get(k))
                .cloned(),
        };
        let resp = admit_with(&self.policies, &req, &self.opts);
        let results = resp
            .results
            .into_iter()
            .map(|r| ApplyRule {
                status: match r.status {
                    RuleStatus::Pass => "pass",
                    RuleStatus::Fail => "fail",
                    RuleStatus::Warn => "warn",
                    RuleStatus::Error => "error",
                    RuleStatus::Skip => "skip",
                },
                policy: r.policy,
                rule: r.rule,
                message: r.message,
            })
            .collect();
        ApplyResource {
            resource: describe(res),
            results,
            mutated: self.print_mutated.then_some(resp.patched),
        }
    }
}

pub(super) fn run(ctx: &Ctx, args: ApplyArgs) -> Result<Exit> {
    let apply = Apply::load(ctx, &args)?;
    let p = &ctx.printer;
    let json = ctx.settings.output == OutputFormat::Json;
    let mut summary = ApplySummary {
        error: apply.invalid,
        ..ApplySummary::default()
    };
    let mut json_out = JsonStream::default();
    let words = Words::new(p);
    let mut mutated = Vec::new();
    if json {
        p.document_part(&format!(
            "{{\n  \"schemaVersion\": {},\n  \"resources\": [",
            crate::envelope::SCHEMA_VERSION
        ));
    }
    for res in &apply.resources {
        let mut r = apply.evaluate(res);
        summary.count(&r);
        if json {
            json_out.item(p, &r);
            continue;
        }
        p.out(text_block(p, &words, &r).trim_end());
        // Printed together after the results, as one YAML stream.
        mutated.extend(r.mutated.take());
    }
    let (exit, why) = exit_for(&summary, args.warn_exit_code, args.warn_no_pass);
    if json {
        json_out.finish(p, &summary);
        if let Some(why) = why {
            p.status(&why);
        }
        return Ok(exit);
    }
    if apply.print_mutated {
        p.out(&crate::yaml::to_stream(&mutated));
    }
    p.out(&format!(
        "pass: {}, fail: {}, warn: {}, error: {}, skip: {}",
        summary.pass, summary.fail, summary.warn, summary.error, summary.skip
    ));
    if let Some(why) = why {
        p.out(&why);
    }
    Ok(exit)
}

/// Each rule result of the policies (ClusterPolicy / Policy objects) on the resources, as
/// `kca policy apply` reports them: (resource, policy/rule, status, message). For kca's
/// own graders (a render parsed in-process); a policy Kyverno refuses is an error.
pub fn rule_results(
    policy_objs: &[Value],
    mut resources: Vec<Value>,
) -> Result<Vec<(String, String, &'static str, String)>> {
    let (policies, _) = load_policies(policy_objs);
    let (policies, invalid) = crate::offline::kyverno::split_invalid(policies);
    if let Some((name, why)) = invalid.first() {
        return Err(Error::usage(
            msg(
                format!("採点用のポリシー {name} が正しくありません: {why}"),
                format!("grading policy {name} is invalid: {why}"),
            ),
            msg("採点スクリプトを直します", "fix the grader"),
        ));
    }
    resources.iter_mut().for_each(runner::default_namespace);
    let apply = Apply {
        policies,
        invalid: 0,
        resources: Vec::new(),
        values: Values::default(),
        user: UserInfo::default(),
        opts: Options::default(),
        operation: "CREATE".into(),
        print_mutated: false,
    };
    let mut out = Vec::new();
    for res in &resources {
        let r = apply.evaluate(res);
        for rule in r.results {
            out.push((
                r.resource.clone(),
                format!("{}/{}", rule.policy, rule.rule),
                rule.status,
                rule.message,
            ));
        }
    }
    Ok(out)
}

/// The exit code as `kyverno apply` chooses it (`exit` in
/// cmd/cli/kubectl-kyverno/commands/apply/command.go, v1.19.0): a failure, then an error,
/// is 1; else a warning with a non-zero `--warn-exit-code` is that code; else, with
/// `--warn-no-pass`, no rule passing is the warn code too (0 when none was given, as
/// there). The line kyverno prints for a warn exit comes along.
fn exit_for(s: &ApplySummary, warn_code: u8, warn_no_pass: bool) -> (Exit, Option<String>) {
    if s.fail > 0 || s.error > 0 {
        (Exit::NotPassed, None)
    } else if s.warn > 0 && warn_code != 0 {
        (
            Exit::Chosen(warn_code),
            Some(format!("exit as warnExitCode is {warn_code}")),
        )
    } else if s.pass == 0 && warn_no_pass {
        (
            Exit::Chosen(warn_code),
            Some("exit as no objects satisfied policy".into()),
        )
    } else {
        (Exit::Success, None)
    }
}

/// The status words of the text report, painted once per run.
struct Words {
    pass: String,
    fail: String,
    error: String,
    warn: String,
    skip: String,
}

impl Words {
    fn new(p: &Printer) -> Words {
        Words {
            pass: p.paint(Style::Pass, "✓ PASS"),
            fail: p.paint(Style::Fail, "✗ FAIL"),
            error: p.paint(Style::Error, "✗ ERROR"),
            warn: p.paint(Style::Skip, "! WARN"),
            skip: p.paint(Style::Skip, "- SKIP"),
        }
    }

    fn of(&self, status: &str) -> &str {
        match status {
            "pass" => &self.pass,
            "fail" => &self.fail,
            "error" => &self.error,
            "warn" => &self.warn,
            _ => &self.skip,
        }
    }
}

/// One resource's heading and a line per rule.
fn text_block(p: &Printer, words: &Words, r: &ApplyResource) -> String {
    // Names and messages come from the files: escaped (crate::escape).
    let esc = crate::escape::escape;
    let mut block = p.paint(Style::Heading, &esc(&r.resource));
    block.push('\n');
    if r.results.is_empty() {
        block.push_str("  no rule applies\n");
    }
    for rule in &r.results {
        for part in [
            "  ",
            words.of(rule.status),
            "  ",
            &esc(&rule.policy),
            "/",
            &esc(&rule.rule),
        ] {
            block.push_str(part);
        }
        if rule.status != "pass" && !rule.message.is_empty() {
            block.push_str(": ");
            // A course policy's `Japanese / English` message: the reader's half.
            block.push_str(&esc(crate::error::one_language(p.lang(), &rule.message)));
        }
        block.push('\n');
    }
    block
}

/// The `{schemaVersion, resources, summary}` report written a resource at a time: each
/// item is held back until the next one shows whether it needs a trailing comma.
#[derive(Default)]
struct JsonStream {
    pending: Option<String>,
}

impl JsonStream {
    fn item(&mut self, p: &Printer, r: &ApplyResource) {
        let text =
            serde_json::to_string_pretty(r).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        let indented = indent(&crate::escape::json(&text), "    ");
        if let Some(prev) = self.pending.replace(indented) {
            p.document_part(&format!("{prev},"));
        }
    }

    fn finish(self, p: &Printer, summary: &ApplySummary) {
        if let Some(last) = self.pending {
            p.document_part(&last);
        }
        let s = serde_json::to_string_pretty(summary).unwrap_or_default();
        p.document_part(&format!(
            "  ],\n  \"summary\": {}\n}}",
            indent(&s, "  ").trim_start()
        ));
        p.document_end();
    }
}

fn indent(text: &str, by: &str) -> String {
    text.lines()
        .map(|l| format!("{by}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(pass: usize, fail: usize, warn: usize, error: usize) -> ApplySummary {
        ApplySummary {
            pass,
            fail,
            warn,
            error,
            skip: 0,
        }
    }

    #[test]
    fn warn_exit_code_and_no_pass_follow_kyverno_apply() {
        let code = |s: ApplySummary, w, np| exit_for(&s, w, np).0.code();
        // Failures and errors win over any warn code.
        assert_eq!(code(summary(1, 1, 1, 0), 3, true), 1);
        assert_eq!(code(summary(1, 0, 1, 1), 3, true), 1);
        // A warning alone: the chosen code, or 0 without one.
        assert_eq!(code(summary(1, 0, 1, 0), 3, false), 3);
        assert_eq!(code(summary(1, 0, 1, 0), 0, false), 0);
        // Nothing passed: the warn code with --warn-no-pass (0 when none was chosen).
        assert_eq!(code(summary(0, 0, 0, 0), 3, true), 3);
        assert_eq!(code(summary(0, 0, 0, 0), 0, true), 0);
        assert_eq!(code(summary(0, 0, 0, 0), 3, false), 0);
        assert_eq!(code(summary(2, 0, 0, 0), 3, true), 0);
        assert_eq!(
            exit_for(&summary(0, 0, 0, 0), 4, true).1.as_deref(),
            Some("exit as no objects satisfied policy")
        );
    }
}

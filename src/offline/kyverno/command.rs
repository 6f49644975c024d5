//! `kca policy test|apply`: reads files, runs the offline Kyverno engine, prints results.
//! It must not decide rule outcomes (that is the engine's job).

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::engine::{Options, admit_with};
use super::runner::{self, Row, Verdict};
use super::{Request, RuleStatus, UserInfo, load_policies};
use crate::cli::policy::{ApplyArgs, PolicyCommand, TestArgs};
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::settings::OutputFormat;
use crate::ui::Style;

pub fn run(ctx: &Ctx, cmd: PolicyCommand) -> Result<Exit> {
    match cmd {
        PolicyCommand::Test(args) => test(ctx, args),
        PolicyCommand::Apply(args) => apply(ctx, args),
    }
}

#[derive(Serialize)]
struct TestReport<'a> {
    #[serde(rename = "schemaVersion")]
    schema: u32,
    rows: &'a [Row],
    errors: &'a [String],
    summary: Summary,
}

#[derive(Serialize, Default)]
struct Summary {
    passed: usize,
    failed: usize,
    skipped: usize,
}

fn test(ctx: &Ctx, args: TestArgs) -> Result<Exit> {
    let roots = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths
    };
    for r in &roots {
        if !r.exists() {
            return Err(Error::usage(
                format!("{} does not exist", r.display()),
                "pass a folder holding kyverno-test.yaml files",
            ));
        }
    }
    let files = runner::find_tests_named(&roots, &[args.file_name.as_str()]);
    if files.is_empty() {
        return Err(Error::usage(
            format!("no {} found", args.file_name),
            "pass a folder holding Kyverno test files (or name them with --file-name)",
        ));
    }
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    for f in &files {
        ctx.printer.verbose(&format!("test {}", f.display()));
        match runner::run_test(f) {
            Ok(r) => rows.extend(r.into_iter().filter(|row| {
                args.test_case_selector
                    .as_deref()
                    .is_none_or(|sel| runner::selects(sel, row))
            })),
            Err(e) => errors.push(e),
        }
    }
    let mut summary = Summary::default();
    for r in &rows {
        match r.verdict {
            Verdict::Pass => summary.passed += 1,
            Verdict::Fail => summary.failed += 1,
            Verdict::Skipped => summary.skipped += 1,
        }
    }
    summary.failed += errors.len();
    let exit = if summary.failed > 0 {
        Exit::NotPassed
    } else {
        Exit::Success
    };
    if ctx.settings.output == OutputFormat::Json {
        ctx.printer.json(&TestReport {
            schema: 1,
            rows: &rows,
            errors: &errors,
            summary,
        });
        return Ok(exit);
    }
    if ctx.settings.output == OutputFormat::Junit {
        ctx.printer.out(junit(&rows, &errors).trim_end());
        return Ok(exit);
    }
    let p = &ctx.printer;
    let shown: Vec<&Row> = rows
        .iter()
        .filter(|r| !args.failures_only || r.verdict == Verdict::Fail)
        .collect();
    let rule_of = |r: &Row| {
        format!(
            "{}/{}",
            r.policy,
            if r.rule.is_empty() { "-" } else { &r.rule }
        )
    };
    let res_of = |r: &Row| format!("{} {}", r.kind, r.resource).trim().to_string();
    let w_rule = shown
        .iter()
        .map(|r| rule_of(r).chars().count())
        .max()
        .unwrap_or(0);
    let w_res = shown
        .iter()
        .map(|r| res_of(r).chars().count())
        .max()
        .unwrap_or(0);
    let mut last_file = String::new();
    for r in shown {
        if r.file != last_file {
            p.out(&p.paint(Style::Heading, &r.file));
            last_file = r.file.clone();
        }
        let word = match r.verdict {
            Verdict::Pass => p.paint(Style::Pass, "✓ PASS"),
            Verdict::Fail => p.paint(Style::Fail, "✗ FAIL"),
            Verdict::Skipped => p.paint(Style::Skip, "- SKIP"),
        };
        let mut line = format!(
            "  {word}  {:<w_rule$}  {:<w_res$}  expected {:<5} got {:<5}",
            rule_of(r),
            res_of(r),
            r.expected,
            if r.actual.is_empty() { "-" } else { &r.actual },
        );
        if r.verdict != Verdict::Pass && !r.reason.is_empty() {
            line.push_str(&format!("  {}", r.reason.replace('\n', " ")));
        }
        p.out(line.trim_end());
    }
    for e in &errors {
        p.out(&format!("{}  {e}", p.paint(Style::Error, "✗ ERROR")));
    }
    p.out(&format!(
        "{} passed, {} failed, {} skipped",
        summary.passed, summary.failed, summary.skipped
    ));
    Ok(exit)
}

/// JUnit XML for CI systems: one suite per test file, one case per row.
fn junit(rows: &[Row], errors: &[String]) -> String {
    use crate::junit::{Case, Outcome, Suite, render};
    let mut files: Vec<&str> = rows.iter().map(|r| r.file.as_str()).collect();
    files.dedup();
    let mut suites: Vec<Suite> = files
        .into_iter()
        .map(|f| Suite {
            name: f.to_string(),
            cases: rows
                .iter()
                .filter(|r| r.file == f)
                .map(|r| Case {
                    name: format!("{}/{} {} {}", r.policy, r.rule, r.kind, r.resource),
                    classname: f.to_string(),
                    seconds: 0.0,
                    outcome: match r.verdict {
                        Verdict::Pass => Outcome::Passed,
                        Verdict::Fail => {
                            Outcome::Failed(format!("expected {}, got {}", r.expected, r.actual))
                        }
                        Verdict::Skipped => Outcome::Skipped(r.reason.clone()),
                    },
                    output: (r.verdict == Verdict::Fail && !r.reason.is_empty())
                        .then(|| r.reason.clone()),
                })
                .collect(),
        })
        .collect();
    suites.extend(errors.iter().map(|e| Suite {
        name: "error".into(),
        cases: vec![Case {
            name: "load".into(),
            classname: "kca.policy.test".into(),
            seconds: 0.0,
            outcome: Outcome::Error(e.clone()),
            output: None,
        }],
    }));
    render(&suites)
}

fn read_path(path: &Path) -> Result<Vec<Value>> {
    if path.is_dir() {
        // A folder stands for every manifest file below it, like `kyverno apply`.
        let files = crate::offline::manifest::files(&[path.to_path_buf()])?;
        let mut out = Vec::new();
        for f in files {
            out.extend(read_path(&f)?);
        }
        return Ok(out);
    }
    let text = if path == Path::new("-") {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| Error::usage(format!("cannot read stdin: {e}"), "pipe YAML into kca"))?;
        s
    } else {
        let bytes = crate::input::read_capped(path, crate::input::MAX_MANIFEST_BYTES)
            .map_err(|e| Error::usage(e.to_string(), e.hint()))?;
        String::from_utf8(bytes).map_err(|_| {
            Error::usage(
                format!("{} is not UTF-8 text", path.display()),
                "save it as UTF-8",
            )
        })?
    };
    let docs = crate::yaml::parse_json_stream(&text).map_err(|e| {
        Error::usage(
            format!("{}: {e}", path.display()),
            "fix the YAML and run again",
        )
    })?;
    let mut out = Vec::new();
    for d in docs {
        if d.get("kind").and_then(Value::as_str) == Some("List") {
            out.extend(d["items"].as_array().cloned().unwrap_or_default());
        } else if d.is_object() {
            out.push(d);
        }
    }
    Ok(out)
}

#[derive(Serialize)]
struct ApplyReport {
    #[serde(rename = "schemaVersion")]
    schema: u32,
    resources: Vec<ApplyResource>,
    summary: ApplySummary,
}

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

fn apply(ctx: &Ctx, args: ApplyArgs) -> Result<Exit> {
    let mut objs = Vec::new();
    for p in &args.policies {
        objs.extend(read_path(p)?);
    }
    let (policies, skipped) = load_policies(&objs);
    for s in &skipped {
        ctx.printer.status(&format!("warning: skipped {s}"));
    }
    // As `kyverno apply`: a policy Kyverno refuses is not applied and counts as an error.
    let (policies, invalid) = super::split_invalid(policies);
    for (name, why) in &invalid {
        ctx.printer.status(&format!(
            "warning: policy {name} is invalid and was skipped: {why}"
        ));
    }
    if policies.is_empty() {
        return Err(Error::usage(
            "no ClusterPolicy or Policy found in the policy files",
            "pass files holding kyverno.io/v1 ClusterPolicy or Policy objects",
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
            .unwrap_or_default(),
        None => runner::Values::default(),
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
    let mut summary = ApplySummary {
        error: invalid.len(),
        ..ApplySummary::default()
    };
    let mut report = Vec::new();
    for res in &resources {
        let ns = res
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("");
        let op = args.operation.to_uppercase();
        let (object, old_object) = if op == "DELETE" {
            (Value::Null, res.clone())
        } else {
            (res.clone(), Value::Null)
        };
        let req = Request {
            operation: op,
            object,
            old_object,
            user_info: user.clone(),
            namespace_labels: values.namespaces.get(ns).cloned().unwrap_or_default(),
            values: Value::Object(values.global.clone()),
            subresource: res
                .get("kind")
                .and_then(Value::as_str)
                .and_then(|k| values.subresources.get(k))
                .cloned(),
        };
        let resp = admit_with(&policies, &req, &opts);
        let mut rules = Vec::new();
        for r in &resp.results {
            match r.status {
                RuleStatus::Pass => summary.pass += 1,
                RuleStatus::Fail => summary.fail += 1,
                RuleStatus::Warn => summary.warn += 1,
                RuleStatus::Error => summary.error += 1,
                RuleStatus::Skip => summary.skip += 1,
            }
            rules.push(ApplyRule {
                policy: r.policy.clone(),
                rule: r.rule.clone(),
                status: r.status.as_str(),
                message: r.message.clone(),
            });
        }
        report.push(ApplyResource {
            resource: describe(res),
            results: rules,
            mutated: args.print_mutated.then(|| resp.patched.clone()),
        });
    }
    let exit = if summary.fail > 0 {
        Exit::NotPassed
    } else {
        Exit::Success
    };
    if ctx.settings.output == OutputFormat::Json {
        ctx.printer.json(&ApplyReport {
            schema: 1,
            resources: report,
            summary,
        });
        return Ok(exit);
    }
    let p = &ctx.printer;
    for r in &report {
        p.out(&p.paint(Style::Heading, &r.resource));
        if r.results.is_empty() {
            p.out("  no rule applies");
        }
        for rule in &r.results {
            let word = match rule.status {
                "pass" => p.paint(Style::Pass, "✓ PASS"),
                "fail" => p.paint(Style::Fail, "✗ FAIL"),
                "error" => p.paint(Style::Error, "✗ ERROR"),
                "warn" => p.paint(Style::Skip, "! WARN"),
                _ => p.paint(Style::Skip, "- SKIP"),
            };
            let mut line = format!("  {word}  {}/{}", rule.policy, rule.rule);
            if rule.status != "pass" && !rule.message.is_empty() {
                line.push_str(&format!(": {}", rule.message));
            }
            p.out(&line);
        }
    }
    if args.print_mutated {
        let mutated: Vec<Value> = report.iter().filter_map(|r| r.mutated.clone()).collect();
        p.out(&crate::yaml::to_stream(&mutated));
    }
    p.out(&format!(
        "pass: {}, fail: {}, warn: {}, error: {}, skip: {}",
        summary.pass, summary.fail, summary.warn, summary.error, summary.skip
    ));
    Ok(exit)
}

fn describe(obj: &Value) -> String {
    let s = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or("");
    let ns = s("/metadata/namespace");
    if ns.is_empty() {
        format!("{} {}", s("/kind"), s("/metadata/name"))
    } else {
        format!("{} {}/{}", s("/kind"), ns, s("/metadata/name"))
    }
}

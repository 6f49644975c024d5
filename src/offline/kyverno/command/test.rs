//! `kca policy test`: runs every Kyverno CLI test file under the given folders
//! (`evaluate`), then renders the rows as text, JSON or JUnit.

use std::path::PathBuf;

use serde::Serialize;

use crate::cli::policy::TestArgs;
use crate::ctx::Ctx;
use crate::error::{Error, Result, msg};
use crate::escape::escape;
use crate::exit::Exit;
use crate::offline::kyverno::runner::{self, Row, Verdict};
use crate::settings::OutputFormat;
use crate::ui::{Style, width};

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

/// What a `policy test` run found: every selected row, the files that could not be
/// read, and the counts.
struct TestRun {
    rows: Vec<Row>,
    errors: Vec<String>,
    /// Under each error of the same index: the file's line and a caret, when it is a
    /// YAML syntax error (text output only; JSON and JUnit keep the one-line error).
    excerpts: Vec<Vec<String>>,
    summary: Summary,
}

pub(super) fn run(ctx: &Ctx, args: TestArgs) -> Result<Exit> {
    let run = evaluate(ctx, &args)?;
    let exit = if run.summary.failed > 0 {
        Exit::NotPassed
    } else {
        Exit::Success
    };
    match ctx.settings.output {
        OutputFormat::Json => ctx.printer.json(&TestReport {
            schema: 1,
            rows: &run.rows,
            errors: &run.errors,
            summary: run.summary,
        }),
        OutputFormat::Junit => ctx.printer.document(&junit(&run.rows, &run.errors)),
        _ => render_text(ctx, &args, &run),
    }
    Ok(exit)
}

/// Finds the test files under the given folders and runs them.
fn evaluate(ctx: &Ctx, args: &TestArgs) -> Result<TestRun> {
    let roots = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    };
    for r in &roots {
        if !r.exists() {
            let p = crate::escape::path(r);
            return Err(Error::usage(
                msg(format!("{p} がありません"), format!("{p} does not exist")),
                msg(
                    "kyverno-test.yaml のあるフォルダーを渡します",
                    "pass a folder holding kyverno-test.yaml files",
                ),
            ));
        }
    }
    let files = runner::find_tests_named(&roots, &[args.file_name.as_str()]);
    if files.is_empty() {
        let name = &args.file_name;
        return Err(Error::usage(
            msg(
                format!("{name} が見つかりません"),
                format!("no {name} found"),
            ),
            msg(
                "Kyverno のテストファイルのあるフォルダーを渡します (名前が違うなら --file-name で指定します)",
                "pass a folder holding Kyverno test files (or name them with --file-name)",
            ),
        ));
    }
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    let mut excerpts = Vec::new();
    for f in &files {
        ctx.printer
            .verbose(&format!("test {}", crate::escape::path(f)));
        match runner::run_test(f) {
            Ok(r) => rows.extend(r.into_iter().filter(|row| {
                args.test_case_selector
                    .as_deref()
                    .is_none_or(|sel| runner::selects(sel, row))
            })),
            Err(e) => {
                errors.push(e.to_string());
                excerpts.push(match e {
                    runner::FileError::Yaml { excerpt, .. } => excerpt,
                    _ => Vec::new(),
                });
            }
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
    Ok(TestRun {
        rows,
        errors,
        excerpts,
        summary,
    })
}

/// The rows grouped by file, one aligned line each, then the errors and the closing
/// summary line.
fn render_text(ctx: &Ctx, args: &TestArgs, run: &TestRun) {
    let (rows, errors, summary) = (&run.rows, &run.errors, &run.summary);
    let p = &ctx.printer;
    let shown: Vec<&Row> = rows
        .iter()
        .filter(|r| !args.failures_only || r.verdict == Verdict::Fail)
        .collect();
    // Every field below was read from a test file (names, kinds, messages): escaped,
    // so a name cannot forge a row or drive the terminal.
    let rule_of = |r: &Row| {
        escape(&format!(
            "{}/{}",
            r.policy,
            if r.rule.is_empty() { "-" } else { &r.rule }
        ))
        .into_owned()
    };
    let res_of = |r: &Row| escape(format!("{} {}", r.kind, r.resource).trim()).into_owned();
    let w_rule = shown.iter().map(|r| width(&rule_of(r))).max().unwrap_or(0);
    let w_res = shown.iter().map(|r| width(&res_of(r))).max().unwrap_or(0);
    let pad = |s: String, w: usize| {
        let n = w.saturating_sub(width(&s));
        s + &" ".repeat(n)
    };
    let mut last_file = String::new();
    for r in shown {
        if r.file != last_file {
            p.out(&p.paint(Style::Heading, &escape(&r.file)));
            last_file = r.file.clone();
        }
        let word = match r.verdict {
            Verdict::Pass => p.paint(Style::Pass, "✓ PASS"),
            Verdict::Fail => p.paint(Style::Fail, "✗ FAIL"),
            Verdict::Skipped => p.paint(Style::Skip, "- SKIP"),
        };
        let mut line = format!(
            "  {word}  {}  {}  expected {} got {}",
            pad(rule_of(r), w_rule),
            pad(res_of(r), w_res),
            pad(escape(&r.expected).into_owned(), 5),
            pad(
                escape(if r.actual.is_empty() { "-" } else { &r.actual }).into_owned(),
                5
            ),
        );
        if r.verdict != Verdict::Pass && !r.reason.is_empty() {
            line.push_str(&format!("  {}", escape(&r.reason.replace('\n', " "))));
        }
        p.out(line.trim_end());
    }
    for (e, excerpt) in errors.iter().zip(&run.excerpts) {
        p.out(&format!(
            "{}  {}",
            p.paint(Style::Error, "✗ ERROR"),
            crate::escape::lines(e)
        ));
        for line in excerpt {
            p.out(&format!("   {line}"));
        }
    }
    p.out(&format!(
        "{} passed, {} failed, {} skipped",
        summary.passed, summary.failed, summary.skipped
    ));
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

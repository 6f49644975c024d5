//! Grading reports: the result structs (with a schema version) and their text, JSON and
//! JUnit renderings, and the exit code a run earns. Builds text; `ui` prints it.

use serde::Serialize;

use super::check::{CheckResult, Verdict};
use crate::content::Text;
use crate::content::lab::Lab;
use crate::exit::Exit;
use crate::settings::Lang;
use crate::ui::{Printer, Style};

/// Bumped when a field of the JSON report changes meaning or goes away.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub schema_version: u32,
    pub lab: String,
    pub title: Text,
    /// `offline`, or `live` with the context name.
    pub target: String,
    pub score: u32,
    pub max_score: u32,
    pub counts: Counts,
    pub tasks: Vec<TaskReport>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Counts {
    pub pass: usize,
    pub fail: usize,
    pub error: usize,
    pub skipped: usize,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskReport {
    pub id: String,
    pub title: Text,
    pub score: u32,
    pub max_score: u32,
    pub checks: Vec<CheckResult>,
    /// Hints already shown and how many the task has.
    pub hints_seen: usize,
    pub hints_total: usize,
}

impl Report {
    /// Groups results by task, in the lab's order; `hints_seen` gives each task's count.
    pub fn new(
        lab: &Lab,
        target: String,
        results: Vec<CheckResult>,
        hints_seen: impl Fn(&str) -> usize,
    ) -> Report {
        let mut counts = Counts::default();
        for r in &results {
            match r.verdict {
                Verdict::Pass => counts.pass += 1,
                Verdict::Fail => counts.fail += 1,
                Verdict::Error => counts.error += 1,
                Verdict::Skipped => counts.skipped += 1,
            }
        }
        let tasks: Vec<TaskReport> = lab
            .tasks
            .iter()
            .filter_map(|t| {
                let checks: Vec<CheckResult> =
                    results.iter().filter(|r| r.task == t.id).cloned().collect();
                (!checks.is_empty()).then(|| TaskReport {
                    id: t.id.clone(),
                    title: t.title.clone(),
                    score: checks.iter().map(|c| c.earned).sum(),
                    max_score: checks.iter().map(|c| c.points).sum(),
                    checks,
                    hints_seen: hints_seen(&t.id),
                    hints_total: t.hints.len(),
                })
            })
            .collect();
        Report {
            schema_version: SCHEMA_VERSION,
            lab: lab.id.clone(),
            title: lab.title.clone(),
            target,
            score: tasks.iter().map(|t| t.score).sum(),
            max_score: tasks.iter().map(|t| t.max_score).sum(),
            counts,
            tasks,
        }
    }

    /// 0 when everything passed; 1 when the learner's work fails a check; 3 when the
    /// only problems are the environment's (errors, or checks this target cannot judge).
    pub fn exit(&self) -> Exit {
        if self.counts.fail > 0 {
            Exit::NotPassed
        } else if self.counts.error > 0 || self.counts.skipped > 0 {
            Exit::Environment
        } else {
            Exit::Success
        }
    }

    pub fn passed(&self) -> bool {
        self.exit() == Exit::Success
    }
}

fn style(v: Verdict) -> Style {
    match v {
        Verdict::Pass => Style::Pass,
        Verdict::Fail => Style::Fail,
        Verdict::Error => Style::Error,
        Verdict::Skipped => Style::Skip,
    }
}

/// The verdict as a word in the learner's language, beside its symbol.
fn word(lang: Lang, v: Verdict) -> &'static str {
    match (lang, v) {
        (Lang::Ja, Verdict::Pass) => "合格",
        (Lang::Ja, Verdict::Fail) => "不合格",
        (Lang::Ja, Verdict::Error) => "エラー",
        (Lang::Ja, Verdict::Skipped) => "対象外",
        (Lang::En, v) => v.word(),
    }
}

fn symbol(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "✓",
        Verdict::Fail => "✗",
        Verdict::Error => "!",
        Verdict::Skipped => "-",
    }
}

/// The human report: per task and check, feedback, and the hint to ask for next.
pub fn text(report: &Report, lab: &Lab, lang: Lang, p: &Printer) -> Vec<String> {
    let mut out = Vec::new();
    out.push(p.paint(
        Style::Heading,
        &format!(
            "{} — {} ({})",
            report.lab,
            report.title.get(lang),
            report.target
        ),
    ));
    for t in &report.tasks {
        out.push(String::new());
        out.push(p.paint(
            Style::Heading,
            &format!(
                "{}  {}  [{}/{}]",
                t.id,
                t.title.get(lang),
                t.score,
                t.max_score
            ),
        ));
        for c in &t.checks {
            check_lines(c, lab, lang, p, &mut out);
        }
        next_step_lines(t, lab, lang, p, &mut out);
    }
    out.push(String::new());
    summary_lines(report, lang, p, &mut out);
    out
}

/// One check: its verdict, id, kind, title and points, then its feedback, and the
/// details when it did not pass.
fn check_lines(c: &CheckResult, lab: &Lab, lang: Lang, p: &Printer, out: &mut Vec<String>) {
    let word = crate::ui::pad(
        &format!("{} {}", symbol(c.verdict), word(lang, c.verdict)),
        if lang == Lang::Ja { 8 } else { 7 },
    );
    let title = lab
        .check(&c.id)
        .and_then(|k| k.title.as_ref())
        .map(|t| format!(" — {}", t.get(lang)))
        .unwrap_or_default();
    out.push(format!(
        "  {} {} ({}){}  {}/{}",
        p.paint(style(c.verdict), &word),
        c.id,
        c.kind,
        title,
        c.earned,
        c.points
    ));
    if let Some(f) = &c.feedback {
        out.extend(crate::ui::wrap(
            &crate::escape::lines(f.get(lang).trim_end()),
            p.width(),
            "          ",
        ));
    }
    if c.verdict != Verdict::Pass {
        // Details quote files and the cluster: no control character reaches the terminal.
        let detail = crate::escape::lines(&c.detail);
        for line in crate::ui::wrap(&detail, p.width(), "          ") {
            out.push(p.paint(Style::Dim, &line));
        }
    }
}

/// Under a task with a failing check: its lesson section and the next hint to ask for.
fn next_step_lines(t: &TaskReport, lab: &Lab, lang: Lang, p: &Printer, out: &mut Vec<String>) {
    let failing = t.checks.iter().any(|c| c.verdict == Verdict::Fail);
    if !failing {
        return;
    }
    let content_dir = lab.dir.join("..").join("..");
    if let Some(link) = lab.task(&t.id).and_then(|t| t.lesson.as_ref())
        && let Some(line) = crate::lesson::link_line(&content_dir, link, lang)
    {
        out.push(format!("  {}", p.paint(Style::Hint, &line)));
    }
    if t.hints_seen < t.hints_total {
        let (ja, en) = (
            format!(
                "ヒント: `kca lab hint --task {}` ({}/{})",
                t.id,
                t.hints_seen + 1,
                t.hints_total
            ),
            format!(
                "hint: `kca lab hint --task {}` ({} of {})",
                t.id,
                t.hints_seen + 1,
                t.hints_total
            ),
        );
        let line = if lang == Lang::Ja { ja } else { en };
        out.push(format!("  {}", p.paint(Style::Hint, &line)));
    }
}

/// The score and counts, and what an error means.
fn summary_lines(report: &Report, lang: Lang, p: &Printer, out: &mut Vec<String>) {
    let c = &report.counts;
    out.push(match lang {
        Lang::Ja => format!(
            "得点 {}/{} — 合格 {}、不合格 {}、エラー {}、対象外 {}",
            report.score, report.max_score, c.pass, c.fail, c.error, c.skipped
        ),
        Lang::En => format!(
            "score {}/{} — {} passed, {} failed, {} errors, {} skipped",
            report.score, report.max_score, c.pass, c.fail, c.error, c.skipped
        ),
    });
    if c.error > 0 {
        out.push(p.paint(
            Style::Hint,
            crate::ui::tr(
                lang,
                "ヒント: エラーは環境 (クラスター、タイムアウト) の問題で、あなたの作業のせいではありません。直してからもう一度チェックしてください",
                "hint: errors are the environment's (cluster, timeout), not your work; fix it and check again",
            ),
        ));
    }
}

pub fn junit(reports: &[Report], lang: Lang) -> String {
    use crate::junit::{Case, Outcome, Suite};
    let suites: Vec<Suite> = reports
        .iter()
        .map(|r| Suite {
            name: r.lab.clone(),
            cases: r
                .tasks
                .iter()
                .flat_map(|t| {
                    t.checks.iter().map(move |c| Case {
                        name: c.id.clone(),
                        classname: format!("{}.{}", r.lab, t.id),
                        seconds: c.seconds,
                        // The learner's feedback is the message a CI view shows; the
                        // technical detail goes to the case's output.
                        outcome: match c.verdict {
                            Verdict::Pass => Outcome::Passed,
                            Verdict::Fail => Outcome::Failed(c.feedback.as_ref().map_or_else(
                                || c.detail.clone(),
                                |f| f.get(lang).trim_end().to_string(),
                            )),
                            Verdict::Error => Outcome::Error(c.detail.clone()),
                            Verdict::Skipped => Outcome::Skipped(c.detail.clone()),
                        },
                        output: (!c.detail.is_empty()).then(|| c.detail.clone()),
                    })
                })
                .collect(),
        })
        .collect();
    crate::junit::render(&suites)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::lab::{Check, ExitWant, Spec, Task};
    use crate::lab::check::{CheckResult, Outcome};

    fn lab() -> Lab {
        let check = |id: &str, points: u32| Check {
            id: id.into(),
            title: None,
            points,
            timeout: std::time::Duration::from_secs(1),
            on_fail: Some(Text::plain("try again")),
            on_pass: None,
            spec: Spec::Command {
                run: vec!["true".into()],
                env: Default::default(),
                stdin: None,
                exit: ExitWant::Code(0),
                stdout: vec![],
                stderr: vec![],
                skip_exit: None,
            },
        };
        Lab {
            id: "l".into(),
            title: Text::plain("L"),
            dir: ".".into(),
            workspace_name: "l".into(),
            tasks: vec![
                Task {
                    id: "a".into(),
                    title: Text::plain("A"),
                    instructions: Text::plain("i"),
                    hints: vec![Text::plain("h1"), Text::plain("h2")],
                    checks: vec![check("a1", 2), check("a2", 3)],
                    lesson: None,
                    setup: vec![],
                },
                Task {
                    id: "b".into(),
                    title: Text::plain("B"),
                    instructions: Text::plain("i"),
                    hints: vec![],
                    checks: vec![check("b1", 1)],
                    lesson: None,
                    setup: vec![],
                },
            ],
            ..Default::default()
        }
    }

    fn report(verdicts: [Outcome; 3]) -> Report {
        let lab = lab();
        let results: Vec<CheckResult> = lab
            .checks()
            .zip(verdicts)
            .map(|((t, c), o)| CheckResult::new(t, c, o, 0.0))
            .collect();
        Report::new(&lab, "offline".into(), results, |_| 1)
    }

    #[test]
    fn points_partial_credit_and_exit_codes() {
        let all = report([Outcome::pass(""), Outcome::pass(""), Outcome::pass("")]);
        assert_eq!(
            (all.score, all.max_score, all.exit()),
            (6, 6, Exit::Success)
        );
        let some = report([
            Outcome::pass(""),
            Outcome::fail("no"),
            Outcome::error("down"),
        ]);
        assert_eq!((some.score, some.exit()), (2, Exit::NotPassed));
        assert_eq!(some.tasks[0].score, 2);
        assert_eq!(some.tasks[0].max_score, 5);
        assert_eq!(
            some.tasks[0].checks[1].feedback,
            Some(Text::plain("try again"))
        );
        let env = report([Outcome::pass(""), Outcome::error("down"), Outcome::pass("")]);
        assert_eq!(env.exit(), Exit::Environment);
        let skipped = report([
            Outcome::pass(""),
            Outcome::pass(""),
            Outcome::skipped("n/a"),
        ]);
        assert_eq!(
            skipped.exit(),
            Exit::Environment,
            "a skipped check is not a pass"
        );
    }

    #[test]
    fn json_has_a_schema_version_and_junit_a_case_per_check() {
        let r = report([
            Outcome::pass(""),
            Outcome::fail("no"),
            Outcome::skipped("n/a"),
        ]);
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["schemaVersion"], SCHEMA_VERSION);
        assert_eq!(v["tasks"][0]["checks"][1]["verdict"], "fail");
        assert_eq!(v["counts"]["skipped"], 1);
        let xml = junit(&[r], Lang::En);
        assert_eq!(xml.matches("<testcase").count(), 3, "{xml}");
        assert!(xml.contains("<skipped"), "{xml}");
    }

    #[test]
    fn text_asks_for_the_next_hint_only_for_failing_tasks() {
        let lab = lab();
        let r = report([Outcome::pass(""), Outcome::fail("no"), Outcome::fail("no")]);
        let p = Printer::new(&crate::settings::Settings {
            color: false,
            output: crate::settings::OutputFormat::Text,
            lang: Lang::En,
            verbosity: 0,
            content_dir: ".".into(),
            state_dir: ".".into(),
            home: ".".into(),
        });
        let text = text(&r, &lab, Lang::En, &p).join("\n");
        assert!(
            text.contains("hint: `kca lab hint --task a` (2 of 2)"),
            "{text}"
        );
        assert!(!text.contains("--task b"), "{text}");
        assert!(text.contains("✗ FAIL  a2 (command)  0/3"), "{text}");
        assert!(text.contains("score 2/6"), "{text}");
    }
}

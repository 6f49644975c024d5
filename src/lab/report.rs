//! Grading reports: the result structs (with a schema version) and their text, JSON and
//! JUnit renderings, and the exit code a run earns. Builds text; `ui` prints it.

use serde::Serialize;

use super::check::{CheckResult, Verdict};
use super::detail::{Detail, Say};
use crate::content::Text;
use crate::content::lab::Lab;
use crate::exit::Exit;
use crate::settings::Lang;
use crate::ui::{Printer, Style, tr, tr_s};

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
                    // A count past the task's hints (an edited record, hints removed
                    // from the lab since) is all of them.
                    hints_seen: hints_seen(&t.id).min(t.hints.len()),
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

    /// 0 when everything passed; 1 when the learner's work fails a check (or a check
    /// cannot be judged because of a workspace file problem); 3 when the only problems are
    /// the environment's (errors, or checks this target cannot judge).
    pub fn exit(&self) -> Exit {
        if self.counts.fail > 0 || self.checks().any(|c| c.detail.is_blocked()) {
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

    fn checks(&self) -> impl Iterator<Item = &CheckResult> {
        self.tasks.iter().flat_map(|t| t.checks.iter())
    }

    /// The workspace file problems the checks met (`file:line:col: message`), each once.
    pub fn file_problems(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in self.checks().flat_map(|c| c.detail.file_problems()) {
            if !out.contains(&p) {
                out.push(p);
            }
        }
        out
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

/// How much of a report the text shows, and what the run changed around it.
#[derive(Debug, Default)]
pub struct View<'a> {
    /// Every task's details (`--all`, `-v`), not only the focused task's.
    pub all: bool,
    /// Incidents in effect (see `lab::incident`); the latest is the focus.
    pub incidents: Vec<super::incident::Incident<'a>>,
    /// The first task not passed over the whole lab (after this run), for "next".
    pub next: Option<&'a crate::content::lab::Task>,
    /// The terminal's height when the report goes to one: the focused task's details
    /// are fitted to it.
    pub rows: Option<usize>,
}

/// Lines of a check's technical detail shown in the focused view (all with `--all`).
const FOCUSED_DETAIL_LINES: usize = 2;

/// The task a focused report details: the latest incident in effect, else the first
/// task of the report with a check that failed or met an error.
pub fn focus<'r>(report: &'r Report, view: &View<'_>) -> Option<&'r TaskReport> {
    if let Some(i) = view.incidents.last()
        && let Some(t) = report.tasks.iter().find(|t| t.id == i.task.id)
    {
        return Some(t);
    }
    // A check this target cannot judge (`skipped`) is not the learner's to fix here.
    report.tasks.iter().find(|t| {
        t.checks
            .iter()
            .any(|c| matches!(c.verdict, Verdict::Fail | Verdict::Error))
    })
}

/// A task's mark over its checks: ✓ all passed, ✗ one failed, ! an error, - only
/// checks this target cannot judge.
fn task_mark(t: &TaskReport) -> (Verdict, &'static str) {
    let any = |v| t.checks.iter().any(|c| c.verdict == v);
    let v = if any(Verdict::Fail) {
        Verdict::Fail
    } else if any(Verdict::Error) {
        Verdict::Error
    } else if any(Verdict::Skipped) {
        Verdict::Skipped
    } else {
        Verdict::Pass
    };
    (v, symbol(v))
}

/// The human report: the score, one line per task, the details of the focused task (the
/// incident in effect, else the first unfinished one; every task's with `view.all`), and
/// what to do next.
pub fn text(report: &Report, lab: &Lab, lang: Lang, p: &Printer, view: &View<'_>) -> Vec<String> {
    let mut out = Vec::new();
    out.push(p.paint(
        Style::Heading,
        &crate::ui::truncate(
            &format!(
                "{} — {} ({})",
                report.lab,
                report.title.get(lang),
                report.target
            ),
            p.width(),
        ),
    ));
    for inc in &view.incidents {
        for line in super::incident::notice(lang, inc) {
            for l in crate::ui::wrap(&line, p.width(), "") {
                out.push(p.paint(Style::Skip, &l));
            }
        }
    }
    file_problem_lines(report, lang, p, &mut out);
    let focused = focus(report, view);
    let affected: Vec<&str> = view
        .incidents
        .iter()
        .flat_map(|i| i.affected.iter().map(|(_, id)| id.as_str()))
        .collect();
    for t in &report.tasks {
        let (v, mark) = task_mark(t);
        let n = super::incident::number(lab, &t.id);
        let hit = t.checks.iter().any(|c| affected.contains(&c.id.as_str()));
        let note = if hit {
            crate::ui::tr(lang, "  (事故の影響)", "  (incident)")
        } else {
            ""
        };
        let score = format!("  {}/{}{note}", t.score, t.max_score);
        let head = format!("{} {n}. {} — ", p.paint(style(v), mark), t.id);
        let room = p
            .width()
            .saturating_sub(crate::ui::width(&head) + crate::ui::width(&score) + 2);
        out.push(format!(
            "  {head}{}{score}",
            crate::ui::truncate(t.title.get(lang), room.max(8))
        ));
    }
    let mut tail = vec![String::new()];
    summary_lines(report, lang, p, &mut tail);
    next_lines(report, lab, lang, p, view, focused, &mut tail);
    let shown: Vec<&TaskReport> = report
        .tasks
        .iter()
        .filter(|t| view.all || focused.is_some_and(|f| f.id == t.id) || report.tasks.len() == 1)
        .collect();
    // On a terminal, the focused task's details fill what the screen has left (the
    // command line, the standing and the prompt after the report included).
    let budget = view
        .rows
        .filter(|_| !view.all)
        .map(|rows| rows.saturating_sub(out.len() + tail.len() + 2 * shown.len() + AFTER_REPORT));
    for t in shown {
        out.push(String::new());
        let n = super::incident::number(lab, &t.id);
        let head = super::task::heading(lang, lab, n, &t.title, &t.id);
        out.push(p.paint(
            Style::Heading,
            &crate::ui::truncate(&format!("{head}  [{}/{}]", t.score, t.max_score), p.width()),
        ));
        out.extend(task_lines(t, lab, lang, p, view.all, budget));
    }
    out.extend(tail);
    out
}

/// Rows a terminal needs besides the report: the command line, the lab's standing (up
/// to two lines), a line about quiz questions, the prompt.
const AFTER_REPORT: usize = 5;

/// One task's checks, lesson and next hint. Details are capped per check unless `all`,
/// and within `budget` lines in all: every check keeps its verdict line, and feedback and
/// details fill the rest in order.
pub fn task_lines(
    t: &TaskReport,
    lab: &Lab,
    lang: Lang,
    p: &Printer,
    all: bool,
    budget: Option<usize>,
) -> Vec<String> {
    let cap = (!all).then_some(FOCUSED_DETAIL_LINES);
    let say = Say {
        lang,
        // The expected shape once the learner asked for a hint of the task (or `-v`).
        reveal: p.verbosity() > 0 || t.hints_seen > 0,
        verbose: p.verbosity() > 0,
    };
    let parts: Vec<(String, Vec<String>, Vec<String>)> = t
        .checks
        .iter()
        .map(|c| check_parts(c, lab, say, p, cap))
        .collect();
    let mut steps = Vec::new();
    next_step_lines(t, lab, lang, p, &mut steps);
    // Feedback (the lab's words) before details (the technical part), check by check.
    let mut room = budget.map_or(usize::MAX, |b| b.saturating_sub(parts.len() + steps.len()));
    let mut give = |n: usize| {
        let k = n.min(room);
        room -= k;
        k
    };
    let feedback: Vec<usize> = parts.iter().map(|(_, f, _)| give(f.len())).collect();
    let detail: Vec<usize> = parts.iter().map(|(_, _, d)| give(d.len())).collect();
    let mut out = Vec::new();
    for (i, (head, f, d)) in parts.into_iter().enumerate() {
        out.push(head);
        out.extend(f.into_iter().take(feedback[i]));
        let cut = detail[i] < d.len();
        out.extend(d.into_iter().take(detail[i]));
        if cut
            && detail[i] > 0
            && let Some(last) = out.last_mut()
        {
            *last = crate::ui::truncate(&format!("{last} …"), p.width());
        }
    }
    out.extend(steps);
    out
}

/// The score line (`得点 3/33 — 合格 3、…`).
pub fn score_line(report: &Report, lang: Lang) -> String {
    let c = &report.counts;
    match lang {
        Lang::Ja => format!(
            "得点 {}/{} — 合格 {}、不合格 {}、エラー {}、対象外 {}",
            report.score, report.max_score, c.pass, c.fail, c.error, c.skipped
        ),
        Lang::En => format!(
            "score {}/{} — {} passed, {} failed, {} errors, {} skipped",
            report.score, report.max_score, c.pass, c.fail, c.error, c.skipped
        ),
    }
}

/// What to do next: the task after a passed one (with the command that shows it), and
/// where the other details are.
fn next_lines(
    report: &Report,
    lab: &Lab,
    lang: Lang,
    p: &Printer,
    view: &View<'_>,
    focused: Option<&TaskReport>,
    out: &mut Vec<String>,
) {
    let hidden = !view.all && report.tasks.len() > 1;
    let next = view.next.map(|t| (super::incident::number(lab, &t.id), t));
    let line = match (focused, next) {
        // Everything this run graded passed: the lab's next task, if any.
        (None, Some((n, t))) => Some(tr_s(
            lang,
            format!(
                "次: タスク {n} — {} (`kca lab task {n}` で説明、`kca lab check` で採点)",
                t.title.get(lang)
            ),
            format!(
                "next: task {n} — {} (`kca lab task {n}` shows it, `kca lab check` grades it)",
                t.title.get(lang)
            ),
        )),
        (Some(f), _) => {
            let n = super::incident::number(lab, &f.id);
            let passed_before = report
                .tasks
                .iter()
                .take_while(|t| t.id != f.id)
                .any(|t| task_mark(t).0 == Verdict::Pass);
            let all = if hidden {
                tr(
                    lang,
                    "、全タスクの詳細は `kca lab check --all`",
                    "; every task's details: `kca lab check --all`",
                )
            } else {
                ""
            };
            Some(if passed_before {
                tr_s(
                    lang,
                    format!("次: タスク {n} — 説明は `kca lab task {n}`{all}"),
                    format!("next: task {n} — `kca lab task {n}` shows it{all}"),
                )
            } else {
                tr_s(
                    lang,
                    format!("説明は `kca lab task {n}`{all}"),
                    format!("instructions: `kca lab task {n}`{all}"),
                )
            })
        }
        (None, None) => None,
    };
    if let Some(l) = line {
        for w in crate::ui::wrap(&l, p.width(), "") {
            out.push(p.paint(Style::Hint, &w));
        }
    }
}

/// One check: its verdict line (verdict, id, kind, title and points), and the lines
/// under it: its feedback, and the details when it did not pass.
fn check_parts(
    c: &CheckResult,
    lab: &Lab,
    say: Say,
    p: &Printer,
    cap: Option<usize>,
) -> (String, Vec<String>, Vec<String>) {
    let lang = say.lang;
    let word = crate::ui::pad(
        &format!("{} {}", symbol(c.verdict), word(lang, c.verdict)),
        if lang == Lang::Ja { 8 } else { 7 },
    );
    let title = lab
        .check(&c.id)
        .and_then(|k| k.title.as_ref())
        .map(|t| format!(" — {}", t.get(lang)))
        .unwrap_or_default();
    // One row: the title is cut to the width, the points always shown.
    let points = format!("  {}/{}", c.earned, c.points);
    let lead = format!("  {word} {} ({}){title}", c.id, c.kind);
    let room = p.width().saturating_sub(crate::ui::width(&points));
    let lead = crate::ui::truncate(&lead, room.max(20));
    let head = match lead.strip_prefix(&format!("  {word}")) {
        Some(rest) => format!("  {}{rest}{points}", p.paint(style(c.verdict), &word)),
        None => format!("{lead}{points}"),
    };
    let mut feedback = Vec::new();
    if let Some(f) = &c.feedback {
        feedback.extend(crate::ui::wrap(
            &crate::escape::lines(f.get(lang).trim_end()),
            p.width(),
            "          ",
        ));
    }
    let mut out = Vec::new();
    if c.verdict != Verdict::Pass {
        // Details quote files and the cluster: no control character reaches the terminal.
        let mut detail = crate::escape::lines(&c.detail.say(say));
        if c.detail.hides(say) {
            detail.push_str(tr(
                lang,
                " (期待する形は `kca lab hint` の後か `-v` で表示します)",
                " (the expected form: after `kca lab hint`, or with `-v`)",
            ));
        }
        let mut lines: Vec<String> = detail
            .lines()
            .flat_map(|l| crate::ui::wrap(l, p.width(), "          "))
            .collect();
        // Where a file is or why it does not parse is never cut: it is what to do.
        if let Some(cap) = cap.filter(|&n| lines.len() > n && !c.detail.is_location()) {
            lines.truncate(cap);
            if let Some(last) = lines.last_mut() {
                *last = crate::ui::truncate(&format!("{last} …"), p.width());
            }
        }
        for line in lines {
            out.push(p.paint(Style::Dim, &line));
        }
    }
    (head, feedback, out)
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

/// The workspace files a check could not read, each problem once (`file:line:col`),
/// above the tasks: the checks that depend on them point here.
fn file_problem_lines(report: &Report, lang: Lang, p: &Printer, out: &mut Vec<String>) {
    let problems = report.file_problems();
    if problems.is_empty() {
        return;
    }
    out.push(p.paint(
        Style::Fail,
        tr(
            lang,
            "ファイルの問題 (直すまで、このファイルに関わるチェックは判定できません):",
            "file problems (checks that depend on these files cannot be judged until fixed):",
        ),
    ));
    for prob in problems {
        // The first line says where and what (wrapped); the excerpt under it (the line,
        // a caret) keeps its columns, as a compiler prints it.
        let mut lines = prob.split('\n');
        let head = lines.next().unwrap_or_default();
        out.extend(crate::ui::wrap(
            &crate::escape::escape(head),
            p.width(),
            "  ",
        ));
        out.extend(lines.map(|l| format!("  {}", crate::escape::escape(l))));
    }
}

/// The score and counts, and what an error means.
fn summary_lines(report: &Report, lang: Lang, p: &Printer, out: &mut Vec<String>) {
    out.push(score_line(report, lang));
    let environment = report
        .checks()
        .any(|c| c.verdict == Verdict::Error && !c.detail.is_blocked());
    if environment {
        out.push(p.paint(
            Style::Hint,
            tr(
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
                                || c.detail.to_string(),
                                |f| f.get(lang).trim_end().to_string(),
                            )),
                            Verdict::Error => Outcome::Error(c.detail.to_string()),
                            Verdict::Skipped => Outcome::Skipped(c.detail.to_string()),
                        },
                        output: (c.detail != Detail::None).then(|| c.detail.to_string()),
                    })
                })
                .collect(),
        })
        .collect();
    crate::junit::render(&suites)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::content::lab::{Check, ExitWant, Spec, Task};
    use crate::lab::check::{CheckResult, Outcome};

    /// Two tasks: `a` (checks a1 2 points, a2 3 points, two hints), `b` (b1, 1 point).
    pub(crate) fn lab() -> Lab {
        let check = |id: &str, points: u32| Check {
            id: id.into(),
            title: None,
            points,
            timeout: std::time::Duration::from_secs(1),
            on_fail: Some(Text::plain("try again")),
            on_pass: None,
            guard: false,
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
        let all = report([
            Outcome::pass(Detail::None),
            Outcome::pass(Detail::None),
            Outcome::pass(Detail::None),
        ]);
        assert_eq!(
            (all.score, all.max_score, all.exit()),
            (6, 6, Exit::Success)
        );
        let some = report([
            Outcome::pass(Detail::None),
            Outcome::fail(Detail::NoRuleMatched),
            Outcome::error(Detail::Cluster {
                error: "down".into(),
            }),
        ]);
        assert_eq!((some.score, some.exit()), (2, Exit::NotPassed));
        assert_eq!(some.tasks[0].score, 2);
        assert_eq!(some.tasks[0].max_score, 5);
        assert_eq!(
            some.tasks[0].checks[1].feedback,
            Some(Text::plain("try again"))
        );
        let env = report([
            Outcome::pass(Detail::None),
            Outcome::error(Detail::Cluster {
                error: "down".into(),
            }),
            Outcome::pass(Detail::None),
        ]);
        assert_eq!(env.exit(), Exit::Environment);
        let skipped = report([
            Outcome::pass(Detail::None),
            Outcome::pass(Detail::None),
            Outcome::skipped(Detail::OfflineCannot {
                reason: "n/a".into(),
            }),
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
            Outcome::pass(Detail::None),
            Outcome::fail(Detail::NoRuleMatched),
            Outcome::skipped(Detail::OfflineCannot {
                reason: "n/a".into(),
            }),
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
        let r = report([
            Outcome::pass(Detail::None),
            Outcome::fail(Detail::NoRuleMatched),
            Outcome::fail(Detail::NoRuleMatched),
        ]);
        let p = Printer::new(&crate::settings::Settings {
            color: false,
            output: crate::settings::OutputFormat::Text,
            lang: Lang::En,
            verbosity: 0,
            content_dir: ".".into(),
            state_dir: ".".into(),
            home: ".".into(),
        });
        let text = text(&r, &lab, Lang::En, &p, &View::default()).join("\n");
        assert!(
            text.contains("hint: `kca lab hint --task a` (2 of 2)"),
            "{text}"
        );
        assert!(!text.contains("--task b"), "{text}");
        assert!(text.contains("✗ FAIL  a2 (command)  0/3"), "{text}");
        assert!(text.contains("score 2/6"), "{text}");
    }
}

//! `kca quiz …`: list, run, review, grade, key. Loads content, drives sessions, keeps
//! progress, and renders results (text, json, junit).

use serde::Serialize;
use serde_json::{Value, json};

use super::answers::{graded, read_answers};
use super::attempt::Saver;
use super::grade;
use super::progress::{self, Attempt, Done, Progress};
use super::session::{Asked, Asker};
use super::{Rng, seed_of};
use crate::cli::quiz::{GradeArgs, KeyArgs, QuizCommand, ReviewArgs, RunArgs};
use crate::content::decode::closest;
use crate::content::quiz::Quiz;
use crate::content::{self, Text};
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::junit;
use crate::settings::OutputFormat;
use crate::state::Store;
use crate::ui::{Style, tr};
use crate::yaml;

/// Version of the JSON documents these commands print.
const SCHEMA_VERSION: u32 = 1;

pub fn run(ctx: &Ctx, cmd: QuizCommand) -> Result<Exit> {
    let store = Store::new(&ctx.settings.state_dir);
    let result = match cmd {
        QuizCommand::List => list(ctx, &store),
        QuizCommand::Run(args) => run_quiz(ctx, &store, &args),
        QuizCommand::Review(args) => review(ctx, &store, &args),
        QuizCommand::Grade(args) => grade_file(ctx, &store, &args),
        QuizCommand::Key(args) => key(ctx, &args),
    };
    for w in store.take_warnings() {
        ctx.printer.warn(&w);
    }
    result
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn rfc3339(t: i64) -> String {
    chrono::DateTime::from_timestamp(t, 0)
        .map(|d| d.to_rfc3339())
        .unwrap_or_default()
}

fn percent(score: f64, max: f64) -> f64 {
    if max > 0.0 {
        (score * 1000.0 / max).round() / 10.0
    } else {
        100.0
    }
}

fn loaded(ctx: &Ctx) -> Vec<Quiz> {
    let (quizzes, problems) = content::load_quizzes(&ctx.settings.content_dir);
    if !problems.is_empty() {
        let mut files: Vec<_> = problems
            .iter()
            .map(|d| d.file.display().to_string())
            .collect();
        files.dedup();
        let (n, files) = (files.len(), files.join(", "));
        ctx.printer.warn(&crate::ui::tr_s(
            ctx.settings.lang,
            format!(
                "問題のあるクイズファイル {n} 個を除きました: {files} (`kca validate` で確かめます)"
            ),
            format!(
                "{n} quiz file(s) have problems and were left out: {files} (run `kca validate`)"
            ),
        ));
    }
    quizzes
}

/// Finds a quiz by id; a broken quiz file is a content error, an unknown id a usage error.
fn find(ctx: &Ctx, id: &str) -> Result<Quiz> {
    let dir = ctx.settings.content_dir.join("quizzes");
    for file in content::discover(&dir) {
        let stem = file
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        if stem == id {
            return match content::load_file(&file) {
                Ok(content::Document::Quiz(q)) => Ok(*q),
                Ok(_) => Err(Error::usage(
                    crate::error::msg(
                        format!("{} はクイズではありません", file.display()),
                        format!("{} is not a quiz", file.display()),
                    ),
                    crate::error::msg(
                        "`kca quiz list` にあるクイズの ID を指定します",
                        "name a quiz id from `kca quiz list`",
                    ),
                )),
                Err(diags) => Err(Error::Content(diags)),
            };
        }
    }
    let quizzes = loaded(ctx);
    if let Some(q) = quizzes.iter().find(|q| q.id == id) {
        return Ok(q.clone());
    }
    let ids: Vec<&str> = quizzes.iter().map(|q| q.id.as_str()).collect();
    let lang = ctx.settings.lang;
    let hint = match closest(id, ids.iter().copied()) {
        Some(near) => crate::ui::tr_s(
            lang,
            format!("`{near}` のことですか?(一覧は `kca quiz list`)"),
            format!("did you mean `{near}`? (`kca quiz list` shows them all)"),
        ),
        None if ids.is_empty() => format!(
            "no quizzes found under {}; set --content-dir",
            dir.display()
        ),
        None => crate::ui::tr_s(
            lang,
            format!("あるクイズ: {}", ids.join(", ")),
            format!("available: {}", ids.join(", ")),
        ),
    };
    Err(Error::usage(
        crate::ui::tr_s(
            lang,
            format!("クイズ `{id}` はありません"),
            format!("no quiz `{id}`"),
        ),
        hint,
    ))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ListEntry {
    id: String,
    title: String,
    module: Option<i64>,
    questions: usize,
    max_points: u32,
    pass_mark: u32,
    best: Option<Value>,
    last_attempt: Option<Value>,
}

fn list(ctx: &Ctx, store: &Store) -> Result<Exit> {
    let lang = ctx.settings.lang;
    let quizzes = loaded(ctx);
    let progress: Progress = progress::read(store)?;
    let entries: Vec<ListEntry> = quizzes
        .iter()
        .map(|q| {
            let rec = progress.quizzes.get(&q.id);
            let best = rec.and_then(|r| r.best()).map(|a| json!({"score": a.score, "max": a.max, "percent": percent(a.score, a.max)}));
            let last = rec.and_then(|r| r.last()).map(|a| json!({"at": rfc3339(a.at), "score": a.score, "max": a.max, "passed": a.passed, "complete": a.complete, "answered": a.answered}));
            ListEntry {
                id: q.id.clone(),
                title: q.title.get(lang).to_string(),
                module: q.module,
                questions: q.questions.len(),
                max_points: q.max_points(),
                pass_mark: q.pass_mark,
                best,
                last_attempt: last,
            }
        })
        .collect();
    if ctx.settings.output == OutputFormat::Json {
        ctx.printer
            .json(&crate::envelope::Envelope::new(json!({"quizzes": entries})));
        return Ok(Exit::Success);
    }
    if entries.is_empty() {
        ctx.printer
            .status(tr(lang, "クイズがありません。", "No quizzes found."));
        return Ok(Exit::Success);
    }
    let p = &ctx.printer;
    let now = chrono::Utc::now();
    let mut rows = vec![vec![
        "ID".to_string(),
        tr(lang, "問", "QS").to_string(),
        tr(lang, "最高", "BEST").to_string(),
        tr(lang, "前回", "LAST").to_string(),
        tr(lang, "タイトル", "TITLE").to_string(),
    ]];
    for e in &entries {
        let best = e
            .best
            .as_ref()
            .map_or("-".to_string(), |b| format!("{}%", b["percent"]));
        let last = e.last_attempt.as_ref().map_or("-".to_string(), |a| {
            let when = crate::ui::relative_rfc3339(lang, a["at"].as_str().unwrap_or(""), now);
            let word = if a["complete"] == false {
                tr(lang, "途中", "partial")
            } else if a["passed"] == true {
                tr(lang, "合格", "PASS")
            } else {
                tr(lang, "不合格", "FAIL")
            };
            format!(
                "{when} {word} {}/{}",
                trim_num(a["score"].as_f64().unwrap_or(0.0)),
                a["max"]
            )
        });
        rows.push(vec![
            e.id.clone(),
            e.questions.to_string(),
            best,
            last,
            e.title.clone(),
        ]);
    }
    for (i, line) in crate::ui::table(&rows, p.width()).iter().enumerate() {
        p.out(&if i == 0 {
            p.paint(Style::Heading, line)
        } else {
            line.clone()
        });
    }
    Ok(Exit::Success)
}

/// One question's outcome, for reports.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct QuestionResult {
    pub(super) id: String,
    pub(super) correct: bool,
    pub(super) points: f64,
    pub(super) max: u32,
    pub(super) answered: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) answer: Option<Value>,
    /// The feedback the learner was shown for this answer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) feedback: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) concepts: Vec<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct QuizReport {
    schema_version: u32,
    quiz: String,
    score: f64,
    max: u32,
    percent: f64,
    pass_mark: u32,
    passed: bool,
    completed: bool,
    questions: Vec<QuestionResult>,
}

impl QuizReport {
    fn new(quiz: &Quiz, questions: Vec<QuestionResult>, completed: bool) -> Self {
        let score: f64 = questions.iter().map(|q| q.points).sum();
        let max = quiz.max_points();
        let pct = percent(score, f64::from(max));
        QuizReport {
            schema_version: SCHEMA_VERSION,
            quiz: quiz.id.clone(),
            score,
            max,
            percent: pct,
            pass_mark: quiz.pass_mark,
            passed: completed && pct + 1e-9 >= f64::from(quiz.pass_mark),
            completed,
            questions,
        }
    }

    fn exit(&self) -> Exit {
        if self.passed {
            Exit::Success
        } else {
            Exit::NotPassed
        }
    }
}

/// Prints a report in the chosen format; text mode prints the closing summary.
fn print_report(ctx: &Ctx, quiz: &Quiz, report: &QuizReport) {
    let lang = ctx.settings.lang;
    let p = &ctx.printer;
    match ctx.settings.output {
        OutputFormat::Json => p.json(report),
        OutputFormat::Junit => {
            let cases = report
                .questions
                .iter()
                .map(|r| junit::Case {
                    name: r.id.clone(),
                    classname: format!("kca.quiz.{}", quiz.id),
                    seconds: 0.0,
                    // The feedback the learner saw is the failure message; the
                    // explanation follows in the case's output.
                    outcome: match (r.answered, r.correct) {
                        (_, true) => junit::Outcome::Passed,
                        (false, _) => {
                            junit::Outcome::Failed(tr(lang, "未回答", "not answered").to_string())
                        }
                        (true, false) if !r.feedback.is_empty() => {
                            junit::Outcome::Failed(r.feedback.join(" "))
                        }
                        (true, false) => junit::Outcome::Failed(format!(
                            "{} ({}/{})",
                            tr(lang, "不正解", "incorrect"),
                            trim_num(r.points),
                            r.max
                        )),
                    },
                    output: (!r.correct)
                        .then(|| {
                            quiz.question(&r.id)
                                .map(|q| q.explanation.get(lang).trim_end().to_string())
                        })
                        .flatten(),
                })
                .collect();
            p.document(&junit::render(&[junit::Suite {
                name: format!("quiz {}", quiz.id),
                cases,
            }]));
        }
        OutputFormat::Text => {
            let right = report.questions.iter().filter(|q| q.correct).count();
            // A stopped attempt is kept for `quiz run` to resume: not a verdict yet.
            let verdict = if report.passed {
                p.paint(Style::Pass, tr(lang, "✓ 合格", "✓ PASSED"))
            } else if !report.completed {
                p.paint(Style::Skip, tr(lang, "- 中断", "- STOPPED"))
            } else {
                p.paint(Style::Fail, tr(lang, "✗ 不合格", "✗ NOT PASSED"))
            };
            p.out("");
            p.out_wrapped(
                &format!(
                    "{} {}: {}/{} ({}%) — {right}/{} {} — {} {}%",
                    verdict,
                    quiz.id,
                    trim_num(report.score),
                    report.max,
                    report.percent,
                    report.questions.len(),
                    tr(lang, "問正解", "correct"),
                    tr(lang, "合格点", "pass mark"),
                    report.pass_mark
                ),
                "",
            );
            if !report.completed {
                p.out_wrapped(
                    &crate::ui::tr_s(
                        lang,
                        format!(
                            "途中で終了しました。`kca quiz run {}` で続きから再開できます。",
                            quiz.id
                        ),
                        format!(
                            "Stopped early: `kca quiz run {}` resumes where you left off.",
                            quiz.id
                        ),
                    ),
                    "",
                );
            }
            // Questions left unanswered by a stop are not missed: they come on resume.
            let missed = report
                .questions
                .iter()
                .filter(|q| !q.correct && (q.answered || report.completed))
                .count();
            if missed > 0 {
                p.out_painted(
                    Style::Hint,
                    &format!(
                        "{} `kca quiz review {}`",
                        tr(lang, "間違えた問題の復習:", "Review what you missed:"),
                        quiz.id
                    ),
                );
            }
        }
    }
}

fn trim_num(n: f64) -> String {
    if n.fract() == 0.0 {
        format!("{n:.0}")
    } else {
        format!("{n:.1}")
    }
}

fn run_quiz(ctx: &Ctx, store: &Store, args: &RunArgs) -> Result<Exit> {
    let quiz = find(ctx, &args.quiz)?;
    let lang = ctx.settings.lang;
    let started = now();
    let mut rng = args
        .shuffle
        .then(|| Rng::new(args.seed.unwrap_or_else(|| seed_of(&started.to_string()))));
    let to_stderr = ctx.settings.output != OutputFormat::Text;
    let stdin = std::io::stdin();
    let mut asker = Asker::new(stdin.lock(), &ctx.printer, lang, to_stderr)
        .with_lessons(&ctx.settings.content_dir);
    // A title wraps like body text: a terminal cutting it would split a word.
    for line in crate::ui::wrap(quiz.title.get(lang), ctx.printer.width(), "") {
        if to_stderr {
            ctx.printer.say_err(&line);
        } else {
            ctx.printer.out(&ctx.printer.paint(Style::Heading, &line));
        }
    }
    let mut saver = match resume_or_restart(store, &quiz, args, &mut asker)? {
        Some(saver) => saver,
        None => {
            let mut order: Vec<usize> = (0..quiz.questions.len()).collect();
            if let Some(rng) = rng.as_mut() {
                rng.shuffle(&mut order);
            }
            let ids = order
                .iter()
                .map(|&i| quiz.questions[i].id.clone())
                .collect();
            Saver::new(store, &quiz.id, quiz.max_points(), started, ids)
        }
    };
    saver.on_interrupt(&ctx.printer, lang);
    let mut results: Vec<QuestionResult> = saver
        .done()
        .iter()
        .filter_map(|d| {
            let q = quiz.question(&d.id)?;
            Some(QuestionResult {
                points: d.points,
                correct: d.correct,
                answered: d.answered,
                ..unanswered(q)
            })
        })
        .collect();
    let todo: Vec<&crate::content::quiz::Question> = saver
        .order()
        .iter()
        .filter(|id| !saver.done().iter().any(|d| &d.id == *id))
        .filter_map(|id| quiz.question(id))
        .collect();
    let mut stopped = None;
    let total = quiz.questions.len();
    for (i, q) in todo.iter().enumerate() {
        let heading = format!("[{}/{total}]", results.len() + 1);
        let r = match asker.ask(q, &heading, rng.as_mut()) {
            Asked::Answered { answer, graded, .. } => QuestionResult {
                id: q.id.clone(),
                correct: graded.correct,
                points: graded.points,
                max: q.points,
                answered: true,
                answer: Some(answer.to_json()),
                feedback: graded
                    .feedback
                    .iter()
                    .map(|f| f.get(lang).to_string())
                    .collect(),
                concepts: q.concepts.clone(),
            },
            Asked::Skipped => unanswered(q),
            Asked::Quit => {
                stopped = Some(i);
                break;
            }
        };
        saver.question(Done {
            id: r.id.clone(),
            points: r.points,
            correct: r.correct,
            answered: r.answered,
        });
        results.push(r);
    }
    // Questions never reached count as unanswered so the score is out of the whole quiz.
    let completed = stopped.is_none();
    for q in todo.iter().skip(stopped.unwrap_or(todo.len())) {
        results.push(unanswered(q));
    }
    let report = QuizReport::new(&quiz, results, completed);
    saver.finish(report.passed, completed);
    print_report(ctx, &quiz, &report);
    if let Some(e) = saver.failure() {
        ctx.printer.warn(&ctx.not_saved(e));
    }
    Ok(report.exit())
}

/// A partial attempt of `quiz` to go on with: resumed by default (a terminal is asked
/// first), set aside with `--restart` or when the learner says no. `None` starts afresh.
fn resume_or_restart<'s, R: std::io::BufRead>(
    store: &'s Store,
    quiz: &Quiz,
    args: &RunArgs,
    asker: &mut Asker<'_, R>,
) -> Result<Option<Saver<'s>>> {
    let lang = asker.lang();
    let progress = progress::read(store)?;
    let Some(attempt) = progress
        .quizzes
        .get(&quiz.id)
        .and_then(|r| r.resumable(crate::state::process_runs))
    else {
        return Ok(None);
    };
    let resume = attempt.resume.clone().unwrap_or_default();
    // Only questions the quiz still has; any added since come last.
    let mut order: Vec<String> = resume
        .order
        .iter()
        .filter(|id| quiz.question(id).is_some())
        .cloned()
        .collect();
    for q in &quiz.questions {
        if !order.contains(&q.id) {
            order.push(q.id.clone());
        }
    }
    let done: Vec<Done> = resume
        .done
        .into_iter()
        .filter(|d| quiz.question(&d.id).is_some())
        .collect();
    let (n, total) = (done.len(), order.len());
    let go_on = if args.restart || n >= total {
        false
    } else if asker.interactive() {
        let question = crate::ui::tr_s(
            lang,
            format!("前回の途中 ({total} 問中 {n} 問済み) から続けますか? [Y/n] (n: 最初から)"),
            format!("Go on with your last attempt ({n} of {total} done)? [Y/n] (n: start over)"),
        );
        asker.confirm(&question).unwrap_or(true)
    } else {
        asker.note(&crate::ui::tr_s(
            lang,
            format!(
                "前回の途中 ({total} 問中 {n} 問済み) から続けます。最初からは `kca quiz run {} --restart`。",
                quiz.id
            ),
            format!(
                "Going on with your last attempt ({n} of {total} done); `kca quiz run {} --restart` starts over.",
                quiz.id
            ),
        ));
        true
    };
    let id = attempt.id;
    if !go_on {
        // Kept in the history as partial, no longer offered.
        progress::update(store, |p: &mut Progress| {
            if let Some(a) = p
                .quizzes
                .get_mut(&quiz.id)
                .and_then(|r| r.attempts.iter_mut().find(|a| a.id == id))
            {
                a.resume = None;
            }
        })?;
        return Ok(None);
    }
    let mut saver = Saver::resuming(
        store,
        &quiz.id,
        quiz.max_points(),
        (id, attempt.at),
        order,
        done,
    );
    saver.claim();
    Ok(Some(saver))
}

fn answered(results: &[QuestionResult]) -> u32 {
    results.iter().filter(|r| r.answered).count() as u32
}

pub(super) fn unanswered(q: &crate::content::quiz::Question) -> QuestionResult {
    QuestionResult {
        id: q.id.clone(),
        correct: false,
        points: 0.0,
        max: q.points,
        answered: false,
        answer: None,
        feedback: Vec::new(),
        concepts: q.concepts.clone(),
    }
}

/// Saves a graded answers file as one complete attempt; a store that cannot be written
/// is a warning, never a change of the grade.
fn record(ctx: &Ctx, store: &Store, quiz: &Quiz, report: &QuizReport) {
    let t = now();
    let saved = progress::update(store, |p: &mut Progress| {
        let rec = p.quizzes.entry(quiz.id.clone()).or_default();
        for r in &report.questions {
            rec.record(&r.id, r.correct, t);
        }
        rec.begin_attempt(Attempt {
            id: 0,
            resume: None,
            at: t,
            score: report.score,
            max: f64::from(report.max),
            passed: report.passed,
            complete: true,
            answered: answered(&report.questions),
        });
    });
    if let Err(e) = saved {
        ctx.printer.warn(&ctx.not_saved(&e));
    }
}

fn review(ctx: &Ctx, store: &Store, args: &ReviewArgs) -> Result<Exit> {
    let lang = ctx.settings.lang;
    let quizzes = loaded(ctx);
    // Only an id that did not load needs `find`, for its content error or suggestion.
    if let Some(id) = &args.quiz
        && !quizzes.iter().any(|q| &q.id == id)
    {
        find(ctx, id)?;
    }
    let progress: Progress = progress::read(store)?;
    let t = now();
    let due: Vec<_> = progress::due(&progress, args.quiz.as_deref(), t, usize::MAX)
        .into_iter()
        // Questions removed from the course since are not asked again.
        .filter(|d| {
            quizzes
                .iter()
                .any(|q| q.id == d.quiz && q.question(&d.question).is_some())
        })
        .take(args.limit)
        .collect();
    if due.is_empty() {
        print_nothing_due(ctx, &progress, args.quiz.as_deref());
        return Ok(Exit::Success);
    }
    let to_stderr = ctx.settings.output != OutputFormat::Text;
    let stdin = std::io::stdin();
    let mut asker = Asker::new(stdin.lock(), &ctx.printer, lang, to_stderr)
        .with_lessons(&ctx.settings.content_dir);
    let mut asked: Vec<(String, String, bool)> = Vec::new();
    let total = due.len();
    for (n, d) in due.iter().enumerate() {
        let Some(q) = quizzes
            .iter()
            .find(|q| q.id == d.quiz)
            .and_then(|q| q.question(&d.question))
        else {
            continue;
        };
        let heading = format!("[{}/{total}] {}", n + 1, d.quiz);
        match asker.ask(q, &heading, None) {
            Asked::Answered { graded, .. } => {
                asked.push((d.quiz.clone(), q.id.clone(), graded.correct))
            }
            Asked::Skipped => asked.push((d.quiz.clone(), q.id.clone(), false)),
            Asked::Quit => break,
        }
    }
    let saved = progress::update(store, |p: &mut Progress| {
        for (quiz, question, correct) in &asked {
            p.quizzes
                .entry(quiz.clone())
                .or_default()
                .record(question, *correct, t);
        }
    });
    if let Err(e) = &saved {
        ctx.printer.warn(&ctx.not_saved(e));
    }
    Ok(print_review(ctx, &asked))
}

/// Says that nothing is due (for `quiz`, or any quiz), and when the next question is.
fn print_nothing_due(ctx: &Ctx, progress: &Progress, quiz: Option<&str>) {
    let lang = ctx.settings.lang;
    let next = progress
        .quizzes
        .iter()
        .filter(|(id, _)| quiz.is_none_or(|q| q == id.as_str()))
        .flat_map(|(_, r)| r.questions.values().map(|q| q.due))
        .min();
    let msg = match next {
        Some(at) => format!(
            "{} {}",
            tr(
                lang,
                "今は復習する問題がありません。次の復習:",
                "Nothing is due for review. Next one due:"
            ),
            crate::ui::relative(
                lang,
                chrono::DateTime::from_timestamp(at, 0).unwrap_or_default(),
                chrono::Utc::now()
            )
        ),
        None => tr(
            lang,
            "まだ記録がありません。まず `kca quiz run <クイズ>` を受けてください。",
            "No history yet: take a quiz first with `kca quiz run <quiz>`.",
        )
        .to_string(),
    };
    if ctx.settings.output == OutputFormat::Json {
        ctx.printer.json(&json!({"schemaVersion": SCHEMA_VERSION, "reviewed": 0, "correct": 0, "questions": [], "message": msg}));
    } else {
        ctx.printer.out(&msg);
    }
}

/// The review's result: JSON, or the count of correct answers; not passed unless every
/// asked question was answered correctly.
fn print_review(ctx: &Ctx, asked: &[(String, String, bool)]) -> Exit {
    let lang = ctx.settings.lang;
    let correct = asked.iter().filter(|a| a.2).count();
    if ctx.settings.output == OutputFormat::Json {
        let questions: Vec<_> = asked
            .iter()
            .map(|(quiz, id, ok)| json!({"quiz": quiz, "id": id, "correct": ok}))
            .collect();
        ctx.printer.json(&json!({"schemaVersion": SCHEMA_VERSION, "reviewed": asked.len(), "correct": correct, "questions": questions}));
    } else {
        ctx.printer.out("");
        ctx.printer.out(&format!(
            "{} {correct}/{}",
            tr(lang, "復習の結果:", "Review:"),
            asked.len()
        ));
    }
    if correct == asked.len() {
        Exit::Success
    } else {
        Exit::NotPassed
    }
}

fn grade_file(ctx: &Ctx, store: &Store, args: &GradeArgs) -> Result<Exit> {
    let quiz = find(ctx, &args.quiz)?;
    let answers = read_answers(&quiz, &args.answers)?;
    let results = graded(ctx.settings.lang, &quiz, &answers);
    let report = QuizReport::new(&quiz, results, true);
    print_report(ctx, &quiz, &report);
    if ctx.settings.output == OutputFormat::Text {
        for r in report.questions.iter().filter(|r| !r.correct) {
            let why = if r.answered {
                tr(ctx.settings.lang, "不正解", "incorrect")
            } else {
                tr(ctx.settings.lang, "未回答", "unanswered")
            };
            ctx.printer.out(&format!(
                "  {} {} ({why})",
                ctx.printer.paint(Style::Fail, "✗"),
                r.id
            ));
        }
    }
    // Grading is often someone else's answers (an instructor, a CI job): the grader's
    // own progress changes only when asked.
    if args.record {
        record(ctx, store, &quiz, &report);
    }
    Ok(report.exit())
}

fn key(ctx: &Ctx, args: &KeyArgs) -> Result<Exit> {
    let quiz = find(ctx, &args.quiz)?;
    let mut map = serde_json::Map::new();
    for q in &quiz.questions {
        map.insert(q.id.clone(), grade::key(q).to_json());
    }
    let value = Value::Object(map);
    match ctx.settings.output {
        // The envelope like every JSON document; the text form is the answers file itself.
        OutputFormat::Json => ctx.printer.json(&crate::envelope::Envelope::new(
            json!({"quiz": quiz.id, "answers": value}),
        )),
        _ => {
            let explained = Text {
                ja: Some(format!(
                    "{} の解答キー (kca quiz grade {} --answers このファイル)",
                    quiz.id, quiz.id
                )),
                en: Some(format!(
                    "answer key for {} (kca quiz grade {} --answers THIS_FILE)",
                    quiz.id, quiz.id
                )),
            };
            ctx.printer
                .out(&format!("# {}", explained.get(ctx.settings.lang)));
            ctx.printer.out(yaml::to_string(&value).trim_end());
        }
    }
    Ok(Exit::Success)
}

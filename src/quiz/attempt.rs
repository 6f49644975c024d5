//! Saving a quiz attempt as it goes: each answer is written to the progress store the
//! moment it is given, the attempt itself is kept as partial until it completes, and
//! Ctrl-C says what was kept. Grading never depends on saving: a store that cannot be
//! written is reported once, after the result.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::progress::{self, Attempt, Done, Progress, Resume};
use crate::error::Error;
use crate::settings::Lang;
use crate::state::Store;
use crate::ui::{Printer, tr};

/// Keeps one attempt's answers in the store as they come.
pub struct Saver<'s> {
    store: &'s Store,
    quiz: String,
    started: i64,
    max: f64,
    /// The attempt's id once the store gave it one (or the resumed attempt's).
    id: Option<u64>,
    /// The order asked and what each question got so far: saved so `quiz run` can resume.
    resume: Resume,
    failed: Option<Error>,
    kept: Arc<AtomicUsize>,
    saving: Arc<AtomicBool>,
}

impl<'s> Saver<'s> {
    /// A new attempt asking `order` (question ids).
    pub fn new(store: &'s Store, quiz: &str, max: u32, started: i64, order: Vec<String>) -> Self {
        Saver {
            store,
            quiz: quiz.to_string(),
            started,
            max: f64::from(max),
            id: None,
            resume: Resume {
                order,
                done: Vec::new(),
                pid: std::process::id(),
            },
            failed: None,
            kept: Arc::new(AtomicUsize::new(0)),
            saving: Arc::new(AtomicBool::new(true)),
        }
    }

    /// Goes on with the partial attempt `id` begun at `started`: `order` to ask, `done`
    /// already.
    pub fn resuming(
        store: &'s Store,
        quiz: &str,
        max: u32,
        (id, started): (u64, i64),
        order: Vec<String>,
        done: Vec<Done>,
    ) -> Self {
        let mut saver = Saver::new(store, quiz, max, started, order);
        saver.id = Some(id);
        saver.resume.done = done;
        saver
    }

    /// The questions already done in this attempt (empty for a new one).
    pub fn done(&self) -> &[Done] {
        &self.resume.done
    }

    /// The questions in the order this attempt asks them.
    pub fn order(&self) -> &[String] {
        &self.resume.order
    }

    fn attempt(&self, passed: bool, complete: bool) -> Attempt {
        Attempt {
            id: self.id.unwrap_or(0),
            at: self.started,
            score: self.resume.done.iter().map(|d| d.points).sum(),
            max: self.max,
            passed: complete && passed,
            complete,
            answered: self.resume.done.iter().filter(|d| d.answered).count() as u32,
            resume: (!complete).then(|| self.resume.clone()),
        }
    }

    /// Takes the attempt over for this process (so another session does not resume it
    /// while it runs); a store that cannot be written stops saving, as for an answer.
    pub fn claim(&mut self) {
        let attempt = self.attempt(false, false);
        self.save(attempt, |_| {});
    }

    /// Records one question's outcome (a skip counts as "not known yet": due for review)
    /// and the attempt so far, as partial.
    pub fn question(&mut self, done: Done) {
        let (id, correct) = (done.id.clone(), done.correct);
        self.resume.done.push(done);
        let attempt = self.attempt(false, false);
        let t = chrono::Utc::now().timestamp();
        self.save(attempt, |rec| rec.record(&id, correct, t));
        if self.failed.is_none() {
            self.kept.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Closes the attempt: complete (with its verdict) or left partial (resumable).
    pub fn finish(&mut self, passed: bool, complete: bool) {
        let attempt = self.attempt(passed, complete);
        self.save(attempt, |_| {});
    }

    /// Saves `attempt` (under a new id the first time) after `f` changed the record.
    fn save(&mut self, attempt: Attempt, f: impl FnOnce(&mut progress::QuizRecord)) {
        if self.failed.is_some() {
            return;
        }
        let quiz = self.quiz.clone();
        let id = self.id;
        match progress::update(self.store, |p: &mut Progress| {
            let rec = p.quizzes.entry(quiz).or_default();
            f(rec);
            match id {
                Some(id) => {
                    rec.put_attempt(id, attempt);
                    id
                }
                None => rec.begin_attempt(attempt),
            }
        }) {
            Ok(id) => self.id = Some(id),
            Err(e) => {
                self.saving.store(false, Ordering::SeqCst);
                self.failed = Some(e);
            }
        }
    }

    /// The error that stopped saving, if any.
    pub fn failure(&self) -> Option<&Error> {
        self.failed.as_ref()
    }

    /// On Ctrl-C: says how many answers were kept, then ends the process with 130 (the
    /// shell's code for SIGINT). Answers are already on disk; nothing else needs saving.
    pub fn on_interrupt(&self, printer: &Printer, lang: Lang) {
        let kept = self.kept.clone();
        let saving = self.saving.clone();
        let printer = printer.clone();
        let quiz = self.quiz.clone();
        std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            if rt.block_on(tokio::signal::ctrl_c()).is_err() {
                return;
            }
            let n = kept.load(Ordering::SeqCst);
            let line = if saving.load(Ordering::SeqCst) {
                match lang {
                    Lang::Ja => format!(
                        "中断しました。答えた {n} 問は保存済みです (途中の記録として `kca quiz list` に表示、`kca quiz run {quiz}` で続きから)。"
                    ),
                    Lang::En => format!(
                        "Interrupted. The {n} answer(s) you gave are saved (shown as a partial attempt in `kca quiz list`; `kca quiz run {quiz}` goes on from there)."
                    ),
                }
            } else {
                tr(
                    lang,
                    "中断しました。進捗は保存できていません (XDG_STATE_HOME を確認してください)。",
                    "Interrupted. Progress could not be saved (check XDG_STATE_HOME).",
                )
                .to_string()
            };
            printer.say_err("");
            printer.say_err(&line);
            std::process::exit(130);
        });
    }
}

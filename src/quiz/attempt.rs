//! Saving a quiz attempt as it goes: each answer is written to the progress store the
//! moment it is given, the attempt itself is kept as partial until it completes, and
//! Ctrl-C says what was kept. Grading never depends on saving: a store that cannot be
//! written is reported once, after the result.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::progress::{self, Attempt, Progress};
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
    failed: Option<Error>,
    kept: Arc<AtomicUsize>,
    saving: Arc<AtomicBool>,
}

impl<'s> Saver<'s> {
    pub fn new(store: &'s Store, quiz: &str, max: u32, started: i64) -> Self {
        Saver {
            store,
            quiz: quiz.to_string(),
            started,
            max: f64::from(max),
            failed: None,
            kept: Arc::new(AtomicUsize::new(0)),
            saving: Arc::new(AtomicBool::new(true)),
        }
    }

    /// Records one question's outcome (a skip counts as "not known yet": due for review)
    /// and the attempt so far, as partial.
    pub fn question(&mut self, id: &str, correct: bool, score_so_far: f64, answered: u32) {
        let attempt = Attempt {
            at: self.started,
            score: score_so_far,
            max: self.max,
            passed: false,
            complete: false,
            answered,
        };
        let t = chrono::Utc::now().timestamp();
        self.save(|rec| {
            rec.record(id, correct, t);
            rec.add_attempt(attempt);
        });
        if self.failed.is_none() {
            self.kept.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Closes the attempt: complete (with its verdict) or left partial.
    pub fn finish(&mut self, score: f64, passed: bool, complete: bool, answered: u32) {
        let attempt = Attempt {
            at: self.started,
            score,
            max: self.max,
            passed: complete && passed,
            complete,
            answered,
        };
        self.save(|rec| rec.add_attempt(attempt));
    }

    fn save(&mut self, f: impl FnOnce(&mut progress::QuizRecord)) {
        if self.failed.is_some() {
            return;
        }
        let quiz = self.quiz.clone();
        if let Err(e) = self.store.update(progress::FILE, |p: &mut Progress| {
            f(p.quizzes.entry(quiz).or_default())
        }) {
            self.saving.store(false, Ordering::SeqCst);
            self.failed = Some(e);
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
                        "中断しました。答えた {n} 問は保存済みです (途中の記録として `kca quiz list` に表示、`kca quiz run {quiz}` でやり直し)。"
                    ),
                    Lang::En => format!(
                        "Interrupted. The {n} answer(s) you gave are saved (shown as a partial attempt in `kca quiz list`; `kca quiz run {quiz}` starts again)."
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

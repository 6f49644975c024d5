//! Quiz progress kept in the state store: attempts per quiz and a Leitner box per
//! question, which decides when a question comes back in `kca quiz review`. Pure logic;
//! the store does the disk.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The progress file in the state directory.
pub const FILE: &str = "quizzes.json";

/// Days until a question in box N (1-based) is due again: missed questions come back
/// at once, known ones later and later.
const INTERVAL_DAYS: [i64; 5] = [0, 1, 3, 7, 21];
const DAY: i64 = 86_400;
/// Attempts kept per quiz (a class grading with `--record`, or a learner over months).
const KEEP_ATTEMPTS: usize = 200;
/// The highest Leitner box.
const TOP_BOX: u8 = INTERVAL_DAYS.len() as u8;
/// No quiz is worth more points than this; a larger `max` was not written by kca.
const MAX_POINTS: f64 = 1_000_000.0;

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Progress {
    #[serde(default)]
    pub quizzes: BTreeMap<String, QuizRecord>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct QuizRecord {
    #[serde(default)]
    pub attempts: Vec<Attempt>,
    #[serde(default)]
    pub questions: BTreeMap<String, QuestionRecord>,
    /// The id the next attempt gets: taken under the store's lock, so attempts begun in
    /// the same second (parallel grades, two sessions) never replace each other.
    #[serde(default)]
    pub next_attempt: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Attempt {
    /// Unique within the quiz (1, 2, …; 0 for attempts saved before ids existed).
    #[serde(default)]
    pub id: u64,
    /// Unix seconds when the attempt began.
    pub at: i64,
    pub score: f64,
    pub max: f64,
    pub passed: bool,
    /// False for an attempt stopped early (quit, Ctrl-C, end of input): it is kept and
    /// shown as partial, but never counts as the best score.
    #[serde(default = "yes")]
    pub complete: bool,
    /// Questions answered (skips not counted).
    #[serde(default, deserialize_with = "sat_u32")]
    pub answered: u32,
    /// While partial: what `kca quiz run` needs to resume it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<Resume>,
}

/// A partial attempt's place: the questions in the order they are asked and the
/// outcome of those already done (answered or skipped).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Resume {
    pub order: Vec<String>,
    pub done: Vec<Done>,
    /// The process asking it; another session does not resume an attempt still running.
    #[serde(default)]
    pub pid: u32,
}

/// One question of an attempt, as it went.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Done {
    pub id: String,
    pub points: f64,
    pub correct: bool,
    pub answered: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct QuestionRecord {
    /// Leitner box, 1 (missed) to 5 (well known); any other number read is saturated
    /// here and clamped by `Progress::repair`.
    #[serde(deserialize_with = "sat_u8")]
    pub r#box: u8,
    /// Unix seconds when it is due for review.
    pub due: i64,
    #[serde(deserialize_with = "sat_u32")]
    pub seen: u32,
    #[serde(deserialize_with = "sat_u32")]
    pub correct: u32,
    pub last_correct: bool,
}

/// Reads any JSON number into an unsigned field, saturating (`-3` → 0, `1e9` → 255 for
/// a `u8`; Rust's float-to-int `as` saturates): a field out of range is repaired with a
/// warning, never loses the whole file.
fn sat_u8<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u8, D::Error> {
    Ok(f64::deserialize(d)? as u8)
}

fn sat_u32<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    Ok(f64::deserialize(d)? as u32)
}

impl QuestionRecord {
    /// A question never answered: box 1, due now.
    fn unseen(now: i64) -> QuestionRecord {
        QuestionRecord {
            r#box: 1,
            due: now,
            seen: 0,
            correct: 0,
            last_correct: false,
        }
    }
}

impl QuizRecord {
    pub fn best(&self) -> Option<&Attempt> {
        self.attempts
            .iter()
            .filter(|a| a.complete)
            .max_by(|a, b| (a.score / a.max.max(1.0)).total_cmp(&(b.score / b.max.max(1.0))))
    }

    pub fn last(&self) -> Option<&Attempt> {
        self.attempts.last()
    }

    /// Adds `attempt` under a new id (call it under the store's lock) and returns the id.
    pub fn begin_attempt(&mut self, mut attempt: Attempt) -> u64 {
        let used = self.attempts.iter().map(|a| a.id).max().unwrap_or(0);
        let id = self.next_attempt.max(used.saturating_add(1)).max(1);
        self.next_attempt = id.saturating_add(1);
        attempt.id = id;
        self.attempts.push(attempt);
        if self.attempts.len() > KEEP_ATTEMPTS {
            self.attempts.remove(0);
        }
        id
    }

    /// Replaces the attempt `id` (saved as it went); one no longer kept is added again.
    pub fn put_attempt(&mut self, id: u64, mut attempt: Attempt) {
        attempt.id = id;
        match self.attempts.iter_mut().find(|a| a.id == id && id != 0) {
            Some(a) => *a = attempt,
            None => {
                self.begin_attempt(attempt);
            }
        }
    }

    /// The newest partial attempt that can be resumed: begun (one question done), not
    /// finished, not being asked by another running kca (`alive` says whether a pid runs).
    pub fn resumable(&self, alive: impl Fn(u32) -> bool) -> Option<&Attempt> {
        self.attempts.iter().rev().find(|a| {
            !a.complete
                && a.id != 0
                && a.resume.as_ref().is_some_and(|r| {
                    !r.done.is_empty()
                        && r.done.len() < r.order.len()
                        && (r.pid == 0 || !alive(r.pid))
                })
        })
    }

    /// Records one answer: a right answer moves the question up a box, a wrong one back to box 1.
    pub fn record(&mut self, question: &str, correct: bool, now: i64) {
        let rec = self
            .questions
            .entry(question.to_string())
            .or_insert_with(|| QuestionRecord::unseen(now));
        rec.seen = rec.seen.saturating_add(1);
        rec.last_correct = correct;
        if correct {
            rec.correct = rec.correct.saturating_add(1);
            rec.r#box = rec.r#box.clamp(1, TOP_BOX).saturating_add(1).min(TOP_BOX);
        } else {
            rec.r#box = 1;
        }
        rec.due = now.saturating_add(INTERVAL_DAYS[usize::from(rec.r#box) - 1] * DAY);
    }
}

impl crate::state::Repair for Progress {
    /// Puts every field back in its range (a box 1–5, `correct` ≤ `seen`, a score
    /// between 0 and a max kca could have written); an attempt without a usable max is
    /// dropped. Returns what was changed, for the warning.
    fn repair(&mut self) -> Vec<String> {
        let mut fixed = Vec::new();
        for (quiz, rec) in &mut self.quizzes {
            for (id, q) in &mut rec.questions {
                if !(1..=TOP_BOX).contains(&q.r#box) {
                    fixed.push(format!("{quiz}/{id}: box {}", q.r#box));
                    q.r#box = q.r#box.clamp(1, TOP_BOX);
                }
                if q.correct > q.seen {
                    fixed.push(format!(
                        "{quiz}/{id}: correct {} > seen {}",
                        q.correct, q.seen
                    ));
                    q.correct = q.seen;
                }
            }
            let before = rec.attempts.len();
            rec.attempts
                .retain(|a| a.max.is_finite() && a.max > 0.0 && a.max <= MAX_POINTS);
            if rec.attempts.len() < before {
                fixed.push(format!(
                    "{quiz}: {} attempt(s) without a usable max",
                    before - rec.attempts.len()
                ));
            }
            for a in &mut rec.attempts {
                if !(a.score.is_finite() && (0.0..=a.max).contains(&a.score)) {
                    fixed.push(format!("{quiz}: attempt {} score {:.3e}", a.id, a.score));
                    a.score = if a.score.is_finite() {
                        a.score.clamp(0.0, a.max)
                    } else {
                        0.0
                    };
                    a.passed = a.passed && a.score > 0.0;
                }
                if let Some(r) = &mut a.resume {
                    r.done.retain(|d| d.points.is_finite());
                    for d in &mut r.done {
                        d.points = d.points.clamp(0.0, MAX_POINTS);
                    }
                }
            }
        }
        fixed
    }
}

/// Puts `question` up for review now (box 1) without counting an answer: a lab check on
/// the same concept failed, so the theory behind it is worth another look.
pub fn queue(rec: &mut QuizRecord, question: &str, now: i64) {
    let q = rec
        .questions
        .entry(question.to_string())
        .or_insert_with(|| QuestionRecord::unseen(now));
    q.r#box = 1;
    q.due = q.due.min(now);
}

/// Reads the quiz progress, every field checked (`Progress::repair`).
pub fn read(store: &crate::state::Store) -> crate::error::Result<Progress> {
    store.read_checked(FILE)
}

/// Changes the quiz progress under the store's lock, every field checked first.
pub fn update<R>(
    store: &crate::state::Store,
    f: impl FnOnce(&mut Progress) -> R,
) -> crate::error::Result<R> {
    store.update_checked(FILE, f)
}

/// Queues every question of `quizzes` tagged with one of `concepts`; returns how many.
pub fn queue_concepts(
    store: &crate::state::Store,
    quizzes: &[crate::content::quiz::Quiz],
    concepts: &[String],
) -> crate::error::Result<usize> {
    let now = chrono::Utc::now().timestamp();
    let picked: Vec<(&str, &str)> = quizzes
        .iter()
        .flat_map(|quiz| {
            quiz.questions
                .iter()
                .filter(|q| q.concepts.iter().any(|c| concepts.contains(c)))
                .map(move |q| (quiz.id.as_str(), q.id.as_str()))
        })
        .collect();
    if picked.is_empty() {
        return Ok(0);
    }
    update(store, |p: &mut Progress| {
        for (quiz, q) in &picked {
            queue(p.quizzes.entry(quiz.to_string()).or_default(), q, now);
        }
    })?;
    Ok(picked.len())
}

/// A question due for review.
#[derive(Debug, Clone, PartialEq)]
pub struct Due {
    pub quiz: String,
    pub question: String,
    pub r#box: u8,
    pub due: i64,
}

/// Questions due at `now`, lowest box first (missed ones before shaky ones), then the
/// longest overdue; at most `limit`.
pub fn due(progress: &Progress, only: Option<&str>, now: i64, limit: usize) -> Vec<Due> {
    let mut out: Vec<Due> = progress
        .quizzes
        .iter()
        .filter(|(id, _)| only.is_none_or(|o| o == id.as_str()))
        .flat_map(|(quiz, rec)| {
            rec.questions
                .iter()
                .filter(|(_, q)| q.due <= now)
                .map(|(question, q)| Due {
                    quiz: quiz.clone(),
                    question: question.clone(),
                    r#box: q.r#box,
                    due: q.due,
                })
        })
        .collect();
    out.sort_by(|a, b| {
        (a.r#box, a.due, &a.quiz, &a.question).cmp(&(b.r#box, b.due, &b.quiz, &b.question))
    });
    out.truncate(limit);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missed_questions_come_back_first_and_known_ones_later() {
        let mut p = Progress::default();
        let rec = p.quizzes.entry("m1".into()).or_default();
        let t0 = 1_000_000;
        rec.record("known", true, t0); // box 2, due in 1 day
        rec.record("missed", false, t0); // box 1, due now
        rec.record("shaky", true, t0 - 2 * DAY); // box 2, due a day ago
        let now = due(&p, None, t0, 10);
        let names: Vec<_> = now.iter().map(|d| d.question.as_str()).collect();
        assert_eq!(names, vec!["missed", "shaky"]);
        let later = due(&p, None, t0 + DAY, 10);
        assert_eq!(
            later
                .iter()
                .map(|d| d.question.as_str())
                .collect::<Vec<_>>(),
            vec!["missed", "shaky", "known"]
        );
    }

    #[test]
    fn boxes_climb_on_success_and_reset_on_a_miss() {
        let mut rec = QuizRecord::default();
        for _ in 0..7 {
            rec.record("q", true, 0);
        }
        assert_eq!(rec.questions["q"].r#box, 5);
        assert_eq!(rec.questions["q"].due, 21 * DAY);
        rec.record("q", false, 0);
        assert_eq!((rec.questions["q"].r#box, rec.questions["q"].due), (1, 0));
    }

    fn attempt(score: f64, max: f64, passed: bool, complete: bool) -> Attempt {
        Attempt {
            id: 0,
            at: 1,
            score,
            max,
            passed,
            complete,
            answered: 10,
            resume: None,
        }
    }

    #[test]
    fn best_attempt_is_by_ratio() {
        let mut rec = QuizRecord::default();
        rec.begin_attempt(attempt(5.0, 10.0, false, true));
        rec.begin_attempt(attempt(9.0, 10.0, true, true));
        rec.begin_attempt(attempt(7.0, 10.0, true, true));
        rec.begin_attempt(attempt(10.0, 10.0, false, false));
        assert_eq!(
            rec.best().unwrap().id,
            2,
            "a partial attempt is never the best"
        );
        assert_eq!(rec.last().unwrap().id, 4);
    }

    #[test]
    fn attempts_begun_in_the_same_second_each_keep_their_own_id() {
        let mut rec = QuizRecord::default();
        let pass = rec.begin_attempt(attempt(10.0, 10.0, true, true));
        let fail = rec.begin_attempt(attempt(1.0, 10.0, false, true));
        assert_ne!(pass, fail);
        assert_eq!(rec.attempts.len(), 2);
        assert!(
            rec.best().unwrap().passed,
            "the pass was replaced by the fail"
        );
        // A saved-as-it-goes attempt replaces only itself.
        rec.put_attempt(fail, attempt(2.0, 10.0, false, true));
        assert_eq!(rec.attempts.len(), 2);
        assert_eq!(rec.attempts[1].score, 2.0);
        // Ids keep growing past attempts that were dropped from the history.
        rec.attempts.clear();
        assert!(rec.begin_attempt(attempt(1.0, 10.0, false, true)) > fail);
    }

    #[test]
    fn legacy_attempts_without_ids_are_never_replaced() {
        let legacy = r#"{"attempts":[{"at":5,"score":1,"max":2,"passed":false},{"at":5,"score":2,"max":2,"passed":true}],"questions":{}}"#;
        let mut rec: QuizRecord = serde_json::from_str(legacy).unwrap();
        let id = rec.begin_attempt(attempt(0.0, 2.0, false, true));
        assert_eq!((id, rec.attempts.len()), (1, 3));
    }

    #[test]
    fn out_of_range_fields_are_read_and_put_back_in_range() {
        use crate::state::Repair;
        let text = r#"{"quizzes":{"m":{"attempts":[
            {"id":1,"at":1,"score":1e308,"max":0,"passed":true},
            {"id":2,"at":1,"score":1e308,"max":10,"passed":true},
            {"id":3,"at":1,"score":-4,"max":10,"passed":false,"answered":-2}],
          "questions":{"a":{"box":255,"due":0,"seen":1,"correct":9,"last_correct":true},
                       "b":{"box":-7,"due":0,"seen":-1,"correct":0,"last_correct":false},
                       "c":{"box":1e30,"due":0,"seen":0,"correct":0,"last_correct":false}}}}}"#;
        let mut p: Progress = serde_json::from_str(text).unwrap();
        let fixed = p.repair();
        assert!(fixed.len() >= 6, "{fixed:?}");
        let rec = &p.quizzes["m"];
        assert_eq!(
            rec.questions.values().map(|q| q.r#box).collect::<Vec<_>>(),
            vec![5, 1, 5]
        );
        assert_eq!(rec.questions["a"].correct, 1);
        assert_eq!(rec.attempts.len(), 2, "the attempt with max 0 is dropped");
        assert_eq!(rec.attempts[0].score, 10.0);
        assert_eq!(rec.attempts[1].score, 0.0);
        assert_eq!(rec.attempts[1].answered, 0);
        assert!(p.repair().is_empty(), "a repaired record needs no repair");
    }

    #[test]
    fn recording_an_answer_on_an_out_of_range_box_does_not_panic() {
        let mut rec = QuizRecord::default();
        rec.record("q", true, 0);
        rec.questions.get_mut("q").unwrap().r#box = 255;
        rec.record("q", true, 0);
        assert_eq!(rec.questions["q"].r#box, 5);
        rec.questions.get_mut("q").unwrap().r#box = 0;
        rec.record("q", true, 0);
        assert_eq!(rec.questions["q"].r#box, 2);
    }

    #[test]
    fn a_partial_attempt_of_a_running_session_is_not_resumed() {
        let mut rec = QuizRecord::default();
        let mut a = attempt(1.0, 10.0, false, false);
        a.resume = Some(Resume {
            order: vec!["x".into(), "y".into()],
            done: vec![Done {
                id: "x".into(),
                points: 1.0,
                correct: true,
                answered: true,
            }],
            pid: 42,
        });
        let id = rec.begin_attempt(a);
        assert!(rec.resumable(|_| true).is_none());
        assert_eq!(rec.resumable(|_| false).map(|a| a.id), Some(id));
    }
}

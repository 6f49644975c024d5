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
/// Attempts kept per quiz.
const KEEP_ATTEMPTS: usize = 50;

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
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Attempt {
    /// Unix seconds when the attempt began; identifies it while it is saved as it goes.
    pub at: i64,
    pub score: f64,
    pub max: f64,
    pub passed: bool,
    /// False for an attempt stopped early (quit, Ctrl-C, end of input): it is kept and
    /// shown as partial, but never counts as the best score.
    #[serde(default = "yes")]
    pub complete: bool,
    /// Questions answered (skips not counted).
    #[serde(default)]
    pub answered: u32,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct QuestionRecord {
    /// Leitner box, 1 (missed) to 5 (well known).
    pub r#box: u8,
    /// Unix seconds when it is due for review.
    pub due: i64,
    pub seen: u32,
    pub correct: u32,
    pub last_correct: bool,
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

    /// Adds `attempt`, or replaces the one begun at the same time (saved as it went).
    pub fn add_attempt(&mut self, attempt: Attempt) {
        if let Some(a) = self.attempts.iter_mut().find(|a| a.at == attempt.at) {
            *a = attempt;
            return;
        }
        self.attempts.push(attempt);
        if self.attempts.len() > KEEP_ATTEMPTS {
            self.attempts.remove(0);
        }
    }

    /// Records one answer: a right answer moves the question up a box, a wrong one back to box 1.
    pub fn record(&mut self, question: &str, correct: bool, now: i64) {
        let rec = self
            .questions
            .entry(question.to_string())
            .or_insert_with(|| QuestionRecord::unseen(now));
        rec.seen += 1;
        rec.last_correct = correct;
        if correct {
            rec.correct += 1;
            rec.r#box = (rec.r#box + 1).min(INTERVAL_DAYS.len() as u8);
        } else {
            rec.r#box = 1;
        }
        rec.due = now + INTERVAL_DAYS[usize::from(rec.r#box) - 1] * DAY;
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
    store.update(FILE, |p: &mut Progress| {
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

    #[test]
    fn best_attempt_is_by_ratio() {
        let mut rec = QuizRecord::default();
        rec.add_attempt(Attempt {
            at: 1,
            score: 5.0,
            max: 10.0,
            passed: false,
            complete: true,
            answered: 10,
        });
        rec.add_attempt(Attempt {
            at: 2,
            score: 9.0,
            max: 10.0,
            passed: true,
            complete: true,
            answered: 10,
        });
        rec.add_attempt(Attempt {
            at: 3,
            score: 7.0,
            max: 10.0,
            passed: true,
            complete: true,
            answered: 10,
        });
        rec.add_attempt(Attempt {
            at: 4,
            score: 10.0,
            max: 10.0,
            passed: false,
            complete: false,
            answered: 10,
        });
        assert_eq!(
            rec.best().unwrap().at,
            2,
            "a partial attempt is never the best"
        );
        assert_eq!(rec.last().unwrap().at, 4);
    }
}

//! The class model of `kca report`: attempts read from result files are folded into one
//! `ClassReport` (learners, tasks, checks, questions, the score distribution, attempts
//! per day). Every number the text, JSON and HTML renderings show is computed here, once;
//! the renderings only lay it out. Pure: no I/O, no printing.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

/// How one check or question fared across the class.
#[derive(Debug, Default, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Rate {
    /// `lab/check` or `quiz/question`.
    pub id: String,
    pub seen: u32,
    pub failed: u32,
    /// Errors and skips (labs) or unanswered (quizzes): not counted as failures.
    pub other: u32,
    /// `failed / seen` in percent, one decimal.
    pub percent: f64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub concepts: Vec<String>,
    /// `concepts` as a set: de-duplication stays linear (80,000 concepts in one file).
    #[serde(skip)]
    seen_concepts: HashSet<String>,
}

/// One learner: their latest attempt of each lab and quiz, summed.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Learner {
    pub learner: String,
    pub labs: u32,
    pub quizzes: u32,
    pub score: f64,
    pub max: f64,
    /// `score / max` in percent, one decimal; `None` when nothing was scored.
    pub percent: Option<f64>,
    pub failed_checks: u32,
    pub wrong_questions: u32,
    /// Submissions `kca grade` could not grade (their error documents).
    pub not_graded: u32,
    /// Every attempt read for this learner, the superseded ones included.
    pub attempts: u32,
    /// The latest attempt's time (RFC 3339, UTC), when any attempt has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last: Option<String>,
}

/// One lab task across the learners who attempted its lab.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// `lab/task`.
    pub id: String,
    pub learners: u32,
    /// Learners all of whose checks of this task passed.
    pub complete: u32,
    /// Learners with at least one failed check in this task.
    pub failed: u32,
    /// Mean of the learners' task scores in percent, one decimal.
    pub mean_percent: f64,
}

/// One bar of the score distribution: learners whose percent is in `[from, to)` (the
/// last bin includes 100).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Bin {
    pub from: u32,
    pub to: u32,
    pub learners: u32,
}

/// Attempts made on one UTC day (every attempt read, not only the latest).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Day {
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    pub attempts: u32,
    pub learners: u32,
    /// Mean percent of that day's scored attempts, one decimal.
    pub mean_percent: f64,
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassReport {
    /// Files read (not the skipped ones).
    pub files: usize,
    /// Attempts read; the tables count each learner's latest of each lab and quiz.
    pub attempts: usize,
    pub learners: Vec<Learner>,
    pub tasks: Vec<Task>,
    pub checks: Vec<Rate>,
    pub questions: Vec<Rate>,
    /// Ten bins of learners' percents (learners with nothing scored are left out).
    pub scores: Vec<Bin>,
    pub days: Vec<Day>,
    /// Attempts with no time (neither `gradedAt` nor a file time): not in `days`.
    pub undated: usize,
    /// Files that could not be read, with why.
    pub skipped: Vec<String>,
}

/// How one check ended in one attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Outcome {
    Pass,
    Fail,
    /// `error` or `skipped` (labs), unanswered (quizzes).
    Other,
}

#[derive(Debug, Clone)]
pub struct TaskAttempt {
    pub id: String,
    pub score: f64,
    pub max: f64,
    pub checks: Vec<(String, Outcome)>,
}

#[derive(Debug, Clone)]
pub struct QuestionAttempt {
    pub id: String,
    pub outcome: Outcome,
    pub concepts: Vec<String>,
}

#[derive(Debug, Clone)]
pub enum Body {
    Lab {
        lab: String,
        score: f64,
        max: f64,
        tasks: Vec<TaskAttempt>,
    },
    Quiz {
        quiz: String,
        score: f64,
        max: f64,
        questions: Vec<QuestionAttempt>,
    },
    /// A submission that could not be graded (a `kca grade` error document).
    NotGraded,
}

impl Body {
    /// What a later attempt of the same learner replaces.
    fn key(&self) -> (u8, &str) {
        match self {
            Body::Lab { lab, .. } => (0, lab),
            Body::Quiz { quiz, .. } => (1, quiz),
            Body::NotGraded => (2, ""),
        }
    }

    fn percent(&self) -> Option<f64> {
        match self {
            Body::Lab { score, max, .. } | Body::Quiz { score, max, .. } if *max > 0.0 => {
                Some(score / max * 100.0)
            }
            _ => None,
        }
    }
}

/// One learner's result of one lab or quiz, as read from a file.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub learner: String,
    /// Unix seconds, when known.
    pub at: Option<i64>,
    pub body: Body,
}

#[derive(Default)]
struct DayAcc {
    attempts: u32,
    learners: HashSet<String>,
    percent_sum: f64,
    scored: u32,
}

/// Folds attempts into a `ClassReport`, one at a time: only each learner's latest
/// attempt of each lab and quiz is kept (a later time wins; at the same time, the one
/// read later), the rest only counts in `attempts` and `days`.
#[derive(Default)]
pub struct Class {
    /// (learner, lab or quiz) → (read order, the attempt).
    latest: HashMap<(String, u8, String), (usize, Attempt)>,
    attempts: HashMap<String, (u32, Option<i64>)>,
    days: BTreeMap<i64, DayAcc>,
    undated: usize,
    read: usize,
    pub files: usize,
    pub skipped: Vec<String>,
}

const DAY: i64 = 86_400;

impl Class {
    pub fn add(&mut self, a: Attempt) {
        self.read += 1;
        let seen = self.attempts.entry(a.learner.clone()).or_default();
        seen.0 += 1;
        seen.1 = seen.1.max(a.at);
        match a.at {
            Some(t) => {
                let d = self.days.entry(t.div_euclid(DAY)).or_default();
                d.attempts += 1;
                if !d.learners.contains(&a.learner) {
                    d.learners.insert(a.learner.clone());
                }
                if let Some(p) = a.body.percent() {
                    d.percent_sum += p;
                    d.scored += 1;
                }
            }
            None => self.undated += 1,
        }
        let (kind, item) = a.body.key();
        let key = (a.learner.clone(), kind, item.to_string());
        let order = self.read;
        match self.latest.get(&key) {
            Some((_, kept)) if kept.at > a.at => {}
            _ => {
                self.latest.insert(key, (order, a));
            }
        }
    }

    pub fn finish(self) -> ClassReport {
        let mut kept: Vec<(usize, Attempt)> = self.latest.into_values().collect();
        // Read order: tasks, checks and questions appear as the files list them.
        kept.sort_by_key(|(order, _)| *order);
        let mut learners: BTreeMap<String, Learner> = BTreeMap::new();
        let mut tasks = Tally::<TaskAcc>::default();
        let mut checks = Tally::<Rate>::default();
        let mut questions = Tally::<Rate>::default();
        for (_, a) in &kept {
            let l = learners.entry(a.learner.clone()).or_insert_with(|| {
                let (attempts, last) = self.attempts.get(&a.learner).copied().unwrap_or_default();
                Learner {
                    learner: a.learner.clone(),
                    labs: 0,
                    quizzes: 0,
                    score: 0.0,
                    max: 0.0,
                    percent: None,
                    failed_checks: 0,
                    wrong_questions: 0,
                    not_graded: 0,
                    attempts,
                    last: last.map(rfc3339),
                }
            });
            match &a.body {
                Body::Lab {
                    lab,
                    score,
                    max,
                    tasks: ts,
                } => {
                    l.labs += 1;
                    l.score += score;
                    l.max += max;
                    for t in ts {
                        let acc = tasks.get(format!("{lab}/{}", t.id));
                        acc.learners += 1;
                        acc.complete += u32::from(
                            !t.checks.is_empty() && t.checks.iter().all(|c| c.1 == Outcome::Pass),
                        );
                        acc.failed += u32::from(t.checks.iter().any(|c| c.1 == Outcome::Fail));
                        if t.max > 0.0 {
                            acc.percent_sum += t.score / t.max * 100.0;
                        }
                        for (id, o) in &t.checks {
                            l.failed_checks += u32::from(*o == Outcome::Fail);
                            checks.get(format!("{lab}/{id}")).count(*o, &[]);
                        }
                    }
                }
                Body::Quiz {
                    quiz,
                    score,
                    max,
                    questions: qs,
                } => {
                    l.quizzes += 1;
                    l.score += score;
                    l.max += max;
                    for q in qs {
                        l.wrong_questions += u32::from(q.outcome == Outcome::Fail);
                        questions
                            .get(format!("{quiz}/{}", q.id))
                            .count(q.outcome, &q.concepts);
                    }
                }
                Body::NotGraded => l.not_graded += 1,
            }
        }
        let mut scores: Vec<Bin> = (0..10)
            .map(|i| Bin {
                from: i * 10,
                to: i * 10 + 10,
                learners: 0,
            })
            .collect();
        let learners: Vec<Learner> = learners
            .into_values()
            .map(|mut l| {
                l.score = one_decimal(l.score);
                l.max = one_decimal(l.max);
                if l.max > 0.0 {
                    let p = one_decimal(l.score / l.max * 100.0);
                    l.percent = Some(p);
                    // 100 % goes into the last bin; a percent over 100 (a hand-edited
                    // file) too, below 0 into the first.
                    let i = ((p / 10.0).floor().clamp(0.0, 9.0)) as usize;
                    scores[i].learners += 1;
                }
                l
            })
            .collect();
        let days = self
            .days
            .into_iter()
            .map(|(d, acc)| Day {
                day: chrono::DateTime::from_timestamp(d * DAY, 0)
                    .map(|t| t.format("%Y-%m-%d").to_string())
                    .unwrap_or_default(),
                attempts: acc.attempts,
                learners: acc.learners.len() as u32,
                mean_percent: mean(acc.percent_sum, acc.scored),
            })
            .collect();
        ClassReport {
            files: self.files,
            attempts: self.read,
            learners,
            tasks: tasks
                .rows
                .into_iter()
                .map(|(id, t)| Task {
                    id,
                    learners: t.learners,
                    complete: t.complete,
                    failed: t.failed,
                    mean_percent: mean(t.percent_sum, t.learners),
                })
                .collect(),
            checks: by_failure(checks.rows),
            questions: by_failure(questions.rows),
            scores,
            days,
            undated: self.undated,
            skipped: self.skipped,
        }
    }
}

#[derive(Default)]
struct TaskAcc {
    learners: u32,
    complete: u32,
    failed: u32,
    percent_sum: f64,
}

/// Rows by id in first-seen order.
struct Tally<T> {
    index: HashMap<String, usize>,
    rows: Vec<(String, T)>,
}

impl<T> Default for Tally<T> {
    fn default() -> Self {
        Tally {
            index: HashMap::new(),
            rows: Vec::new(),
        }
    }
}

impl<T: Default> Tally<T> {
    fn get(&mut self, id: String) -> &mut T {
        let i = match self.index.get(&id) {
            Some(i) => *i,
            None => {
                self.index.insert(id.clone(), self.rows.len());
                self.rows.push((id, T::default()));
                self.rows.len() - 1
            }
        };
        &mut self.rows[i].1
    }
}

impl Rate {
    fn count(&mut self, o: Outcome, concepts: &[String]) {
        self.seen += 1;
        self.failed += u32::from(o == Outcome::Fail);
        self.other += u32::from(o == Outcome::Other);
        for c in concepts {
            if self.seen_concepts.insert(c.clone()) {
                self.concepts.push(c.clone());
            }
        }
    }
}

/// Most failed first (by rate, then count), then by id.
fn by_failure(rows: Vec<(String, Rate)>) -> Vec<Rate> {
    let mut v: Vec<Rate> = rows
        .into_iter()
        .map(|(id, mut r)| {
            r.id = id;
            r.percent = if r.seen == 0 {
                0.0
            } else {
                one_decimal(f64::from(r.failed) * 100.0 / f64::from(r.seen))
            };
            r
        })
        .collect();
    v.sort_by(|a, b| {
        b.percent
            .total_cmp(&a.percent)
            .then(b.failed.cmp(&a.failed))
            .then(a.id.cmp(&b.id))
    });
    v
}

fn one_decimal(x: f64) -> f64 {
    if x.is_finite() {
        (x * 10.0).round() / 10.0
    } else {
        0.0
    }
}

fn mean(sum: f64, n: u32) -> f64 {
    if n == 0 {
        0.0
    } else {
        one_decimal(sum / f64::from(n))
    }
}

pub fn rfc3339(t: i64) -> String {
    chrono::DateTime::from_timestamp(t, 0)
        .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lab(learner: &str, at: i64, verdicts: &[Outcome]) -> Attempt {
        let checks: Vec<(String, Outcome)> = verdicts
            .iter()
            .enumerate()
            .map(|(i, o)| (format!("c{i}"), *o))
            .collect();
        let passed = verdicts.iter().filter(|o| **o == Outcome::Pass).count() as f64;
        Attempt {
            learner: learner.into(),
            at: Some(at),
            body: Body::Lab {
                lab: "l".into(),
                score: passed,
                max: verdicts.len() as f64,
                tasks: vec![TaskAttempt {
                    id: "t".into(),
                    score: passed,
                    max: verdicts.len() as f64,
                    checks,
                }],
            },
        }
    }

    use Outcome::{Fail, Other, Pass};

    #[test]
    fn a_later_attempt_replaces_an_earlier_one_in_the_tables_not_in_the_days() {
        let mut c = Class::default();
        c.add(lab("a", 2 * DAY + 5, &[Pass, Pass]));
        c.add(lab("a", DAY + 5, &[Fail, Pass])); // earlier, read later: superseded
        c.add(lab("b", DAY + 9, &[Fail, Other]));
        let r = c.finish();
        assert_eq!(r.attempts, 3);
        assert_eq!(r.learners.len(), 2);
        assert_eq!(r.learners[0].percent, Some(100.0));
        assert_eq!(r.learners[0].attempts, 2);
        assert_eq!(r.learners[0].last.as_deref(), Some("1970-01-03T00:00:05Z"));
        assert_eq!(r.learners[1].percent, Some(0.0));
        assert_eq!(r.learners[1].failed_checks, 1);
        let c0 = r.checks.iter().find(|c| c.id == "l/c0").unwrap();
        assert_eq!((c0.seen, c0.failed, c0.percent), (2, 1, 50.0));
        let c1 = r.checks.iter().find(|c| c.id == "l/c1").unwrap();
        assert_eq!((c1.seen, c1.failed, c1.other), (2, 0, 1));
        assert_eq!(r.checks[0].id, "l/c0", "most failed first");
        assert_eq!(
            r.tasks,
            [Task {
                id: "l/t".into(),
                learners: 2,
                complete: 1,
                failed: 1,
                mean_percent: 50.0
            }]
        );
        let bins: Vec<u32> = r.scores.iter().map(|b| b.learners).collect();
        assert_eq!(bins, [1, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(r.days.len(), 2);
        assert_eq!(
            r.days[0],
            Day {
                day: "1970-01-02".into(),
                attempts: 2,
                learners: 2,
                mean_percent: 25.0
            }
        );
        assert_eq!(r.days[1].attempts, 1);
    }

    #[test]
    fn at_the_same_time_the_attempt_read_later_wins_and_undated_ones_are_counted() {
        let mut c = Class::default();
        let mut a = lab("a", 0, &[Fail]);
        a.at = None;
        c.add(a.clone());
        let mut b = lab("a", 0, &[Pass]);
        b.at = None;
        c.add(b);
        let r = c.finish();
        assert_eq!(r.undated, 2);
        assert!(r.days.is_empty());
        assert_eq!(r.learners[0].percent, Some(100.0));
    }
}

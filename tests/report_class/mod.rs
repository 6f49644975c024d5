//! A generated class for `kca report` tests: `n` learners' lab and quiz results with
//! verdicts set by a learner's number, so each test can count what the report must say
//! without asking kca. Learner 0's id is markup, learner 1's holds a terminal escape.
#![allow(dead_code)]

use std::path::Path;

use serde_json::{Value, json};

pub const LAB: &str = "kca-gates";
pub const QUIZ: &str = "module-1";
/// The first day of the class (2026-12-01T09:00:00Z); learner `i` works on day `i % 3`.
pub const START: i64 = 1_796_115_600;

pub fn learner(i: usize) -> String {
    match i {
        0 => "<script>alert(1)</script>".into(),
        1 => "eve\u{1b}]0;owned\u{7}".into(),
        _ => format!("learner-{i:03}"),
    }
}

/// `c1` fails for every third learner, `c2` for every fourth, `c3` errs for every fifth.
pub fn verdict(check: &str, i: usize) -> &'static str {
    match check {
        "c1" if i.is_multiple_of(3) => "fail",
        "c2" if i.is_multiple_of(4) => "fail",
        "c3" if i.is_multiple_of(5) => "error",
        _ => "pass",
    }
}

/// `q1` is wrong for every second learner, `q2` unanswered for every sixth.
pub fn question(q: &str, i: usize) -> (bool, bool) {
    match q {
        "q1" => (true, !i.is_multiple_of(2)),
        _ => (!i.is_multiple_of(6), true),
    }
}

pub fn when(i: usize) -> String {
    let t = START + (i % 3) as i64 * 86_400 + i as i64;
    chrono::DateTime::from_timestamp(t, 0)
        .unwrap()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Learner `i`'s lab result, as `kca grade --out` writes it.
pub fn lab(i: usize) -> Value {
    let task = |id: &str, checks: &[&str]| {
        let cs: Vec<Value> = checks
            .iter()
            .map(|c| json!({"id": c, "verdict": verdict(c, i), "points": 1}))
            .collect();
        let score = checks.iter().filter(|c| verdict(c, i) == "pass").count();
        (
            json!({"id": id, "score": score, "maxScore": checks.len(), "checks": cs}),
            score,
        )
    };
    let (t1, s1) = task("t1", &["c1", "c2"]);
    let (t2, s2) = task("t2", &["c3"]);
    json!({"schemaVersion": 1, "lab": LAB, "learner": learner(i), "gradedAt": when(i),
           "score": s1 + s2, "maxScore": 3, "tasks": [t1, t2]})
}

/// Learner `i`'s quiz result, as `kca quiz grade -o json` prints it (no learner field:
/// the file name says who).
pub fn quiz(i: usize) -> Value {
    let qs: Vec<Value> = ["q1", "q2"]
        .iter()
        .map(|q| {
            let (answered, correct) = question(q, i);
            json!({"id": q, "answered": answered, "correct": answered && correct,
                   "points": if answered && correct { 1 } else { 0 }, "max": 1,
                   "concepts": [format!("concept-{q}")]})
        })
        .collect();
    let score = qs.iter().filter(|q| q["correct"] == true).count();
    json!({"schemaVersion": 1, "quiz": QUIZ, "score": score, "max": 2, "questions": qs})
}

/// Learner `i`'s percent over their results (3 lab points, 2 quiz points from learner 2).
pub fn percent(i: usize) -> f64 {
    let lab = ["c1", "c2", "c3"]
        .iter()
        .filter(|c| verdict(c, i) == "pass")
        .count();
    let quiz = ["q1", "q2"]
        .iter()
        .filter(|q| question(q, i) == (true, true))
        .count();
    if i < 2 {
        return (lab as f64 * 1000.0 / 3.0).round() / 10.0;
    }
    ((lab + quiz) as f64 * 1000.0 / 5.0).round() / 10.0
}

/// Writes the class into `dir`: `NNN-lab.json` (with `learner`) and
/// `<stem>-module-1.json` (learner from the name) for each learner.
pub fn write(dir: &Path, n: usize) {
    std::fs::create_dir_all(dir).unwrap();
    for i in 0..n {
        std::fs::write(dir.join(format!("{i:03}-lab.json")), lab(i).to_string()).unwrap();
        // A file name cannot hold learner 0's `/`: give quizzes only to learners 2….
        if i >= 2 {
            std::fs::write(
                dir.join(format!("{}-{QUIZ}.json", learner(i))),
                quiz(i).to_string(),
            )
            .unwrap();
        }
    }
}

pub fn count(n: usize, f: impl Fn(usize) -> bool) -> u64 {
    (0..n).filter(|i| f(*i)).count() as u64
}

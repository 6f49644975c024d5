//! `kca validate`'s warnings for quiz authors, as an author sees them: on stderr with
//! `file:line:col`, the source line and a hint; never a failing exit code.

mod common;

use common::{Env, data, stderr, stdout};
use serde_json::Value;

#[test]
fn a_biased_quiz_is_valid_but_every_bias_is_pointed_at() {
    let env = Env::new();
    let out = env
        .kca()
        .args(["--lang", "en", "validate"])
        .arg(data("lint/biased.yaml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("1 file(s) valid, 8 warning(s) for authors"),
        "{}",
        stdout(&out)
    );
    let err = stderr(&out).replace(&data("").display().to_string(), "[DATA]/");
    for want in [
        "[DATA]/lint/biased.yaml:8:5: warning: the correct choice is the longest in 3 of 3",
        "[DATA]/lint/biased.yaml:8:5: warning: the correct choice is at position 1 (a)",
        "[DATA]/lint/biased.yaml:8:5: warning: always choosing the longest option scores",
        "[DATA]/lint/biased.yaml:11:13: warning: hint 1 of `s1` contains the answer",
        "[DATA]/lint/biased.yaml:33:5: warning: selecting every option scores 67 %",
        "[DATA]/lint/biased.yaml:33:5: warning: `m1`: 3 of 4 options are correct",
        "[DATA]/lint/biased.yaml:43:5: warning: 3 of 3 true-false questions are false",
        "[DATA]/lint/biased.yaml:62:13: warning: hint 1 of `sh` contains the answer",
    ] {
        assert!(err.contains(want), "missing {want:?} in:\n{err}");
    }
    // The source line and the caret, as for errors.
    assert!(err.contains("8 |   - id: s1\n  |     ^\n"), "{err}");
    assert!(!err.contains("error:"), "{err}");
}

#[test]
fn a_balanced_quiz_gets_no_warning() {
    let env = Env::new();
    let out = env
        .kca()
        .args(["--lang", "en", "validate"])
        .arg(data("lint/balanced.yaml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stderr(&out), "");
    assert!(
        stdout(&out).contains("1 file(s) valid\n"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn the_course_quizzes_give_a_test_wise_learner_nothing() {
    let env = Env::new();
    let out = env
        .kca()
        .args(["validate", "--output", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["warnings"], Value::Array(vec![]), "{report:#}");
    let quizzes: Vec<&Value> = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "Quiz")
        .collect();
    assert_eq!(quizzes.len(), 4);
    for q in quizzes {
        let bias = &q["bias"];
        for strategy in ["longest", "shortest", "selectAll", "positionA"] {
            let share = bias[strategy].as_f64().unwrap();
            assert!(share <= 0.40, "{}: {strategy} {share}", q["id"]);
        }
        let singles = bias["singles"].as_u64().unwrap();
        assert!(bias["longestCorrect"].as_u64().unwrap() * 3 <= singles);
        assert!(bias["shortestCorrect"].as_u64().unwrap() * 3 <= singles);
    }
}

#[test]
fn an_author_reading_japanese_gets_the_warnings_in_japanese() {
    // The lint's warnings and `validate`'s summary were English on a Japanese screen.
    let env = Env::new();
    let out = env
        .kca()
        .args(["--lang", "ja", "validate"])
        .arg(data("lint/biased.yaml"))
        .output()
        .unwrap();
    let (text, err) = (stdout(&out), stderr(&out));
    assert!(
        text.contains("1 個のファイルは有効です。作者向けの警告 8 件"),
        "{text}"
    );
    assert!(
        err.contains("warning: `s1` のヒント 1 に答えが含まれています"),
        "{err}"
    );
    assert!(
        err.contains("ヒント: 答えそのものではなく、考え方へ導きます"),
        "{err}"
    );
    assert!(!err.contains("contains the answer"), "{err}");
}

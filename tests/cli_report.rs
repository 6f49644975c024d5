//! `kca report` over a generated class: the per-learner, per-task, per-check and
//! per-question tables (text within 80 columns, and one JSON document with the same
//! numbers), `kca grade`'s documents as inputs, the latest attempt counting, data from
//! files escaped, and skipped files named with a non-zero exit.

use serde_json::Value;

mod common;
mod report_class;
use common::{Env, stderr, stdout};
use report_class as class;

fn report(env: &Env, args: &[&str], dir: &std::path::Path) -> std::process::Output {
    env.kca()
        .arg("report")
        .args(args)
        .arg(dir)
        .output()
        .unwrap()
}

fn json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).expect("one JSON document on stdout")
}

fn row<'a>(rows: &'a Value, key: &str, id: &str) -> &'a Value {
    rows.as_array()
        .unwrap()
        .iter()
        .find(|r| r[key] == id)
        .unwrap_or_else(|| panic!("no {id} in {rows}"))
}

#[test]
fn the_tables_per_learner_task_check_and_question_count_the_class() {
    let env = Env::new();
    let dir = env.home.path().join("results");
    let n = 24;
    class::write(&dir, n);
    let out = report(&env, &["-o", "json"], &dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["files"], (2 * n - 2) as u64);
    assert_eq!(v["learners"].as_array().unwrap().len(), n);
    for i in [0, 1, 2, 7, 12] {
        let l = row(&v["learners"], "learner", &class::learner(i));
        assert_eq!(l["percent"].as_f64(), Some(class::percent(i)), "{i}: {l}");
        assert_eq!(l["quizzes"], u64::from(i >= 2), "{l}");
    }
    let c1 = row(&v["checks"], "id", "kca-gates/c1");
    assert_eq!(c1["failed"], class::count(n, |i| i.is_multiple_of(3)));
    assert_eq!(c1["seen"], n as u64);
    let c3 = row(&v["checks"], "id", "kca-gates/c3");
    assert_eq!(
        (c3["failed"].as_u64(), c3["other"].as_u64()),
        (Some(0), Some(class::count(n, |i| i.is_multiple_of(5))))
    );
    assert_eq!(v["checks"][0]["id"], "kca-gates/c1", "most failed first");
    let q1 = row(&v["questions"], "id", "module-1/q1");
    assert_eq!(
        q1["failed"],
        class::count(n, |i| i >= 2 && i.is_multiple_of(2))
    );
    assert_eq!(q1["concepts"][0], "concept-q1");
    let q2 = row(&v["questions"], "id", "module-1/q2");
    assert_eq!(
        q2["other"],
        class::count(n, |i| i >= 2 && i.is_multiple_of(6))
    );
    let t1 = row(&v["tasks"], "id", "kca-gates/t1");
    assert_eq!(
        t1["complete"],
        class::count(n, |i| !i.is_multiple_of(3) && !i.is_multiple_of(4))
    );
    assert_eq!(
        t1["failed"],
        class::count(n, |i| i.is_multiple_of(3) || i.is_multiple_of(4))
    );
    let bins: u64 = v["scores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["learners"].as_u64().unwrap())
        .sum();
    assert_eq!(bins, n as u64);
    let top = class::count(n, |i| class::percent(i) >= 90.0);
    assert_eq!(v["scores"][9]["learners"], top);
    // The labs carry their own times (three days); the quizzes the files' times.
    let days = v["days"].as_array().unwrap();
    assert!(days.len() >= 3, "{days:?}");
    assert_eq!(days[0]["day"], "2026-12-01");
    assert_eq!(
        days[0]["attempts"],
        class::count(n, |i| i.is_multiple_of(3))
    );

    for lang in ["ja", "en"] {
        let out = env
            .kca()
            .env("COLUMNS", "80")
            .args(["--lang", lang, "report"])
            .arg(&dir)
            .output()
            .unwrap();
        let text = stdout(&out);
        assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
        for line in text.lines() {
            assert!(kca::ui::width(line) <= 80, "wider than 80: {line:?}");
        }
        let heads: &[&str] = if lang == "ja" {
            &[
                "受講者ごと",
                "タスクごと",
                "ラボのチェック",
                "クイズの問題",
                "得点の分布",
                "日ごとの試行",
            ]
        } else {
            &[
                "Learners",
                "Tasks",
                "Lab checks",
                "Quiz questions",
                "Score distribution",
                "Attempts per day",
            ]
        };
        for h in heads {
            assert!(text.lines().any(|l| l == *h), "{lang}: no {h}: {text}");
        }
        let c1 = text
            .lines()
            .find(|l| l.ends_with("kca-gates/c1"))
            .expect(&text);
        assert!(
            c1.contains(&format!("{}/{n}", class::count(n, |i| i.is_multiple_of(3)))),
            "{c1}"
        );
        // Data from files is escaped: no escape sequence reaches the terminal.
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(text.contains("eve\\u{1b}]0;owned\\u{7}"), "{text}");
    }
}

#[test]
fn kca_grade_documents_are_read_and_a_later_attempt_replaces_an_earlier_one() {
    let env = Env::new();
    let dir = env.home.path().join("results");
    std::fs::create_dir_all(&dir).unwrap();
    // `kca grade -o json`: one document, a submission each, one not graded.
    let mut fail = class::lab(3);
    fail["learner"] = "amy".into();
    fail["gradedAt"] = "2026-12-01T10:00:00Z".into();
    let doc = serde_json::json!({"schemaVersion": 1, "lab": class::LAB, "submissions": [
        fail, {"learner": "ben", "submission": "class/ben", "exitCode": 2,
               "error": {"message": "no learner id"}}]});
    std::fs::write(dir.join("class.json"), doc.to_string()).unwrap();
    // Amy's second try, a day later, passes everything.
    let mut pass = class::lab(1);
    pass["learner"] = "amy".into();
    pass["gradedAt"] = "2026-12-02T10:00:00Z".into();
    std::fs::write(dir.join("amy-again.json"), pass.to_string()).unwrap();
    let out = report(&env, &["-o", "json"], &dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    let amy = row(&v["learners"], "learner", "amy");
    assert_eq!(
        (amy["percent"].as_f64(), amy["attempts"].as_u64()),
        (Some(100.0), Some(2))
    );
    assert_eq!(row(&v["learners"], "learner", "ben")["notGraded"], 1);
    assert_eq!(
        row(&v["checks"], "id", "kca-gates/c1")["failed"],
        0,
        "the first try no longer counts"
    );
    let days: Vec<&str> = v["days"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["day"].as_str().unwrap())
        .collect();
    assert!(days.starts_with(&["2026-12-01", "2026-12-02"]), "{days:?}");
}

/// Issue 16: a skipped input was a warning and exit 0. Every skipped file is named
/// (its name escaped), the report exits 2, and `--strict` (or `CI`) refuses.
#[test]
fn every_skipped_file_is_named_and_the_run_fails() {
    let env = Env::new();
    let dir = env.home.path().join("results");
    class::write(&dir, 3);
    std::fs::write(dir.join("trailing.json"), "{\"lab\": \"x\"}\nextra").unwrap();
    std::fs::write(dir.join("other.json"), "{\"kind\": \"Pod\"}").unwrap();
    std::fs::write(dir.join("evil\u{1b}[2J.json"), "[]").unwrap();
    let page = env.home.path().join("page.html");
    let out = env
        .kca()
        .args(["--lang", "en", "report", "--html"])
        .arg(&page)
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    for f in [
        "trailing.json: not JSON",
        "other.json: not a kca result",
        "evil\\u{1b}[2J.json",
    ] {
        assert!(err.contains(f), "{f} not named: {err}");
    }
    assert!(!err.contains('\u{1b}'), "{err}");
    assert!(stdout(&out).contains("3 file(s) could not be read"));
    // The page says so too.
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("data-skipped=\"3\""), "{html}");
    for strict in [vec!["--strict"], vec![]] {
        let mut cmd = env.kca();
        if strict.is_empty() {
            cmd.env("CI", "true");
        }
        let out = cmd
            .args(["--lang", "en", "-o", "json", "report"])
            .args(&strict)
            .arg(&dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let v = json(&out);
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains("3 result file(s)") && msg.contains("other.json"),
            "{msg}"
        );
    }
}

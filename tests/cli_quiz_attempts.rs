//! Quiz attempts as they are kept: resumed after a stop, never replaced by another
//! begun in the same second, never written by grading someone else's answers, and
//! read back safely whatever the progress file holds.

mod common;

use common::{Env, data, stderr, stdout};
use serde_json::Value;

const ALL_RIGHT: &str = "b\na,c\ntrue\nUpdateRequest\n10\nauthn,authz,mutate\n";

fn demo(env: &Env) -> assert_cmd::Command {
    env.kca_in(&data(""))
}

fn saved(env: &Env) -> Value {
    let text = std::fs::read_to_string(env.state_dir().join("quizzes.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn attempts(env: &Env) -> Vec<Value> {
    saved(env)["data"]["quizzes"]["demo"]["attempts"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn grading_someone_elses_answers_leaves_the_graders_progress_alone() {
    let env = Env::new();
    let key = demo(&env).args(["quiz", "key", "demo"]).output().unwrap();
    let file = env.home.path().join("key.yaml");
    std::fs::write(&file, &key.stdout).unwrap();
    let graded = demo(&env)
        .args(["quiz", "grade", "demo", "--answers"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(graded.status.code(), Some(0), "{}", stderr(&graded));
    assert!(
        !env.state_dir().join("quizzes.json").exists(),
        "quiz key + quiz grade wrote the grader's progress"
    );
    let list = demo(&env)
        .args(["-o", "json", "quiz", "list"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert!(v["quizzes"][0]["best"].is_null(), "{v}");
    // Asked to record, it is the grader's own attempt.
    demo(&env)
        .args(["quiz", "grade", "demo", "--record", "--answers"])
        .arg(&file)
        .assert()
        .code(0);
    assert_eq!(attempts(&env).len(), 1);
    assert_eq!(attempts(&env)[0]["passed"], true);
}

#[test]
fn sixty_recorded_grades_from_four_parallel_loops_leave_sixty_attempts() {
    let env = Env::new();
    let pass = env.home.path().join("pass.yaml");
    std::fs::write(&pass, "d-single: b\n").unwrap();
    let fail = env.home.path().join("fail.yaml");
    std::fs::write(&fail, "d-single: a\n").unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let (env, pass, fail) = (&env, &pass, &fail);
            s.spawn(move || {
                for i in 0..15 {
                    let answers = if (t + i) % 2 == 0 { pass } else { fail };
                    demo(env)
                        .args(["quiz", "grade", "demo", "--record", "--answers"])
                        .arg(answers)
                        .output()
                        .unwrap();
                }
            });
        }
    });
    let all = attempts(&env);
    assert_eq!(all.len(), 60);
    let mut ids: Vec<u64> = all.iter().map(|a| a["id"].as_u64().unwrap()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 60, "attempt ids repeat: {ids:?}");
}

#[test]
fn a_pass_then_a_fail_within_one_second_keeps_both() {
    let env = Env::new();
    let pass = env.home.path().join("pass.yaml");
    std::fs::write(&pass, ALL_RIGHT_KEY).unwrap();
    let fail = env.home.path().join("fail.yaml");
    std::fs::write(&fail, "d-single: a\n").unwrap();
    for f in [&pass, &fail] {
        demo(&env)
            .args(["quiz", "grade", "demo", "--record", "--answers"])
            .arg(f)
            .output()
            .unwrap();
    }
    let all = attempts(&env);
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(all[0]["passed"], true);
}

const ALL_RIGHT_KEY: &str = "d-single: b\nd-multi: [a, c]\nd-tf: true\nd-short: UpdateRequest\nd-num: 10\nd-order: [authn, authz, mutate]\n";

#[test]
fn two_runs_started_in_one_second_do_not_overwrite_each_other() {
    let env = Env::new();
    std::thread::scope(|s| {
        for _ in 0..2 {
            let env = &env;
            s.spawn(move || {
                let out = demo(env)
                    .args(["--lang", "en", "quiz", "run", "demo"])
                    .write_stdin(ALL_RIGHT)
                    .output()
                    .unwrap();
                assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
            });
        }
    });
    let all = attempts(&env);
    assert_eq!(all.len(), 2, "{all:?}");
    assert!(
        all.iter()
            .all(|a| a["complete"] == true && a["answered"] == 6)
    );
}

#[test]
fn quitting_then_running_again_goes_on_where_it_stopped() {
    let env = Env::new();
    let first = demo(&env)
        .args(["--lang", "en", "quiz", "run", "demo"])
        .write_stdin("b\na,c\nq\n")
        .output()
        .unwrap();
    assert_eq!(first.status.code(), Some(1));
    let again = demo(&env)
        .args(["--lang", "en", "quiz", "run", "demo"])
        .write_stdin("true\nUpdateRequest\n10\nauthn,authz,mutate\n")
        .output()
        .unwrap();
    let text = stdout(&again);
    assert_eq!(again.status.code(), Some(0), "{text}");
    assert!(
        text.contains("Going on with your last attempt (2 of 6 done)"),
        "{text}"
    );
    assert!(!text.contains("[1/6]"), "asked question 1 again: {text}");
    assert!(text.contains("[3/6]"), "{text}");
    assert!(text.contains("✓ PASSED demo: 7/7"), "{text}");
    let all = attempts(&env);
    assert_eq!(all.len(), 1, "the resumed attempt is the same one: {all:?}");
    assert_eq!(all[0]["complete"], true);
    assert!(all[0].get("resume").is_none(), "{all:?}");
}

#[test]
fn restart_starts_over_and_keeps_the_stopped_attempt_as_partial() {
    let env = Env::new();
    demo(&env)
        .args(["--lang", "en", "quiz", "run", "demo"])
        .write_stdin("b\nq\n")
        .output()
        .unwrap();
    let again = demo(&env)
        .args(["--lang", "en", "quiz", "run", "demo", "--restart"])
        .write_stdin(ALL_RIGHT)
        .output()
        .unwrap();
    let text = stdout(&again);
    assert_eq!(again.status.code(), Some(0), "{text}");
    assert!(
        text.contains("[1/6]") && !text.contains("Going on"),
        "{text}"
    );
    let all = attempts(&env);
    assert_eq!(all.len(), 2);
    assert_eq!(all[0]["complete"], false);
    // Not offered again.
    let third = demo(&env)
        .args(["--lang", "en", "quiz", "run", "demo"])
        .write_stdin("q\n")
        .output()
        .unwrap();
    assert!(!stdout(&third).contains("Going on"), "{}", stdout(&third));
}

#[test]
fn a_skipped_question_does_not_show_its_answer() {
    let env = Env::new();
    let out = demo(&env)
        .args(["--lang", "en", "quiz", "run", "demo"])
        .write_stdin("s\nq\n")
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(text.contains("SKIPPED"), "{text}");
    assert!(!text.contains("Answer:"), "{text}");
    assert!(
        !text.contains("It is Fail."),
        "the explanation gives it away: {text}"
    );
    let rec = &saved(&env)["data"]["quizzes"]["demo"]["questions"]["d-single"];
    assert_eq!(rec["box"], 1, "a skip stays due: {rec}");
}

#[test]
fn progress_fields_out_of_range_are_put_back_with_a_warning() {
    let env = Env::new();
    std::fs::create_dir_all(env.state_dir()).unwrap();
    std::fs::write(
        env.state_dir().join("quizzes.json"),
        r#"{"version":1,"data":{"quizzes":{"demo":{"attempts":[
            {"at":1,"score":1e308,"max":0,"passed":true,"complete":true},
            {"at":2,"score":1e308,"max":7,"passed":false,"complete":true}],
          "questions":{"d-single":{"box":255,"due":0,"seen":1,"correct":1,"last_correct":true},
                       "d-tf":{"box":-3,"due":-1,"seen":-1,"correct":0,"last_correct":false}}}}}}"#,
    )
    .unwrap();
    let list = demo(&env)
        .args(["--lang", "en", "quiz", "list"])
        .output()
        .unwrap();
    let text = stdout(&list);
    assert_eq!(list.status.code(), Some(0), "{text}{}", stderr(&list));
    assert!(stderr(&list).contains("out of range"), "{}", stderr(&list));
    assert!(text.lines().all(|l| l.len() < 200), "{text}");
    assert!(text.contains("7/7"), "{text}");
    let answers = env.home.path().join("a.yaml");
    std::fs::write(&answers, "d-single: b\n").unwrap();
    let graded = demo(&env)
        .args(["quiz", "grade", "demo", "--record", "--answers"])
        .arg(&answers)
        .output()
        .unwrap();
    assert_eq!(graded.status.code(), Some(1), "{}", stderr(&graded));
    assert!(!stderr(&graded).contains("panicked"), "{}", stderr(&graded));
    let rec = &saved(&env)["data"]["quizzes"]["demo"]["questions"];
    assert_eq!(rec["d-single"]["box"], 5, "{rec}");
    assert_eq!(rec["d-tf"]["box"], 1, "{rec}");
}

#[test]
fn an_answer_line_of_megabytes_is_refused_and_asked_again() {
    let env = Env::new();
    let mut input = "x".repeat(20 << 20);
    input.push('\n');
    input.push_str("b\nq\n");
    let out = demo(&env)
        .args(["--lang", "en", "quiz", "run", "demo"])
        .write_stdin(input)
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(
        text.len() < 64 << 10,
        "the long line was echoed: {} bytes",
        text.len()
    );
    assert!(
        text.contains("too long"),
        "{}",
        &text[..text.len().min(2000)]
    );
    assert!(
        text.contains("✓ CORRECT"),
        "{}",
        &text[..text.len().min(2000)]
    );
}

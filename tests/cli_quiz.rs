//! The quiz commands and `kca validate`, run as a learner or an LMS would.

mod common;

use common::{Env, data, stderr, stdout};
use serde_json::Value;

fn demo(env: &Env) -> assert_cmd::Command {
    env.kca_in(&data(""))
}

fn json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(out)))
}

#[test]
fn the_course_content_validates() {
    let env = Env::new();
    let out = env.kca().arg("validate").output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
}

#[test]
fn every_course_quiz_has_enough_questions_and_its_key_scores_full_marks() {
    let env = Env::new();
    let out = env
        .kca()
        .args(["quiz", "list", "--output", "json"])
        .output()
        .unwrap();
    let list = json(&out);
    assert_eq!(list["schemaVersion"], 1, "{list}");
    let quizzes = list["quizzes"].as_array().unwrap();
    assert_eq!(quizzes.len(), 4, "one quiz per course module: {list}");
    for q in quizzes {
        let id = q["id"].as_str().unwrap();
        assert!(
            q["questions"].as_u64().unwrap() >= 12,
            "{id} has too few questions"
        );
        let key = env.kca().args(["quiz", "key", id]).output().unwrap();
        let file = env.home.path().join(format!("{id}.key.yaml"));
        std::fs::write(&file, &key.stdout).unwrap();
        let graded = env
            .kca()
            .args(["quiz", "grade", id, "--output", "json", "--answers"])
            .arg(&file)
            .output()
            .unwrap();
        let report = json(&graded);
        assert_eq!(
            report["score"].as_f64(),
            report["max"].as_f64(),
            "{id}: {report}"
        );
        assert_eq!(graded.status.code(), Some(0));
    }
}

#[test]
fn broken_content_reports_every_problem_with_its_position() {
    let env = Env::new();
    let out = env
        .kca()
        .arg("validate")
        .arg(data("broken"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let text = stderr(&out).replace(&data("").display().to_string(), "[DATA]/");
    insta::assert_snapshot!(text);
}

#[test]
fn validate_never_panics_on_hostile_input() {
    let env = Env::new();
    let dir = env.home.path().join("hostile");
    std::fs::create_dir_all(dir.join("a-directory.yaml")).unwrap();
    std::fs::write(dir.join("empty.yaml"), "").unwrap();
    std::fs::write(dir.join("deep.yaml"), "[".repeat(100_000)).unwrap();
    std::fs::write(
        dir.join("deep-map.yaml"),
        (0..5000)
            .map(|i| format!("{}k:\n", " ".repeat(i)))
            .collect::<String>(),
    )
    .unwrap();
    std::fs::write(dir.join("huge.yaml"), "apiVersion: kca.dev/v1alpha1\nkind: Quiz\nmetadata: {id: x, title: x}\npassMark: 1\nquestions:\n".to_string() + &"  - {id: q, type: short}\n".repeat(20_000)).unwrap();
    std::fs::write(dir.join("scalar.yaml"), "42\n").unwrap();
    let out = env.kca().arg("validate").arg(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    for f in [
        "empty.yaml",
        "deep.yaml",
        "deep-map.yaml",
        "huge.yaml",
        "scalar.yaml",
    ] {
        assert!(err.contains(f), "{f} not reported: {err}");
    }
    // A directory named as a file is a usage problem, not a crash.
    let out = env
        .kca()
        .arg("validate")
        .arg(dir.join("nope.yaml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn grade_prints_json_the_lms_can_read() {
    let env = Env::new();
    let answers = env.home.path().join("a.yaml");
    std::fs::write(&answers, "d-single: a\nd-multi: [a]\nd-tf: true\nd-short: ' ｕｐｄａｔｅｒｅｑｕｅｓｔ '\nd-num: 10\n").unwrap();
    let out = demo(&env)
        .args(["quiz", "grade", "demo", "--output", "json", "--answers"])
        .arg(&answers)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = json(&out);
    assert_eq!(r["quiz"], "demo");
    assert_eq!(r["max"], 7);
    assert_eq!(r["score"], 4.0);
    assert_eq!(r["passed"], true);
    let qs = r["questions"].as_array().unwrap();
    let find = |id: &str| qs.iter().find(|q| q["id"] == id).unwrap().clone();
    assert_eq!(find("d-single")["correct"], false);
    assert_eq!(find("d-multi")["points"], 1.0);
    assert_eq!(find("d-short")["correct"], true);
    assert_eq!(find("d-order")["answered"], false);
}

#[test]
fn grade_below_the_pass_mark_exits_one_and_speaks_junit() {
    let env = Env::new();
    let answers = env.home.path().join("a.yaml");
    std::fs::write(&answers, "d-single: a\n").unwrap();
    let out = demo(&env)
        .args(["quiz", "grade", "demo", "--output", "junit", "--answers"])
        .arg(&answers)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let xml = stdout(&out);
    assert!(
        xml.contains("<testsuite name=\"quiz demo\" tests=\"6\" failures=\"6\""),
        "{xml}"
    );
}

#[test]
fn an_answers_file_naming_unknown_questions_points_at_them() {
    let env = Env::new();
    let answers = env.home.path().join("a.yaml");
    std::fs::write(&answers, "d-single: b\nd-singel: a\nd-tf: [1, 2]\n").unwrap();
    let out = demo(&env)
        .env("LANG", "en_US.UTF-8")
        .args(["quiz", "grade", "demo", "--answers"])
        .arg(&answers)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("a.yaml:2:1: error: quiz `demo` has no question `d-singel`"),
        "{err}"
    );
    assert!(err.contains("did you mean `d-single`?"), "{err}");
    assert!(
        err.contains("a.yaml:3:7: error: `d-tf` is a `true-false` question"),
        "{err}"
    );
}

#[test]
fn piped_run_grades_and_remembers_progress() {
    let env = Env::new();
    // single, multi (a hint first), true-false in Japanese, short full-width, numeric, order by id.
    let input = "b\nh\na,c\nはい\nＵｐｄａｔｅＲｅｑｕｅｓｔ\n１０\nauthn authz mutate\n";
    let out = demo(&env)
        .args(["--lang", "en", "quiz", "run", "demo"])
        .write_stdin(input)
        .output()
        .unwrap();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(text.matches("✓ CORRECT").count(), 6, "{text}");
    assert!(
        text.contains("No more hints.") || text.contains("hint"),
        "{text}"
    );
    assert!(text.contains("✓ PASSED demo: 7/7 (100%)"), "{text}");
    let list = demo(&env)
        .args(["quiz", "list", "--output", "json"])
        .output()
        .unwrap();
    let l = &json(&list)["quizzes"];
    assert_eq!(l[0]["best"]["percent"], 100.0);
    assert_eq!(l[0]["lastAttempt"]["passed"], true);
}

#[test]
fn wrong_answers_show_feedback_and_the_right_answer() {
    let env = Env::new();
    let out = demo(&env)
        .args(["--lang", "en", "quiz", "run", "demo"])
        .write_stdin("a\nq\n")
        .output()
        .unwrap();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(text.contains("✗ INCORRECT"), "{text}");
    assert!(text.contains("No, that is the opposite"), "{text}");
    assert!(text.contains("Answer: b) Fail"), "{text}");
    assert!(text.contains("Why: It is Fail."), "{text}");
    assert!(text.contains("Stopped early"), "{text}");
}

#[test]
fn review_asks_missed_questions_first_and_nothing_when_all_known() {
    let env = Env::new();
    // Miss d-single and d-tf, get the rest right.
    let input = "a\na,c\nfalse\nUpdateRequest\n10\nauthn,authz,mutate\n";
    let run = demo(&env)
        .args(["--lang", "en", "quiz", "run", "demo"])
        .write_stdin(input)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", stdout(&run));
    let review = demo(&env)
        .args(["--lang", "en", "quiz", "review"])
        .write_stdin("b\ntrue\n")
        .output()
        .unwrap();
    let text = stdout(&review);
    assert_eq!(review.status.code(), Some(0), "{text}");
    let first = text.find("Default failurePolicy?").expect(&text);
    let second = text.find("validate sees the mutated object").expect(&text);
    assert!(first < second);
    assert!(
        !text.contains("Which are true?"),
        "known questions wait: {text}"
    );
    assert!(text.contains("Review: 2/2"), "{text}");
    let again = demo(&env)
        .args(["--lang", "en", "quiz", "review"])
        .output()
        .unwrap();
    assert!(
        stdout(&again).contains("Nothing is due for review. Next one due: tomorrow"),
        "{}",
        stdout(&again)
    );
}

#[test]
fn a_corrupt_progress_file_is_kept_aside_with_a_warning() {
    let env = Env::new();
    std::fs::create_dir_all(env.state_dir()).unwrap();
    std::fs::write(env.state_dir().join("quizzes.json"), "garbage").unwrap();
    let out = demo(&env).args(["quiz", "list"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("警告:"), "{}", stderr(&out));
    let kept = std::fs::read_dir(env.state_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("quizzes.json.corrupt-")
        });
    assert!(kept);
}

#[test]
fn unknown_quiz_suggests_the_closest() {
    let env = Env::new();
    let out = demo(&env).args(["quiz", "run", "dmeo"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("`demo` のことですか?"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn shuffle_with_a_seed_is_repeatable() {
    let env = Env::new();
    let run = || {
        stdout(
            &demo(&env)
                .args([
                    "--lang",
                    "en",
                    "quiz",
                    "run",
                    "demo",
                    "--shuffle",
                    "--seed",
                    "7",
                ])
                .write_stdin("q\n")
                .output()
                .unwrap(),
        )
    };
    assert_eq!(run(), run());
}

/// A state folder that cannot be written (read-only HOME, a CI container). A path under
/// a regular file cannot be created even by root, so the test holds in containers too.
fn read_only_state(env: &Env) -> std::path::PathBuf {
    let blocker = env.home.path().join("not-a-folder");
    std::fs::write(&blocker, "").unwrap();
    blocker
}

#[test]
fn grade_with_an_unwritable_state_folder_prints_the_result_and_keeps_the_exit_code() {
    let env = Env::new();
    let ro = read_only_state(&env);
    let answers = env.home.path().join("a.yaml");
    std::fs::write(&answers, "d-single: a\n").unwrap();
    let out = demo(&env)
        .env("XDG_STATE_HOME", ro.join("state"))
        .args([
            "--lang",
            "en",
            "quiz",
            "grade",
            "demo",
            "--record",
            "--answers",
        ])
        .arg(&answers)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(stdout(&out).contains("NOT PASSED demo"), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("progress was not saved"), "{err}");
    assert!(err.contains("XDG_STATE_HOME="), "{err}");
}

#[test]
fn run_with_an_unwritable_state_folder_still_scores() {
    let env = Env::new();
    let ro = read_only_state(&env);
    let out = demo(&env)
        .env("XDG_STATE_HOME", ro.join("state"))
        .args(["--lang", "en", "quiz", "run", "demo"])
        .write_stdin("b\na,c\ntrue\nUpdateRequest\n10\nauthn,authz,mutate\n")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(
        stdout(&out).contains("✓ PASSED demo: 7/7"),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains("progress was not saved"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_skipped_question_is_due_in_review_even_after_quitting() {
    let env = Env::new();
    let run = demo(&env)
        .args(["--lang", "en", "quiz", "run", "demo"])
        .write_stdin("s\nq\n")
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1), "{}", stdout(&run));
    let review = demo(&env)
        .args(["--lang", "en", "quiz", "review"])
        .write_stdin("b\n")
        .output()
        .unwrap();
    let text = stdout(&review);
    assert!(text.contains("Default failurePolicy?"), "{text}");
}

#[test]
fn a_partial_attempt_is_recorded_and_shown_as_partial() {
    let env = Env::new();
    demo(&env)
        .args(["--lang", "en", "quiz", "run", "demo"])
        .write_stdin("b\nq\n")
        .output()
        .unwrap();
    let list = demo(&env)
        .args(["quiz", "list", "--output", "json"])
        .output()
        .unwrap();
    let l = &json(&list)["quizzes"][0];
    assert_eq!(l["lastAttempt"]["complete"], false, "{l}");
    assert_eq!(l["lastAttempt"]["answered"], 1, "{l}");
    assert!(l["best"].is_null(), "a partial attempt is not a best: {l}");
    let text = demo(&env)
        .args(["--lang", "en", "quiz", "list"])
        .output()
        .unwrap();
    assert!(stdout(&text).contains("partial"), "{}", stdout(&text));
}

#[test]
fn japanese_feedback_is_wrapped_to_the_terminal_and_says_hai_iie() {
    let env = Env::new();
    let out = demo(&env)
        .env("COLUMNS", "40")
        .args(["--lang", "ja", "quiz", "run", "demo"])
        .write_stdin("b\na,c\nいいえ\nq\n")
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(text.contains("正解: はい"), "{text}");
    assert!(!text.contains("正解: true"), "{text}");
    assert!(
        !text.contains("NOT PASSED"),
        "no English verdict in Japanese: {text}"
    );
    for line in text.lines() {
        assert!(
            textwrap::core::display_width(line) <= 40,
            "wider than 40 columns: {line:?}"
        );
    }
}

#[test]
fn quiz_list_aligns_japanese_columns_by_display_width() {
    let env = Env::new();
    let out = demo(&env)
        .args(["--lang", "ja", "quiz", "list"])
        .output()
        .unwrap();
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    let col = |l: &str, what: &str| textwrap::core::display_width(&l[..l.find(what).unwrap()]);
    assert_eq!(col(lines[0], "タイトル"), col(lines[1], "デモ"), "{text}");
}

#[test]
fn ctrl_c_in_a_run_keeps_what_was_answered_and_says_so() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let env = Env::new();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("kca"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.home.path())
        .env("XDG_STATE_HOME", env.home.path().join("state"))
        .env("KCA_CONTENT_DIR", data(""))
        .args(["--color", "never", "--lang", "en", "quiz", "run", "demo"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"b\n").unwrap();
    stdin.flush().unwrap();
    // Wait until the first answer is graded and the second question is asked.
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("[2/6]") {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            panic!("kca ended early: {seen}");
        }
        seen.push_str(&line);
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let done = child.wait_with_output().unwrap();
    let err = stderr(&done);
    assert_eq!(done.status.code(), Some(130), "{err}");
    assert!(
        err.contains("Interrupted. The 1 answer(s) you gave are saved"),
        "{err}"
    );
    drop(stdin);
    let saved = std::fs::read_to_string(env.state_dir().join("quizzes.json")).unwrap();
    let v: Value = serde_json::from_str(&saved).unwrap();
    let rec = &v["data"]["quizzes"]["demo"];
    assert_eq!(rec["questions"]["d-single"]["last_correct"], true, "{v}");
    assert_eq!(rec["attempts"][0]["complete"], false, "{v}");
}

#[test]
fn grade_junit_has_a_case_per_question_with_the_feedback_as_message() {
    let env = Env::new();
    let answers = env.home.path().join("a.yaml");
    std::fs::write(&answers, "d-single: a\nd-tf: true\n").unwrap();
    let out = demo(&env)
        .args([
            "--lang",
            "en",
            "-o",
            "junit",
            "quiz",
            "grade",
            "demo",
            "--answers",
        ])
        .arg(&answers)
        .output()
        .unwrap();
    let xml = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{xml}");
    assert_eq!(xml.matches("<testcase").count(), 6, "{xml}");
    assert!(
        xml.contains("<failure message=\"No, that is the opposite\"/>"),
        "{xml}"
    );
    assert!(
        xml.contains("<system-out>It is Fail.</system-out>"),
        "{xml}"
    );
    assert!(xml.contains("<failure message=\"not answered\"/>"), "{xml}");
}

#[test]
fn under_json_an_error_is_a_json_object_on_stdout_with_the_same_exit_code() {
    let env = Env::new();
    let out = demo(&env)
        .args(["-o", "json", "quiz", "run", "nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let v = json(&out);
    assert_eq!(v["schemaVersion"], 1, "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("nope"),
        "{v}"
    );
    assert_eq!(v["error"]["exitCode"], 2);
}

#[test]
fn report_reads_many_learners_results_and_prints_failure_rates() {
    let env = Env::new();
    let results = env.home.path().join("results");
    std::fs::create_dir_all(&results).unwrap();
    for (who, answers) in [
        ("alice", "d-single: a\n"),
        ("bob", "d-single: b\n"),
        ("carol", "d-single: a\n"),
    ] {
        let file = env.home.path().join(format!("{who}.yaml"));
        std::fs::write(&file, answers).unwrap();
        let out = demo(&env)
            .args(["-o", "json", "quiz", "grade", "demo", "--answers"])
            .arg(&file)
            .output()
            .unwrap();
        std::fs::write(results.join(format!("{who}.json")), &out.stdout).unwrap();
    }
    let out = demo(&env)
        .args(["--lang", "en", "report"])
        .arg(&results)
        .output()
        .unwrap();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("3 result file(s)"), "{text}");
    let line = text
        .lines()
        .find(|l| l.contains("demo/d-single"))
        .expect(&text);
    assert!(line.starts_with("66.7%") && line.contains("2/3"), "{line}");
    let json_out = demo(&env)
        .args(["-o", "json", "report"])
        .arg(&results)
        .output()
        .unwrap();
    let v = json(&json_out);
    assert_eq!(v["schemaVersion"], 1);
    assert_eq!(v["questions"][0]["id"], "demo/d-single", "{v}");
}

#[test]
fn an_explanation_points_at_its_lesson_section() {
    let env = Env::new();
    let out = demo(&env)
        .args(["--lang", "en", "quiz", "run", "demo"])
        .write_stdin("b\na,c\nfalse\nq\n")
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(
        text.contains("→ kca lesson 1#mutate-first  §Mutation comes before validation"),
        "{text}"
    );
}

#[test]
fn validate_finds_a_lesson_link_to_a_missing_section() {
    let env = Env::new();
    let content = env.home.path().join("content");
    std::fs::create_dir_all(content.join("quizzes")).unwrap();
    std::fs::create_dir_all(content.join("labs")).unwrap();
    let demo_text = std::fs::read_to_string(data("quizzes/demo.yaml")).unwrap();
    std::fs::write(
        content.join("quizzes/demo.yaml"),
        demo_text.replace("module-1#mutate-first", "module-1#no-such-section"),
    )
    .unwrap();
    let lessons = content.join("lessons/module-1");
    std::fs::create_dir_all(&lessons).unwrap();
    for f in ["ja.md", "en.md"] {
        std::fs::copy(data("lessons/module-1").join(f), lessons.join(f)).unwrap();
    }
    // The quiz lint reports it (as a warning for authors, as it does all link problems).
    let out = env.kca_in(&content).arg("validate").output().unwrap();
    let err = stderr(&out);
    assert!(err.contains("demo.yaml:"), "{err}");
    assert!(err.contains("{#no-such-section}"), "{err}");
}

#[test]
fn every_json_document_starts_with_a_schema_version() {
    let env = Env::new();
    for args in [
        &["quiz", "list"][..],
        &["quiz", "key", "demo"],
        &["quiz", "review"],
        &["status"],
    ] {
        let out = demo(&env)
            .arg("-o")
            .arg("json")
            .args(args)
            .output()
            .unwrap();
        let v = json(&out);
        assert_eq!(v["schemaVersion"], 1, "{args:?}: {v}");
        assert!(v.is_object(), "{args:?}");
    }
}

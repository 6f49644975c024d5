//! kca under hostile files (issue #11): whatever a learner's workspace, a lab folder, an
//! answers file or a progress file holds, kca neither follows it outside where it should
//! read, nor blocks on it, nor prints its control characters. Each case is generated here
//! and must finish within a few seconds.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Env, data, repo, running, stderr, stdout};

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// A content folder with the test lab, and a workspace root.
fn lab_env() -> (Env, PathBuf) {
    let env = Env::new();
    let content = env.home.path().join("content");
    copy_dir(&repo().join("tests/testlab"), &content.join("labs/testlab"));
    std::fs::create_dir_all(content.join("quizzes")).unwrap();
    (env, content)
}

fn lab_kca(env: &Env, content: &Path) -> assert_cmd::Command {
    let mut c = env.kca_in(content);
    c.env("KCA_WORKSPACE_ROOT", env.home.path().join("work"))
        .args(["--lang", "en"])
        .timeout(Duration::from_secs(20));
    c
}

fn ws(env: &Env) -> PathBuf {
    env.home.path().join("work/testlab")
}

#[test]
fn lab_check_neither_follows_links_out_of_the_workspace_nor_blocks_on_a_fifo() {
    let (env, content) = lab_env();
    lab_kca(&env, &content)
        .args(["lab", "start", "testlab", "--offline"])
        .assert()
        .success();
    let secret = env.home.path().join("secret.yaml");
    std::fs::write(
        &secret,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: SECRET-NAME-xyz}\ndata: {mode: strict}\n",
    )
    .unwrap();
    std::fs::remove_file(ws(&env).join("app.yaml")).unwrap();
    std::os::unix::fs::symlink(&secret, ws(&env).join("app.yaml")).unwrap();
    mkfifo(&ws(&env).join("pipe.yaml"));
    let start = Instant::now();
    let out = lab_kca(&env, &content)
        .args(["lab", "check", "--task", "config"])
        .output()
        .unwrap();
    assert!(start.elapsed() < Duration::from_secs(10));
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(!text.contains("SECRET-NAME-xyz"), "{text}");
    assert!(text.contains("leads outside the workspace"), "{text}");
}

#[test]
fn a_file_name_cannot_forge_a_pass_line_or_clear_the_screen() {
    let (env, content) = lab_env();
    lab_kca(&env, &content)
        .args(["lab", "start", "testlab", "--offline"])
        .assert()
        .success();
    let evil = "x\n\u{1b}[2J\u{1b}[H  ✓ PASS  config-file (file)  1\u{2215}1\n.yaml";
    std::fs::write(ws(&env).join(evil), "a: [\n").unwrap();
    let out = lab_kca(&env, &content)
        .args(["lab", "check"])
        .output()
        .unwrap();
    let text = stdout(&out) + &stderr(&out);
    assert!(!text.contains('\u{1b}'), "{text}");
    assert!(
        !text
            .lines()
            .any(|l| l.trim_start().starts_with("✓ PASS  config-file")),
        "{text}"
    );
}

#[test]
fn lab_start_refuses_a_dangling_link_at_a_starter_path() {
    let (env, content) = lab_env();
    std::fs::create_dir_all(ws(&env)).unwrap();
    let target = env.home.path().join("outside.yaml");
    std::os::unix::fs::symlink(&target, ws(&env).join("app.yaml")).unwrap();
    let out = lab_kca(&env, &content)
        .args(["lab", "start", "testlab", "--offline"])
        .output()
        .unwrap();
    assert!(!target.exists(), "lab start wrote through the link");
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("leads outside the workspace"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn validate_refuses_links_in_lab_content_and_runaway_templates() {
    let (env, content) = lab_env();
    let lab = content.join("labs/testlab");
    std::fs::remove_file(lab.join("starter/README.md")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", lab.join("starter/README.md")).unwrap();
    let out = lab_kca(&env, &content).arg("validate").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let all = stdout(&out) + &stderr(&out);
    assert!(all.contains("is a symbolic link (to /etc/passwd)"), "{all}");

    for template in [
        "{{ get_env(name=\"HOME\") }}",
        "{% for i in range(end=300000000) %}x{% endfor %}",
        "{% for a in range(end=10000) %}{% for b in range(end=10000) %}x{% endfor %}{% endfor %}",
    ] {
        std::fs::remove_file(lab.join("starter/README.md")).unwrap();
        std::fs::write(lab.join("starter/README.md"), template).unwrap();
        let start = Instant::now();
        let out = lab_kca(&env, &content).arg("validate").output().unwrap();
        assert!(start.elapsed() < Duration::from_secs(10), "{template}");
        assert_eq!(out.status.code(), Some(2), "{template}: {}", stdout(&out));
        let all = stdout(&out) + &stderr(&out);
        assert!(all.contains("does not render"), "{all}");
        if template.contains("get_env") {
            assert!(all.contains("`get_env` is not available"), "{all}");
        }
    }
}

#[test]
fn quiz_grade_does_not_block_on_a_fifo_answers_file_or_progress_file() {
    let env = Env::new();
    let fifo = env.home.path().join("answers.yaml");
    mkfifo(&fifo);
    let start = Instant::now();
    let out = env
        .kca_in(&data(""))
        .args(["quiz", "grade", "demo", "--answers"])
        .arg(&fifo)
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("名前付きパイプ"), "{}", stderr(&out));

    let answers = env.home.path().join("a.yaml");
    std::fs::write(&answers, "d-single: b\n").unwrap();
    std::fs::create_dir_all(env.state_dir()).unwrap();
    mkfifo(&env.state_dir().join("quizzes.json"));
    let out = env
        .kca_in(&data(""))
        .args(["quiz", "grade", "demo", "--record", "--answers"])
        .arg(&answers)
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    assert!(
        stderr(&out).contains("named pipe (FIFO)"),
        "{}",
        stderr(&out)
    );
    assert!(out.status.code() == Some(0) || out.status.code() == Some(1));
}

#[test]
fn can_i_refuses_dev_zero_instead_of_reading_it_forever() {
    let env = Env::new();
    let out = env
        .kca()
        .args([
            "auth",
            "can-i",
            "get",
            "pods",
            "--as",
            "x",
            "-f",
            "/dev/zero",
        ])
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("デバイス"), "{}", stderr(&out));
}

#[test]
fn lab_show_lists_the_programs_a_lab_runs() {
    let (env, content) = lab_env();
    let out = lab_kca(&env, &content)
        .args(["lab", "show", "testlab"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Programs this lab runs"), "{text}");
    assert!(text.contains("script/script-ok: bash check.sh"), "{text}");
    assert!(text.contains("A lab is code"), "{text}");
}

#[test]
fn ctrl_c_during_lab_check_ends_the_command_checks_programs_too() {
    // A command check runs in a process group of its own, which the terminal's Ctrl-C does
    // not reach; kca must end it (and what it started) when it is interrupted itself.
    let (env, content) = lab_env();
    lab_kca(&env, &content)
        .args(["lab", "start", "testlab", "--offline"])
        .assert()
        .success();
    let pid_file = ws(&env).join("sleeper.pid");
    std::fs::write(
        ws(&env).join("check.sh"),
        "sleep 1007 &\necho $! > sleeper.pid\nwait\n",
    )
    .unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("kca"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.home.path())
        .env("XDG_STATE_HOME", env.home.path().join("state"))
        .env("KCA_CONTENT_DIR", &content)
        .env("KCA_WORKSPACE_ROOT", env.home.path().join("work"))
        .args([
            "--lang",
            "en",
            "lab",
            "check",
            "--offline",
            "--task",
            "script",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let sleeper: i32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the check never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    // SAFETY: signals the kca process this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let status = child.wait().unwrap();
    assert!(!status.success(), "{status:?}");
    let gone = Instant::now();
    while running(sleeper) {
        if gone.elapsed() > Duration::from_secs(5) {
            // SAFETY: tidies up the process this test caused.
            unsafe {
                libc::kill(sleeper, libc::SIGKILL);
            }
            panic!("the check's `sleep` {sleeper} outlived the interrupted kca");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The number in `error: N problem(s) in content`.
fn problems_counted(err: &str) -> usize {
    err.lines()
        .find_map(|l| {
            l.strip_prefix("error: ")?
                .strip_suffix(" problem(s) in content")
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_seven_mb_one_line_quiz_gets_windows_of_its_line_not_the_line() {
    // `kca validate` wrote 1.46 GB to stderr at 3.5 GB RSS: every problem echoed the
    // whole (minified JSON) line.
    let env = Env::new();
    let q = |i: usize| {
        format!(
            r#"{{"id":"q{i}","type":"single","prompt":"Which one?","explanation":"e","choices":[{{"id":"a","text":"alpha"}},{{"id":"b","text":"beta"}}],"answer":"a","bogus":{i}}}"#
        )
    };
    let questions: Vec<String> = (0..46_000).map(q).collect();
    let text = format!(
        r#"{{"apiVersion":"kca.dev/v1alpha1","kind":"Quiz","metadata":{{"id":"big","title":"t","module":1}},"passMark":50,"questions":[{}]}}"#,
        questions.join(",")
    );
    assert!(text.len() > 7_000_000 && !text.contains('\n'));
    let file = env.home.path().join("big.yaml");
    std::fs::write(&file, &text).unwrap();
    let out = env
        .kca()
        .args(["--lang", "en", "validate"])
        .arg(&file)
        .output()
        .unwrap();
    let err = refused_in_windows(&out);
    // Every problem is counted, the ones left out too.
    assert!(err.contains("more problem(s) not shown"), "{err}");
    assert!(
        problems_counted(&err) >= 46_000,
        "{}",
        &err[err.len() - 500..]
    );
}

#[test]
fn a_two_mb_one_line_answers_file_gets_windows_of_its_line() {
    // `quiz grade` wrote 407 MB to stderr for it.
    let env = Env::new();
    let answers: Vec<String> = (0..50_000)
        .map(|i| format!(r#""nope{i}":"{}""#, "x".repeat(30)))
        .collect();
    let file = env.home.path().join("answers.json");
    std::fs::write(&file, format!("{{{}}}", answers.join(","))).unwrap();
    let out = env
        .kca()
        .args(["--lang", "en", "quiz", "grade", "module-1", "--answers"])
        .arg(&file)
        .output()
        .unwrap();
    let err = refused_in_windows(&out);
    assert!(err.contains("has no question `nope0`"), "{}", &err[..2000]);
    assert!(
        problems_counted(&err) >= 50_000,
        "{}",
        &err[err.len() - 500..]
    );
}

#[test]
fn left_out_warnings_are_counted_and_never_hide_an_error() {
    // "… and 2800 more problem(s) not shown" sat under "✓ OK … valid", exit 0; the count
    // of warnings left out the ones not shown.
    let env = Env::new();
    let q = |i: usize| {
        format!(
            r#"{{"id":"q{i}","type":"single","prompt":"Which one?","explanation":"e","hints":["it is alpha beta gamma"],"choices":[{{"id":"a","text":"alpha beta gamma"}},{{"id":"b","text":"delta"}},{{"id":"c","text":"epsilon"}}],"answer":"a"}}"#
        )
    };
    let quiz = |qs: Vec<String>| {
        format!(
            r#"{{"apiVersion":"kca.dev/v1alpha1","kind":"Quiz","metadata":{{"id":"warny","title":"t","module":1}},"passMark":50,"questions":[{}]}}"#,
            qs.join(",")
        )
    };
    let file = env.home.path().join("warny.yaml");
    std::fs::write(&file, quiz((0..400).map(q).collect())).unwrap();
    let out = env
        .kca()
        .args(["--lang", "en", "validate"])
        .arg(&file)
        .output()
        .unwrap();
    let (text, err) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("more warning(s) not shown"), "{err}");
    let warnings = err
        .lines()
        .filter(|l| l.contains(": warning: ") && !l.contains("… and "))
        .count();
    let hidden: usize = err
        .split("… and ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(
        text.contains(&format!(
            "{} warning(s) for authors ({hidden} not shown above)",
            warnings + hidden
        )),
        "{text}"
    );
    // Errors past the cap make the file invalid.
    let qs: Vec<String> = (0..400)
        .map(|i| q(i).replace(r#""answer":"a""#, r#""answer":"a","bogus":1"#))
        .collect();
    std::fs::write(&file, quiz(qs)).unwrap();
    let out = env
        .kca()
        .args(["--lang", "en", "validate"])
        .arg(&file)
        .output()
        .unwrap();
    let (text, err) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(2), "{text}{err}");
    assert!(!text.contains("valid"), "{text}");
    assert!(err.contains("of them errors"), "{err}");
}

#[test]
fn lab_reset_refuses_a_folder_a_forged_progress_file_names() {
    // Reset emptied whatever folder the progress file named as the workspace.
    let (env, content) = lab_env();
    lab_kca(&env, &content)
        .args(["lab", "start", "testlab", "--offline"])
        .assert()
        .success();
    let labs = env.home.path().join("state/kca/labs.json");
    for forged in [
        env.home.path().join("documents"),
        env.home.path().join("documents/testlab"),
    ] {
        std::fs::create_dir_all(&forged).unwrap();
        std::fs::write(forged.join("thesis.txt"), "three years of work\n").unwrap();
        let mut doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&labs).unwrap()).unwrap();
        doc["data"]["labs"]["testlab"]["workspace"] = forged.to_string_lossy().into();
        std::fs::write(&labs, doc.to_string()).unwrap();
        let out = lab_kca(&env, &content)
            .args(["lab", "reset", "testlab", "--offline"])
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("will not reset"), "{err}");
        assert!(err.contains("hint:"), "{err}");
        assert_eq!(
            std::fs::read_to_string(forged.join("thesis.txt")).unwrap(),
            "three years of work\n"
        );
        assert!(
            !forged.join("app.yaml").exists(),
            "the starter was written there"
        );
    }
}

/// A refused run (exit 2) whose stderr shows windows of a long line, never the line:
/// bounded in all and per line. Returns stderr.
fn refused_in_windows(out: &std::process::Output) -> String {
    let err = stderr(out);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        &err[..err.len().min(2000)]
    );
    assert!(err.len() < 200_000, "{} bytes of stderr", err.len());
    assert!(
        err.lines().all(|l| l.chars().count() < 400),
        "a line is echoed whole"
    );
    err
}

#[test]
fn hint_and_check_counts_out_of_range_in_lab_progress_are_put_back_not_a_panic() {
    // A hint count past the task's hints (an edited record, or hints removed from the lab
    // after they were shown) indexed past them: `lab hint` panicked (exit 101); a sum of
    // huge counts overflowed in `lab status`.
    let (env, content) = lab_env();
    lab_kca(&env, &content)
        .args(["lab", "start", "testlab", "--offline"])
        .assert()
        .success();
    let labs = env.state_dir().join("labs.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&labs).unwrap()).unwrap();
    doc["data"]["labs"]["testlab"]["hints"] = serde_json::json!({"config": 7, "script": u64::MAX});
    doc["data"]["labs"]["testlab"]["checks"] = serde_json::json!({"config-file": {
        "task": "config", "verdict": "pass", "earned": 4_000_000_000u32,
        "points": 4_000_000_000u32, "at": "2026-01-01T00:00:00Z", "target": "offline"}});
    std::fs::write(&labs, doc.to_string()).unwrap();
    let out = lab_kca(&env, &content)
        .args(["lab", "hint", "--task", "config"])
        .output()
        .unwrap();
    let (text, err) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{text}{err}");
    assert!(text.contains("hint 2/2"), "{text}");
    for args in [&["lab", "status"][..], &["lab", "list"], &["status"]] {
        let out = lab_kca(&env, &content).args(args).output().unwrap();
        let (text, err) = (stdout(&out), stderr(&out));
        assert_eq!(out.status.code(), Some(0), "{args:?}: {text}{err}");
        assert!(!text.contains("4000000000"), "{args:?}: {text}");
    }
}

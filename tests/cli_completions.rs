//! The completion scripts through the real binary: each is printed, parses, and asks
//! `kca __complete line` for ids, which comes back with the course's labs, quizzes and
//! tasks (the positions themselves are unit-tested in src/completions_tests.rs).

mod common;
use common::{Env, repo, stdout};

#[test]
fn complete_lists_the_courses_ids() {
    let env = Env::new();
    let labs = stdout(&env.kca().args(["__complete", "labs"]).output().unwrap());
    let ids: Vec<&str> = labs.lines().collect();
    assert!(
        ids.contains(&"kca-mutate") && ids.contains(&"kca-gates"),
        "{labs}"
    );
    let line = stdout(
        &env.kca()
            .args(["__complete", "line", "--", "quiz", "run", "module-"])
            .output()
            .unwrap(),
    );
    assert!(
        line.lines().all(|l| l.starts_with("module-")) && line.lines().count() >= 4,
        "{line}"
    );
    let tasks = stdout(
        &env.kca()
            .args([
                "__complete",
                "line",
                "--",
                "lab",
                "check",
                "kca-mutate",
                "--task",
                "",
            ])
            .output()
            .unwrap(),
    );
    assert!(tasks.lines().count() >= 3, "{tasks}");
    let lesson = stdout(
        &env.kca()
            .args(["__complete", "line", "--", "lesson", "1#"])
            .output()
            .unwrap(),
    );
    assert!(lesson.lines().any(|l| l == "1#request-path"), "{lesson}");
    let json = env
        .kca()
        .args(["-o", "json", "__complete", "labs", "kca-m"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["candidates"], serde_json::json!(["kca-mutate"]));
}

fn bash() -> bool {
    let ok = std::process::Command::new("bash")
        .arg("--version")
        .output()
        .is_ok();
    if !ok {
        eprintln!("skipped: bash is not installed");
    }
    ok
}

/// What bash does on <TAB> after `kca lab start kca-m`: the hook asks kca and offers
/// kca-mutate; after `kca lab st` clap's static part offers the subcommands.
#[test]
fn bash_completes_lab_ids_and_commands() {
    if !bash() {
        return;
    }
    let env = Env::new();
    let script = stdout(&env.kca().args(["completions", "bash"]).output().unwrap());
    let bin = assert_cmd::cargo::cargo_bin("kca");
    let file = env.home.path().join("kca.bash");
    std::fs::write(&file, script).unwrap();
    let complete = |words: &str, cword: usize| -> String {
        let program = format!(
            "source {}\nexport KCA_CONTENT_DIR={}\nPATH={}:$PATH; COMP_WORDS=(kca {words}); COMP_CWORD={cword}; COMP_LINE=\"kca {words}\"; COMP_POINT=${{#COMP_LINE}}\n_kca_dynamic kca; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            file.display(),
            repo().display(),
            bin.parent().unwrap().display()
        );
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(program)
            .env("HOME", env.home.path())
            .env("XDG_STATE_HOME", env.home.path().join("state"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout(&out)
    };
    assert_eq!(complete("lab start kca-m", 3), "kca-mutate\n");
    let subs = complete("lab st", 2);
    assert!(
        subs.lines().any(|l| l == "start") && subs.lines().any(|l| l == "status"),
        "{subs}"
    );
}

#[test]
fn completions_under_json_are_one_document() {
    let env = Env::new();
    for shell in ["bash", "zsh", "fish"] {
        let out = env
            .kca()
            .args(["completions", shell, "-o", "json"])
            .output()
            .unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["shell"], shell);
        assert!(doc["script"].as_str().unwrap().contains("__complete line"));
    }
}

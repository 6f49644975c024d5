//! kca bounded on every path a learner's or a class's files reach (issue #18): limits on
//! threads and processes, memory per workspace byte, values an expression makes, what a
//! run's files may hold. Each case is generated here and finishes within a few seconds.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{Env, repo, stderr, stdout};

/// A content folder with the test lab, started offline; returns it and the workspace.
fn started_lab(env: &Env) -> (PathBuf, PathBuf) {
    let content = env.home.path().join("content");
    std::fs::create_dir_all(content.join("labs")).unwrap();
    std::fs::create_dir_all(content.join("quizzes")).unwrap();
    let copied = Command::new("cp")
        .arg("-r")
        .arg(repo().join("tests/testlab"))
        .arg(content.join("labs/testlab"))
        .status()
        .unwrap();
    assert!(copied.success());
    lab_kca(env, &content)
        .args(["lab", "start", "testlab", "--offline"])
        .assert()
        .success();
    (content, env.home.path().join("work/testlab"))
}

fn lab_kca(env: &Env, content: &Path) -> assert_cmd::Command {
    let mut c = env.kca_in(content);
    c.env("KCA_WORKSPACE_ROOT", env.home.path().join("work"))
        .args(["--lang", "en"])
        .timeout(Duration::from_secs(30));
    c
}

/// `kca ARGS` as the user nobody with at most `threads` threads and processes
/// (RLIMIT_NPROC counts per user, so a fresh user is needed); `None` when this machine
/// cannot do that (not root, or no setpriv/prlimit).
fn kca_with_thread_limit(
    env: &Env,
    content: &Path,
    threads: u32,
    args: &[&str],
) -> Option<std::process::Output> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let tools = ["setpriv", "prlimit"].iter().all(|t| {
        Command::new(t)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if !tools {
        return None;
    }
    // nobody must be able to read the lab and write the state.
    let opened = Command::new("chmod")
        .args(["-R", "a+rwX"])
        .arg(env.home.path())
        .status()
        .unwrap();
    assert!(opened.success());
    // The limit counts every process of the user, so two tests running under it at once
    // would take each other's threads: one at a time.
    static NOBODY: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _alone = NOBODY.lock().unwrap_or_else(|p| p.into_inner());
    let home = env.home.path();
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "prlimit",
        ])
        .arg(format!("--nproc={threads}"))
        .arg("--")
        .arg(assert_cmd::cargo::cargo_bin("kca"))
        .args(["--color", "never", "--lang", "en"])
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_STATE_HOME", home.join("state"))
        .env("KUBECONFIG", home.join("no-kubeconfig"))
        .env("KCA_CONTENT_DIR", content)
        .env("KCA_WORKSPACE_ROOT", home.join("work"))
        .env("LANG", "C.UTF-8")
        .current_dir(home)
        .output()
        .unwrap();
    Some(out)
}

#[test]
fn lab_check_under_a_thread_limit_gives_error_verdicts_not_a_panic() {
    // Every check had a thread of its own, started with `scope.spawn`, which panics when
    // no thread can be had: `lab check` ended with exit 101 and left programs running.
    let env = Env::new();
    let (content, _ws) = started_lab(&env);
    // One thread (kca's own) cannot even render the lab's README template: that is an
    // error of the command. With two or three, some checks have no thread or no process.
    for threads in [2, 3] {
        let Some(out) = kca_with_thread_limit(
            &env,
            &content,
            threads,
            &["lab", "check", "--offline", "--all"],
        ) else {
            println!("skipped: needs root, setpriv and prlimit to run kca under a thread limit");
            return;
        };
        let (text, err) = (stdout(&out), stderr(&out));
        assert_ne!(out.status.code(), Some(101), "{text}{err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(text.contains("script-ok"), "{text}{err}");
        if threads == 2 {
            assert!(
                text.contains("could not start a thread") || text.contains("cannot run"),
                "{text}{err}"
            );
        }
    }
}

#[test]
fn grade_under_a_thread_limit_grades_every_submission_without_a_panic() {
    // `kca grade` started its workers with `scope.spawn`, which panics when no thread
    // can be had (exit 101, no result for anyone).
    let env = Env::new();
    let (content, ws) = started_lab(&env);
    let subs = env.home.path().join("subs");
    for who in ["ann", "bob", "cy"] {
        common::copy_dir(&ws, &subs.join(who));
    }
    let subs = subs.to_string_lossy().into_owned();
    for threads in [2, 3] {
        let args = ["grade", "testlab", "--submissions", &subs, "-o", "json"];
        let Some(out) = kca_with_thread_limit(&env, &content, threads, &args) else {
            println!("skipped: needs root, setpriv and prlimit to run kca under a thread limit");
            return;
        };
        let (text, err) = (stdout(&out), stderr(&out));
        assert_ne!(out.status.code(), Some(101), "{text}{err}");
        assert!(!err.contains("panicked"), "{err}");
        let doc: serde_json::Value = serde_json::from_str(&text).expect("one JSON document");
        let graded = doc["submissions"].as_array().map_or(0, Vec::len);
        assert_eq!(graded, 3, "threads={threads}: {text:.2000}");
    }
}

/// A ClusterPolicy whose precondition makes `expr` of a Pod.
fn policy_with(expr: &str) -> String {
    format!(
        "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {{name: hostile}}\nspec:\n  \
         validationFailureAction: Enforce\n  rules:\n  - name: r\n    match: {{any: [{{resources: \
         {{kinds: [Pod]}}}}]}}\n    validate:\n      message: m\n      deny:\n        conditions:\n  \
         \x20       any:\n          - key: \"{{{{ {expr} }}}}\"\n            operator: Equals\n            \
         value: 1\n"
    )
}

#[test]
fn policy_apply_stops_an_expression_that_doubles_its_object_with_an_error() {
    // `to_string` and `==` walked the shared doublings whole: 1.6 GB and exit 134, or a
    // minute and more.
    let env = Env::new();
    let doubled = |n| format!("request.object{}", " | [@, @]".repeat(n));
    let pod = env.home.path().join("pod.yaml");
    std::fs::write(
        &pod,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec:\n  containers: [{name: c, image: busybox}]\n",
    )
    .unwrap();
    for expr in [
        format!("length(to_string({}))", doubled(30)),
        format!("({}) == ({})", doubled(34), doubled(34)),
    ] {
        let file = env.home.path().join("policy.yaml");
        std::fs::write(&file, policy_with(&expr)).unwrap();
        let started = std::time::Instant::now();
        let out = env
            .kca()
            .args(["--lang", "en", "policy", "apply"])
            .arg(&file)
            .arg("--resource")
            .arg(&pod)
            .timeout(Duration::from_secs(30))
            .output()
            .unwrap();
        let (text, err) = (stdout(&out), stderr(&out));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        assert!(out.status.code().is_some_and(|c| c < 100), "{text}{err}");
        assert!(text.contains("kca stops it there"), "{text}{err}");
    }
}

/// Every check of a `lab check -o json` document: (id, verdict, detail).
fn checks_of(doc: &str) -> Vec<(String, String, String)> {
    let doc: serde_json::Value = serde_json::from_str(doc).unwrap_or_else(|e| panic!("{e}: {doc}"));
    let s = |c: &serde_json::Value, k: &str| c[k].as_str().unwrap_or_default().to_string();
    doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["checks"].as_array().unwrap().clone())
        .map(|c| (s(&c, "id"), s(&c, "verdict"), s(&c, "detail")))
        .collect()
}

#[test]
fn six_big_workspace_files_end_in_an_error_naming_the_file_that_went_over() {
    // Six 8 MB files spent the run's YAML budget, then parsing kca's own baseline RBAC
    // failed an `expect()` (exit 101); with the budget apart, the checks were `fail`
    // verdicts with the problem appended. A workspace's files now have a total of their
    // own: the file that goes over is named in an `error`, and nothing after it is read.
    let env = Env::new();
    let (content, ws) = started_lab(&env);
    let big = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: big}}\ndata:\n  blob: {}\n",
        "x".repeat(8_000_000)
    );
    for i in 0..6 {
        std::fs::write(ws.join(format!("big-{i}.yaml")), &big).unwrap();
    }
    let started = std::time::Instant::now();
    let out = lab_kca(&env, &content)
        .args([
            "-o",
            "json",
            "lab",
            "check",
            "testlab",
            "--offline",
            "--all",
        ])
        .output()
        .unwrap();
    let (text, err) = (stdout(&out), stderr(&out));
    assert!(out.status.code().is_some_and(|c| c < 100), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let checks = checks_of(&text);
    let cluster: Vec<_> = checks
        .iter()
        .filter(|(id, ..)| {
            ["config-resource", "reader-can-get", "no-team-denied"].contains(&id.as_str())
        })
        .collect();
    assert_eq!(cluster.len(), 3, "{checks:?}");
    for (id, verdict, detail) in cluster {
        assert_eq!(verdict, "error", "{id}: {detail}");
        // Four files fit in 32 MiB; the fifth, in the order they are read, goes over.
        assert!(detail.contains("`big-4.yaml`"), "{id}: {detail}");
        assert!(!detail.contains("big-5.yaml"), "{id}: {detail}");
    }
    // Checks that read one file or run a program are graded as usual.
    let file = checks.iter().find(|(id, ..)| id == "config-file").unwrap();
    assert_eq!(file.1, "fail", "{file:?}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

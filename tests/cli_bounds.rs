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
        let Some(out) =
            kca_with_thread_limit(&env, &content, threads, &["lab", "check", "--offline"])
        else {
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

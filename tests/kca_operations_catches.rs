//! `kca policy grader catches` (kca-operations' catches-* checks): the learner's tests must
//! pass on the real policy and fail on each broken copy, read in the policy's place (a link
//! to the policy is swapped too, as in a copied workspace), and the workspace is left as it was.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

const BROKEN: [&str; 3] = ["optional-anchor", "any-value", "container-only"];
const POLICY: &str = "policies/require-run-as-non-root.yaml";
const TEST: &str = "tests/kyverno-test.yaml";

fn lab_dir() -> PathBuf {
    common::repo().join("labs/kca-operations")
}

/// The solution's workspace in a temp folder.
fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    common::copy_dir(&lab_dir().join("solution"), ws.path());
    ws
}

fn catches(ws: &Path, broken: &str) -> Output {
    let copy = lab_dir().join(format!("graders/broken/{broken}.yaml"));
    std::process::Command::new(assert_cmd::cargo::cargo_bin("kca"))
        .args([
            "--color", "never", "--lang", "en", "policy", "grader", "catches",
        ])
        .arg(copy)
        .current_dir(ws)
        .env("KCA_LANG", "en")
        .output()
        .unwrap()
}

fn edit(ws: &Path, path: &str, find: &str, replace: &str) {
    let p = ws.join(path);
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains(find), "{path} holds {find:?}");
    std::fs::write(p, text.replace(find, replace)).unwrap();
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn the_solutions_tests_catch_every_broken_copy_and_the_policy_is_untouched() {
    let ws = workspace();
    let before = std::fs::read(ws.path().join(POLICY)).unwrap();
    for b in BROKEN {
        let o = catches(ws.path(), b);
        assert_eq!(o.status.code(), Some(0), "{b}: {}", text(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains(&format!("caught the broken copy {b}.yaml")),
            "{out}"
        );
        assert!(
            out.contains("FAIL"),
            "the row that caught it is shown: {out}"
        );
    }
    assert_eq!(std::fs::read(ws.path().join(POLICY)).unwrap(), before);
}

#[test]
fn tests_on_a_copy_of_the_policy_catch_nothing_but_a_link_to_it_is_swapped() {
    let ws = workspace();
    std::fs::copy(
        ws.path().join(POLICY),
        ws.path().join("tests/policy-copy.yaml"),
    )
    .unwrap();
    edit(
        ws.path(),
        TEST,
        "../policies/require-run-as-non-root.yaml",
        "policy-copy.yaml",
    );
    for b in BROKEN {
        let o = catches(ws.path(), b);
        assert_eq!(o.status.code(), Some(1), "{b}: {}", text(&o));
        assert!(
            text(&o).contains("still pass on a broken copy"),
            "{}",
            text(&o)
        );
    }
    std::fs::remove_file(ws.path().join("tests/policy-copy.yaml")).unwrap();
    std::os::unix::fs::symlink(
        "../policies/require-run-as-non-root.yaml",
        ws.path().join("tests/policy-copy.yaml"),
    )
    .unwrap();
    for b in BROKEN {
        let o = catches(ws.path(), b);
        assert_eq!(o.status.code(), Some(0), "{b}: {}", text(&o));
    }
}

/// Exit 1, saying the tests do not pass on the real policy.
fn refused_on_the_real_policy(ws: &Path) {
    let o = catches(ws, BROKEN[0]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("do not pass on the real policy"), "{t}");
}

#[test]
fn tests_that_fail_on_the_real_policy_or_run_nothing_catch_nothing() {
    let ws = workspace();
    edit(ws.path(), TEST, "result: pass", "result: fail");
    refused_on_the_real_policy(ws.path());

    let ws = workspace();
    std::fs::remove_file(ws.path().join(POLICY)).unwrap();
    refused_on_the_real_policy(ws.path());

    let ws = workspace();
    std::fs::remove_dir_all(ws.path().join("tests")).unwrap();
    refused_on_the_real_policy(ws.path());
}

#[test]
fn a_test_that_selects_only_a_passing_row_catches_only_what_it_tries() {
    // Only the Pod that must pass: the too strict copy is caught, the lax ones are not.
    let ws = workspace();
    let test = std::fs::read_to_string(ws.path().join(TEST)).unwrap();
    let kept: String = test
        .split("\n  - ")
        .filter(|part| !part.contains("result: fail"))
        .collect::<Vec<_>>()
        .join("\n  - ");
    std::fs::write(ws.path().join(TEST), kept).unwrap();
    let o = catches(ws.path(), "container-only");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = catches(ws.path(), "any-value");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}

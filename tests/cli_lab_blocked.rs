//! `kca lab check --offline`: a workspace file that cannot be read blocks only the checks
//! that may read it (issue #19). Hermetic: temp HOME, XDG state and workspace root, no
//! kubeconfig; the course's kca-admission lab.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

mod common;
use common::{copy_dir, repo};

/// The content folder: the course's own, or (`every_yaml`) a copy of kca-admission without
/// its `workspace.apply`, so that every YAML file of the workspace is applied.
fn content(tmp: &Path) -> PathBuf {
    let mine = tmp.join("content");
    if mine.exists() { mine } else { repo() }
}

fn every_yaml_applied(tmp: &Path) {
    let to = tmp.join("content/labs/kca-admission");
    copy_dir(&repo().join("labs/kca-admission"), &to);
    std::fs::create_dir_all(tmp.join("content/quizzes")).unwrap();
    let lab = std::fs::read_to_string(to.join("lab.yaml")).unwrap();
    let without = lab.replace("workspace:\n  apply: [policies]\n", "");
    assert_ne!(lab, without, "kca-admission applies policies/ only");
    std::fs::write(to.join("lab.yaml"), without).unwrap();
}

fn kca(tmp: &Path, lang: &str) -> Command {
    let mut c = Command::cargo_bin("kca").unwrap();
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", tmp.join("home"))
        .env("XDG_STATE_HOME", tmp.join("state"))
        .env("KCA_WORKSPACE_ROOT", tmp.join("work"))
        .env("KUBECONFIG", tmp.join("no-such-kubeconfig"))
        .args(["--color", "never", "--lang", lang, "--content-dir"])
        .arg(content(tmp));
    c
}

/// The started kca-admission workspace.
fn started(tmp: &Path) -> PathBuf {
    kca(tmp, "en")
        .args(["lab", "start", "kca-admission", "--offline"])
        .assert()
        .success();
    tmp.join("work/kca-admission")
}

/// Each check's id → (verdict, detail kind, detail text) of `lab check -o json`.
fn verdicts(tmp: &Path) -> Vec<(String, String, String, String)> {
    let out = kca(tmp, "en")
        .args(["-o", "json", "lab", "check", "kca-admission"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)));
    let s = |c: &Value, k: &str| c[k].as_str().unwrap_or_default().to_string();
    v["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["checks"].as_array().unwrap())
        .map(|c| {
            (
                s(c, "id"),
                s(c, "verdict"),
                s(c, "detailKind"),
                s(c, "detail"),
            )
        })
        .collect()
}

/// Asserts that check `c` is not judged, pointing at the file problem of `path`.
fn blocked_on(c: &(String, String, String, String), path: &str) {
    assert_eq!((c.1.as_str(), c.2.as_str()), ("error", "blocked"), "{c:?}");
    assert!(c.3.contains(path), "{path}: {c:?}");
}

fn of<'a>(
    all: &'a [(String, String, String, String)],
    id: &str,
) -> &'a (String, String, String, String) {
    all.iter()
        .find(|c| c.0 == id)
        .unwrap_or_else(|| panic!("no check {id}: {all:?}"))
}

#[test]
fn a_broken_observation_file_leaves_the_policy_checks_graded() {
    let tmp = tempfile::tempdir().unwrap();
    broken_observation(tmp.path());
}

/// The record is not applied even where the lab applies every YAML file of the workspace:
/// it is the learner's notes for the `observed` check.
#[test]
fn a_broken_observation_file_is_no_object_file_where_every_yaml_file_is_applied() {
    let tmp = tempfile::tempdir().unwrap();
    every_yaml_applied(tmp.path());
    broken_observation(tmp.path());
    // Another broken file beside it may hold objects: then the checks on the cluster wait.
    let ws = tmp.path().join("work/kca-admission");
    std::fs::write(ws.join("notes.yaml"), "kind: [\n").unwrap();
    let all = verdicts(tmp.path());
    let c = of(&all, "cp-denies");
    blocked_on(c, "notes.yaml");
    assert!(!c.3.contains("observation.yaml"), "{c:?}");
}

fn broken_observation(tmp: &Path) {
    let ws = started(tmp);
    std::fs::write(ws.join("observation.yaml"), "deniedPath: [\n").unwrap();
    let all = verdicts(tmp);
    // The check that reads the record is not judged, pointing at the file.
    blocked_on(of(&all, "observed-denial"), "observation.yaml");
    // Every other check is judged: the record holds no object of the cluster.
    let blocked: Vec<_> = all
        .iter()
        .filter(|c| c.2 == "blocked")
        .map(|c| &c.0)
        .collect();
    assert_eq!(blocked, vec!["observed-denial"], "{all:?}");
    for id in [
        "cp-denies",
        "cp-allows",
        "vap-denies",
        "vpol-allows",
        "proxied-allowed",
    ] {
        assert_eq!(of(&all, id).1, "fail", "{id}: {all:?}");
    }
    // The one file problem is shown once.
    let out = kca(tmp, "en")
        .args(["lab", "check", "kca-admission", "--task", "sidecar-limits"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("observation.yaml:1:13").count(), 1, "{text}");
}

#[test]
fn a_broken_policy_file_blocks_the_checks_on_the_cluster_not_the_observation_on_the_starter() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = started(tmp.path());
    // observed-denial reads the denial the starter's inject-proxy.yaml causes, never the
    // learner's copy of that file.
    std::fs::write(ws.join("policies/inject-proxy.yaml"), "kind: [\n").unwrap();
    let all = verdicts(tmp.path());
    let obs = of(&all, "observed-denial");
    assert_eq!(obs.1, "fail", "graded: {obs:?}");
    assert_ne!(obs.2, "blocked", "{obs:?}");
    // The file check on the broken file says what is wrong with it.
    assert_eq!(of(&all, "proxy-file").1, "fail", "{all:?}");
    // A check on the cluster may want an object of the broken file: not judged.
    for id in ["proxied-allowed", "cp-denies", "vap-denies"] {
        blocked_on(of(&all, id), "policies/inject-proxy.yaml");
    }
    // A file check on another file is graded as before.
    assert_eq!(of(&all, "cp-file").2, "fileDiffers", "{all:?}");

    // A broken file the observation does read (another policy) blocks it too.
    std::fs::copy(
        repo().join("labs/kca-admission/starter/policies/inject-proxy.yaml"),
        ws.join("policies/inject-proxy.yaml"),
    )
    .unwrap();
    std::fs::write(ws.join("policies/require-limits.yaml"), "kind: [\n").unwrap();
    let all = verdicts(tmp.path());
    blocked_on(of(&all, "observed-denial"), "policies/require-limits.yaml");
    assert_eq!(of(&all, "proxy-file").2, "fileDiffers", "{all:?}");
}

//! The course labs grade right-but-different answers as right: a variant of the solution
//! that a Kyverno 1.19 cluster accepts and enforces the same way must pass the same checks.

use std::path::Path;

use kca::content::{Document, load_file};
use kca::lab::check::Verdict;
use kca::lab::workspace::{Stage, materialize};

fn lab(id: &str) -> kca::content::lab::Lab {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("labs")
        .join(id)
        .join("lab.yaml");
    match load_file(&path) {
        Ok(Document::Lab(l)) => *l,
        other => panic!("{id} does not load: {other:?}"),
    }
}

/// Lays out the solution, lets `edit` change it, and grades one task offline.
fn grade_variant(id: &str, task: &str, edit: impl Fn(&Path)) -> Vec<(String, Verdict, String)> {
    let lab = lab(id);
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join(&lab.workspace_name);
    materialize(&lab, Stage::Solution, &ws).unwrap();
    edit(&ws);
    kca::lab::grade::offline(&lab, &ws, &[task.to_string()])
        .unwrap()
        .into_iter()
        .map(|r| (r.id, r.verdict, r.detail.to_string()))
        .collect()
}

#[test]
fn spec_level_validation_failure_action_is_graded_as_enforce() {
    let results = grade_variant("kca-admission", "cluster-policy", |ws| {
        let f = ws.join("policies/require-limits.yaml");
        let text = std::fs::read_to_string(&f).unwrap();
        let moved = text
            .replace("        failureAction: Enforce\n", "")
            .replace(
                "spec:\n  rules:",
                "spec:\n  validationFailureAction: Enforce\n  rules:",
            );
        assert_ne!(moved, text);
        std::fs::write(&f, moved).unwrap();
    });
    for (id, v, detail) in &results {
        assert_eq!(*v, Verdict::Pass, "{id}: {detail}");
    }
    assert!(results.len() >= 5, "{results:?}");
}

#[test]
fn spec_level_audit_is_not_enforce() {
    let results = grade_variant("kca-admission", "cluster-policy", |ws| {
        let f = ws.join("policies/require-limits.yaml");
        let text = std::fs::read_to_string(&f).unwrap();
        let moved = text
            .replace("        failureAction: Enforce\n", "")
            .replace(
                "spec:\n  rules:",
                "spec:\n  validationFailureAction: Audit\n  rules:",
            );
        std::fs::write(&f, moved).unwrap();
    });
    let v = |id: &str| results.iter().find(|r| r.0 == id).unwrap().1;
    assert_eq!(v("cp-file"), Verdict::Fail);
    assert_eq!(v("cp-denies"), Verdict::Fail);
}

#[test]
fn a_validating_policy_denies_offline_by_its_own_actions() {
    let results = grade_variant("kca-admission", "vpol", |_| {});
    for (id, v, detail) in &results {
        assert_eq!(*v, Verdict::Pass, "{id}: {detail}");
    }
}

#[test]
fn a_refused_policy_stays_refused_when_its_file_is_applied_again_after_a_setup() {
    // verify grades mutants after every setup, with the files applied again afterwards.
    let v = kca::lab::verify::verify(&lab("kca-mutate")).unwrap();
    let m = v
        .mutants
        .iter()
        .find(|m| m.name == "mutant sync-without-update-delete")
        .unwrap();
    assert!(
        m.failed.contains(&"netpol-generated".to_string()),
        "a policy Kyverno refuses generates nothing: {m:?}"
    );
}

#[test]
fn every_course_lab_verifies_offline() {
    for id in ["kca-mutate", "kca-admission"] {
        let v = kca::lab::verify::verify(&lab(id)).unwrap();
        let bad: Vec<_> = v.stages().filter(|s| !s.ok).collect();
        assert!(bad.is_empty(), "{id}: {bad:?}");
    }
}

#[test]
fn after_the_incident_setup_the_policy_stays_and_its_update_request_fails() {
    // Live, a policy admitted before its grant went away stays in the cluster; generation
    // then fails in the background controller. Offline must say the same.
    let lab = lab("kca-mutate");
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join(&lab.workspace_name);
    materialize(&lab, Stage::Solution, &ws).unwrap();
    let task = lab.task("lost-grant").unwrap();
    let staged = [kca::lab::setup::Staged { task, at: None }];
    let results =
        kca::lab::grade::offline_staged(&lab, &ws, &["lost-grant".to_string()], &staged).unwrap();
    let r = results
        .iter()
        .find(|r| r.id == "netpol-generated-again")
        .unwrap();
    assert_eq!(r.verdict, Verdict::Fail, "{}", r.detail);
    assert!(r.detail.contains("UpdateRequest failed"), "{}", r.detail);
    assert!(!r.detail.contains("not in the cluster"), "{}", r.detail);
}

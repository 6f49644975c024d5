//! `kca grade` over a class made of each course lab's own stages: the solution and every
//! listed mutant laid out as `lab verify` lays them out (`lab::workspace::materialize`),
//! one submission folder each. A handed-in folder is the learner's final state — the
//! lab's incidents happened and the files answer them — so the solution must pass every
//! check it can judge offline and each mutant must fail the checks it names, as
//! `lab verify` says they do. (A submission graded as if its incident had just happened
//! lost the points of the grant it had already restored.)

mod common;

use kca::content::Document;
use kca::lab::workspace::{Stage, materialize};
use serde_json::Value;

fn lab(id: &str) -> kca::content::lab::Lab {
    let path = common::repo().join("labs").join(id).join("lab.yaml");
    match kca::content::load_file(&path) {
        Ok(Document::Lab(l)) => *l,
        other => panic!("{}: not a lab: {other:?}", path.display()),
    }
}

/// Each graded check of a submission: id → verdict.
fn verdicts(sub: &Value) -> Vec<(String, String)> {
    sub["tasks"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| t["checks"].as_array().into_iter().flatten())
        .map(|c| {
            (
                c["id"].as_str().unwrap_or_default().to_string(),
                c["verdict"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn grade_class(id: &str) {
    let lab = lab(id);
    let class = tempfile::tempdir().unwrap();
    let stages: Vec<(String, Stage<'_>)> =
        std::iter::once(("solution".to_string(), Stage::Solution))
            .chain(
                lab.mutants
                    .iter()
                    .map(|m| (format!("mutant-{}", m.id), Stage::Mutant(m))),
            )
            .collect();
    for (name, stage) in &stages {
        materialize(&lab, *stage, &class.path().join(name)).unwrap();
    }
    let env = common::Env::new();
    let out = env
        .kca()
        .args(["grade", id, "--submissions"])
        .arg(class.path())
        .args(["-o", "json", "--lang", "en"])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{id}: stdout is not one JSON document ({e}): {}",
            common::stderr(&out)
        )
    });
    let subs = doc["submissions"].as_array().expect("submissions");
    assert_eq!(subs.len(), stages.len(), "{id}: one result per submission");
    for sub in subs {
        let name = sub["learner"].as_str().unwrap_or_default();
        let got = verdicts(sub);
        assert!(!got.is_empty(), "{id}/{name}: no checks graded: {sub}");
        if name == "solution" {
            let bad: Vec<_> = got
                .iter()
                .filter(|(_, v)| v != "pass" && v != "skipped")
                .collect();
            assert!(
                bad.is_empty(),
                "{id}: the solution, handed in, does not pass: {bad:?}"
            );
            assert!(got.iter().any(|(_, v)| v == "pass"), "{id}: nothing passed");
        } else {
            let m = lab
                .mutants
                .iter()
                .find(|m| format!("mutant-{}", m.id) == name)
                .unwrap_or_else(|| panic!("{id}: unknown submission {name}"));
            for want in &m.fails {
                let v = got.iter().find(|(c, _)| c == want).map(|(_, v)| v.as_str());
                assert_eq!(v, Some("fail"), "{id}/{name}: check {want} should fail");
            }
            assert_ne!(
                sub["exitCode"], 0,
                "{id}/{name}: a wrong answer passed the class grade"
            );
        }
    }
}

#[test]
fn a_handed_in_solution_passes_and_each_mutant_fails_what_it_names_kca_mutate() {
    // The lab with an incident (a `revoke` the learner answers by re-applying rbac.yaml).
    grade_class("kca-mutate");
}

#[test]
fn a_handed_in_solution_passes_and_each_mutant_fails_what_it_names_kca_admission() {
    grade_class("kca-admission");
}

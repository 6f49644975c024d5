//! Unit tests of which checks a workspace file that cannot be read blocks (`Offline::load`,
//! `Offline::with_problems`).

use super::*;

pub(super) fn admission_lab() -> Lab {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("labs/kca-admission/lab.yaml");
    let Ok(crate::content::Document::Lab(lab)) = crate::content::load_file(&path) else {
        panic!("labs/kca-admission/lab.yaml loads");
    };
    *lab
}

pub(super) fn check_of<'a>(lab: &'a Lab, id: &str) -> &'a Check {
    lab.tasks
        .iter()
        .flat_map(|t| &t.checks)
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no check {id}"))
}

fn broken(path: &str) -> workspace::FileProblem {
    workspace::FileProblem {
        path: path.into(),
        lines: vec![format!("{path}:1:7: bad")],
    }
}

fn failing() -> Outcome {
    Outcome::fail(Detail::FileEmpty { path: "x".into() })
}

#[test]
fn a_broken_record_file_is_not_an_object_file() {
    let lab = admission_lab();
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join("policies")).unwrap();
    std::fs::write(ws.path().join("observation.yaml"), "deniedPath: [\n").unwrap();
    let off = Offline::load(&lab, ws.path()).unwrap();
    assert!(off.problems.is_empty(), "{:?}", off.problems);
    // The same on a file that may hold objects: it blocks the set.
    std::fs::write(ws.path().join("policies/extra.yaml"), "kind: [\n").unwrap();
    let off = Offline::load(&lab, ws.path()).unwrap();
    let paths: Vec<_> = off.problems.iter().map(|p| p.path.clone()).collect();
    assert_eq!(paths, vec![std::path::PathBuf::from("policies/extra.yaml")]);
}

#[test]
fn a_broken_object_file_blocks_failing_checks_on_the_set_only() {
    let lab = admission_lab();
    let off = Offline::new(Vec::new(), vec![broken("policies/require-limits.yaml")]);
    for id in ["cp-allows", "cp-denies", "observed-denial"] {
        let o = off.with_problems(check_of(&lab, id), failing());
        assert_eq!(o.verdict, check::Verdict::Error, "{id}: {o:?}");
        assert_eq!(
            o.detail.file_problems(),
            vec!["policies/require-limits.yaml:1:7: bad".to_string()],
            "{id}"
        );
    }
    // A verdict other than a failure stands.
    let passed = Outcome::pass(Detail::FileEmpty { path: "x".into() });
    let o = off.with_problems(check_of(&lab, "cp-allows"), passed);
    assert_eq!(o.verdict, check::Verdict::Pass);
}

#[test]
fn an_observed_denial_on_the_starters_file_is_not_blocked_by_the_learners() {
    let lab = admission_lab();
    let observed = check_of(&lab, "observed-denial");
    let Spec::Observed {
        source: crate::content::lab::ObservedSource::Denial { starter, .. },
        ..
    } = &observed.spec
    else {
        panic!("observed-denial is a denial");
    };
    assert!(starter.iter().any(|s| s == "policies/inject-proxy.yaml"));
    let off = Offline::new(Vec::new(), vec![broken("policies/inject-proxy.yaml")]);
    assert_eq!(
        off.with_problems(observed, failing()).verdict,
        check::Verdict::Fail
    );
    // The checks that read the learner's version are blocked.
    assert_eq!(
        off.with_problems(check_of(&lab, "proxied-allowed"), failing())
            .verdict,
        check::Verdict::Error
    );
    // Another broken file beside it still blocks the observation.
    let off = Offline::new(
        Vec::new(),
        vec![broken("policies/inject-proxy.yaml"), broken("rbac.yaml")],
    );
    let o = off.with_problems(observed, failing());
    assert_eq!(
        o.detail.file_problems(),
        vec!["rbac.yaml:1:7: bad".to_string()]
    );
}

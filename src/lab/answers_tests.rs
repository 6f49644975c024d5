//! Right answers an instructor would accept, graded offline on the course's labs: each
//! must pass the checks it touches (issue 20: one-entry `all`, `matchExpressions`, a JSON
//! Patch as a JSON array or with quoted paths, a grant of another name and either
//! UpdateRequest state after the incident).

use std::path::Path;

use crate::content::lab::Lab;
use crate::content::{Document, load_file};
use crate::lab::check::Verdict;

fn lab(id: &str) -> Lab {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("labs")
        .join(id)
        .join("lab.yaml");
    match load_file(&p) {
        Ok(Document::Lab(l)) => *l,
        _ => panic!("{id} loads"),
    }
}

/// The solution laid out in a scratch workspace, with `edits` (path, find, replace).
fn workspace(lab: &Lab, edits: &[(&str, &str, &str)]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for (section, files) in [("starter", &lab.starter), ("solution", &lab.solution)] {
        for f in files.iter().filter(|f| !f.template) {
            let to = tmp.path().join(&f.path);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(lab.source(section, &f.path), &to).unwrap();
        }
    }
    for (path, find, replace) in edits {
        let p = tmp.path().join(path);
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains(find), "{path} holds {find:?}");
        std::fs::write(&p, text.replacen(find, replace, 1)).unwrap();
    }
    tmp
}

fn passes(lab: &Lab, ws: &Path, checks: &[&str], staged: &[crate::lab::setup::Staged<'_>]) {
    let results = crate::lab::grade::offline_staged(lab, ws, &[], staged).unwrap();
    for id in checks {
        let r = results.iter().find(|r| r.id == *id).unwrap();
        assert_eq!(r.verdict, Verdict::Pass, "{id}: {}", r.detail);
    }
}

#[test]
fn admission_right_answers_in_other_spellings_pass() {
    let l = lab("kca-admission");
    let ws = workspace(
        &l,
        &[
            (
                "policies/require-limits.yaml",
                "        any:\n",
                "        all:\n",
            ),
            (
                "policies/require-limits-vap.yaml",
                "      matchLabels:\n        kubernetes.io/metadata.name: kca-admission-vap\n",
                "      matchExpressions:\n        - {key: kubernetes.io/metadata.name, operator: In, values: [kca-admission-vap]}\n",
            ),
        ],
    );
    passes(
        &l,
        ws.path(),
        &[
            "cp-file",
            "cp-denies",
            "cp-leaves-other-namespaces",
            "vap-binding",
            "vap-denies",
            "vap-leaves-other-namespaces",
            "observed-denial",
        ],
        &[],
    );
}

/// Where a VAP applies may be said on the policy (`matchConstraints.namespaceSelector`)
/// as well as on its binding: the same scope, the same points.
#[test]
fn a_vap_scoped_on_the_policy_instead_of_the_binding_passes() {
    let l = lab("kca-admission");
    let ws = workspace(
        &l,
        &[
            (
                "policies/require-limits-vap.yaml",
                "  matchConstraints:\n    resourceRules:",
                "  matchConstraints:\n    namespaceSelector:\n      matchLabels:\n        kubernetes.io/metadata.name: kca-admission-vap\n    resourceRules:",
            ),
            (
                "policies/require-limits-vap.yaml",
                "  matchResources:\n    namespaceSelector:\n      matchLabels:\n        kubernetes.io/metadata.name: kca-admission-vap\n",
                "",
            ),
        ],
    );
    passes(
        &l,
        ws.path(),
        &[
            "vap-binding",
            "vap-denies",
            "vap-leaves-other-namespaces",
            "vap-allows",
        ],
        &[],
    );
}

#[test]
fn a_json_patch_as_a_json_array_or_with_quoted_paths_passes() {
    let l = lab("kca-mutate");
    for replace in [
        "patchesJson6902: '[{\"op\": \"add\", \"path\": \"/metadata/annotations/kca.io~1owner\", \"value\": \"platform-team\"}]'",
        "patchesJson6902: |-\n          - op: add\n            path: '/metadata/annotations/kca.io~1owner'\n            value: \"platform-team\"",
    ] {
        let ws = workspace(
            &l,
            &[(
                "policies/owner-annotation.yaml",
                "patchesJson6902: |-\n          - op: add\n            path: /metadata/annotations/kca.io~1owner\n            value: platform-team",
                replace,
            )],
        );
        passes(
            &l,
            ws.path(),
            &[
                "owner-policy-file",
                "owner-annotated",
                "owner-leaves-other-namespaces",
            ],
            &[],
        );
    }
}

#[test]
fn the_incident_hits_a_grant_of_any_name_and_either_state_is_accepted() {
    let l = lab("kca-mutate");
    let incident = l.task("lost-grant").unwrap();
    for state in ["Failed", "Pending"] {
        let ws = workspace(
            &l,
            &[
                (
                    "rbac.yaml",
                    "  name: kca-mutate-generator",
                    "  name: my-own-grant",
                ),
                (
                    "incident.yaml",
                    "updateRequestState: Failed",
                    &format!("updateRequestState: {state}"),
                ),
            ],
        );
        // Right after the setup: the grant is gone, so the task fails where it should…
        let now = [crate::lab::setup::Staged {
            task: incident,
            at: None,
        }];
        let r = crate::lab::grade::offline_staged(&l, ws.path(), &[], &now).unwrap();
        let restored = r.iter().find(|r| r.id == "grant-restored").unwrap();
        assert_eq!(restored.verdict, Verdict::Fail, "{}", restored.detail);
        passes(&l, ws.path(), &["incident-recorded"], &now);
    }
}

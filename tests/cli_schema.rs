//! `kca schema lab|quiz` prints the committed schema files; `kca lab new` writes the
//! `$schema` line and the schemas it names, and scaffolds a lab `lab verify` proves.

mod common;
use common::{Env, copy_dir, repo, stdout};

#[test]
fn kca_schema_prints_the_committed_files_and_one_document_under_json() {
    let env = Env::new();
    for kind in ["lab", "quiz"] {
        let out = env.kca().args(["schema", kind]).output().unwrap();
        assert!(out.status.success());
        let committed =
            std::fs::read_to_string(repo().join(format!("schemas/{kind}.schema.json"))).unwrap();
        assert_eq!(
            stdout(&out),
            committed,
            "schemas/{kind}.schema.json is stale: run `kca schema {kind}`"
        );
        let v: serde_json::Value = serde_json::from_str(&committed).unwrap();
        assert_eq!(v["$schema"], "http://json-schema.org/draft-07/schema#");
        let json = env
            .kca()
            .args(["schema", kind, "-o", "json"])
            .output()
            .unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        assert_eq!(doc["schemaVersion"], 1);
        assert_eq!(doc["schema"], v);
    }
    let bad = env.kca().args(["schema", "lesson"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

/// The bug of issue 16: `kca lab new my-lab && kca lab verify --offline my-lab` said
/// NOT VERIFIED (the generate rule was refused: the background controller may not create
/// ConfigMaps until the lab grants it).
#[test]
fn a_new_lab_in_a_course_verifies_offline_as_written() {
    let env = Env::new();
    let course = env.home.path().join("course");
    copy_dir(&repo().join("kind-config"), &course.join("kind-config"));
    std::fs::create_dir_all(course.join("labs")).unwrap();
    let new = env
        .kca_in(&course)
        .args(["lab", "new", "my-lab"])
        .output()
        .unwrap();
    assert!(new.status.success(), "{}", common::stderr(&new));
    let lab = course.join("labs/my-lab/lab.yaml");
    let text = std::fs::read_to_string(&lab).unwrap();
    assert_eq!(
        text.lines().next(),
        Some("# yaml-language-server: $schema=../../schemas/lab.schema.json")
    );
    let schema = course.join("labs/my-lab/../../schemas/lab.schema.json");
    let printed = env.kca().args(["schema", "lab"]).output().unwrap();
    assert_eq!(std::fs::read_to_string(schema).unwrap(), stdout(&printed));
    assert!(course.join("schemas/quiz.schema.json").is_file());
    let validate = env
        .kca_in(&course)
        .args(["validate", "labs/my-lab"])
        .current_dir(&course)
        .output()
        .unwrap();
    assert!(validate.status.success(), "{}", common::stderr(&validate));
    assert!(
        !common::stderr(&validate).contains("warning"),
        "{}",
        common::stderr(&validate)
    );
    let verify = env
        .kca_in(&course)
        .args(["lab", "verify", "--offline", "my-lab", "-o", "json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&verify.stdout).unwrap();
    assert_eq!(verify.status.code(), Some(0), "{doc:#}");
    let l = &doc["labs"][0];
    assert_eq!(l["ok"], true, "{l:#}");
    assert_eq!(l["solution"]["failed"], serde_json::json!([]));
    assert_eq!(l["score"]["percent"], 100.0, "{l:#}");
    assert!(l["score"]["killed"].as_u64().unwrap() >= 10, "{l:#}");
}

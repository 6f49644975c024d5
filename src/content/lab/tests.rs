use crate::content::{Document, load_file};
use std::path::Path;

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn problems(dir: &Path) -> Vec<String> {
    match load_file(&dir.join("lab.yaml")) {
        Ok(_) => vec![],
        Err(d) => d
            .iter()
            .map(|d| format!("{}:{} {}", d.pos.line, d.pos.col, d.message))
            .collect(),
    }
}

const GOOD: &str = r#"apiVersion: kca.dev/v1alpha1
kind: Lab
metadata: {id: demo, title: {ja: デモ, en: Demo}, module: 0, concepts: [mutate]}
vars: {namespace: demo}
starter: [{path: README.md, template: true}, policy.yaml]
fixtures: [fixtures/ns.yaml]
solution: [policy.yaml]
tasks:
  - id: t1
    title: T
    instructions: I
    hints: [first, second]
    checks:
      - {id: c-file, kind: file, path: policy.yaml, kinds: [ClusterPolicy]}
      - {id: c-res, kind: resource, object: {apiVersion: v1, kind: Namespace, name: demo}}
      - {id: c-cani, kind: can-i, as: {serviceAccount: "kyverno:bg"}, verb: get, resource: configmaps, expect: true}
      - {id: c-adm, kind: admission, probe: probes/pod.yaml, expect: denied, deniedBy: {policy: p, rule: r}}
      - {id: c-gen, kind: generated, trigger: {apiVersion: v1, kind: Namespace, metadata: {generateName: x-}}, expect: {apiVersion: v1, kind: ConfigMap, name: c}}
      - {id: c-cmd, kind: command, run: [sh, -c, "exit 1"], exit: nonzero, stdout: ["^$"]}
mutants:
  - {id: m1, description: D, edits: [{path: policy.yaml, find: Enforce, replace: Audit}], fails: [c-file]}
"#;

fn good_lab(dir: &Path) {
    write(dir, "lab.yaml", GOOD);
    write(dir, "starter/README.md", "workspace {{ workspace }}\n");
    write(dir, "starter/policy.yaml", "# write here\n");
    write(
        dir,
        "solution/policy.yaml",
        "kind: ClusterPolicy # Enforce\n",
    );
    write(
        dir,
        "fixtures/ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: demo}\n",
    );
    write(
        dir,
        "probes/pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n",
    );
}

#[test]
fn a_lab_with_every_check_kind_loads() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    good_lab(&dir);
    match load_file(&dir.join("lab.yaml")) {
        Ok(Document::Lab(lab)) => {
            let kinds: Vec<&str> = lab.checks().map(|(_, c)| c.spec.kind()).collect();
            assert_eq!(
                kinds,
                [
                    "file",
                    "resource",
                    "can-i",
                    "admission",
                    "generated",
                    "command"
                ]
            );
            assert_eq!(lab.max_points(), 6);
            assert!(lab.starter[0].template && !lab.starter[1].template);
            let super::Spec::CanI { query, .. } = &lab.check("c-cani").unwrap().spec else {
                panic!()
            };
            assert_eq!(query.user, "system:serviceaccount:kyverno:bg");
            assert!(
                query
                    .groups
                    .contains(&"system:serviceaccounts:kyverno".to_string())
            );
        }
        Err(d) => panic!("{d:?}"),
        Ok(other) => panic!("{other:?}"),
    }
}

#[test]
fn missing_files_unknown_kinds_and_mutant_checks_are_all_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    good_lab(&dir);
    let src = GOOD
        .replace("fixtures/ns.yaml", "fixtures/gone.yaml")
        .replace(
            "starter: [{path: README.md, template: true}, policy.yaml]",
            "starter: [nope.yaml]",
        )
        .replace("kind: command", "kind: comand")
        .replace("fails: [c-file]", "fails: [c-fil]")
        .replace("find: Enforce", "find: Nowhere");
    write(&dir, "lab.yaml", &src);
    std::fs::remove_file(dir.join("solution/policy.yaml")).unwrap();
    let p = problems(&dir);
    let want = [
        "5:11 missing starter file `starter/nope.yaml`",
        "6:12 missing fixture file `fixtures/gone.yaml`",
        "7:12 missing solution file `solution/policy.yaml`",
        "unknown check kind `comand`",
        "mutant names unknown check `c-fil`",
    ];
    for w in want {
        assert!(p.iter().any(|m| m.contains(w)), "{w} not in {p:?}");
    }
}

#[test]
fn mutant_edit_must_find_its_text_and_ids_must_be_unique() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    good_lab(&dir);
    let src = GOOD
        .replace("find: Enforce", "find: Nowhere")
        .replace("id: c-res", "id: c-file");
    write(&dir, "lab.yaml", &src);
    let p = problems(&dir);
    assert!(
        p.iter().any(|m| m.contains("`find` text does not occur")),
        "{p:?}"
    );
    assert!(
        p.iter().any(|m| m.contains("duplicate check id `c-file`")),
        "{p:?}"
    );
}

#[test]
fn folder_must_match_id_and_paths_stay_inside() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("other");
    good_lab(&dir);
    write(
        &dir,
        "lab.yaml",
        &GOOD.replace("solution: [policy.yaml]", "solution: [../x.yaml]"),
    );
    let p = problems(&dir);
    assert!(
        p.iter().any(|m| m.contains("differs from its folder")),
        "{p:?}"
    );
    assert!(
        p.iter().any(|m| m.contains("must be a relative path")),
        "{p:?}"
    );
}

#[test]
fn a_misspelt_template_variable_is_a_content_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    good_lab(&dir);
    write(
        &dir,
        "starter/README.md",
        "ns {{ namespace }} ws {{ workspce }}\n",
    );
    let p = problems(&dir);
    assert!(
        p.iter()
            .any(|m| m.contains("does not render") && m.contains("workspce")),
        "{p:?}"
    );
}

#[test]
fn broken_template_syntax_is_a_content_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    good_lab(&dir);
    write(&dir, "starter/README.md", "{% if %}\n");
    let p = problems(&dir);
    assert!(p.iter().any(|m| m.contains("does not render")), "{p:?}");
}

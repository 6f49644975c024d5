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

const SECOND_TASK: &str = r#"  - id: t2
    title: T2
    instructions: I2
    lesson: LESSON
    setup:
      - delete: {apiVersion: v1, kind: Namespace, name: demo}
      - patch: {object: {apiVersion: v1, kind: ConfigMap, namespace: demo, name: foreign}, merge: {data: {k: v}}}
      - apply: setup/extra.yaml
    checks:
      - {id: c-acc, kind: accepted, path: policy.yaml, expect: rejected, message: "requires permissions"}
      - {id: c-gen2, kind: generated, trigger: {apiVersion: v1, kind: Namespace, metadata: {generateName: y-}}, expect: {apiVersion: v1, kind: ConfigMap, name: c}, sync: {source: {apiVersion: v1, kind: ConfigMap, namespace: demo, name: src}, patch: {data: {k: w}}, matches: {data: {k: w}}}}
"#;

fn with_second_task(lesson: &str) -> String {
    GOOD.replace(
        "mutants:\n",
        &format!("{}mutants:\n", SECOND_TASK.replace("LESSON", lesson)),
    )
}

#[test]
fn a_setup_may_touch_only_objects_the_lab_owns() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    good_lab(&dir);
    write(&dir, "lab.yaml", &with_second_task("\"module-0#x\""));
    write(
        &dir,
        "setup/extra.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra, namespace: demo}\n",
    );
    let p = problems(&dir);
    // The fixture namespace is owned; the ConfigMap `foreign` is declared nowhere.
    assert!(
        p.iter()
            .any(|m| m.contains("setup touches ConfigMap demo/foreign, which the lab does not own")),
        "{p:?}"
    );
    assert!(!p.iter().any(|m| m.contains("Namespace demo")), "{p:?}");
    assert_eq!(p.len(), 1, "{p:?}");
}

#[test]
fn the_first_task_cannot_have_a_setup() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    good_lab(&dir);
    let src = GOOD.replace(
        "    hints: [first, second]\n",
        "    hints: [first, second]\n    setup: [{delete: {apiVersion: v1, kind: Namespace, name: demo}}]\n",
    );
    write(&dir, "lab.yaml", &src);
    let p = problems(&dir);
    assert!(
        p.iter()
            .any(|m| m.contains("the first task cannot have a setup")),
        "{p:?}"
    );
}

#[test]
fn new_check_kinds_and_a_lesson_link_load() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    good_lab(&dir);
    let src = with_second_task("\"module-0#x\"").replace(
        "      - patch: {object: {apiVersion: v1, kind: ConfigMap, namespace: demo, name: foreign}, merge: {data: {k: v}}}\n",
        "",
    );
    write(&dir, "lab.yaml", &src);
    write(
        &dir,
        "setup/extra.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra, namespace: demo}\n",
    );
    match load_file(&dir.join("lab.yaml")) {
        Ok(Document::Lab(lab)) => {
            let t = lab.task("t2").unwrap();
            assert_eq!(t.lesson.as_deref(), Some("module-0#x"));
            assert_eq!(t.setup.len(), 2);
            assert!(matches!(
                lab.check("c-acc").unwrap().spec,
                super::Spec::Accepted {
                    accepted: false,
                    ..
                }
            ));
            assert!(matches!(
                lab.check("c-gen2").unwrap().spec,
                super::Spec::Generated { sync: Some(_), .. }
            ));
        }
        Err(d) => panic!("{d:?}"),
        Ok(other) => panic!("{other:?}"),
    }
}

#[test]
fn a_lesson_link_must_name_a_section_of_the_lessons() {
    let tmp = tempfile::tempdir().unwrap();
    // <content>/labs/demo/lab.yaml beside <content>/lessons/module-0/{ja,en}.md
    let dir = tmp.path().join("labs").join("demo");
    good_lab(&dir);
    write(
        tmp.path(),
        "lessons/module-0/ja.md",
        "# M0\n\n## 一言 {#summary}\n",
    );
    write(
        tmp.path(),
        "lessons/module-0/en.md",
        "# M0\n\n## In short {#summary}\n",
    );
    let lesson_only = |lesson: &str| {
        GOOD.replace(
            "    hints: [first, second]\n",
            &format!("    lesson: {lesson}\n    hints: [first, second]\n"),
        )
    };
    write(&dir, "lab.yaml", &lesson_only("\"module-0#summary\""));
    assert!(problems(&dir).is_empty(), "{:?}", problems(&dir));
    write(&dir, "lab.yaml", &lesson_only("\"module-0#nowhere\""));
    let p = problems(&dir);
    assert!(
        p.iter().any(|m| m.contains("no section `{#nowhere}`")),
        "{p:?}"
    );
    write(&dir, "lab.yaml", &lesson_only("module-0"));
    let p = problems(&dir);
    assert!(
        p.iter().any(|m| m.contains("is not a lesson section")),
        "{p:?}"
    );
}

#[test]
fn a_file_check_must_name_a_file_the_lab_lays_out() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    good_lab(&dir);
    let src = GOOD.replace(
        "{id: c-file, kind: file, path: policy.yaml,",
        "{id: c-file, kind: file, path: polcy.yaml,",
    );
    write(&dir, "lab.yaml", &src);
    let p = problems(&dir);
    assert!(
        p.iter()
            .any(|m| m.contains("`polcy.yaml` is in neither the starter nor the solution")),
        "{p:?}"
    );
}

#[test]
fn a_broken_tree_operator_is_a_content_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    good_lab(&dir);
    let src = GOOD.replace(
        "kinds: [ClusterPolicy]}",
        "kinds: [ClusterPolicy], matches: {spec: {$matches: \"(\"}}}",
    );
    write(&dir, "lab.yaml", &src);
    let p = problems(&dir);
    assert!(
        p.iter()
            .any(|m| m.contains("`$matches`: invalid regular expression")),
        "{p:?}"
    );
}

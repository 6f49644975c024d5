//! Data read from a file shown on every output of `kca policy test|apply` and
//! `kca lesson`, and course content (lab and quiz files, refused where such text is
//! written, so `lab`, `quiz` and `status` never print it): control characters, bidi overrides, C1 controls and XML
//! non-characters in folder names, policy, rule and resource names and messages never
//! reach the terminal raw (text), JSON keeps them only as `\u` escapes, JUnit drops what
//! XML forbids.

mod common;

use common::{Env, repo, stderr, stdout};

/// What a hostile name holds, as YAML double-quoted escapes and as the characters.
const YAML_HOSTILE: &str = r"\e]0;pwned\a\e[2J\u202Eevil\x9b31m\r\uFFFE";
/// Characters that must never reach a terminal raw.
const RAW: [char; 7] = [
    '\u{1b}', '\u{7}', '\r', '\u{202e}', '\u{9b}', '\u{fffe}', '\u{2066}',
];

fn assert_no_raw(what: &str, text: &str) {
    for c in RAW {
        assert!(
            !text.contains(c),
            "{what}: raw U+{:04X} in the output:\n{}",
            c as u32,
            text.escape_debug()
        );
    }
}

/// A policy test folder whose every name and message carries the hostile characters.
fn hostile_suite(env: &Env) -> std::path::PathBuf {
    let dir = env.home.path().join("suite\u{1b}[2J\u{202e}\u{2066}dir");
    std::fs::create_dir_all(&dir).unwrap();
    let policy = format!(
        r#"apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: "pol{h}"
spec:
  validationFailureAction: Enforce
  rules:
  - name: "rule{h}"
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: "msg{h}"
      pattern:
        metadata:
          labels:
            team: "?*"
"#,
        h = YAML_HOSTILE
    );
    let pod = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: \"pod{YAML_HOSTILE}\"\nspec:\n  containers: [{{name: c, image: nginx}}]\n"
    );
    let test = format!(
        "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: t\npolicies: [policy.yaml]\nresources: [pod.yaml]\nresults:\n- {{policy: \"pol{h}\", rule: \"rule{h}\", kind: Pod, resources: [\"pod{h}\"], result: pass}}\n",
        h = YAML_HOSTILE
    );
    std::fs::write(dir.join("policy.yaml"), policy).unwrap();
    std::fs::write(dir.join("pod.yaml"), pod).unwrap();
    std::fs::write(dir.join("kyverno-test.yaml"), test).unwrap();
    dir
}

#[test]
fn policy_test_escapes_every_field_in_text_json_and_junit() {
    let env = Env::new();
    let dir = hostile_suite(&env);
    let text = env
        .kca()
        .args(["policy", "test"])
        .arg(&dir)
        .output()
        .unwrap();
    let out = stdout(&text);
    assert_eq!(text.status.code(), Some(1), "{}{}", out, stderr(&text));
    assert!(out.contains("✗ FAIL"), "{out}");
    assert!(
        out.contains("\\u{202e}"),
        "the override is shown as an escape: {out}"
    );
    assert_no_raw("policy test text", &out);
    assert_no_raw("policy test stderr", &stderr(&text));

    let json = env
        .kca()
        .args(["-o", "json", "policy", "test"])
        .arg(&dir)
        .output()
        .unwrap();
    let raw = stdout(&json);
    assert_no_raw("policy test json", &raw);
    let v: serde_json::Value = serde_json::from_str(&raw).unwrap();
    let row = &v["rows"][0];
    assert!(
        row["policy"].as_str().unwrap().contains('\u{202e}'),
        "JSON keeps the data itself: {row}"
    );

    let junit = env
        .kca()
        .args(["-o", "junit", "policy", "test"])
        .arg(&dir)
        .output()
        .unwrap();
    let xml = stdout(&junit);
    assert!(xml.contains("<testcase"), "{xml}");
    for c in ['\u{1b}', '\u{7}'] {
        assert!(!xml.contains(c), "JUnit holds U+{:04X}", c as u32);
    }
}

#[test]
fn policy_apply_escapes_names_and_messages_in_text_and_json() {
    let env = Env::new();
    let dir = hostile_suite(&env);
    let text = env
        .kca()
        .args(["policy", "apply"])
        .arg(dir.join("policy.yaml"))
        .arg("--resource")
        .arg(dir.join("pod.yaml"))
        .output()
        .unwrap();
    let out = stdout(&text);
    assert!(out.contains("FAIL"), "{out}{}", stderr(&text));
    assert_no_raw("policy apply text", &out);
    assert_no_raw("policy apply stderr", &stderr(&text));
    let json = env
        .kca()
        .args(["-o", "json", "policy", "apply"])
        .arg(dir.join("policy.yaml"))
        .arg("--resource")
        .arg(dir.join("pod.yaml"))
        .output()
        .unwrap();
    let raw = stdout(&json);
    assert_no_raw("policy apply json", &raw);
    let _: serde_json::Value = serde_json::from_str(&raw).expect("one JSON document");
}

/// A content folder whose lesson carries the hostile characters.
fn hostile_lesson(env: &Env, en: bool) -> std::path::PathBuf {
    let root = env.home.path().join("content");
    let m = root.join("lessons/module-0");
    std::fs::create_dir_all(&m).unwrap();
    std::fs::create_dir_all(root.join("labs")).unwrap();
    std::fs::create_dir_all(root.join("quizzes")).unwrap();
    let body = "# 題\u{1b}]0;pwned\u{7}名\n\n本文\u{1b}[2J\u{202e}です。\u{9b}31m\r\n\n## 節\u{2066} {#s}\n\n- 項目\u{fffe}\n\n```\ncode\u{1b}[31m\n```\n";
    std::fs::write(m.join("ja.md"), body).unwrap();
    if en {
        std::fs::write(m.join("en.md"), "# Title\n\nBody.\n").unwrap();
    }
    root
}

#[test]
fn lesson_text_and_json_carry_no_raw_control_characters() {
    let env = Env::new();
    let root = hostile_lesson(&env, true);
    let out = env
        .kca_in(&root)
        .env("PAGER", "cat")
        .args(["--lang", "ja", "lesson", "0"])
        .output()
        .unwrap();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("本文"), "{text}");
    assert_no_raw("lesson text", &text);
    let json = env
        .kca_in(&root)
        .args(["--lang", "ja", "-o", "json", "lesson", "0"])
        .output()
        .unwrap();
    assert_no_raw("lesson json", &stdout(&json));
    let _: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
}

#[test]
fn lesson_in_english_says_so_when_en_md_cannot_be_read() {
    let env = Env::new();
    let root = hostile_lesson(&env, false);
    let out = env
        .kca_in(&root)
        .args(["--lang", "en", "lesson", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("en.md") && err.contains("showing the Japanese lesson"),
        "switched language silently: {err}"
    );
}

#[test]
fn lab_and_quiz_text_with_control_characters_is_refused_where_it_is_written() {
    // A lab title, a task's instructions, a hint, a quiz prompt or a choice holding an
    // escape sequence reached `lab list|start|task|hint|check`, `quiz list|grade -o
    // junit`, `status` raw, and `kca validate` said the content was valid.
    let env = Env::new();
    let root = env.home.path().join("content");
    common::copy_dir(&repo().join("tests/testlab"), &root.join("labs/testlab"));
    let quiz = root.join("quizzes/demo.yaml");
    common::copy_dir(&repo().join("tests/data/quizzes"), &root.join("quizzes"));
    let lab = root.join("labs/testlab/lab.yaml");
    let text = std::fs::read_to_string(&lab).unwrap();
    let hostile = format!("title: {{ja: \"ラボ{YAML_HOSTILE}\", en: \"Lab{YAML_HOSTILE}\"}}");
    std::fs::write(
        &lab,
        text.replacen("title: {ja: テスト用ラボ, en: Test lab}", &hostile, 1),
    )
    .unwrap();
    let text = std::fs::read_to_string(&quiz).unwrap();
    let hostile = format!("text: \"Ignore{YAML_HOSTILE}\"");
    std::fs::write(&quiz, text.replacen("text: Ignore", &hostile, 1)).unwrap();
    let out = env
        .kca_in(&root)
        .args(["--lang", "en", "validate"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("lab.yaml:7:") && err.contains("demo.yaml:15:"),
        "{err}"
    );
    assert!(err.contains("control character U+001B"), "{err}");
    assert!(!err.contains("text has no language"), "{err}");
    assert_no_raw("validate", &err);
    for args in [&["lab", "list"][..], &["quiz", "list"], &["status"]] {
        let out = env
            .kca_in(&root)
            .args(["--lang", "en"])
            .args(args)
            .output()
            .unwrap();
        assert_no_raw(&args.join(" "), &stdout(&out));
        assert_no_raw(&args.join(" "), &stderr(&out));
    }
}

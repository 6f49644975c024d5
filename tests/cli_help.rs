//! Help and argument messages: each command's own options first, global options under
//! their own heading, examples and exit codes; kubectl habits answered in kca's words.

mod common;

use common::{Env, stderr, stdout};

fn help(env: &Env, args: &[&str]) -> String {
    let out = env
        .kca()
        .args(["--lang", "en"])
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    stdout(&out)
}

#[test]
fn own_options_come_before_the_global_ones_with_examples_and_exit_codes() {
    let env = Env::new();
    let text = help(&env, &["lab", "check"]);
    let own = text.find("--task").expect(&text);
    let global = text.find("Global options:").expect(&text);
    assert!(own < global, "{text}");
    assert!(text[global..].contains("--color"), "{text}");
    assert!(!text[..global].contains("--color"), "{text}");
    assert!(
        text.contains("Examples:") && text.contains("Exit codes:"),
        "{text}"
    );
}

#[test]
fn quiz_run_help_names_the_keys_and_grade_help_the_answers_file() {
    let env = Env::new();
    let run = help(&env, &["quiz", "run"]);
    for key in ["h  show the next hint", "s  skip", "q  quit"] {
        assert!(run.contains(key), "{key}: {run}");
    }
    let grade = help(&env, &["quiz", "grade"]);
    assert!(grade.contains("The answers file is YAML"), "{grade}");
    assert!(grade.contains("kca quiz key"), "{grade}");
}

#[test]
fn workspace_root_help_has_no_stray_env_value() {
    let env = Env::new();
    let text = help(&env, &["lab", "start"]);
    assert!(text.contains("KCA_WORKSPACE_ROOT"), "{text}");
    assert!(!text.contains("KCA_WORKSPACE_ROOT="), "{text}");
}

#[test]
fn can_i_without_manifests_or_with_list_gives_a_kca_message() {
    let env = Env::new();
    let out = env
        .kca()
        .args(["auth", "can-i", "get", "pods", "--as", "alice"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("マニフェストから答えます") && err.contains("-f"),
        "{err}"
    );
    assert!(!err.contains("the following required arguments"), "{err}");
    let out = env
        .kca()
        .args(["auth", "can-i", "--list", "-f", "x.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--list` はありません"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn can_i_quiet_prints_nothing_and_answers_by_exit_code() {
    let env = Env::new();
    let rbac = env.home.path().join("rbac.yaml");
    std::fs::write(
        &rbac,
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\nrules:\n- {apiGroups: [''], resources: [pods], verbs: [get]}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: b}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: r}\nsubjects:\n- {kind: User, name: alice, apiGroup: rbac.authorization.k8s.io}\n",
    )
    .unwrap();
    let yes = env
        .kca()
        .args(["-q", "auth", "can-i", "get", "pods", "--as", "alice", "-f"])
        .arg(&rbac)
        .output()
        .unwrap();
    assert_eq!(yes.status.code(), Some(0), "{}", stderr(&yes));
    assert_eq!(stdout(&yes), "");
    let no = env
        .kca()
        .args([
            "-q", "auth", "can-i", "delete", "pods", "--as", "alice", "-f",
        ])
        .arg(&rbac)
        .output()
        .unwrap();
    assert_eq!(no.status.code(), Some(1));
    assert_eq!(stdout(&no), "");
}

#[test]
fn in_japanese_clap_usage_errors_and_help_headings_are_japanese() {
    let env = Env::new();
    let out = env
        .kca()
        .args(["--lang", "ja", "lab", "chek"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("エラー: サブコマンド 'chek' はありません"),
        "{err}"
    );
    assert!(err.contains("'check' のことですか?"), "{err}");
    assert!(!err.contains("unrecognized"), "{err}");
    let out = env
        .kca()
        .args(["--lang", "ja", "quiz", "grade", "demo"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("必須の引数がありません"),
        "{}",
        stderr(&out)
    );
    let out = env
        .kca()
        .args(["--lang=ja", "lab", "check", "--help"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    for heading in [
        "使い方:",
        "オプション:",
        "共通オプション:",
        "例:",
        "終了コード:",
    ] {
        assert!(text.contains(heading), "{heading}: {text}");
    }
    assert!(
        !text.contains("Usage:") && !text.contains("Options:"),
        "{text}"
    );
}

#[test]
fn a_usage_error_under_json_is_one_json_document() {
    let env = Env::new();
    let out = env
        .kca()
        .args(["-o", "json", "--lang", "en", "lab", "chek"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["error"]["message"], "unrecognized subcommand 'chek'");
    assert_eq!(v["error"]["exitCode"], 2);
}

//! `kca policy apply --warn-exit-code N --warn-no-pass`, as `kyverno apply` takes them
//! (`exit` in cmd/cli/kubectl-kyverno/commands/apply/command.go, v1.19.0): the lesson's own
//! gate (`--warn-no-pass --warn-exit-code 3`) must run, and stop an empty render.

mod common;

use common::Env;

const PINNED: &str = r#"apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: require-pinned}
spec:
  rules:
    - name: digest
      match: {any: [{resources: {kinds: [Pod]}}]}
      validate:
        failureAction: Enforce
        message: pin by digest
        pattern: {spec: {containers: [{image: "*@sha256:*"}]}}
"#;

const AUDIT: &str = r#"apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: audit-pinned}
spec:
  rules:
    - name: digest
      match: {any: [{resources: {kinds: [Pod]}}]}
      validate:
        failureAction: Audit
        message: pin by digest
        pattern: {spec: {containers: [{image: "*@sha256:*"}]}}
"#;

fn pod(image: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: default}}\nspec:\n  containers: [{{name: c, image: \"{image}\"}}]\n"
    )
}

fn apply(env: &Env, policy: &str, resource: &str, flags: &[&str]) -> std::process::Output {
    let dir = env.home.path();
    std::fs::write(dir.join("policy.yaml"), policy).unwrap();
    std::fs::write(dir.join("render.yaml"), resource).unwrap();
    env.kca()
        .args([
            "policy",
            "apply",
            "policy.yaml",
            "--resource",
            "render.yaml",
        ])
        .args(flags)
        .output()
        .unwrap()
}

#[test]
fn the_lessons_gate_flags_are_taken_and_an_empty_render_exits_with_the_warn_code() {
    let env = Env::new();
    let flags = ["--warn-no-pass", "--warn-exit-code", "3"];
    // Empty render: nothing passed → the warn code, with kyverno's line.
    let out = apply(&env, PINNED, "", &flags);
    assert_eq!(out.status.code(), Some(3), "{}", common::stderr(&out));
    assert!(common::stdout(&out).contains("exit as no objects satisfied policy"));
    // A pinned Pod passes: 0.
    let digest = format!("nginx@sha256:{}", "a".repeat(64));
    let out = apply(&env, PINNED, &pod(&digest), &flags);
    assert_eq!(out.status.code(), Some(0), "{}", common::stdout(&out));
    // A violation is 1 whatever the warn code.
    let out = apply(&env, PINNED, &pod("nginx:latest"), &flags);
    assert_eq!(out.status.code(), Some(1), "{}", common::stdout(&out));
}

#[test]
fn warn_no_pass_without_a_warn_code_exits_zero_as_kyverno_does() {
    let env = Env::new();
    let out = apply(&env, PINNED, "", &["--warn-no-pass"]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stdout(&out));
}

#[test]
fn json_output_stays_one_document_with_a_warn_exit() {
    let env = Env::new();
    let out = apply(
        &env,
        PINNED,
        "",
        &["--warn-no-pass", "--warn-exit-code", "4", "-o", "json"],
    );
    assert_eq!(out.status.code(), Some(4));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(v["summary"]["pass"], 0);
}

#[test]
fn an_audit_warning_exits_with_the_warn_code() {
    let env = Env::new();
    let out = apply(
        &env,
        AUDIT,
        &pod("nginx:latest"),
        &["--warn-exit-code", "5"],
    );
    let text = common::stdout(&out);
    if text.contains("warn: 0") {
        // kca reports an Audit violation as a failure, as `kyverno apply` does without
        // --audit-warn: then it is 1.
        assert_eq!(out.status.code(), Some(1), "{text}");
    } else {
        assert_eq!(out.status.code(), Some(5), "{text}");
        assert!(text.contains("exit as warnExitCode is 5"), "{text}");
    }
}

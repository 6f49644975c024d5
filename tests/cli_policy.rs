//! `kca policy test|apply` end to end: exit codes, the closing summary line, JSON rows.
//! Hermetic: temp HOME, no kubeconfig, `--color never`.

use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;
use tempfile::TempDir;

const POLICY: &str = r#"
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: disallow-latest
spec:
  validationFailureAction: Enforce
  rules:
  - name: no-latest
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: "image {{ request.object.spec.containers[0].image }} uses latest"
      pattern:
        spec:
          containers:
          - image: "!*:latest"
  - name: add-team
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            +(team): platform
"#;

const RESOURCES: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: good
spec:
  containers:
  - name: c
    image: nginx:1.27
---
apiVersion: v1
kind: Pod
metadata:
  name: bad
spec:
  containers:
  - name: c
    image: nginx:latest
"#;

/// `vap` is evaluated offline; `vap-authz` asks the authorizer, which offline cannot.
const VAP: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: vap
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
  - expression: "!object.spec.containers.exists(c, c.image.endsWith(':latest'))"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: vap-authz
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
  - expression: "authorizer.requestResource.check('update').allowed()"
"#;

fn kca(home: &Path) -> Command {
    let mut cmd = Command::cargo_bin("kca").expect("binary builds");
    cmd.env_clear()
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("KUBECONFIG", home.join("no-kubeconfig"))
        .env("NO_COLOR", "1")
        // The messages asserted here are the English ones.
        .env("LANG", "en_US.UTF-8")
        .arg("--color")
        .arg("never");
    cmd
}

/// `kca policy test [extra…] DIR` in a fresh HOME.
fn policy_test(dir: &TempDir, extra: &[&str]) -> assert_cmd::assert::Assert {
    let home = TempDir::new().unwrap();
    kca(home.path())
        .args(["policy", "test"])
        .args(extra)
        .arg(dir.path())
        .assert()
}

fn suite(results: &str) -> TempDir {
    let dir = TempDir::new().expect("temp dir");
    std::fs::write(dir.path().join("policy.yaml"), POLICY).unwrap();
    std::fs::write(dir.path().join("resources.yaml"), RESOURCES).unwrap();
    std::fs::write(dir.path().join("vap.yaml"), VAP).unwrap();
    let test = format!(
        "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: t\n\
         policies: [policy.yaml, vap.yaml]\nresources: [resources.yaml]\nresults:\n{results}"
    );
    let sub = dir.path().join("nested");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(
        sub.join("kyverno-test.yaml"),
        test.replace("policy.yaml", "../policy.yaml")
            .replace("vap.yaml", "../vap.yaml")
            .replace("resources.yaml", "../resources.yaml"),
    )
    .unwrap();
    dir
}

const AGREEING: &str = "\
- {policy: disallow-latest, rule: no-latest, kind: Pod, resources: [good], result: pass}
- {policy: disallow-latest, rule: no-latest, kind: Pod, resources: [bad], result: fail}
- {policy: vap-authz, kind: Pod, resources: [good], result: pass, isValidatingAdmissionPolicy: true}
";

#[test]
fn test_command_agrees_and_prints_closing_line() {
    let dir = suite(AGREEING);
    let home = TempDir::new().unwrap();
    let out = kca(home.path())
        .args(["policy", "test"])
        .arg(dir.path())
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    let last = text.lines().last().unwrap();
    assert_eq!(last, "2 passed, 0 failed, 1 skipped");
    assert!(text.contains("authorizer"), "{text}");
}

#[test]
fn validating_admission_policy_rows_are_evaluated() {
    let dir = suite(
        "- {policy: vap, kind: Pod, resources: [good], result: pass, isValidatingAdmissionPolicy: true}\n\
         - {policy: vap, kind: Pod, resources: [bad], result: fail, isValidatingAdmissionPolicy: true}\n",
    );
    policy_test(&dir, &[])
        .code(0)
        .stdout(predicate::str::ends_with("2 passed, 0 failed, 0 skipped\n"));
    let wrong = suite(
        "- {policy: vap, kind: Pod, resources: [bad], result: pass, isValidatingAdmissionPolicy: true}\n",
    );
    policy_test(&wrong, &[])
        .code(1)
        .stdout(predicate::str::contains("failed expression"));
}

#[test]
fn expected_fail_on_a_passing_rule_is_a_failure() {
    // Kyverno once counted this row as passed; kca must not.
    let dir = suite(
        "- {policy: disallow-latest, rule: no-latest, kind: Pod, resources: [good], result: fail}\n",
    );
    policy_test(&dir, &[])
        .code(1)
        .stdout(predicate::str::ends_with("0 passed, 1 failed, 0 skipped\n"));
}

#[test]
fn missing_resource_row_fails_with_reason() {
    let dir = suite(
        "- {policy: disallow-latest, rule: no-latest, kind: Pod, resources: [ghost], result: pass}\n",
    );
    policy_test(&dir, &[])
        .code(1)
        .stdout(predicate::str::contains("ghost not found"));
}

#[test]
fn test_json_has_one_entry_per_row_and_a_summary() {
    let dir = suite(AGREEING);
    let home = TempDir::new().unwrap();
    let out = kca(home.path())
        .args(["policy", "test", "--output", "json"])
        .arg(dir.path())
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).expect("stdout is JSON only");
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[1]["resource"], "bad");
    assert_eq!(rows[1]["expected"], "fail");
    assert_eq!(rows[1]["actual"], "fail");
    assert_eq!(rows[1]["verdict"], "pass");
    assert_eq!(rows[2]["verdict"], "skipped");
    assert_eq!(v["summary"]["passed"], 2);
    assert_eq!(v["summary"]["skipped"], 1);
}

#[test]
fn test_on_missing_folder_is_a_usage_error() {
    let home = TempDir::new().unwrap();
    kca(home.path())
        .args(["policy", "test", "/nonexistent/kca-folder"])
        .assert()
        .code(2);
}

#[test]
fn apply_exit_code_follows_failures() {
    let dir = suite(AGREEING);
    let home = TempDir::new().unwrap();
    let policy = dir.path().join("policy.yaml");
    let good = "apiVersion: v1\nkind: Pod\nmetadata: {name: ok, namespace: default}\nspec:\n  containers: [{name: c, image: nginx:1}]\n";
    let good_file = dir.path().join("good.yaml");
    std::fs::write(&good_file, good).unwrap();
    kca(home.path())
        .args(["policy", "apply"])
        .arg(&policy)
        .arg("--resource")
        .arg(&good_file)
        .assert()
        .code(0)
        .stdout(predicate::str::contains("fail: 0, warn: 0, error: 0"));
    kca(home.path())
        .args(["policy", "apply"])
        .arg(&policy)
        .arg("-r")
        .arg(dir.path().join("resources.yaml"))
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "✗ FAIL  disallow-latest/no-latest",
        ))
        .stdout(predicate::str::contains("fail: 1,"));
}

#[test]
fn apply_reads_stdin_and_prints_mutated() {
    let dir = suite(AGREEING);
    let home = TempDir::new().unwrap();
    let good = "apiVersion: v1\nkind: Pod\nmetadata: {name: ok, namespace: default}\nspec:\n  containers: [{name: c, image: nginx:1}]\n";
    let out = kca(home.path())
        .args(["policy", "apply"])
        .arg(dir.path().join("policy.yaml"))
        .args(["--resource", "-", "--print-mutated"])
        .write_stdin(good)
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("Pod default/ok"), "{text}");
    assert!(text.lines().last().unwrap().starts_with("pass: "), "{text}");
}

#[test]
fn apply_takes_a_policy_folder() {
    let dir = suite(AGREEING);
    let home = TempDir::new().unwrap();
    let policies = dir.path().join("policies");
    std::fs::create_dir(&policies).unwrap();
    std::fs::write(policies.join("p.yaml"), POLICY).unwrap();
    kca(home.path())
        .args(["policy", "apply"])
        .arg(&policies)
        .arg("-r")
        .arg(dir.path().join("resources.yaml"))
        .assert()
        .code(1)
        .stdout(predicate::str::contains("Pod default/bad"));
}

#[test]
fn test_junit_marks_failures_and_skips() {
    let dir = suite(
        "- {policy: disallow-latest, rule: no-latest, kind: Pod, resources: [good], result: fail}\n\
         - {policy: vap-authz, kind: Pod, resources: [good], result: pass, isValidatingAdmissionPolicy: true}\n",
    );
    policy_test(&dir, &["--output", "junit"])
        .code(1)
        .stdout(predicate::str::starts_with("<?xml"))
        .stdout(predicate::str::contains(
            "<failure message=\"expected fail, got pass\"",
        ))
        .stdout(predicate::str::contains("<skipped message="));
}

#[test]
fn test_case_selector_and_file_name() {
    let dir = suite(AGREEING);
    let home = TempDir::new().unwrap();
    kca(home.path())
        .args([
            "policy",
            "test",
            "--test-case-selector",
            "policy=disallow-*, resource=bad",
        ])
        .arg(dir.path())
        .assert()
        .code(0)
        .stdout(predicate::str::ends_with("1 passed, 0 failed, 0 skipped\n"));
    kca(home.path())
        .args(["policy", "test", "-f", "other-test.yaml"])
        .arg(dir.path())
        .assert()
        .code(2);
}

/// A ClusterPolicy with a `validate.cel` rule, one with a `celPreconditions` gate, and one
/// that asks the authorizer (not evaluable offline).
const CEL_POLICY: &str = r#"
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: cel-latest
spec:
  validationFailureAction: Enforce
  rules:
  - name: no-latest
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      cel:
        expressions:
        - expression: "!object.spec.containers.exists(c, c.image.endsWith(':latest'))"
          message: "no latest images"
  - name: only-prod
    match:
      any:
      - resources:
          kinds: [Pod]
    celPreconditions:
    - name: prod
      expression: "object.metadata.namespace == 'prod'"
    validate:
      cel:
        expressions:
        - expression: "false"
  - name: authz
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      cel:
        expressions:
        - expression: "authorizer.requestResource.check('update').allowed()"
"#;

fn cel_suite(results: &str) -> TempDir {
    let dir = TempDir::new().expect("temp dir");
    std::fs::write(dir.path().join("policy.yaml"), CEL_POLICY).unwrap();
    std::fs::write(dir.path().join("resources.yaml"), RESOURCES).unwrap();
    std::fs::write(
        dir.path().join("kyverno-test.yaml"),
        format!(
            "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: t\n\
             policies: [policy.yaml]\nresources: [resources.yaml]\nresults:\n{results}"
        ),
    )
    .unwrap();
    dir
}

#[test]
fn cel_rule_rows_are_evaluated_in_their_own_scope() {
    let dir = cel_suite(
        "- {policy: cel-latest, rule: no-latest, kind: Pod, resources: [good], result: pass}\n\
         - {policy: cel-latest, rule: no-latest, kind: Pod, resources: [bad], result: fail}\n\
         - {policy: cel-latest, rule: only-prod, kind: Pod, resources: [bad], result: skip}\n\
         - {policy: cel-latest, rule: authz, kind: Pod, resources: [good], result: pass}\n",
    );
    let home = TempDir::new().unwrap();
    let out = kca(home.path())
        .args(["policy", "test", "--output", "json"])
        .arg(dir.path())
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).expect("stdout is JSON only");
    let rows = v["rows"].as_array().unwrap();
    let verdicts: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["verdict"].as_str().unwrap(), r["scope"].as_str().unwrap()))
        .collect();
    assert_eq!(
        verdicts,
        [
            ("pass", "cel"),
            ("pass", "cel"),
            ("pass", "cel"),
            ("skipped", "cel")
        ]
    );
    assert!(
        rows[3]["reason"].as_str().unwrap().contains("authorizer"),
        "{rows:?}"
    );
    let wrong = cel_suite(
        "- {policy: cel-latest, rule: no-latest, kind: Pod, resources: [bad], result: pass}\n",
    );
    policy_test(&wrong, &[])
        .code(1)
        .stdout(predicate::str::contains("no latest images"));
}

const VPOL: &str = r#"
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: vpol-latest
spec:
  validationActions: [Audit]
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [pods]
  validations:
  - expression: "object.spec.containers.all(c, !c.image.endsWith(':latest'))"
    message: no latest
---
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: vpol-lookup
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  validations:
  - expression: "http.Get('https://example.com').body.ok"
---
apiVersion: policies.kyverno.io/v1
kind: PolicyException
metadata:
  name: spare-bad-deploy
spec:
  policyRefs:
  - name: vpol-latest
    kind: ValidatingPolicy
  matchConditions:
  - name: named
    expression: "object.metadata.name == 'spared'"
"#;

const CONTROLLERS: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: bad-deploy
spec:
  template:
    spec:
      containers:
      - name: c
        image: nginx:latest
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: spared
spec:
  template:
    spec:
      containers:
      - name: c
        image: nginx:latest
"#;

#[test]
fn validating_policy_rows_are_evaluated_in_their_own_scope() {
    let dir = TempDir::new().expect("temp dir");
    std::fs::write(dir.path().join("policy.yaml"), VPOL).unwrap();
    std::fs::write(
        dir.path().join("resources.yaml"),
        format!("{RESOURCES}---{CONTROLLERS}"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("kyverno-test.yaml"),
        "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: t\n\
         policies: [policy.yaml]\nresources: [resources.yaml]\nexceptions: [policy.yaml]\n\
         results:\n\
         - {policy: vpol-latest, kind: Pod, resources: [good], result: pass, isValidatingPolicy: true}\n\
         - {policy: vpol-latest, kind: Pod, resources: [bad], result: fail, isValidatingPolicy: true}\n\
         - {policy: vpol-latest, kind: Deployment, resources: [bad-deploy], result: fail, isValidatingPolicy: true}\n\
         - {policy: vpol-latest, kind: Deployment, resources: [spared], result: skip, isValidatingPolicy: true}\n\
         - {policy: vpol-lookup, kind: Pod, resources: [good], result: pass, isValidatingPolicy: true}\n",
    )
    .unwrap();
    let home = TempDir::new().unwrap();
    let out = kca(home.path())
        .args(["policy", "test", "--output", "json"])
        .arg(dir.path())
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).expect("stdout is JSON only");
    let rows = v["rows"].as_array().unwrap();
    let verdicts: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["verdict"].as_str().unwrap(), r["scope"].as_str().unwrap()))
        .collect();
    assert_eq!(
        verdicts,
        [
            ("pass", "vpol"),
            ("pass", "vpol"),
            ("pass", "vpol"),
            ("pass", "vpol"),
            ("skipped", "vpol")
        ],
        "{rows:?}"
    );
    // A library the offline interpreter lacks is a skip with its reason, never a pass.
    assert!(
        rows[4]["reason"].as_str().unwrap().contains("http.Get"),
        "{rows:?}"
    );
}

const MPOL_GPOL: &str = r#"
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata:
  name: add-team
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  matchConditions:
  - name: not-latest
    expression: "!object.spec.containers.exists(c, c.image.endsWith(':latest'))"
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{labels: {'team': 'platform'}}}"
---
apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata:
  name: default-deny
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [namespaces]
  variables:
  - name: np
    expression: >-
      [{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "default-deny"},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}]
  generate:
  - expression: generator.Apply(object.metadata.name, variables.np)
"#;

const PATCHED_GOOD: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: good
  namespace: default
  labels:
    team: platform
spec:
  containers:
  - name: c
    image: nginx:1.27
"#;

const GENERATED: &str = r#"
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: default-deny
  namespace: team-a
spec:
  podSelector: {}
  policyTypes: [Ingress]
"#;

#[test]
fn mutating_and_generating_policy_rows_are_evaluated_in_their_own_scopes() {
    let dir = TempDir::new().expect("temp dir");
    std::fs::write(dir.path().join("policy.yaml"), MPOL_GPOL).unwrap();
    std::fs::write(
        dir.path().join("resources.yaml"),
        format!("{RESOURCES}---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n"),
    )
    .unwrap();
    std::fs::write(dir.path().join("patched.yaml"), PATCHED_GOOD).unwrap();
    std::fs::write(dir.path().join("generated.yaml"), GENERATED).unwrap();
    std::fs::write(
        dir.path().join("kyverno-test.yaml"),
        "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: t\n\
         policies: [policy.yaml]\nresources: [resources.yaml]\n\
         results:\n\
         - {policy: add-team, kind: Pod, resources: [good], patchedResources: patched.yaml, result: pass, isMutatingPolicy: true}\n\
         - {policy: add-team, kind: Pod, resources: [bad], result: skip, isMutatingPolicy: true}\n\
         - {policy: default-deny, kind: Namespace, resources: [team-a], generatedResource: generated.yaml, result: pass, isGeneratingPolicy: true}\n",
    )
    .unwrap();
    let home = TempDir::new().unwrap();
    let out = kca(home.path())
        .args(["policy", "test", "--output", "json"])
        .arg(dir.path())
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).expect("stdout is JSON only");
    let rows = v["rows"].as_array().unwrap();
    let verdicts: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["verdict"].as_str().unwrap(), r["scope"].as_str().unwrap()))
        .collect();
    assert_eq!(
        verdicts,
        [("pass", "mpol"), ("pass", "mpol"), ("pass", "gpol")],
        "{rows:?}"
    );
    // A patched file the mutation does not produce fails the row.
    std::fs::write(
        dir.path().join("patched.yaml"),
        PATCHED_GOOD.replace("platform", "web"),
    )
    .unwrap();
    policy_test(&dir, &[])
        .code(1)
        .stdout(predicate::str::contains("patched resource differs"));
}

#[test]
fn a_policy_over_the_cel_cost_limit_is_an_error_and_finishes_quickly() {
    let range: Vec<String> = (0..1000).map(|i| i.to_string()).collect();
    let r = format!("[{}]", range.join(", "));
    let vap = format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\n\
         metadata:\n  name: slow\nspec:\n  matchConstraints:\n    resourceRules:\n\
         \x20   - apiGroups: ['']\n      apiVersions: [v1]\n      operations: [CREATE]\n      resources: [pods]\n\
         \x20 validations:\n  - expression: \"{r}.all(x, {r}.all(y, {r}.all(z, true)))\"\n"
    );
    let dir = TempDir::new().expect("temp dir");
    std::fs::write(dir.path().join("vap.yaml"), vap).unwrap();
    std::fs::write(dir.path().join("resources.yaml"), RESOURCES).unwrap();
    std::fs::write(
        dir.path().join("kyverno-test.yaml"),
        "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: t\n\
         policies: [vap.yaml]\nresources: [resources.yaml]\nresults:\n\
         - {policy: slow, kind: Pod, resources: [good], result: error, isValidatingAdmissionPolicy: true}\n",
    )
    .unwrap();
    let start = std::time::Instant::now();
    let home = TempDir::new().unwrap();
    let out = kca(home.path())
        .args(["policy", "test", "--output", "json"])
        .arg(dir.path())
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    assert!(start.elapsed().as_secs_f64() < 5.0, "{:?}", start.elapsed());
    let v: serde_json::Value = serde_json::from_slice(&out).expect("stdout is JSON only");
    let reason = v["rows"][0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("estimated rule cost exceeds budget by factor of more than 100x"),
        "{reason}"
    );
}

#[test]
fn apply_json_is_one_document_streamed_per_resource() {
    let dir = suite(AGREEING);
    let home = TempDir::new().unwrap();
    let out = kca(home.path())
        .args(["policy", "apply", "--output", "json", "--print-mutated"])
        .arg(dir.path().join("policy.yaml"))
        .arg("-r")
        .arg(dir.path().join("resources.yaml"))
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).expect("stdout is one JSON document");
    assert_eq!(v["schemaVersion"], 1);
    let resources = v["resources"].as_array().unwrap();
    assert_eq!(resources.len(), 2, "{v}");
    assert_eq!(resources[0]["resource"], "Pod default/good");
    assert_eq!(resources[1]["resource"], "Pod default/bad");
    assert_eq!(
        resources[0]["mutated"]["metadata"]["labels"]["team"],
        "platform"
    );
    assert_eq!(v["summary"]["fail"], 1, "{v}");
    assert_eq!(
        v["summary"]["pass"].as_u64().unwrap() + 1,
        resources
            .iter()
            .map(|r| r["results"].as_array().unwrap().len() as u64)
            .sum::<u64>(),
        "{v}"
    );
}

const INVALID: &str = r#"
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: namespaced-cluster-policy
  namespace: default
spec:
  rules:
  - name: no-latest
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      pattern:
        spec:
          containers:
          - image: "!*:latest"
"#;

#[test]
fn a_policy_kyverno_rejects_is_reported_invalid() {
    let dir = TempDir::new().expect("temp dir");
    std::fs::write(dir.path().join("policy.yaml"), INVALID).unwrap();
    std::fs::write(dir.path().join("resources.yaml"), RESOURCES).unwrap();
    std::fs::write(
        dir.path().join("kyverno-test.yaml"),
        "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: t\n\
         policies: [policy.yaml]\nresources: [resources.yaml]\nresults:\n\
         - {policy: namespaced-cluster-policy, rule: no-latest, kind: Pod, resources: [bad], result: fail}\n",
    )
    .unwrap();
    policy_test(&dir, &[])
        .code(1)
        .stdout(predicate::str::contains(
            "policy namespaced-cluster-policy is invalid: A clusterpolicy should not have the namespace defined",
        ));
    // `apply` leaves it out beside a valid one and counts it as an error.
    std::fs::write(
        dir.path().join("both.yaml"),
        format!("{POLICY}---{INVALID}"),
    )
    .unwrap();
    let home = TempDir::new().unwrap();
    kca(home.path())
        .args(["policy", "apply"])
        .arg(dir.path().join("both.yaml"))
        .arg("-r")
        .arg(dir.path().join("resources.yaml"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "policy namespaced-cluster-policy is invalid and was skipped: A clusterpolicy should not have the namespace defined",
        ))
        .stdout(predicate::str::contains("error: 1,"));
}

/// A values file Kyverno's CLI could not decode fails the test (as `kyverno test`'s
/// "failed to decode yaml") and `kca policy apply` (a usage error naming where).
#[test]
fn a_values_file_of_the_wrong_shape_is_an_error_naming_where() {
    let dir = suite(AGREEING);
    let nested = dir.path().join("nested");
    let test = std::fs::read_to_string(nested.join("kyverno-test.yaml")).unwrap();
    std::fs::write(
        nested.join("kyverno-test.yaml"),
        format!("{test}variables: values.yaml\n"),
    )
    .unwrap();
    let values = nested.join("values.yaml");
    std::fs::write(
        &values,
        "policies:\n- name: disallow-latest\n  rules: {name: no-latest}\n",
    )
    .unwrap();
    policy_test(&dir, &[])
        .code(1)
        .stdout(predicate::str::contains(
            "policies[0].rules: invalid type: map",
        ));
    let home = TempDir::new().unwrap();
    kca(home.path())
        .args(["policy", "apply"])
        .arg(dir.path().join("policy.yaml"))
        .arg("-r")
        .arg(dir.path().join("resources.yaml"))
        .arg("--values-file")
        .arg(&values)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "not a values file kyverno apply reads",
        ))
        .stderr(predicate::str::contains("policies[0].rules"));
    // The same values, well formed, are read.
    std::fs::write(
        &values,
        "policies:\n- name: disallow-latest\n  rules: [{name: no-latest}]\n",
    )
    .unwrap();
    policy_test(&dir, &[]).code(0);
}

#[test]
fn policy_test_does_not_follow_folder_links() {
    // `ln -s . tests/a` ran the same test file 41 times (123 rows reported passed); two
    // links made the walk exponential. Links to folders are not walked, as in `find`
    // without -L and `kyverno test`.
    let dir = suite(AGREEING);
    let once = policy_test(&dir, &["--output", "json"])
        .get_output()
        .stdout
        .clone();
    std::os::unix::fs::symlink(".", dir.path().join("nested/a")).unwrap();
    std::os::unix::fs::symlink(".", dir.path().join("nested/b")).unwrap();
    std::os::unix::fs::symlink("..", dir.path().join("nested/up")).unwrap();
    let started = std::time::Instant::now();
    let linked = policy_test(&dir, &["--output", "json"])
        .get_output()
        .stdout
        .clone();
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(
        String::from_utf8_lossy(&linked),
        String::from_utf8_lossy(&once)
    );
}

/// A course policy's `Japanese / English` message is shown in the reader's language, and
/// the engine's detail (which path failed, and why) stays with either half: before, the
/// Japanese reader lost it with the English half.
#[test]
fn a_bilingual_policy_message_keeps_the_engine_detail_in_each_language() {
    let home = TempDir::new().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("labs/kca-gates");
    let run = |lang: &str| {
        let out = kca(home.path())
            .args(["--lang", lang, "policy", "apply"])
            .arg(root.join("starter/policy/require-pinned.yaml"))
            .arg("-r")
            .arg(root.join("renders/bad.yaml"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    let ja = run("ja");
    assert!(ja.contains("ダイジェスト"), "{ja}");
    assert!(!ja.contains("pin images"), "{ja}");
    assert!(
        ja.contains("validation failed at path /spec/template/spec/containers/0/image/"),
        "{ja}"
    );
    let en = run("en");
    assert!(en.contains("pin images by digest"), "{en}");
    assert!(!en.contains("ダイジェスト"), "{en}");
    assert!(
        en.contains("validation failed at path /spec/template/spec/containers/0/image/"),
        "{en}"
    );
}

//! CEL values bounded where kca makes them (issue #18 item 2): a policy whose variables
//! double a list (`v_i = [v_(i-1), v_(i-1)]`) reaches a verdict in well under a second
//! with bounded memory, through `kca policy test`, instead of copying the shared halves
//! into gigabytes; expressions nested too deep for the parser's stack are an `error`
//! verdict; a CEL policy file that does not load fails its rows instead of skipping them.

mod common;

use std::time::{Duration, Instant};

use common::{Env, stderr, stdout};

/// A ValidatingPolicy whose variables double a list `n` times, checked on one Pod.
fn doubling_test(env: &Env, n: usize) -> std::path::PathBuf {
    let mut vars = String::from("  - name: v0\n    expression: \"[object.metadata.name]\"\n");
    for i in 1..=n {
        vars.push_str(&format!(
            "  - name: v{i}\n    expression: \"[variables.v{0}, variables.v{0}]\"\n",
            i - 1
        ));
    }
    policy_test(
        env,
        &format!("doubling-{n}"),
        &vars,
        &format!("size(variables.v{n}) == 2"),
    )
}

/// A kyverno-test.yaml folder: a ValidatingPolicy with `vars` (YAML list items) and one
/// validation `expr`, expected to pass on one Pod.
fn policy_test(env: &Env, name: &str, vars: &str, expr: &str) -> std::path::PathBuf {
    let dir = env.home.path().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let vars = if vars.is_empty() {
        "  - {name: z, expression: '1'}\n"
    } else {
        vars
    };
    let expr = serde_json::to_string(expr).unwrap();
    std::fs::write(
        dir.join("policy.yaml"),
        format!(
            "apiVersion: policies.kyverno.io/v1\nkind: ValidatingPolicy\nmetadata: {{name: \
             doubling}}\nspec:\n  validationActions: [Deny]\n  matchConstraints:\n    \
             resourceRules:\n    - apiGroups: ['']\n      apiVersions: [v1]\n      \
             operations: [CREATE]\n      resources: [pods]\n  variables:\n{vars}  \
             validations:\n  - expression: {expr}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("pod.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec:\n  \
         containers: [{name: c, image: busybox}]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("kyverno-test.yaml"),
        "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata: {name: t}\n\
         policies: [policy.yaml]\nresources: [pod.yaml]\nresults:\n- policy: doubling\n  \
         isValidatingPolicy: true\n  kind: Pod\n  resources: [p]\n  result: pass\n",
    )
    .unwrap();
    dir
}

/// Peak resident memory of the finished children of this process, in KiB.
fn children_peak_kib() -> i64 {
    // SAFETY: getrusage writes into the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    usage.ru_maxrss
}

#[test]
fn policy_test_stops_doubled_cel_variables_with_an_error_in_well_under_a_second() {
    let env = Env::new();
    for n in [20, 40] {
        let dir = doubling_test(&env, n);
        let started = Instant::now();
        let out = env
            .kca()
            .args(["--lang", "en", "policy", "test", "-o", "json"])
            .arg(&dir)
            .timeout(Duration::from_secs(30))
            .output()
            .unwrap();
        let took = started.elapsed();
        let (text, err) = (stdout(&out), stderr(&out));
        // A debug build on a busy machine: the release build takes a few milliseconds.
        assert!(took < Duration::from_secs(5), "n={n}: {took:?}");
        assert!(out.status.code().is_some_and(|c| c < 100), "{text}{err}");
        let doc: serde_json::Value = serde_json::from_str(&text).expect("one JSON document");
        let row = &doc["rows"][0];
        assert_eq!(row["scope"], "vpol", "{row}");
        assert!(
            row["reason"]
                .as_str()
                .is_some_and(|r| r.contains("kca stops it there")),
            "n={n}: {row}"
        );
        // Copying the halves took 3.6 GB at n=20; the budget keeps it to a few dozen MB.
        let peak = children_peak_kib();
        assert!(peak < 400 * 1024, "n={n}: peak {peak} KiB");
    }
}

/// The rows of `kca policy test -o json DIR`, after checking it ended without a crash.
fn rows_of(env: &Env, dir: &std::path::Path) -> Vec<serde_json::Value> {
    let out = env
        .kca()
        .args(["--lang", "en", "policy", "test", "-o", "json"])
        .arg(dir)
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let (text, err) = (stdout(&out), stderr(&out));
    assert!(out.status.code().is_some_and(|c| c < 100), "{text}{err}");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("one JSON document");
    doc["rows"].as_array().cloned().unwrap_or_default()
}

#[test]
fn deeply_nested_cel_is_an_error_verdict_not_a_stack_overflow() {
    // 100 parentheses, or 300 chained `+`, overflowed the stack (an abort, exit 134)
    // in the parser or the interpreter; tens of thousands are refused before parsing.
    let env = Env::new();
    for (name, expr, refused) in [
        (
            "parens",
            format!("{}1{} == 1", "(".repeat(40_000), ")".repeat(40_000)),
            "too deep",
        ),
        (
            "lists",
            format!("size({}1{}) == 1", "[".repeat(30_000), "]".repeat(30_000)),
            "too deep",
        ),
        (
            "chain",
            format!("{}1 > 0", "1 + ".repeat(30_000)),
            "too long",
        ),
        (
            "members",
            format!("object{} == 1", ".a".repeat(20_000)),
            "too deep",
        ),
    ] {
        let rows = rows_of(&env, &policy_test(&env, name, "", &expr));
        let reason = rows[0]["reason"].as_str().unwrap_or_default();
        let said = if refused == "too deep" {
            "kca parses at most"
        } else {
            "exceeds limit"
        };
        assert_eq!(rows[0]["actual"], "error", "{name}: {}", rows[0]);
        assert!(reason.contains(said), "{name}: {reason:.300}");
    }
    // Within the bounds, deep expressions evaluate (on a stack of their own).
    let chain = format!("{}1 > 0", "1 + ".repeat(240));
    let parens = format!("{}1{} == 1", "(".repeat(90), ")".repeat(90));
    for (name, expr) in [("chain240", chain), ("parens90", parens)] {
        let rows = rows_of(&env, &policy_test(&env, name, "", &expr));
        assert_eq!(rows[0]["actual"], "pass", "{name}: {}", rows[0]);
    }
}

#[test]
fn a_cel_policy_file_that_does_not_load_fails_its_rows_not_skips_them() {
    // A YAML error in the policy file left the row `skipped` ("not found among the
    // test's policies") and `kca policy test` exited 0.
    let env = Env::new();
    let dir = policy_test(&env, "broken", "", "true");
    let policy = dir.join("policy.yaml");
    let text = std::fs::read_to_string(&policy).unwrap();
    std::fs::write(
        &policy,
        text.replace("  variables:\n", "  variables:\n  [\n"),
    )
    .unwrap();
    let rows = rows_of(&env, &dir);
    assert_eq!(rows[0]["verdict"], "fail", "{}", rows[0]);
    assert!(
        rows[0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("policy.yaml")),
        "{}",
        rows[0]
    );
}

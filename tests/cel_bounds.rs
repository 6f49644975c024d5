//! CEL values bounded where kca makes them (issue #18 item 2): a policy whose variables
//! double a list (`v_i = [v_(i-1), v_(i-1)]`) reaches a verdict in well under a second
//! with bounded memory, through `kca policy test`, instead of copying the shared halves
//! into gigabytes.

mod common;

use std::time::{Duration, Instant};

use common::{Env, stderr, stdout};

/// A ValidatingPolicy whose variables double a list `n` times, checked on one Pod.
fn doubling_test(env: &Env, n: usize) -> std::path::PathBuf {
    let dir = env.home.path().join(format!("doubling-{n}"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut vars = String::from("  - name: v0\n    expression: \"[object.metadata.name]\"\n");
    for i in 1..=n {
        vars.push_str(&format!(
            "  - name: v{i}\n    expression: \"[variables.v{0}, variables.v{0}]\"\n",
            i - 1
        ));
    }
    std::fs::write(
        dir.join("policy.yaml"),
        format!(
            "apiVersion: policies.kyverno.io/v1\nkind: ValidatingPolicy\nmetadata: {{name: \
             doubling}}\nspec:\n  validationActions: [Deny]\n  matchConstraints:\n    \
             resourceRules:\n    - apiGroups: ['']\n      apiVersions: [v1]\n      \
             operations: [CREATE]\n      resources: [pods]\n  variables:\n{vars}  \
             validations:\n  - expression: size(variables.v{n}) == 2\n"
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
        "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata: {name: doubling}\n\
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

use super::super::{Ran, run as run_script};
use super::*;
use crate::offline::conformance::chainsaw::{Bindings, Script, ScriptBody};
use crate::offline::conformance::cluster::Answer;

const POLICY: &str = "apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: non-root
spec:
  rules:
  - name: non-root
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      failureAction: Enforce
      message: root is not allowed
      pattern:
        spec:
          containers:
          - =(securityContext):
              =(runAsUser): '>0'
";

const EXCEPTION: &str = "apiVersion: kyverno.io/v2
kind: PolicyException
metadata:
  name: ex
spec:
  exceptions:
  - policyName: non-root
    ruleNames: [non-root]
  match:
    any:
    - resources:
        kinds: [Pod]
        namespaceSelector:
          matchLabels:
            skip: 'yes'
";

fn cluster_with_pod(labels: Value) -> Cluster {
    let mut c = Cluster::new("chainsaw-kca");
    let ns = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "ns-1", "labels": labels}});
    assert!(matches!(c.apply(&ns, false), Answer::Ok));
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns-1"},
        "spec": {"containers": [{"name": "c", "image": "nginx",
            "securityContext": {"runAsUser": 0}}]}});
    assert!(matches!(c.apply(&pod, false), Answer::Ok));
    c
}

fn script(content: &str, check: Value) -> Script {
    Script {
        op: "script",
        body: ScriptBody::Shell(content.into()),
        env: Vec::new(),
        check: Some(check),
        unmodelled: None,
    }
}

fn dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("policy.yaml"), POLICY).unwrap();
    std::fs::write(d.path().join("exception.yaml"), EXCEPTION).unwrap();
    d
}

#[test]
fn cluster_mode_counts_autogen_rules_and_reads_live_namespace_labels() {
    let d = dir();
    let cmd = "kyverno apply policy.yaml --exception exception.yaml --cluster --namespace ns-1";
    let mut c = cluster_with_pod(json!({"skip": "yes"}));
    let s = script(
        cmd,
        json!({"(trim_space($stdout))": "Applying 3 policy rule(s) to 1 resource(s) with 1 exception(s)...\n\npass: 0, fail: 0, warn: 0, error: 0, skip: 1"}),
    );
    assert!(matches!(
        run_script(&s, &mut c, d.path(), &Bindings::new()),
        Ran::Agree(_)
    ));
    // Without the label the rule fails: the CLI lists it and exits 1.
    let mut c = cluster_with_pod(json!({}));
    let s = script(
        cmd,
        json!({"($error)": "exit status 1",
            "(contains($stdout, 'policy non-root -> resource ns-1/Pod/p failed:'))": true}),
    );
    assert!(matches!(
        run_script(&s, &mut c, d.path(), &Bindings::new()),
        Ran::Agree(_)
    ));
}

#[test]
fn objects_the_replay_does_not_hold_leave_the_counts_unknown() {
    let d = dir();
    // Every namespace: kube-system's Pods are not the replay's to list.
    let mut c = cluster_with_pod(json!({}));
    let s = script(
        "kyverno apply policy.yaml --cluster",
        json!({"($stdout)": "x"}),
    );
    assert!(matches!(
        run_script(&s, &mut c, d.path(), &Bindings::new()),
        Ran::Skip(_)
    ));
}

/// A passing Pod in the test's namespace; kube-system's Pods stay unknown.
fn cluster_with_passing_pod() -> Cluster {
    let mut c = Cluster::new("chainsaw-kca");
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "chainsaw-kca"},
        "spec": {"containers": [{"name": "c", "image": "nginx",
            "securityContext": {"runAsUser": 1}}]}});
    assert!(matches!(c.apply(&pod, false), Answer::Ok));
    c
}

#[test]
fn an_unknown_exit_status_is_decided_when_no_reader_of_it_depends_on_it() {
    let d = dir();
    let run = |content: &str, check: Value| {
        let mut c = cluster_with_passing_pod();
        run_script(&script(content, check), &mut c, d.path(), &Bindings::new())
    };
    let applied = "(contains($stdout, 'Applying 3 policy rule(s) to '))";
    // The check reads only what was printed: 0 or 1, the same verdict.
    let r = run(
        "kyverno apply policy.yaml --cluster",
        json!({ applied: true }),
    );
    assert!(matches!(r, Ran::Agree(_)), "{r:?}");
    let r = run(
        "kyverno apply policy.yaml --cluster; echo done",
        json!({"(contains($stdout, 'done'))": true}),
    );
    assert!(matches!(r, Ran::Agree(_)), "{r:?}");
    let r = run(
        "kyverno apply policy.yaml --cluster",
        json!({ applied: false }),
    );
    assert!(matches!(r, Ran::Disagree(_)), "{r:?}");
    // The status read, directly or by what runs after it: a skip naming it.
    for (content, check) in [
        (
            "kyverno apply policy.yaml --cluster",
            json!({"($error)": null}),
        ),
        (
            "kyverno apply policy.yaml --cluster && echo ok",
            json!({"(contains($stdout, 'ok'))": true}),
        ),
        (
            "set -e; kyverno apply policy.yaml --cluster; echo ok",
            json!({"(contains($stdout, 'ok'))": true}),
        ),
        (
            "kyverno apply policy.yaml --cluster; echo $?",
            json!({"(contains($stdout, '0'))": true}),
        ),
    ] {
        match run(content, check) {
            Ran::Skip(why) => assert!(why.contains("the exit status of"), "{content}: {why}"),
            other => panic!("{content}: {other:?}"),
        }
    }
}

#[test]
fn unmodelled_flags_and_commands_are_skips_naming_them() {
    let d = dir();
    let mut c = cluster_with_pod(json!({}));
    for (cmd, named) in [
        (
            "kyverno apply policy.yaml --cluster --audit-warn",
            "--audit-warn",
        ),
        ("kyverno test .", "kyverno test"),
        (
            "kyverno apply policy.yaml -r pod.yaml",
            "`kyverno apply -r`",
        ),
        ("kyverno apply policy.yaml", "without --cluster"),
    ] {
        let s = script(cmd, json!({"($error)": null}));
        match run_script(&s, &mut c, d.path(), &Bindings::new()) {
            Ran::Skip(why) => assert!(why.contains(named), "{cmd}: {why}"),
            _ => panic!("{cmd} was judged"),
        }
    }
}

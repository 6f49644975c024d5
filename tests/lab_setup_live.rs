//! Lab mechanisms on the live target against the shared mocked API server: a task setup
//! touches only objects carrying the lab's labels, and an `accepted` check sends the
//! learner's policy as a dry run that Kyverno's policy webhook answers (an update, with
//! the stored resourceVersion, when the policy exists).

mod common;

use std::path::Path;
use std::sync::{Arc, Mutex};

use common::kube_mock::{self, Reply, Seen, not_found_page, reply, resources, status_failure};
use kca::content::{Document, load_file};
use kca::lab::check::{Submission, Verdict};
use kca::target::live::Live;
use serde_json::{Value, json};

fn mock(route: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> (Live, Arc<Mutex<Vec<Seen>>>) {
    let (client, server) = kube_mock::serve(Box::new(route));
    (Live::from_client(client), server.log.clone())
}

fn discovery(seen: &Seen) -> Option<Reply> {
    if seen.method != "GET" {
        return None;
    }
    match seen.path.as_str() {
        "/api/v1" => Some(reply(
            200,
            resources("v1", &[("namespaces", "Namespace", false)]),
        )),
        "/apis/rbac.authorization.k8s.io/v1" => Some(reply(
            200,
            resources(
                "rbac.authorization.k8s.io/v1",
                &[
                    ("clusterroles", "ClusterRole", false),
                    ("roles", "Role", true),
                ],
            ),
        )),
        "/apis/kyverno.io/v1" => Some(reply(
            200,
            resources(
                "kyverno.io/v1",
                &[("clusterpolicies", "ClusterPolicy", false)],
            ),
        )),
        p if p.starts_with("/apis/") && p.matches('/').count() == 3 => Some(not_found_page()),
        _ => None,
    }
}

fn mutate_lab() -> kca::content::lab::Lab {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("labs/kca-mutate/lab.yaml");
    match load_file(&path) {
        Ok(Document::Lab(l)) => *l,
        other => panic!("kca-mutate does not load: {other:?}"),
    }
}

const GRANT: &str = "/apis/rbac.authorization.k8s.io/v1/clusterroles/kca-mutate-generator";

/// A grant as a learner writes it: aggregated to the background controller, giving the
/// NetworkPolicy permissions the incident takes away.
fn grant(mut labels: Value) -> Value {
    labels["rbac.kyverno.io/aggregate-to-background-controller"] = json!("true");
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "kca-mutate-generator", "labels": labels},
        "rules": [{"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"],
            "verbs": ["get", "list", "create", "update", "delete"]}]})
}

const CLUSTER_ROLES: &str = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
const ROLES: &str = "/apis/rbac.authorization.k8s.io/v1/roles";

async fn run_setup(labels: Value) -> (Vec<String>, Vec<Seen>) {
    let (live, log) = mock(move |s| {
        if let Some(r) = discovery(s) {
            return r;
        }
        match (s.method.as_str(), s.path.as_str()) {
            ("GET", CLUSTER_ROLES) => reply(
                200,
                json!({"apiVersion": "v1", "kind": "List", "metadata": {},
                    "items": [grant(labels.clone())]}),
            ),
            ("GET", ROLES) => reply(
                200,
                json!({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": []}),
            ),
            ("DELETE", GRANT) => kube_mock::success(),
            _ => not_found_page(),
        }
    });
    let lab = mutate_lab();
    let task = lab.task("lost-grant").unwrap();
    let done = kca::lab::setup::apply_live(&live, &lab, task)
        .await
        .unwrap();
    let seen = log.lock().unwrap().clone();
    (done, seen)
}

#[tokio::test(start_paused = true)]
async fn a_setup_deletes_the_labs_own_object() {
    let (done, seen) =
        run_setup(json!({"kca.dev/lab": "kca-mutate", "app.kubernetes.io/managed-by": "kca"}))
            .await;
    assert!(
        seen.iter().any(|s| s.method == "DELETE" && s.path == GRANT),
        "{seen:?}"
    );
    assert_eq!(
        done,
        ["deleted ClusterRole kca-mutate-generator (it gave the permission the setup takes away)"],
        "{done:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_setup_leaves_a_foreign_object_of_the_same_name_alone() {
    let (done, seen) = run_setup(json!({"team": "platform"})).await;
    assert!(
        !seen.iter().any(|s| s.method == "DELETE"),
        "a foreign object was deleted: {seen:?}"
    );
    assert_eq!(
        done,
        ["nothing of the learner's gave the permission"],
        "{done:?}"
    );
}

const POLICY: &str = "/apis/kyverno.io/v1/clusterpolicies/kca-default-deny";

#[tokio::test(start_paused = true)]
async fn accepted_dry_runs_an_update_of_an_existing_policy_and_reads_the_webhook() {
    let denial = "admission webhook \"validate-policy.kyverno.svc\" denied the request: path: \
                  spec.rules[0].generate..: system:serviceaccount:kyverno:kyverno-background-controller \
                  requires permissions get,create,update,delete for resource \
                  networking.k8s.io/v1/NetworkPolicy in namespace {{request.object.metadata.name}}";
    let (live, log) = mock(move |s| {
        if let Some(r) = discovery(s) {
            return r;
        }
        match (s.method.as_str(), s.path.as_str()) {
            ("GET", POLICY) => reply(
                200,
                json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
                    "metadata": {"name": "kca-default-deny", "resourceVersion": "42"}}),
            ),
            ("PUT", POLICY) => reply(400, status_failure(400, "BadRequest", denial, json!({}))),
            _ => not_found_page(),
        }
    });
    let lab = mutate_lab();
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    kca::lab::workspace::materialize(&lab, kca::lab::workspace::Stage::Solution, &ws).unwrap();
    let check = lab.check("netpol-accepted").unwrap();
    let env = Submission {
        lab: &lab,
        workspace: &ws,
    };
    let o = kca::lab::live::evaluate(&live, env, check, &common::printer()).await;
    assert_eq!(o.verdict, Verdict::Fail, "{}", o.detail);
    assert!(o.detail.contains("requires permissions"), "{}", o.detail);
    let seen = log.lock().unwrap().clone();
    let put = seen
        .iter()
        .find(|s| s.method == "PUT" && s.path == POLICY)
        .expect("an update dry run");
    assert_eq!(put.query.get("dryRun").map(String::as_str), Some("All"));
    assert_eq!(
        put.body.pointer("/metadata/resourceVersion"),
        Some(&json!("42"))
    );
    assert!(!seen.iter().any(|s| s.method == "POST"), "{seen:?}");
}

const SOURCE: &str = "/api/v1/namespaces/kca-mutate-source/configmaps/org-ca";

/// A cluster where the clone's copy follows its source (`follows`) or keeps the old data.
async fn run_sync(follows: bool) -> (kca::lab::check::Outcome, Vec<Seen>) {
    let source_data = Arc::new(Mutex::new(json!({"ca.crt": "old"})));
    let src = source_data.clone();
    let (live, log) = mock(move |s| {
        if s.method == "GET" && s.path == "/api/v1" {
            return reply(
                200,
                resources(
                    "v1",
                    &[
                        ("namespaces", "Namespace", false),
                        ("configmaps", "ConfigMap", true),
                    ],
                ),
            );
        }
        if let Some(r) = discovery(s) {
            return r;
        }
        let method = s.method.as_str();
        match method {
            "GET" if s.path == "/apis/kyverno.io/v1/clusterpolicies/kca-clone-ca" => reply(
                200,
                json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
                    "metadata": {"name": "kca-clone-ca"},
                    "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
            ),
            "POST" if s.path == "/api/v1/namespaces" => reply(201, s.body.clone()),
            "GET" if s.path == SOURCE => reply(
                200,
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "org-ca", "namespace": "kca-mutate-source",
                        "labels": {"kca.dev/lab": "kca-mutate", "app.kubernetes.io/managed-by": "kca"}},
                    "data": src.lock().unwrap().clone()}),
            ),
            "PATCH" if s.path == SOURCE => {
                if let Some(d) = s.body.get("data") {
                    *src.lock().unwrap() = d.clone();
                }
                reply(200, json!({}))
            }
            "GET" if s.path.ends_with("/configmaps/org-ca") => {
                let data = if follows {
                    src.lock().unwrap().clone()
                } else {
                    json!({"ca.crt": "old"})
                };
                let data = match data.get("ca.crt").and_then(Value::as_str) {
                    Some("old") => json!({"ca.crt": "the organisation's CA bundle"}),
                    _ => data,
                };
                reply(
                    200,
                    json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "org-ca"}, "data": data}),
                )
            }
            "DELETE" => kube_mock::success(),
            _ => not_found_page(),
        }
    });
    let mut lab = mutate_lab();
    for t in &mut lab.tasks {
        for c in &mut t.checks {
            c.timeout = std::time::Duration::from_secs(5);
        }
    }
    let check = lab.check("ca-cloned").unwrap().clone();
    let tmp = tempfile::tempdir().unwrap();
    let env = Submission {
        lab: &lab,
        workspace: tmp.path(),
    };
    let o = kca::lab::live::evaluate(&live, env, &check, &common::printer()).await;
    let seen = log.lock().unwrap().clone();
    (o, seen)
}

fn source_patches(seen: &[Seen]) -> Vec<Value> {
    seen.iter()
        .filter(|s| s.method == "PATCH" && s.path == SOURCE)
        .map(|s| s.body.clone())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_synchronized_copy_follows_its_source_and_the_source_is_put_back() {
    let (o, seen) = run_sync(true).await;
    assert_eq!(o.verdict, Verdict::Pass, "{}", o.detail);
    let patches = source_patches(&seen);
    assert_eq!(patches.len(), 2, "change, then restore: {patches:?}");
    assert_eq!(patches[1], json!({"data": {"ca.crt": "old"}}));
}

#[tokio::test(start_paused = true)]
async fn a_copy_that_does_not_follow_fails_and_the_source_is_still_put_back() {
    let (o, seen) = run_sync(false).await;
    assert_eq!(o.verdict, Verdict::Fail, "{}", o.detail);
    assert!(o.detail.contains("did not follow"), "{}", o.detail);
    assert_eq!(source_patches(&seen).len(), 2);
}

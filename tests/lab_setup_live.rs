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
use kca::settings::{Lang, OutputFormat, Settings};
use kca::target::live::Live;
use kca::ui::Printer;
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
                &[("clusterroles", "ClusterRole", false)],
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

fn grant(labels: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "kca-mutate-generator", "labels": labels}, "rules": []})
}

async fn run_setup(labels: Value) -> (Vec<String>, Vec<Seen>) {
    let (live, log) = mock(move |s| {
        if let Some(r) = discovery(s) {
            return r;
        }
        match (s.method.as_str(), s.path.as_str()) {
            ("GET", GRANT) => reply(200, grant(labels.clone())),
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
        ["deleted ClusterRole kca-mutate-generator"],
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
    assert!(done[0].contains("not the lab's"), "{done:?}");
}

fn printer() -> Printer {
    Printer::new(&Settings {
        color: false,
        output: OutputFormat::Text,
        lang: Lang::En,
        verbosity: -1,
        content_dir: ".".into(),
        state_dir: ".".into(),
        home: ".".into(),
    })
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
    let o = kca::lab::live::evaluate(&live, env, check, &printer()).await;
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

//! The live side of the checks that grade what a learner must not do and what they saw,
//! against the shared mocked API server (`tests/common/kube_mock.rs`), on kca-mutate's own
//! checks: `least-privilege` (the cluster's copies of the learner's RBAC, each required
//! grant a SubjectAccessReview), a `leftAlone` generate trigger (nothing generated for it),
//! `observed` (the learner's incident.yaml against the cluster's UpdateRequest), the
//! `revoke` incident (the learner's grant found by its rules, whatever its name), and
//! `lab verify --live` staging every setup on the variant's workspace. Each has its wrong
//! answer (`fail`) and an API that cannot answer (`error`, not the learner's `fail`).

mod common;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::kube_mock::{self, Reply, Seen, not_found_page, reply, resources, status_failure};
use kca::content::lab::Lab;
use kca::content::{Document, load_file};
use kca::lab::check::{Outcome, Submission, Verdict};
use kca::lab::workspace::{Stage, materialize};
use kca::target::live::Live;
use serde_json::{Value, json};

const SA: &str = "system:serviceaccount:kyverno:kyverno-background-controller";
const CLUSTER_ROLES: &str = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
const URS: &str = "/apis/kyverno.io/v2/namespaces/kyverno/updaterequests";
const SAR: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

type Route = dyn Fn(&Seen) -> Option<Reply> + Send + Sync;

/// A `Live` on the mock server: discovery for the kinds kca-mutate touches, then `route`,
/// then 404.
fn mock(route: Arc<Route>) -> (Live, Arc<Mutex<Vec<Seen>>>) {
    let (client, server) = kube_mock::serve(Box::new(move |s| {
        discovery(s)
            .or_else(|| route(s))
            .unwrap_or_else(not_found_page)
    }));
    (Live::from_client(client), server.log.clone())
}

fn discovery(s: &Seen) -> Option<Reply> {
    if !s.is_discovery() {
        return None;
    }
    let list = |gv: &str, r: &[(&str, &str, bool)]| Some(reply(200, resources(gv, r)));
    match s.path.as_str() {
        "/api/v1" => list(
            "v1",
            &[
                ("namespaces", "Namespace", false),
                ("configmaps", "ConfigMap", true),
                ("pods", "Pod", true),
            ],
        ),
        "/apis/rbac.authorization.k8s.io/v1" => list(
            "rbac.authorization.k8s.io/v1",
            &[
                ("clusterroles", "ClusterRole", false),
                ("roles", "Role", true),
                ("clusterrolebindings", "ClusterRoleBinding", false),
                ("rolebindings", "RoleBinding", true),
            ],
        ),
        "/apis/networking.k8s.io/v1" => list(
            "networking.k8s.io/v1",
            &[("networkpolicies", "NetworkPolicy", true)],
        ),
        "/apis/kyverno.io/v1" => list(
            "kyverno.io/v1",
            &[
                ("clusterpolicies", "ClusterPolicy", false),
                ("policies", "Policy", true),
            ],
        ),
        "/apis/kyverno.io/v2" => list(
            "kyverno.io/v2",
            &[("updaterequests", "UpdateRequest", true)],
        ),
        _ => Some(not_found_page()),
    }
}

fn mutate_lab() -> Lab {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("labs/kca-mutate/lab.yaml");
    let Ok(Document::Lab(lab)) = load_file(&path) else {
        panic!("kca-mutate does not load");
    };
    let mut lab = *lab;
    for t in &mut lab.tasks {
        for c in &mut t.checks {
            c.timeout = Duration::from_secs(3);
        }
    }
    lab
}

/// kca-mutate's solution laid out, with `edit` applied to its files.
fn solution(lab: &Lab, edit: impl Fn(&Path)) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    materialize(lab, Stage::Solution, tmp.path()).unwrap();
    edit(tmp.path());
    tmp
}

async fn run(live: &Live, lab: &Lab, ws: &Path, id: &str) -> Outcome {
    let check = lab.check(id).unwrap();
    let env = Submission { lab, workspace: ws };
    kca::lab::live::evaluate(live, env, check, &common::printer()).await
}

fn requests(log: &Mutex<Vec<Seen>>, method: &str, path: &str) -> Vec<Seen> {
    log.lock()
        .unwrap()
        .iter()
        .filter(|s| s.method == method && s.path.starts_with(path))
        .cloned()
        .collect()
}

fn list_of(items: Vec<Value>) -> Reply {
    reply(
        200,
        json!({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}),
    )
}

fn server_error() -> Reply {
    reply(
        500,
        status_failure(
            500,
            "InternalError",
            "etcdserver: request timed out",
            json!({}),
        ),
    )
}

fn forbidden(what: &str) -> Reply {
    reply(
        403,
        status_failure(
            403,
            "Forbidden",
            &format!("{what} is forbidden: User \"learner\" cannot do that"),
            json!({}),
        ),
    )
}

// ---- least-privilege: the cluster's copy of the learner's grant, SubjectAccessReviews ----

/// The solution's grant as the cluster holds it, plus `extra` rules.
fn cluster_grant(extra: &[Value]) -> Value {
    let mut rules = vec![
        json!({"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": ["get", "create", "update", "delete"]}),
        json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create", "update", "delete"]}),
    ];
    rules.extend(extra.iter().cloned());
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "kca-mutate-generator",
            "labels": {"rbac.kyverno.io/aggregate-to-background-controller": "true"}},
        "rules": rules})
}

/// A server holding `grant` (and `others` among its ClusterRoles, beside the chart's and
/// the API server's own) and answering SubjectAccessReviews as its rules say (or with
/// `sar` when given).
fn rbac_server(grant: Option<Value>, sar: Option<Reply>) -> (Live, Arc<Mutex<Vec<Seen>>>) {
    rbac_server_with(grant, sar, vec![])
}

fn rbac_server_with(
    grant: Option<Value>,
    sar: Option<Reply>,
    others: Vec<Value>,
) -> (Live, Arc<Mutex<Vec<Seen>>>) {
    let path = format!("{CLUSTER_ROLES}/kca-mutate-generator");
    let mut roles = others;
    roles.extend(grant.clone());
    // Installed, not the learner's: never counted against the envelope.
    roles.push(
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "system:aggregate-to-edit"},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}),
    );
    roles.push(
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "kyverno:migrate-resources",
            "labels": {"app.kubernetes.io/managed-by": "Helm",
                "rbac.kyverno.io/aggregate-to-background-controller": "true"}},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["update"]}]}),
    );
    mock(Arc::new(move |s: &Seen| {
        match (s.method.as_str(), s.path.as_str()) {
            ("GET", p) if p == path => Some(match &grant {
                Some(g) => reply(200, g.clone()),
                None => server_error(),
            }),
            ("GET", CLUSTER_ROLES) => Some(list_of(roles.clone())),
            (
                "GET",
                "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
                | "/apis/rbac.authorization.k8s.io/v1/roles"
                | "/apis/rbac.authorization.k8s.io/v1/rolebindings",
            ) => Some(list_of(vec![])),
            ("POST", SAR) => Some(sar.clone().unwrap_or_else(|| {
                let a = &s.body["spec"]["resourceAttributes"];
                let allowed = a["group"] == "networking.k8s.io"
                    && a["resource"] == "networkpolicies"
                    && ["get", "create", "update", "delete"].contains(&a["verb"].as_str().unwrap());
                reply(
                    201,
                    json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                    "status": {"allowed": allowed}}),
                )
            })),
            _ => None,
        }
    }))
}

#[tokio::test(start_paused = true)]
async fn least_privilege_live_asks_each_required_grant_of_the_server() {
    let lab = mutate_lab();
    let ws = solution(&lab, |_| {});
    let (live, log) = rbac_server(Some(cluster_grant(&[])), None);
    let o = run(&live, &lab, ws.path(), "bg-least-privilege").await;
    assert_eq!(o.verdict, Verdict::Pass, "{}", o.detail);
    let gets = requests(
        &log,
        "GET",
        &format!("{CLUSTER_ROLES}/kca-mutate-generator"),
    );
    assert_eq!(
        gets.len(),
        1,
        "the cluster's copy of the learner's grant is read"
    );
    let reviews = requests(&log, "POST", SAR);
    let mut verbs: Vec<&str> = reviews
        .iter()
        .map(|s| {
            s.body["spec"]["resourceAttributes"]["verb"]
                .as_str()
                .unwrap()
        })
        .collect();
    verbs.sort();
    assert_eq!(verbs, ["create", "delete", "get", "update"]);
    for r in &reviews {
        assert!(r.query.is_empty(), "{:?}", r.query);
        assert_eq!(r.body["kind"], "SubjectAccessReview");
        assert_eq!(r.body["spec"]["user"], SA);
        let groups = r.body["spec"]["groups"].as_array().unwrap();
        assert!(
            groups.contains(&json!("system:serviceaccounts:kyverno")),
            "{groups:?}"
        );
        let attrs = &r.body["spec"]["resourceAttributes"];
        assert_eq!(attrs["group"], "networking.k8s.io");
        assert_eq!(attrs["resource"], "networkpolicies");
        assert!(attrs.get("namespace").is_none(), "cluster-wide: {attrs}");
    }
}

#[tokio::test(start_paused = true)]
async fn least_privilege_live_fails_on_the_clusters_wider_copy_naming_the_rule() {
    let lab = mutate_lab();
    // The file is right; what the cluster holds (applied from an older edit) is not.
    let ws = solution(&lab, |_| {});
    let wide =
        json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["create", "update", "delete"]});
    let (live, _) = rbac_server(Some(cluster_grant(&[wide])), None);
    let o = run(&live, &lab, ws.path(), "bg-least-privilege").await;
    assert_eq!(o.verdict, Verdict::Fail, "{}", o.detail);
    assert!(
        o.detail
            .contains("ClusterRole kca-mutate-generator rules[2]"),
        "{}",
        o.detail
    );
    assert!(o.detail.contains("create on *"), "{}", o.detail);
}

#[tokio::test(start_paused = true)]
async fn least_privilege_live_counts_a_grant_applied_from_no_file_of_the_workspace() {
    let lab = mutate_lab();
    let ws = solution(&lab, |_| {});
    // Applied once with kubectl, its file since deleted: still the learner's grant.
    let helper = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "helper",
            "labels": {"rbac.kyverno.io/aggregate-to-background-controller": "true"}},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["create", "delete"]}]});
    let (live, log) = rbac_server_with(Some(cluster_grant(&[])), None, vec![helper]);
    let o = run(&live, &lab, ws.path(), "bg-least-privilege").await;
    assert_eq!(o.verdict, Verdict::Fail, "{}", o.detail);
    assert!(
        o.detail.contains("ClusterRole helper rules[0]"),
        "{}",
        o.detail
    );
    assert!(
        !o.detail.contains("migrate-resources") && !o.detail.contains("system:aggregate"),
        "installed roles are not the learner's: {}",
        o.detail
    );
    assert_eq!(
        requests(&log, "GET", CLUSTER_ROLES).len(),
        2,
        "a get and a list"
    );
}

#[tokio::test(start_paused = true)]
async fn least_privilege_live_is_an_error_when_the_api_cannot_answer() {
    let lab = mutate_lab();
    let ws = solution(&lab, |_| {});
    let (live, _) = rbac_server(None, None);
    let o = run(&live, &lab, ws.path(), "bg-least-privilege").await;
    assert_eq!(
        o.verdict,
        Verdict::Error,
        "500 reading the grant: {}",
        o.detail
    );
    let (live, _) = rbac_server(
        Some(cluster_grant(&[])),
        Some(forbidden("subjectaccessreviews.authorization.k8s.io")),
    );
    let o = run(&live, &lab, ws.path(), "bg-least-privilege").await;
    assert_eq!(o.verdict, Verdict::Error, "403 on the review: {}", o.detail);
}

// ---- leftAlone generate: an unlabelled Namespace gets no default-deny ----

fn ready_policy(name: &str) -> Reply {
    reply(
        200,
        json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": name},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Succeeded"}]}}),
    )
}

#[derive(Clone, Copy, PartialEq)]
enum Cluster {
    /// Nothing generated, no UpdateRequest.
    LeavesItAlone,
    /// The NetworkPolicy appears in the trigger's namespace.
    Generates,
    /// Kyverno made an UpdateRequest for the trigger.
    Requests,
    /// The trigger cannot be created.
    CreateFails,
    /// Listing UpdateRequests is forbidden.
    UrsForbidden,
}

fn generate_server(how: Cluster) -> (Live, Arc<Mutex<Vec<Seen>>>) {
    let trigger: Arc<Mutex<String>> = Arc::default();
    mock(Arc::new(move |s: &Seen| {
        let name = trigger.lock().unwrap().clone();
        Some(match (s.method.as_str(), s.path.as_str()) {
            ("GET", "/apis/kyverno.io/v1/clusterpolicies/kca-default-deny") => {
                ready_policy("kca-default-deny")
            }
            ("POST", "/api/v1/namespaces") if how == Cluster::CreateFails => server_error(),
            ("POST", "/api/v1/namespaces") => {
                *trigger.lock().unwrap() = s.body["metadata"]["name"].as_str().unwrap().into();
                let mut b = s.body.clone();
                b["metadata"]["uid"] = json!("uid-1");
                reply(201, b)
            }
            ("GET", p) if p.ends_with("/networkpolicies/default-deny") => match how {
                Cluster::Generates => reply(
                    200,
                    json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                        "metadata": {"name": "default-deny", "namespace": name}, "spec": {}}),
                ),
                _ => not_found_page(),
            },
            ("GET", URS) => match how {
                Cluster::UrsForbidden => forbidden("updaterequests.kyverno.io"),
                Cluster::Requests => list_of(vec![json!({
                    "apiVersion": "kyverno.io/v2", "kind": "UpdateRequest",
                    "metadata": {"name": "ur-1", "namespace": "kyverno"},
                    "spec": {"requestType": "generate", "policy": "kca-default-deny",
                        "ruleContext": [{"rule": "default-deny", "trigger":
                            {"apiVersion": "v1", "kind": "Namespace", "name": name, "uid": "uid-1"}}]},
                    "status": {"state": "Pending"}})]),
                _ => list_of(vec![]),
            },
            ("DELETE", p) if p.starts_with("/api/v1/namespaces/") => kube_mock::success(),
            _ => return None,
        })
    }))
}

#[tokio::test(start_paused = true)]
async fn a_left_alone_trigger_live_passes_only_when_nothing_is_generated_for_it() {
    let lab = mutate_lab();
    let ws = solution(&lab, |_| {});
    for (how, want) in [
        (Cluster::LeavesItAlone, Verdict::Pass),
        (Cluster::Generates, Verdict::Fail),
        (Cluster::Requests, Verdict::Fail),
        (Cluster::UrsForbidden, Verdict::Error),
        (Cluster::CreateFails, Verdict::Error),
    ] {
        let (live, log) = generate_server(how);
        let o = run(&live, &lab, ws.path(), "netpol-leaves-unlabelled").await;
        assert_eq!(o.verdict, want, "{}", o.detail);
        let posts = requests(&log, "POST", "/api/v1/namespaces");
        assert_eq!(posts.len(), 1);
        let body = &posts[0].body;
        let labels = body["metadata"]["labels"].as_object().unwrap();
        assert!(
            !labels.contains_key("kca.io/network"),
            "the trigger lies outside the scope: {labels:?}"
        );
        assert_eq!(labels["kca.dev/lab"], "kca-mutate");
        if how == Cluster::CreateFails {
            continue;
        }
        let name = body["metadata"]["name"].as_str().unwrap();
        assert!(name.starts_with("kca-mutate-plain-"), "{name}");
        let deleted = requests(&log, "DELETE", &format!("/api/v1/namespaces/{name}"));
        assert_eq!(
            deleted.len(),
            1,
            "the trigger is deleted whatever the verdict"
        );
        if how == Cluster::Generates {
            assert!(o.detail.contains("was generated"), "{}", o.detail);
        }
    }
}

// ---- observed: incident.yaml against the UpdateRequest the cluster shows ----

fn failing_ur(state: &str, verb: &str, resource: &str) -> Value {
    json!({"apiVersion": "kyverno.io/v2", "kind": "UpdateRequest",
        "metadata": {"name": "ur-7", "namespace": "kyverno"},
        "spec": {"requestType": "generate", "policy": "kca-default-deny"},
        "status": {"state": state, "message": format!(
            "failed to generate resource: {resource}.networking.k8s.io \"default-deny\" is forbidden: \
             User \"{SA}\" cannot {verb} resource \"{resource}\" in API group \"networking.k8s.io\" \
             in the namespace \"kca-mutate-probe-x\"")}})
}

fn ur_server(urs: Option<Vec<Value>>) -> (Live, Arc<Mutex<Vec<Seen>>>) {
    mock(Arc::new(move |s: &Seen| {
        (s.method == "GET" && s.path == URS).then(|| match &urs {
            Some(u) => list_of(u.clone()),
            None => server_error(),
        })
    }))
}

#[tokio::test(start_paused = true)]
async fn an_observation_is_graded_against_the_update_request_of_this_cluster() {
    let lab = mutate_lab();
    let ws = solution(&lab, |_| {}); // Failed, create, networkpolicies
    // What the cluster shows agrees (Pending after a retry is as honest as Failed).
    for state in ["Failed", "Pending"] {
        let (live, log) = ur_server(Some(vec![failing_ur(state, "create", "networkpolicies")]));
        let o = run(&live, &lab, ws.path(), "incident-recorded").await;
        assert_eq!(o.verdict, Verdict::Pass, "{state}: {}", o.detail);
        assert_eq!(requests(&log, "GET", URS).len(), 1);
    }
    // This run's controller was refused another verb: the record copied from the task
    // text does not match it.
    let (live, _) = ur_server(Some(vec![failing_ur(
        "Failed",
        "update",
        "networkpolicies",
    )]));
    let o = run(&live, &lab, ws.path(), "incident-recorded").await;
    assert_eq!(o.verdict, Verdict::Fail, "{}", o.detail);
    assert!(o.detail.contains("forbiddenVerb"), "{}", o.detail);
    // The UpdateRequests cannot be read: the environment's trouble.
    let (live, _) = ur_server(None);
    let o = run(&live, &lab, ws.path(), "incident-recorded").await;
    assert_eq!(o.verdict, Verdict::Error, "{}", o.detail);
}

// ---- revoke: the learner's grant whatever its name ----

fn clusterrole(name: &str, aggregated: bool, verbs: &[&str]) -> Value {
    let mut labels = json!({});
    if aggregated {
        labels["rbac.kyverno.io/aggregate-to-background-controller"] = json!("true");
    }
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": name, "labels": labels},
        "rules": [{"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": verbs}]})
}

fn binding(name: &str, role: &str) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": "kyverno-background-controller", "namespace": "kyverno"}]})
}

fn yaml_of(objects: &[Value]) -> String {
    objects
        .iter()
        .map(|o| serde_json::to_string(o).unwrap())
        .collect::<Vec<_>>()
        .join("\n---\n")
}

/// The cluster holds `cluster` (ClusterRoles and ClusterRoleBindings); the learner's
/// rbac.yaml holds `mine`. Returns the setup's lines and the paths deleted.
async fn revoke(
    mine: &[Value],
    cluster: Vec<Value>,
    fail_list: bool,
) -> (Result<Vec<String>, String>, Vec<String>) {
    let lab = mutate_lab();
    let ws = solution(&lab, |ws| {
        std::fs::write(ws.join("rbac.yaml"), yaml_of(mine)).unwrap();
    });
    let (live, log) = mock(Arc::new(move |s: &Seen| {
        let of = |kind: &str| {
            list_of(
                cluster
                    .iter()
                    .filter(|o| o["kind"] == kind)
                    .cloned()
                    .collect(),
            )
        };
        Some(match (s.method.as_str(), s.path.as_str()) {
            ("GET", CLUSTER_ROLES) if fail_list => server_error(),
            ("GET", CLUSTER_ROLES) => of("ClusterRole"),
            ("GET", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings") => {
                of("ClusterRoleBinding")
            }
            (
                "GET",
                "/apis/rbac.authorization.k8s.io/v1/roles"
                | "/apis/rbac.authorization.k8s.io/v1/rolebindings",
            ) => list_of(vec![]),
            ("DELETE", _) => kube_mock::success(),
            _ => return None,
        })
    }));
    let task = lab.task("lost-grant").unwrap();
    let done = kca::lab::setup::apply_live_in(&live, &lab, task, Some(ws.path()))
        .await
        .map_err(|e| e.to_string());
    let deleted = requests(&log, "DELETE", "/")
        .into_iter()
        .map(|s| {
            assert_eq!(
                s.query_pairs(),
                [("propagationPolicy", "Background")],
                "{}",
                s.path
            );
            s.path
        })
        .collect();
    (done, deleted)
}

#[tokio::test(start_paused = true)]
async fn the_revoke_incident_takes_the_learners_grant_by_its_rules_not_its_name() {
    let mine = clusterrole("my-own-grant", true, &["get", "create", "update", "delete"]);
    // Someone else's grant of the same permission, and the learner's read-only role.
    let foreign = clusterrole("platform-netpol-writer", true, &["create"]);
    let reader = clusterrole("my-reader", true, &["get"]);
    let (done, deleted) = revoke(
        &[mine.clone(), reader.clone()],
        vec![mine, foreign, reader],
        false,
    )
    .await;
    let done = done.unwrap();
    assert_eq!(
        deleted,
        [format!("{CLUSTER_ROLES}/my-own-grant")],
        "{done:?}"
    );
    assert!(done[0].contains("my-own-grant"), "{done:?}");
}

#[tokio::test(start_paused = true)]
async fn the_revoke_incident_finds_a_grant_handed_over_by_the_learners_own_binding() {
    // Not aggregated: bound to the controller by a binding of the learner's.
    let role = clusterrole("np-writer", false, &["get", "create"]);
    let bind = binding("np-writer-to-bg", "np-writer");
    let (done, deleted) = revoke(&[role.clone(), bind.clone()], vec![role, bind], false).await;
    assert_eq!(
        deleted,
        [format!("{CLUSTER_ROLES}/np-writer")],
        "the role goes, the binding stays: {done:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_revoke_incident_is_an_error_when_the_roles_cannot_be_listed() {
    let mine = clusterrole("my-own-grant", true, &["create"]);
    let cluster = vec![mine.clone()];
    let (done, deleted) = revoke(std::slice::from_ref(&mine), cluster, true).await;
    assert!(done.is_err(), "{done:?}");
    assert!(deleted.is_empty());
}

// ---- lab verify --live: the setups staged on the variant, then its files applied again ----

fn ctx() -> kca::ctx::Ctx {
    let cli = <kca::cli::Cli as clap::Parser>::try_parse_from(["kca", "validate"]).unwrap();
    kca::ctx::Ctx::new(kca::app::settings_from(
        &cli,
        &kca::settings::Env::default(),
    ))
}

/// A server that keeps what is applied (server-side apply) and deleted, and lists it.
fn storing_server() -> (Live, Arc<Mutex<Vec<Seen>>>) {
    let stored: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
    mock(Arc::new(move |s: &Seen| {
        let mut st = stored.lock().unwrap();
        Some(match s.method.as_str() {
            "PATCH" => {
                st.retain(|(p, _)| p != &s.path);
                st.push((s.path.clone(), s.body.clone()));
                reply(200, s.body.clone())
            }
            "DELETE" => {
                st.retain(|(p, _)| p != &s.path);
                kube_mock::success()
            }
            "GET" if s.path.starts_with("/apis/rbac.authorization.k8s.io/v1/") => {
                let items = st
                    .iter()
                    .filter(|(p, _)| p.rsplit_once('/').is_some_and(|(c, _)| c == s.path))
                    .map(|(_, o)| o.clone())
                    .collect();
                list_of(items)
            }
            _ => return None,
        })
    }))
}

#[tokio::test(start_paused = true)]
async fn verify_live_stages_each_setup_on_the_variants_workspace_then_applies_it_again() {
    let lab = mutate_lab();
    // The learner's grant under a name of their own: the incident must still find it.
    let ws = solution(&lab, |ws| {
        let p = ws.join("rbac.yaml");
        let t = std::fs::read_to_string(&p).unwrap();
        std::fs::write(
            &p,
            t.replace("name: kca-mutate-generator", "name: my-own-grant"),
        )
        .unwrap();
    });
    let grant = format!("{CLUSTER_ROLES}/my-own-grant");
    let (live, log) = storing_server();
    kca::lab::verify::stage_on_cluster(&ctx(), &live, &lab, Stage::Solution, ws.path())
        .await
        .unwrap();
    let order: Vec<String> = log
        .lock()
        .unwrap()
        .iter()
        .filter(|s| !s.is_discovery() && (s.path == grant || s.path == CLUSTER_ROLES))
        .map(|s| format!("{} {}", s.method, s.path))
        .collect();
    assert_eq!(
        order,
        [
            format!("PATCH {grant}"),
            format!("GET {CLUSTER_ROLES}"),
            format!("DELETE {grant}"),
            format!("PATCH {grant}"),
        ],
        "applied, revoked by the incident, applied again as the learner restores it"
    );
    // The starter meets no setup.
    let (live, log) = storing_server();
    kca::lab::verify::stage_on_cluster(&ctx(), &live, &lab, Stage::Starter, ws.path())
        .await
        .unwrap();
    assert!(requests(&log, "DELETE", "/").is_empty());
    assert!(requests(&log, "GET", CLUSTER_ROLES).is_empty());
}

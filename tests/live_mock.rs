//! The live target against a mocked API server: every request's method, path, query,
//! headers and body are recorded and asserted, and the answers are shaped like a real API
//! server's (discovery lists, Status objects, Warning headers).

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::kube_mock::{
    self, Reply, Router, Seen, Server, not_found_page, reply, status_failure, without_discovery,
};
use http::{Request, Response};
use kca::target::live::{Live, LiveError};
use kca::target::{AccessQuery, Admission, DeniedBy, Identity, ObjRef, Operation};
use kube::client::Body;
use serde_json::{Value, json};

/// A `Live` on a mock service answering with `route`, and the log of what it was asked.
fn mock(route: Router) -> (Live, Arc<Mutex<Vec<Seen>>>, Server) {
    let (client, server) = kube_mock::serve(route);
    (Live::from_client(client), server.log.clone(), server)
}

// ---- realistic server answers ----

fn core_v1_resources() -> Value {
    json!({
        "kind": "APIResourceList",
        "groupVersion": "v1",
        "resources": [
            {"name": "configmaps", "singularName": "configmap", "namespaced": true, "kind": "ConfigMap",
             "verbs": ["create","delete","deletecollection","get","list","patch","update","watch"], "shortNames": ["cm"]},
            {"name": "namespaces", "singularName": "namespace", "namespaced": false, "kind": "Namespace",
             "verbs": ["create","delete","get","list","patch","update","watch"], "shortNames": ["ns"]},
            {"name": "namespaces/status", "singularName": "", "namespaced": false, "kind": "Namespace", "verbs": ["get","patch","update"]},
            {"name": "pods", "singularName": "pod", "namespaced": true, "kind": "Pod",
             "verbs": ["create","delete","deletecollection","get","list","patch","update","watch"], "shortNames": ["po"]},
            {"name": "pods/status", "singularName": "", "namespaced": true, "kind": "Pod", "verbs": ["get","patch","update"]},
            {"name": "pods/eviction", "singularName": "", "namespaced": true, "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]}
        ]
    })
}

fn kyverno_v1_resources() -> Value {
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": "kyverno.io/v1",
        "resources": [
            {"name": "clusterpolicies", "singularName": "clusterpolicy", "namespaced": false, "kind": "ClusterPolicy",
             "verbs": ["delete","deletecollection","get","list","patch","create","update","watch"], "shortNames": ["cpol"], "categories": ["kyverno"]},
            {"name": "clusterpolicies/status", "singularName": "", "namespaced": false, "kind": "ClusterPolicy", "verbs": ["get","patch","update"]},
            {"name": "policies", "singularName": "policy", "namespaced": true, "kind": "Policy",
             "verbs": ["delete","deletecollection","get","list","patch","create","update","watch"], "shortNames": ["pol"]}
        ]
    })
}

fn discovery(seen: &Seen) -> Option<Reply> {
    match (seen.method.as_str(), seen.path.as_str()) {
        ("GET", "/api/v1") => Some(reply(200, core_v1_resources())),
        ("GET", "/apis/kyverno.io/v1") => Some(reply(200, kyverno_v1_resources())),
        ("GET", p) if p.starts_with("/apis/") && p.matches('/').count() == 3 => {
            Some(not_found_page())
        }
        _ => None,
    }
}

fn pod(ns: &str, name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}
    })
}

async fn finish(live: Live, server: Server) {
    drop(live);
    server.finish().await;
}

// ---- tests ----

#[tokio::test(start_paused = true)]
async fn server_version_reads_vendor_minor() {
    let (live, log, task) = mock(Box::new(|s| {
        assert_eq!((s.method.as_str(), s.path.as_str()), ("GET", "/version"));
        reply(
            200,
            json!({"major": "1", "minor": "33+", "gitVersion": "v1.33.4-gke.100", "platform": "linux/amd64"}),
        )
    }));
    assert_eq!(live.server_version().await.unwrap(), (1, 33));
    assert_eq!(log.lock().unwrap().len(), 1);
    finish(live, task).await;
}

#[tokio::test(start_paused = true)]
async fn serves_uses_discovery_and_caches_it() {
    let (live, log, task) = mock(Box::new(|s| discovery(s).unwrap_or_else(not_found_page)));
    assert!(live.serves("kyverno.io/v1", "ClusterPolicy").await.unwrap());
    assert!(live.serves("kyverno.io/v1", "Policy").await.unwrap());
    assert!(
        !live
            .serves(
                "admissionregistration.k8s.io/v1",
                "ValidatingAdmissionPolicy"
            )
            .await
            .unwrap()
    );
    // A subresource's kind is not a served kind of its own.
    assert!(!live.serves("v1", "Eviction").await.unwrap());
    let paths: Vec<String> = log.lock().unwrap().iter().map(|s| s.path.clone()).collect();
    // ClusterPolicy fetched the list; Policy hit the cache; a missing kind is re-checked once.
    assert_eq!(
        paths,
        vec![
            "/apis/kyverno.io/v1",
            "/apis/admissionregistration.k8s.io/v1",
            "/api/v1",
        ]
    );
    finish(live, task).await;
}

#[tokio::test(start_paused = true)]
async fn can_i_sends_a_subject_access_review_without_impersonation() {
    let (live, log, task) = mock(Box::new(|s| {
        reply(
            201,
            json!({
                "kind": "SubjectAccessReview",
                "apiVersion": "authorization.k8s.io/v1",
                "metadata": {"creationTimestamp": null},
                "spec": s.body["spec"].clone(),
                "status": {"allowed": true, "reason": "RBAC: allowed by RoleBinding \"builder/lab\" of Role \"cm-writer\" to ServiceAccount \"builder/lab\""}
            }),
        )
    }));
    let sa = Identity::service_account("lab", "builder");
    let q = AccessQuery {
        user: sa.user.clone(),
        groups: sa.groups.clone(),
        verb: "create".into(),
        group: String::new(),
        resource: "configmaps".into(),
        subresource: String::new(),
        namespace: "lab".into(),
        name: String::new(),
    };
    let a = live.can_i(&q).await.unwrap();
    assert!(a.allowed);
    assert!(a.reason.contains("RoleBinding"));
    let seen = log.lock().unwrap()[0].clone();
    assert_eq!(seen.method, "POST");
    assert_eq!(
        seen.path,
        "/apis/authorization.k8s.io/v1/subjectaccessreviews"
    );
    assert!(seen.query.is_empty());
    assert_eq!(seen.header("content-type"), Some("application/json"));
    assert!(
        seen.header("impersonate-user").is_none(),
        "SAR must be asked as the caller"
    );
    assert_eq!(
        seen.body,
        json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": "system:serviceaccount:lab:builder",
                "resourceAttributes": {"namespace": "lab", "verb": "create", "resource": "configmaps"},
                "groups": ["system:serviceaccounts", "system:serviceaccounts:lab", "system:authenticated"]
            }
        })
    );
    finish(live, task).await;
}

#[tokio::test(start_paused = true)]
async fn can_i_denied_carries_reason_and_evaluation_error() {
    let (live, log, task) = mock(Box::new(|s| {
        reply(
            201,
            json!({
                "kind": "SubjectAccessReview",
                "apiVersion": "authorization.k8s.io/v1",
                "metadata": {},
                "spec": s.body["spec"].clone(),
                "status": {"allowed": false, "evaluationError": "role.rbac.authorization.k8s.io \"gone\" not found"}
            }),
        )
    }));
    let q = AccessQuery {
        user: "alice".into(),
        verb: "get".into(),
        group: "kyverno.io".into(),
        resource: "clusterpolicies".into(),
        subresource: "status".into(),
        name: "require-labels".into(),
        ..Default::default()
    };
    let a = live.can_i(&q).await.unwrap();
    assert!(!a.allowed);
    assert!(a.reason.contains("\"gone\" not found"));
    let body = log.lock().unwrap()[0].body.clone();
    assert_eq!(
        body["spec"],
        json!({"user": "alice", "resourceAttributes": {"verb": "get", "group": "kyverno.io",
               "resource": "clusterpolicies", "subresource": "status", "name": "require-labels"}})
    );
    finish(live, task).await;
}

#[tokio::test(start_paused = true)]
async fn admit_create_is_a_dry_run_as_the_identity_and_returns_the_mutated_object() {
    let (live, log, task) = mock(Box::new(|s| {
        if let Some(r) = discovery(s) {
            return r;
        }
        let mut obj = s.body.clone();
        obj["metadata"]["labels"]["team"] = json!("added-by-policy");
        obj["metadata"]["uid"] = json!("3f1c9a7e-0000-4000-8000-000000000001");
        Reply {
            status: 201,
            body: obj,
            headers: vec![(
                "warning",
                "299 - \"policy require-team.add-team: mutated\"".to_string(),
            )],
        }
    }));
    let id = Identity::user("dev", vec!["devs".into(), "system:authenticated".into()]);
    let probe = pod("lab", "probe");
    let out = live
        .admit(&probe, Operation::Create, Some(&id))
        .await
        .unwrap();
    match out {
        Admission::Allowed { object, warnings } => {
            assert_eq!(object["metadata"]["labels"]["team"], "added-by-policy");
            assert_eq!(
                warnings,
                vec!["policy require-team.add-team: mutated".to_string()]
            );
        }
        other => panic!("expected allowed, got {other:?}"),
    }
    let reqs = without_discovery(&log);
    assert_eq!(reqs.len(), 1);
    let seen = &reqs[0];
    assert_eq!(seen.method, "POST");
    assert_eq!(seen.path, "/api/v1/namespaces/lab/pods");
    assert_eq!(seen.query_pairs(), vec![("dryRun", "All")]);
    assert_eq!(seen.body, probe);
    assert_eq!(seen.header("impersonate-user"), Some("dev"));
    assert_eq!(
        seen.headers_named("impersonate-group"),
        vec!["devs", "system:authenticated"]
    );
    assert_eq!(seen.header("content-type"), Some("application/json"));
    finish(live, task).await;
}

#[tokio::test(start_paused = true)]
async fn admit_update_puts_to_the_object_path() {
    let (live, log, task) = mock(Box::new(|s| {
        discovery(s).unwrap_or_else(|| reply(200, s.body.clone()))
    }));
    let mut probe = pod("lab", "web");
    probe["metadata"]["resourceVersion"] = json!("123");
    let out = live.admit(&probe, Operation::Update, None).await.unwrap();
    assert!(matches!(out, Admission::Allowed { .. }));
    let seen = &without_discovery(&log)[0];
    assert_eq!(seen.method, "PUT");
    assert_eq!(seen.path, "/api/v1/namespaces/lab/pods/web");
    assert_eq!(seen.query_pairs(), vec![("dryRun", "All")]);
    assert!(seen.header("impersonate-user").is_none());
    finish(live, task).await;
}

#[tokio::test(start_paused = true)]
async fn admit_without_namespace_uses_the_context_namespace_and_cluster_scope_has_none() {
    let (live, log, task) = mock(Box::new(|s| {
        discovery(s).unwrap_or_else(|| reply(201, s.body.clone()))
    }));
    let mut probe = pod("x", "p");
    probe["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("namespace");
    live.admit(&probe, Operation::Create, None).await.unwrap();
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "scratch", "namespace": "ignored"}});
    live.admit(&ns, Operation::Create, None).await.unwrap();
    let reqs = without_discovery(&log);
    assert_eq!(reqs[0].path, "/api/v1/namespaces/default/pods");
    assert_eq!(reqs[1].path, "/api/v1/namespaces");
    finish(live, task).await;
}

const KYVERNO_DENIAL: &str = "admission webhook \"validate.kyverno.svc-fail\" denied the request: \n\nresource Pod/lab/probe was blocked due to the following policies \n\nrequire-labels:\n  check-team: 'validation error: label team is required. rule check-team failed at\n    path /metadata/labels/team/'\n";

#[tokio::test(start_paused = true)]
async fn admit_denied_by_kyverno_names_policy_and_rule() {
    let (live, _log, task) = mock(Box::new(|s| {
        discovery(s)
            .unwrap_or_else(|| reply(400, status_failure(400, "", KYVERNO_DENIAL, json!({}))))
    }));
    match live
        .admit(&pod("lab", "probe"), Operation::Create, None)
        .await
        .unwrap()
    {
        Admission::Denied(d) => {
            assert_eq!(
                d.by,
                DeniedBy::Kyverno {
                    policy: "require-labels".into(),
                    rule: "check-team".into()
                }
            );
            assert_eq!(d.code, 400);
            assert_eq!(d.message, KYVERNO_DENIAL);
        }
        other => panic!("expected denied, got {other:?}"),
    }
    finish(live, task).await;
}

#[tokio::test(start_paused = true)]
async fn admit_denied_by_rbac_when_impersonating_a_user_without_rights() {
    let msg = "pods is forbidden: User \"nobody\" cannot create resource \"pods\" in API group \"\" in the namespace \"lab\"";
    let (live, _log, task) = mock(Box::new(move |s| {
        discovery(s).unwrap_or_else(|| {
            reply(
                403,
                status_failure(403, "Forbidden", msg, json!({"kind": "pods"})),
            )
        })
    }));
    let id = Identity::user("nobody", vec![]);
    match live
        .admit(&pod("lab", "probe"), Operation::Create, Some(&id))
        .await
        .unwrap()
    {
        Admission::Denied(d) => {
            assert_eq!(d.by, DeniedBy::Rbac);
            assert_eq!(d.code, 403);
        }
        other => panic!("expected denied, got {other:?}"),
    }
    finish(live, task).await;
}

#[tokio::test(start_paused = true)]
async fn admit_denied_by_quota_and_missing_namespace_is_other() {
    let (live, _log, task) = mock(Box::new(|s| {
        discovery(s).unwrap_or_else(|| {
            if s.path.contains("/namespaces/gone/") {
                reply(404, status_failure(404, "NotFound", "namespaces \"gone\" not found", json!({"name": "gone", "kind": "namespaces"})))
            } else {
                reply(403, status_failure(403, "Forbidden",
                    "pods \"probe\" is forbidden: exceeded quota: kca-quota, requested: pods=1, used: pods=0, limited: pods=0",
                    json!({"name": "probe", "kind": "pods"})))
            }
        })
    }));
    for ns in ["lab", "gone"] {
        match live
            .admit(&pod(ns, "probe"), Operation::Create, None)
            .await
            .unwrap()
        {
            Admission::Denied(d) => assert_eq!(d.by, DeniedBy::Other, "{ns}"),
            other => panic!("expected denied in {ns}, got {other:?}"),
        }
    }
    finish(live, task).await;
}

#[tokio::test(start_paused = true)]
async fn admit_webhook_down_is_an_error_not_a_denial() {
    let msg = "Internal error occurred: failed calling webhook \"validate.kyverno.svc-fail\": failed to call webhook: Post \"https://kyverno-svc.kyverno.svc:443/validate/fail?timeout=10s\": dial tcp 10.96.12.3:443: connect: connection refused";
    let (live, _log, task) = mock(Box::new(move |s| {
        discovery(s)
            .unwrap_or_else(|| reply(500, status_failure(500, "InternalError", msg, json!({}))))
    }));
    match live
        .admit(&pod("lab", "probe"), Operation::Create, None)
        .await
    {
        Err(LiveError::Api { code: 500, message }) => {
            assert!(message.contains("failed calling webhook"))
        }
        other => panic!("expected an API error, got {other:?}"),
    }
    finish(live, task).await;
}

#[tokio::test(start_paused = true)]
async fn admit_kind_not_served_says_so() {
    let (live, _log, task) = mock(Box::new(|s| discovery(s).unwrap_or_else(not_found_page)));
    let vap = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "x"}});
    assert!(matches!(
        live.admit(&vap, Operation::Create, None).await,
        Err(LiveError::NotServed { .. })
    ));
    finish(live, task).await;
}

#[tokio::test(start_paused = true)]
async fn get_returns_none_for_missing_and_the_object_otherwise() {
    let (live, log, task) = mock(Box::new(|s| {
        discovery(s).unwrap_or_else(|| match s.path.as_str() {
            "/apis/kyverno.io/v1/clusterpolicies/require-labels" => reply(200, json!({
                "apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "require-labels"},
                "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Succeeded"}]}})),
            _ => reply(404, status_failure(404, "NotFound", "clusterpolicies.kyverno.io \"nope\" not found",
                json!({"name": "nope", "group": "kyverno.io", "kind": "clusterpolicies"}))),
        })
    }));
    let r = ObjRef::new("kyverno.io/v1", "ClusterPolicy", None, "require-labels");
    assert_eq!(
        live.get(&r).await.unwrap().unwrap()["metadata"]["name"],
        "require-labels"
    );
    let missing = ObjRef::new("kyverno.io/v1", "ClusterPolicy", None, "nope");
    assert!(live.get(&missing).await.unwrap().is_none());
    // A namespace on a cluster-scoped reference is ignored, as the server would.
    let with_ns = ObjRef::new(
        "kyverno.io/v1",
        "ClusterPolicy",
        Some("lab"),
        "require-labels",
    );
    assert!(live.get(&with_ns).await.unwrap().is_some());
    let reqs = without_discovery(&log);
    assert!(reqs.iter().all(|s| s.method == "GET" && s.query.is_empty()));
    assert_eq!(
        reqs[2].path,
        "/apis/kyverno.io/v1/clusterpolicies/require-labels"
    );
    finish(live, task).await;
}

#[tokio::test(start_paused = true)]
async fn list_sends_the_label_selector_and_fills_in_kind() {
    let (live, log, task) = mock(Box::new(|s| {
        discovery(s).unwrap_or_else(|| {
            reply(200, json!({
                "kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "991"},
                "items": [{"metadata": {"name": "a", "namespace": "lab", "labels": {"kca.dev/lab": "kca-rbac"}}, "data": {"k": "v"}}]
            }))
        })
    }));
    let items = live
        .list(
            "v1",
            "ConfigMap",
            Some("lab"),
            "kca.dev/lab=kca-rbac,tier!=x",
        )
        .await
        .unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["kind"], "ConfigMap");
    assert_eq!(items[0]["apiVersion"], "v1");
    live.list("v1", "ConfigMap", None, "").await.unwrap();
    let reqs = without_discovery(&log);
    assert_eq!(reqs[0].path, "/api/v1/namespaces/lab/configmaps");
    assert_eq!(
        reqs[0].query_pairs(),
        vec![("labelSelector", "kca.dev/lab=kca-rbac,tier!=x")]
    );
    assert_eq!(reqs[1].path, "/api/v1/configmaps");
    assert!(reqs[1].query.is_empty());
    finish(live, task).await;
}

#[tokio::test(start_paused = true)]
async fn apply_is_server_side_apply_as_kca_and_tolerates_deprecation_warnings() {
    let warning = "299 - \"kyverno.io/v1 ClusterPolicy is deprecated; use policies.kyverno.io/v1 ValidatingPolicy\"";
    let (live, log, task) = mock(Box::new(move |s| {
        discovery(s).unwrap_or_else(|| Reply {
            status: 200,
            body: s.body.clone(),
            headers: vec![("warning", warning.to_string())],
        })
    }));
    let policy = json!({
        "apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
        "metadata": {"name": "require-labels", "labels": {"kca.dev/lab": "kca-validate"}},
        "spec": {"validationFailureAction": "Enforce", "rules": []}
    });
    let out = live.apply(&policy).await.unwrap();
    assert_eq!(out["metadata"]["name"], "require-labels");
    assert_eq!(
        live.take_warnings(),
        vec!["kyverno.io/v1 ClusterPolicy is deprecated; use policies.kyverno.io/v1 ValidatingPolicy".to_string()]
    );
    assert!(live.take_warnings().is_empty(), "warnings are drained");
    let seen = &without_discovery(&log)[0];
    assert_eq!(seen.method, "PATCH");
    assert_eq!(
        seen.path,
        "/apis/kyverno.io/v1/clusterpolicies/require-labels"
    );
    assert_eq!(
        seen.query_pairs(),
        vec![("fieldManager", "kca"), ("force", "true")]
    );
    assert_eq!(
        seen.header("content-type"),
        Some("application/apply-patch+yaml")
    );
    assert_eq!(seen.body, policy);
    finish(live, task).await;
}

#[tokio::test(start_paused = true)]
async fn create_posts_with_generate_name() {
    let (live, log, task) = mock(Box::new(|s| {
        discovery(s).unwrap_or_else(|| {
            let mut obj = s.body.clone();
            obj["metadata"]["name"] = json!("kca-trigger-x7k2p");
            reply(201, obj)
        })
    }));
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"generateName": "kca-trigger-", "labels": {"kca.dev/lab": "kca-generate"}}});
    let created = live.create(&ns).await.unwrap();
    assert_eq!(created["metadata"]["name"], "kca-trigger-x7k2p");
    let seen = &without_discovery(&log)[0];
    assert_eq!(
        (seen.method.as_str(), seen.path.as_str()),
        ("POST", "/api/v1/namespaces")
    );
    assert_eq!(seen.query_pairs(), vec![("fieldManager", "kca")]);
    finish(live, task).await;
}

#[tokio::test(start_paused = true)]
async fn create_conflict_is_an_api_error() {
    let (live, _log, task) = mock(Box::new(|s| {
        discovery(s).unwrap_or_else(|| {
            reply(
                409,
                status_failure(
                    409,
                    "AlreadyExists",
                    "namespaces \"lab\" already exists",
                    json!({"name": "lab", "kind": "namespaces"}),
                ),
            )
        })
    }));
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lab"}});
    assert!(matches!(
        live.create(&ns).await,
        Err(LiveError::Api { code: 409, .. })
    ));
    finish(live, task).await;
}

#[tokio::test(start_paused = true)]
async fn delete_is_background_and_not_found_is_fine() {
    let (live, log, task) = mock(Box::new(|s| {
        discovery(s).unwrap_or_else(|| {
            if s.path.ends_with("/gone") {
                reply(404, status_failure(404, "NotFound", "configmaps \"gone\" not found", json!({"name": "gone", "kind": "configmaps"})))
            } else {
                reply(200, json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                  "details": {"name": "cm", "kind": "configmaps", "uid": "u"}}))
            }
        })
    }));
    live.delete(&ObjRef::new("v1", "ConfigMap", Some("lab"), "cm"))
        .await
        .unwrap();
    live.delete(&ObjRef::new("v1", "ConfigMap", Some("lab"), "gone"))
        .await
        .unwrap();
    let reqs = without_discovery(&log);
    assert_eq!(reqs[0].method, "DELETE");
    assert_eq!(reqs[0].path, "/api/v1/namespaces/lab/configmaps/cm");
    assert_eq!(
        reqs[0].query_pairs(),
        vec![("propagationPolicy", "Background")]
    );
    finish(live, task).await;
}

#[tokio::test(start_paused = true)]
async fn delete_forbidden_is_an_error() {
    let (live, _log, task) = mock(Box::new(|s| {
        discovery(s).unwrap_or_else(|| reply(403, status_failure(403, "Forbidden",
            "configmaps \"cm\" is forbidden: User \"x\" cannot delete resource \"configmaps\" in API group \"\" in the namespace \"lab\"",
            json!({"name": "cm", "kind": "configmaps"}))))
    }));
    let r = ObjRef::new("v1", "ConfigMap", Some("lab"), "cm");
    assert!(matches!(
        live.delete(&r).await,
        Err(LiveError::Api { code: 403, .. })
    ));
    finish(live, task).await;
}

#[tokio::test(start_paused = true)]
async fn wait_ready_polls_until_the_ready_condition() {
    let gets = Arc::new(Mutex::new(0));
    let counter = gets.clone();
    let (live, _log, task) = mock(Box::new(move |s| {
        discovery(s).unwrap_or_else(|| {
            let mut n = counter.lock().unwrap();
            *n += 1;
            let status = if *n >= 2 { "True" } else { "False" };
            reply(200, json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "p"},
                              "status": {"conditions": [{"type": "Ready", "status": status}]}}))
        })
    }));
    let r = ObjRef::new("kyverno.io/v1", "ClusterPolicy", None, "p");
    assert!(live.wait_ready(&r, Duration::from_secs(10)).await.unwrap());
    assert_eq!(*gets.lock().unwrap(), 2);
    finish(live, task).await;
}

#[tokio::test(start_paused = true)]
async fn wait_ready_gives_up_at_the_deadline() {
    let (live, _log, task) = mock(Box::new(|s| {
        discovery(s).unwrap_or_else(|| {
            reply(
                404,
                status_failure(
                    404,
                    "NotFound",
                    "clusterpolicies.kyverno.io \"p\" not found",
                    json!({}),
                ),
            )
        })
    }));
    let r = ObjRef::new("kyverno.io/v1", "ClusterPolicy", None, "p");
    let started = std::time::Instant::now();
    assert!(
        !live
            .wait_ready(&r, Duration::from_millis(300))
            .await
            .unwrap()
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    finish(live, task).await;
}

#[tokio::test(start_paused = true)]
async fn transport_failures_are_unreachable_or_timeout() {
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let task = tokio::spawn(async move {
        let (_, send) = handle.next_request().await.unwrap();
        send.send_error(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "tcp connect error: Connection refused (os error 111)",
        ));
        let (_, send) = handle.next_request().await.unwrap();
        send.send_error(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "operation timed out",
        ));
    });
    let live = Live::from_client(kube::Client::new(service, "default"));
    match live.server_version().await {
        Err(LiveError::Unreachable(m)) => assert!(m.contains("Connection refused"), "{m}"),
        other => panic!("expected unreachable, got {other:?}"),
    }
    assert!(matches!(
        live.server_version().await,
        Err(LiveError::Timeout(_))
    ));
    let e: kca::error::Error = LiveError::Unreachable("x".into()).into();
    assert_eq!(e.exit(), kca::exit::Exit::Environment);
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn connect_reports_kubeconfig_problems_and_unreachable_servers() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    assert!(matches!(
        Live::connect(Some(&missing), None).await,
        Err(LiveError::Config(_))
    ));

    let path = dir.path().join("config");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Config\ncurrent-context: kind-kca\nclusters:\n- name: kind-kca\n  cluster:\n    server: https://127.0.0.1:1\n    insecure-skip-tls-verify: true\ncontexts:\n- name: kind-kca\n  context:\n    cluster: kind-kca\n    user: kind-kca\n    namespace: lab\nusers:\n- name: kind-kca\n  user:\n    token: not-a-real-token\n",
    )
    .unwrap();
    match Live::connect(Some(&path), Some("other")).await {
        Err(LiveError::Config(m)) => assert!(m.contains("other") && m.contains("kind-kca"), "{m}"),
        other => panic!("expected a config error, got {:?}", other.map(|_| ())),
    }
    let live = Live::connect(Some(&path), None).await.unwrap();
    assert_eq!(live.context_name(), Some("kind-kca"));
    assert_eq!(live.default_namespace(), "lab");
    assert!(matches!(
        live.server_version().await,
        Err(LiveError::Unreachable(_))
    ));
}

// ---- cluster helpers on top of the live client ----

fn apps_and_admission_discovery(s: &Seen) -> Option<Reply> {
    match s.path.as_str() {
        "/apis/apps/v1" => Some(reply(
            200,
            json!({"kind": "APIResourceList", "groupVersion": "apps/v1",
            "resources": [{"name": "deployments", "namespaced": true, "kind": "Deployment", "verbs": ["get", "list"]},
                          {"name": "deployments/status", "namespaced": true, "kind": "Deployment", "verbs": ["get"]}]}),
        )),
        "/apis/admissionregistration.k8s.io/v1" => Some(reply(
            200,
            json!({"kind": "APIResourceList",
            "groupVersion": "admissionregistration.k8s.io/v1",
            "resources": [{"name": "validatingwebhookconfigurations", "namespaced": false, "kind": "ValidatingWebhookConfiguration", "verbs": ["list"]},
                          {"name": "mutatingwebhookconfigurations", "namespaced": false, "kind": "MutatingWebhookConfiguration", "verbs": ["list"]}]}),
        )),
        _ => discovery(s),
    }
}

fn deployment(name: &str, ready: bool) -> Value {
    json!({"metadata": {"name": name, "namespace": "kyverno", "generation": 1},
           "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": format!("reg.kyverno.io/kyverno/{name}:v1.19.1")}]}}},
           "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1,
                      "readyReplicas": if ready { 1 } else { 0 }, "availableReplicas": if ready { 1 } else { 0 }}})
}

#[tokio::test(start_paused = true)]
async fn kyverno_state_reads_deployments_and_webhooks() {
    let (live, log, task) = mock(Box::new(|s| {
        apps_and_admission_discovery(s).unwrap_or_else(|| match s.path.as_str() {
            "/apis/apps/v1/namespaces/kyverno/deployments" => reply(200, json!({"kind": "DeploymentList", "items": [
                deployment("kyverno-admission-controller", true),
                deployment("kyverno-background-controller", true),
                deployment("kyverno-reports-controller", false),
            ]})),
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations" =>
                reply(200, json!({"items": [{"metadata": {"name": "kyverno-policy-validating-webhook-cfg"}},
                                            {"metadata": {"name": "kyverno-resource-validating-webhook-cfg"}}]})),
            "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations" => reply(200, json!({"items": []})),
            other => panic!("unexpected request {other}"),
        })
    }));
    let k = kca::cluster::kyverno_state(&live).await.unwrap();
    let by_name = |n: &str| k.deployments.iter().find(|d| d.name == n).unwrap().clone();
    assert!(by_name("kyverno-admission-controller").rolled_out);
    assert_eq!(
        by_name("kyverno-admission-controller").image.as_deref(),
        Some("reg.kyverno.io/kyverno/kyverno-admission-controller:v1.19.1")
    );
    assert!(!by_name("kyverno-reports-controller").rolled_out);
    assert_eq!(by_name("kyverno-reports-controller").ready, "0/1");
    assert!(!by_name("kyverno-cleanup-controller").present);
    assert_eq!(k.validating_webhooks, 2);
    assert_eq!(k.mutating_webhooks, 0);
    assert!(!k.ready());
    let reqs = without_discovery(&log);
    let webhook_lists: Vec<&Seen> = reqs
        .iter()
        .filter(|s| s.path.contains("webhookconfigurations"))
        .collect();
    assert_eq!(webhook_lists.len(), 2);
    for s in webhook_lists {
        assert_eq!(
            s.query_pairs(),
            vec![("labelSelector", "webhook.kyverno.io/managed-by=kyverno")]
        );
    }
    finish(live, task).await;
}

#[tokio::test(start_paused = true)]
async fn background_grants_ask_as_the_background_controller() {
    let (live, log, task) = mock(Box::new(|s| {
        let resource = s.body["spec"]["resourceAttributes"]["resource"]
            .as_str()
            .unwrap_or("");
        reply(
            201,
            json!({"kind": "SubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
            "spec": s.body["spec"].clone(), "status": {"allowed": resource == "configmaps"}}),
        )
    }));
    let grants = kca::cluster::background_grants(&live).await.unwrap();
    let summary: Vec<(String, bool)> = grants
        .iter()
        .map(|g| (g.resource.clone(), g.allowed))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("configmaps".to_string(), true),
            ("networkpolicies".to_string(), false)
        ]
    );
    let reqs = log.lock().unwrap().clone();
    assert_eq!(reqs.len(), 2);
    for s in &reqs {
        assert_eq!(s.path, "/apis/authorization.k8s.io/v1/subjectaccessreviews");
        assert_eq!(
            s.body["spec"]["user"],
            "system:serviceaccount:kyverno:kyverno-background-controller"
        );
        assert_eq!(s.body["spec"]["resourceAttributes"]["verb"], "create");
        assert!(
            s.body["spec"]["resourceAttributes"]
                .get("namespace")
                .is_none(),
            "cluster-wide"
        );
    }
    assert_eq!(
        reqs[1].body["spec"]["resourceAttributes"]["group"],
        "networking.k8s.io"
    );
    finish(live, task).await;
}

#[tokio::test(start_paused = true)]
async fn marker_is_applied_read_and_removed_in_kube_public() {
    let stored: Arc<Mutex<Option<Value>>> = Arc::new(Mutex::new(None));
    let state = stored.clone();
    let (live, log, task) = mock(Box::new(move |s| {
        discovery(s).unwrap_or_else(|| {
            assert_eq!(
                s.path,
                "/api/v1/namespaces/kube-public/configmaps/kca-cluster"
            );
            let mut st = state.lock().unwrap();
            match s.method.as_str() {
                "PATCH" => {
                    *st = Some(s.body.clone());
                    reply(200, s.body.clone())
                }
                "GET" => match st.as_ref() {
                    Some(obj) => reply(200, obj.clone()),
                    None => reply(
                        404,
                        status_failure(
                            404,
                            "NotFound",
                            "configmaps \"kca-cluster\" not found",
                            json!({"name": "kca-cluster", "kind": "configmaps"}),
                        ),
                    ),
                },
                "DELETE" => {
                    *st = None;
                    reply(
                        200,
                        json!({"kind": "Status", "apiVersion": "v1", "status": "Success"}),
                    )
                }
                m => panic!("unexpected {m}"),
            }
        })
    }));
    assert!(!kca::cluster::is_lab_cluster(&live).await.unwrap());
    kca::cluster::mark_lab_cluster(&live, "kca cluster adopt")
        .await
        .unwrap();
    assert!(kca::cluster::is_lab_cluster(&live).await.unwrap());
    kca::cluster::unmark_lab_cluster(&live).await.unwrap();
    assert!(!kca::cluster::is_lab_cluster(&live).await.unwrap());
    let patch = without_discovery(&log)
        .into_iter()
        .find(|s| s.method == "PATCH")
        .unwrap();
    assert_eq!(
        patch.query_pairs(),
        vec![("fieldManager", "kca"), ("force", "true")]
    );
    assert_eq!(
        patch.body["metadata"]["labels"]["kca.dev/lab-cluster"],
        "true"
    );
    assert_eq!(patch.body["data"]["markedBy"], "kca cluster adopt");
    finish(live, task).await;
}

#[tokio::test(start_paused = true)]
async fn a_marker_without_the_label_does_not_count() {
    let (live, _log, task) = mock(Box::new(|s| {
        discovery(s).unwrap_or_else(|| reply(200, json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kca-cluster", "namespace": "kube-public", "labels": {"kca.dev/lab-cluster": "false"}}})))
    }));
    assert!(!kca::cluster::is_lab_cluster(&live).await.unwrap());
    finish(live, task).await;
}

#[tokio::test(start_paused = true)]
async fn repeated_warnings_are_kept_once() {
    let (live, _log, task) = mock(Box::new(|s| {
        discovery(s).unwrap_or_else(|| Reply {
            status: 200,
            body: json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "p"}}),
            headers: vec![("warning", "299 - \"kyverno.io/v1 is deprecated\"".to_string())],
        })
    }));
    let r = ObjRef::new("kyverno.io/v1", "ClusterPolicy", None, "p");
    for _ in 0..3 {
        live.get(&r).await.unwrap();
    }
    assert_eq!(
        live.take_warnings(),
        vec!["kyverno.io/v1 is deprecated".to_string()]
    );
    finish(live, task).await;
}

#[tokio::test(start_paused = true)]
async fn a_kyverno_deployment_scaled_to_zero_is_not_ready() {
    let (live, _log, server) = mock(Box::new(|s| {
        apps_and_admission_discovery(s).unwrap_or_else(|| match s.path.as_str() {
            "/apis/apps/v1/namespaces/kyverno/deployments" => {
                let mut background = deployment("kyverno-background-controller", false);
                background["spec"]["replicas"] = json!(0);
                background["status"] = json!({"observedGeneration": 1});
                reply(
                    200,
                    json!({"kind": "DeploymentList", "items": [
                        deployment("kyverno-admission-controller", true),
                        background,
                        deployment("kyverno-cleanup-controller", true),
                        deployment("kyverno-reports-controller", true),
                    ]}),
                )
            }
            p if p.ends_with("webhookconfigurations") => reply(
                200,
                json!({"items": [{"metadata": {"name": "kyverno-resource-webhook-cfg"}}]}),
            ),
            other => panic!("unexpected request {other}"),
        })
    }));
    let k = kca::cluster::kyverno_state(&live).await.unwrap();
    let bg = k
        .deployments
        .iter()
        .find(|d| d.name == "kyverno-background-controller")
        .unwrap();
    assert_eq!(bg.ready, "0/0");
    assert!(!bg.rolled_out, "a Deployment scaled to 0 counts as ready");
    assert!(!k.ready());
    finish(live, server).await;
}

#[tokio::test(start_paused = true)]
async fn every_request_says_it_is_kca() {
    let (live, log, server) = mock(Box::new(|s| {
        discovery(s).unwrap_or_else(|| match s.method.as_str() {
            "GET" if s.path == "/version" => reply(
                200,
                json!({"major": "1", "minor": "24", "gitVersion": "v1.24.17"}),
            ),
            _ => reply(201, s.body.clone()),
        })
    }));
    live.server_version().await.unwrap();
    live.admit(&pod("lab", "p"), Operation::Create, None)
        .await
        .unwrap();
    let reqs = log.lock().unwrap().clone();
    assert_eq!(reqs.len(), 3, "{reqs:?}");
    for s in &reqs {
        assert_eq!(
            s.header("user-agent"),
            Some(concat!("kca/", env!("CARGO_PKG_VERSION"))),
            "{} {}",
            s.method,
            s.path
        );
    }
    finish(live, server).await;
}

#[tokio::test(start_paused = true)]
async fn concurrent_checks_share_one_discovery_fetch_per_group_version() {
    let (live, _log, server) = mock(Box::new(|s| discovery(s).unwrap_or_else(not_found_page)));
    let (a, b, c) = tokio::join!(
        live.serves("kyverno.io/v1", "ClusterPolicy"),
        live.serves("kyverno.io/v1", "Policy"),
        live.serves("kyverno.io/v1", "ClusterPolicy"),
    );
    assert!(a.unwrap() && b.unwrap() && c.unwrap());
    assert_eq!(server.count("GET", "/apis/kyverno.io/v1"), 1);
    // A kind the server does not serve: the waiters take the answer fetched meanwhile.
    let vap = "admissionregistration.k8s.io/v1";
    let (a, b, c) = tokio::join!(
        live.serves(vap, "ValidatingAdmissionPolicy"),
        live.serves(vap, "ValidatingAdmissionPolicy"),
        live.serves(vap, "ValidatingAdmissionPolicyBinding"),
    );
    assert!(!a.unwrap() && !b.unwrap() && !c.unwrap());
    assert_eq!(
        server.count("GET", "/apis/admissionregistration.k8s.io/v1"),
        1
    );
    finish(live, server).await;
}

#[tokio::test(start_paused = true)]
async fn a_hung_api_server_is_a_timeout_an_environment_error() {
    // The server takes the request and never answers (a wedged apiserver or proxy).
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let task = tokio::spawn(async move {
        let (_request, send) = handle.next_request().await.unwrap();
        std::future::pending::<()>().await;
        drop(send);
    });
    let live = Live::from_client(kube::Client::new(service, "default"));
    let started = tokio::time::Instant::now();
    match live.server_version().await {
        Err(e @ LiveError::Timeout(_)) => {
            let e: kca::error::Error = e.into();
            assert_eq!(e.exit(), kca::exit::Exit::Environment);
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(started.elapsed() >= Duration::from_secs(45));
    task.abort();
}

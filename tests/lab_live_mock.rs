//! Lab checks on the live target against a mocked API server: a `generated` check always
//! deletes its trigger, and explains a missing object the way the course teaches (no
//! UpdateRequest → the rule did not match; a failed one → the controller's permissions).

mod common;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::kube_mock::{self, Seen, not_found_page, resources};
use kca::content::lab::{Check, Spec};
use kca::content::{Document, load_file};
use kca::lab::check::{Submission, Verdict};
use kca::target::live::Live;
use serde_json::{Value, json};

type Router = Arc<dyn Fn(&Seen) -> (u16, Value) + Send + Sync>;

/// A `Live` on the shared mock server (`tests/common/kube_mock.rs`), and its request log.
fn mock(route: Router) -> (Live, Arc<Mutex<Vec<Seen>>>) {
    let (client, server) = kube_mock::serve(Box::new(move |s| route(s).into()));
    (Live::from_client(client), server.log.clone())
}

fn not_found() -> (u16, Value) {
    let r = not_found_page();
    (r.status, r.body)
}

/// Discovery answers for the kinds these checks touch.
fn discovery(seen: &Seen) -> Option<(u16, Value)> {
    if seen.method != "GET" {
        return None;
    }
    match seen.path.as_str() {
        "/api/v1" => Some((
            200,
            resources(
                "v1",
                &[
                    ("configmaps", "ConfigMap", true),
                    ("namespaces", "Namespace", false),
                    ("pods", "Pod", true),
                ],
            ),
        )),
        "/apis/kyverno.io/v1" => Some((
            200,
            resources(
                "kyverno.io/v1",
                &[
                    ("clusterpolicies", "ClusterPolicy", false),
                    ("policies", "Policy", true),
                ],
            ),
        )),
        "/apis/kyverno.io/v2" => Some((
            200,
            resources(
                "kyverno.io/v2",
                &[("updaterequests", "UpdateRequest", true)],
            ),
        )),
        p if p.starts_with("/apis/") && p.matches('/').count() == 3 => Some(not_found()),
        _ => None,
    }
}

fn testlab(timeout: Duration) -> kca::content::lab::Lab {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/testlab/lab.yaml");
    let Ok(Document::Lab(lab)) = load_file(&path) else {
        panic!("the test lab does not load");
    };
    let mut lab = *lab;
    for t in &mut lab.tasks {
        for c in &mut t.checks {
            c.timeout = timeout;
        }
    }
    lab
}

/// The trigger's name, from the create request in the log.
fn trigger_name(log: &Mutex<Vec<Seen>>) -> Option<String> {
    log.lock()
        .unwrap()
        .iter()
        .find(|s| s.method == "POST" && s.path == "/api/v1/namespaces")
        .and_then(|s| {
            s.body
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
}

async fn run_generated(lab: &kca::content::lab::Lab, live: &Live) -> kca::lab::check::Outcome {
    let check = lab.check("marker-generated").unwrap();
    let ws = tempfile::tempdir().unwrap();
    let env = Submission {
        lab,
        workspace: ws.path(),
    };
    kca::lab::live::evaluate(live, env, check, &common::printer()).await
}

fn deleted(log: &Mutex<Vec<Seen>>, name: &str) -> bool {
    log.lock()
        .unwrap()
        .iter()
        .any(|s| s.method == "DELETE" && s.path == format!("/api/v1/namespaces/{name}"))
}

#[tokio::test(start_paused = true)]
async fn generated_object_found_and_trigger_deleted() {
    let created: Arc<Mutex<Option<Value>>> = Arc::default();
    let polls = Arc::new(Mutex::new(0));
    let (c, p) = (created.clone(), polls.clone());
    let (live, log) = mock(Arc::new(move |s: &Seen| {
        if let Some(r) = discovery(s).or_else(|| ready_policy(s)) {
            return r;
        }
        match s.method.as_str() {
            "POST" if s.path == "/api/v1/namespaces" => {
                *c.lock().unwrap() = Some(s.body.clone());
                (201, s.body.clone())
            }
            "GET" if s.path.ends_with("/configmaps/testlab-generated") => {
                let mut n = p.lock().unwrap();
                *n += 1;
                // Not there on the first look: the background controller takes a moment.
                if *n < 2 {
                    not_found()
                } else {
                    (
                        200,
                        json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "testlab-generated"}, "data": {"generated": "yes"}}),
                    )
                }
            }
            "DELETE" => (200, json!({"kind": "Status", "status": "Success"})),
            _ => not_found(),
        }
    }));
    let lab = testlab(Duration::from_secs(10));
    let o = run_generated(&lab, &live).await;
    assert_eq!(o.verdict, Verdict::Pass, "{o:?}");
    let name = trigger_name(&log).expect("a trigger was created");
    assert!(name.starts_with("testlab-trigger-"), "{name}");
    let body = created.lock().unwrap().clone().unwrap();
    assert_eq!(
        body.pointer("/metadata/labels/kca.dev~1lab"),
        Some(&json!("testlab"))
    );
    assert_eq!(
        body.pointer("/metadata/labels/kca.dev~1testlab-trigger"),
        Some(&json!("true"))
    );
    assert!(deleted(&log, &name), "trigger not deleted");
    let gets = log
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.path == format!("/api/v1/namespaces/{name}/configmaps/testlab-generated"))
        .count();
    assert_eq!(gets, 2);
}

#[tokio::test(start_paused = true)]
async fn no_update_request_means_the_rule_did_not_match() {
    let (live, log) = mock(Arc::new(|s: &Seen| {
        if let Some(r) = discovery(s).or_else(|| ready_policy(s)) {
            return r;
        }
        match (s.method.as_str(), s.path.as_str()) {
            ("POST", "/api/v1/namespaces") => (201, s.body.clone()),
            ("GET", "/apis/kyverno.io/v2/namespaces/kyverno/updaterequests") => {
                (200, json!({"kind": "UpdateRequestList", "items": []}))
            }
            ("DELETE", _) => (200, json!({"kind": "Status", "status": "Success"})),
            _ => not_found(),
        }
    }));
    let lab = testlab(Duration::from_secs(1));
    let o = run_generated(&lab, &live).await;
    assert_eq!(o.verdict, Verdict::Fail, "{o:?}");
    assert!(o.detail.contains("no UpdateRequest"), "{}", o.detail);
    assert!(o.detail.contains("did not match"), "{}", o.detail);
    let name = trigger_name(&log).unwrap();
    assert!(deleted(&log, &name), "trigger not deleted after a failure");
}

#[tokio::test(start_paused = true)]
async fn a_failed_update_request_points_at_the_controller_permissions() {
    let name: Arc<Mutex<String>> = Arc::default();
    let n = name.clone();
    let (live, log) = mock(Arc::new(move |s: &Seen| {
        if let Some(r) = discovery(s).or_else(|| ready_policy(s)) {
            return r;
        }
        match (s.method.as_str(), s.path.as_str()) {
            ("POST", "/api/v1/namespaces") => {
                *n.lock().unwrap() = s.body["metadata"]["name"].as_str().unwrap().to_string();
                (201, s.body.clone())
            }
            ("GET", "/apis/kyverno.io/v2/namespaces/kyverno/updaterequests") => (
                200,
                json!({"kind": "UpdateRequestList", "items": [{
                    "apiVersion": "kyverno.io/v2", "kind": "UpdateRequest",
                    "metadata": {"name": "ur-1", "namespace": "kyverno"},
                    "spec": {"policy": "testlab-require-team",
                             "resource": {"kind": "Namespace", "name": n.lock().unwrap().clone()}},
                    "status": {"state": "Failed", "message": "configmaps is forbidden"}
                }]}),
            ),
            ("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews") => (
                201,
                json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                       "spec": s.body["spec"].clone(), "status": {"allowed": false}}),
            ),
            ("DELETE", _) => (200, json!({"kind": "Status", "status": "Success"})),
            _ => not_found(),
        }
    }));
    let lab = testlab(Duration::from_secs(1));
    let o = run_generated(&lab, &live).await;
    assert_eq!(o.verdict, Verdict::Fail, "{o:?}");
    assert!(
        o.detail
            .contains("the UpdateRequest failed: configmaps is forbidden"),
        "{}",
        o.detail
    );
    assert!(
        o.detail.contains(
            "can system:serviceaccount:kyverno:kyverno-background-controller create configmaps? no"
        ),
        "{}",
        o.detail
    );
    let sar = log
        .lock()
        .unwrap()
        .iter()
        .find(|s| s.path.ends_with("/subjectaccessreviews"))
        .cloned()
        .unwrap();
    assert_eq!(sar.body["spec"]["resourceAttributes"]["verb"], "create");
    assert_eq!(
        sar.body["spec"]["resourceAttributes"]["resource"],
        "configmaps"
    );
    let trig = name.lock().unwrap().clone();
    assert!(deleted(&log, &trig));
}

fn denial_by(policy: &str, rule: &str) -> (u16, Value) {
    let msg = format!(
        "admission webhook \"validate.kyverno.svc-fail\" denied the request: \n\nresource Pod/kca-testlab/p was blocked due to the following policies \n\n{policy}:\n  {rule}: 'validation error: team label required. rule {rule} failed at path /metadata/labels/team/'\n"
    );
    (
        400,
        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": msg, "reason": "", "code": 400}),
    )
}

async fn run_admission(
    lab: &kca::content::lab::Lab,
    live: &Live,
    id: &str,
) -> kca::lab::check::Outcome {
    let check = lab.check(id).unwrap();
    let ws = tempfile::tempdir().unwrap();
    let env = Submission {
        lab,
        workspace: ws.path(),
    };
    kca::lab::live::evaluate(live, env, check, &common::printer()).await
}

fn ready_policy(s: &Seen) -> Option<(u16, Value)> {
    (s.method == "GET" && s.path == "/apis/kyverno.io/v1/clusterpolicies/testlab-require-team")
        .then(|| {
            (
                200,
                json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
                   "metadata": {"name": "testlab-require-team"},
                   "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
            )
        })
}

#[tokio::test(start_paused = true)]
async fn admission_is_judged_by_the_parsed_denier_not_the_text() {
    let (live, log) = mock(Arc::new(|s: &Seen| {
        discovery(s).or_else(|| ready_policy(s)).unwrap_or_else(|| {
            match (s.method.as_str(), s.path.as_str()) {
                ("POST", "/api/v1/namespaces/kca-testlab/pods") => {
                    denial_by("testlab-require-team", "require-team")
                }
                _ => not_found(),
            }
        })
    }));
    let lab = testlab(Duration::from_secs(1));
    let o = run_admission(&lab, &live, "no-team-denied").await;
    assert_eq!(o.verdict, Verdict::Pass, "{o:?}");
    assert!(
        o.detail
            .contains("denied by policy `testlab-require-team` rule `require-team`"),
        "{}",
        o.detail
    );
    let posted = log
        .lock()
        .unwrap()
        .iter()
        .find(|s| s.method == "POST")
        .cloned()
        .unwrap();
    assert_eq!(posted.body["metadata"]["generateName"], "testlab-probe-");
}

#[tokio::test(start_paused = true)]
async fn a_denial_by_another_policy_fails_even_when_its_text_mentions_ours() {
    let (live, _log) = mock(Arc::new(|s: &Seen| {
        discovery(s)
            .or_else(|| ready_policy(s))
            .unwrap_or_else(|| match s.method.as_str() {
                // Another policy whose rule text happens to name ours.
                "POST" => denial_by("other-policy", "testlab-require-team"),
                _ => not_found(),
            })
    }));
    let lab = testlab(Duration::from_secs(1));
    let o = run_admission(&lab, &live, "no-team-denied").await;
    assert_eq!(o.verdict, Verdict::Fail, "{o:?}");
    assert!(
        o.detail
            .contains("was denied, but not by policy `testlab-require-team`"),
        "{}",
        o.detail
    );
}

#[tokio::test(start_paused = true)]
async fn a_policy_that_never_gets_ready_fails_before_probing() {
    let (live, log) = mock(Arc::new(|s: &Seen| {
        discovery(s).unwrap_or_else(|| match (s.method.as_str(), s.path.as_str()) {
            ("GET", "/apis/kyverno.io/v1/clusterpolicies/testlab-require-team") => (
                200,
                json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
                       "metadata": {"name": "testlab-require-team"},
                       "status": {"conditions": [{"type": "Ready", "status": "False"}]}}),
            ),
            _ => not_found(),
        })
    }));
    let lab = testlab(Duration::from_secs(1));
    let o = run_admission(&lab, &live, "no-team-denied").await;
    assert_eq!(o.verdict, Verdict::Fail, "{o:?}");
    assert!(o.detail.contains("is not Ready"), "{}", o.detail);
    assert!(
        !log.lock().unwrap().iter().any(|s| s.method == "POST"),
        "probed an unready policy"
    );
}

// ---- a server without ValidatingAdmissionPolicy (Kubernetes 1.24) ----

/// `admissionregistration.k8s.io/v1` as a 1.24 API server serves it: webhooks only.
fn admission_v1_without_vap(s: &Seen) -> Option<(u16, Value)> {
    (s.method == "GET" && s.path == "/apis/admissionregistration.k8s.io/v1").then(|| {
        (
            200,
            resources(
                "admissionregistration.k8s.io/v1",
                &[
                    (
                        "validatingwebhookconfigurations",
                        "ValidatingWebhookConfiguration",
                        false,
                    ),
                    (
                        "mutatingwebhookconfigurations",
                        "MutatingWebhookConfiguration",
                        false,
                    ),
                ],
            ),
        )
    })
}

fn vap_checks() -> (Check, Check) {
    use kca::content::lab::{Denier, Expect, ObjSel, Probe};
    let base = testlab(Duration::from_secs(30))
        .check("no-team-denied")
        .unwrap()
        .clone();
    let binding = Check {
        id: "vap-binding".into(),
        spec: Spec::Resource {
            target: ObjSel {
                api_version: "admissionregistration.k8s.io/v1".into(),
                kind: "ValidatingAdmissionPolicyBinding".into(),
                namespace: None,
                name: "require-limits-vap".into(),
            },
            present: true,
            matches: None,
            installed: false,
        },
        ..base.clone()
    };
    let denies = Check {
        id: "vap-denies".into(),
        spec: Spec::Admission {
            probe: Probe {
                source: None,
                object: json!({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"generateName": "p-", "namespace": "kca-testlab"},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
            },
            update: false,
            user: None,
            expect: Expect::Denied(Some(Denier::Vap {
                policy: "require-limits-vap".into(),
            })),
            assert: None,
            policies: vec![],
            left_alone: false,
        },
        ..base
    };
    (binding, denies)
}

#[tokio::test(start_paused = true)]
async fn checks_needing_validating_admission_policy_are_skipped_at_once_on_a_server_without_it() {
    let (live, log) = mock(Arc::new(|s: &Seen| {
        admission_v1_without_vap(s)
            .or_else(|| discovery(s))
            // Without a VAP the probe is admitted: a check that got this far would FAIL.
            .unwrap_or_else(|| (201, s.body.clone()))
    }));
    let lab = testlab(Duration::from_secs(30));
    let ws = tempfile::tempdir().unwrap();
    let (binding, denies) = vap_checks();
    for check in [&binding, &denies] {
        let started = tokio::time::Instant::now();
        let env = Submission {
            lab: &lab,
            workspace: ws.path(),
        };
        let o = kca::lab::live::evaluate(&live, env, check, &common::printer()).await;
        assert_eq!(o.verdict, Verdict::Skipped, "{}: {o:?}", check.id);
        assert!(
            o.detail
                .contains("does not serve ValidatingAdmissionPolicy"),
            "{}",
            o.detail
        );
        assert!(o.detail.contains("1.30"), "{}", o.detail);
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{} waited {:?}",
            check.id,
            started.elapsed()
        );
    }
    assert!(
        !log.lock().unwrap().iter().any(|s| s.method == "POST"),
        "probed a server that cannot judge the check"
    );
}

#[tokio::test(start_paused = true)]
async fn apply_advice_names_the_files_a_server_without_vap_cannot_take() {
    let (live, _log) = mock(Arc::new(|s: &Seen| {
        admission_v1_without_vap(s)
            .or_else(|| discovery(s))
            .unwrap_or_else(not_found)
    }));
    let lab = testlab(Duration::from_secs(1));
    let ws = tempfile::tempdir().unwrap();
    let policies = ws.path().join("policies");
    std::fs::create_dir(&policies).unwrap();
    std::fs::write(
        policies.join("require-team.yaml"),
        "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: a}\n",
    )
    .unwrap();
    std::fs::write(
        policies.join("require-limits-vap.yaml"),
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: v}\n---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: v}\n",
    )
    .unwrap();
    let advice = kca::lab::live::apply_advice(&live, &lab, ws.path())
        .await
        .expect("advice for a server without VAP");
    assert!(
        advice.en.contains("policies/require-limits-vap.yaml"),
        "{}",
        advice.en
    );
    assert!(
        advice
            .en
            .contains("kubectl apply -f policies/require-team.yaml"),
        "{}",
        advice.en
    );
    assert!(
        advice
            .ja
            .contains("kubectl apply -f policies/require-team.yaml")
    );
    // A workspace the server can take entirely needs no advice.
    std::fs::remove_file(policies.join("require-limits-vap.yaml")).unwrap();
    assert!(
        kca::lab::live::apply_advice(&live, &lab, ws.path())
            .await
            .is_none()
    );
}

// ---- generated: the UpdateRequest of this trigger, and a controller that does nothing ----

/// A Kyverno 1.19 UpdateRequest naming `trigger` in `spec.ruleContext[].trigger`.
fn update_request(name: &str, trigger: &str, state: &str, message: &str) -> Value {
    json!({
        "apiVersion": "kyverno.io/v2", "kind": "UpdateRequest",
        "metadata": {"name": name, "namespace": "kyverno"},
        "spec": {"requestType": "generate", "policy": "testlab-require-team",
                 "ruleContext": [{"rule": "make-marker", "deleteDownstream": false,
                    "trigger": {"apiVersion": "v1", "kind": "Namespace", "name": trigger}}],
                 "resource": {}, "context": {}},
        "status": {"state": state, "message": message}
    })
}

/// A server where the trigger is created and nothing is generated; UpdateRequests are made
/// by `urs` from the trigger's name.
fn generating_nothing(
    urs: impl Fn(&str) -> Vec<Value> + Send + Sync + 'static,
) -> (Live, Arc<Mutex<Vec<Seen>>>) {
    let trigger: Arc<Mutex<String>> = Arc::default();
    mock(Arc::new(move |s: &Seen| {
        if let Some(r) = discovery(s).or_else(|| ready_policy(s)) {
            return r;
        }
        match (s.method.as_str(), s.path.as_str()) {
            ("POST", "/api/v1/namespaces") => {
                *trigger.lock().unwrap() = s.body["metadata"]["name"].as_str().unwrap().into();
                (201, s.body.clone())
            }
            ("GET", "/apis/kyverno.io/v2/namespaces/kyverno/updaterequests") => (
                200,
                json!({"kind": "UpdateRequestList", "items": urs(&trigger.lock().unwrap())}),
            ),
            ("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews") => (
                201,
                json!({"kind": "SubjectAccessReview", "spec": s.body["spec"].clone(),
                       "status": {"allowed": false}}),
            ),
            ("DELETE", _) => (200, json!({"kind": "Status", "status": "Success"})),
            _ => not_found(),
        }
    }))
}

#[tokio::test(start_paused = true)]
async fn a_stale_update_request_of_the_same_policy_is_not_blamed_for_a_new_trigger() {
    let (live, _log) = generating_nothing(|_| {
        vec![update_request(
            "ur-old",
            "testlab-trigger-earlier",
            "Failed",
            "old failure from an earlier run",
        )]
    });
    let lab = testlab(Duration::from_secs(1));
    let o = run_generated(&lab, &live).await;
    assert_eq!(o.verdict, Verdict::Fail, "{o:?}");
    assert!(o.detail.contains("no UpdateRequest"), "{}", o.detail);
    assert!(!o.detail.contains("old failure"), "{}", o.detail);
}

#[tokio::test(start_paused = true)]
async fn the_failed_update_request_of_this_trigger_shows_its_own_message() {
    let (live, _log) = generating_nothing(|trigger| {
        vec![
            update_request("ur-old", "testlab-trigger-earlier", "Failed", "old failure"),
            update_request("ur-new", trigger, "Failed", "configmaps is forbidden"),
        ]
    });
    let lab = testlab(Duration::from_secs(1));
    let o = run_generated(&lab, &live).await;
    assert_eq!(o.verdict, Verdict::Fail, "{o:?}");
    assert!(
        o.detail
            .contains("the UpdateRequest failed: configmaps is forbidden"),
        "{}",
        o.detail
    );
    assert!(!o.detail.contains("old failure"), "{}", o.detail);
}

#[tokio::test(start_paused = true)]
async fn a_pending_update_request_is_an_error_not_a_fail() {
    let (live, log) =
        generating_nothing(|trigger| vec![update_request("ur-1", trigger, "Pending", "")]);
    let lab = testlab(Duration::from_secs(5));
    let o = run_generated(&lab, &live).await;
    assert_eq!(o.verdict, Verdict::Error, "{o:?}");
    assert!(o.detail.contains("still Pending"), "{}", o.detail);
    assert!(
        o.detail.contains("kyverno-background-controller"),
        "{}",
        o.detail
    );
    let name = trigger_name(&log).unwrap();
    assert!(deleted(&log, &name), "trigger not deleted");
}

#[tokio::test(start_paused = true)]
async fn generated_fails_at_once_when_its_policy_is_not_in_the_cluster() {
    let (live, log) = mock(Arc::new(|s: &Seen| discovery(s).unwrap_or_else(not_found)));
    let lab = testlab(Duration::from_secs(60));
    let started = tokio::time::Instant::now();
    let o = run_generated(&lab, &live).await;
    assert_eq!(o.verdict, Verdict::Fail, "{o:?}");
    assert_eq!(
        o.detail.to_string(),
        "policy `testlab-require-team` is not in the cluster; apply it with `kubectl apply -f`"
    );
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert!(
        trigger_name(&log).is_none(),
        "created a trigger for a missing policy"
    );
}

#[tokio::test(start_paused = true)]
async fn access_reviews_name_resources_from_discovery_tables_not_a_plural_guess() {
    use kca::target::ObjRef;
    let (live, log) = mock(Arc::new(|s: &Seen| {
        if s.path == "/apis/example.com/v1" {
            (
                200,
                resources("example.com/v1", &[("gooses", "Goose", true)]),
            )
        } else {
            not_found()
        }
    }));
    let of = |a: &str, k: &str| ObjRef::new(a, k, None, "x");
    let r = |o: ObjRef| {
        let live = &live;
        async move { kca::lab::live::resource_of(live, &o).await }
    };
    assert_eq!(
        r(of("networking.k8s.io/v1", "NetworkPolicy")).await,
        Some(("networking.k8s.io".into(), "networkpolicies".into()))
    );
    assert_eq!(
        r(of("v1", "Endpoints")).await,
        Some((String::new(), "endpoints".into()))
    );
    // The built-in table answered without a request; a CRD asks the server.
    assert!(log.lock().unwrap().is_empty());
    assert_eq!(
        r(of("example.com/v1", "Goose")).await,
        Some(("example.com".into(), "gooses".into()))
    );
    assert_eq!(r(of("example.com/v1", "Moose")).await, None);
}

#[tokio::test(start_paused = true)]
async fn verify_live_applies_a_variant_as_the_labs_objects_namespaces_first() {
    let (live, log) = mock(Arc::new(|s: &Seen| {
        if let Some(r) = admission_v1_without_vap(s).or_else(|| discovery(s)) {
            return r;
        }
        match (s.method.as_str(), s.path.as_str()) {
            // Kyverno's policy webhook refuses the policy: reported, the rest still applied.
            ("PATCH", p) if p.starts_with("/apis/kyverno.io/") => (
                400,
                json!({"kind": "Status", "status": "Failure", "code": 400,
                       "message": "admission webhook \"validate-policy.kyverno.svc\" denied the request"}),
            ),
            ("PATCH", _) => (200, s.body.clone()),
            _ => not_found(),
        }
    }));
    let lab = testlab(Duration::from_secs(1));
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(
        ws.path().join("a-policy.yaml"),
        "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: p}\n",
    )
    .unwrap();
    std::fs::write(
        ws.path().join("b-vap.yaml"),
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: v}\n",
    )
    .unwrap();
    std::fs::write(
        ws.path().join("c-app.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: extra}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: extra}\n",
    )
    .unwrap();
    let cli = <kca::cli::Cli as clap::Parser>::try_parse_from(["kca", "validate"]).unwrap();
    let ctx = kca::ctx::Ctx::new(kca::app::settings_from(
        &cli,
        &kca::settings::Env::default(),
    ));
    kca::lab::verify::apply_workspace(&ctx, &live, &lab, ws.path())
        .await
        .expect("a refused object is reported, not fatal");
    let patches: Vec<Seen> = log
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.method == "PATCH")
        .cloned()
        .collect();
    let paths: Vec<&str> = patches.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(
        paths,
        vec![
            "/api/v1/namespaces/extra",
            "/apis/kyverno.io/v1/clusterpolicies/p",
            "/api/v1/namespaces/extra/configmaps/settings",
        ],
        "namespaces first, the unserved VAP left out"
    );
    for p in &patches {
        assert_eq!(
            p.body.pointer("/metadata/labels/kca.dev~1lab"),
            Some(&json!("testlab")),
            "{} is not labelled as the lab's (the next reset would leave it)",
            p.path
        );
        assert_eq!(
            p.query_pairs(),
            vec![("fieldManager", "kca"), ("force", "true")]
        );
    }
}

#[tokio::test(start_paused = true)]
async fn an_accepted_check_on_a_kind_the_server_does_not_serve_is_skipped() {
    let (live, log) = mock(Arc::new(|s: &Seen| {
        admission_v1_without_vap(s)
            .or_else(|| discovery(s))
            .unwrap_or_else(not_found)
    }));
    let lab = testlab(Duration::from_secs(1));
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(
        ws.path().join("vap.yaml"),
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: require-limits-vap}\nspec: {}\n",
    )
    .unwrap();
    let check = Check {
        id: "vap-accepted".into(),
        spec: Spec::Accepted {
            path: "vap.yaml".into(),
            document: None,
            accepted: true,
            message: None,
        },
        ..lab.check("no-team-denied").unwrap().clone()
    };
    let env = Submission {
        lab: &lab,
        workspace: ws.path(),
    };
    let o = kca::lab::live::evaluate(&live, env, &check, &common::printer()).await;
    assert_eq!(o.verdict, Verdict::Skipped, "{o:?}");
    assert!(o.detail.contains("1.30"), "{}", o.detail);
    assert!(!log.lock().unwrap().iter().any(|s| s.method == "POST"));
}

#[tokio::test(start_paused = true)]
async fn a_failed_update_request_ends_the_wait_before_the_timeout() {
    let (live, _log) = generating_nothing(|trigger| {
        vec![update_request(
            "ur-1",
            trigger,
            "Failed",
            "configmaps is forbidden",
        )]
    });
    let lab = testlab(Duration::from_secs(60));
    let started = tokio::time::Instant::now();
    let o = run_generated(&lab, &live).await;
    assert_eq!(o.verdict, Verdict::Fail, "{o:?}");
    assert!(o.detail.contains("configmaps is forbidden"), "{}", o.detail);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "waited {:?} for an UpdateRequest that had failed",
        started.elapsed()
    );
}

// ---- readiness before probing, and when a missed probe is asked again ----

/// A ClusterPolicy `testlab-require-team` with this status, last written at `written`.
fn policy_with(status: Option<Value>, written: &str) -> Value {
    let mut p = json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
        "metadata": {"name": "testlab-require-team", "uid": "u1", "resourceVersion": "7",
                     "creationTimestamp": written,
                     "managedFields": [{"manager": "kubectl", "time": written}]}});
    if let Some(s) = status {
        p["status"] = s;
    }
    p
}

fn admitted_pod() -> (u16, Value) {
    (
        201,
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "kca-testlab"}}),
    )
}

fn posts(log: &Mutex<Vec<Seen>>) -> usize {
    log.lock()
        .unwrap()
        .iter()
        .filter(|s| s.method == "POST")
        .count()
}

#[tokio::test(start_paused = true)]
async fn a_policy_without_any_status_is_an_environment_error_not_a_fail() {
    let (live, log) = mock(Arc::new(|s: &Seen| {
        discovery(s).unwrap_or_else(|| match (s.method.as_str(), s.path.as_str()) {
            ("GET", "/apis/kyverno.io/v1/clusterpolicies/testlab-require-team") => {
                (200, policy_with(None, "2026-01-01T00:00:00Z"))
            }
            _ => not_found(),
        })
    }));
    let lab = testlab(Duration::from_secs(5));
    let o = run_admission(&lab, &live, "no-team-denied").await;
    assert_eq!(o.verdict, Verdict::Error, "{o:?}");
    assert!(
        o.detail.contains("no Kyverno controller has seen it"),
        "{}",
        o.detail
    );
    assert!(
        o.detail.contains("kubectl -n kyverno get pods"),
        "{}",
        o.detail
    );
    assert_eq!(posts(&log), 0, "probed a policy nothing has seen");
}

#[tokio::test(start_paused = true)]
async fn a_policy_kyverno_marked_not_ready_fails_with_kyvernos_reason() {
    let (live, log) = mock(Arc::new(|s: &Seen| {
        discovery(s).unwrap_or_else(|| match (s.method.as_str(), s.path.as_str()) {
            ("GET", "/apis/kyverno.io/v1/clusterpolicies/testlab-require-team") => (
                200,
                policy_with(
                    Some(json!({"conditions": [{"type": "Ready", "status": "False",
                        "reason": "Failed", "message": "policy is not configured in the webhook"}]})),
                    "2026-01-01T00:00:00Z",
                ),
            ),
            _ => not_found(),
        })
    }));
    let lab = testlab(Duration::from_secs(5));
    let o = run_admission(&lab, &live, "no-team-denied").await;
    assert_eq!(o.verdict, Verdict::Fail, "{o:?}");
    assert!(
        o.detail.contains("policy is not configured in the webhook"),
        "{}",
        o.detail
    );
    assert_eq!(posts(&log), 0);
}

#[tokio::test(start_paused = true)]
async fn one_unready_policy_costs_one_wait_per_run_not_one_per_check() {
    let (live, _log) = mock(Arc::new(|s: &Seen| {
        discovery(s).unwrap_or_else(|| match (s.method.as_str(), s.path.as_str()) {
            ("GET", "/apis/kyverno.io/v1/clusterpolicies/testlab-require-team") => (
                200,
                policy_with(
                    Some(json!({"conditions": [{"type": "Ready", "status": "False", "reason": "Failed"}]})),
                    "2026-01-01T00:00:00Z",
                ),
            ),
            _ => not_found(),
        })
    }));
    let lab = testlab(Duration::from_secs(60));
    let start = tokio::time::Instant::now();
    let first = run_admission(&lab, &live, "no-team-denied").await;
    let after_first = start.elapsed();
    let second = run_admission(&lab, &live, "team-allowed").await;
    let second_took = start.elapsed() - after_first;
    assert_eq!(first.verdict, Verdict::Fail, "{first:?}");
    assert_eq!(second.verdict, Verdict::Fail, "{second:?}");
    assert!(after_first >= Duration::from_secs(59), "{after_first:?}");
    assert!(
        second_took < Duration::from_secs(2),
        "waited again: {second_took:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_wrong_answer_applied_a_while_ago_fails_at_once_without_retries() {
    let (live, log) = mock(Arc::new(|s: &Seen| {
        discovery(s).unwrap_or_else(|| match (s.method.as_str(), s.path.as_str()) {
            ("GET", "/apis/kyverno.io/v1/clusterpolicies/testlab-require-team") => (
                200,
                policy_with(
                    Some(json!({"conditions": [{"type": "Ready", "status": "True"}]})),
                    "2026-01-01T00:00:00Z",
                ),
            ),
            ("POST", "/api/v1/namespaces/kca-testlab/pods") => admitted_pod(),
            _ => not_found(),
        })
    }));
    let lab = testlab(Duration::from_secs(60));
    let start = tokio::time::Instant::now();
    let o = run_admission(&lab, &live, "no-team-denied").await;
    assert_eq!(o.verdict, Verdict::Fail, "{o:?}");
    assert_eq!(
        posts(&log),
        1,
        "a miss on old configuration was asked again"
    );
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test(start_paused = true)]
async fn a_probe_missing_configuration_written_just_now_is_asked_again() {
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let calls = Arc::new(Mutex::new(0));
    let c = calls.clone();
    let (live, log) = mock(Arc::new(move |s: &Seen| {
        discovery(s).unwrap_or_else(|| match (s.method.as_str(), s.path.as_str()) {
            ("GET", "/apis/kyverno.io/v1/clusterpolicies/testlab-require-team") => (
                200,
                policy_with(
                    Some(json!({"conditions": [{"type": "Ready", "status": "True"}]})),
                    &now,
                ),
            ),
            ("POST", "/api/v1/namespaces/kca-testlab/pods") => {
                let mut n = c.lock().unwrap();
                *n += 1;
                if *n == 1 {
                    admitted_pod()
                } else {
                    denial_by("testlab-require-team", "require-team")
                }
            }
            _ => not_found(),
        })
    }));
    let lab = testlab(Duration::from_secs(60));
    let o = run_admission(&lab, &live, "no-team-denied").await;
    assert_eq!(o.verdict, Verdict::Pass, "{o:?}");
    assert_eq!(posts(&log), 2);
}

/// A lab whose one check expects a Pod denied by whatever policy (no `deniedBy`), and a
/// workspace holding the learner's ValidatingPolicy.
fn vpol_lab(dir: &Path) -> kca::content::lab::Lab {
    std::fs::write(
        dir.join("lab.yaml"),
        r#"apiVersion: kca.dev/v1alpha1
kind: Lab
metadata: {id: vpollab, title: T, module: 1, concepts: [x]}
starter: [vpol.yaml]
solution: [vpol.yaml]
tasks:
  - id: t
    title: T
    instructions: I
    checks:
      - id: vpol-denies
        kind: admission
        timeout: 30
        expect: denied
        probe:
          apiVersion: v1
          kind: Pod
          metadata: {name: p, namespace: kca-testlab}
          spec: {containers: [{name: c, image: nginx}]}
"#,
    )
    .unwrap();
    for sub in ["starter", "solution"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        std::fs::write(dir.join(sub).join("vpol.yaml"), VPOL).unwrap();
    }
    match load_file(&dir.join("lab.yaml")) {
        Ok(Document::Lab(l)) => *l,
        Ok(_) => panic!("not a lab"),
        Err(d) => panic!("{:?}", d.iter().map(|d| &d.message).collect::<Vec<_>>()),
    }
}

const VPOL: &str = r#"apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: require-limits-vpol}
spec:
  matchConstraints:
    resourceRules:
      - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
    - expression: "object.spec.containers.all(c, has(c.resources.limits))"
"#;

#[tokio::test(start_paused = true)]
async fn a_validating_policy_is_probed_only_once_kyverno_marks_it_ready() {
    let polls = Arc::new(Mutex::new(0));
    let p = polls.clone();
    let (live, _log) = mock(Arc::new(move |s: &Seen| {
        if s.method == "GET" && s.path == "/apis/policies.kyverno.io/v1" {
            return (
                200,
                resources(
                    "policies.kyverno.io/v1",
                    &[("validatingpolicies", "ValidatingPolicy", false)],
                ),
            );
        }
        let ready = *p.lock().unwrap() >= 3;
        discovery(s).unwrap_or_else(|| match (s.method.as_str(), s.path.as_str()) {
            ("GET", "/apis/policies.kyverno.io/v1/validatingpolicies/require-limits-vpol") => {
                let mut n = p.lock().unwrap();
                *n += 1;
                let status = if *n >= 3 {
                    json!({"conditionStatus": {"ready": true, "conditions": [
                        {"type": "WebhookConfigured", "status": "True"}]}})
                } else {
                    json!({})
                };
                (
                    200,
                    json!({"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy",
                       "metadata": {"name": "require-limits-vpol", "uid": "v", "resourceVersion": format!("{n}"),
                                    "creationTimestamp": "2026-01-01T00:00:00Z"},
                       "status": status}),
                )
            }
            ("POST", "/api/v1/namespaces/kca-testlab/pods") if ready => (
                422,
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 422, "reason": "Invalid",
                   "message": "admission webhook \"vpol.validate.kyverno.svc-fail\" denied the request: Policy require-limits-vpol failed: limits required"}),
            ),
            ("POST", "/api/v1/namespaces/kca-testlab/pods") => admitted_pod(),
            _ => not_found(),
        })
    }));
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("vpollab");
    std::fs::create_dir_all(&dir).unwrap();
    let lab = vpol_lab(&dir);
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("vpol.yaml"), VPOL).unwrap();
    let env = Submission {
        lab: &lab,
        workspace: &ws,
    };
    let o = kca::lab::live::evaluate(
        &live,
        env,
        lab.check("vpol-denies").unwrap(),
        &common::printer(),
    )
    .await;
    assert_eq!(o.verdict, Verdict::Pass, "{o:?}");
    assert!(*polls.lock().unwrap() >= 3);
}

//! Opt-in tests against a real API server. They run only when `KCA_TEST_KUBECONFIG` names a
//! kubeconfig with cluster-admin rights (its current context is used); otherwise each test
//! prints `skipped: KCA_TEST_KUBECONFIG not set` and returns. `~/.kube/config` is never read.
//!
//! Any conformant Kubernetes ≥ 1.24 works, even one without nodes (Pods are only ever
//! dry-run). ValidatingAdmissionPolicy is exercised when the server serves it (1.30+);
//! Kyverno only with `KCA_TEST_KYVERNO=1` on a cluster where it is installed.
//!
//! Every object a test creates is registered with a drop guard *before* it is created, so it
//! is deleted even when an assertion fails: a unique test namespace (which takes its
//! namespaced contents along) and any cluster-scoped objects. The lab-cluster marker is put
//! back the way it was found.
//!
//!     KCA_TEST_KUBECONFIG=/path/to/admin.kubeconfig cargo test --test live -- --nocapture

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Parser;
use kca::target::live::{Live, LiveError};
use kca::target::{AccessQuery, Admission, DeniedBy, Identity, ObjRef, Operation};
use serde_json::{Value, json};

const OWNED_LABEL: &str = "kca.dev/lab";
const OWNED_VALUE: &str = "kca-live-test";

fn kubeconfig() -> Option<PathBuf> {
    match std::env::var_os("KCA_TEST_KUBECONFIG").filter(|v| !v.is_empty()) {
        Some(p) => {
            let p = PathBuf::from(p);
            assert!(
                p.is_file(),
                "KCA_TEST_KUBECONFIG={} is not a file",
                p.display()
            );
            Some(p)
        }
        None => {
            say("skipped: KCA_TEST_KUBECONFIG not set");
            None
        }
    }
}

fn skip(what: &str, why: &str) {
    say(&format!("skipped: {what}: {why}"));
}

/// Straight to the process's stderr: the test harness captures `eprintln!`, and a skip
/// must be seen without `--nocapture`.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Deletes what a test created (in reverse order) and re-applies what it changed, on a
/// fresh runtime on its own thread, so it also runs while a failed test unwinds.
struct Cleanup {
    kubeconfig: PathBuf,
    delete: Vec<ObjRef>,
    restore: Vec<Value>,
}

impl Cleanup {
    fn new(kubeconfig: &Path) -> Self {
        Cleanup {
            kubeconfig: kubeconfig.to_path_buf(),
            delete: Vec::new(),
            restore: Vec::new(),
        }
    }
    fn delete_later(&mut self, r: ObjRef) {
        self.delete.push(r);
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let kubeconfig = self.kubeconfig.clone();
        let delete = std::mem::take(&mut self.delete);
        let restore = std::mem::take(&mut self.restore);
        let joined = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("cleanup runtime");
            rt.block_on(async move {
                let live = match Live::connect(Some(&kubeconfig), None).await {
                    Ok(l) => l,
                    Err(e) => {
                        eprintln!("cleanup: cannot connect: {e}");
                        return;
                    }
                };
                for obj in restore {
                    if let Err(e) = live.apply(&obj).await {
                        eprintln!("cleanup: could not restore {:?}: {e}", ObjRef::of(&obj));
                    }
                }
                for r in delete.iter().rev() {
                    if let Err(e) = live.delete(r).await {
                        eprintln!("cleanup: could not delete {r}: {e}");
                    }
                }
            });
        })
        .join();
        if joined.is_err() {
            eprintln!("cleanup: the cleanup thread panicked");
        }
    }
}

fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "{prefix}-{:x}-{}",
        nanos & 0xffff_ffff,
        std::process::id() % 10000
    )
}

fn owned_labels() -> Value {
    json!({ OWNED_LABEL: OWNED_VALUE })
}

/// Applies an object the test owns, registering it for deletion first. Namespaced objects
/// are deleted one by one too: a bare API server (no controller manager) never empties a
/// deleted namespace.
async fn make(live: &Live, guard: &mut Cleanup, obj: Value) -> Value {
    guard.delete_later(ObjRef::of(&obj).expect("fixture has apiVersion, kind and name"));
    live.apply(&obj)
        .await
        .unwrap_or_else(|e| panic!("apply {:?}: {e}", ObjRef::of(&obj)))
}

/// Creates a namespace for one test, deleted by the guard, with its `default`
/// ServiceAccount: the ServiceAccount admission plugin refuses Pods whose account is
/// missing, and without a controller manager nobody else creates it.
async fn test_namespace(live: &Live, guard: &mut Cleanup, prefix: &str) -> String {
    let ns = unique(prefix);
    make(
        live,
        guard,
        json!({"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": ns, "labels": owned_labels()}}),
    )
    .await;
    make(
        live,
        guard,
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": "default", "namespace": ns}}),
    )
    .await;
    ns
}

async fn connect(path: &Path) -> Live {
    Live::connect(Some(path), None).await.expect("connect")
}

/// RBAC (and admission policy) changes reach the authorizer through informers, a moment
/// after they are stored: ask until the expected answer or a deadline.
async fn eventually<T, F, Fut>(deadline: Duration, mut ask: F, done: impl Fn(&T) -> bool) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let until = Instant::now() + deadline;
    loop {
        let answer = ask().await;
        if done(&answer) || Instant::now() >= until {
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn probe_pod(ns: &str, name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": owned_labels()},
        // Compliant with the restricted Pod Security level, in case the server enforces it.
        "spec": {
            "securityContext": {"runAsNonRoot": true, "runAsUser": 65535,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                            "securityContext": {"allowPrivilegeEscalation": false,
                                                "capabilities": {"drop": ["ALL"]}},
                            "resources": {"limits": {"cpu": "10m", "memory": "16Mi"}}}]
        }
    })
}

#[tokio::test]
async fn server_version_and_discovery() {
    let Some(path) = kubeconfig() else { return };
    let live = connect(&path).await;
    let (major, minor) = live.server_version().await.unwrap();
    assert_eq!(major, 1);
    assert!(
        minor >= 24,
        "server is 1.{minor}; these tests need 1.24 or later"
    );
    assert!(live.serves("v1", "Pod").await.unwrap());
    assert!(live.serves("v1", "Namespace").await.unwrap());
    assert!(
        live.serves("rbac.authorization.k8s.io/v1", "ClusterRole")
            .await
            .unwrap()
    );
    assert!(!live.serves("v1", "NoSuchKind").await.unwrap());
    assert!(!live.serves("kca.dev/v1alpha1", "Lab").await.unwrap());
    let vap = live
        .serves(
            "admissionregistration.k8s.io/v1",
            "ValidatingAdmissionPolicy",
        )
        .await
        .unwrap();
    assert_eq!(
        vap,
        minor >= 30,
        "ValidatingAdmissionPolicy is GA (v1) from 1.30"
    );
}

#[tokio::test]
async fn can_i_for_a_user_and_a_service_account() {
    let Some(path) = kubeconfig() else { return };
    let live = connect(&path).await;
    let mut guard = Cleanup::new(&path);
    let ns = test_namespace(&live, &mut guard, "kca-canit").await;

    for obj in [
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": "builder", "namespace": ns, "labels": owned_labels()}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": "probe-writer", "namespace": ns, "labels": owned_labels()},
               "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "get"]},
                         {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "probe-writer", "namespace": ns, "labels": owned_labels()},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "probe-writer"},
               "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "kca-test-alice"},
                            {"kind": "ServiceAccount", "name": "builder", "namespace": ns}]}),
    ] {
        make(&live, &mut guard, obj).await;
    }

    let ask =
        |user: &str, groups: &[String], verb: &str, resource: &str, namespace: &str| AccessQuery {
            user: user.into(),
            groups: groups.to_vec(),
            verb: verb.into(),
            resource: resource.into(),
            namespace: namespace.into(),
            ..Default::default()
        };
    let alice_create = ask("kca-test-alice", &[], "create", "pods", &ns);
    let a = eventually(
        Duration::from_secs(15),
        || live.can_i(&alice_create),
        |r| r.as_ref().is_ok_and(|a| a.allowed),
    )
    .await
    .unwrap();
    assert!(a.allowed, "alice may create pods in {ns}: {a:?}");

    let denied = [
        ask("kca-test-alice", &[], "delete", "pods", &ns),
        ask("kca-test-alice", &[], "create", "pods", "default"),
        ask("kca-test-alice", &[], "create", "pods", ""),
        ask("kca-test-bob", &[], "create", "pods", &ns),
    ];
    for q in &denied {
        let a = live.can_i(q).await.unwrap();
        assert!(!a.allowed, "{q:?} must be denied: {a:?}");
    }

    let sa = Identity::service_account(&ns, "builder");
    let sa_get = ask(&sa.user, &sa.groups, "get", "configmaps", &ns);
    let a = eventually(
        Duration::from_secs(15),
        || live.can_i(&sa_get),
        |r| r.as_ref().is_ok_and(|a| a.allowed),
    )
    .await
    .unwrap();
    assert!(a.allowed, "the service account may get configmaps: {a:?}");
    let sa_create = ask(&sa.user, &sa.groups, "create", "configmaps", &ns);
    assert!(!live.can_i(&sa_create).await.unwrap().allowed);
    // Subresources and names are part of the question.
    let mut logs = ask("kca-test-alice", &[], "get", "pods", &ns);
    logs.subresource = "log".into();
    assert!(
        !live.can_i(&logs).await.unwrap().allowed,
        "pods/log was not granted"
    );
}

#[tokio::test]
async fn admission_dry_runs_allowed_and_denied() {
    let Some(path) = kubeconfig() else { return };
    let live = connect(&path).await;
    let mut guard = Cleanup::new(&path);
    let ns = test_namespace(&live, &mut guard, "kca-admit").await;

    // Allowed, as the caller: the answer is the would-be object, and nothing is stored.
    let probe = probe_pod(&ns, "probe");
    let first = eventually(
        Duration::from_secs(15),
        || live.admit(&probe, Operation::Create, None),
        |r| matches!(r, Ok(Admission::Allowed { .. })),
    )
    .await
    .unwrap();
    match first {
        Admission::Allowed { object, .. } => {
            assert_eq!(object["metadata"]["name"], "probe");
            assert_eq!(object["metadata"]["namespace"], ns.as_str());
            assert_eq!(object["kind"], "Pod");
        }
        other => panic!("expected allowed, got {other:?}"),
    }
    assert!(
        live.get(&ObjRef::new("v1", "Pod", Some(&ns), "probe"))
            .await
            .unwrap()
            .is_none(),
        "a dry run must not store the Pod"
    );

    // Denied by RBAC: impersonating a user with no rights at all.
    let nobody = Identity::user("kca-test-nobody", vec!["system:authenticated".into()]);
    match live
        .admit(&probe, Operation::Create, Some(&nobody))
        .await
        .unwrap()
    {
        Admission::Denied(d) => {
            assert_eq!(d.by, DeniedBy::Rbac, "{d:?}");
            assert_eq!(d.code, 403);
            assert!(d.message.contains("kca-test-nobody"), "{}", d.message);
        }
        other => panic!("expected an RBAC denial, got {other:?}"),
    }

    // Allowed when impersonating a user who was granted create.
    make(&live, &mut guard, json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "editor", "namespace": ns, "labels": owned_labels()},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "kca-test-editor"}]}))
        .await;
    let editor = Identity::user("kca-test-editor", vec!["system:authenticated".into()]);
    let out = eventually(
        Duration::from_secs(15),
        || live.admit(&probe, Operation::Create, Some(&editor)),
        |r| matches!(r, Ok(Admission::Allowed { .. })),
    )
    .await
    .unwrap();
    assert!(matches!(out, Admission::Allowed { .. }), "editor: {out:?}");

    // Denied by a built-in admission plugin: NamespaceLifecycle, for a namespace that is not there.
    let gone = unique("kca-gone");
    match live
        .admit(&probe_pod(&gone, "probe"), Operation::Create, None)
        .await
        .unwrap()
    {
        Admission::Denied(d) => {
            assert_eq!(d.by, DeniedBy::Other, "{d:?}");
            assert!(d.message.contains(&gone), "{}", d.message);
        }
        other => panic!("expected a NamespaceLifecycle denial, got {other:?}"),
    }

    // Denied by a built-in admission plugin that needs no controller: LimitRanger, with a
    // Container CPU maximum below the probe's limit.
    make(
        &live,
        &mut guard,
        json!({"apiVersion": "v1", "kind": "LimitRange",
        "metadata": {"name": "tiny", "namespace": ns, "labels": owned_labels()},
        "spec": {"limits": [{"type": "Container", "max": {"cpu": "5m"}}]}}),
    )
    .await;
    let out = eventually(
        Duration::from_secs(15),
        || live.admit(&probe, Operation::Create, None),
        |r| matches!(r, Ok(Admission::Denied(_))),
    )
    .await
    .unwrap();
    match out {
        Admission::Denied(d) => {
            assert_eq!(d.by, DeniedBy::Other, "{d:?}");
            assert_eq!(d.code, 403);
            assert!(d.message.contains("cpu"), "{}", d.message);
        }
        other => panic!("expected a LimitRanger denial, got {other:?}"),
    }
}

#[tokio::test]
async fn admission_denied_by_resource_quota() {
    let Some(path) = kubeconfig() else { return };
    let live = connect(&path).await;
    let mut guard = Cleanup::new(&path);
    let ns = test_namespace(&live, &mut guard, "kca-quota").await;
    let quota = ObjRef::new("v1", "ResourceQuota", Some(&ns), "no-pods");
    make(
        &live,
        &mut guard,
        json!({"apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"name": "no-pods", "namespace": ns, "labels": owned_labels()},
        "spec": {"hard": {"pods": "0"}}}),
    )
    .await;
    // The quota plugin enforces only what the quota controller has written into the
    // status; a bare API server has no such controller.
    let counted = eventually(
        Duration::from_secs(20),
        || live.get(&quota),
        |r| matches!(r, Ok(Some(q)) if q.pointer("/status/hard/pods").is_some()),
    )
    .await
    .unwrap();
    if counted
        .and_then(|q| q.pointer("/status/hard/pods").cloned())
        .is_none()
    {
        skip(
            "ResourceQuota denial",
            "no quota controller filled in the quota's status within 20s (an API server without a controller manager)",
        );
        return;
    }
    let probe = probe_pod(&ns, "probe");
    let out = eventually(
        Duration::from_secs(15),
        || live.admit(&probe, Operation::Create, None),
        |r| matches!(r, Ok(Admission::Denied(_))),
    )
    .await
    .unwrap();
    match out {
        Admission::Denied(d) => {
            assert_eq!(d.by, DeniedBy::Other, "{d:?}");
            assert_eq!(d.code, 403);
            assert!(d.message.contains("quota"), "{}", d.message);
        }
        other => panic!("expected a quota denial, got {other:?}"),
    }
}

#[tokio::test]
async fn admission_update_dry_run() {
    let Some(path) = kubeconfig() else { return };
    let live = connect(&path).await;
    let mut guard = Cleanup::new(&path);
    let ns = test_namespace(&live, &mut guard, "kca-update").await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": ns, "labels": owned_labels()},
        "data": {"mode": "a"}});
    make(&live, &mut guard, cm.clone()).await;
    let mut changed = cm.clone();
    changed["data"]["mode"] = json!("b");
    match live.admit(&changed, Operation::Update, None).await.unwrap() {
        Admission::Allowed { object, .. } => assert_eq!(object["data"]["mode"], "b"),
        other => panic!("expected allowed, got {other:?}"),
    }
    let stored = live
        .get(&ObjRef::new("v1", "ConfigMap", Some(&ns), "settings"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored["data"]["mode"], "a",
        "a dry-run update must not change the object"
    );
}

#[tokio::test]
async fn resources_get_list_apply_create_delete() {
    let Some(path) = kubeconfig() else { return };
    let live = connect(&path).await;
    let mut guard = Cleanup::new(&path);
    let ns = test_namespace(&live, &mut guard, "kca-res").await;
    let cm_ref = ObjRef::new("v1", "ConfigMap", Some(&ns), "owned");
    assert!(live.get(&cm_ref).await.unwrap().is_none());

    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "owned", "namespace": ns, "labels": owned_labels()},
        "data": {"k": "1"}});
    let applied = make(&live, &mut guard, cm.clone()).await;
    assert_eq!(applied["data"]["k"], "1");
    let managers: Vec<&str> = applied["metadata"]["managedFields"]
        .as_array()
        .map(|m| m.iter().filter_map(|f| f["manager"].as_str()).collect())
        .unwrap_or_default();
    assert!(managers.contains(&"kca"), "field manager: {managers:?}");

    // Apply again with a change: the same object, updated.
    let mut cm2 = cm.clone();
    cm2["data"]["k"] = json!("2");
    live.apply(&cm2).await.unwrap();
    assert_eq!(live.get(&cm_ref).await.unwrap().unwrap()["data"]["k"], "2");

    // An unowned object beside it, found by create with generateName.
    let other = live
        .create(&json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"generateName": "unowned-", "namespace": ns}}))
        .await
        .unwrap();
    let other_name = other["metadata"]["name"].as_str().unwrap().to_string();
    guard.delete_later(ObjRef::new(
        "v1",
        "ConfigMap",
        Some(&ns),
        other_name.as_str(),
    ));
    assert!(other_name.starts_with("unowned-") && other_name.len() > "unowned-".len());

    let selector = format!("{OWNED_LABEL}={OWNED_VALUE}");
    let owned = live
        .list("v1", "ConfigMap", Some(&ns), &selector)
        .await
        .unwrap();
    let names: Vec<&str> = owned
        .iter()
        .filter_map(|o| o["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, vec!["owned"]);
    assert_eq!(owned[0]["kind"], "ConfigMap");
    let all = live.list("v1", "ConfigMap", Some(&ns), "").await.unwrap();
    assert!(
        all.iter()
            .any(|o| o["metadata"]["name"] == other_name.as_str())
    );
    // Across namespaces, the selector still finds only this test's object(s).
    let everywhere = live
        .list(
            "v1",
            "ConfigMap",
            None,
            &format!("{selector},kca.dev/none!=x"),
        )
        .await
        .unwrap();
    assert!(
        everywhere
            .iter()
            .any(|o| o["metadata"]["namespace"] == ns.as_str())
    );
    // Cluster-scoped kinds ignore a namespace.
    let namespaces = live
        .list("v1", "Namespace", Some("ignored"), &selector)
        .await
        .unwrap();
    assert!(
        namespaces
            .iter()
            .any(|o| o["metadata"]["name"] == ns.as_str())
    );

    live.delete(&cm_ref).await.unwrap();
    let gone = eventually(
        Duration::from_secs(10),
        || live.get(&cm_ref),
        |r| matches!(r, Ok(None)),
    )
    .await
    .unwrap();
    assert!(gone.is_none());
    live.delete(&cm_ref)
        .await
        .expect("deleting what is gone is fine");

    // An object that never reports ready is not ready by the deadline.
    let started = Instant::now();
    let r = ObjRef::new("v1", "ConfigMap", Some(&ns), other_name.as_str());
    assert!(!live.wait_ready(&r, Duration::from_secs(2)).await.unwrap());
    assert!(started.elapsed() < Duration::from_secs(15));

    // A kind the server does not serve is unsupported, not a crash.
    let bogus = ObjRef::new("kca.dev/v1alpha1", "Lab", Some(&ns), "x");
    assert!(matches!(
        live.get(&bogus).await,
        Err(LiveError::NotServed { .. })
    ));
}

#[tokio::test]
async fn validating_admission_policy_denial_names_policy_and_binding() {
    let Some(path) = kubeconfig() else { return };
    let live = connect(&path).await;
    if !live
        .serves(
            "admissionregistration.k8s.io/v1",
            "ValidatingAdmissionPolicy",
        )
        .await
        .unwrap()
    {
        let (_, minor) = live.server_version().await.unwrap();
        skip(
            "ValidatingAdmissionPolicy",
            &format!(
                "the server (1.{minor}) does not serve admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (GA from 1.30)"
            ),
        );
        return;
    }
    let mut guard = Cleanup::new(&path);
    let ns = test_namespace(&live, &mut guard, "kca-vap").await;
    let policy = unique("kca-test-vap");
    let binding = format!("{policy}-binding");
    guard.delete_later(ObjRef::new(
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicy",
        None,
        policy.clone(),
    ));
    guard.delete_later(ObjRef::new(
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicyBinding",
        None,
        binding.clone(),
    ));
    live.apply(&json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": policy, "labels": owned_labels()},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]},
            "validations": [{"expression": "object.metadata.name != 'kca-forbidden'",
                             "message": "the name kca-forbidden is not allowed"}]
        }
    }))
    .await
    .unwrap();
    live.apply(&json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": binding, "labels": owned_labels()},
        "spec": {
            "policyName": policy,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}}
        }
    }))
    .await
    .unwrap();

    let bad = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "kca-forbidden", "namespace": ns}});
    let out = eventually(
        Duration::from_secs(30),
        || live.admit(&bad, Operation::Create, None),
        |r| matches!(r, Ok(Admission::Denied(_))),
    )
    .await
    .unwrap();
    match out {
        Admission::Denied(d) => {
            assert_eq!(
                d.by,
                DeniedBy::ValidatingAdmissionPolicy {
                    policy: policy.clone(),
                    binding: binding.clone()
                },
                "{}",
                d.message
            );
            assert_eq!(d.code, 422, "a policy without reason denies as Invalid");
        }
        other => panic!("expected a ValidatingAdmissionPolicy denial, got {other:?}"),
    }
    let good = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "fine", "namespace": ns}});
    assert!(matches!(
        live.admit(&good, Operation::Create, None).await.unwrap(),
        Admission::Allowed { .. }
    ));
}

#[tokio::test]
async fn kyverno_policy_ready_and_denial() {
    let Some(path) = kubeconfig() else { return };
    if std::env::var("KCA_TEST_KYVERNO").as_deref() != Ok("1") {
        skip("Kyverno", "KCA_TEST_KYVERNO=1 not set");
        return;
    }
    let live = connect(&path).await;
    assert!(
        live.serves("kyverno.io/v1", "ClusterPolicy").await.unwrap(),
        "KCA_TEST_KYVERNO=1 but the cluster does not serve kyverno.io/v1 ClusterPolicy"
    );
    let mut guard = Cleanup::new(&path);
    let ns = test_namespace(&live, &mut guard, "kca-kyv").await;
    let policy = unique("kca-test-require-team");
    guard.delete_later(ObjRef::new(
        "kyverno.io/v1",
        "ClusterPolicy",
        None,
        policy.clone(),
    ));
    live.apply(&json!({
        "apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
        "metadata": {"name": policy, "labels": owned_labels()},
        "spec": {
            "background": false,
            "rules": [{
                "name": "check-team",
                "match": {"any": [{"resources": {"kinds": ["ConfigMap"], "namespaces": [ns]}}]},
                "validate": {
                    "failureAction": "Enforce",
                    "message": "label team is required",
                    "pattern": {"metadata": {"labels": {"team": "?*"}}}
                }
            }]
        }
    }))
    .await
    .unwrap();
    let r = ObjRef::new("kyverno.io/v1", "ClusterPolicy", None, policy.clone());
    assert!(
        live.wait_ready(&r, Duration::from_secs(60)).await.unwrap(),
        "policy never became Ready"
    );
    // Kyverno 1.19 deprecates kyverno.io/v1 and says so in Warning headers: tolerated.
    for w in live.take_warnings() {
        eprintln!("warning from the server: {w}");
    }

    let bad = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "no-team", "namespace": ns}});
    let out = eventually(
        Duration::from_secs(30),
        || live.admit(&bad, Operation::Create, None),
        |r| matches!(r, Ok(Admission::Denied(_))),
    )
    .await
    .unwrap();
    match out {
        Admission::Denied(d) => {
            assert!(d.denied_by_kyverno(&policy, Some("check-team")), "{d:?}");
        }
        other => panic!("expected a Kyverno denial, got {other:?}"),
    }
    let good = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "with-team", "namespace": ns, "labels": {"team": "a"}}});
    assert!(matches!(
        live.admit(&good, Operation::Create, None).await.unwrap(),
        Admission::Allowed { .. }
    ));
}

/// The CLI, hermetic: temp HOME and state, no KUBECONFIG, the test kubeconfig by flag.
fn kca(home: &Path) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("kca").unwrap();
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_STATE_HOME", home.join("state"))
        .env("NO_COLOR", "1")
        .timeout(Duration::from_secs(120));
    cmd
}

#[tokio::test]
async fn lab_cluster_marker_and_adopt() {
    let Some(path) = kubeconfig() else { return };
    let live = connect(&path).await;
    let marker = ObjRef::new(
        "v1",
        "ConfigMap",
        Some(kca::cluster::MARKER_NAMESPACE),
        kca::cluster::MARKER_NAME,
    );
    // Put the marker back as found: re-apply a prior one, else delete ours.
    let mut guard = Cleanup::new(&path);
    match live.get(&marker).await.unwrap() {
        Some(mut prior) => {
            let meta = prior["metadata"].as_object_mut().unwrap();
            for k in [
                "resourceVersion",
                "uid",
                "creationTimestamp",
                "managedFields",
                "generation",
            ] {
                meta.remove(k);
            }
            guard.restore.push(prior);
        }
        None => guard.delete_later(marker.clone()),
    }

    kca::cluster::unmark_lab_cluster(&live).await.unwrap();
    assert!(!kca::cluster::is_lab_cluster(&live).await.unwrap());

    let home = tempfile::tempdir().unwrap();
    let cli = kca::cli::Cli::try_parse_from(["kca", "validate"]).unwrap();
    let settings = kca::app::settings_from(&cli, &kca::settings::Env::default());
    let ctx = kca::ctx::Ctx::new(settings);
    let sel = kca::cluster::Selection {
        kubeconfig: Some(path.clone()),
        context: None,
    };
    match kca::cluster::ensure_cluster(&ctx, &sel, true).await {
        Err(e) => {
            assert_eq!(e.exit(), kca::exit::Exit::Environment);
            assert!(e.hint().unwrap().contains("kca cluster adopt"), "{e}");
        }
        Ok(_) => panic!("an unmarked cluster must be refused"),
    }
    assert!(
        kca::cluster::ensure_cluster(&ctx, &sel, false)
            .await
            .is_ok()
    );

    kca(home.path())
        .args(["cluster", "adopt", "--kubeconfig"])
        .arg(&path)
        .assert()
        .success()
        .stdout(predicates::str::contains("as a kca lab cluster"));
    assert!(kca::cluster::is_lab_cluster(&live).await.unwrap());
    assert!(kca::cluster::ensure_cluster(&ctx, &sel, true).await.is_ok());

    let out = kca(home.path())
        .args(["--output", "json", "cluster", "status", "--kubeconfig"])
        .arg(&path)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).expect("status prints JSON");
    assert_eq!(report["lab_cluster"], true);
    let ready = report["ready"].as_bool().unwrap();
    assert_eq!(
        out.status.code(),
        Some(if ready { 0 } else { 1 }),
        "{report}"
    );
    assert_eq!(
        report["kyverno"]["deployments"].as_array().unwrap().len(),
        4
    );
}

/// Needs no cluster, so it always runs: a kubeconfig pointing at a closed local port.
#[tokio::test]
async fn unreachable_server_is_an_environment_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Config\ncurrent-context: closed\nclusters:\n- name: closed\n  cluster:\n    server: https://127.0.0.1:9\ncontexts:\n- name: closed\n  context: {cluster: closed, user: u}\nusers:\n- name: u\n  user: {token: x}\n",
    )
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    kca(home.path())
        .args(["--lang", "en", "cluster", "status", "--kubeconfig"])
        .arg(&path)
        .assert()
        .code(3)
        .stderr(predicates::str::contains("does not answer"));
    // The learner's language: one language on the line, the kubeconfig named plainly.
    kca(home.path())
        .args(["--lang", "ja", "cluster", "status", "--kubeconfig"])
        .arg(&path)
        .assert()
        .code(3)
        .stderr(predicates::str::contains(format!(
            "{} のコンテキスト `closed` のクラスターが答えません",
            path.display()
        )));
}

/// `kca lab verify --live` on the test lab: the same proof as offline, on the cluster.
/// Needs a lab cluster (marked by `kca cluster adopt`/`up`) with Kyverno.
#[tokio::test]
async fn lab_verify_live_proves_the_test_lab() {
    let Some(path) = kubeconfig() else { return };
    let live = connect(&path).await;
    if !kca::cluster::is_lab_cluster(&live).await.unwrap_or(false) {
        skip(
            "lab verify --live",
            "the cluster is not marked as a lab cluster (`kca cluster adopt`)",
        );
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let content = home.path().join("content");
    std::fs::create_dir_all(content.join("labs")).unwrap();
    std::fs::create_dir_all(content.join("quizzes")).unwrap();
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/testlab"))
        .arg(content.join("labs/testlab"))
        .status()
        .unwrap();
    assert!(status.success());
    let out = kca(home.path())
        .timeout(Duration::from_secs(900))
        .args(["--output", "json", "lab", "verify", "--live", "testlab"])
        .arg("--content-dir")
        .arg(&content)
        .arg("--kubeconfig")
        .arg(&path)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("no JSON report: {}", String::from_utf8_lossy(&out.stderr)));
    let lab = &report["labs"][0];
    assert_eq!(lab["lab"], "testlab");
    assert_eq!(lab["ok"], true, "{lab:#}");
}

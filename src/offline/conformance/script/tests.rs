use super::*;
use crate::offline::conformance::chainsaw::{Script, ScriptBody};
use serde_json::json;

fn script(content: &str, check: Option<Value>) -> Script {
    Script {
        op: "script",
        body: ScriptBody::Shell(content.into()),
        env: Vec::new(),
        check,
        unmodelled: None,
    }
}

/// A folder holding `files`, and a cluster whose policy requires a `team` label.
fn setup(files: &[(&str, &str)]) -> (tempfile::TempDir, Cluster) {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in files {
        std::fs::write(dir.path().join(name), body).unwrap();
    }
    let mut c = Cluster::new("chainsaw-kca");
    let policy = json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
        "metadata": {"name": "require-team"},
        "spec": {"rules": [{"name": "team", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
            "validate": {"failureAction": "Enforce", "message": "label team is required",
                "pattern": {"metadata": {"labels": {"team": "?*"}}}}}]}});
    assert!(matches!(
        c.apply(&policy, false),
        super::super::cluster::Answer::Ok
    ));
    (dir, c)
}

const BAD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\nspec:\n  containers:\n  - name: c\n    image: nginx\n";
const GOOD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: good\n  labels:\n    team: a\nspec:\n  containers:\n  - name: c\n    image: nginx\n";

fn ran(s: &Script, c: &mut Cluster, dir: &Path) -> Ran {
    run(s, c, dir, &Bindings::new())
}

#[test]
fn a_refusal_reads_as_kubectls_and_the_check_sees_it() {
    let (dir, mut c) = setup(&[("bad.yaml", BAD)]);
    let check = json!({"($error != null)": true,
        "(contains($stderr, 'Error from server: error when creating \"bad.yaml\": admission webhook'))": true,
        "(contains($stderr, 'rule team failed at path /metadata/labels/'))": true});
    let s = script("kubectl apply -f bad.yaml", Some(check));
    assert!(matches!(ran(&s, &mut c, dir.path()), Ran::Agree(_)));
    // The opposite expectation disagrees: the check is judged, not assumed.
    let s = script(
        "kubectl apply -f bad.yaml",
        Some(json!({"($error != null)": false})),
    );
    assert!(matches!(ran(&s, &mut c, dir.path()), Ran::Disagree(_)));
}

#[test]
fn exit_codes_decide_without_a_check() {
    let (dir, mut c) = setup(&[("bad.yaml", BAD), ("good.yaml", GOOD)]);
    let s = script(
        "if kubectl apply -f bad.yaml\nthen\n  exit 1\nelse\n  exit 0\nfi",
        None,
    );
    assert!(matches!(ran(&s, &mut c, dir.path()), Ran::Agree(_)));
    let s = script(
        "kubectl apply -f good.yaml && kubectl get pod good -o jsonpath='{.metadata.labels.team}' | grep -q a",
        None,
    );
    let Ran::Agree(written) = ran(&s, &mut c, dir.path()) else {
        panic!("expected agreement")
    };
    assert_eq!(written.len(), 1);
    assert_eq!(written[0].namespace, "default");
    let s = script("kubectl apply -f bad.yaml", None);
    assert!(matches!(ran(&s, &mut c, dir.path()), Ran::Disagree(_)));
}

#[test]
fn kyvernos_resource_filters_are_its_config_maps_and_a_script_may_edit_them() {
    let (dir, mut c) = setup(&[]);
    let node = c
        .objects
        .iter()
        .find(|o| o["kind"] == "Node")
        .cloned()
        .unwrap_or_default();
    assert!(c.filtered(&node));
    let src = r#"f=$(kubectl get ConfigMap kyverno -n kyverno -o json | jq .data.resourceFilters)
f="${f//\[Node,\*,\*\]/}"
kubectl patch ConfigMap kyverno -n kyverno --type='json' -p="[{\"op\": \"replace\", \"path\": \"/data/resourceFilters\", \"value\":""$f""}]""#;
    assert!(matches!(
        ran(&script(src, None), &mut c, dir.path()),
        Ran::Agree(_)
    ));
    assert!(!c.filtered(&node));
    assert!(c.filtered_sub(&node, "status"));
}

#[test]
fn what_is_not_modelled_is_a_skip() {
    let (dir, mut c) = setup(&[("good.yaml", GOOD)]);
    for src in [
        "kubectl get pods -n kube-system | grep -q good",
        "kubectl attach p",
        "kyverno apply policy.yaml --cluster",
        "kubectl get deployment kyverno-admission-controller -n kyverno",
        "kubectl get secrets -n kyverno",
        "kubectl get configmap kyverno -n kyverno -o json | jq .metadata.uid",
        "kubectl get configmap kyverno -n kyverno -o json | jq .data",
        "kubectl get nodes kind-control-plane -o yaml",
        "kubectl patch configmap kyverno -n kyverno -p '{\"data\":{\"webhooks\":\"{}\"}}'",
        "kubectl patch configmap kyverno -n kyverno --type=json \
         -p '[{\"op\": \"remove\", \"path\": \"/data/nothing\"}]'",
    ] {
        assert!(
            matches!(
                ran(&script(src, None), &mut c, dir.path()),
                Ran::Skip(_) | Ran::Controller(_)
            ),
            "{src}"
        );
    }
}

#[test]
fn an_impersonated_write_is_authorized_by_rbac() {
    let (dir, mut c) = setup(&[("good.yaml", GOOD)]);
    // nancy may do nothing: the API server refuses before admission.
    let s = script(
        "if kubectl apply -f good.yaml --as nancy; then exit 1; fi",
        None,
    );
    assert!(matches!(ran(&s, &mut c, dir.path()), Ran::Agree(_)));
    assert!(
        c.find(&Key::of(
            &serde_json::json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "good", "namespace": "default"}})
        ))
        .is_none()
    );
    // Bound to a role that may create and read pods, she may.
    let rbac = r#"{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "nancy"}, "subjects": [{"kind": "User", "name": "nancy"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}}"#;
    c.store(serde_json::from_str(rbac).expect("valid JSON"));
    let s = script(
        "kubectl apply -f good.yaml --as nancy --as-group team",
        None,
    );
    assert!(matches!(ran(&s, &mut c, dir.path()), Ran::Agree(_)));
    // The API server defaulted the subject's API group.
    let stored = c
        .objects
        .iter()
        .find(|o| o["kind"] == "ClusterRoleBinding" && o["metadata"]["name"] == "nancy");
    assert_eq!(
        stored.map(|b| b["subjects"][0]["apiGroup"].clone()),
        Some(serde_json::json!("rbac.authorization.k8s.io"))
    );
}

#[test]
fn delete_all_removes_what_the_cluster_holds_and_update_requests_exit_zero() {
    let (dir, mut c) = setup(&[]);
    let s = script("kubectl delete ur -A --all", None);
    assert!(matches!(ran(&s, &mut c, dir.path()), Ran::Agree(_)));
    // Its output is not known: a reader of it is a skip.
    let s = script("kubectl delete ur -A --all | grep -q deleted", None);
    assert!(matches!(ran(&s, &mut c, dir.path()), Ran::Skip(_)));
    // A kind a controller may make is a skip.
    let s = script("kubectl delete pods --all -n default", None);
    assert!(matches!(ran(&s, &mut c, dir.path()), Ran::Skip(_)));
    let s = script("kubectl delete clusterpolicies --all", None);
    assert!(matches!(ran(&s, &mut c, dir.path()), Ran::Agree(_)));
    assert!(
        c.objects
            .iter()
            .all(|o| super::super::cluster::text(o, "/kind") != "ClusterPolicy")
    );
}

#[test]
fn pods_of_a_namespace_without_workloads_are_the_replays() {
    let (dir, mut c) = setup(&[("good.yaml", GOOD)]);
    // The pod was never created: the list is the replay's, and says so.
    let listed = script("kubectl get pods --no-headers | grep -q good", None);
    assert!(matches!(ran(&listed, &mut c, dir.path()), Ran::Disagree(_)));
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b", "team": "x"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    assert!(matches!(
        c.apply(&deployment, false),
        super::super::cluster::Answer::Ok
    ));
    assert!(matches!(
        ran(&listed, &mut c, dir.path()),
        Ran::Controller(_)
    ));
}

#[test]
fn a_namespaces_configmaps_hold_its_published_root_ca() {
    let (dir, mut c) = setup(&[]);
    let names = script(
        "kubectl get configmaps -n default -o jsonpath='{.items[*].metadata.name}'",
        Some(json!({"($stdout)": "kube-root-ca.crt"})),
    );
    assert!(matches!(ran(&names, &mut c, dir.path()), Ran::Agree(_)));
    // Its CA bundle is not the replay's to know.
    let data = script(
        "kubectl get configmaps -n default -o jsonpath='{.items[*].data}'",
        Some(json!({"($stdout)": "x"})),
    );
    assert!(matches!(ran(&data, &mut c, dir.path()), Ran::Skip(_)));
    // A MutatingPolicy that mutates existing ConfigMaps may have changed it.
    let mpol = json!({"apiVersion": "policies.kyverno.io/v1beta1", "kind": "MutatingPolicy",
        "metadata": {"name": "m"},
        "spec": {"evaluation": {"mutateExisting": {"enabled": true}},
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["namespaces"]}]},
            "targetMatchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]},
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
                "Object{metadata: Object.metadata{labels: Object.metadata.labels{foo: \"bar\"}}}"}}]}});
    assert!(matches!(
        c.apply(&mpol, false),
        super::super::cluster::Answer::Ok
    ));
    assert!(matches!(
        ran(&names, &mut c, dir.path()),
        Ran::Controller(_)
    ));
}

#[test]
fn kyvernos_config_map_takes_the_honoured_keys_and_no_update_request_is_left() {
    let (dir, mut c) = setup(&[]);
    let patch = script(
        "kubectl patch configmap kyverno -p '{\"data\":{\"generateSuccessEvents\":\"true\"}}' -n kyverno",
        None,
    );
    let Ran::Agree(written) = ran(&patch, &mut c, dir.path()) else {
        panic!("expected agreement")
    };
    assert_eq!(written.len(), 1);
    assert!(crate::offline::conformance::controllers::install::settings(&c.objects).success_events);
    let check: Value = serde_json::from_str(
        r#"{"(trim_space($stderr))": "No resources found in kyverno namespace."}"#,
    )
    .unwrap();
    let get = script("kubectl get updaterequests -n kyverno", Some(check));
    assert!(matches!(ran(&get, &mut c, dir.path()), Ran::Agree(_)));
}

#[test]
fn a_helper_script_of_the_folder_runs_as_a_child_shell() {
    let helper = "#!/usr/bin/env bash\nset -e\nif [ $# -ne 1 ]; then\n  echo \"usage: $0 NAME\"\n  exit 3\nfi\nX=changed\nkubectl get pod \"$1\" -o jsonpath='{.metadata.name}'\n";
    let (dir, mut c) = setup(&[("good.yaml", GOOD), ("check.sh", helper)]);
    let s = script(
        "kubectl apply -f good.yaml\nX=kept\n./check.sh good\necho \" $X\"",
        None,
    );
    assert!(matches!(ran(&s, &mut c, dir.path()), Ran::Agree(_)));
    let check: Value = serde_json::from_str(
        r#"{"($stdout)": "usage: ./check.sh NAME\n", "($error)": "exit status 3"}"#,
    )
    .unwrap();
    let s = script("./check.sh", Some(check));
    assert!(matches!(ran(&s, &mut c, dir.path()), Ran::Agree(_)));
    for src in ["../x.sh", "/bin/x.sh"] {
        assert!(
            matches!(ran(&script(src, None), &mut c, dir.path()), Ran::Skip(_)),
            "{src}"
        );
    }
}

#[test]
fn an_event_listing_tells_whether_it_holds_kyvernos_reasons() {
    let (dir, mut c) = setup(&[("good.yaml", GOOD)]);
    let check = |word: &str, expected: bool| -> Value {
        serde_json::from_str(&format!(
            r#"{{"(contains($stdout, '{word}'))": {expected}}}"#
        ))
        .unwrap()
    };
    let get = |chk: Value| script("kubectl get event -n default", Some(chk));
    // Nothing admitted or scanned yet: no event of Kyverno's.
    assert!(matches!(
        ran(&get(check("PolicyApplied", false)), &mut c, dir.path()),
        Ran::Agree(_)
    ));
    // A word Kubernetes' own events may hold is not told.
    assert!(matches!(
        ran(&get(check("Scheduled", false)), &mut c, dir.path()),
        Ran::Skip(_)
    ));
}

#[test]
fn a_here_document_is_the_commands_stdin() {
    let (dir, mut c) = setup(&[]);
    let check: Value =
        serde_json::from_str(r#"{"($stdout)": "name: a \"b\" $X\nname: x\n"}"#).unwrap();
    let s = script(
        "X=x\ncat <<'EOF'\nname: a \"b\" $X\nEOF\ncat <<-EOF | cat\n\tname: $X\n\tEOF\n",
        Some(check),
    );
    let r = ran(&s, &mut c, dir.path());
    assert!(
        matches!(r, Ran::Agree(_)),
        "{:?}",
        matches!(r, Ran::Skip(_))
    );
    let s = script("cat <<EOF\nno end\n", None);
    assert!(matches!(ran(&s, &mut c, dir.path()), Ran::Skip(_)));
}

#[test]
fn an_impersonated_read_is_authorized_before_the_object_is_looked_for() {
    let (dir, mut c) = setup(&[]);
    let forbidden = |verb: &str, what: &str| {
        format!(
            "Error from server (Forbidden): {what} is forbidden: User \"nancy\" cannot {verb} \
             resource \"pods\" in API group \"\" in the namespace \"default\""
        )
    };
    for (src, want) in [
        (
            "kubectl get pods missing --as nancy",
            forbidden("get", "pods \"missing\""),
        ),
        ("kubectl get pods --as nancy", forbidden("list", "pods")),
        (
            "kubectl label pod missing a=b --as nancy",
            forbidden("get", "pods \"missing\""),
        ),
    ] {
        let check = json!({"($error != null)": true, "(trim_space($stderr))": want});
        let s = script(src, Some(check));
        assert!(
            matches!(ran(&s, &mut c, dir.path()), Ran::Agree(_)),
            "{src}"
        );
    }
    // Bound to `view`, she reads: a missing object is NotFound.
    let rbac = r#"{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "nancy", "namespace": "default"},
        "subjects": [{"kind": "User", "name": "nancy"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}}"#;
    c.store(serde_json::from_str(rbac).expect("valid JSON"));
    let check = json!({"($error != null)": true,
        "(trim_space($stderr))": "Error from server (NotFound): pods \"missing\" not found"});
    let s = script("kubectl get pods missing --as nancy", Some(check));
    assert!(matches!(ran(&s, &mut c, dir.path()), Ran::Agree(_)));
}

#[test]
fn kubeconfig_is_set_and_kubectl_on_another_one_is_a_skip() {
    let (dir, mut c) = setup(&[]);
    // `set -u` does not stop on it: chainsaw always sets it.
    let s = script("set -eu\ntest -n \"$KUBECONFIG\"", None);
    assert!(matches!(ran(&s, &mut c, dir.path()), Ran::Agree(_)));
    let s = script("export KUBECONFIG=./mine\nkubectl get pods", None);
    match ran(&s, &mut c, dir.path()) {
        Ran::Skip(why) => assert!(why.contains("KUBECONFIG=./mine"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_patch_written_in_yaml_flow_style_is_read_as_kubectl_reads_it() {
    let (dir, mut c) = setup(&[]);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "default"}, "data": {"a": "1"}});
    assert!(matches!(
        c.apply(&cm, false),
        super::super::cluster::Answer::Ok
    ));
    // An unquoted value after a quoted key: YAML, not JSON.
    let s = script(
        "kubectl patch configmap cm --type=json -p='[{\"op\": \"add\", \"path\": \"/data/b\", \"value\":two}]' \
         && kubectl get configmap cm -o jsonpath='{.data.b}' | grep -q two",
        None,
    );
    assert!(matches!(ran(&s, &mut c, dir.path()), Ran::Agree(_)));
    // A patch file on stdin, built by jq from the object itself.
    let s = script(
        "kubectl get configmap cm -o json | jq '{data: {\"n\": .metadata.name}}' \
         | kubectl patch configmap cm --patch-file=/dev/stdin \
         && kubectl get configmap cm -o json | jq -e '.data.n == .metadata.name'",
        None,
    );
    let r = ran(&s, &mut c, dir.path());
    assert!(matches!(r, Ran::Agree(_)), "{r:?}");
    // `on` is a boolean to kubectl's YAML 1.1 reader: not guessed.
    let s = script("kubectl patch configmap cm -p='{data: {c: on}}'", None);
    assert!(matches!(ran(&s, &mut c, dir.path()), Ran::Skip(_)));
}

#[test]
fn kubectl_f_takes_a_comma_separated_list_of_files() {
    let (dir, mut c) = setup(&[("good.yaml", GOOD), ("bad.yaml", BAD)]);
    let s = script("kubectl apply -f good.yaml,bad.yaml", None);
    // The second file's Pod is refused: the whole command fails, the first is stored.
    assert!(matches!(ran(&s, &mut c, dir.path()), Ran::Disagree(_)));
    let s = script(
        "kubectl delete -f good.yaml,bad.yaml --ignore-not-found=true",
        None,
    );
    assert!(matches!(ran(&s, &mut c, dir.path()), Ran::Agree(_)));
}

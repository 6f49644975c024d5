//! `kca auth can-i` end to end: manifests in a temp folder, a hermetic environment (temp
//! HOME and state dir, no kubeconfig, no colour), exit codes, stdout and stderr.

use std::path::{Path, PathBuf};

use assert_cmd::cargo::cargo_bin_cmd;
use predicates::prelude::*;
use predicates::str::contains;
use tempfile::TempDir;

struct Sandbox {
    home: TempDir,
    state: TempDir,
    work: TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        Sandbox {
            home: TempDir::new().unwrap(),
            state: TempDir::new().unwrap(),
            work: TempDir::new().unwrap(),
        }
    }

    /// Writes `text` at `rel` under the work folder, creating folders.
    fn file(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.work.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn can_i(&self, args: &[&str]) -> assert_cmd::Command {
        let mut cmd = cargo_bin_cmd!("kca");
        cmd.current_dir(self.work.path())
            .env("HOME", self.home.path())
            .env("XDG_STATE_HOME", self.state.path())
            .env("KUBECONFIG", self.home.path().join("no-such-kubeconfig"))
            // The messages asserted here are the English ones.
            .env("LANG", "en_US.UTF-8")
            .env_remove("NO_COLOR")
            .env_remove("FORCE_COLOR")
            .env_remove("KCA_CONTENT_DIR")
            .args(["--color", "never", "auth", "can-i"])
            .args(args);
        cmd
    }

    fn path(&self) -> &Path {
        self.work.path()
    }
}

const HEADER: &str = "apiVersion: rbac.authorization.k8s.io/v1\n";

/// A Role/ClusterRole/binding document; `body` follows apiVersion.
fn doc(body: &str) -> String {
    format!("---\n{HEADER}{body}")
}

const SA_DEV_APP: &str = "system:serviceaccount:dev:app";

fn pod_reader_in_dev(s: &Sandbox) {
    s.file(
        "rbac/reader.yaml",
        &[
            doc("kind: ClusterRole\nmetadata: {name: pod-reader}\nrules:\n- {verbs: [get, list, watch], apiGroups: [\"\"], resources: [pods, pods/log]}\n"),
            doc("kind: RoleBinding\nmetadata: {name: read-pods, namespace: dev}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pod-reader}\nsubjects:\n- {kind: ServiceAccount, name: app}\n"),
        ]
        .concat(),
    );
}

#[test]
fn yes_exits_zero_and_names_the_binding() {
    let s = Sandbox::new();
    pod_reader_in_dev(&s);
    s.can_i(&["list", "pods", "--as", SA_DEV_APP, "-n", "dev", "-f", "rbac"])
        .assert()
        .code(0)
        .stdout("yes\n")
        .stderr(contains(
            r#"RBAC: allowed by RoleBinding "read-pods/dev" of ClusterRole "pod-reader" to ServiceAccount "app/dev""#,
        ));
}

#[test]
fn rolebinding_to_clusterrole_grants_only_in_its_namespace() {
    let s = Sandbox::new();
    pod_reader_in_dev(&s);
    for (ns_args, code, out) in [
        (vec!["-n", "dev"], 0, "yes\n"),
        (vec!["-n", "prod"], 1, "no\n"),
        (vec![], 1, "no\n"),
        (vec!["-A"], 1, "no\n"),
        (vec!["-n", "dev", "--all-namespaces"], 1, "no\n"),
    ] {
        let mut args = vec!["get", "po", "--as", SA_DEV_APP, "-f", "rbac"];
        args.extend(ns_args.iter());
        s.can_i(&args).assert().code(code).stdout(out);
    }
}

#[test]
fn no_exits_one_and_says_no_rule_allowed_it() {
    let s = Sandbox::new();
    pod_reader_in_dev(&s);
    s.can_i(&[
        "delete", "pods", "--as", SA_DEV_APP, "-n", "dev", "-f", "rbac",
    ])
    .assert()
    .code(1)
    .stdout("no\n")
    .stderr(contains("RBAC: no rule allowed"));
}

#[test]
fn subresources_by_flag_and_star_slash_rules() {
    let s = Sandbox::new();
    pod_reader_in_dev(&s);
    s.file(
        "rbac/scale.yaml",
        &[
            doc("kind: Role\nmetadata: {name: scaler, namespace: dev}\nrules:\n- {verbs: [get, update, patch], apiGroups: [\"*\"], resources: [\"*/scale\"]}\n"),
            doc("kind: RoleBinding\nmetadata: {name: scaler, namespace: dev}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: scaler}\nsubjects:\n- {kind: User, name: ops, apiGroup: rbac.authorization.k8s.io}\n"),
        ]
        .concat(),
    );
    let cases: &[(&[&str], i32)] = &[
        (
            &["get", "pods", "--subresource", "log", "--as", SA_DEV_APP],
            0,
        ),
        (
            &["get", "pods", "--subresource", "exec", "--as", SA_DEV_APP],
            1,
        ),
        (
            &[
                "update",
                "deployments.apps/web",
                "--subresource",
                "scale",
                "--as",
                "ops",
            ],
            0,
        ),
        (
            &["patch", "sts", "--subresource", "scale", "--as", "ops"],
            0,
        ),
        (&["update", "deploy/web", "--as", "ops"], 1),
        (
            &[
                "update",
                "deploy/web",
                "--subresource",
                "status",
                "--as",
                "ops",
            ],
            1,
        ),
    ];
    for (args, code) in cases {
        let mut all = args.to_vec();
        all.extend(["-n", "dev", "-f", "rbac"]);
        s.can_i(&all).assert().code(*code);
    }
    s.can_i(&[
        "get", "pods/log", "--as", SA_DEV_APP, "-n", "dev", "-f", "rbac",
    ])
    .assert()
    .stderr(contains(
        "for the subresource write `pods --subresource log`",
    ));
}

#[test]
fn resource_names_do_not_grant_create_or_list() {
    let s = Sandbox::new();
    s.file(
        "rbac.yaml",
        &[
            doc("kind: Role\nmetadata: {name: one-cm, namespace: default}\nrules:\n- {verbs: [get, create, update, list], apiGroups: [\"\"], resources: [configmaps], resourceNames: [app-config]}\n"),
            doc("kind: RoleBinding\nmetadata: {name: one-cm}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: one-cm}\nsubjects:\n- {kind: User, name: alice, apiGroup: rbac.authorization.k8s.io}\n"),
        ]
        .concat(),
    );
    for (verb, target, code) in [
        ("get", "cm/app-config", 0),
        ("update", "configmaps/app-config", 0),
        ("get", "configmap/other", 1),
        ("create", "configmaps", 1),
        ("list", "configmaps", 1),
        ("get", "ConfigMap", 1),
    ] {
        s.can_i(&[verb, target, "--as", "alice", "-f", "rbac.yaml"])
            .assert()
            .code(code);
    }
}

#[test]
fn non_resource_urls_with_prefix_match() {
    let s = Sandbox::new();
    s.file(
        "urls.yaml",
        &[
            doc("kind: ClusterRole\nmetadata: {name: urls}\nrules:\n- {verbs: [get], nonResourceURLs: [/healthz, \"/logs/*\"]}\n"),
            doc("kind: ClusterRoleBinding\nmetadata: {name: urls}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: urls}\nsubjects:\n- {kind: Group, name: \"system:authenticated\", apiGroup: rbac.authorization.k8s.io}\n"),
        ]
        .concat(),
    );
    for (verb, url, code) in [
        ("get", "/healthz", 0),
        ("get", "/healthz/ready", 1),
        ("get", "/logs/kube.log", 0),
        ("get", "/logs", 1),
        ("post", "/healthz", 1),
    ] {
        s.can_i(&[verb, url, "--as", "anyone", "-f", "urls.yaml"])
            .assert()
            .code(code);
    }
    s.can_i(&[
        "get",
        "/healthz",
        "--as",
        "system:anonymous",
        "-f",
        "urls.yaml",
    ])
    .assert()
    .code(1);
    s.can_i(&[
        "get",
        "/healthz",
        "--subresource",
        "x",
        "--as",
        "a",
        "-f",
        "urls.yaml",
    ])
    .assert()
    .code(2)
    .stderr(contains(
        "--subresource can not be used with a non-resource URL",
    ));
}

#[test]
fn service_account_groups_come_with_the_user_unless_groups_are_given() {
    let s = Sandbox::new();
    s.file(
        "rbac.yaml",
        &[
            doc("kind: ClusterRole\nmetadata: {name: cm-reader}\nrules:\n- {verbs: [get], apiGroups: [\"\"], resources: [configmaps]}\n"),
            doc("kind: RoleBinding\nmetadata: {name: team-sas, namespace: dev}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cm-reader}\nsubjects:\n- {kind: Group, name: \"system:serviceaccounts:dev\", apiGroup: rbac.authorization.k8s.io}\n"),
        ]
        .concat(),
    );
    let base = ["get", "configmaps", "-n", "dev", "-f", "rbac.yaml", "--as"];
    fn with<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
        let mut v = base.to_vec();
        v.extend(extra);
        v
    }
    s.can_i(&with(&base, &["system:serviceaccount:dev:anything"]))
        .assert()
        .code(0);
    s.can_i(&with(&base, &["system:serviceaccount:prod:anything"]))
        .assert()
        .code(1);
    // --as-group replaces the service account's own groups, as the API server does.
    s.can_i(&with(
        &base,
        &["system:serviceaccount:dev:anything", "--as-group", "devs"],
    ))
    .assert()
    .code(1);
    s.can_i(&with(
        &base,
        &["bob", "--as-group", "system:serviceaccounts:dev"],
    ))
    .assert()
    .code(0);
}

#[test]
fn system_masters_may_do_anything() {
    let s = Sandbox::new();
    s.file("empty.yaml", "# nothing\n");
    s.can_i(&[
        "delete",
        "nodes",
        "--as",
        "root",
        "--as-group",
        "system:masters",
        "-f",
        "empty.yaml",
    ])
    .assert()
    .code(0)
    .stdout("yes\n");
}

#[test]
fn aggregation_over_loaded_cluster_roles() {
    let s = Sandbox::new();
    s.file(
        "agg/monitoring.yaml",
        &[
            doc("kind: ClusterRole\nmetadata: {name: monitoring}\naggregationRule:\n  clusterRoleSelectors:\n  - matchLabels: {example.com/aggregate-to-monitoring: \"true\"}\nrules: []\n"),
            doc("kind: ClusterRoleBinding\nmetadata: {name: monitoring}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: monitoring}\nsubjects:\n- {kind: ServiceAccount, name: prometheus, namespace: mon}\n"),
        ]
        .concat(),
    );
    s.file(
        "agg/parts/services.yaml",
        &doc("kind: ClusterRole\nmetadata:\n  name: monitoring-services\n  labels: {example.com/aggregate-to-monitoring: \"true\"}\nrules:\n- {verbs: [list], apiGroups: [\"\"], resources: [services]}\n"),
    );
    let sa = "system:serviceaccount:mon:prometheus";
    s.can_i(&["list", "services", "-A", "--as", sa, "-f", "agg"])
        .assert()
        .code(0)
        .stderr(contains(
            r#"ClusterRoleBinding "monitoring" of ClusterRole "monitoring""#,
        ));
    s.can_i(&["list", "pods", "-A", "--as", sa, "-f", "agg"])
        .assert()
        .code(1);
}

#[test]
fn folders_are_searched_recursively_for_lists_and_json() {
    let s = Sandbox::new();
    let list = format!(
        "apiVersion: v1\nkind: List\nitems:\n- {}  kind: ClusterRole\n  metadata: {{name: ns-reader}}\n  rules:\n  - {{verbs: [list], apiGroups: [\"\"], resources: [namespaces]}}\n",
        HEADER
    );
    s.file("m/deep/er/list.yml", &list);
    s.file(
        "m/binding.json",
        r#"{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "ns-reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "ns-reader"},
            "subjects": [{"kind": "User", "name": "carol", "apiGroup": "rbac.authorization.k8s.io"}]}"#,
    );
    // Not a manifest extension: ignored inside a folder.
    s.file("m/notes.txt", "this: [is not: yaml");
    s.can_i(&["list", "ns", "--as", "carol", "-A", "-f", "m"])
        .assert()
        .code(0)
        .stdout("yes\n");
    // Several -f and comma-separated paths.
    let list_path = s.path().join("m/deep/er/list.yml");
    let json_path = s.path().join("m/binding.json");
    let both = format!("{},{}", list_path.display(), json_path.display());
    s.can_i(&["list", "namespaces", "--as", "carol", "-A", "-f", &both])
        .assert()
        .code(0);
    s.can_i(&[
        "list",
        "namespaces",
        "--as",
        "carol",
        "-A",
        "-f",
        "m/deep",
        "-f",
        "m/binding.json",
    ])
    .assert()
    .code(0);
}

#[test]
fn json_output_carries_the_whole_request() {
    let s = Sandbox::new();
    pod_reader_in_dev(&s);
    let out = s
        .can_i(&[
            "get",
            "pods/web-0",
            "--subresource",
            "log",
            "--as",
            SA_DEV_APP,
            "-n",
            "dev",
            "-f",
            "rbac",
            "--output",
            "json",
        ])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).expect("stdout is JSON");
    assert_eq!(v["allowed"], true);
    assert_eq!(v["user"], SA_DEV_APP);
    assert_eq!(
        v["groups"],
        serde_json::json!([
            "system:serviceaccounts",
            "system:serviceaccounts:dev",
            "system:authenticated"
        ])
    );
    assert_eq!(v["verb"], "get");
    assert_eq!(v["apiGroup"], "");
    assert_eq!(v["resource"], "pods");
    assert_eq!(v["subresource"], "log");
    assert_eq!(v["name"], "web-0");
    assert_eq!(v["namespace"], "dev");
    assert_eq!(v["nonResourceURL"], serde_json::Value::Null);
    assert!(
        v["reason"]
            .as_str()
            .unwrap()
            .starts_with("RBAC: allowed by RoleBinding")
    );

    let out = s
        .can_i(&["get", "widgets", "--as", "x", "-f", "rbac", "-o", "json"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["allowed"], false);
    assert_eq!(v["groups"], serde_json::json!(["system:authenticated"]));
    assert!(v["warnings"][0].as_str().unwrap().contains("'widgets'"));
}

#[test]
fn unknown_types_are_used_as_given_with_kubectl_s_warning() {
    let s = Sandbox::new();
    s.file(
        "rbac.yaml",
        &[
            doc("kind: ClusterRole\nmetadata: {name: odd}\nrules:\n- {verbs: [get], apiGroups: [\"\"], resources: [Widgets.Example.com]}\n"),
            doc("kind: ClusterRoleBinding\nmetadata: {name: odd}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: odd}\nsubjects:\n- {kind: User, name: u, apiGroup: rbac.authorization.k8s.io}\n"),
        ]
        .concat(),
    );
    s.can_i(&["get", "Widgets.Example.com", "--as", "u", "-f", "rbac.yaml"])
        .assert()
        .code(0)
        .stderr(contains(
            "the server doesn't have a resource type 'widgets' in group 'example.com'",
        ));
    s.can_i(&["get", "rb", "--as", "u", "-f", "rbac.yaml"])
        .assert()
        .code(1)
        .stderr(contains("did you mean 'rolebindings'?"));
}

#[test]
fn crds_among_the_manifests_are_resolvable_types() {
    let s = Sandbox::new();
    s.file(
        "crd.yaml",
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}\n",
    );
    s.file(
        "rbac.yaml",
        &[
            doc("kind: ClusterRole\nmetadata: {name: widgets}\nrules:\n- {verbs: [get], apiGroups: [example.com], resources: [widgets]}\n"),
            doc("kind: ClusterRoleBinding\nmetadata: {name: widgets}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: widgets}\nsubjects:\n- {kind: User, name: u, apiGroup: rbac.authorization.k8s.io}\n"),
        ]
        .concat(),
    );
    s.can_i(&["get", "wd", "--as", "u", "-f", "."])
        .assert()
        .code(0)
        .stderr(contains("warning").not());
}

#[test]
fn cluster_scoped_type_in_a_namespace_warns_like_kubectl() {
    let s = Sandbox::new();
    s.file("e.yaml", "");
    s.can_i(&["get", "nodes", "--as", "u", "-f", "e.yaml"])
        .assert()
        .code(1)
        .stderr(contains("resource 'nodes' is not namespace scoped"));
    s.can_i(&[
        "get",
        "clusterpolicies.kyverno.io",
        "--as",
        "u",
        "-f",
        "e.yaml",
    ])
    .assert()
    .code(1)
    .stderr(contains(
        "resource 'clusterpolicies' is not namespace scoped in group 'kyverno.io'",
    ));
    s.can_i(&["get", "nodes", "-A", "--as", "u", "-f", "e.yaml"])
        .assert()
        .code(1)
        .stderr(contains("not namespace scoped").not());
}

#[test]
fn yaml_that_does_not_parse_is_a_content_error_with_position() {
    let s = Sandbox::new();
    s.file(
        "bad/role.yaml",
        &format!("{HEADER}kind: Role\nmetadata: {{name: r}}\nrules:\n- verbs: [get\n"),
    );
    s.can_i(&["get", "pods", "--as", "u", "-f", "bad"])
        .assert()
        .code(2)
        .stdout("")
        .stderr(contains("role.yaml:5:10: error: invalid YAML"))
        .stderr(contains("5 | - verbs: [get"));
}

#[test]
fn objects_the_api_server_would_refuse_are_content_errors() {
    let s = Sandbox::new();
    s.file(
        "role.yaml",
        &format!(
            "{HEADER}kind: Role\nmetadata: {{name: r}}\nrules:\n- verbs: [get]\n  resources: [pods]\n---\n{HEADER}kind: RoleBinding\nmetadata: {{name: b}}\nroleref: {{kind: Role, name: r}}\n"
        ),
    );
    s.can_i(&["get", "pods", "--as", "u", "-f", "role.yaml"])
        .assert()
        .code(2)
        .stderr(contains("role.yaml:5:3: error: this rule has no apiGroups"))
        .stderr(contains(
            "role.yaml:11:1: error: unknown field `roleref` in RoleBinding",
        ))
        .stderr(contains("role.yaml:8:1: error: RoleBinding has no roleRef"));
}

#[test]
fn missing_as_is_a_usage_error_with_a_hint() {
    let s = Sandbox::new();
    s.file("e.yaml", "");
    s.can_i(&["get", "pods", "-f", "e.yaml"])
        .assert()
        .code(2)
        .stdout("")
        .stderr(contains("needs --as USER"))
        .stderr(contains("hint:"));
    s.can_i(&["get", "pods", "--as-group", "g", "-f", "e.yaml"])
        .assert()
        .code(2)
        .stderr(contains("--as-group needs --as USER"));
}

#[test]
fn missing_path_is_a_usage_error() {
    let s = Sandbox::new();
    s.can_i(&["get", "pods", "--as", "u", "-f", "nowhere"])
        .assert()
        .code(2)
        .stderr(contains("nowhere: no such file or folder"));
}

#[test]
fn bindings_to_roles_not_in_the_manifests_explain_the_no() {
    let s = Sandbox::new();
    s.file(
        "rb.yaml",
        &doc("kind: RoleBinding\nmetadata: {name: viewers}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}\nsubjects:\n- {kind: User, name: u, apiGroup: rbac.authorization.k8s.io}\n"),
    );
    s.can_i(&["get", "pods", "--as", "u", "-f", "rb.yaml"])
        .assert()
        .code(1)
        .stderr(contains(r#"RoleBinding "viewers/default" refers to ClusterRole "view", which is not among the loaded objects"#));
}

/// As `kubectl auth can-i -q`: nothing printed, the exit code answers.
#[test]
fn quiet_prints_nothing_the_exit_code_answers() {
    let s = Sandbox::new();
    pod_reader_in_dev(&s);
    s.can_i(&[
        "get", "pods", "--as", SA_DEV_APP, "-n", "dev", "-f", "rbac", "-q",
    ])
    .assert()
    .code(0)
    .stdout("")
    .stderr("");
}

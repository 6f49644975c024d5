//! kca-operations without the real tools: `kca jp query` stands in for `kyverno jp query`
//! and `kca values render` for `helm template`, and where the real tool is present both
//! must agree on the lab's inputs (those tests say `skipped: …` when it is not).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

fn lab_dir() -> PathBuf {
    common::repo().join("labs/kca-operations")
}

fn kca_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("kca")
}

/// PATH with kca first and only the system folders after it (no kyverno, no helm there
/// unless the system has them).
fn system_path() -> String {
    format!("{}:/usr/bin:/bin", kca_bin().parent().unwrap().display())
}

fn on_path(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(tool))
            .find(|f| f.is_file())
    })
}

fn in_system_dirs(tool: &str) -> bool {
    ["/usr/bin", "/bin"]
        .iter()
        .any(|d| Path::new(d).join(tool).is_file())
}

/// Queries a learner might write for the lab's task, right and wrong, plus Kyverno
/// functions and shapes whose printing differs easily (strings, numbers, objects).
const QUERIES: &[(&str, &str)] = &[
    (
        "items[?spec.securityContext.runAsNonRoot != `true`].metadata.name",
        r#"["legacy-batch","debug-shell","side-only"]"#,
    ),
    // `!` binds tighter than `.` (go-jmespath's bindingPowers: tNot 45, tDot 40): this is
    // `(!spec).securityContext…`, null for every Pod: a trap, not an answer.
    (
        "items[?!spec.securityContext.runAsNonRoot].metadata.name",
        "[]",
    ),
    (
        "items[?!(spec.securityContext.runAsNonRoot)].metadata.name",
        r#"["legacy-batch","debug-shell","side-only"]"#,
    ),
    (
        "items[?spec.securityContext.runAsNonRoot == `false`].metadata.name",
        r#"["debug-shell"]"#,
    ),
    (
        "items[].metadata.name",
        r#"["payments-7d9f","legacy-batch","debug-shell","side-only"]"#,
    ),
    ("length(items)", "4"),
    (
        "items[0].spec.securityContext",
        r#"{"runAsNonRoot":true,"runAsUser":10001}"#,
    ),
    ("items[0].metadata.name | truncate(@, `4`)", r#""paym""#),
    (
        "items[].metadata.name | [?regex_match('^d', @)]",
        r#"["debug-shell"]"#,
    ),
    ("items[1].spec.securityContext.runAsNonRoot", "null"),
    (
        "items[?spec.containers[?securityContext.runAsNonRoot]].metadata.name",
        r#"["side-only"]"#,
    ),
];

fn kca_jp(query: &str) -> std::process::Output {
    Command::new(kca_bin())
        .args(["--color", "never", "jp", "query", "-c", "-i"])
        .arg(lab_dir().join("dumps/pods.yaml"))
        .arg(query)
        .output()
        .unwrap()
}

#[test]
fn kca_jp_answers_the_lab_queries_as_kyverno_jp_prints_them() {
    for (query, want) in QUERIES {
        let out = kca_jp(query);
        assert!(out.status.success(), "{query}: {}", common::stderr(&out));
        assert_eq!(
            common::stdout(&out),
            format!("# {query}\n{want}\n"),
            "{query}"
        );
    }
}

#[test]
fn kca_jp_agrees_with_kyverno_jp_query_on_the_lab_queries() {
    let Some(kyverno) = on_path("kyverno") else {
        eprintln!("skipped: the kyverno CLI is not on PATH (kca jp query is checked alone)");
        return;
    };
    for (query, _) in QUERIES {
        let real = Command::new(&kyverno)
            .args(["jp", "query", "-c", "-i"])
            .arg(lab_dir().join("dumps/pods.yaml"))
            .arg(query)
            .output()
            .unwrap();
        assert!(real.status.success(), "kyverno jp query {query}");
        assert_eq!(
            common::stdout(&kca_jp(query)),
            common::stdout(&real),
            "{query}"
        );
    }
}

/// Runs a grader script in a workspace holding `files`, with PATH = kca + system dirs.
fn grader(script: &str, args: &[&str], files: &[(&str, &str)]) -> std::process::Output {
    let ws = tempfile::tempdir().unwrap();
    for (rel, text) in files {
        let p = ws.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    Command::new("bash")
        .arg(lab_dir().join("graders").join(script))
        .args(args)
        .current_dir(ws.path())
        .env_clear()
        .env("PATH", system_path())
        .env("HOME", ws.path())
        .env("LANG", "C.UTF-8")
        .env("KCA_LANG", "en")
        .env("KCA_LAB_DIR", lab_dir())
        .output()
        .unwrap()
}

#[test]
fn jp_grader_runs_kca_jp_when_the_kyverno_cli_is_absent() {
    if in_system_dirs("kyverno") {
        eprintln!("skipped: a real kyverno CLI is installed in /usr/bin or /bin and is preferred");
        return;
    }
    let right =
        std::fs::read_to_string(lab_dir().join("solution/queries/not-non-root.jp")).unwrap();
    let out = grader("jp.sh", &[], &[("queries/not-non-root.jp", &right)]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert!(
        common::stdout(&out)
            .lines()
            .any(|l| l == r#"["legacy-batch","debug-shell","side-only"]"#),
        "{}",
        common::stdout(&out)
    );
    assert!(common::stderr(&out).contains("kca jp query stood in"));
    let out = grader(
        "jp.sh",
        &[],
        &[(
            "queries/not-non-root.jp",
            "items[?spec.securityContext.runAsNonRoot == `false`].metadata.name\n",
        )],
    );
    assert!(!common::stdout(&out).contains(r#"["legacy-batch","debug-shell","side-only"]"#));
    let out = grader("jp.sh", &[], &[("queries/not-non-root.jp", "items[?\n")]);
    assert!(!out.status.success(), "a query that does not parse fails");
}

fn solution_values() -> String {
    std::fs::read_to_string(lab_dir().join("solution/helm/values-ha.yaml")).unwrap()
}

/// The solution's values and the learner mistakes the lab's mutants model, plus values
/// whose merge is easy to get wrong (null deletes, a partial map merges, a list replaces,
/// a disabled controller, a renamed chart, autoscaling, a string count, zero replicas).
fn values_variants() -> Vec<(&'static str, String)> {
    let sol = solution_values();
    vec![
        ("solution", sol.clone()),
        (
            "starter",
            std::fs::read_to_string(lab_dir().join("starter/helm/values-ha.yaml")).unwrap(),
        ),
        (
            "admission-two",
            sol.replace(
                "admissionController:\n  replicas: 3",
                "admissionController:\n  replicas: 2",
            ),
        ),
        (
            "reports-scaled-out",
            std::fs::read_to_string(
                lab_dir().join("mutants/reports-scaled-out/helm/values-ha.yaml"),
            )
            .unwrap(),
        ),
        (
            "reports-scaled-down",
            sol.replace("      memory: 1Gi", "      memory: 64Mi"),
        ),
        (
            "reports-cpu-limit-only",
            sol.replace(
                "    limits:\n      memory: 1Gi",
                "    limits:\n      cpu: \"2\"",
            ),
        ),
        (
            "requests-only",
            "reportsController:\n  replicas: 2\n  resources:\n    requests:\n      memory: 256Mi\n"
                .into(),
        ),
        (
            "null-limits",
            "reportsController:\n  resources:\n    limits: ~\n".into(),
        ),
        (
            "null-resources",
            "backgroundController:\n  resources: ~\n".into(),
        ),
        (
            "cleanup-disabled",
            "cleanupController:\n  enabled: false\n".into(),
        ),
        (
            "name-override",
            "nameOverride: policy\nadmissionController:\n  replicas: 3\n".into(),
        ),
        (
            "autoscaling",
            "admissionController:\n  autoscaling:\n    enabled: true\n  replicas: 3\n".into(),
        ),
        (
            "string-replicas",
            "reportsController:\n  replicas: \"2\"\n".into(),
        ),
        (
            "zero-replicas",
            "admissionController:\n  replicas: 0\n".into(),
        ),
        ("empty", String::new()),
    ]
}

/// name → (replicas, the graded container's resources) of the rendered Deployments.
fn graded_fields(docs: &[Value]) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = docs
        .iter()
        .filter(|d| d["kind"] == "Deployment")
        .map(|d| {
            let name = d["metadata"]["name"].as_str().unwrap_or("").to_string();
            let container = d["spec"]["template"]["spec"]["containers"]
                .as_array()
                .and_then(|cs| {
                    cs.iter()
                        .find(|c| c["name"] == "controller" || c["name"] == "kyverno")
                })
                .cloned()
                .unwrap_or(Value::Null);
            (
                name,
                json!({
                    "namespace": d["metadata"]["namespace"],
                    "replicas": d["spec"].get("replicas").cloned().unwrap_or(json!("absent")),
                    "container": container["name"],
                    "resources": container.get("resources").cloned().unwrap_or(json!("absent")),
                }),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn kca_render(values: &Path) -> (bool, Vec<(String, Value)>) {
    let out = Command::new(kca_bin())
        .args(["--color", "never", "values", "render", "--chart"])
        .arg(lab_dir().join("graders/chart-render.yaml"))
        .arg("-f")
        .arg(values)
        .output()
        .unwrap();
    let docs = kca::yaml::parse_json_stream(&common::stdout(&out)).unwrap();
    (out.status.success(), graded_fields(&docs))
}

#[test]
fn kca_values_render_applies_helms_merge_to_the_lab_values() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("values.yaml");
    std::fs::write(
        &file,
        "reportsController:\n  resources:\n    limits: ~\n    requests:\n      cpu: \"1\"\n",
    )
    .unwrap();
    let (ok, fields) = kca_render(&file);
    assert!(ok);
    let reports = &fields
        .iter()
        .find(|(n, _)| n == "kyverno-reports-controller")
        .unwrap()
        .1;
    assert_eq!(
        reports["replicas"],
        Value::Null,
        "unset replicas render empty"
    );
    assert_eq!(
        reports["resources"],
        json!({"requests": {"cpu": "1", "memory": "64Mi"}})
    );
    std::fs::write(&file, "admissionController:\n  replicas: 0\n").unwrap();
    assert!(
        !kca_render(&file).0,
        "0 replicas fail like the chart's check"
    );
}

/// `helm template` with the chart of $KCA_KYVERNO_CHART, else kyverno/kyverno 3.9.1 from
/// the helm repos; `None` when neither is there.
fn helm_chart(helm: &Path) -> Option<Vec<String>> {
    if let Some(c) = std::env::var_os("KCA_KYVERNO_CHART") {
        return Some(vec![c.to_string_lossy().into_owned()]);
    }
    let ok = Command::new(helm)
        .args(["show", "chart", "kyverno/kyverno", "--version", "3.9.1"])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then(|| vec!["kyverno/kyverno".into(), "--version".into(), "3.9.1".into()])
}

#[test]
fn kca_values_render_agrees_with_helm_template_on_the_lab_values() {
    let Some(helm) = on_path("helm") else {
        eprintln!("skipped: helm is not on PATH (kca values render is checked alone)");
        return;
    };
    let Some(chart) = helm_chart(&helm) else {
        eprintln!("skipped: no kyverno chart (set KCA_KYVERNO_CHART or add the kyverno helm repo)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    for (name, text) in values_variants() {
        let file = tmp.path().join(format!("{name}.yaml"));
        std::fs::write(&file, &text).unwrap();
        let real = Command::new(&helm)
            .arg("template")
            .arg("kyverno")
            .args(&chart)
            .args(["-n", "kyverno", "-f"])
            .arg(&file)
            .output()
            .unwrap();
        let (ok, ours) = kca_render(&file);
        assert_eq!(
            ok,
            real.status.success(),
            "{name}: helm template {} but kca values render {}: {}",
            if real.status.success() {
                "renders"
            } else {
                "fails"
            },
            if ok { "renders" } else { "fails" },
            common::stderr(&real)
        );
        if ok {
            let docs = kca::yaml::parse_json_stream(&common::stdout(&real)).unwrap();
            assert_eq!(ours, graded_fields(&docs), "{name}");
        }
    }
}

#[test]
fn helm_render_grader_without_helm_passes_the_solution_and_fails_the_mutants() {
    if in_system_dirs("helm") {
        eprintln!("skipped: a real helm is installed in /usr/bin or /bin and is preferred");
        return;
    }
    for (name, text) in values_variants() {
        let files = [("helm/values-ha.yaml", text.as_str())];
        let replicas = grader(
            "helm-render.sh",
            &[lab_dir()
                .join("graders/render-replicas.yaml")
                .to_str()
                .unwrap()],
            &files,
        );
        let reports = grader(
            "helm-render.sh",
            &[lab_dir()
                .join("graders/render-reports.yaml")
                .to_str()
                .unwrap()],
            &files,
        );
        assert!(
            common::stderr(&replicas).contains("kca values render stood in")
                || !replicas.status.success()
        );
        let (want_replicas, want_reports) = match name {
            "solution" => (true, true),
            "admission-two" => (false, true),
            "reports-scaled-out" | "reports-scaled-down" | "reports-cpu-limit-only" => {
                (true, false)
            }
            "starter" | "empty" | "zero-replicas" | "null-limits" | "requests-only"
            | "cleanup-disabled" => (false, false),
            _ => continue,
        };
        assert_eq!(
            replicas.status.success(),
            want_replicas,
            "{name} replicas: {}",
            common::stdout(&replicas)
        );
        assert_eq!(
            reports.status.success(),
            want_reports,
            "{name} reports: {}",
            common::stdout(&reports)
        );
    }
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn offline_the_solution_passes_every_check_but_the_running_installs() {
    if in_system_dirs("helm") || in_system_dirs("kyverno") {
        eprintln!(
            "skipped: a real helm or kyverno in /usr/bin or /bin would be used instead of kca"
        );
        return;
    }
    let env = common::Env::new();
    let root = env.home.path().join("work");
    let out = env
        .kca()
        .env("PATH", "/usr/bin:/bin")
        .env("KCA_WORKSPACE_ROOT", &root)
        .args([
            "--lang",
            "en",
            "lab",
            "start",
            "kca-operations",
            "--offline",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let ws = root.join("kca-operations");
    assert!(ws.is_dir(), "the workspace is not at {}", ws.display());
    copy_dir(&lab_dir().join("solution"), &ws);
    let out = env
        .kca()
        .env("PATH", "/usr/bin:/bin")
        .env("KCA_WORKSPACE_ROOT", &root)
        .args(["--lang", "en", "lab", "check", "-o", "json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    let mut verdicts = Vec::new();
    for task in report["tasks"].as_array().unwrap() {
        for check in task["checks"].as_array().unwrap() {
            verdicts.push((
                check["id"].as_str().unwrap().to_string(),
                check["verdict"].as_str().unwrap().to_string(),
            ));
        }
    }
    let cluster_only = [
        "reports-two-replicas",
        "reports-lease-held",
        "reports-leader",
        "webhook-live",
    ];
    for (id, verdict) in &verdicts {
        let want = if cluster_only.contains(&id.as_str()) {
            "skipped"
        } else {
            "pass"
        };
        assert_eq!(verdict, want, "{id}: {verdicts:?}");
    }
    assert!(verdicts.iter().any(|(id, _)| id == "jp-query"));
    assert!(verdicts.iter().any(|(id, _)| id == "rendered-reports"));
}

#[test]
fn kca_jp_parse_refuses_a_hostile_expression_instead_of_overflowing_the_stack() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("deep.jp");
    std::fs::write(
        &file,
        format!("{}a{}", "(".repeat(100_000), ")".repeat(100_000)),
    )
    .unwrap();
    for sub in ["parse", "query"] {
        let mut cmd = Command::new(kca_bin());
        cmd.args(["--color", "never", "--lang", "en", "jp", sub]);
        if sub == "parse" {
            cmd.arg("-f").arg(&file);
        } else {
            cmd.arg("-i")
                .arg(lab_dir().join("dumps/pods.yaml"))
                .arg("--query")
                .arg(&file);
        }
        let out = cmd.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{sub}: {}",
            common::stderr(&out)
        );
        let err = common::stderr(&out);
        assert!(
            err.contains("nests") || err.contains("bytes long"),
            "{sub}: {err}"
        );
        assert!(
            err.len() < 2000,
            "{sub}: the message repeats the whole expression"
        );
    }
}

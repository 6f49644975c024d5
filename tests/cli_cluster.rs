//! `kca cluster …` end to end with stand-in `kind`, `helm` and `docker` programs on a
//! private PATH: which tools are required, what they are asked to do, and how a missing
//! tool or an unreachable cluster is reported (exit 3, never the learner's fail). Hermetic:
//! temp HOME, a temp KUBECONFIG, no real container engine or cluster.

use std::path::{Path, PathBuf};

use predicates::prelude::*;

struct Bench {
    dir: tempfile::TempDir,
}

impl Bench {
    fn new() -> Self {
        let b = Bench {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(b.bin()).unwrap();
        std::fs::create_dir_all(b.dir.path().join("home")).unwrap();
        b
    }

    fn bin(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("calls.log")
    }

    /// A stand-in program that records its name and arguments, then runs `body`.
    fn tool(&self, name: &str, body: &str) {
        use std::os::unix::fs::PermissionsExt;
        let p = self.bin().join(name);
        std::fs::write(
            &p,
            format!(
                "#!/bin/sh\necho \"{name} $*\" >> '{}'\n{body}\n",
                self.log().display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// A kubeconfig whose `kind-kca` context points at a closed port.
    fn kubeconfig(&self) -> PathBuf {
        let p = self.dir.path().join("kubeconfig");
        std::fs::write(
            &p,
            "apiVersion: v1\nkind: Config\ncurrent-context: kind-kca\nclusters:\n- name: kind-kca\n  cluster:\n    server: https://127.0.0.1:9\ncontexts:\n- name: kind-kca\n  context: {cluster: kind-kca, user: kind-kca}\nusers:\n- name: kind-kca\n  user: {token: x}\n",
        )
        .unwrap();
        p
    }

    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.log())
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn kca(&self) -> assert_cmd::Command {
        let mut cmd = assert_cmd::Command::cargo_bin("kca").unwrap();
        // sh itself must stay reachable for the stand-ins' shebang line.
        let path = format!("{}:/bin:/usr/bin", self.bin().display());
        cmd.env_clear()
            .env("PATH", path)
            .env("HOME", self.dir.path().join("home"))
            .env("XDG_STATE_HOME", self.dir.path().join("state"))
            .env("KUBECONFIG", self.kubeconfig())
            .env("NO_COLOR", "1")
            .env("LANG", "en_US.UTF-8")
            .arg("--content-dir")
            .arg(repo_root())
            .timeout(std::time::Duration::from_secs(60));
        cmd
    }
}

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Stand-ins are only found on the bench's PATH; a real kind/helm/docker in /usr/bin would
/// be found too, so these tests make sure of what they need by name.
fn real_tool_exists(name: &str) -> bool {
    ["/bin", "/usr/bin"]
        .iter()
        .any(|d| Path::new(d).join(name).exists())
}

#[test]
fn up_without_kind_says_how_to_install_it() {
    if real_tool_exists("kind") {
        eprintln!("skipped: a real kind is installed in /bin or /usr/bin");
        return;
    }
    let b = Bench::new();
    b.kca()
        .args(["cluster", "up"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("`kind` is not installed"))
        .stderr(predicate::str::contains("hint:"))
        .stderr(predicate::str::contains("kind.sigs.k8s.io"));
    // In Japanese, the same in one language.
    b.kca()
        .env("LANG", "ja_JP.UTF-8")
        .args(["cluster", "up"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("ヒント:"))
        .stderr(predicate::str::contains("hint:").not())
        .stderr(predicate::str::contains("kind.sigs.k8s.io"));
}

#[test]
fn up_without_helm_says_how_to_install_it_but_no_kyverno_needs_none() {
    if real_tool_exists("helm") || real_tool_exists("docker") || real_tool_exists("podman") {
        eprintln!("skipped: a real helm/docker/podman is installed in /bin or /usr/bin");
        return;
    }
    let b = Bench::new();
    b.tool("kind", "exit 0");
    b.tool("docker", "exit 0");
    b.kca()
        .args(["cluster", "up"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("`helm` is not installed"))
        .stderr(predicate::str::contains("helm.sh"));
    assert!(
        b.calls().is_empty(),
        "nothing runs before the checks: {:?}",
        b.calls()
    );
}

#[test]
fn up_with_a_stopped_engine_is_an_environment_error() {
    let b = Bench::new();
    b.tool("kind", "exit 0");
    b.tool("helm", "exit 0");
    b.tool(
        "docker",
        "echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock' >&2; exit 1",
    );
    b.kca()
        .args(["cluster", "up"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("docker is installed"))
        .stderr(predicate::str::contains("not answering"));
    assert_eq!(b.calls(), vec!["docker info"]);
}

#[test]
fn up_creates_the_cluster_from_kind_config_then_reports_an_unreachable_api_server() {
    let b = Bench::new();
    b.tool(
        "kind",
        "case \"$1\" in version) echo 'kind v0.33.0 go1.25 linux/amd64';; esac; exit 0",
    );
    b.tool("helm", "exit 0");
    b.tool("docker", "exit 0");
    b.kca()
        .args(["cluster", "up"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("creating kind cluster `kca`"))
        .stderr(predicate::str::contains("does not answer"))
        .stderr(predicate::str::contains("kca cluster up"));
    let config = repo_root().join("kind-config").join("cluster.yaml");
    assert_eq!(
        b.calls(),
        vec![
            "docker info".to_string(),
            "kind version".into(),
            "kind get clusters".into(),
            format!(
                "kind create cluster --name kca --config {} --wait 180s",
                config.display()
            ),
        ]
    );
}

#[test]
fn up_reuses_an_existing_cluster_and_warns_about_an_old_kind() {
    let b = Bench::new();
    b.tool(
        "kind",
        "case \"$1\" in version) echo 'kind v0.20.0 go1.20 linux/amd64';; get) echo kca;; esac; exit 0",
    );
    b.tool("helm", "exit 0");
    b.tool("docker", "exit 0");
    b.kca()
        .args(["cluster", "up"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("exists; reusing it"))
        .stderr(predicate::str::contains("older than v0.33.0"));
    assert_eq!(
        b.calls(),
        vec![
            "docker info",
            "kind version",
            "kind get clusters",
            "kind export kubeconfig --name kca"
        ]
    );
}

#[test]
fn a_failing_kind_create_shows_what_kind_said() {
    let b = Bench::new();
    b.tool(
        "kind",
        "case \"$1\" in create) echo 'ERROR: failed to create cluster: node(s) already exist for a cluster with the name \"kca\"' >&2; exit 1;; esac; exit 0",
    );
    b.tool("helm", "exit 0");
    b.tool("docker", "exit 0");
    b.kca()
        .args(["cluster", "up"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("node(s) already exist"));
}

#[test]
fn down_deletes_the_cluster_or_says_there_is_none() {
    let b = Bench::new();
    b.tool("kind", "case \"$1\" in get) echo kca;; esac; exit 0");
    b.tool("docker", "exit 0");
    b.kca()
        .args(["cluster", "down"])
        .assert()
        .success()
        .stdout(predicate::str::contains("deleted kind cluster `kca`"));
    assert_eq!(
        b.calls(),
        vec![
            "docker info",
            "kind get clusters",
            "kind delete cluster --name kca"
        ]
    );

    let b = Bench::new();
    b.tool("kind", "exit 0");
    b.tool("docker", "exit 0");
    b.kca()
        .args(["cluster", "down"])
        .assert()
        .success()
        .stdout(predicate::str::contains("nothing to delete"));
    assert!(!b.calls().iter().any(|c| c.starts_with("kind delete")));
}

#[test]
fn podman_is_passed_to_kind() {
    if real_tool_exists("docker") {
        eprintln!("skipped: a real docker is installed in /bin or /usr/bin and would be preferred");
        return;
    }
    let b = Bench::new();
    b.tool(
        "kind",
        "case \"$1\" in get) echo \"provider=$KIND_EXPERIMENTAL_PROVIDER\" >> \"$(dirname \"$0\")/../provider.log\"; echo kca;; esac; exit 0",
    );
    b.tool("podman", "exit 0");
    b.kca().args(["cluster", "down"]).assert().success();
    let provider = std::fs::read_to_string(b.dir.path().join("provider.log")).unwrap();
    assert_eq!(provider.trim(), "provider=podman");
    assert_eq!(b.calls()[0], "podman info");
}

#[test]
fn status_and_adopt_of_an_unreachable_cluster_exit_3() {
    let b = Bench::new();
    for cmd in ["status", "adopt"] {
        b.kca()
            .args(["cluster", cmd])
            .assert()
            .code(3)
            .stderr(predicate::str::contains("does not answer"));
    }
    let missing = b.dir.path().join("nope");
    b.kca()
        .args(["cluster", "status", "--kubeconfig"])
        .arg(&missing)
        .assert()
        .code(3)
        .stderr(predicate::str::contains("kubeconfig"));
    b.kca()
        .args(["cluster", "status", "--context", "elsewhere"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains(
            "context `elsewhere` is not in the kubeconfig",
        ));
}

#[test]
fn lab_verify_live_needs_a_reachable_lab_cluster() {
    let b = Bench::new();
    b.kca()
        .args(["lab", "verify", "--live", "kca-admission"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("does not answer"));
    b.kca()
        .args(["lab", "verify", "kca-admission"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--live"));
}

/// `bench/lab-check-latency.sh` must not touch a cluster it cannot finish with: without
/// hyperfine it stops before kubectl or kca are called.
#[test]
fn the_latency_bench_checks_for_hyperfine_before_touching_the_cluster() {
    if real_tool_exists("hyperfine") {
        eprintln!("skipped: hyperfine is installed in /bin or /usr/bin");
        return;
    }
    let b = Bench::new();
    b.tool("kubectl", "exit 0");
    let out = std::process::Command::new("/bin/bash")
        .arg(repo_root().join("bench/lab-check-latency.sh"))
        .env_clear()
        .env("PATH", format!("{}:/bin:/usr/bin", b.bin().display()))
        .env("KUBECONFIG", b.kubeconfig())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("needs hyperfine"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(b.calls().is_empty(), "called {:?}", b.calls());
}

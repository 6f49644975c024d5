//! `kca cluster …`: the course kind cluster and its Kyverno install (through the `kind` and
//! `helm` CLIs), and the lab-cluster marker that lets destructive lab steps touch a cluster.
//! It talks to the API server only through `target::live`, and never edits kubeconfig files
//! itself (kind does that).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::cli::cluster::{ClusterCommand, TargetArgs, UpArgs};
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::settings::OutputFormat;
use crate::target::live::{Live, LiveError};
use crate::target::{AccessQuery, Identity, ObjRef};
use crate::ui::Style;

/// The kind cluster's name; kind names its kubeconfig context `kind-<name>`.
pub const CLUSTER_NAME: &str = "kca";
pub const KIND_CONTEXT: &str = "kind-kca";

/// The marker: a ConfigMap in `kube-public` (which every cluster has and Kyverno's default
/// resource filters skip) carrying this label with value "true".
pub const MARKER_NAMESPACE: &str = "kube-public";
pub const MARKER_NAME: &str = "kca-cluster";
pub const MARKER_LABEL: &str = "kca.dev/lab-cluster";

pub const KYVERNO_NAMESPACE: &str = "kyverno";
/// The controllers the pinned chart deploys; all four must be rolled out.
pub const KYVERNO_DEPLOYMENTS: [&str; 4] = [
    "kyverno-admission-controller",
    "kyverno-background-controller",
    "kyverno-cleanup-controller",
    "kyverno-reports-controller",
];
/// What the course's generate lab has learners grant the background controller; the lab
/// values take these away from the stock chart, and `up`/`status` check that they did.
pub const BACKGROUND_WRITES: [(&str, &str); 2] =
    [("", "configmaps"), ("networking.k8s.io", "networkpolicies")];
const BACKGROUND_SA: &str = "kyverno-background-controller";
/// The controllers admission and generate checks depend on.
pub const ADMISSION_CONTROLLER: &str = "kyverno-admission-controller";
pub const BACKGROUND_CONTROLLER: &str = "kyverno-background-controller";
/// The label Kyverno puts on the webhook configurations it registers at runtime.
const KYVERNO_WEBHOOK_SELECTOR: &str = "webhook.kyverno.io/managed-by=kyverno";

const KIND_INSTALL_HINT: &str = "install kind (https://kind.sigs.k8s.io/docs/user/quick-start/#installation), e.g. `go install sigs.k8s.io/kind@v0.33.0`, then run `kca cluster up` again";
const HELM_INSTALL_HINT: &str =
    "install Helm 3 (https://helm.sh/docs/intro/install/), then run `kca cluster up` again";
const ENGINE_INSTALL_HINT: &str = "install and start Docker (https://docs.docker.com/engine/install/) or Podman (https://podman.io/docs/installation), then run `kca cluster up` again";

const ROLLOUT_DEADLINE: Duration = Duration::from_secs(300);
const KIND_CREATE_TIMEOUT: Duration = Duration::from_secs(600);
const HELM_TIMEOUT: Duration = Duration::from_secs(900);
const SHORT_TIMEOUT: Duration = Duration::from_secs(60);

/// Which cluster a command talks to.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
}

impl From<&TargetArgs> for Selection {
    fn from(a: &TargetArgs) -> Self {
        Selection {
            kubeconfig: a.kubeconfig.clone(),
            context: a.context.clone(),
        }
    }
}

impl Selection {
    /// The course's kind cluster in the default kubeconfig.
    pub fn course() -> Self {
        Selection {
            kubeconfig: None,
            context: Some(KIND_CONTEXT.to_string()),
        }
    }

    fn describe(&self, live: Option<&Live>) -> String {
        let ctx = live
            .and_then(Live::context_name)
            .or(self.context.as_deref())
            .unwrap_or("(current context)");
        match &self.kubeconfig {
            Some(k) => format!("context `{ctx}` in {}", k.display()),
            None => format!("context `{ctx}`"),
        }
    }
}

/// Versions pinned in `kind-config/versions.yaml`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Versions {
    pub kind: String,
    pub kubernetes: String,
    pub kyverno: String,
    pub kyverno_chart: String,
    pub kyverno_repo: HelmRepo,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HelmRepo {
    pub name: String,
    pub url: String,
}

/// The files `kca cluster up` uses, under the content folder's `kind-config/`.
#[derive(Debug, Clone)]
pub struct KindConfig {
    pub dir: PathBuf,
    pub cluster: PathBuf,
    pub values: PathBuf,
    pub versions: Versions,
}

impl KindConfig {
    pub fn load(content_dir: &Path) -> Result<KindConfig> {
        let dir = content_dir.join("kind-config");
        let cluster = dir.join("cluster.yaml");
        let values = dir.join("kyverno-values.yaml");
        let versions_path = dir.join("versions.yaml");
        for p in [&cluster, &values, &versions_path] {
            if !p.is_file() {
                return Err(Error::environment(
                    format!("{} is missing", p.display()),
                    "point --content-dir (or KCA_CONTENT_DIR) at the course folder that holds kind-config/",
                ));
            }
        }
        let text = crate::input::read_text(&versions_path)?;
        let doc = crate::yaml::parse_json_stream(&text)
            .map_err(|e| Error::usage(format!("{}: {e}", versions_path.display()), "fix the YAML"))?
            .into_iter()
            .next()
            .unwrap_or(Value::Null);
        let versions: Versions = serde_json::from_value(doc).map_err(|e| {
            Error::usage(
                format!("{}: {e}", versions_path.display()),
                "versions.yaml needs kind, kubernetes, kyverno, kyvernoChart and kyvernoRepo {name, url}",
            )
        })?;
        Ok(KindConfig {
            dir,
            cluster,
            values,
            versions,
        })
    }
}

// ---- external tools ----

/// A container engine kind can drive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Engine {
    pub name: String,
    pub path: PathBuf,
}

/// The programs `kca cluster` runs, found on PATH.
#[derive(Debug, Clone)]
pub struct Tools {
    pub kind: PathBuf,
    pub helm: Option<PathBuf>,
    pub engine: Engine,
}

/// An external command, built separately from running it so its arguments can be tested.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cmd {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

impl std::fmt::Display for Cmd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (k, v) in &self.env {
            write!(f, "{k}={v} ")?;
        }
        let name = self
            .program
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        write!(f, "{name}")?;
        for a in &self.args {
            write!(f, " {a}")?;
        }
        Ok(())
    }
}

/// Finds an executable file called `name` in a PATH-style list of folders.
pub fn find_program(path_var: &OsStr, name: &str) -> Option<PathBuf> {
    std::env::split_paths(path_var)
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Finds kind, helm (when `need_helm`) and a container engine. `provider` is
/// `KIND_EXPERIMENTAL_PROVIDER`, which kind itself reads to pick podman over docker.
pub fn discover_tools(path_var: &OsStr, provider: Option<&str>, need_helm: bool) -> Result<Tools> {
    let kind = find_program(path_var, "kind").ok_or_else(|| {
        Error::environment(
            "`kind` is not installed (not found on PATH); kca creates the course cluster with it",
            KIND_INSTALL_HINT,
        )
    })?;
    let helm = find_program(path_var, "helm");
    if need_helm && helm.is_none() {
        return Err(Error::environment(
            "`helm` is not installed (not found on PATH); kca installs Kyverno with it",
            HELM_INSTALL_HINT,
        ));
    }
    let candidates: Vec<&str> = match provider.filter(|p| !p.is_empty()) {
        Some(p) => vec![p],
        None => vec!["docker", "podman"],
    };
    let engine = candidates
        .iter()
        .find_map(|name| {
            find_program(path_var, name).map(|path| Engine {
                name: name.to_string(),
                path,
            })
        })
        .ok_or_else(|| {
            Error::environment(
                format!(
                    "no container engine: kind runs its node in {}, and none is on PATH",
                    candidates.join(" or ")
                ),
                ENGINE_INSTALL_HINT,
            )
        })?;
    Ok(Tools { kind, helm, engine })
}

impl Tools {
    fn kind_cmd(&self, args: &[&str]) -> Cmd {
        // kind picks docker unless told otherwise; say podman when that is what was found.
        let env = if self.engine.name == "podman" {
            vec![(
                "KIND_EXPERIMENTAL_PROVIDER".to_string(),
                "podman".to_string(),
            )]
        } else {
            Vec::new()
        };
        Cmd {
            program: self.kind.clone(),
            args: args.iter().map(|s| s.to_string()).collect(),
            env,
        }
    }

    fn helm_cmd(&self, args: Vec<String>) -> Cmd {
        Cmd {
            program: self.helm.clone().unwrap_or_else(|| PathBuf::from("helm")),
            args,
            env: Vec::new(),
        }
    }

    pub fn engine_info(&self) -> Cmd {
        Cmd {
            program: self.engine.path.clone(),
            args: vec!["info".into()],
            env: Vec::new(),
        }
    }

    pub fn kind_version(&self) -> Cmd {
        self.kind_cmd(&["version"])
    }

    pub fn kind_get_clusters(&self) -> Cmd {
        self.kind_cmd(&["get", "clusters"])
    }

    pub fn kind_create(&self, config: &Path) -> Cmd {
        let config = config.to_string_lossy();
        self.kind_cmd(&[
            "create",
            "cluster",
            "--name",
            CLUSTER_NAME,
            "--config",
            &config,
            "--wait",
            "180s",
        ])
    }

    /// Writes (or refreshes) the `kind-kca` context into the default kubeconfig, for a
    /// cluster that exists but whose context was removed.
    pub fn kind_export_kubeconfig(&self) -> Cmd {
        self.kind_cmd(&["export", "kubeconfig", "--name", CLUSTER_NAME])
    }

    pub fn kind_delete(&self) -> Cmd {
        self.kind_cmd(&["delete", "cluster", "--name", CLUSTER_NAME])
    }

    pub fn helm_repo_list(&self) -> Cmd {
        self.helm_cmd(vec![
            "repo".into(),
            "list".into(),
            "--output".into(),
            "json".into(),
        ])
    }

    pub fn helm_repo_add(&self, repo: &HelmRepo) -> Cmd {
        self.helm_cmd(vec![
            "repo".into(),
            "add".into(),
            repo.name.clone(),
            repo.url.clone(),
        ])
    }

    pub fn helm_repo_update(&self, repo: &HelmRepo) -> Cmd {
        self.helm_cmd(vec!["repo".into(), "update".into(), repo.name.clone()])
    }

    /// Installs or upgrades Kyverno at the pinned chart version, always into the kind
    /// context (never whatever context happens to be current).
    pub fn helm_install_kyverno(&self, cfg: &KindConfig) -> Cmd {
        let v = &cfg.versions;
        self.helm_cmd(vec![
            "upgrade".into(),
            "--install".into(),
            "kyverno".into(),
            format!("{}/kyverno", v.kyverno_repo.name),
            "--version".into(),
            v.kyverno_chart.clone(),
            "--namespace".into(),
            KYVERNO_NAMESPACE.into(),
            "--create-namespace".into(),
            "--values".into(),
            cfg.values.to_string_lossy().into_owned(),
            "--kube-context".into(),
            KIND_CONTEXT.into(),
            "--wait".into(),
            "--timeout".into(),
            "10m".into(),
        ])
    }
}

/// What a finished command printed.
struct Output {
    stdout: String,
}

/// Runs a command, capturing its output; a non-zero exit is an environment error showing
/// the end of what it printed.
async fn exec(cmd: &Cmd, timeout: Duration) -> Result<Output> {
    let mut command = std::process::Command::new(&cmd.program);
    command
        .args(&cmd.args)
        .envs(cmd.env.iter().map(|(k, v)| (k, v)));
    let out = crate::exec::run_async(crate::exec::Job::new(command, timeout))
        .await
        .map_err(|e| {
            Error::environment(
                format!("cannot run `{cmd}`: {e}"),
                "check that the program is installed and executable",
            )
        })?;
    let stdout = out.stdout.text();
    match &out.end {
        crate::exec::End::TimedOut => Err(Error::environment(
            format!("`{cmd}` did not finish within {}s", timeout.as_secs()),
            "check the container engine and network, then run the command again",
        )),
        crate::exec::End::Exited(status) if !status.success() => Err(Error::environment(
            format!(
                "`{cmd}` failed ({status}):\n{}",
                tail(&format!("{stdout}{}", out.stderr.text()), 15)
            ),
            "read the tool's message above; `kca cluster down` then `kca cluster up` starts over",
        )),
        crate::exec::End::Exited(_) => Ok(Output { stdout }),
    }
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The container engine must answer, not just be installed: kind's own error for a stopped
/// daemon is long and easy to misread.
async fn check_engine(tools: &Tools) -> Result<()> {
    exec(&tools.engine_info(), SHORT_TIMEOUT)
        .await
        .map(|_| ())
        .map_err(|_| {
            Error::environment(
                format!(
                    "{} is installed ({}) but not answering — is its daemon/service running?",
                    tools.engine.name,
                    tools.engine.path.display()
                ),
                ENGINE_INSTALL_HINT,
            )
        })
}

/// `kind version` prints e.g. `kind v0.33.0 go1.25.1 linux/amd64`.
pub fn parse_kind_version(out: &str) -> Option<(u32, u32, u32)> {
    let word = out.split_whitespace().find(|w| w.starts_with('v'))?;
    parse_semver(word)
}

fn parse_semver(v: &str) -> Option<(u32, u32, u32)> {
    let core = v.trim_start_matches('v').split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u32>().ok());
    Some((
        parts.next()??,
        parts.next()??,
        parts.next().flatten().unwrap_or(0),
    ))
}

/// Whether `helm repo list -o json` names the repository (by name and URL).
pub fn helm_repo_present(list_json: &str, repo: &HelmRepo) -> bool {
    let norm = |u: &str| u.trim_end_matches('/').to_string();
    serde_json::from_str::<Value>(list_json)
        .ok()
        .and_then(|v| v.as_array().cloned())
        .is_some_and(|repos| {
            repos.iter().any(|r| {
                r["name"] == repo.name.as_str()
                    && r["url"].as_str().map(norm) == Some(norm(&repo.url))
            })
        })
}

// ---- the marker ----

/// The marker object for a cluster marked by `how` (e.g. `kca cluster up`).
pub fn marker_object(how: &str, context: Option<&str>) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": MARKER_NAME,
            "namespace": MARKER_NAMESPACE,
            "labels": {
                MARKER_LABEL: "true",
                "app.kubernetes.io/managed-by": "kca",
            },
        },
        "data": {
            "markedBy": how,
            "context": context.unwrap_or(""),
            "markedAt": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        },
    })
}

fn marker_ref() -> ObjRef {
    ObjRef::new("v1", "ConfigMap", Some(MARKER_NAMESPACE), MARKER_NAME)
}

/// True when the cluster carries kca's lab-cluster marker.
pub async fn is_lab_cluster(live: &Live) -> Result<bool, LiveError> {
    Ok(live
        .get(&marker_ref())
        .await?
        .and_then(|cm| {
            cm.pointer(&format!(
                "/metadata/labels/{}",
                MARKER_LABEL.replace('/', "~1")
            ))
            .and_then(Value::as_str)
            .map(|v| v == "true")
        })
        .unwrap_or(false))
}

/// Marks the cluster as a kca lab cluster (idempotent).
pub async fn mark_lab_cluster(live: &Live, how: &str) -> Result<(), LiveError> {
    live.apply(&marker_object(how, live.context_name()))
        .await
        .map(|_| ())
}

/// Removes the marker; a cluster without one is fine.
pub async fn unmark_lab_cluster(live: &Live) -> Result<(), LiveError> {
    live.delete(&marker_ref()).await
}

// ---- connecting for labs ----

/// Connects to the selected cluster for a lab: it must answer (else an environment error),
/// and when `need_marked`, carry the lab-cluster marker (else an environment error naming
/// `kca cluster up` / `kca cluster adopt`). Async because the client lives on the caller's
/// runtime.
pub async fn ensure_cluster(ctx: &Ctx, sel: &Selection, need_marked: bool) -> Result<Live> {
    let live = connect(sel).await?;
    let (major, minor) = live
        .server_version()
        .await
        .map_err(|e| unreachable_error(sel, &live, e))?;
    ctx.printer.verbose(&format!(
        "connected to {} (Kubernetes {major}.{minor})",
        sel.describe(Some(&live))
    ));
    if need_marked && !is_lab_cluster(&live).await? {
        let ctx_name = live.context_name().unwrap_or("NAME").to_string();
        return Err(Error::environment(
            format!(
                "the cluster at {} is not marked as a kca lab cluster; kca only deletes lab objects in lab clusters",
                sel.describe(Some(&live))
            ),
            format!(
                "use the course cluster (`kca cluster up`), or mark this one: `kca cluster adopt --context {ctx_name}`"
            ),
        ));
    }
    Ok(live)
}

async fn connect(sel: &Selection) -> Result<Live> {
    Live::connect(sel.kubeconfig.as_deref(), sel.context.as_deref())
        .await
        .map_err(Error::from)
}

fn unreachable_error(sel: &Selection, live: &Live, e: LiveError) -> Error {
    let is_course = live.context_name() == Some(KIND_CONTEXT);
    match e {
        LiveError::Unreachable(m) | LiveError::Timeout(m) => Error::environment(
            format!(
                "the cluster at {} does not answer: {m}",
                sel.describe(Some(live))
            ),
            if is_course {
                "start the course cluster with `kca cluster up` (is the container engine running?)"
            } else {
                "check that the cluster is running and the context is right (`kubectl cluster-info`)"
            },
        ),
        other => other.into(),
    }
}

// ---- commands ----

/// Entry point from `app::dispatch`.
pub fn run(ctx: &Ctx, cmd: ClusterCommand) -> Result<Exit> {
    match cmd {
        ClusterCommand::Up(args) => ctx.block_on(up(ctx, &args)),
        ClusterCommand::Down => ctx.block_on(down(ctx)),
        ClusterCommand::Status(t) => ctx.block_on(status(ctx, &Selection::from(&t))),
        ClusterCommand::Adopt(t) => ctx.block_on(adopt(ctx, &Selection::from(&t))),
    }
}

fn path_var() -> OsString {
    std::env::var_os("PATH").unwrap_or_default()
}

async fn up(ctx: &Ctx, args: &UpArgs) -> Result<Exit> {
    let cfg = KindConfig::load(&ctx.settings.content_dir)?;
    let provider = std::env::var("KIND_EXPERIMENTAL_PROVIDER").ok();
    let tools = discover_tools(&path_var(), provider.as_deref(), !args.no_kyverno)?;
    check_engine(&tools).await?;
    let p = &ctx.printer;

    let version = exec(&tools.kind_version(), SHORT_TIMEOUT).await?;
    if let (Some(have), Some(want)) = (
        parse_kind_version(&version.stdout),
        parse_semver(&cfg.versions.kind),
    ) && have < want
    {
        p.warn(&format!(
            "kind {}.{}.{} is older than {} (the release cluster.yaml's node image was built for); if creation fails, upgrade kind",
            have.0, have.1, have.2, cfg.versions.kind
        ));
    }

    let clusters = exec(&tools.kind_get_clusters(), SHORT_TIMEOUT).await?;
    if clusters.stdout.lines().any(|l| l.trim() == CLUSTER_NAME) {
        p.status(&format!("kind cluster `{CLUSTER_NAME}` exists; reusing it"));
        exec(&tools.kind_export_kubeconfig(), SHORT_TIMEOUT).await?;
    } else {
        p.status(&format!(
            "creating kind cluster `{CLUSTER_NAME}` (Kubernetes {}) from {} — this takes a minute or two",
            cfg.versions.kubernetes,
            cfg.cluster.display()
        ));
        p.verbose(&format!("$ {}", tools.kind_create(&cfg.cluster)));
        exec(&tools.kind_create(&cfg.cluster), KIND_CREATE_TIMEOUT).await?;
    }

    let sel = Selection::course();
    let live = connect(&sel).await?;
    let (major, minor) = live
        .server_version()
        .await
        .map_err(|e| unreachable_error(&sel, &live, e))?;
    p.status(&format!(
        "API server answers at context `{KIND_CONTEXT}` (Kubernetes {major}.{minor})"
    ));
    mark_lab_cluster(&live, "kca cluster up").await?;

    if !args.no_kyverno {
        install_kyverno(ctx, &tools, &cfg).await?;
        wait_for_kyverno(ctx, &live).await?;
        let granted: Vec<String> = background_grants(&live)
            .await?
            .iter()
            .filter(|g| g.allowed)
            .map(grant_name)
            .collect();
        if !granted.is_empty() {
            p.warn(&format!(
                "the background controller can already create {} cluster-wide, so the generate lab's RBAC task would pass without the learner's work; check {} against the chart's values",
                granted.join(", "),
                cfg.values.display()
            ));
        }
    }
    let _ = live.take_warnings();
    p.status(&p.paint(Style::Pass, "ready:"));
    p.out(&format!(
        "cluster `{CLUSTER_NAME}` is ready at context `{KIND_CONTEXT}`{}",
        if args.no_kyverno {
            String::new()
        } else {
            format!(" with Kyverno {}", cfg.versions.kyverno)
        }
    ));
    Ok(Exit::Success)
}

async fn install_kyverno(ctx: &Ctx, tools: &Tools, cfg: &KindConfig) -> Result<()> {
    let p = &ctx.printer;
    let repo = &cfg.versions.kyverno_repo;
    let list = exec(&tools.helm_repo_list(), SHORT_TIMEOUT).await;
    // `helm repo list` fails when no repository is configured at all.
    let present = list.is_ok_and(|o| helm_repo_present(&o.stdout, repo));
    if !present {
        p.status(&format!(
            "adding Helm repository `{}` ({})",
            repo.name, repo.url
        ));
        exec(&tools.helm_repo_add(repo), SHORT_TIMEOUT).await?;
    }
    exec(&tools.helm_repo_update(repo), SHORT_TIMEOUT * 2).await?;
    p.status(&format!(
        "installing Kyverno {} (chart {}) with {} — a few minutes",
        cfg.versions.kyverno,
        cfg.versions.kyverno_chart,
        cfg.values.display()
    ));
    p.verbose(&format!("$ {}", tools.helm_install_kyverno(cfg)));
    exec(&tools.helm_install_kyverno(cfg), HELM_TIMEOUT).await?;
    Ok(())
}

/// Whether a Deployment has rolled out: the controller saw the latest spec, and every
/// desired replica is updated and available.
pub fn rollout_done(dep: &Value) -> bool {
    let n = |p: &str| dep.pointer(p).and_then(Value::as_i64);
    let desired = n("/spec/replicas").unwrap_or(1);
    let generation = n("/metadata/generation").unwrap_or(0);
    let observed = n("/status/observedGeneration").unwrap_or(-1);
    // Scaled to 0 is not ready: nothing would answer the webhook or process requests.
    desired >= 1
        && observed >= generation
        && n("/status/updatedReplicas").unwrap_or(0) >= desired
        && n("/status/availableReplicas").unwrap_or(0) >= desired
        && n("/status/replicas").unwrap_or(0) <= desired
}

fn replicas_text(dep: &Value) -> String {
    let n = |p: &str| dep.pointer(p).and_then(Value::as_i64).unwrap_or(0);
    format!(
        "{}/{}",
        n("/status/readyReplicas"),
        dep.pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(1)
    )
}

async fn wait_for_kyverno(ctx: &Ctx, live: &Live) -> Result<()> {
    let p = &ctx.printer;
    let until = tokio::time::Instant::now() + ROLLOUT_DEADLINE;
    let mut last = String::new();
    loop {
        let k = kyverno_state(live).await?;
        let pending: Vec<String> = k
            .deployments
            .iter()
            .filter(|d| !d.rolled_out)
            .map(|d| format!("{} {}", d.name, d.ready))
            .collect();
        let webhooks_ok = k.validating_webhooks > 0 && k.mutating_webhooks > 0;
        if pending.is_empty() && webhooks_ok {
            p.status(&format!(
                "Kyverno is rolled out; {} validating and {} mutating webhook configurations present",
                k.validating_webhooks, k.mutating_webhooks
            ));
            return Ok(());
        }
        let now = if pending.is_empty() {
            "waiting for Kyverno to register its webhook configurations".to_string()
        } else {
            format!("waiting for {}", pending.join(", "))
        };
        if now != last {
            p.status(&now);
            last = now;
        }
        if tokio::time::Instant::now() >= until {
            return Err(Error::environment(
                format!(
                    "Kyverno did not become ready within {}s ({last})",
                    ROLLOUT_DEADLINE.as_secs()
                ),
                "look at `kubectl -n kyverno get pods` and `kubectl -n kyverno describe pods`; then run `kca cluster up` again",
            ));
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
}

/// Kyverno as the cluster shows it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct KyvernoState {
    pub deployments: Vec<DeploymentState>,
    pub validating_webhooks: usize,
    pub mutating_webhooks: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeploymentState {
    pub name: String,
    pub present: bool,
    pub ready: String,
    pub rolled_out: bool,
    pub image: Option<String>,
}

impl KyvernoState {
    pub fn ready(&self) -> bool {
        self.deployments.iter().all(|d| d.rolled_out)
            && self.validating_webhooks > 0
            && self.mutating_webhooks > 0
    }
}

pub async fn kyverno_state(live: &Live) -> Result<KyvernoState, LiveError> {
    let found = live
        .list("apps/v1", "Deployment", Some(KYVERNO_NAMESPACE), "")
        .await?;
    let deployments = KYVERNO_DEPLOYMENTS
        .iter()
        .map(|name| {
            let dep = found
                .iter()
                .find(|d| d.pointer("/metadata/name").and_then(Value::as_str) == Some(name));
            DeploymentState {
                name: name.to_string(),
                present: dep.is_some(),
                ready: dep.map(replicas_text).unwrap_or_else(|| "absent".into()),
                rolled_out: dep.is_some_and(rollout_done),
                image: dep
                    .and_then(|d| d.pointer("/spec/template/spec/containers/0/image"))
                    .and_then(Value::as_str)
                    .map(str::to_string),
            }
        })
        .collect();
    let count = |kind: &'static str| async move {
        live.list(
            "admissionregistration.k8s.io/v1",
            kind,
            None,
            KYVERNO_WEBHOOK_SELECTOR,
        )
        .await
        .map(|v| v.len())
    };
    Ok(KyvernoState {
        deployments,
        validating_webhooks: count("ValidatingWebhookConfiguration").await?,
        mutating_webhooks: count("MutatingWebhookConfiguration").await?,
    })
}

/// Whether the background controller may create what the generate lab makes, cluster-wide.
#[derive(Debug, Clone, Serialize)]
pub struct Grant {
    pub group: String,
    pub resource: String,
    pub allowed: bool,
}

/// Asks the authorizer what the background controller may create ([`BACKGROUND_WRITES`]).
pub async fn background_grants(live: &Live) -> Result<Vec<Grant>, LiveError> {
    let id = Identity::service_account(KYVERNO_NAMESPACE, BACKGROUND_SA);
    let mut out = Vec::new();
    for (group, resource) in BACKGROUND_WRITES {
        let q = AccessQuery {
            user: id.user.clone(),
            groups: id.groups.clone(),
            verb: "create".into(),
            group: group.into(),
            resource: resource.into(),
            ..AccessQuery::default()
        };
        out.push(Grant {
            group: group.into(),
            resource: resource.into(),
            allowed: live.can_i(&q).await?.allowed,
        });
    }
    Ok(out)
}

fn grant_name(g: &Grant) -> String {
    if g.group.is_empty() {
        g.resource.clone()
    } else {
        format!("{}.{}", g.resource, g.group)
    }
}

async fn down(ctx: &Ctx) -> Result<Exit> {
    let provider = std::env::var("KIND_EXPERIMENTAL_PROVIDER").ok();
    let tools = discover_tools(&path_var(), provider.as_deref(), false)?;
    check_engine(&tools).await?;
    let clusters = exec(&tools.kind_get_clusters(), SHORT_TIMEOUT).await?;
    if !clusters.stdout.lines().any(|l| l.trim() == CLUSTER_NAME) {
        ctx.printer.out(&format!(
            "no kind cluster `{CLUSTER_NAME}`; nothing to delete"
        ));
        return Ok(Exit::Success);
    }
    ctx.printer
        .status(&format!("deleting kind cluster `{CLUSTER_NAME}`"));
    exec(&tools.kind_delete(), KIND_CREATE_TIMEOUT).await?;
    ctx.printer
        .out(&format!("deleted kind cluster `{CLUSTER_NAME}`"));
    Ok(Exit::Success)
}

/// `kca cluster status --output json`.
#[derive(Debug, Serialize)]
struct StatusReport {
    schema_version: u32,
    context: Option<String>,
    server_version: String,
    lab_cluster: bool,
    kyverno: KyvernoState,
    /// What the background controller may create cluster-wide (the generate lab's RBAC).
    background_controller_can_create: Vec<Grant>,
    ready: bool,
}

async fn status(ctx: &Ctx, sel: &Selection) -> Result<Exit> {
    let live = connect(sel).await?;
    let (major, minor) = live
        .server_version()
        .await
        .map_err(|e| unreachable_error(sel, &live, e))?;
    let marked = is_lab_cluster(&live).await?;
    let kyverno = kyverno_state(&live).await?;
    let grants = background_grants(&live).await?;
    let ready = marked && kyverno.ready();
    let report = StatusReport {
        schema_version: 1,
        context: live.context_name().map(str::to_string),
        server_version: format!("{major}.{minor}"),
        lab_cluster: marked,
        ready,
        kyverno,
        background_controller_can_create: grants,
    };
    let p = &ctx.printer;
    if p.output() == OutputFormat::Json {
        p.json(&report);
    } else {
        let yes_no = |b: bool, yes: &str, no: &str| {
            if b {
                p.paint(Style::Pass, yes)
            } else {
                p.paint(Style::Fail, no)
            }
        };
        p.out(&format!(
            "context      {}",
            report.context.as_deref().unwrap_or("(none)")
        ));
        p.out(&format!("kubernetes   {}", report.server_version));
        p.out(&format!(
            "lab cluster  {}",
            yes_no(
                marked,
                "yes",
                "no (run `kca cluster adopt` to allow labs to reset objects here)"
            )
        ));
        p.out("kyverno");
        for d in &report.kyverno.deployments {
            p.out(&format!(
                "  {:<32} {:<7} {}{}",
                d.name,
                d.ready,
                yes_no(
                    d.rolled_out,
                    "READY",
                    if d.present { "NOT READY" } else { "ABSENT" }
                ),
                d.image
                    .as_deref()
                    .map(|i| format!("  {i}"))
                    .unwrap_or_default()
            ));
        }
        p.out(&format!(
            "  webhooks: {} validating, {} mutating",
            report.kyverno.validating_webhooks, report.kyverno.mutating_webhooks
        ));
        for g in &report.background_controller_can_create {
            p.out(&format!(
                "  background controller may create {}: {}",
                grant_name(g),
                if g.allowed { "yes" } else { "no" }
            ));
        }
        p.out(&format!("ready        {}", yes_no(ready, "yes", "no")));
    }
    Ok(if ready {
        Exit::Success
    } else {
        Exit::NotPassed
    })
}

async fn adopt(ctx: &Ctx, sel: &Selection) -> Result<Exit> {
    let live = connect(sel).await?;
    live.server_version()
        .await
        .map_err(|e| unreachable_error(sel, &live, e))?;
    let already = is_lab_cluster(&live).await?;
    mark_lab_cluster(&live, "kca cluster adopt").await?;
    ctx.printer.out(&format!(
        "{} the cluster at {} as a kca lab cluster: lab reset may now delete objects labelled as owned by a lab there",
        if already { "re-marked" } else { "marked" },
        sel.describe(Some(&live))
    ));
    Ok(Exit::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_bin(dir: &Path, name: &str, script: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    fn course_config() -> KindConfig {
        KindConfig::load(Path::new(env!("CARGO_MANIFEST_DIR"))).expect("kind-config loads")
    }

    #[test]
    fn missing_kind_names_it_and_how_to_install() {
        let dir = tempfile::tempdir().unwrap();
        let e = discover_tools(dir.path().as_os_str(), None, true).unwrap_err();
        assert_eq!(e.exit(), Exit::Environment);
        assert!(e.to_string().contains("`kind` is not installed"), "{e}");
        assert!(e.hint().unwrap().contains("kind.sigs.k8s.io"));
    }

    #[test]
    fn missing_helm_is_an_error_only_when_needed() {
        let dir = tempfile::tempdir().unwrap();
        fake_bin(dir.path(), "kind", "exit 0");
        fake_bin(dir.path(), "docker", "exit 0");
        let e = discover_tools(dir.path().as_os_str(), None, true).unwrap_err();
        assert!(e.to_string().contains("`helm` is not installed"), "{e}");
        assert!(e.hint().unwrap().contains("helm.sh"));
        let t = discover_tools(dir.path().as_os_str(), None, false).unwrap();
        assert!(t.helm.is_none());
    }

    #[test]
    fn missing_container_engine_names_docker_and_podman() {
        let dir = tempfile::tempdir().unwrap();
        fake_bin(dir.path(), "kind", "exit 0");
        fake_bin(dir.path(), "helm", "exit 0");
        let e = discover_tools(dir.path().as_os_str(), None, true).unwrap_err();
        assert!(e.to_string().contains("docker or podman"), "{e}");
        assert!(e.hint().unwrap().contains("Podman"));
        assert_eq!(e.exit(), Exit::Environment);
    }

    #[test]
    fn a_non_executable_file_is_not_a_program() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("kind"), "not a program").unwrap();
        assert!(find_program(dir.path().as_os_str(), "kind").is_none());
    }

    #[test]
    fn podman_is_used_when_docker_is_absent_and_kind_is_told() {
        let dir = tempfile::tempdir().unwrap();
        fake_bin(dir.path(), "kind", "exit 0");
        fake_bin(dir.path(), "podman", "exit 0");
        let t = discover_tools(dir.path().as_os_str(), None, false).unwrap();
        assert_eq!(t.engine.name, "podman");
        assert_eq!(
            t.kind_delete().env,
            vec![(
                "KIND_EXPERIMENTAL_PROVIDER".to_string(),
                "podman".to_string()
            )]
        );
    }

    #[test]
    fn provider_variable_restricts_the_engine() {
        let dir = tempfile::tempdir().unwrap();
        fake_bin(dir.path(), "kind", "exit 0");
        fake_bin(dir.path(), "docker", "exit 0");
        let e = discover_tools(dir.path().as_os_str(), Some("podman"), false).unwrap_err();
        assert!(e.to_string().contains("podman"), "{e}");
    }

    fn tools_in(dir: &Path) -> Tools {
        fake_bin(dir, "kind", "exit 0");
        fake_bin(dir, "helm", "exit 0");
        fake_bin(dir, "docker", "exit 0");
        discover_tools(dir.as_os_str(), None, true).unwrap()
    }

    #[test]
    fn kind_commands() {
        let dir = tempfile::tempdir().unwrap();
        let t = tools_in(dir.path());
        let cfg = course_config();
        let create = t.kind_create(&cfg.cluster);
        assert_eq!(create.program, dir.path().join("kind"));
        assert_eq!(
            create.args,
            vec![
                "create".to_string(),
                "cluster".into(),
                "--name".into(),
                "kca".into(),
                "--config".into(),
                cfg.cluster.to_string_lossy().into_owned(),
                "--wait".into(),
                "180s".into(),
            ]
        );
        assert!(create.env.is_empty(), "docker is kind's default");
        assert_eq!(
            t.kind_delete().args,
            vec!["delete", "cluster", "--name", "kca"]
        );
        assert_eq!(t.kind_get_clusters().args, vec!["get", "clusters"]);
        assert_eq!(
            t.kind_export_kubeconfig().args,
            vec!["export", "kubeconfig", "--name", "kca"]
        );
        assert_eq!(t.engine_info().args, vec!["info"]);
    }

    #[test]
    fn helm_commands_pin_the_chart_and_the_context() {
        let dir = tempfile::tempdir().unwrap();
        let t = tools_in(dir.path());
        let cfg = course_config();
        let install = t.helm_install_kyverno(&cfg);
        assert_eq!(
            install.to_string(),
            format!(
                "helm upgrade --install kyverno kyverno/kyverno --version 3.9.1 --namespace kyverno --create-namespace --values {} --kube-context kind-kca --wait --timeout 10m",
                cfg.values.display()
            )
        );
        let repo = &cfg.versions.kyverno_repo;
        assert_eq!(
            t.helm_repo_add(repo).args,
            vec![
                "repo",
                "add",
                "kyverno",
                "https://kyverno.github.io/kyverno/"
            ]
        );
        assert_eq!(
            t.helm_repo_update(repo).args,
            vec!["repo", "update", "kyverno"]
        );
        assert_eq!(
            t.helm_repo_list().args,
            vec!["repo", "list", "--output", "json"]
        );
    }

    #[test]
    fn helm_repo_list_detection() {
        let repo = HelmRepo {
            name: "kyverno".into(),
            url: "https://kyverno.github.io/kyverno/".into(),
        };
        assert!(helm_repo_present(
            r#"[{"name":"bitnami","url":"https://charts.bitnami.com/bitnami"},{"name":"kyverno","url":"https://kyverno.github.io/kyverno"}]"#,
            &repo
        ));
        assert!(!helm_repo_present(
            r#"[{"name":"kyverno","url":"https://example.com/other"}]"#,
            &repo
        ));
        assert!(!helm_repo_present("", &repo));
    }

    #[test]
    fn kind_version_parsing() {
        assert_eq!(
            parse_kind_version("kind v0.33.0 go1.25.1 linux/amd64\n"),
            Some((0, 33, 0))
        );
        assert_eq!(
            parse_kind_version("kind v0.31.0-alpha+abc go1.24 linux/arm64"),
            Some((0, 31, 0))
        );
        assert_eq!(parse_kind_version("garbage"), None);
    }

    #[test]
    fn course_kind_config_pins_the_node_image_by_digest_and_versions_agree() {
        let cfg = course_config();
        let text = std::fs::read_to_string(&cfg.cluster).unwrap();
        let doc = &crate::yaml::parse_json_stream(&text).unwrap()[0];
        assert_eq!(doc["name"], CLUSTER_NAME);
        let nodes = doc["nodes"].as_array().unwrap();
        assert!(!nodes.is_empty());
        for node in nodes {
            let image = node["image"].as_str().unwrap();
            let (tag, digest) = image
                .split_once("@sha256:")
                .expect("image pinned by digest");
            assert_eq!(digest.len(), 64, "{image}");
            assert!(digest.chars().all(|c| c.is_ascii_hexdigit()));
            assert_eq!(tag, format!("kindest/node:{}", cfg.versions.kubernetes));
        }
        assert!(parse_semver(&cfg.versions.kind).is_some());
        assert!(parse_semver(&cfg.versions.kyverno_chart).is_some());
    }

    #[test]
    fn course_values_take_the_background_controllers_write_grants_away() {
        let cfg = course_config();
        let text = std::fs::read_to_string(&cfg.values).unwrap();
        let v = &crate::yaml::parse_json_stream(&text).unwrap()[0];
        let rbac = &v["backgroundController"]["rbac"];
        assert_eq!(rbac["coreClusterRole"]["extraResources"], json!([]));
        assert_eq!(rbac["clusterRole"]["extraResources"], json!([]));
    }

    #[test]
    fn missing_kind_config_is_an_environment_error() {
        let dir = tempfile::tempdir().unwrap();
        let e = KindConfig::load(dir.path()).unwrap_err();
        assert_eq!(e.exit(), Exit::Environment);
        assert!(e.to_string().contains("cluster.yaml"));
    }

    #[test]
    fn rollout_states() {
        let done = json!({"metadata": {"generation": 2}, "spec": {"replicas": 1},
            "status": {"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1}});
        assert!(rollout_done(&done));
        let old_generation = json!({"metadata": {"generation": 3}, "spec": {"replicas": 1},
            "status": {"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1}});
        assert!(!rollout_done(&old_generation));
        let surging = json!({"metadata": {"generation": 2}, "spec": {"replicas": 1},
            "status": {"observedGeneration": 2, "replicas": 2, "updatedReplicas": 1, "availableReplicas": 1}});
        assert!(!rollout_done(&surging));
        let starting = json!({"metadata": {"generation": 1}, "spec": {"replicas": 1},
            "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1}});
        assert!(!rollout_done(&starting));
        assert_eq!(replicas_text(&done), "1/1");
    }

    #[test]
    fn marker_object_shape() {
        let m = marker_object("kca cluster adopt", Some("prod-like"));
        assert_eq!(m["metadata"]["namespace"], MARKER_NAMESPACE);
        assert_eq!(m["metadata"]["name"], MARKER_NAME);
        assert_eq!(m["metadata"]["labels"][MARKER_LABEL], "true");
        assert_eq!(m["data"]["markedBy"], "kca cluster adopt");
        assert_eq!(m["data"]["context"], "prod-like");
    }

    #[tokio::test]
    async fn a_failing_tool_is_an_environment_error_with_its_output() {
        let dir = tempfile::tempdir().unwrap();
        let prog = fake_bin(
            dir.path(),
            "kind",
            "echo 'ERROR: failed to create cluster: port is already allocated' >&2; exit 1",
        );
        let cmd = Cmd {
            program: prog,
            args: vec!["create".into()],
            env: vec![],
        };
        let e = exec(&cmd, Duration::from_secs(10)).await.err().unwrap();
        assert_eq!(e.exit(), Exit::Environment);
        assert!(e.to_string().contains("port is already allocated"), "{e}");
    }

    #[tokio::test]
    async fn a_stopped_engine_is_reported_as_not_answering() {
        let dir = tempfile::tempdir().unwrap();
        fake_bin(dir.path(), "kind", "exit 0");
        fake_bin(
            dir.path(),
            "docker",
            "echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock' >&2; exit 1",
        );
        let tools = discover_tools(dir.path().as_os_str(), None, false).unwrap();
        let e = check_engine(&tools).await.unwrap_err();
        assert!(e.to_string().contains("docker is installed"), "{e}");
        assert!(e.to_string().contains("not answering"), "{e}");
    }

    #[tokio::test]
    async fn env_reaches_the_tool() {
        let dir = tempfile::tempdir().unwrap();
        fake_bin(
            dir.path(),
            "kind",
            "echo \"provider=$KIND_EXPERIMENTAL_PROVIDER args=$*\"",
        );
        fake_bin(dir.path(), "podman", "exit 0");
        let tools = discover_tools(dir.path().as_os_str(), None, false).unwrap();
        let out = exec(&tools.kind_get_clusters(), Duration::from_secs(10))
            .await
            .unwrap();
        assert_eq!(out.stdout.trim(), "provider=podman args=get clusters");
    }
}

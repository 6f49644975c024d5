//! `kca cluster …`: the commands (up, down, status, adopt) for the course kind cluster and
//! its Kyverno install. Split by concern: `tools` (kind, helm, the container engine and
//! `kind-config/`), `marker` (which cluster, and the lab-cluster guard), `kyverno` (its
//! readiness and grants). It talks to the API server only through `target::live`, and
//! never edits kubeconfig files itself (kind does that).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::cli::cluster::{ClusterCommand, TargetArgs, UpArgs};
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::settings::{Lang, OutputFormat};
use crate::target::live::{Live, LiveError};
use crate::target::{AccessQuery, Identity, ObjRef};
use crate::ui::Style;
use crate::ui::{tr, tr_s};

mod kyverno;
mod marker;
mod tools;

pub use kyverno::*;
pub use marker::*;
pub use tools::*;

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

/// How to get each tool `kca cluster up` needs, in both languages (ja, en).
const KIND_INSTALL_HINT: (&str, &str) = (
    "kind を入れます (https://kind.sigs.k8s.io/docs/user/quick-start/#installation)。例: `go install sigs.k8s.io/kind@v0.33.0`",
    "install kind (https://kind.sigs.k8s.io/docs/user/quick-start/#installation), e.g. `go install sigs.k8s.io/kind@v0.33.0`",
);
const HELM_INSTALL_HINT: (&str, &str) = (
    "Helm 3 を入れます (https://helm.sh/docs/intro/install/)",
    "install Helm 3 (https://helm.sh/docs/intro/install/)",
);
const ENGINE_INSTALL_HINT: (&str, &str) = (
    "Docker (https://docs.docker.com/engine/install/) か Podman (https://podman.io/docs/installation) を入れて起動します",
    "install and start Docker (https://docs.docker.com/engine/install/) or Podman (https://podman.io/docs/installation)",
);
/// Said after the ways to get the tools.
const AGAIN: (&str, &str) = (
    "入れたら `kca cluster up` をもう一度実行します",
    "then run `kca cluster up` again",
);

const ROLLOUT_DEADLINE: Duration = Duration::from_secs(300);
const KIND_CREATE_TIMEOUT: Duration = Duration::from_secs(600);
const HELM_TIMEOUT: Duration = Duration::from_secs(900);
const SHORT_TIMEOUT: Duration = Duration::from_secs(60);

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
    let lang = ctx.settings.lang;
    let tools = discover_tools(lang, &path_var(), provider.as_deref(), !args.no_kyverno)?;
    check_engine(lang, &tools).await?;
    let p = &ctx.printer;

    let version = exec(&tools.kind_version(), SHORT_TIMEOUT).await?;
    if let (Some(have), Some(want)) = (
        parse_kind_version(&version.stdout),
        parse_semver(&cfg.versions.kind),
    ) && have < want
    {
        p.warn(&tr_s(
            lang,
            format!(
                "kind v{have} は {} (cluster.yaml のノードイメージが作られた版) より古いです。作成に失敗したら kind を上げてください",
                cfg.versions.kind
            ),
            format!(
                "kind v{have} is older than {} (the release cluster.yaml's node image was built for); if creation fails, upgrade kind",
                cfg.versions.kind
            ),
        ));
    }

    let clusters = exec(&tools.kind_get_clusters(), SHORT_TIMEOUT).await?;
    if clusters.stdout.lines().any(|l| l.trim() == CLUSTER_NAME) {
        p.status(&tr_s(
            lang,
            format!("kind クラスター `{CLUSTER_NAME}` があるので、それを使います"),
            format!("kind cluster `{CLUSTER_NAME}` exists; reusing it"),
        ));
        exec(&tools.kind_export_kubeconfig(), SHORT_TIMEOUT).await?;
    } else {
        p.status(&tr_s(
            lang,
            format!(
                "kind クラスター `{CLUSTER_NAME}` (Kubernetes {}) を {} から作ります — 1、2 分かかります",
                cfg.versions.kubernetes,
                cfg.cluster.display()
            ),
            format!(
                "creating kind cluster `{CLUSTER_NAME}` (Kubernetes {}) from {} — this takes a minute or two",
                cfg.versions.kubernetes,
                cfg.cluster.display()
            ),
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
    p.status(&tr_s(
        lang,
        format!(
            "コンテキスト `{KIND_CONTEXT}` の API サーバーが答えました (Kubernetes {major}.{minor})"
        ),
        format!("API server answers at context `{KIND_CONTEXT}` (Kubernetes {major}.{minor})"),
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
            p.warn(&tr_s(
                lang,
                format!(
                    "バックグラウンドコントローラーはすでにクラスター全体で {} を作れるので、generate ラボの RBAC のタスクは何もしなくても通ってしまいます。{} をチャートの values と比べてください",
                    granted.join(", "),
                    cfg.values.display()
                ),
                format!(
                    "the background controller can already create {} cluster-wide, so the generate lab's RBAC task would pass without the learner's work; check {} against the chart's values",
                    granted.join(", "),
                    cfg.values.display()
                ),
            ));
        }
    }
    let _ = live.take_warnings();
    p.status(&p.paint(Style::Pass, tr(lang, "準備完了:", "ready:")));
    let with = |ja: &str, en: &str| {
        if args.no_kyverno {
            String::new()
        } else {
            tr_s(lang, ja.into(), en.into())
        }
    };
    p.out(&tr_s(
        lang,
        format!(
            "クラスター `{CLUSTER_NAME}` はコンテキスト `{KIND_CONTEXT}` で使えます{}",
            with(&format!(" (Kyverno {})", cfg.versions.kyverno), "")
        ),
        format!(
            "cluster `{CLUSTER_NAME}` is ready at context `{KIND_CONTEXT}`{}",
            with("", &format!(" with Kyverno {}", cfg.versions.kyverno))
        ),
    ));
    Ok(Exit::Success)
}

async fn install_kyverno(ctx: &Ctx, tools: &Tools, cfg: &KindConfig) -> Result<()> {
    let p = &ctx.printer;
    let lang = ctx.settings.lang;
    let repo = &cfg.versions.kyverno_repo;
    let list = exec(&tools.helm_repo_list(), SHORT_TIMEOUT).await;
    // `helm repo list` fails when no repository is configured at all.
    let present = list.is_ok_and(|o| helm_repo_present(&o.stdout, repo));
    if !present {
        p.status(&tr_s(
            lang,
            format!("Helm リポジトリ `{}` ({}) を足します", repo.name, repo.url),
            format!("adding Helm repository `{}` ({})", repo.name, repo.url),
        ));
        exec(&tools.helm_repo_add(repo), SHORT_TIMEOUT).await?;
    }
    exec(&tools.helm_repo_update(repo), SHORT_TIMEOUT * 2).await?;
    p.status(&tr_s(
        lang,
        format!(
            "Kyverno {} (チャート {}) を {} で入れます — 数分かかります",
            cfg.versions.kyverno,
            cfg.versions.kyverno_chart,
            cfg.values.display()
        ),
        format!(
            "installing Kyverno {} (chart {}) with {} — a few minutes",
            cfg.versions.kyverno,
            cfg.versions.kyverno_chart,
            cfg.values.display()
        ),
    ));
    p.verbose(&format!("$ {}", tools.helm_install_kyverno(cfg)));
    exec(&tools.helm_install_kyverno(cfg), HELM_TIMEOUT).await?;
    Ok(())
}

async fn down(ctx: &Ctx) -> Result<Exit> {
    let provider = std::env::var("KIND_EXPERIMENTAL_PROVIDER").ok();
    let lang = ctx.settings.lang;
    let tools = discover_tools(lang, &path_var(), provider.as_deref(), false)?;
    check_engine(lang, &tools).await?;
    let clusters = exec(&tools.kind_get_clusters(), SHORT_TIMEOUT).await?;
    if !clusters.stdout.lines().any(|l| l.trim() == CLUSTER_NAME) {
        ctx.printer.out(&tr_s(
            lang,
            format!("kind クラスター `{CLUSTER_NAME}` はありません。消すものはありません"),
            format!("no kind cluster `{CLUSTER_NAME}`; nothing to delete"),
        ));
        return Ok(Exit::Success);
    }
    ctx.printer.status(&tr_s(
        lang,
        format!("kind クラスター `{CLUSTER_NAME}` を消します"),
        format!("deleting kind cluster `{CLUSTER_NAME}`"),
    ));
    exec(&tools.kind_delete(), KIND_CREATE_TIMEOUT).await?;
    ctx.printer.out(&tr_s(
        lang,
        format!("kind クラスター `{CLUSTER_NAME}` を消しました"),
        format!("deleted kind cluster `{CLUSTER_NAME}`"),
    ));
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
        let lang = ctx.settings.lang;
        p.out(&format!(
            "lab cluster  {}",
            yes_no(
                marked,
                tr(lang, "はい", "yes"),
                tr(
                    lang,
                    "いいえ (`kca cluster adopt` で、ラボがここのオブジェクトを戻せるようにします)",
                    "no (run `kca cluster adopt` to allow labs to reset objects here)"
                )
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
            p.out(&tr_s(
                lang,
                format!(
                    "  バックグラウンドコントローラーは {} を作れるか: {}",
                    grant_name(g),
                    if g.allowed { "はい" } else { "いいえ" }
                ),
                format!(
                    "  background controller may create {}: {}",
                    grant_name(g),
                    if g.allowed { "yes" } else { "no" }
                ),
            ));
        }
        p.out(&format!(
            "ready        {}",
            yes_no(ready, tr(lang, "はい", "yes"), tr(lang, "いいえ", "no"))
        ));
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
    ctx.printer.out(&tr_s(
        ctx.settings.lang,
        format!(
            "{} のクラスターを kca のラボクラスターとして{}: lab reset はここでラボのラベルの付いたオブジェクトを消せます",
            sel.describe_ja(Some(&live)),
            if already { "印を付け直しました" } else { "印を付けました" }
        ),
        format!(
            "{} the cluster at {} as a kca lab cluster: lab reset may now delete objects labelled as owned by a lab there",
            if already { "re-marked" } else { "marked" },
            sel.describe(Some(&live))
        ),
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
        let e = discover_tools(Lang::En, dir.path().as_os_str(), None, true).unwrap_err();
        assert_eq!(e.exit(), Exit::Environment);
        assert!(e.to_string().contains("`kind` is not installed"), "{e}");
        assert!(e.hint().unwrap().contains("kind.sigs.k8s.io"));
    }

    #[test]
    fn missing_helm_is_an_error_only_when_needed() {
        let dir = tempfile::tempdir().unwrap();
        fake_bin(dir.path(), "kind", "exit 0");
        fake_bin(dir.path(), "docker", "exit 0");
        let e = discover_tools(Lang::En, dir.path().as_os_str(), None, true).unwrap_err();
        assert!(e.to_string().contains("`helm` is not installed"), "{e}");
        assert!(e.hint().unwrap().contains("helm.sh"));
        let t = discover_tools(Lang::En, dir.path().as_os_str(), None, false).unwrap();
        assert!(t.helm.is_none());
    }

    #[test]
    fn missing_container_engine_names_docker_and_podman() {
        let dir = tempfile::tempdir().unwrap();
        fake_bin(dir.path(), "kind", "exit 0");
        fake_bin(dir.path(), "helm", "exit 0");
        let e = discover_tools(Lang::En, dir.path().as_os_str(), None, true).unwrap_err();
        assert!(e.to_string().contains("docker or podman"), "{e}");
        assert!(e.hint().unwrap().contains("Podman"));
        assert_eq!(e.exit(), Exit::Environment);
    }

    #[test]
    fn every_missing_tool_is_named_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let e = discover_tools(Lang::En, dir.path().as_os_str(), None, true).unwrap_err();
        let (what, how) = (e.to_string(), e.hint().unwrap().to_string());
        for tool in ["`kind`", "`helm`", "docker or podman"] {
            assert!(what.contains(tool), "{what}");
        }
        for site in ["kind.sigs.k8s.io", "helm.sh", "podman.io"] {
            assert!(how.contains(site), "{how}");
        }
    }

    #[test]
    fn every_missing_tool_is_named_at_once_in_japanese() {
        let dir = tempfile::tempdir().unwrap();
        let e = discover_tools(Lang::Ja, dir.path().as_os_str(), None, true).unwrap_err();
        let (what, how) = (e.to_string(), e.hint().unwrap().to_string());
        for tool in ["kind", "helm", "docker か podman", "ありません"] {
            assert!(what.contains(tool), "{what}");
        }
        assert!(!what.contains("not installed"), "one language: {what}");
        for site in ["kind.sigs.k8s.io", "helm.sh", "podman.io", "もう一度"] {
            assert!(how.contains(site), "{how}");
        }
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
        let t = discover_tools(Lang::En, dir.path().as_os_str(), None, false).unwrap();
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
        let e =
            discover_tools(Lang::En, dir.path().as_os_str(), Some("podman"), false).unwrap_err();
        assert!(e.to_string().contains("podman"), "{e}");
    }

    fn tools_in(dir: &Path) -> Tools {
        fake_bin(dir, "kind", "exit 0");
        fake_bin(dir, "helm", "exit 0");
        fake_bin(dir, "docker", "exit 0");
        discover_tools(Lang::En, dir.as_os_str(), None, true).unwrap()
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
        let v = |s: &str| semver::Version::parse(s).unwrap();
        assert_eq!(
            parse_kind_version("kind v0.33.0 go1.25.1 linux/amd64\n"),
            Some(v("0.33.0"))
        );
        assert_eq!(
            parse_kind_version("kind v0.31.0-alpha+abc go1.24 linux/arm64"),
            Some(v("0.31.0-alpha+abc"))
        );
        assert_eq!(parse_kind_version("garbage"), None);
        // A pre-release of the pinned kind is older than the release: it warns.
        let alpha = parse_kind_version("kind v0.33.0-alpha go1.25 linux/amd64").unwrap();
        assert!(alpha < parse_semver("v0.33.0").unwrap());
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
        let tools = discover_tools(Lang::En, dir.path().as_os_str(), None, false).unwrap();
        let e = check_engine(Lang::En, &tools).await.unwrap_err();
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
        let tools = discover_tools(Lang::En, dir.path().as_os_str(), None, false).unwrap();
        let out = exec(&tools.kind_get_clusters(), Duration::from_secs(10))
            .await
            .unwrap();
        assert_eq!(out.stdout.trim(), "provider=podman args=get clusters");
    }
}

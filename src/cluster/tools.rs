//! The programs `kca cluster` drives (kind, helm, a container engine): finding them on
//! PATH, the commands built for them, and running them through `crate::exec`; the pinned
//! versions and files of `kind-config/`. No API-server requests here.

use super::*;

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
                    crate::error::msg(
                        format!("{} がありません", p.display()),
                        format!("{} is missing", p.display()),
                    ),
                    crate::error::msg(
                        "--content-dir (か KCA_CONTENT_DIR) で kind-config/ のあるコースのフォルダーを指定します",
                        "point --content-dir (or KCA_CONTENT_DIR) at the course folder that holds kind-config/",
                    ),
                ));
            }
        }
        let text = crate::input::read_text(&versions_path)?;
        let doc = crate::yaml::parse_json_stream(&text)
            .map_err(|e| {
                Error::usage_with(
                    crate::error::msg(
                        format!("{} は YAML として読めません", versions_path.display()),
                        format!("{} is not valid YAML", versions_path.display()),
                    ),
                    crate::error::msg("YAML を直します", "fix the YAML"),
                    e,
                )
            })?
            .into_iter()
            .next()
            .unwrap_or(Value::Null);
        let versions: Versions = serde_json::from_value(doc).map_err(|e| {
            let p = versions_path.display();
            Error::usage_with(
                crate::error::msg(
                    format!("{p} に使うバージョンが書かれていません"),
                    format!("{p} does not say which versions to use"),
                ),
                crate::error::msg(
                    "versions.yaml には kind・kubernetes・kyverno・kyvernoChart・kyvernoRepo {name, url} が要ります",
                    "versions.yaml needs kind, kubernetes, kyverno, kyvernoChart and kyvernoRepo {name, url}",
                ),
                e,
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

pub(super) fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Finds kind, helm (when `need_helm`) and a container engine. `provider` is
/// `KIND_EXPERIMENTAL_PROVIDER`, which kind itself reads to pick podman over docker.
/// Every missing tool is named at once, each with how to get it (one run, not one per tool).
pub fn discover_tools(
    lang: Lang,
    path_var: &OsStr,
    provider: Option<&str>,
    need_helm: bool,
) -> Result<Tools> {
    let t = |h: (&'static str, &'static str)| tr(lang, h.0, h.1);
    let mut missing: Vec<(String, &str)> = Vec::new();
    let kind = find_program(path_var, "kind");
    if kind.is_none() {
        missing.push((
            t((
                "kind (コースのクラスターを作ります)",
                "`kind` is not installed (not found on PATH); kca creates the course cluster with it",
            ))
            .into(),
            t(KIND_INSTALL_HINT),
        ));
    }
    let helm = find_program(path_var, "helm");
    if need_helm && helm.is_none() {
        missing.push((
            t((
                "helm (Kyverno を入れます)",
                "`helm` is not installed (not found on PATH); kca installs Kyverno with it",
            ))
            .into(),
            t(HELM_INSTALL_HINT),
        ));
    }
    let candidates: Vec<&str> = match provider.filter(|p| !p.is_empty()) {
        Some(p) => vec![p],
        None => vec!["docker", "podman"],
    };
    let engine = candidates.iter().find_map(|name| {
        find_program(path_var, name).map(|path| Engine {
            name: name.to_string(),
            path,
        })
    });
    if engine.is_none() {
        missing.push((
            tr_s(
                lang,
                format!(
                    "コンテナーエンジン (kind はノードを {} で動かします)",
                    candidates.join(" か ")
                ),
                format!(
                    "no container engine: kind runs its node in {}, and none is on PATH",
                    candidates.join(" or ")
                ),
            ),
            t(ENGINE_INSTALL_HINT),
        ));
    }
    match (kind, engine) {
        (Some(kind), Some(engine)) if missing.is_empty() => Ok(Tools { kind, helm, engine }),
        _ => {
            let (what, how): (Vec<String>, Vec<&str>) = missing.into_iter().unzip();
            let message = match lang {
                Lang::Ja => format!(
                    "`kca cluster up` に必要なツールが PATH にありません:\n{}",
                    what.iter()
                        .map(|w| format!("・{w}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                ),
                Lang::En => what.join("; "),
            };
            let mut steps: Vec<String> = if how.len() == 1 {
                vec![how[0].to_string()]
            } else {
                how.iter()
                    .enumerate()
                    .map(|(i, h)| format!("{}) {h}", i + 1))
                    .collect()
            };
            steps.push(t(AGAIN).to_string());
            Err(Error::environment(message, steps.join("\n")))
        }
    }
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
pub(super) struct Output {
    pub(super) stdout: String,
}

/// Runs a command, capturing its output; a non-zero exit is an environment error showing
/// the end of what it printed.
pub(super) async fn exec(cmd: &Cmd, timeout: Duration) -> Result<Output> {
    let mut command = std::process::Command::new(&cmd.program);
    command
        .args(&cmd.args)
        .envs(cmd.env.iter().map(|(k, v)| (k, v)));
    let out = crate::exec::run_async(crate::exec::Job::new(command, timeout).in_foreground())
        .await
        .map_err(|e| {
            Error::environment_with(
                crate::error::msg(
                    format!("`{cmd}` を実行できません"),
                    format!("cannot run `{cmd}`"),
                ),
                crate::error::msg(
                    "プログラムが入っていて実行できるかを確かめます",
                    "check that the program is installed and executable",
                ),
                e,
            )
        })?;
    let stdout = out.stdout.text();
    match &out.end {
        crate::exec::End::TimedOut => {
            let secs = timeout.as_secs();
            Err(Error::environment(
                crate::error::msg(
                    format!("`{cmd}` が {secs} 秒以内に終わりませんでした"),
                    format!("`{cmd}` did not finish within {secs}s"),
                ),
                crate::error::msg(
                    "コンテナーエンジンとネットワークを確かめてから、もう一度実行します",
                    "check the container engine and network, then run the command again",
                ),
            ))
        }
        crate::exec::End::Exited(status) if !status.success() => {
            let said = tail(&format!("{stdout}{}", out.stderr.text()), 15);
            Err(Error::environment(
                crate::error::msg(
                    format!("`{cmd}` が失敗しました ({status}):\n{said}"),
                    format!("`{cmd}` failed ({status}):\n{said}"),
                ),
                crate::error::msg(
                    "上のツールのメッセージを読みます。`kca cluster down` のあと `kca cluster up` でやり直せます",
                    "read the tool's message above; `kca cluster down` then `kca cluster up` starts over",
                ),
            ))
        }
        crate::exec::End::Exited(_) => Ok(Output { stdout }),
    }
}

pub(super) fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The container engine must answer, not just be installed: kind's own error for a stopped
/// daemon is long and easy to misread.
pub(super) async fn check_engine(lang: Lang, tools: &Tools) -> Result<()> {
    exec(&tools.engine_info(), SHORT_TIMEOUT)
        .await
        .map(|_| ())
        .map_err(|e| {
            Error::environment_with(
                tr_s(
                    lang,
                    format!(
                        "{} は入っています ({}) が答えません — デーモン/サービスは動いていますか?",
                        tools.engine.name,
                        tools.engine.path.display()
                    ),
                    format!(
                        "{} is installed ({}) but not answering — is its daemon/service running?",
                        tools.engine.name,
                        tools.engine.path.display()
                    ),
                ),
                format!(
                    "{}\n{}",
                    tr(lang, ENGINE_INSTALL_HINT.0, ENGINE_INSTALL_HINT.1),
                    tr(lang, AGAIN.0, AGAIN.1)
                ),
                e,
            )
        })
}

/// `kind version` prints e.g. `kind v0.33.0 go1.25.1 linux/amd64`.
pub fn parse_kind_version(out: &str) -> Option<semver::Version> {
    let word = out.split_whitespace().find(|w| w.starts_with('v'))?;
    parse_semver(word)
}

/// `v0.33.0`, `v0.31.0-alpha+abc` as semantic versions (a pre-release sorts before its
/// release, so `v0.33.0-alpha` is older than `v0.33.0`).
pub(super) fn parse_semver(v: &str) -> Option<semver::Version> {
    semver::Version::parse(v.strip_prefix('v').unwrap_or(v)).ok()
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

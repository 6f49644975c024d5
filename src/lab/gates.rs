//! kca-gates' graders, in kca itself (they were Python and shell, and needed python3 and
//! PyYAML): a kustomize render parsed in-process and graded by a policy, the learner's
//! gate run on renders it must pass or stop, and which workloads each Service selects.
//! A render is made once per content of the kustomize tree (`kubectl kustomize`, kept in
//! memory under the relative paths and bytes of every file below it, one render at a time
//! per content), so the checks of a variant — and variants whose trees are equal — share
//! it. A lab's `command` check runs these graders in-process (`lab::inproc`), in the
//! check's workspace and with the environment the check gives its programs ([`Place`]).
//! Exit codes: 0 graded as wanted, 1 not, 2 the render cannot be built, 77 `kubectl` is
//! missing (the check's `skipExit`: cannot judge here).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::cli::policy::GraderCommand;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::settings::Lang;
use crate::ui::{tr, tr_s};

mod catches;
mod render;
use render::{RenderError, render};

const SKIP: Exit = Exit::Chosen(77);
const NO_RENDER: Exit = Exit::Chosen(2);
const GATE_TIMEOUT: Duration = Duration::from_secs(100);

/// Where a grader works: the workspace its relative paths name (the process's working
/// directory when run as `kca policy grader …`), and the environment variables the
/// programs it starts get on top of kca's own (a lab check's `KCA_LANG`, `PATH`, …).
#[derive(Debug, Clone, Default)]
pub struct Place {
    pub cwd: PathBuf,
    pub env: Vec<(String, std::ffi::OsString)>,
}

impl Place {
    /// The process's working directory (an empty `cwd`), nothing added.
    fn here() -> Place {
        Place::default()
    }

    /// `path` as the grader reads it: relative to `cwd`.
    fn at(&self, path: &Path) -> PathBuf {
        self.cwd.join(path)
    }

    /// A program to start here: in `cwd`, with the environment added.
    fn command(&self, program: &str) -> std::process::Command {
        let mut cmd = std::process::Command::new(program);
        if !self.cwd.as_os_str().is_empty() {
            cmd.current_dir(&self.cwd);
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }
}

pub fn run(ctx: &Ctx, cmd: GraderCommand) -> Result<Exit> {
    run_in(ctx, cmd, &Place::here())
}

/// [`run`] at a [`Place`]: the graders of a lab's `command` check, in-process.
pub fn run_in(ctx: &Ctx, cmd: GraderCommand, at: &Place) -> Result<Exit> {
    // The graders speak to a lab's `command` checks, line by line: no document to offer,
    // so `-o json|junit` is refused (and the refusal is the one document on stdout).
    if ctx.settings.output != crate::settings::OutputFormat::Text {
        return Err(Error::usage(
            crate::error::msg(
                "`kca policy grader` はラボのコマンドチェックにテキストの行を書きます。JSON や JUnit の出力はありません",
                "`kca policy grader` writes text lines for a lab's command checks; it has no JSON or JUnit output",
            ),
            crate::error::msg(
                "`--output` を付けずに実行します",
                "run it without `--output`",
            ),
        ));
    }
    // One language per line: the learner's (`KCA_LANG` from the kca running the check).
    let lang = ctx.settings.lang;
    match cmd {
        GraderCommand::Render { dir, policy } => {
            let docs = match render(at, &dir) {
                Ok(d) => d,
                Err(e) => return Ok(say_render(ctx, e)),
            };
            let none = tr(
                lang,
                "レンダリングに採点対象のオブジェクトがありません",
                "the render holds none of the objects graded",
            );
            grade(ctx, at, &policy, docs, none)
        }
        GraderCommand::Files { policy, files } => {
            let mut docs = Vec::new();
            for f in &files {
                let text = crate::input::read_text(&at.at(f)).map_err(|e| {
                    let p = f.display();
                    Error::usage(
                        crate::error::msg(format!("{p}: {e}"), format!("{p}: {e}")),
                        crate::error::msg("パスを確かめます", "check the path"),
                    )
                })?;
                docs.extend(crate::yaml::parse_json_stream(&text).map_err(|e| {
                    Error::usage(
                        crate::error::msg(
                            format!("{}: {e}", f.display()),
                            format!("{}: {e}", f.display()),
                        ),
                        crate::error::msg("YAML を直します", "fix the YAML"),
                    )
                })?);
            }
            let none = tr(
                lang,
                "採点対象のオブジェクトがありません",
                "none of the objects graded is there",
            );
            grade(ctx, at, &policy, docs, none)
        }
        GraderCommand::Gate {
            want,
            variant,
            gate,
            policy,
        } => gate_on(ctx, at, &want, &variant, &gate, &policy),
        GraderCommand::Catches {
            broken,
            tests,
            policy,
        } => catches::catches(ctx, at, &broken, &tests, &policy),
        GraderCommand::Selects {
            services,
            workloads,
            want,
        } => selects(ctx, at, &services, &workloads, &want),
    }
}

/// Runs a grading policy on `docs`: a line per rule result (its message in the
/// learner's language), exit 0 when none fails and at least one passes (else `none` is said).
fn grade(ctx: &Ctx, at: &Place, policy: &Path, docs: Vec<Value>, none: &str) -> Result<Exit> {
    let p = &ctx.printer;
    let grader = crate::yaml::parse_json_stream(&crate::input::read_text(&at.at(policy))?)
        .map_err(|e| {
            let p = policy.display();
            Error::usage(
                crate::error::msg(format!("{p}: {e}"), format!("{p}: {e}")),
                crate::error::msg("採点用のポリシーを直します", "fix the grader"),
            )
        })?;
    let results = crate::offline::kyverno::command::rule_results(&grader, docs)?;
    for (res, rule, status, msg) in &results {
        let msg = crate::error::one_language(ctx.settings.lang, msg);
        p.out(&format!(
            "{res}  {status}  {rule}{}",
            if msg.is_empty() {
                String::new()
            } else {
                format!(": {msg}")
            }
        ));
    }
    if results.iter().any(|r| r.2 != "pass" && r.2 != "skip") {
        return Ok(Exit::NotPassed);
    }
    if !results.iter().any(|r| r.2 == "pass") {
        p.out(none);
        return Ok(Exit::NotPassed);
    }
    Ok(Exit::Success)
}

fn say_render(ctx: &Ctx, e: RenderError) -> Exit {
    match e {
        RenderError::NoKubectl => {
            ctx.printer.out(tr(
                ctx.settings.lang,
                "kubectl が PATH にないので、ここでは kubectl kustomize でレンダリングできません",
                "kubectl is not on PATH: kubectl kustomize cannot render here",
            ));
            SKIP
        }
        RenderError::Failed(why) => {
            ctx.printer.out(&tr_s(
                ctx.settings.lang,
                format!("レンダリングできません: {why}"),
                format!("cannot render: {why}"),
            ));
            NO_RENDER
        }
    }
}

/// The app containers of a workload (not its init containers).
fn containers_mut(doc: &mut Value) -> Vec<&mut Value> {
    match doc.pointer_mut("/spec/template/spec/containers") {
        Some(Value::Array(cs)) => cs.iter_mut().collect(),
        _ => Vec::new(),
    }
}

/// The digest suffix of an image (`@sha256:` + 64 hex), if any.
fn split_digest(image: &str) -> (&str, Option<&str>) {
    match image.find("@sha256:") {
        Some(i) => (&image[..i], Some(&image[i..])),
        None => (image, None),
    }
}

/// Every container image of the render's workloads rewritten by `f`.
fn map_images(docs: &mut [Value], f: impl Fn(&str) -> String) {
    for d in docs.iter_mut() {
        for c in containers_mut(d) {
            if let Some(img) = c.get("image").and_then(Value::as_str) {
                let new = f(img);
                c["image"] = json!(new);
            }
        }
    }
}

fn pinned(docs: &[Value]) -> bool {
    docs.iter().any(|d| {
        d.pointer("/spec/template/spec/containers")
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter().any(|c| {
                    c.get("image")
                        .and_then(Value::as_str)
                        .is_some_and(|i| split_digest(i).1.is_some())
                })
            })
    })
}

/// The render a variant names, and what it is, in words.
fn variant_render(
    at: &Place,
    lang: Lang,
    variant: &str,
) -> std::result::Result<(String, &'static str), (Exit, String)> {
    let no_kubectl = || {
        tr(
            lang,
            "kubectl が PATH にないので、ここでは kubectl kustomize でレンダリングできません",
            "kubectl is not on PATH: kubectl kustomize cannot render here",
        )
        .to_string()
    };
    let prod = || -> std::result::Result<Vec<Value>, (Exit, String)> {
        let docs = render(at, Path::new("app/overlays/prod")).map_err(|e| match e {
            RenderError::NoKubectl => (SKIP, no_kubectl()),
            RenderError::Failed(w) => (
                NO_RENDER,
                tr_s(
                    lang,
                    format!("app/overlays/prod をレンダリングできません: {w}"),
                    format!("app/overlays/prod does not render: {w}"),
                ),
            ),
        })?;
        if !pinned(&docs) {
            return Err((
                NO_RENDER,
                tr(
                    lang,
                    "本番レンダリングにダイジェスト固定のイメージがありません(課題1)",
                    "the prod render pins no image by digest (task 1)",
                )
                .into(),
            ));
        }
        Ok(docs)
    };
    let stream = |docs: &[Value]| crate::yaml::to_stream(docs);
    Ok(match variant {
        "prod" | "policy-swap" => (
            stream(&prod()?),
            tr(
                lang,
                "本番レンダリング(app/overlays/prod)",
                "the prod render (app/overlays/prod)",
            ),
        ),
        "latest-back" => {
            let mut d = prod()?;
            map_images(&mut d, |i| format!("{}:latest", split_digest(i).0));
            (
                stream(&d),
                tr(
                    lang,
                    ":latest を戻した本番レンダリング",
                    "the prod render with :latest put back",
                ),
            )
        }
        "no-digest" => {
            let mut d = prod()?;
            map_images(&mut d, |i| split_digest(i).0.to_string());
            (
                stream(&d),
                tr(
                    lang,
                    "ダイジェストを外した本番レンダリング(タグもダイジェストもない)",
                    "the prod render with its digest dropped (no tag, no digest)",
                ),
            )
        }
        "mixed" => {
            let mut d = prod()?;
            d.push(json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "checkout-worker", "namespace": "kca-gates"},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "checkout-worker"}},
                         "template": {"metadata": {"labels": {"app": "checkout-worker"}},
                                      "spec": {"containers": [{"name": "worker",
                                               "image": "ghcr.io/kca/checkout-worker:latest"}]}}}
            }));
            (
                stream(&d),
                tr(
                    lang,
                    ":latest の Deployment をもう1つ足した本番レンダリング",
                    "the prod render plus a second Deployment on :latest",
                ),
            )
        }
        "digest-elsewhere" => {
            // The digest still in the text — an annotation, a comment and an init
            // container — while the app container has neither tag nor digest: a grep for
            // `@sha256:` (or for `:latest`) misjudges it; the policy does not.
            let mut d = prod()?;
            for doc in d.iter_mut() {
                let Some(cs) = doc
                    .pointer("/spec/template/spec/containers")
                    .and_then(Value::as_array)
                    .cloned()
                else {
                    continue;
                };
                let pinned_image = cs
                    .iter()
                    .filter_map(|c| c.get("image").and_then(Value::as_str))
                    .find(|i| split_digest(i).1.is_some())
                    .unwrap_or("")
                    .to_string();
                if let Some(Value::Object(meta)) = doc.get_mut("metadata") {
                    let ann = meta.entry("annotations").or_insert_with(|| json!({}));
                    ann["kca.dev/pinned-from"] = json!(pinned_image);
                }
                if let Some(spec) = doc.pointer_mut("/spec/template/spec") {
                    spec["initContainers"] =
                        json!([{"name": "fetch-config", "image": pinned_image}]);
                }
            }
            map_images(&mut d, |i| split_digest(i).0.to_string());
            let text = format!(
                "# pinned: {}\n{}",
                "ghcr.io/kca/checkout@sha256:5f0c1d9e8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d",
                stream(&d)
            );
            (
                text,
                tr(
                    lang,
                    "アプリのイメージを固定せず、ダイジェストを注釈・コメント・init コンテナにだけ残した本番レンダリング",
                    "the prod render with the app image unpinned, its digest only in an annotation, a comment and an init container",
                ),
            )
        }
        "base" => {
            let docs = render(at, Path::new("app/base")).map_err(|e| match e {
                RenderError::NoKubectl => (SKIP, no_kubectl()),
                RenderError::Failed(w) => (
                    NO_RENDER,
                    tr_s(
                        lang,
                        format!("app/base をレンダリングできません: {w}"),
                        format!("app/base does not render: {w}"),
                    ),
                ),
            })?;
            (
                stream(&docs),
                tr(
                    lang,
                    "base のレンダリング(app/base、:latest のまま)",
                    "the base render (app/base, still :latest)",
                ),
            )
        }
        "empty" => (
            String::new(),
            tr(
                lang,
                "空のレンダリング(黙って失敗したレンダリング)",
                "an empty render (a render step that failed quietly)",
            ),
        ),
        other => return Err((Exit::Usage, format!("unknown variant {other}"))),
    })
}

/// A policy that stops every Pod: with it in place of the lab's, a gate whose verdict
/// comes from the policy must stop the right render too.
const STOP_ALL: &str = r#"apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-pinned-images
spec:
  background: false
  rules:
    - name: require-digest
      match:
        any:
          - resources:
              kinds: [Pod]
      validate:
        failureAction: Enforce
        message: "grader: this policy stops every Pod"
        pattern:
          metadata:
            labels:
              kca.dev/grader-never-set: "?*"
"#;

/// Copies the workspace's regular files (bounded) into `to`.
fn copy_tree(from: &Path, to: &Path, budget: &mut usize) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    let mut entries: Vec<_> = std::fs::read_dir(from)?.filter_map(|e| e.ok()).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        if *budget == 0 {
            break;
        }
        *budget -= 1;
        let m = std::fs::symlink_metadata(e.path())?;
        let dest = to.join(e.file_name());
        if m.is_dir() {
            copy_tree(&e.path(), &dest, budget)?;
        } else if m.is_file() && m.len() <= 8 << 20 {
            std::fs::copy(e.path(), &dest)?;
        }
    }
    Ok(())
}

fn gate_on(
    ctx: &Ctx,
    at: &Place,
    want: &str,
    variant: &str,
    gate: &Path,
    policy: &Path,
) -> Result<Exit> {
    let p = &ctx.printer;
    let lang = ctx.settings.lang;
    if !matches!(want, "pass" | "stop") {
        return Err(Error::usage(
            crate::error::msg(
                format!("want は pass か stop です ({want} ではありません)"),
                format!("want is pass or stop, not {want}"),
            ),
            crate::error::msg("pass か stop を指定します", "pass or stop"),
        ));
    }
    let (text, what) = match variant_render(at, lang, variant) {
        Ok(v) => v,
        Err((exit, why)) => {
            p.out(&why);
            return Ok(exit);
        }
    };
    let tmp = tempfile_dir()?;
    let render = tmp.join("render.yaml");
    std::fs::write(&render, text)?;
    // The gate runs in the workspace, or (policy-swap) in a copy whose policy stops all.
    let cwd = if variant == "policy-swap" {
        let copy = tmp.join("ws");
        copy_tree(&at.at(Path::new(".")), &copy, &mut 4096)?;
        std::fs::write(copy.join(policy), STOP_ALL)?;
        copy
    } else {
        at.cwd.clone()
    };
    let mut cmd = Place {
        cwd,
        env: at.env.clone(),
    }
    .command("bash");
    cmd.arg(gate).arg(&render);
    let done = crate::exec::run(crate::exec::Job::new(cmd, GATE_TIMEOUT));
    let _ = std::fs::remove_dir_all(&tmp);
    let done = done.map_err(|e| {
        Error::environment(
            crate::error::msg(
                format!("bash を実行できません: {e}"),
                format!("cannot run bash: {e}"),
            ),
            crate::error::msg("bash を入れます", "install bash"),
        )
    })?;
    let what = if variant == "policy-swap" {
        tr(
            lang,
            "policy/require-pinned.yaml をすべての Pod を止めるポリシーに差し替えたうえでの本番レンダリング",
            "the prod render, with policy/require-pinned.yaml replaced by one that stops every Pod",
        )
    } else {
        what
    };
    let ended = match (ctx.settings.lang, done.code()) {
        (Lang::Ja, Some(c)) => format!("終了コード {c}"),
        _ => done.describe(),
    };
    p.out(&tr_s(
        ctx.settings.lang,
        format!("{}({what}): {ended}", gate.display()),
        format!("{} on {what}: {ended}", gate.display()),
    ));
    let ok = match (want, done.code()) {
        ("pass", Some(0)) => true,
        ("stop", Some(c)) => c != 0,
        _ => false,
    };
    if ok {
        return Ok(Exit::Success);
    }
    p.out(match want {
        "pass" => tr(lang, "ゲートは通すべきものを止めました", "the gate stopped what it should let through"),
        _ if variant == "policy-swap" => tr(
            lang,
            "ポリシーを差し替えてもゲートの判定が変わりません: 判定がポリシーから来ていません",
            "with the policy swapped the gate's verdict did not change: it does not come from the policy",
        ),
        _ => tr(lang, "ゲートは止めるべきものを通しました", "the gate let through what it should stop"),
    });
    Ok(Exit::NotPassed)
}

fn tempfile_dir() -> Result<PathBuf> {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "kca-gate-{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

fn docs_of(at: &Place, path: &Path) -> Result<Vec<Value>> {
    match crate::input::read_text(&at.at(path)) {
        Ok(t) => crate::yaml::parse_json_stream(&t).map_err(|e| {
            let p = path.display();
            Error::usage(
                crate::error::msg(
                    format!("{p} は YAML として読めません: {e}"),
                    format!("{p}: not valid YAML: {e}"),
                ),
                crate::error::msg("YAML を直します", "fix the YAML"),
            )
        }),
        Err(_) => Ok(Vec::new()),
    }
}

/// Services select the Pods whose template labels hold every key of the selector with the
/// same value (Kubernetes Service semantics); each must select its one workload.
fn selects(
    ctx: &Ctx,
    at: &Place,
    services: &Path,
    workloads: &[PathBuf],
    want: &[String],
) -> Result<Exit> {
    let p = &ctx.printer;
    let mut pods: BTreeMap<String, serde_json::Map<String, Value>> = BTreeMap::new();
    for f in workloads {
        for d in docs_of(at, f)? {
            let kind = d.get("kind").and_then(Value::as_str).unwrap_or("");
            let name = d
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            if let Some(Value::Object(labels)) = d.pointer("/spec/template/metadata/labels") {
                pods.insert(format!("{kind}/{name}"), labels.clone());
            } else if d.pointer("/spec/template").is_some() {
                pods.insert(format!("{kind}/{name}"), Default::default());
            }
        }
    }
    let svcs: BTreeMap<String, Value> = docs_of(at, services)?
        .into_iter()
        .filter(|d| d.get("kind").and_then(Value::as_str) == Some("Service"))
        .filter_map(|d| {
            let n = d
                .pointer("/metadata/name")
                .and_then(Value::as_str)?
                .to_string();
            Some((n, d))
        })
        .collect();
    let mut problems = Vec::new();
    for w in want {
        let Some((svc, owner)) = w.split_once('=') else {
            return Err(Error::usage(
                crate::error::msg(
                    format!("--want {w}: SERVICE=KIND/NAME の形にします"),
                    format!("--want {w}: SERVICE=KIND/NAME"),
                ),
                crate::error::msg("チェックを直します", "fix the check"),
            ));
        };
        let Some(s) = svcs.get(svc) else {
            problems.push(format!("Service {svc} is not in {}", services.display()));
            continue;
        };
        let sel = match s.pointer("/spec/selector") {
            Some(Value::Object(m)) if !m.is_empty() => m.clone(),
            _ => {
                problems.push(format!("Service {svc} has no selector"));
                continue;
            }
        };
        let chosen: Vec<&String> = pods
            .iter()
            .filter(|(_, labels)| sel.iter().all(|(k, v)| labels.get(k) == Some(v)))
            .map(|(w, _)| w)
            .collect();
        if chosen.len() != 1 || chosen[0] != owner {
            let names: Vec<&str> = chosen.iter().map(|s| s.as_str()).collect();
            problems.push(format!(
                "Service {svc} (selector {}) selects the Pods of {}; it should select {owner} only",
                Value::Object(sel),
                if names.is_empty() {
                    "nothing".to_string()
                } else {
                    names.join(", ")
                }
            ));
        }
    }
    for pr in &problems {
        p.out(pr);
    }
    if problems.is_empty() {
        p.out(tr(
            ctx.settings.lang,
            "どの Service も自分のワークロードの Pod だけを選んでいます",
            "each Service selects the Pods of its own workload only",
        ));
        Ok(Exit::Success)
    } else {
        p.out(tr(
            ctx.settings.lang,
            "Service は1つのワークロードの Pod だけを選ぶべきです",
            "each Service should select the Pods of one workload only",
        ));
        Ok(Exit::NotPassed)
    }
}

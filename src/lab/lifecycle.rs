//! The learner's lab lifecycle: list, start, check, hint (reset is `lab::reset`). Loads labs from the
//! content folder, keeps progress in the state store, changes a cluster only through
//! `target::live` and only one that is marked as a lab cluster (unless allowed).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use super::check::CheckResult;
use super::progress::{self, LabProgress, TargetRecord};
use super::report::{self, Report};
use super::{grade, workspace};
use crate::cli::lab::{CheckArgs, HintArgs, StartArgs};
use crate::cluster::{self, Selection};
use crate::content::lab::Lab;
use crate::content::{self, Document, decode::closest};
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::settings::Lang;
use crate::settings::OutputFormat;
use crate::state::Store;
use crate::target::ObjRef;
use crate::target::live::Live;
use crate::ui::{Style, tr, tr_s};

pub fn labs_dir(ctx: &Ctx) -> PathBuf {
    ctx.settings.content_dir.join("labs")
}

/// Ids of the labs in the content folder (folders holding a `lab.yaml`), sorted.
pub fn lab_ids(ctx: &Ctx) -> Vec<String> {
    lab_ids_in(&ctx.settings.content_dir)
}

/// [`lab_ids`] of the content folder `content`.
pub fn lab_ids_in(content: &std::path::Path) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(content.join("labs"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("lab.yaml").is_file())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .collect();
    ids.sort();
    ids
}

/// Loads one lab by id; its content problems are a content error (exit 2).
pub fn load(ctx: &Ctx, id: &str) -> Result<Lab> {
    let file = labs_dir(ctx).join(id).join("lab.yaml");
    if !file.is_file() {
        let ids = lab_ids(ctx);
        let lang = ctx.settings.lang;
        let hint = match closest(id, ids.iter().map(String::as_str)) {
            Some(near) => tr_s(
                lang,
                format!("`{near}` のことですか?(一覧は `kca lab list`)"),
                format!("did you mean `{near}`? (`kca lab list` shows them all)"),
            ),
            None => tr(
                lang,
                "一覧は `kca lab list`",
                "`kca lab list` shows the labs",
            )
            .into(),
        };
        return Err(Error::usage(
            tr_s(
                lang,
                format!("ラボ `{id}` は {} にありません", labs_dir(ctx).display()),
                format!("no lab `{id}` in {}", labs_dir(ctx).display()),
            ),
            hint,
        ));
    }
    match content::load_file(&file) {
        Ok(Document::Lab(lab)) => Ok(*lab),
        Ok(Document::Quiz(_)) => Err(Error::usage(
            crate::error::msg(
                format!("{} はラボではなくクイズです", file.display()),
                format!("{} is a quiz, not a lab", file.display()),
            ),
            crate::error::msg("ラボは `kind: Lab` です", "labs are `kind: Lab`"),
        )),
        Err(diags) => Err(Error::Content(diags)),
    }
}

/// The lab a command is about: the one named, else the one whose workspace holds the
/// current folder, else the one started last (`lab::here`).
pub(super) fn current(
    ctx: &Ctx,
    store: &Store,
    named: Option<&str>,
) -> Result<(Lab, Option<LabProgress>)> {
    let p = progress::read(store)?;
    let id = super::here::lab_id(ctx.settings.lang, &p, named)?;
    let lab = load(ctx, &id)?;
    let entry = p.labs.get(&id).cloned();
    Ok((lab, entry))
}

/// Applies the lab's fixtures, namespaces first; how many objects it applied.
pub(super) async fn apply_fixtures(ctx: &Ctx, live: &Live, lab: &Lab) -> Result<usize> {
    let mut objs = workspace::fixtures(lab)?;
    // Namespaces first: the objects after them live in them.
    objs.sort_by_key(|o| o.get("kind").and_then(Value::as_str) != Some("Namespace"));
    for o in &objs {
        live.apply(o).await?;
        if let Some(r) = ObjRef::of(o) {
            ctx.printer.verbose(&format!("applied {r}"));
        }
    }
    Ok(objs.len())
}

pub fn start(ctx: &Ctx, store: &Store, args: &StartArgs) -> Result<Exit> {
    let lab = load(ctx, &args.lab)?;
    let prev = progress::read(store)?.labs.get(&lab.id).cloned();
    let ws = match (&args.workspace.workspace_root, &prev) {
        (Some(root), _) => workspace::path_for(&lab, root),
        (None, Some(p)) => p.workspace.clone(),
        (None, None) => workspace::path_for(&lab, &workspace::root(&ctx.settings.home, None)),
    };
    let offline = args.offline || !lab.needs_cluster();
    if offline && !args.offline {
        ctx.printer.status(tr(
            ctx.settings.lang,
            "このラボはファイルとコマンドだけを採点します: クラスターは不要です",
            "this lab grades files and commands only: no cluster needed",
        ));
    }
    let target = TargetRecord {
        offline,
        chose_offline: Some(args.offline),
        kubeconfig: args.target.kubeconfig.clone(),
        context: args.target.context.clone(),
    };
    if !offline {
        prepare_cluster(ctx, &lab, args)?;
    }
    let sc = workspace::scaffold(&lab, &ws)?;
    let entry = progress::update(store, |p| {
        p.current = Some(lab.id.clone());
        let e = p.labs.entry(lab.id.clone()).or_insert_with(|| LabProgress {
            started: progress::now(),
            ..LabProgress::default()
        });
        e.workspace = ws.clone();
        e.root = ws.parent().map(Path::to_path_buf);
        e.target = target.clone();
        e.clone()
    })?;
    print_started(ctx, &lab, &ws, &sc, offline, &entry);
    Ok(Exit::Success)
}

/// Applies the lab's fixtures to the cluster (a lab cluster unless allowed) and sweeps
/// triggers a killed run left behind. A cluster that cannot be used says how to work
/// without one.
fn prepare_cluster(ctx: &Ctx, lab: &Lab, args: &StartArgs) -> Result<()> {
    let sel = Selection::from(&args.target);
    ctx.block_on(async {
        let live = cluster::ensure_cluster(ctx, &sel, !args.allow_any_context).await?;
        let n = apply_fixtures(ctx, &live, lab).await?;
        let swept = super::live::sweep_triggers(&live, lab).await?;
        ctx.printer.status(&match (ctx.settings.lang, swept) {
            (Lang::Ja, 0) => format!("準備用のオブジェクトを {n} 個適用しました"),
            (Lang::Ja, _) => format!(
                "準備用のオブジェクトを {n} 個適用し、残っていたトリガーを {swept} 個削除しました"
            ),
            (Lang::En, 0) => format!("applied {n} fixture object(s)"),
            (Lang::En, _) => {
                format!("applied {n} fixture object(s), removed {swept} leftover trigger(s)")
            }
        });
        for w in live.take_warnings() {
            ctx.printer.verbose(&format!("server warning: {w}"));
        }
        Ok::<_, Error>(())
    })
    .map_err(|e| match e {
        Error::Environment {
            message,
            hint,
            source,
        } => Error::Environment {
            message,
            source,
            hint: offline_way_out(
                ctx.settings.lang,
                hint,
                format!(
                    "クラスターなしで進めるなら `kca lab start {} --offline`",
                    lab.id
                ),
                format!(
                    "or work without a cluster: `kca lab start {} --offline`",
                    lab.id
                ),
            ),
        },
        other => other,
    })
}

/// The hint for a cluster that cannot be used: its own, then the `--offline` way out
/// (`ja`, `en`).
fn offline_way_out(
    lang: Lang,
    hint: Option<crate::error::Msg>,
    ja: String,
    en: String,
) -> Option<crate::error::Msg> {
    let hint = hint.map(|h| h.get(lang).to_string());
    Some(
        match lang {
            Lang::Ja => format!(
                "{}。{ja}",
                hint.unwrap_or_else(|| "クラスターを確認してください".into())
            ),
            Lang::En => format!(
                "{}; {en}",
                hint.unwrap_or_else(|| "check the cluster".into())
            ),
        }
        .into(),
    )
}

/// What `lab start` did: JSON, or the lab's title, workspace, files and tasks.
fn print_started(
    ctx: &Ctx,
    lab: &Lab,
    ws: &Path,
    sc: &workspace::Scaffold,
    offline: bool,
    entry: &LabProgress,
) {
    let lang = ctx.settings.lang;
    if ctx.settings.output == OutputFormat::Json {
        ctx.printer.json(&json!({
            "schemaVersion": report::SCHEMA_VERSION, "lab": lab.id, "workspace": ws,
            "written": sc.written, "kept": sc.kept, "offline": offline, "started": entry.started,
        }));
        return;
    }
    ctx.printer.out(&ctx.printer.paint(
        Style::Heading,
        &format!("{} — {}", lab.id, lab.title.get(lang)),
    ));
    ctx.printer.out(&format!(
        "{} {}",
        tr(lang, "作業フォルダー:", "workspace:"),
        ws.display()
    ));
    if sc.written.len() > 3 {
        // Many files: one wrapped line (the task is what the screen is for).
        ctx.printer.out_wrapped(
            &format!("+ {}", sc.written.join(tr(lang, "、", ", "))),
            "  ",
        );
    } else {
        for f in &sc.written {
            ctx.printer.out(&format!("  + {f}"));
        }
    }
    for f in &sc.kept {
        ctx.printer.out(&format!(
            "  = {f} {}",
            tr(lang, "(あなたのファイル、そのまま)", "(yours, kept)")
        ));
    }
    if let Some(d) = &lab.description {
        ctx.printer.out("");
        ctx.printer.out_wrapped(d.get(lang).trim_end(), "");
    }
    ctx.printer.out("");
    if let Some(first) = lab.tasks.first() {
        for line in super::task::lines(ctx, lab, first, Some(entry)) {
            ctx.printer.out(&line);
        }
    }
    ctx.printer.out("");
    let n = lab.tasks.len();
    for line in [
        tr_s(
            lang,
            "次: ファイルを編集して `kca lab check`(保存のたびに採点: `kca lab watch`)".into(),
            "next: edit the files, then `kca lab check` (graded on every save: `kca lab watch`)"
                .into(),
        ),
        tr_s(
            lang,
            format!("全 {n} タスク: 一覧は `kca lab task --list`、2 番目は `kca lab task 2`"),
            format!("{n} tasks: `kca lab task --list` lists them, `kca lab task 2` shows one"),
        ),
        tr(
            lang,
            "行き詰まったら `kca lab hint`",
            "stuck? `kca lab hint`",
        )
        .to_string(),
    ] {
        ctx.printer.out_painted(Style::Hint, &line);
    }
}

pub fn check(ctx: &Ctx, store: &Store, args: &CheckArgs) -> Result<Exit> {
    if let Some(ws) = &args.workspace {
        return super::submission::check(ctx, store, args, ws);
    }
    let (lab, entry) = current(ctx, store, args.lab.as_deref())?;
    let entry = started(ctx.settings.lang, &lab, entry, &args.task)?;
    let g = grade_run(
        ctx,
        &lab,
        &entry,
        &args.target,
        args.offline,
        &args.task,
        Run::Learner,
    )?;
    let standing = record(ctx, store, &lab, &g, &args.task);
    let all = args.all || ctx.settings.verbosity > 0;
    // Queued before the report is printed: the count is a field of the document.
    let queued = if g.report.counts.fail > 0 {
        super::overview::queue_related_questions(ctx, store, &lab)
    } else {
        0
    };
    let shown = Shown {
        standing: standing.as_ref(),
        task: &args.task,
        all,
        queued,
    };
    print_check(ctx, store, &lab, &g, &shown);
    super::overview::print_queued(ctx, queued);
    Ok(g.report.exit())
}

/// One grading run: the report, the setups in effect after it, and those it staged.
#[derive(Debug)]
pub struct Graded {
    pub report: Report,
    pub setups: BTreeMap<String, String>,
    pub fresh: Vec<String>,
    /// Quiz questions a failed check sent back to review (`queuedForReview`).
    pub queued: usize,
}

/// How a grading run meets the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Run {
    /// The learner's own lab: a setup it reaches happens now, after the files were saved.
    Learner,
    /// A folder handed in (`kca grade`, `lab check --workspace`): each setup the
    /// submission reaches happened before its files were saved — they answer it.
    HandedIn,
}

/// Grades `lab` where its progress says (offline, or the cluster it was started on;
/// `target`/`offline` override), staging the setups it reaches.
pub(super) fn grade_run(
    ctx: &Ctx,
    lab: &Lab,
    entry: &LabProgress,
    target: &crate::cli::cluster::TargetArgs,
    force_offline: bool,
    task: &[String],
    run: Run,
) -> Result<Graded> {
    let ws = entry.workspace.clone();
    let explicit = target.context.is_some() || target.kubeconfig.is_some();
    let offline = force_offline || (entry.target.offline && !explicit) || !lab.needs_cluster();
    let mut setups = entry.setups.clone();
    let (results, target) = if offline {
        let results = grade_offline(ctx, lab, &ws, task, &mut setups, run)?;
        (results, "offline".to_string())
    } else {
        let sel = if explicit {
            Selection::from(target)
        } else {
            Selection {
                kubeconfig: entry.target.kubeconfig.clone(),
                context: entry.target.context.clone(),
            }
        };
        grade_live(ctx, lab, &ws, task, &mut setups, &sel)?
    };
    let fresh: Vec<String> = setups
        .keys()
        .filter(|k| !entry.setups.contains_key(*k))
        .cloned()
        .collect();
    let hints = entry.hints.clone();
    let report = Report::new(lab, target, results, |t| hints.get(t).copied().unwrap_or(0));
    Ok(Graded {
        report,
        setups,
        fresh,
        queued: 0,
    })
}

/// The lab's progress when it can be checked: started, every `--task` its own, and its
/// workspace still there.
pub(super) fn started(
    lang: Lang,
    lab: &Lab,
    entry: Option<LabProgress>,
    tasks: &[String],
) -> Result<LabProgress> {
    let Some(entry) = entry else {
        return Err(Error::usage(
            tr_s(
                lang,
                format!("ラボ `{}` はまだ始めていません", lab.id),
                format!("lab `{}` is not started", lab.id),
            ),
            tr_s(
                lang,
                format!("先に `kca lab start {}` を実行します", lab.id),
                format!("run `kca lab start {}` first", lab.id),
            ),
        ));
    };
    if let Some(t) = tasks.iter().find(|t| lab.task(t).is_none()) {
        return Err(no_task(lang, lab, t));
    }
    let ws = &entry.workspace;
    if !ws.is_dir() {
        return Err(Error::usage(
            tr_s(
                lang,
                format!("作業フォルダー {} がありません", ws.display()),
                format!("the workspace {} is gone", ws.display()),
            ),
            tr_s(
                lang,
                format!("`kca lab start {}` でもう一度用意します", lab.id),
                format!("run `kca lab start {}` to scaffold it again", lab.id),
            ),
        ));
    }
    Ok(entry)
}

/// Grades offline. Reaching a task with a setup stages it (recorded in `setups`), then
/// grades again on the new state. A learner's run stages what it reaches once (the next
/// check goes on); a handed-in folder's run goes on until no further setup is reached.
fn grade_offline(
    ctx: &Ctx,
    lab: &Lab,
    ws: &Path,
    task: &[String],
    setups: &mut BTreeMap<String, String>,
    run: Run,
) -> Result<Vec<CheckResult>> {
    let mut results = grade::offline_staged(lab, ws, task, &super::setup::recorded(lab, setups))?;
    // Each round stages at least one more task's setup: bounded by the lab's tasks.
    for _ in 0..lab.tasks.len() {
        let due = due_setups(lab, &results, task, setups);
        if due.is_empty() {
            break;
        }
        for t in &due {
            let at = match run {
                Run::Learner => super::setup::stamp(),
                Run::HandedIn => super::setup::BEFORE_THE_FILES.to_string(),
            };
            setups.insert(t.id.clone(), at);
            ctx.printer
                .verbose(&format!("setup of task {} staged", t.id));
        }
        results = grade::offline_staged(lab, ws, task, &super::setup::recorded(lab, setups))?;
        if run == Run::Learner {
            break;
        }
    }
    Ok(results)
}

/// The task setups a check of the whole lab has reached (none when grading chosen tasks).
fn due_setups<'a>(
    lab: &'a Lab,
    results: &[CheckResult],
    task: &[String],
    setups: &BTreeMap<String, String>,
) -> Vec<&'a crate::content::lab::Task> {
    if !task.is_empty() {
        return Vec::new();
    }
    let applied: Vec<String> = setups.keys().cloned().collect();
    super::setup::due(lab, results, &applied)
}

/// Grades on the cluster `sel` names, staging due setups there as offline does; returns
/// the results and the target's name. A cluster that cannot be used is an error with
/// the `--offline` way out: live grading never silently becomes offline grading, as an
/// LMS reading the exit code would take offline marks for live ones (issue 8).
fn grade_live(
    ctx: &Ctx,
    lab: &Lab,
    ws: &Path,
    task: &[String],
    setups: &mut BTreeMap<String, String>,
    sel: &Selection,
) -> Result<(Vec<CheckResult>, String)> {
    let lang = ctx.settings.lang;
    let graded = ctx.block_on(async {
        // Checks only read (and create short-lived triggers), so any context will do.
        let live = cluster::ensure_cluster(ctx, sel, false).await?;
        let name = format!(
            "live {}",
            live.context_name().unwrap_or("(current context)")
        );
        let live = Arc::new(live);
        if let Err(e) = super::live::sweep_triggers(&live, lab).await {
            ctx.printer
                .verbose(&format!("could not sweep leftover triggers: {e}"));
        }
        let mut r = grade::live(live.clone(), lab, ws, task, &ctx.printer).await;
        let due = due_setups(lab, &r, task, setups);
        if !due.is_empty() {
            for t in &due {
                let done = super::setup::apply_live_in(&live, lab, t, Some(ws)).await?;
                setups.insert(t.id.clone(), super::setup::stamp());
                for d in &done {
                    ctx.printer
                        .verbose(&format!("  setup of task {}: {d}", t.id));
                }
            }
            r = grade::live(live, lab, ws, task, &ctx.printer).await;
        }
        Ok::<_, Error>((r, name))
    });
    // What went wrong stays the cause; its hint joins the `--offline` way out.
    graded.map_err(|e| match e {
        Error::Environment {
            message,
            hint,
            source,
        } => Error::Environment {
            message: tr_s(
                lang,
                format!("`{}` をクラスターで採点できません", lab.id),
                format!("cannot grade `{}` live", lab.id),
            )
            .into(),
            hint: offline_way_out(
                lang,
                hint,
                format!(
                    "クラスターなしでファイルを採点するなら `kca lab check {} --offline`",
                    lab.id
                ),
                format!(
                    "or grade the files without a cluster: `kca lab check {} --offline`",
                    lab.id
                ),
            ),
            source: Some(Box::new(Error::Environment {
                message,
                hint: None,
                source,
            })),
        },
        other => other,
    })
}

/// Records a check's results (per check, never replacing other tasks'), the setups in
/// effect and the task to follow (the first that failed); returns the lab's standing.
/// Saving is never a reason to fail: the result stands, with a warning.
pub(super) fn record(
    ctx: &Ctx,
    store: &Store,
    lab: &Lab,
    g: &Graded,
    task: &[String],
) -> Option<progress::Standing> {
    let rep = &g.report;
    // The task to follow: the incident in effect, else the first that failed.
    let seen: Vec<super::incident::Seen> = rep
        .tasks
        .iter()
        .flat_map(|t| t.checks.iter().map(super::incident::Seen::from))
        .collect();
    let failed = super::incident::in_effect(lab, &g.setups, &g.fresh, &seen)
        .last()
        .map(|i| i.task.id.clone())
        .or_else(|| {
            rep.tasks
                .iter()
                .find(|t| {
                    t.checks
                        .iter()
                        .any(|c| c.verdict == super::check::Verdict::Fail)
                })
                .map(|t| t.id.clone())
        });
    let saved = progress::update(store, |p| {
        let e = p.labs.get_mut(&lab.id)?;
        e.setups = g.setups.clone();
        let graded_focus = e
            .focus
            .as_ref()
            .is_none_or(|f| rep.tasks.iter().any(|t| &t.id == f));
        if failed.is_some() || graded_focus {
            e.focus = failed.clone();
        }
        let only = (!task.is_empty()).then(|| task.join(","));
        e.record(
            rep.tasks.iter().flat_map(|t| &t.checks),
            &rep.target,
            only.as_deref(),
        );
        Some(e.standing(lab))
    });
    match saved {
        Ok(s) => s,
        Err(e) => {
            ctx.printer.warn(&ctx.not_saved(&e));
            None
        }
    }
}

/// The view of a graded run: the incidents in effect and the lab's next task.
pub(super) fn view<'a>(
    lab: &'a Lab,
    g: &Graded,
    standing: Option<&progress::Standing>,
    all: bool,
) -> report::View<'a> {
    let results: Vec<super::incident::Seen> = g
        .report
        .tasks
        .iter()
        .flat_map(|t| t.checks.iter().map(super::incident::Seen::from))
        .collect();
    report::View {
        all,
        incidents: super::incident::in_effect(lab, &g.setups, &g.fresh, &results),
        next: standing.and_then(|s| s.next(lab)),
        rows: None,
    }
}

/// What a printed check shows beside its report.
pub(super) struct Shown<'a> {
    /// The lab's standing after the run (none when nothing was recorded).
    pub standing: Option<&'a progress::Standing>,
    pub task: &'a [String],
    pub all: bool,
    /// Quiz questions sent back to review (`queuedForReview` in the JSON document).
    pub queued: usize,
}

/// Prints a graded run: the report, the incident notices outside text mode, and the
/// lab's standing.
pub(super) fn print_check(ctx: &Ctx, store: &Store, lab: &Lab, g: &Graded, shown: &Shown<'_>) {
    let (standing, task) = (shown.standing, shown.task);
    let mut v = view(lab, g, standing, shown.all);
    if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        v.rows = terminal_size::terminal_size().map(|(_, h)| usize::from(h.0));
    }
    match ctx.settings.output {
        OutputFormat::Json => ctx.printer.json(&with_queued(&g.report, shown.queued)),
        OutputFormat::Junit => ctx.printer.document(&report::junit(
            std::slice::from_ref(&g.report),
            ctx.settings.lang,
        )),
        OutputFormat::Text => {
            for line in report::text(&g.report, lab, ctx.settings.lang, &ctx.printer, &v) {
                ctx.printer.out(&line);
            }
        }
    }
    if ctx.settings.output != OutputFormat::Text {
        // stdout holds the one document; a person watching still learns of the incident.
        for inc in v.incidents.iter().filter(|i| i.fresh) {
            for line in super::incident::notice(ctx.settings.lang, inc) {
                ctx.printer.status(&line);
            }
        }
        return;
    }
    if let Some(s) = standing {
        super::overview::print_standing(ctx, store, lab, s, !task.is_empty());
    }
}

/// Prints a check's report without progress (`lab check --workspace`): every task's
/// details; `queued` quiz questions were sent back to review (`queuedForReview`).
pub fn print_report(ctx: &Ctx, lab: &Lab, rep: &Report, queued: usize) {
    match ctx.settings.output {
        OutputFormat::Json => ctx.printer.json(&with_queued(rep, queued)),
        OutputFormat::Junit => ctx
            .printer
            .document(&report::junit(std::slice::from_ref(rep), ctx.settings.lang)),
        OutputFormat::Text => {
            let v = report::View {
                all: true,
                ..Default::default()
            };
            for line in report::text(rep, lab, ctx.settings.lang, &ctx.printer, &v) {
                ctx.printer.out(&line);
            }
        }
    }
}

/// The report as its JSON document, with `queuedForReview` after its own fields.
fn with_queued(rep: &Report, queued: usize) -> Value {
    let mut v = serde_json::to_value(rep).unwrap_or_default();
    if let Some(map) = v.as_object_mut() {
        map.insert("queuedForReview".into(), Value::from(queued));
    }
    v
}

/// A `--task` the lab does not have, with the ones it has.
pub(super) fn no_task(lang: Lang, lab: &Lab, t: &str) -> Error {
    let ids: Vec<&str> = lab.tasks.iter().map(|t| t.id.as_str()).collect();
    Error::usage(
        tr_s(
            lang,
            format!("ラボ `{}` にタスク `{t}` はありません", lab.id),
            format!("lab `{}` has no task `{t}`", lab.id),
        ),
        tr_s(
            lang,
            format!("タスク: {}", ids.join(", ")),
            format!("tasks: {}", ids.join(", ")),
        ),
    )
}

/// Counts one more hint of `task` as shown (up to its last) and returns how many are.
/// Remembered even for a lab not started yet: hints are about the content.
pub(super) fn take_hint(
    store: &Store,
    lab: &Lab,
    task: &crate::content::lab::Task,
) -> Result<usize> {
    let total = task.hints.len();
    progress::update(store, |p| {
        let e = p.labs.entry(lab.id.clone()).or_default();
        let n = e.hints.entry(task.id.clone()).or_insert(0);
        // A count past the task's hints (an edited record, or hints removed from the lab
        // since they were shown) indexed past them: a panic.
        *n = (*n).min(total);
        if *n < total {
            *n += 1;
        }
        *n
    })
}

pub fn hint(ctx: &Ctx, store: &Store, args: &HintArgs) -> Result<Exit> {
    let (lab, entry) = current(ctx, store, args.lab.as_deref())?;
    let task = match &args.task {
        Some(t) => lab
            .task(t)
            .ok_or_else(|| no_task(ctx.settings.lang, &lab, t))?,
        None => {
            let standing = entry.as_ref().map(|e| e.standing(&lab));
            if let Some(st) = standing.as_ref().filter(|s| s.finished) {
                let lang = ctx.settings.lang;
                ctx.printer.out(&format!(
                    "{} {}/{}",
                    tr(
                        lang,
                        "このラボはすべてのタスクに合格しています。ヒントはもうありません:",
                        "every task of this lab passed; there is nothing left to hint:",
                    ),
                    st.score,
                    st.max_score
                ));
                return Ok(Exit::Success);
            }
            // The task that failed last (`check --task X` included), else the first open.
            let focus = entry
                .as_ref()
                .and_then(|e| e.focus.as_deref())
                .and_then(|f| lab.task(f));
            focus
                .or_else(|| standing.as_ref().and_then(|s| s.next(&lab)))
                .unwrap_or(&lab.tasks[0])
        }
    };
    if task.hints.is_empty() {
        ctx.printer.out(&match ctx.settings.lang {
            crate::settings::Lang::Ja => format!("タスク `{}` にヒントはありません", task.id),
            crate::settings::Lang::En => format!("task `{}` has no hints", task.id),
        });
        return Ok(Exit::Success);
    }
    let total = task.hints.len();
    let shown = take_hint(store, &lab, task)?;
    let text = task.hints[shown - 1].get(ctx.settings.lang);
    if ctx.settings.output == OutputFormat::Json {
        ctx.printer.json(&json!({
            "schemaVersion": report::SCHEMA_VERSION, "lab": lab.id, "task": task.id,
            "hint": shown, "of": total, "text": task.hints[shown - 1],
        }));
        return Ok(Exit::Success);
    }
    ctx.printer.out(&ctx.printer.paint(
        Style::Hint,
        &format!(
            "{} {shown}/{total} — {} ({})",
            tr(ctx.settings.lang, "ヒント", "hint"),
            task.title.get(ctx.settings.lang),
            task.id
        ),
    ));
    ctx.printer.out_wrapped(text.trim_end(), "  ");
    if shown == total {
        ctx.printer.status(tr(
            ctx.settings.lang,
            "このタスクのヒントはこれが最後です",
            "that was the last hint of this task",
        ));
    }
    Ok(Exit::Success)
}

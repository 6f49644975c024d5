//! `kca lab reset`: the workspace archived and its starters restored, and on a cluster the
//! lab's owned objects deleted (policies before namespaces) and its fixtures applied again.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::lifecycle::{apply_fixtures, load};
use super::progress::{self, LabProgress};
use super::{report, workspace};
use crate::cli::lab::ResetArgs;
use crate::cluster::{self, Selection};
use crate::content::lab::Lab;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::settings::{Lang, OutputFormat};
use crate::state::Store;
use crate::target::ObjRef;
use crate::target::live::Live;
use crate::ui::tr_s;

/// The folder inside the workspace where reset builds the starter before moving it in.
pub const ASIDE: &str = ".kca-reset.tmp";

pub fn reset(ctx: &Ctx, store: &Store, args: &ResetArgs) -> Result<Exit> {
    let lang = ctx.settings.lang;
    let p = progress::read(store)?;
    let id = super::here::lab_id(lang, &p, args.lab.as_deref())?;
    let lab = load(ctx, &id)?;
    let entry = p.labs.get(&lab.id).cloned();
    let ws = entry.as_ref().map_or_else(
        || workspace::path_for(&lab, &workspace::root(&ctx.settings.home, None)),
        |e| e.workspace.clone(),
    );
    guard(
        lang,
        &lab,
        &ws,
        entry.as_ref().and_then(|e| e.root.as_deref()),
    )?;
    let offline = args.offline
        || !lab.needs_cluster()
        || (entry.as_ref().is_some_and(|e| e.target.offline)
            && args.target.context.is_none()
            && args.target.kubeconfig.is_none());
    let sel = if args.target.context.is_some() || args.target.kubeconfig.is_some() {
        Selection::from(&args.target)
    } else {
        entry
            .as_ref()
            .map_or_else(Selection::default, |e| Selection {
                kubeconfig: e.target.kubeconfig.clone(),
                context: e.target.context.clone(),
            })
    };
    let build =
        |aside: &Path| workspace::materialize_into(&lab, workspace::Stage::Starter, &ws, aside);
    let work = || restore(ctx, store, &lab, &ws, build);
    let (archived, deleted) = if offline {
        (work()?, 0)
    } else {
        ctx.block_on(async {
            // Refuse before touching anything, the workspace included.
            let live = cluster::ensure_cluster(ctx, &sel, !args.allow_any_context).await?;
            let archived = work()?;
            let deleted = delete_owned(ctx, &live, &lab).await?;
            apply_fixtures(ctx, &live, &lab).await?;
            Ok::<_, Error>((archived, deleted))
        })?
    };
    progress::update(store, |p| {
        let e = p.labs.entry(lab.id.clone()).or_insert_with(|| LabProgress {
            started: progress::now(),
            ..LabProgress::default()
        });
        e.workspace = ws.clone();
        // A record from before the root was kept gets it now (its workspace passed the
        // name and marker guard).
        e.root = e.root.take().or_else(|| ws.parent().map(Path::to_path_buf));
        e.last_check = None;
        // Reset deleted every owned object (live) and restored the starter: no setup holds.
        e.setups.clear();
        e.checks.clear();
        e.focus = None;
    })?;
    print_reset(ctx, &lab, &ws, archived.as_deref(), deleted, offline);
    Ok(Exit::Success)
}

/// Refuses a workspace kca did not make for this lab: a progress file can name any
/// folder, and reset empties it (issue 18, 15). The folder must sit in the workspace
/// root recorded when the lab started (`root`; a record from before it was kept has
/// none, and is judged by the rest), carry the lab's name and kca's marker naming this
/// lab (a copied marker elsewhere is not enough); a folder that is not there yet is
/// simply scaffolded.
fn guard(lang: Lang, lab: &Lab, ws: &Path, root: Option<&Path>) -> Result<()> {
    if ws.symlink_metadata().is_err() {
        return Ok(());
    }
    let named = ws.file_name().is_some_and(|n| *n == *lab.workspace_name);
    let marked = workspace::marked_for(ws);
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    let rooted = root.is_none_or(|r| ws.parent().is_some_and(|p| same(p, r)));
    if rooted
        && named
        && ws.is_dir()
        && !ws.is_symlink()
        && marked.as_deref() == Some(lab.id.as_str())
    {
        return Ok(());
    }
    let why = if let Some(r) = root.filter(|_| !rooted) {
        tr_s(
            lang,
            format!(
                "ラボを始めたときの作業フォルダーの置き場所 {} の中にありません",
                crate::escape::path(r)
            ),
            format!(
                "it is not in {}, where the lab's workspace was made when it started",
                crate::escape::path(r)
            ),
        )
    } else if !named {
        tr_s(
            lang,
            format!("フォルダー名が `{}` ではありません", lab.workspace_name),
            format!("its name is not `{}`", lab.workspace_name),
        )
    } else {
        match marked {
            Some(other) => tr_s(
                lang,
                format!(
                    "kca の目印はラボ `{}` のものです",
                    crate::escape::escape(&other)
                ),
                format!("kca's marker names lab `{}`", crate::escape::escape(&other)),
            ),
            None => tr_s(
                lang,
                format!("kca の目印 ({}) がありません", workspace::MARKER),
                format!("it lacks kca's marker ({})", workspace::MARKER),
            ),
        }
    };
    Err(Error::usage(
        tr_s(
            lang,
            format!(
                "{} は kca がラボ `{}` のために作った作業フォルダーではないため、リセットしません: {why}",
                crate::escape::path(ws),
                lab.id
            ),
            format!(
                "will not reset {}: it is not a workspace kca made for lab `{}` ({why})",
                crate::escape::path(ws),
                lab.id
            ),
        ),
        tr_s(
            lang,
            format!(
                "あなたのラボのフォルダーなら `kca lab start {}` で目印を付けてからリセットします(ファイルは消しません)",
                lab.id
            ),
            format!(
                "if it is your lab's folder, `kca lab start {}` marks it (and deletes nothing); then reset",
                lab.id
            ),
        ),
    ))
}

/// The workspace reset in place: archived first (recorded at once), the starter built
/// aside inside it, then the learner's entries removed and the starter's moved in. The
/// folder itself stays (a shell inside it stays in a live folder); a failure after the
/// archive puts the learner's files back from it and names it.
fn restore(
    ctx: &Ctx,
    store: &Store,
    lab: &Lab,
    ws: &Path,
    build: impl FnOnce(&Path) -> Result<()>,
) -> Result<Option<PathBuf>> {
    let lang = ctx.settings.lang;
    if ws.symlink_metadata().is_err() {
        workspace::scaffold(lab, ws)?;
        return Ok(None);
    }
    let archived = workspace::archive(ws, &ctx.settings.state_dir, &lab.id)?;
    // Named in progress before anything else can fail (issue 18, 13).
    if let Err(e) = progress::update(store, |p| {
        if let Some(e) = p.labs.get_mut(&lab.id) {
            e.resets.push(archived.display().to_string());
        }
    }) {
        ctx.printer.warn(&ctx.not_saved(&e));
    }
    let safe = |what: String, e: Error| -> Error {
        let hint = tr_s(
            lang,
            format!(
                "あなたのファイルは {} に保管してあり、作業フォルダーはリセット前のままです",
                archived.display()
            ),
            format!(
                "your files are safe in {}; the workspace is as it was before the reset",
                archived.display()
            ),
        );
        Error::Environment {
            message: what.into(),
            hint: Some(
                match e.hint_in(lang) {
                    Some(h) => format!("{hint} ({h})"),
                    None => hint,
                }
                .into(),
            ),
            source: Some(Box::new(e)),
        }
    };
    let aside_name = std::ffi::OsString::from(ASIDE);
    let aside = ws.join(&aside_name);
    let _ = std::fs::remove_dir_all(&aside);
    let built = build(&aside).and_then(|()| workspace::mark(lab, &aside));
    if let Err(e) = built {
        let _ = std::fs::remove_dir_all(&aside);
        return Err(safe(
            tr_s(
                lang,
                format!("ラボ `{}` のスターターを用意できません", lab.id),
                format!("cannot build the starter of lab `{}`", lab.id),
            ),
            e,
        ));
    }
    let swapped = workspace::clear_except(ws, &aside_name)
        .and_then(|()| workspace::move_entries(&aside, ws))
        .and_then(|()| std::fs::remove_dir(&aside));
    if let Err(e) = swapped {
        // Put the learner's files back: the workspace is never left half-made.
        let back = workspace::clear_except(ws, std::ffi::OsStr::new(""))
            .and_then(|()| workspace::copy_tree(&archived, ws));
        let what = tr_s(
            lang,
            format!("{} にスターターを戻せません", ws.display()),
            format!("cannot restore the starter in {}", ws.display()),
        );
        return Err(match back {
            Ok(()) => safe(what, Error::Other(e.into())),
            Err(b) => Error::environment_with(
                what,
                tr_s(
                    lang,
                    format!(
                        "あなたのファイルは {} にあります。作業フォルダーに戻せなかったので ({b}) 手で戻してください",
                        archived.display()
                    ),
                    format!(
                        "your files are in {}; copying them back failed too ({b}): copy them back by hand",
                        archived.display()
                    ),
                ),
                e,
            ),
        });
    }
    Ok(Some(archived))
}

/// What `lab reset` did: JSON, or where the workspace went and what was restored.
fn print_reset(
    ctx: &Ctx,
    lab: &Lab,
    ws: &Path,
    archived: Option<&Path>,
    deleted: usize,
    offline: bool,
) {
    if ctx.settings.output == OutputFormat::Json {
        ctx.printer.json(&json!({
            "schemaVersion": report::SCHEMA_VERSION, "lab": lab.id, "workspace": ws,
            "archived": archived, "deletedObjects": deleted, "offline": offline,
        }));
    } else {
        // Wrapped: a path is never cut by the terminal (an archive's name is long).
        let ja = ctx.settings.lang == Lang::Ja;
        if let Some(a) = archived {
            ctx.printer.out_wrapped(
                &if ja {
                    format!("作業フォルダーを {} に保管しました", a.display())
                } else {
                    format!("archived your workspace to {}", a.display())
                },
                "",
            );
        }
        ctx.printer.out_wrapped(
            &if ja {
                format!("{} にスターターファイルを戻しました", ws.display())
            } else {
                format!("restored the starter files in {}", ws.display())
            },
            "",
        );
        if !offline {
            ctx.printer.out_wrapped(&if ja {
                format!(
                    "ラベル {} の付いたオブジェクトを {deleted} 個削除し、準備用のオブジェクトを適用し直しました",
                    lab.selector()
                )
            } else {
                format!(
                    "deleted {deleted} object(s) labelled {} and re-applied the fixtures",
                    lab.selector()
                )
            }, "");
        }
    }
}

/// Deletes the lab's objects and applies its fixtures again (`lab reset` on the cluster side;
/// `lab verify --live` between variants).
pub(crate) async fn reset_cluster(ctx: &Ctx, live: &Live, lab: &Lab) -> Result<()> {
    delete_owned(ctx, live, lab).await?;
    apply_fixtures(ctx, live, lab).await?;
    Ok(())
}

async fn delete_owned(ctx: &Ctx, live: &Live, lab: &Lab) -> Result<usize> {
    let mut n = 0;
    for (api, kind) in owned_kinds(lab) {
        if !live.serves(&api, &kind).await? {
            ctx.printer
                .verbose(&format!("{api} {kind} is not served here; skipped"));
            continue;
        }
        let mut gone = Vec::new();
        for obj in live.list(&api, &kind, None, &lab.selector()).await? {
            if let Some(r) = ObjRef::of(&obj) {
                live.delete(&r).await?;
                ctx.printer.verbose(&format!("deleted {r}"));
                gone.push(r);
                n += 1;
            }
        }
        // A terminating namespace refuses to be re-created: wait until it is gone.
        if kind == "Namespace" {
            for r in gone {
                wait_gone(ctx, live, &r).await?;
            }
        }
    }
    Ok(n)
}

const NAMESPACE_DELETION: std::time::Duration = std::time::Duration::from_secs(180);

async fn wait_gone(ctx: &Ctx, live: &Live, r: &ObjRef) -> Result<()> {
    let start = std::time::Instant::now();
    let mut said = false;
    while live.get(r).await?.is_some() {
        if start.elapsed() > NAMESPACE_DELETION {
            let secs = NAMESPACE_DELETION.as_secs();
            return Err(Error::environment(
                crate::error::msg(
                    format!("{r} は {secs} 秒たっても削除中のままです"),
                    format!("{r} is still terminating after {secs}s"),
                ),
                crate::error::msg(
                    format!(
                        "`kubectl get namespace {} -o yaml` を見て (ファイナライザー、削除を拒む \
                         Webhook)、リセットをもう一度実行します",
                        r.name
                    ),
                    format!(
                        "look at `kubectl get namespace {} -o yaml` (finalizers, a webhook that \
                         refuses deletions), then run the reset again",
                        r.name
                    ),
                ),
            ));
        }
        if !said {
            ctx.printer
                .status(&format!("waiting for {r} to finish terminating…"));
            said = true;
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
    Ok(())
}

/// Kinds that must go before everything else on reset: a fail-closed admission webhook or
/// policy could otherwise refuse (or wedge) the deletion of the namespaces after it.
fn delete_rank(api_version: &str, kind: &str) -> u8 {
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    match (group, kind) {
        ("kyverno.io" | "policies.kyverno.io" | "admissionregistration.k8s.io", _) => 0,
        (_, "Namespace") => 2,
        _ => 1,
    }
}

/// The kinds a lab owns objects of: fixtures, solution manifests, and `reset.kinds`.
fn owned_kinds(lab: &Lab) -> Vec<(String, String)> {
    let mut docs: Vec<Value> = workspace::fixtures(lab).unwrap_or_default();
    for f in &lab.solution {
        if let Ok(text) = crate::input::read_text(&lab.source("solution", &f.path))
            && let Ok(d) = crate::yaml::parse_json_stream(&text)
        {
            docs.extend(d);
        }
    }
    let mut kinds: Vec<(String, String)> = lab.reset.kinds.clone();
    for d in docs {
        if let Some(r) = ObjRef::of(&d) {
            let k = (r.api_version, r.kind);
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
    }
    kinds.sort_by_key(|(a, k)| delete_rank(a, k));
    kinds
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lab, its marked workspace holding the learner's file, a store and a context.
    fn setup(tmp: &Path) -> (Ctx, Store, Lab, PathBuf) {
        let settings = crate::settings::Settings {
            color: false,
            output: OutputFormat::Text,
            lang: Lang::En,
            verbosity: -1,
            content_dir: tmp.into(),
            state_dir: tmp.join("state"),
            home: tmp.into(),
        };
        let lab = Lab {
            id: "l".into(),
            title: crate::content::Text::plain("L"),
            dir: tmp.join("lab"),
            workspace_name: "l".into(),
            ..Default::default()
        };
        let ws = tmp.join("work/l");
        std::fs::create_dir_all(ws.join("policies")).unwrap();
        std::fs::write(ws.join("policies/mine.yaml"), "kind: Mine\n").unwrap();
        workspace::mark(&lab, &ws).unwrap();
        let store = Store::new(tmp.join("state"));
        progress::update(&store, |p| {
            p.labs.insert(
                "l".into(),
                LabProgress {
                    workspace: ws.clone(),
                    ..Default::default()
                },
            );
        })
        .unwrap();
        (Ctx::new(settings), store, lab, ws)
    }

    fn starter(aside: &Path) -> Result<()> {
        std::fs::create_dir_all(aside.join("policies")).unwrap();
        std::fs::write(aside.join("policies/starter.yaml"), "kind: Starter\n").unwrap();
        Ok(())
    }

    #[test]
    fn reset_keeps_the_folder_itself_and_restores_the_starter_in_it() {
        let tmp = tempfile::tempdir().unwrap();
        let (ctx, store, lab, ws) = setup(tmp.path());
        use std::os::unix::fs::MetadataExt;
        let inode = std::fs::metadata(&ws).unwrap().ino();
        let a = restore(&ctx, &store, &lab, &ws, starter).unwrap().unwrap();
        assert_eq!(
            std::fs::metadata(&ws).unwrap().ino(),
            inode,
            "the folder was replaced"
        );
        assert!(ws.join("policies/starter.yaml").is_file());
        assert!(!ws.join("policies/mine.yaml").exists());
        assert!(!ws.join(ASIDE).exists());
        assert_eq!(workspace::marked_for(&ws).as_deref(), Some("l"));
        assert!(a.join("policies/mine.yaml").is_file(), "archived first");
    }

    #[test]
    fn a_starter_that_fails_to_build_leaves_the_workspace_and_names_the_archive() {
        let tmp = tempfile::tempdir().unwrap();
        let (ctx, store, lab, ws) = setup(tmp.path());
        let failing = |aside: &Path| -> Result<()> {
            std::fs::create_dir_all(aside).unwrap();
            std::fs::write(aside.join("half.yaml"), "x").unwrap();
            Err(Error::usage("the template does not render", "fix it"))
        };
        let e = restore(&ctx, &store, &lab, &ws, failing).unwrap_err();
        let resets = progress::read(&store).unwrap().labs["l"].resets.clone();
        assert_eq!(resets.len(), 1, "the archive is recorded");
        assert!(e.hint().unwrap().contains(&resets[0]), "{:?}", e.hint());
        assert_eq!(
            std::fs::read_to_string(ws.join("policies/mine.yaml")).unwrap(),
            "kind: Mine\n"
        );
        assert!(!ws.join(ASIDE).exists(), "the half-built starter is gone");
        assert!(!ws.join("half.yaml").exists());
        // A retry with a working starter succeeds.
        restore(&ctx, &store, &lab, &ws, starter).unwrap();
        assert!(ws.join("policies/starter.yaml").is_file());
    }

    #[test]
    fn an_archive_that_cannot_be_written_leaves_no_partial_copy_and_a_retry_works() {
        let tmp = tempfile::tempdir().unwrap();
        let (ctx, store, lab, ws) = setup(tmp.path());
        // The archive folder of the lab is a file: nothing can be archived there.
        let blocked = tmp.path().join("state/archive/l");
        std::fs::create_dir_all(blocked.parent().unwrap()).unwrap();
        std::fs::write(&blocked, "not a folder").unwrap();
        let e = restore(&ctx, &store, &lab, &ws, starter).unwrap_err();
        assert!(
            e.to_string().contains("the workspace was left as it was"),
            "{e}"
        );
        assert!(ws.join("policies/mine.yaml").is_file());
        std::fs::remove_file(&blocked).unwrap();
        restore(&ctx, &store, &lab, &ws, starter).unwrap();
        assert!(ws.join("policies/starter.yaml").is_file());
    }

    #[test]
    fn reset_refuses_a_folder_kca_did_not_make_for_the_lab() {
        let tmp = tempfile::tempdir().unwrap();
        let (_, _, lab, ws) = setup(tmp.path());
        assert!(guard(Lang::En, &lab, &ws, None).is_ok());
        // Named right, no marker.
        std::fs::remove_file(ws.join(workspace::MARKER)).unwrap();
        let e = guard(Lang::En, &lab, &ws, None).unwrap_err().to_string();
        assert!(e.contains("lacks kca's marker"), "{e}");
        // Marked, but another name (a progress file pointing at the home folder).
        let home = tmp.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        workspace::mark(&lab, &home).unwrap();
        let e = guard(Lang::En, &lab, &home, None).unwrap_err().to_string();
        assert!(e.contains("its name is not `l`"), "{e}");
        // Another lab's marker.
        std::fs::write(ws.join(workspace::MARKER), "other\n").unwrap();
        let e = guard(Lang::En, &lab, &ws, None).unwrap_err().to_string();
        assert!(e.contains("names lab `other`"), "{e}");
        // Not there yet: nothing to refuse.
        assert!(guard(Lang::En, &lab, &tmp.path().join("work/none"), None).is_ok());
    }

    #[test]
    fn reset_refuses_a_marked_copy_outside_the_root_the_lab_started_in() {
        let tmp = tempfile::tempdir().unwrap();
        let (_, _, lab, ws) = setup(tmp.path());
        let root = ws.parent().unwrap().to_path_buf();
        assert!(guard(Lang::En, &lab, &ws, Some(&root)).is_ok());
        // The same name and a copy of the marker, in another folder.
        let elsewhere = tmp.path().join("precious/l");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::copy(
            ws.join(workspace::MARKER),
            elsewhere.join(workspace::MARKER),
        )
        .unwrap();
        let e = guard(Lang::En, &lab, &elsewhere, Some(&root))
            .unwrap_err()
            .to_string();
        assert!(e.contains("where the lab's workspace was made"), "{e}");
        // The root named another way (a `..` in it) is the same folder.
        let roundabout = root.join("../").join(root.file_name().unwrap());
        assert!(guard(Lang::En, &lab, &ws, Some(&roundabout)).is_ok());
        // A record from before the root was kept: the name and the marker decide.
        assert!(guard(Lang::En, &lab, &elsewhere, None).is_ok());
    }

    #[test]
    fn policies_go_first_and_namespaces_last() {
        let mut kinds = [
            ("v1".to_string(), "Namespace".to_string()),
            ("v1".into(), "ConfigMap".into()),
            ("kyverno.io/v1".into(), "ClusterPolicy".into()),
            (
                "admissionregistration.k8s.io/v1".into(),
                "ValidatingAdmissionPolicy".into(),
            ),
        ];
        kinds.sort_by_key(|(a, k)| delete_rank(a, k));
        let order: Vec<&str> = kinds.iter().map(|(_, k)| k.as_str()).collect();
        assert_eq!(
            order,
            [
                "ClusterPolicy",
                "ValidatingAdmissionPolicy",
                "ConfigMap",
                "Namespace"
            ]
        );
    }
}

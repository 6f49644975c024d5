//! Grading a submission anywhere: `kca lab check LAB --offline --workspace DIR` grades one
//! folder without `lab start`, and `kca grade LAB DIR…` grades a class's folders on a
//! bounded pool of the machine's cores, one result per learner. Neither reads nor writes
//! progress: a grader of other people's work leaves the state folder alone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::lifecycle::{self, load};
use super::report::{self, Report};

use super::progress::{LabProgress, TargetRecord};
use crate::cli::GradeArgs;
use crate::cli::lab::CheckArgs;
use crate::content::lab::Lab;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::settings::{Lang, OutputFormat};
use crate::state::Store;
use crate::ui::{tr, tr_s};

/// `lab check LAB --offline --workspace DIR`: the folder graded as a started lab's
/// workspace would be (task setups staged in memory), the report printed, nothing saved.
pub fn check(ctx: &Ctx, store: &Store, args: &CheckArgs, ws: &Path) -> Result<Exit> {
    let id = args.lab.as_deref().unwrap_or_default();
    let lab = load(ctx, id)?;
    let g = grade_folder(ctx, &lab, ws, &args.task)?;
    let shown = lifecycle::Shown {
        standing: None,
        task: &args.task,
        all: args.all || ctx.settings.verbosity > 0,
        queued: 0,
    };
    lifecycle::print_check(ctx, store, &lab, &g, &shown);
    Ok(g.report.exit())
}

/// Grades one folder offline as handed in: each task setup (incident) the submission
/// reaches happened before its files were saved, which answer it (`lifecycle::Run`);
/// setups are staged in memory only.
fn grade_folder(ctx: &Ctx, lab: &Lab, ws: &Path, task: &[String]) -> Result<lifecycle::Graded> {
    let lang = ctx.settings.lang;
    if let Some(t) = task.iter().find(|t| lab.task(t).is_none()) {
        return Err(lifecycle::no_task(lang, lab, t));
    }
    if !ws.is_dir() {
        return Err(Error::usage(
            tr_s(
                lang,
                format!("{} はフォルダーではありません", crate::escape::path(ws)),
                format!("{} is not a folder", crate::escape::path(ws)),
            ),
            tr(
                lang,
                "採点する提出物のフォルダーを指定します",
                "give the folder of the submission to grade",
            ),
        ));
    }
    let entry = LabProgress {
        workspace: ws.to_path_buf(),
        target: TargetRecord {
            offline: true,
            ..TargetRecord::default()
        },
        ..LabProgress::default()
    };
    let run = lifecycle::Run::HandedIn;
    lifecycle::grade_run(ctx, lab, &entry, &Default::default(), true, task, run)
}

/// How a learner's id is read from a submission (`--id-from`).
#[derive(Debug)]
enum IdFrom {
    Name,
    Regex(regex::Regex),
    File(PathBuf),
}

/// The longest id kept (a file or a folder name is data, not a place to store a book).
const MAX_ID: usize = 200;

impl IdFrom {
    fn parse(lang: Lang, rule: &str) -> Result<IdFrom> {
        let bad = |why: String| {
            Error::usage(
                tr_s(
                    lang,
                    format!("--id-from `{rule}` は使えません: {why}"),
                    format!("--id-from `{rule}` is not a rule: {why}"),
                ),
                crate::error::msg(
                    "`name`、`regex:^kca-gates-(.+)$`、`file:LEARNER` のどれかを使います",
                    "use `name`, `regex:^kca-gates-(.+)$` or `file:LEARNER`",
                ),
            )
        };
        if rule == "name" {
            return Ok(IdFrom::Name);
        }
        if let Some(re) = rule.strip_prefix("regex:") {
            let re = regex::RegexBuilder::new(re)
                .size_limit(1 << 20)
                .build()
                .map_err(|e| bad(e.to_string()))?;
            if re.captures_len() < 2 {
                return Err(bad("the pattern needs a group `( )` holding the id".into()));
            }
            return Ok(IdFrom::Regex(re));
        }
        if let Some(f) = rule.strip_prefix("file:") {
            return Ok(IdFrom::File(PathBuf::from(f)));
        }
        Err(bad("unknown rule".into()))
    }

    /// The learner's id for the submission `dir`, or why there is none.
    fn id(&self, dir: &Path) -> std::result::Result<String, String> {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| dir.to_string_lossy().into_owned());
        let id = match self {
            IdFrom::Name => name,
            IdFrom::Regex(re) => re
                .captures(&name)
                .and_then(|c| c.get(1))
                .map(|m| m.as_str().to_string())
                .ok_or_else(|| {
                    format!(
                        "the folder name `{}` does not match",
                        crate::escape::escape(&name)
                    )
                })?,
            IdFrom::File(rel) => {
                let bytes = crate::input::within(dir, rel)
                    .and_then(|p| crate::input::read_capped(&p, 4096))
                    .map_err(|e| e.to_string())?;
                String::from_utf8_lossy(&bytes)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_string()
            }
        };
        let id: String = id.chars().take(MAX_ID).collect();
        if id.is_empty() {
            return Err("the id is empty".into());
        }
        Ok(id)
    }
}

/// `id` as a file name: letters, digits, `-`, `_`, `.` kept, anything else `_`; never
/// `.`/`..`, never a path.
fn file_stem(id: &str) -> String {
    let s: String = id
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.trim_matches('.').is_empty() {
        format!("_{s}")
    } else {
        s
    }
}

/// One graded submission.
struct Graded {
    learner: String,
    dir: PathBuf,
    outcome: std::result::Result<Report, Error>,
}

impl Graded {
    fn exit(&self) -> Exit {
        match &self.outcome {
            Ok(r) => r.exit(),
            Err(e) => e.exit(),
        }
    }

    /// The result document of this submission: the lab check's document with the
    /// learner's id and folder, or the error that kept it from being graded.
    fn document(&self) -> Value {
        let mut v = match &self.outcome {
            Ok(r) => serde_json::to_value(r).unwrap_or_default(),
            Err(e) => {
                let mut v = crate::ui::error_json(e, crate::settings::Lang::En);
                if let Some(m) = v.as_object_mut() {
                    m.remove("schemaVersion");
                }
                v
            }
        };
        if let Some(m) = v.as_object_mut() {
            m.insert("learner".into(), Value::from(self.learner.clone()));
            m.insert("submission".into(), json!(self.dir));
            m.insert("exitCode".into(), Value::from(self.exit().code()));
            m.insert(
                "gradedAt".into(),
                Value::from(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
            );
        }
        crate::envelope::stamp(v)
    }
}

/// The submission folders: those named, then the sub-folders of `--submissions`, sorted.
fn folders(ctx: &Ctx, args: &GradeArgs) -> Result<Vec<PathBuf>> {
    let mut out = args.dirs.clone();
    if let Some(parent) = &args.submissions {
        let entries = std::fs::read_dir(parent).map_err(|e| {
            let p = crate::escape::path(parent);
            Error::usage_with(
                crate::error::msg(
                    format!("提出物のフォルダー {p} を読めません"),
                    format!("cannot read the submissions folder {p}"),
                ),
                crate::error::msg(
                    "受講者ごとの提出物をサブフォルダーに持つフォルダーを指定します",
                    "give a folder whose sub-folders are the learners' submissions",
                ),
                e,
            )
        })?;
        let mut inner: Vec<PathBuf> = entries
            .flatten()
            // A link is not followed: a submission is a folder of its own.
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .collect();
        inner.sort();
        out.extend(inner);
    }
    if out.is_empty() {
        return Err(Error::usage(
            tr(
                ctx.settings.lang,
                "採点する提出物がありません",
                "no submissions to grade",
            ),
            crate::error::msg(
                "フォルダー (`kca grade LAB alice/ bob/`) か、その親 (`--submissions class/`) を指定します",
                "name the folders (`kca grade LAB alice/ bob/`) or their parent (`--submissions class/`)",
            ),
        ));
    }
    Ok(out)
}

/// `kca grade LAB DIR…`: every submission graded on at most `--jobs` threads (the cores by
/// default), results in the order given.
pub fn grade(ctx: &Ctx, args: &GradeArgs) -> Result<Exit> {
    let lang = ctx.settings.lang;
    let lab = load(ctx, &args.lab)?;
    if let Some(t) = args.task.iter().find(|t| lab.task(t).is_none()) {
        return Err(lifecycle::no_task(lang, &lab, t));
    }
    let rule = IdFrom::parse(lang, &args.id_from)?;
    let dirs = folders(ctx, args)?;
    if let Some(out) = &args.out {
        std::fs::create_dir_all(out).map_err(|e| {
            let p = crate::escape::path(out);
            Error::environment_with(
                crate::error::msg(format!("{p} を作れません"), format!("cannot create {p}")),
                crate::error::msg(
                    "--out には kca が書き込めるフォルダーを指定します",
                    "give a folder kca can write with --out",
                ),
                e,
            )
        })?;
    }
    let jobs = args
        .jobs
        .unwrap_or_else(crate::par::cores)
        .clamp(1, 256)
        .min(dirs.len());
    // Workers grade quietly: a class's task-setup notices would drown the summary.
    let quiet = Ctx::new(crate::settings::Settings {
        verbosity: -1,
        ..ctx.settings.clone()
    });
    // A bounded pool (`par::pool`): a worker that cannot be started (a pids limit) is
    // only a smaller pool, and with none at all the submissions are graded here, one
    // after another (`scope.spawn` panicked, exit 101).
    let one = |dir: &PathBuf| grade_one(&quiet, &lab, &rule, dir, &args.task);
    let mut graded: Vec<Graded> = Vec::with_capacity(dirs.len());
    for (dir, r) in dirs
        .iter()
        .zip(crate::par::pool(&dirs, &[jobs], |_| 0, one))
    {
        graded.push(match r {
            Ok(g) => g,
            Err(crate::par::Unrun::NoThread(_)) => one(dir),
            Err(crate::par::Unrun::Crashed) => {
                return Err(Error::environment(
                    crate::error::msg(
                        "採点のスレッドが提出物を採点し終える前に止まりました",
                        "a grading thread stopped before its submissions were graded",
                    ),
                    crate::error::msg(
                        "`--jobs` を減らして `kca grade` をもう一度実行します",
                        "run `kca grade` again with fewer `--jobs`",
                    ),
                ));
            }
        });
    }
    let unique = unique_stems(&graded);
    if let Some(out) = &args.out {
        for (g, stem) in graded.iter().zip(&unique) {
            let text = serde_json::to_string_pretty(&g.document()).unwrap_or_default() + "\n";
            let file = out.join(format!("{stem}.json"));
            write_atomic(&file, text.as_bytes()).map_err(|e| {
                let p = crate::escape::path(&file);
                Error::environment_with(
                    crate::error::msg(format!("{p} に書き込めません"), format!("cannot write {p}")),
                    crate::error::msg(
                        "--out には kca が書き込めるフォルダーを指定します",
                        "give a folder kca can write with --out",
                    ),
                    e,
                )
            })?;
        }
    }
    print(ctx, &lab, &graded);
    Ok(class_exit(&graded))
}

fn grade_one(ctx: &Ctx, lab: &Lab, rule: &IdFrom, dir: &Path, task: &[String]) -> Graded {
    let (learner, outcome) = match rule.id(dir) {
        Ok(id) => (id, grade_folder(ctx, lab, dir, task).map(|g| g.report)),
        Err(why) => (
            dir.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            Err(Error::usage(
                crate::error::msg(
                    format!(
                        "{} の受講者 ID が決まりません: {why}",
                        crate::escape::path(dir)
                    ),
                    format!("no learner id for {}: {why}", crate::escape::path(dir)),
                ),
                crate::error::msg("--id-from を確かめます", "check --id-from"),
            )),
        ),
    };
    Graded {
        learner,
        dir: dir.to_path_buf(),
        outcome,
    }
}

/// A file stem per submission, unique even when two learners' ids map to one name.
fn unique_stems(graded: &[Graded]) -> Vec<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    graded
        .iter()
        .map(|g| {
            let stem = file_stem(&g.learner);
            let n = seen.entry(stem.clone()).or_insert(0);
            *n += 1;
            if *n == 1 { stem } else { format!("{stem}-{n}") }
        })
        .collect()
}

/// The run's exit: a submission that could not be graded (3) outranks one that did not
/// pass (1); a bad submission (2: its id, its folder) counts as not graded.
fn class_exit(graded: &[Graded]) -> Exit {
    let exits: Vec<Exit> = graded.iter().map(Graded::exit).collect();
    if exits
        .iter()
        .any(|e| matches!(e, Exit::Environment | Exit::Usage))
    {
        Exit::Environment
    } else if exits.contains(&Exit::NotPassed) {
        Exit::NotPassed
    } else {
        Exit::Success
    }
}

fn print(ctx: &Ctx, lab: &Lab, graded: &[Graded]) {
    let lang = ctx.settings.lang;
    let p = &ctx.printer;
    let count = |e: Exit| graded.iter().filter(|g| g.exit() == e).count();
    match ctx.settings.output {
        OutputFormat::Json => {
            let subs: Vec<Value> = graded.iter().map(Graded::document).collect();
            p.json(&json!({
                "lab": lab.id,
                "submissions": subs,
                "summary": {
                    "submissions": graded.len(),
                    "passed": count(Exit::Success),
                    "notPassed": count(Exit::NotPassed),
                    "notGraded": graded.len() - count(Exit::Success) - count(Exit::NotPassed),
                },
            }));
        }
        OutputFormat::Junit => {
            let mut suites = Vec::new();
            for g in graded {
                if let Ok(r) = &g.outcome {
                    let mut r = r.clone();
                    r.lab = format!("{} {}", r.lab, g.learner);
                    suites.push(r);
                }
            }
            let mut xml = report::junit(&suites, lang);
            // A submission that could not be graded is a suite with one errored case.
            for g in graded {
                if let Err(e) = &g.outcome {
                    let one = crate::junit::error_document(
                        &format!("{} {}", lab.id, g.learner),
                        "grade",
                        &e.to_string(),
                    );
                    let inner = suite_of(&one);
                    xml = xml.replacen("</testsuites>", &format!("{inner}</testsuites>"), 1);
                }
            }
            p.document(&xml);
        }
        OutputFormat::Text => {
            let mut t = vec![vec![
                tr(lang, "受講者", "LEARNER").to_string(),
                tr(lang, "得点", "SCORE").to_string(),
                tr(lang, "結果", "RESULT").to_string(),
            ]];
            for g in graded {
                let (score, word) = match &g.outcome {
                    Ok(r) => (
                        format!("{}/{}", r.score, r.max_score),
                        match r.exit() {
                            Exit::Success => tr(lang, "合格", "passed").to_string(),
                            Exit::NotPassed => {
                                format!("{} {}", r.counts.fail, tr(lang, "件不合格", "failed"))
                            }
                            _ => tr(lang, "エラー/対象外あり", "errors/skipped").to_string(),
                        },
                    ),
                    Err(e) => (
                        "-".into(),
                        crate::escape::escape(&e.to_string()).into_owned(),
                    ),
                };
                t.push(vec![
                    crate::escape::escape(&g.learner).into_owned(),
                    score,
                    word,
                ]);
            }
            for line in crate::ui::table(&t, p.width()) {
                p.out(&line);
            }
            p.out(&format!(
                "{} {}, {} {}, {} {}",
                count(Exit::Success),
                tr(lang, "合格", "passed"),
                count(Exit::NotPassed),
                tr(lang, "不合格", "not passed"),
                graded.len() - count(Exit::Success) - count(Exit::NotPassed),
                tr(lang, "採点できず", "not graded"),
            ));
        }
    }
}

/// Writes `file` whole or not at all (a temp file beside it, then a rename): a reader of
/// the results folder never sees half a result.
fn write_atomic(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = file.with_extension(format!("json.tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, file).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// The `<testsuite>…</testsuite>` element of a rendered document.
fn suite_of(doc: &str) -> &str {
    let start = doc.find("  <testsuite ").unwrap_or(0);
    let end = doc.rfind("</testsuites>").unwrap_or(doc.len());
    &doc[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learner_ids_from_names_patterns_and_files() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("kca-gates-alice");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("LEARNER"), "  a.lice  \nsecond line\n").unwrap();
        assert_eq!(
            IdFrom::parse(Lang::En, "name").unwrap().id(&sub).unwrap(),
            "kca-gates-alice"
        );
        let re = IdFrom::parse(Lang::En, "regex:^kca-gates-(.+)$").unwrap();
        assert_eq!(re.id(&sub).unwrap(), "alice");
        assert!(re.id(&dir.path().join("other")).is_err());
        let f = IdFrom::parse(Lang::En, "file:LEARNER").unwrap();
        assert_eq!(f.id(&sub).unwrap(), "a.lice");
        assert!(
            IdFrom::parse(Lang::En, "file:../x")
                .unwrap()
                .id(&sub)
                .is_err()
        );
        assert!(IdFrom::parse(Lang::En, "regex:no-group").is_err());
        assert!(IdFrom::parse(Lang::En, "folder").is_err());
    }

    #[test]
    fn ids_become_safe_unique_file_names() {
        assert_eq!(file_stem("../../etc/passwd"), ".._.._etc_passwd");
        assert_eq!(file_stem(".."), "_..");
        assert_eq!(file_stem("山田 花子"), "山田_花子");
        let g = |l: &str| Graded {
            learner: l.into(),
            dir: PathBuf::new(),
            outcome: Err(Error::usage("x", "y")),
        };
        assert_eq!(
            unique_stems(&[g("a/b"), g("a b"), g("c")]),
            ["a_b", "a_b-2", "c"]
        );
    }
}

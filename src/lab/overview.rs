//! What a learner sees of their labs as a whole: `lab list` (course order, with a
//! header), `lab status` (score over all tasks, when and where each was last checked),
//! the standing after a check (finished, next lab), and the quiz questions a failed check
//! sends back to review.

use serde_json::{Value, json};

use super::lifecycle::{lab_ids, load};
use super::progress::{self, LabProgress};
use crate::content::{self, lab::Lab};
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::settings::OutputFormat;
use crate::state::Store;
use crate::ui::{self, Style, tr};

/// Every lab that loads, in course order (module, then id), and the problems of those
/// that do not.
pub fn all_labs(ctx: &Ctx) -> Result<(Vec<Lab>, Vec<crate::diag::Diagnostic>)> {
    let mut rows = Vec::new();
    let mut problems = Vec::new();
    for id in lab_ids(ctx) {
        match load(ctx, &id) {
            Ok(lab) => rows.push(lab),
            Err(Error::Content(d)) => problems.extend(d),
            Err(e) => return Err(e),
        }
    }
    rows.sort_by(|a, b| {
        (a.module.unwrap_or(i64::MAX), &a.id).cmp(&(b.module.unwrap_or(i64::MAX), &b.id))
    });
    Ok((rows, problems))
}

/// The first unfinished lab after `id` in course order (wrapping round to earlier ones).
pub fn next_lab<'a>(labs: &'a [Lab], p: &progress::Progress, id: &str) -> Option<&'a Lab> {
    let at = labs.iter().position(|l| l.id == id).map_or(0, |i| i + 1);
    labs[at..]
        .iter()
        .chain(&labs[..at.min(labs.len())])
        .filter(|l| l.id != id)
        .find(|l| !p.labs.get(&l.id).is_some_and(|e| e.standing(l).done()))
}

/// A lab's state as one short word or score: `12/12 ✓`, `4/23`, `started`, `-`.
pub fn state_word(lang: crate::settings::Lang, lab: &Lab, e: Option<&LabProgress>) -> String {
    match e {
        Some(e) if e.checked() => {
            let s = e.standing(lab);
            let mark = if s.finished {
                tr(lang, " 完了", " done")
            } else if s.offline.finished {
                tr(lang, " オフライン完了", " done offline")
            } else {
                ""
            };
            format!("{}/{}{mark}", s.score, s.max_score)
        }
        Some(_) => tr(lang, "開始済み", "started").to_string(),
        None => "-".to_string(),
    }
}

pub fn list(ctx: &Ctx, store: &Store) -> Result<Exit> {
    let p = progress::read(store)?;
    let (rows, problems) = all_labs(ctx)?;
    let lang = ctx.settings.lang;
    if ctx.settings.output == OutputFormat::Json {
        let labs: Vec<Value> = rows
            .iter()
            .map(|l| {
                let prog = p.labs.get(&l.id);
                let standing = prog.filter(|e| e.checked()).map(|e| e.standing(l));
                json!({
                    "id": l.id, "title": l.title, "module": l.module, "concepts": l.concepts,
                    "tasks": l.tasks.len(), "maxScore": l.max_points(),
                    "started": prog.is_some(),
                    "score": standing.as_ref().map(|s| s.score),
                    "finished": standing.as_ref().is_some_and(|s| s.finished),
                })
            })
            .collect();
        ctx.printer
            .json(&crate::envelope::Envelope::new(json!({"labs": labs})));
    } else if rows.is_empty() {
        ctx.printer
            .out(tr(lang, "ラボがありません", "no labs found"));
    } else {
        let pr = &ctx.printer;
        let mut table = vec![vec![
            tr(lang, "モジュール", "MODULE").to_string(),
            "ID".to_string(),
            tr(lang, "タスク", "TASKS").to_string(),
            tr(lang, "進捗", "PROGRESS").to_string(),
            tr(lang, "タイトル", "TITLE").to_string(),
        ]];
        for l in &rows {
            table.push(vec![
                l.module.map_or("-".to_string(), |m| m.to_string()),
                l.id.clone(),
                l.tasks.len().to_string(),
                state_word(lang, l, p.labs.get(&l.id)),
                l.title.get(lang).to_string(),
            ]);
        }
        for (i, line) in ui::table(&table, pr.width()).iter().enumerate() {
            pr.out(&if i == 0 {
                pr.paint(Style::Heading, line)
            } else {
                line.clone()
            });
        }
    }
    if !problems.is_empty() {
        return Err(Error::Content(problems));
    }
    Ok(Exit::Success)
}

/// The offline standing as one line, when offline grading left checks to a cluster:
/// "オフラインで完了; 3 個のチェックはクラスターが必要", or the offline score so far.
pub fn offline_line(lang: crate::settings::Lang, s: &progress::Standing) -> Option<String> {
    let o = &s.offline;
    if o.need_cluster == 0 || s.finished {
        return None;
    }
    Some(if o.finished {
        ui::tr_s(
            lang,
            format!(
                "オフラインで完了 ({}/{}) — 残り {} 個のチェックはクラスターが必要です",
                o.score, o.max_score, o.need_cluster
            ),
            format!(
                "finished offline ({}/{}); {} check(s) need a cluster",
                o.score, o.max_score, o.need_cluster
            ),
        )
    } else {
        ui::tr_s(
            lang,
            format!(
                "オフライン: {}/{} (ほかに {} 個のチェックはクラスターが必要)",
                o.score, o.max_score, o.need_cluster
            ),
            format!(
                "offline: {}/{} ({} more check(s) need a cluster)",
                o.score, o.max_score, o.need_cluster
            ),
        )
    })
}

/// The offline standing in a few words for a table cell ("オフライン完了 (3 要クラスター)").
pub fn offline_short(lang: crate::settings::Lang, s: &progress::Standing) -> Option<String> {
    let o = &s.offline;
    (o.need_cluster > 0 && !s.finished).then(|| {
        let done = if o.finished {
            tr(lang, "オフライン完了", "done offline")
        } else {
            tr(lang, "オフライン", "offline")
        };
        ui::tr_s(
            lang,
            format!("{done} (要クラスター {})", o.need_cluster),
            format!("{done} ({} need a cluster)", o.need_cluster),
        )
    })
}

/// `kca lab start ID`, with `--offline` when the learner works without a cluster.
pub fn start_command(p: &progress::Progress, lab: &Lab) -> String {
    if !super::here::works_live(p) && lab.needs_cluster() {
        format!("kca lab start {} --offline", lab.id)
    } else {
        format!("kca lab start {}", lab.id)
    }
}

/// After a check: the lab's score over all tasks (live and offline apart), and, when the
/// lab is finished (or finished over what offline can judge), which lab comes next.
pub fn print_standing(ctx: &Ctx, store: &Store, lab: &Lab, s: &progress::Standing, one_task: bool) {
    let lang = ctx.settings.lang;
    let p = &ctx.printer;
    if one_task || s.unchecked > 0 {
        p.out(&format!(
            "{} {}/{} ({} {}/{})",
            tr(lang, "ラボ全体:", "lab total:"),
            s.score,
            s.max_score,
            tr(lang, "完了したタスク", "tasks passed"),
            s.tasks_passed.len(),
            s.tasks_total
        ));
    }
    if let Some(line) = offline_line(lang, s) {
        let style = if s.offline.finished {
            Style::Pass
        } else {
            Style::Dim
        };
        p.out_painted(style, &line);
    }
    if !s.done() {
        return;
    }
    if s.finished {
        p.out(&p.paint(
            Style::Pass,
            &format!(
                "{} {} {}/{}",
                tr(lang, "✓ ラボ完了", "✓ Lab finished:"),
                lab.id,
                s.score,
                s.max_score
            ),
        ));
    }
    let all = all_labs(ctx).map(|(l, _)| l).unwrap_or_default();
    let prog = progress::read(store).unwrap_or_default();
    let next = match next_lab(&all, &prog, &lab.id) {
        Some(n) => format!("`{}` — {}", start_command(&prog, n), n.title.get(lang)),
        None => tr(
            lang,
            "`kca` でコースの進み具合を確認",
            "`kca` shows the course map",
        )
        .to_string(),
    };
    p.out_painted(Style::Hint, &format!("{} {next}", tr(lang, "次:", "next:")));
}

/// A failed check sends the quiz questions that share the lab's concepts back to review;
/// how many it queued (0 when none share them or the store cannot be written, which `-v`
/// explains). Prints nothing: the count is a field of the check's document
/// (`queuedForReview`), and text mode says it with [`print_queued`].
pub fn queue_related_questions(ctx: &Ctx, store: &Store, lab: &Lab) -> usize {
    let (quizzes, _) = content::load_quizzes(&ctx.settings.content_dir);
    match crate::quiz::progress::queue_concepts(store, &quizzes, &lab.concepts) {
        Ok(n) => n,
        Err(e) => {
            ctx.printer
                .verbose(&format!("could not queue quiz questions: {e}"));
            0
        }
    }
}

/// The line text mode shows for questions queued by a failed check, on stderr (a note
/// beside the result, never part of stdout's document).
pub fn print_queued(ctx: &Ctx, n: usize) {
    if n == 0 {
        return;
    }
    let lang = ctx.settings.lang;
    ctx.printer.status(&ctx.printer.paint_err(
        Style::Hint,
        &format!(
            "{} {n} {} `kca quiz review`",
            tr(lang, "関連するクイズ", "related quiz questions:"),
            tr(lang, "問を復習に追加しました:", "queued for"),
        ),
    ));
}

pub fn status(ctx: &Ctx, store: &Store, only: Option<&str>) -> Result<Exit> {
    let p = progress::read(store)?;
    let lang = ctx.settings.lang;
    if let Some(id) = only {
        // Named: it must be a lab, and started.
        let lab = load(ctx, id)?;
        if !p.labs.contains_key(id) {
            return Err(Error::usage(
                ui::tr_s(
                    lang,
                    format!("ラボ `{id}` はまだ始めていません"),
                    format!("lab `{id}` is not started"),
                ),
                start_command(&p, &lab),
            ));
        }
    }
    let labs: Vec<(String, Option<Lab>, &LabProgress)> = p
        .labs
        .iter()
        .filter(|(id, _)| only.is_none_or(|o| o == id.as_str()))
        .map(|(id, e)| (id.clone(), load(ctx, id).ok(), e))
        .collect();
    let here = super::here::default_lab(&p);
    if ctx.settings.output == OutputFormat::Json {
        let rows: Vec<Value> = labs
            .iter()
            .map(|(id, lab, e)| {
                json!({
                    "id": id, "workspace": e.workspace, "started": e.started,
                    "target": e.target, "hints": e.hints, "lastCheck": e.last_check,
                    "checks": e.checks,
                    "standing": lab.as_ref().map(|l| e.standing(l)),
                })
            })
            .collect();
        ctx.printer.json(&crate::envelope::Envelope::new(
            json!({"current": here, "labs": rows}),
        ));
        return Ok(Exit::Success);
    }
    if p.labs.is_empty() {
        ctx.printer.out(tr(
            lang,
            "まだラボを始めていません — `kca lab list` の後 `kca lab start LAB`",
            "no lab started yet — `kca lab list`, then `kca lab start LAB`",
        ));
        return Ok(Exit::Success);
    }
    let now = chrono::Utc::now();
    for (id, lab, e) in &labs {
        let mark = if here.as_deref() == Some(id) {
            "*"
        } else {
            " "
        };
        let score = match (lab, &e.last_check) {
            (Some(l), Some(c)) => {
                let s = e.standing(l);
                format!(
                    "{}/{}  {} {}/{}  ({}, {})",
                    s.score,
                    s.max_score,
                    tr(lang, "タスク", "tasks"),
                    s.tasks_passed.len(),
                    s.tasks_total,
                    ui::relative_rfc3339(lang, &c.at, now),
                    c.target
                )
            }
            _ => tr(lang, "未チェック", "not checked yet").to_string(),
        };
        let hints = e.hints.values().fold(0usize, |a, &n| a.saturating_add(n));
        ctx.printer.out(&format!(
            "{mark} {}  {score}  {} {hints}",
            ui::pad(id, 18),
            tr(lang, "ヒント", "hints"),
        ));
        if let Some(line) = lab
            .as_ref()
            .filter(|_| e.checked())
            .and_then(|l| offline_line(lang, &e.standing(l)))
        {
            ctx.printer.out(&format!("    {line}"));
        }
        ctx.printer.out(&format!(
            "    {} {}",
            tr(lang, "作業フォルダー:", "workspace:"),
            e.workspace.display()
        ));
    }
    Ok(Exit::Success)
}

//! `kca lab task [N]`: a task's instructions again, wrapped to the terminal, with the
//! incident notice when its setup is in effect, its lesson, its checks and the next hint;
//! `--list` lists the tasks with where the learner stands. `lab start` and `lab watch`
//! show a task through [`lines`].

use serde_json::json;

use super::incident;
use super::lifecycle::{current, no_task};
use super::progress::LabProgress;
use crate::cli::lab::TaskArgs;
use crate::content::lab::{Lab, Task};
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::settings::{Lang, OutputFormat};
use crate::state::Store;
use crate::ui::{self, Style, tr, tr_s};

/// The task `which` names: a number from 1, or an id.
pub fn find<'a>(lang: Lang, lab: &'a Lab, which: &str) -> Result<&'a Task> {
    if let Ok(n) = which.parse::<usize>() {
        return n
            .checked_sub(1)
            .and_then(|i| lab.tasks.get(i))
            .ok_or_else(|| {
                Error::usage(
                    tr_s(
                        lang,
                        format!("ラボ `{}` にタスク {n} はありません", lab.id),
                        format!("lab `{}` has no task {n}", lab.id),
                    ),
                    tr_s(
                        lang,
                        format!("タスクは 1〜{} です", lab.tasks.len()),
                        format!("its tasks are 1 to {}", lab.tasks.len()),
                    ),
                )
            });
    }
    lab.task(which).ok_or_else(|| no_task(lang, lab, which))
}

/// "タスク 3/8 — title (id)": how a task is named on every screen.
pub fn heading(lang: Lang, lab: &Lab, n: usize, title: &crate::content::Text, id: &str) -> String {
    let (word, all) = (tr(lang, "タスク", "task"), lab.tasks.len());
    format!("{word} {n}/{all} — {} ({id})", title.get(lang))
}

/// The task the learner is on: the one that failed last, else the first still open,
/// else the first.
pub fn on<'a>(lab: &'a Lab, entry: Option<&LabProgress>) -> Option<&'a Task> {
    entry
        .and_then(|e| e.focus.as_deref())
        .and_then(|f| lab.task(f))
        .or_else(|| entry.and_then(|e| e.standing(lab).next(lab)))
        .or(lab.tasks.first())
}

/// A task's heading, instructions, the incident in effect on it and (`lesson`) its lesson.
pub fn intro(
    ctx: &Ctx,
    lab: &Lab,
    task: &Task,
    entry: Option<&LabProgress>,
    lesson: bool,
) -> Vec<String> {
    let lang = ctx.settings.lang;
    let p = &ctx.printer;
    let n = incident::number(lab, &task.id);
    let mut out = vec![p.paint(
        Style::Heading,
        &ui::truncate(&heading(lang, lab, n, &task.title, &task.id), p.width()),
    )];
    out.extend(ui::wrap(
        task.instructions.get(lang).trim_end(),
        p.width(),
        "  ",
    ));
    if let Some(e) = entry {
        let seen = incident::recorded(e);
        for inc in incident::in_effect(lab, &e.setups, &[], &seen)
            .iter()
            .filter(|i| i.task.id == task.id)
        {
            for line in incident::notice(lang, inc) {
                out.extend(
                    ui::wrap(&line, p.width(), "")
                        .into_iter()
                        .map(|l| p.paint(Style::Skip, &l)),
                );
            }
        }
    }
    let content_dir = lab.dir.join("..").join("..");
    if lesson
        && let Some(link) = &task.lesson
        && let Some(line) = crate::lesson::link_line(&content_dir, link, lang)
    {
        out.push(format!("  {}", p.paint(Style::Hint, &line)));
    }
    out
}

/// The task's screen: heading, instructions, the incident in effect, lesson, checks and
/// the hint to ask for next.
pub fn lines(ctx: &Ctx, lab: &Lab, task: &Task, entry: Option<&LabProgress>) -> Vec<String> {
    let lang = ctx.settings.lang;
    let p = &ctx.printer;
    let mut out = intro(ctx, lab, task, entry, true);
    let checks: Vec<String> = task
        .checks
        .iter()
        .map(|c| {
            let mark = entry.and_then(|e| e.checks.get(&c.id)).map_or("·", |r| {
                match r.verdict.as_str() {
                    "pass" => "✓",
                    "fail" => "✗",
                    "error" => "!",
                    _ => "-",
                }
            });
            format!("{mark}{}{}", ui::KEEP, c.id)
        })
        .collect();
    out.extend(ui::wrap(
        &format!("{} {}", tr(lang, "チェック:", "checks:"), checks.join("  ")),
        p.width(),
        "  ",
    ));
    let seen = entry
        .and_then(|e| e.hints.get(&task.id))
        .copied()
        .unwrap_or(0);
    if seen < task.hints.len() {
        out.push(format!(
            "  {}",
            p.paint(
                Style::Hint,
                &tr_s(
                    lang,
                    format!(
                        "ヒント: `kca lab hint --task {}` ({}/{})",
                        task.id,
                        seen + 1,
                        task.hints.len()
                    ),
                    format!(
                        "hint: `kca lab hint --task {}` ({} of {})",
                        task.id,
                        seen + 1,
                        task.hints.len()
                    ),
                )
            )
        ));
    }
    out
}

/// Where the other tasks are: previous, next, the list.
fn nav(lang: Lang, lab: &Lab, n: usize) -> String {
    let mut parts = Vec::new();
    if n > 1 {
        parts.push(tr_s(
            lang,
            format!("前: `kca lab task {}`", n - 1),
            format!("previous: `kca lab task {}`", n - 1),
        ));
    }
    if n < lab.tasks.len() {
        parts.push(tr_s(
            lang,
            format!("次: `kca lab task {}`", n + 1),
            format!("next: `kca lab task {}`", n + 1),
        ));
    }
    parts.push(
        tr(
            lang,
            "一覧: `kca lab task --list`",
            "all: `kca lab task --list`",
        )
        .into(),
    );
    parts.push(tr(lang, "採点: `kca lab check`", "grade: `kca lab check`").into());
    // Each label stays with its command when the line wraps.
    parts
        .iter()
        .map(|p| p.replacen(": `", &format!(":{}`", ui::KEEP), 1))
        .collect::<Vec<_>>()
        .join("  ")
}

/// The task list: a mark, number, id, score and title per task.
pub fn list_lines(ctx: &Ctx, lab: &Lab, entry: Option<&LabProgress>) -> Vec<String> {
    let lang = ctx.settings.lang;
    let p = &ctx.printer;
    let standing = entry.map(|e| e.standing(lab));
    let here = on(lab, entry).map(|t| t.id.clone());
    let mut rows = Vec::new();
    for (i, t) in lab.tasks.iter().enumerate() {
        let failed = entry.is_some_and(|e| {
            t.checks
                .iter()
                .any(|c| e.checks.get(&c.id).is_some_and(|r| r.verdict == "fail"))
        });
        let mark = match &standing {
            Some(s) if s.tasks_passed.contains(&t.id) => "✓",
            Some(s) if !s.tasks_open.contains(&t.id) => "-",
            _ if failed => "✗",
            _ => "·",
        };
        let score: u32 = entry.map_or(0, |e| {
            t.checks
                .iter()
                .filter_map(|c| e.checks.get(&c.id))
                .map(|r| r.earned)
                .sum()
        });
        let at = if here.as_deref() == Some(t.id.as_str()) {
            "→"
        } else {
            " "
        };
        rows.push(vec![
            format!("{at} {mark} {}.", i + 1),
            t.id.clone(),
            format!("{score}/{}", t.max_points()),
            t.title.get(lang).to_string(),
        ]);
    }
    let mut out = vec![p.paint(
        Style::Heading,
        &ui::truncate(&format!("{} — {}", lab.id, lab.title.get(lang)), p.width()),
    )];
    out.extend(ui::table(&rows, p.width()));
    out
}

pub fn task(ctx: &Ctx, store: &Store, args: &TaskArgs) -> Result<Exit> {
    let (lab, entry) = current(ctx, store, args.lab.as_deref())?;
    let lang = ctx.settings.lang;
    if lab.tasks.is_empty() {
        return Err(Error::usage(
            tr_s(
                lang,
                format!("ラボ `{}` にタスクがありません", lab.id),
                format!("lab `{}` has no tasks", lab.id),
            ),
            crate::error::msg(
                "`kca validate` でラボを確かめます",
                "check the lab with `kca validate`",
            ),
        ));
    }
    let task = match &args.task {
        Some(w) => find(lang, &lab, w)?,
        None => on(&lab, entry.as_ref()).unwrap_or(&lab.tasks[0]),
    };
    if ctx.settings.output == OutputFormat::Json {
        let tasks: Vec<_> = if args.list {
            lab.tasks.iter().collect()
        } else {
            vec![task]
        };
        let rows: Vec<_> = tasks
            .iter()
            .map(|t| {
                json!({
                    "number": incident::number(&lab, &t.id), "id": t.id, "title": t.title,
                    "instructions": t.instructions, "lesson": t.lesson,
                    "checks": t.checks.iter().map(|c| &c.id).collect::<Vec<_>>(),
                    "hints": t.hints.len(),
                    "staged": entry.as_ref().is_some_and(|e| e.setups.contains_key(&t.id)),
                })
            })
            .collect();
        ctx.printer.json(&crate::envelope::Envelope::new(
            json!({"lab": lab.id, "tasks": rows}),
        ));
        return Ok(Exit::Success);
    }
    if args.list {
        for l in list_lines(ctx, &lab, entry.as_ref()) {
            ctx.printer.out(&l);
        }
        ctx.printer.out_painted(
            Style::Hint,
            tr(
                lang,
                "読むには `kca lab task N`",
                "read one with `kca lab task N`",
            ),
        );
        return Ok(Exit::Success);
    }
    for l in lines(ctx, &lab, task, entry.as_ref()) {
        ctx.printer.out(&l);
    }
    ctx.printer.out("");
    ctx.printer.out_painted(
        Style::Hint,
        &nav(lang, &lab, incident::number(&lab, &task.id)),
    );
    Ok(Exit::Success)
}

//! `kca validate`: lint lab and quiz files, every problem at once, with file:line:col.

use std::path::PathBuf;

use serde_json::json;

use crate::cli::ValidateArgs;
use crate::content::{self, Document, quiz_lint};
use crate::ctx::Ctx;
use crate::diag::Diagnostic;
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::settings::OutputFormat;
use crate::ui::Style;

pub fn run(ctx: &Ctx, args: &ValidateArgs) -> Result<Exit> {
    let roots: Vec<PathBuf> = if args.paths.is_empty() {
        ["labs", "quizzes"]
            .iter()
            .map(|d| ctx.settings.content_dir.join(d))
            .collect()
    } else {
        args.paths.clone()
    };
    for root in &roots {
        if !root.exists() {
            return Err(Error::usage(
                crate::error::msg(
                    format!("{} がありません", root.display()),
                    format!("{} does not exist", root.display()),
                ),
                crate::error::msg(
                    "ラボかクイズのファイル、またはそれを入れたフォルダーを渡します",
                    "give a lab or quiz file, or a folder of them",
                ),
            ));
        }
    }
    let files: Vec<PathBuf> = roots.iter().flat_map(|r| content::discover(r)).collect();
    let mut problems = Vec::new();
    let mut warnings = Vec::new();
    let mut checked = Vec::new();
    for file in &files {
        match content::load_file(file) {
            Ok(doc) => {
                let (kind, id) = match &doc {
                    Document::Quiz(q) => ("Quiz", q.id.clone()),
                    Document::Lab(l) => ("Lab", l.id.clone()),
                };
                let mut entry =
                    json!({"file": file.display().to_string(), "kind": kind, "id": id, "ok": true});
                if let Document::Lab(l) = &doc
                    && !l.advice.is_empty()
                {
                    let src = std::fs::read_to_string(file).unwrap_or_default();
                    let mut out = crate::diag::Collector::new(file, &src);
                    for (pos, message, hint) in &l.advice {
                        out.warning(*pos, message.clone(), hint.clone());
                    }
                    let found = out.finish();
                    entry["warnings"] = json!(found.len());
                    warnings.extend(found);
                }
                if let Document::Quiz(q) = &doc {
                    // The file loaded a moment ago; the lint needs its text for the source lines.
                    let src = std::fs::read_to_string(file).unwrap_or_default();
                    let (bias, mut found) = quiz_lint::lint(file, &src, q);
                    let lessons = ctx.settings.content_dir.join("lessons");
                    found.extend(quiz_lint::lesson_links(file, &src, q, &lessons));
                    entry["bias"] = json!(bias);
                    entry["warnings"] = json!(found.len());
                    warnings.extend(found);
                }
                checked.push(entry);
            }
            Err(diags) => {
                checked.push(json!({"file": file.display().to_string(), "ok": false, "problems": diags.len()}));
                problems.extend(diags);
            }
        }
    }
    // An error found while linting (or the note that errors were left out) is a
    // problem: a file with one is never reported valid.
    let (errors, advice): (Vec<Diagnostic>, Vec<Diagnostic>) = warnings
        .into_iter()
        .partition(|d| d.severity == crate::diag::Severity::Error);
    problems.extend(errors);
    let warnings = advice;
    if ctx.settings.output == OutputFormat::Json {
        let list = |diags: &[Diagnostic]| -> Vec<_> {
            diags
                .iter()
                .map(|d| json!({"file": d.file.display().to_string(), "line": d.pos.line, "column": d.pos.col, "message": d.message, "hint": d.hint}))
                .collect()
        };
        ctx.printer.json(&json!({"schemaVersion": 1, "files": checked, "problems": list(&problems), "warnings": list(&warnings)}));
        return Ok(if problems.is_empty() {
            Exit::Success
        } else {
            Exit::Usage
        });
    }
    // Warnings are advice for authors: shown, never a failure.
    ctx.printer.diagnostics(&warnings);
    if !problems.is_empty() {
        return Err(Error::Content(problems));
    }
    let word = ctx.printer.paint(Style::Pass, "✓ OK");
    // The note closing a capped file stands for the warnings it left out.
    let left_out: usize = warnings.iter().map(|d| d.left_out).sum();
    let n = files.len();
    let line = match (crate::diag::count(&warnings), left_out) {
        (0, _) => crate::error::msg(
            format!("{n} 個のファイルは有効です"),
            format!("{n} file(s) valid"),
        ),
        (w, 0) => crate::error::msg(
            format!("{n} 個のファイルは有効です。作者向けの警告 {w} 件"),
            format!("{n} file(s) valid, {w} warning(s) for authors"),
        ),
        (w, hidden) => crate::error::msg(
            format!(
                "{n} 個のファイルは有効です。作者向けの警告 {w} 件 (上に出ていないもの {hidden} 件)"
            ),
            format!("{n} file(s) valid, {w} warning(s) for authors ({hidden} not shown above)"),
        ),
    };
    ctx.printer
        .out(&format!("{word} {}", line.get(ctx.settings.lang)));
    Ok(Exit::Success)
}

//! `kca lesson N[#anchor]`: shows a module's lesson, paged on a terminal, wrapped to its
//! width; `--output json` gives the parsed lesson to other front ends.

use super::render;
use crate::cli::LessonArgs;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::settings::OutputFormat;
use crate::state::Store;

pub fn run(ctx: &Ctx, args: &LessonArgs) -> Result<Exit> {
    let (module, anchor) = super::parse_ref(&args.lesson).map_err(|e| {
        Error::usage(
            crate::error::msg(
                format!("`{}` は `module-N#anchor` の形ではありません", e.0),
                e.to_string(),
            ),
            crate::ui::tr(
                ctx.settings.lang,
                "モジュールの番号を指定します。例: `kca lesson 0`、`kca lesson 1#request-path`",
                "name a module number, e.g. `kca lesson 0` or `kca lesson 1#request-path`",
            ),
        )
    })?;
    let anchor = args.section.clone().or(anchor);
    let (mut lesson, fell_back) =
        super::load_noting(&ctx.settings.content_dir, module, ctx.settings.lang)?;
    // A learner working offline copies commands that keep working offline.
    let store = Store::new(&ctx.settings.state_dir);
    if crate::lab::progress::read(&store).is_ok_and(|p| crate::lab::here::prefers_offline(&p)) {
        lesson.offline();
    }
    if let Some(note) = fell_back {
        ctx.printer.warn(&note);
    }
    let section = match &anchor {
        Some(a) => Some(lesson.section(a).ok_or_else(|| {
            Error::usage(
                crate::ui::tr_s(
                    ctx.settings.lang,
                    format!("レッスン {module} に節 `#{a}` はありません"),
                    format!("lesson {module} has no section `#{a}`"),
                ),
                format!(
                    "{} {}",
                    crate::ui::tr(ctx.settings.lang, "節:", "sections:"),
                    lesson
                        .sections
                        .iter()
                        .map(|s| format!("#{}", s.anchor))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?),
        None => None,
    };
    let p = &ctx.printer;
    match ctx.settings.output {
        OutputFormat::Json => {
            let body = match section {
                Some(s) => {
                    serde_json::json!({"lesson": {"module": lesson.module, "lang": lesson.lang,
                    "title": lesson.title, "intro": [], "sections": [s]}})
                }
                None => serde_json::json!({"lesson": lesson}),
            };
            p.json(&crate::envelope::Envelope::new(body));
        }
        _ => {
            let lines = render::lines(p, p.color(), &lesson, section);
            p.page(&lines);
        }
    }
    // Reading the whole lesson counts; a failure to remember it is not worth an error.
    if section.is_none()
        && let Err(e) = crate::course::mark_read(&store, module)
    {
        p.verbose(&format!("could not remember the lesson as read: {e}"));
    }
    Ok(Exit::Success)
}

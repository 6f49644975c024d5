//! The course map: modules in order, each with its lesson, lab and quiz and the learner's
//! progress in each, and the one next step to take (`kca` with no arguments, `kca status`).
//! Reads content and progress; prints through `ui`.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::content::lab::Lab;
use crate::content::quiz::Quiz;
use crate::ctx::Ctx;
use crate::error::Result;
use crate::exit::Exit;
use crate::lab::progress as lab_progress;
use crate::quiz::progress as quiz_progress;
use crate::settings::{Lang, OutputFormat};
use crate::state::Store;
use crate::ui::{Style, tr};

/// Lessons read, by module (`lessons.json`).
pub const LESSONS_FILE: &str = "lessons.json";

#[derive(Debug, Default, Serialize, serde::Deserialize)]
pub struct LessonsRead {
    #[serde(default)]
    pub read: BTreeMap<i64, String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModuleRow {
    pub module: i64,
    pub lesson: Option<Item>,
    pub labs: Vec<Item>,
    pub quiz: Option<Item>,
}

/// One lesson, lab or quiz and where the learner stands.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Item {
    pub id: String,
    pub title: String,
    /// `todo`, `started` or `done`.
    pub state: &'static str,
    /// A short figure: a score, a percentage.
    pub progress: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Next {
    pub command: String,
    pub why: String,
}

fn lab_item(lang: Lang, lab: &Lab, p: &lab_progress::Progress) -> Item {
    let e = p.labs.get(&lab.id);
    let standing = e.filter(|e| e.checked()).map(|e| e.standing(lab));
    Item {
        id: lab.id.clone(),
        title: lab.title.get(lang).to_string(),
        state: match (&standing, e) {
            (Some(s), _) if s.done() => "done",
            (_, Some(_)) => "started",
            _ => "todo",
        },
        // The live score, and the offline standing apart when offline left checks to a cluster.
        progress: standing.map(|s| match crate::lab::overview::offline_short(lang, &s) {
            Some(off) => format!("{}/{} {off}", s.score, s.max_score),
            None => format!("{}/{}", s.score, s.max_score),
        }),
    }
}

fn quiz_item(lang: Lang, q: &Quiz, p: &quiz_progress::Progress) -> Item {
    let rec = p.quizzes.get(&q.id);
    let best = rec.and_then(|r| r.best());
    let passed = rec.is_some_and(|r| r.attempts.iter().any(|a| a.complete && a.passed));
    Item {
        id: q.id.clone(),
        title: q.title.get(lang).to_string(),
        state: if passed {
            "done"
        } else if rec.is_some_and(|r| !r.attempts.is_empty()) {
            "started"
        } else {
            "todo"
        },
        progress: best.map(|a| format!("{:.0}%", a.score * 100.0 / a.max.max(1.0))),
    }
}

/// Builds the map and the next step.
pub fn map(ctx: &Ctx, store: &Store) -> Result<(Vec<ModuleRow>, Next)> {
    let lang = ctx.settings.lang;
    let dir = &ctx.settings.content_dir;
    let (labs, _) = crate::lab::overview::all_labs(ctx)?;
    let (quizzes, _) = crate::content::load_quizzes(dir);
    let lp = lab_progress::read(store).unwrap_or_default();
    let qp = quiz_progress::read(store).unwrap_or_default();
    let read: LessonsRead = store.read(LESSONS_FILE).unwrap_or_default();
    let mut modules: Vec<i64> = crate::lesson::modules(dir);
    modules.extend(labs.iter().filter_map(|l| l.module));
    modules.extend(quizzes.iter().filter_map(|q| q.module));
    modules.sort();
    modules.dedup();
    let mut rows = Vec::new();
    for m in modules {
        let lesson = crate::lesson::load(dir, m, lang).ok().map(|l| Item {
            id: m.to_string(),
            title: l.title,
            state: if read.read.contains_key(&m) {
                "done"
            } else {
                "todo"
            },
            progress: None,
        });
        rows.push(ModuleRow {
            module: m,
            lesson,
            labs: labs
                .iter()
                .filter(|l| l.module == Some(m))
                .map(|l| lab_item(lang, l, &lp))
                .collect(),
            quiz: quizzes
                .iter()
                .find(|q| q.module == Some(m))
                .map(|q| quiz_item(lang, q, &qp)),
        });
    }
    let due = quiz_progress::due(&qp, None, chrono::Utc::now().timestamp(), usize::MAX).len();
    let here = crate::lab::here::default_lab(&lp);
    let offline = crate::lab::here::prefers_offline(&lp);
    let live = crate::lab::here::works_live(&lp);
    let next = next_step(lang, &rows, here.as_deref(), offline, live, due);
    Ok((rows, next))
}

/// The one next step: the first module's first unfinished piece, lesson → lab → quiz;
/// then questions due for review; then the end of the course.
fn next_step(
    lang: Lang,
    rows: &[ModuleRow],
    current: Option<&str>,
    offline: bool,
    live: bool,
    due: usize,
) -> Next {
    // Nothing of the course could be read (no content, or every file broken): not the
    // end of the course, but where to find out why.
    if rows
        .iter()
        .all(|r| r.lesson.is_none() && r.labs.is_empty() && r.quiz.is_none())
    {
        return Next {
            command: "kca validate".into(),
            why: tr(
                lang,
                "コースの内容を読み込めません。理由は `kca validate` で",
                "no course content could be read; `kca validate` says why",
            )
            .to_string(),
        };
    }
    // Started on a cluster before: the next lab goes there too.
    let live = current.is_some() && live;
    for row in rows {
        if let Some(l) = row.lesson.as_ref().filter(|l| l.state != "done") {
            return Next {
                command: format!("kca lesson {}", l.id),
                why: format!(
                    "{} {}: {}",
                    tr(lang, "モジュール", "module"),
                    row.module,
                    tr(lang, "まずレッスンを読む", "read the lesson first")
                ),
            };
        }
        // The lab started last comes before the other unfinished ones.
        let mut labs: Vec<&Item> = row.labs.iter().filter(|l| l.state != "done").collect();
        labs.sort_by_key(|l| Some(l.id.as_str()) != current);
        if let Some(l) = labs.first() {
            return if l.state == "started" {
                Next {
                    command: format!("kca lab watch {}", l.id),
                    why: crate::ui::tr_s(
                        lang,
                        format!(
                            "ラボの続き: ファイルを保存するたびに採点します (一度だけなら `kca lab check {}`、行き詰まったら `kca lab hint`)",
                            l.id
                        ),
                        format!(
                            "continue the lab: graded on every save (once: `kca lab check {}`; stuck? `kca lab hint`)",
                            l.id
                        ),
                    ),
                }
            } else if offline {
                Next {
                    command: format!("kca lab start {} --offline", l.id),
                    why: tr(
                        lang,
                        "ラボを始める (オフラインで続けています)",
                        "start the lab (you are working offline)",
                    )
                    .to_string(),
                }
            } else if live {
                Next {
                    command: format!("kca lab start {}", l.id),
                    why: tr(
                        lang,
                        "ラボを始める (クラスターで続けています)",
                        "start the lab (you are working on a cluster)",
                    )
                    .to_string(),
                }
            } else {
                Next {
                    command: format!("kca lab start {} --offline", l.id),
                    why: tr(
                        lang,
                        "ラボを始める (クラスターがあれば --offline なしで)",
                        "start the lab (without --offline on a cluster)",
                    )
                    .to_string(),
                }
            };
        }
        if let Some(q) = row.quiz.as_ref().filter(|q| q.state != "done") {
            return Next {
                command: format!("kca quiz run {}", q.id),
                why: tr(lang, "理解度クイズ", "check what you learned").to_string(),
            };
        }
    }
    if due > 0 {
        return Next {
            command: "kca quiz review".into(),
            why: format!(
                "{due} {}",
                tr(lang, "問が復習の時期です", "question(s) due for review")
            ),
        };
    }
    Next {
        command: "kca quiz review".into(),
        why: tr(
            lang,
            "コース修了。復習は間隔をあけて続けましょう",
            "course complete; keep reviewing, spaced",
        )
        .to_string(),
    }
}

fn mark(state: &str) -> &'static str {
    match state {
        "done" => "✓",
        "started" => "…",
        _ => "·",
    }
}

/// `kca` / `kca status`: prints the map and the next step.
pub fn status(ctx: &Ctx, store: &Store) -> Result<Exit> {
    let lang = ctx.settings.lang;
    let (rows, next) = map(ctx, store)?;
    let p = &ctx.printer;
    if ctx.settings.output == OutputFormat::Json {
        p.json(&crate::envelope::Envelope::new(
            serde_json::json!({"modules": rows, "next": next}),
        ));
        return Ok(Exit::Success);
    }
    p.out(&p.paint(
        Style::Heading,
        tr(lang, "Kyverno ハンズオンコース", "Kyverno hands-on course"),
    ));
    let word = |k: &str| match k {
        "lesson" => tr(lang, "レッスン", "lesson"),
        "lab" => tr(lang, "ラボ", "lab"),
        _ => tr(lang, "クイズ", "quiz"),
    };
    let mut table = Vec::new();
    for row in &rows {
        table.push(vec![
            format!("{} {}", tr(lang, "モジュール", "Module"), row.module),
            String::new(),
            String::new(),
            String::new(),
        ]);
        let mut items: Vec<(&str, &Item)> = Vec::new();
        items.extend(row.lesson.iter().map(|i| ("lesson", i)));
        items.extend(row.labs.iter().map(|i| ("lab", i)));
        items.extend(row.quiz.iter().map(|i| ("quiz", i)));
        for (kind, i) in items {
            table.push(vec![
                format!("  {} {}", mark(i.state), word(kind)),
                i.id.clone(),
                i.progress.clone().unwrap_or_else(|| "-".into()),
                i.title.clone(),
            ]);
        }
    }
    for line in crate::ui::table(&table, p.width()) {
        p.out(&line);
    }
    p.out("");
    p.out(&p.paint(
        Style::Hint,
        &format!("{} {}", tr(lang, "次:", "next:"), next.command),
    ));
    p.out_wrapped(&next.why, "  ");
    Ok(Exit::Success)
}

/// Remembers that module `m`'s lesson was read (best effort: reading never fails on it).
pub fn mark_read(store: &Store, m: i64) -> Result<()> {
    store.update(LESSONS_FILE, |r: &mut LessonsRead| {
        r.read.entry(m).or_insert_with(lab_progress::now);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_content_read_is_not_the_end_of_the_course() {
        let next = next_step(Lang::En, &[], None, true, false, 0);
        assert_eq!(next.command, "kca validate");
        let empty = ModuleRow {
            module: 0,
            lesson: None,
            labs: Vec::new(),
            quiz: None,
        };
        let next = next_step(Lang::Ja, &[empty], None, true, false, 0);
        assert_eq!(next.command, "kca validate");
        assert!(next.why.contains("読み込めません"), "{}", next.why);
    }
}

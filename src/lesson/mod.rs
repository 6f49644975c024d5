//! Lessons: each module's text in `lessons/module-N/{ja,en}.md`, in a small Markdown
//! subset (`# Title`, `## Heading {#anchor}` sections with the same anchors in both
//! languages, paragraphs, `- ` lists, fenced code, inline `code` and **bold**). Parsing
//! and lookup here; `render` turns a lesson into terminal lines, `kca lesson` prints them.

pub mod command;
pub mod render;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::settings::Lang;

/// One block of a section.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Block {
    Paragraph { text: String },
    List { items: Vec<String> },
    Code { lang: String, text: String },
    Heading { text: String },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Section {
    pub anchor: String,
    pub heading: String,
    pub blocks: Vec<Block>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lesson {
    pub module: i64,
    pub lang: Lang,
    pub title: String,
    /// Blocks before the first `##` heading.
    pub intro: Vec<Block>,
    pub sections: Vec<Section>,
}

pub fn lessons_dir(content_dir: &Path) -> PathBuf {
    content_dir.join("lessons")
}

/// `lessons/module-N/<lang>.md`.
pub fn file(content_dir: &Path, module: i64, lang: Lang) -> PathBuf {
    let name = match lang {
        Lang::Ja => "ja.md",
        Lang::En => "en.md",
    };
    lessons_dir(content_dir)
        .join(format!("module-{module}"))
        .join(name)
}

/// Module numbers that have a lesson folder, sorted.
pub fn modules(content_dir: &Path) -> Vec<i64> {
    let mut out: Vec<i64> = std::fs::read_dir(lessons_dir(content_dir))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_prefix("module-")?
                .parse()
                .ok()
        })
        .collect();
    out.sort();
    out
}

/// Loads module `module`'s lesson in `lang`, falling back to the other language.
pub fn load(content_dir: &Path, module: i64, lang: Lang) -> Result<Lesson> {
    load_noting(content_dir, module, lang).map(|(lesson, _)| lesson)
}

/// `load`, and when it fell back to the other language, why the asked one could not be
/// read (a line for the learner, in `lang`): `kca lesson` never switches silently.
pub fn load_noting(
    content_dir: &Path,
    module: i64,
    lang: Lang,
) -> Result<(Lesson, Option<String>)> {
    let other = match lang {
        Lang::Ja => Lang::En,
        Lang::En => Lang::Ja,
    };
    let mut why = None;
    for l in [lang, other] {
        let path = file(content_dir, module, l);
        match crate::input::read_text(&path) {
            Ok(text) => {
                let note = why.take().map(|e: String| {
                    crate::ui::tr_s(
                        lang,
                        format!(
                            "{} を読めません ({e})。英語のレッスンを表示します。",
                            crate::escape::path(&file(content_dir, module, lang))
                        ),
                        format!(
                            "cannot read {} ({e}); showing the Japanese lesson instead.",
                            crate::escape::path(&file(content_dir, module, lang))
                        ),
                    )
                });
                return Ok((parse(&text, module, l), note));
            }
            Err(e) if why.is_none() => {
                why = Some(crate::escape::escape(&e.to_string()).into_owned())
            }
            Err(_) => {}
        }
    }
    let have = modules(content_dir);
    let hint = if have.is_empty() {
        format!(
            "no lessons under {}; set --content-dir",
            lessons_dir(content_dir).display()
        )
    } else {
        format!(
            "{} {}",
            crate::ui::tr(lang, "レッスン:", "lessons:"),
            have.iter()
                .map(|m| format!("`kca lesson {m}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Err(Error::usage(
        crate::ui::tr_s(
            lang,
            format!("モジュール {module} のレッスンはありません"),
            format!("no lesson for module {module}"),
        ),
        hint,
    ))
}

impl Lesson {
    /// For a learner working offline: every `kca lab start LAB` the text suggests gets
    /// `--offline` (a command copied from the lesson then works without a cluster).
    pub fn offline(&mut self) {
        let fix = |t: &mut String| *t = with_offline(t);
        let block = |b: &mut Block| match b {
            Block::Paragraph { text } | Block::Code { text, .. } | Block::Heading { text } => {
                fix(text)
            }
            Block::List { items } => items.iter_mut().for_each(fix),
        };
        self.intro.iter_mut().for_each(block);
        for s in &mut self.sections {
            s.blocks.iter_mut().for_each(block);
        }
    }
}

/// `kca lab start ID` → `kca lab start ID --offline`, unless it already says so.
fn with_offline(text: &str) -> String {
    static START: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = START.get_or_init(|| {
        regex::Regex::new(r"kca lab start ([a-z0-9][a-z0-9-]*)( --offline)?")
            .expect("a valid regex")
    });
    re.replace_all(text, "kca lab start $1 --offline")
        .into_owned()
}

/// Splits `## Heading {#anchor}` into the heading and its anchor (a slug of the
/// heading when the anchor is missing).
fn heading_anchor(line: &str) -> (String, String) {
    if let Some(open) = line.rfind("{#")
        && line.trim_end().ends_with('}')
    {
        let anchor = line[open + 2..line.trim_end().len() - 1].trim().to_string();
        return (line[..open].trim().to_string(), anchor);
    }
    let slug: String = line
        .trim()
        .to_lowercase()
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { '-' })
        .collect();
    (line.trim().to_string(), slug)
}

/// Parses the lesson subset; anything unrecognised is kept as paragraph text.
pub fn parse(text: &str, module: i64, lang: Lang) -> Lesson {
    let mut lesson = Lesson {
        module,
        lang,
        title: String::new(),
        intro: Vec::new(),
        sections: Vec::new(),
    };
    let mut para: Vec<String> = Vec::new();
    let mut list: Vec<String> = Vec::new();
    let mut code: Option<(String, Vec<String>)> = None;
    let mut blocks: Vec<Block> = Vec::new();
    fn flush(para: &mut Vec<String>, list: &mut Vec<String>, blocks: &mut Vec<Block>) {
        if !para.is_empty() {
            blocks.push(Block::Paragraph {
                text: para.join(" "),
            });
            para.clear();
        }
        if !list.is_empty() {
            blocks.push(Block::List {
                items: std::mem::take(list),
            });
        }
    }
    let close = |lesson: &mut Lesson, blocks: &mut Vec<Block>| match lesson.sections.last_mut() {
        Some(s) => s.blocks.append(blocks),
        None => lesson.intro.append(blocks),
    };
    for line in text.lines() {
        if let Some((lang, body)) = code.as_mut() {
            if line.trim_start().starts_with("```") {
                blocks.push(Block::Code {
                    lang: std::mem::take(lang),
                    text: body.join("\n"),
                });
                code = None;
            } else {
                body.push(line.to_string());
            }
            continue;
        }
        let t = line.trim_end();
        if let Some(rest) = t.trim_start().strip_prefix("```") {
            flush(&mut para, &mut list, &mut blocks);
            code = Some((rest.trim().to_string(), Vec::new()));
        } else if let Some(h) = t.strip_prefix("# ") {
            flush(&mut para, &mut list, &mut blocks);
            lesson.title = h.trim().to_string();
        } else if let Some(h) = t.strip_prefix("## ") {
            flush(&mut para, &mut list, &mut blocks);
            close(&mut lesson, &mut blocks);
            let (heading, anchor) = heading_anchor(h);
            lesson.sections.push(Section {
                anchor,
                heading,
                blocks: Vec::new(),
            });
        } else if let Some(h) = t.strip_prefix("### ") {
            flush(&mut para, &mut list, &mut blocks);
            blocks.push(Block::Heading {
                text: heading_anchor(h).0,
            });
        } else if let Some(item) = t.strip_prefix("- ").or_else(|| t.strip_prefix("* ")) {
            if !para.is_empty() {
                flush(&mut para, &mut Vec::new(), &mut blocks);
            }
            list.push(item.trim().to_string());
        } else if t.trim().is_empty() {
            flush(&mut para, &mut list, &mut blocks);
        } else if !list.is_empty() && t.starts_with("  ") {
            // A list item continued on the next line.
            if let Some(last) = list.last_mut() {
                last.push(' ');
                last.push_str(t.trim());
            }
        } else {
            if !list.is_empty() {
                flush(&mut Vec::new(), &mut list, &mut blocks);
            }
            para.push(t.trim().to_string());
        }
    }
    if let Some((lang, body)) = code {
        blocks.push(Block::Code {
            lang,
            text: body.join("\n"),
        });
    }
    flush(&mut para, &mut list, &mut blocks);
    close(&mut lesson, &mut blocks);
    lesson
}

impl Lesson {
    pub fn section(&self, anchor: &str) -> Option<&Section> {
        self.sections.iter().find(|s| s.anchor == anchor)
    }
}

/// A lesson reference that is not `module-N#anchor` (nor `N#anchor`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not `module-N#anchor`")]
pub struct BadRef(pub String);

/// A lesson reference as tasks and questions carry it: `module-N#anchor`. Returns the
/// module and anchor, or what is wrong with it.
pub fn parse_ref(reference: &str) -> std::result::Result<(i64, Option<String>), BadRef> {
    let (module, anchor) = match reference.split_once('#') {
        Some((m, a)) => (m, Some(a.to_string())),
        None => (reference, None),
    };
    let n = module
        .strip_prefix("module-")
        .unwrap_or(module)
        .parse::<i64>()
        .map_err(|_| BadRef(reference.to_string()))?;
    Ok((n, anchor.filter(|a| !a.is_empty())))
}

/// For each language of lesson `module` (Japanese, then English): its file and the
/// anchors of its sections (`None`: the file is absent). The one reading behind every
/// `lesson:` link check, from labs, quizzes and references.
pub fn anchors(content_dir: &Path, module: i64) -> Vec<(PathBuf, Option<Vec<String>>)> {
    [Lang::Ja, Lang::En]
        .into_iter()
        .map(|lang| {
            let path = file(content_dir, module, lang);
            let found = crate::input::read_text(&path).ok().map(|text| {
                parse(&text, module, lang)
                    .sections
                    .into_iter()
                    .map(|s| s.anchor)
                    .collect()
            });
            (path, found)
        })
        .collect()
}

/// [`anchors`] reduced to whether each file has the section `anchor` (no anchor: the
/// file is enough).
pub fn section_presence(
    content_dir: &Path,
    module: i64,
    anchor: Option<&str>,
) -> Vec<(PathBuf, Option<bool>)> {
    anchors(content_dir, module)
        .into_iter()
        .map(|(path, found)| {
            let has = found.map(|list| anchor.is_none_or(|a| list.iter().any(|x| x == a)));
            (path, has)
        })
        .collect()
}

/// The line that points a learner from feedback to the lesson: `→ kca lesson 0#anchor
/// §Heading` (the heading in the learner's language, when the lesson is there).
pub fn link_line(content_dir: &Path, reference: &str, lang: Lang) -> Option<String> {
    let (module, anchor) = parse_ref(reference).ok()?;
    let anchor = anchor?;
    let heading = load(content_dir, module, lang)
        .ok()
        .and_then(|l| l.section(&anchor).map(|s| s.heading.clone()));
    Some(match heading {
        Some(h) => format!("→ kca lesson {module}#{anchor}  §{h}"),
        None => format!("→ kca lesson {module}#{anchor}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "# 入門\n\n最初の段落は\n二行です。\n\n## 流れ {#flow}\n\n- 認証\n- 認可\n  続き\n\n```yaml\nkind: Pod\n```\n\n## Other\n\n**太字** と `code`。\n";

    #[test]
    fn parses_title_sections_lists_and_code() {
        let l = parse(SAMPLE, 0, Lang::Ja);
        assert_eq!(l.title, "入門");
        assert_eq!(
            l.intro,
            vec![Block::Paragraph {
                text: "最初の段落は 二行です。".into()
            }]
        );
        assert_eq!(l.sections[0].anchor, "flow");
        assert_eq!(l.sections[0].heading, "流れ");
        assert_eq!(
            l.sections[0].blocks[0],
            Block::List {
                items: vec!["認証".into(), "認可 続き".into()]
            }
        );
        assert_eq!(
            l.sections[0].blocks[1],
            Block::Code {
                lang: "yaml".into(),
                text: "kind: Pod".into()
            }
        );
        assert_eq!(l.sections[1].anchor, "other");
    }
}

//! A lesson as terminal lines: title and headings styled, paragraphs and list items
//! wrapped to the terminal (Japanese between characters, English at spaces), code blocks
//! indented and never wrapped, inline `code` and **bold** styled (without colour, code
//! keeps its backticks and bold its plain text).

use super::{Block, Lesson, Section};
use crate::ui::{self, Printer, Style};

/// Lesson text made safe for a pager that passes escapes (`PAGER=cat`, `more`): tabs
/// as spaces, every other control character as a visible escape.
fn clean(text: &str) -> String {
    crate::escape::escape(&text.replace('\t', "    ")).into_owned()
}

/// Styles inline `code` and **bold** spans; without colour the text is left as written.
fn inline(p: &Printer, text: &str, color: bool) -> String {
    let cleaned = clean(text);
    let text: &str = &cleaned;
    if !color {
        // Bold has no plain-text form worth keeping; `code` keeps its backticks.
        return text.replace("**", "");
    }
    let mut out = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        let next_code = rest.find('`');
        let next_bold = rest.find("**");
        match (next_code, next_bold) {
            (Some(c), b) if b.is_none_or(|b| c < b) => {
                out.push_str(&rest[..c]);
                let after = &rest[c + 1..];
                match after.find('`') {
                    Some(end) => {
                        out.push_str(&p.paint(Style::Code, &after[..end]));
                        rest = &after[end + 1..];
                    }
                    None => {
                        out.push_str(&rest[c..]);
                        rest = "";
                    }
                }
            }
            (_, Some(b)) => {
                out.push_str(&rest[..b]);
                let after = &rest[b + 2..];
                match after.find("**") {
                    Some(end) => {
                        out.push_str(&p.paint(Style::Heading, &after[..end]));
                        rest = &after[end + 2..];
                    }
                    None => {
                        out.push_str(&rest[b..]);
                        rest = "";
                    }
                }
            }
            _ => {
                out.push_str(rest);
                rest = "";
            }
        }
    }
    out
}

fn blocks(p: &Printer, color: bool, blocks: &[Block], out: &mut Vec<String>) {
    let width = p.width();
    for b in blocks {
        match b {
            Block::Paragraph { text } => {
                out.extend(ui::wrap(&inline(p, text, color), width, "  "));
            }
            Block::Heading { text } => {
                for l in ui::wrap(&clean(text), width, "  ") {
                    out.push(p.paint(Style::Heading, &l));
                }
            }
            Block::List { items } => {
                for item in items {
                    let lines = ui::wrap(&inline(p, item, color), width, "    ");
                    for (i, l) in lines.into_iter().enumerate() {
                        out.push(if i == 0 {
                            format!("  • {}", l.trim_start())
                        } else {
                            l
                        });
                    }
                }
            }
            Block::Code { text, .. } => {
                for l in text.lines() {
                    out.push(p.paint(Style::Code, &format!("    {}", clean(l))));
                }
            }
        }
        out.push(String::new());
    }
}

fn section(p: &Printer, color: bool, s: &Section, out: &mut Vec<String>) {
    let head = format!("§ {}", clean(&s.heading));
    let anchor = format!("#{}", clean(&s.anchor));
    if ui::width(&head) + 2 + ui::width(&anchor) <= p.width() {
        out.push(format!(
            "{}  {}",
            p.paint(Style::Heading, &head),
            p.paint(Style::Dim, &anchor)
        ));
    } else {
        for l in ui::wrap(&head, p.width(), "") {
            out.push(p.paint(Style::Heading, &l));
        }
        out.push(p.paint(Style::Dim, &format!("  {anchor}")));
    }
    out.push(String::new());
    blocks(p, color, &s.blocks, out);
}

/// The whole lesson, or only the section `anchor`.
pub fn lines(p: &Printer, color: bool, lesson: &Lesson, only: Option<&Section>) -> Vec<String> {
    let mut out = Vec::new();
    let title = format!(
        "{} {} — {}",
        crate::ui::tr(p.lang(), "レッスン", "Lesson"),
        lesson.module,
        clean(&lesson.title)
    );
    for l in ui::wrap(&title, p.width(), "") {
        out.push(p.paint(Style::Heading, &l));
    }
    out.push(p.paint(Style::Dim, &"─".repeat(ui::width(&title).min(p.width()))));
    out.push(String::new());
    match only {
        Some(s) => section(p, color, s, &mut out),
        None => {
            blocks(p, color, &lesson.intro, &mut out);
            for s in &lesson.sections {
                section(p, color, s, &mut out);
            }
        }
    }
    while out.last().is_some_and(String::is_empty) {
        out.pop();
    }
    out
}

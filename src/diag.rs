//! Diagnostics for content and learner files: `file:line:col`, the source line, a caret,
//! and what to do next. Collects every problem of a file; renders them in one place.

use std::fmt;
use std::path::{Path, PathBuf};

use unicode_width::UnicodeWidthStr;

use crate::error::Msg;
use crate::escape::{self, escape};
use crate::settings::Lang;
use crate::yaml::Pos;

/// How bad a problem is: an error makes a file unusable; a warning is advice for the
/// author (e.g. a quiz a test-wise learner can pass without knowing the material) and
/// never changes an exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    #[default]
    Error,
    Warning,
}

impl Severity {
    pub fn word(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// One problem found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub file: PathBuf,
    pub pos: Pos,
    pub message: String,
    /// What to do about it.
    pub hint: Option<String>,
    /// The offending source line, shown with a caret under `pos.col`; of a long line only
    /// a window around the column (as rustc shows one), `…` where it was cut.
    pub source_line: Option<String>,
    /// Characters of the line left out before `source_line`'s window (0: from its start).
    pub source_from: usize,
    pub severity: Severity,
    /// On the note that closes a capped file: how many problems it stands for (0 on
    /// every other diagnostic), so a count of warnings includes the ones not shown.
    pub left_out: usize,
    /// The message and hint in Japanese, shown on a Japanese screen (an author's content
    /// problem as much as a learner's file); none where the words are the same in both
    /// (data). The `file:line:col: error:` lead stays as compilers write it either way.
    pub ja: Option<Box<Ja>>,
}

/// A diagnostic's message and hint in Japanese.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ja {
    pub message: String,
    pub hint: Option<String>,
}

/// How many problems `diags` stand for: the note closing a capped file counts the ones
/// it left out.
pub fn count(diags: &[Diagnostic]) -> usize {
    diags.iter().map(|d| d.left_out.max(1)).sum()
}

impl Diagnostic {
    /// The `file:line:col` prefix.
    pub fn location(&self) -> String {
        format!("{}:{}:{}", self.file.display(), self.pos.line, self.pos.col)
    }
}

/// Everything in a diagnostic quotes a file (its name, its keys, its lines): control
/// characters are shown as escapes so a file cannot forge output or drive the terminal.
impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(Lang::En))
    }
}

impl Diagnostic {
    /// The diagnostic in `lang`: `file:line:col: error:` stays as compilers write it (editors
    /// and CI parse that line); its message and hint are Japanese where it has them.
    pub fn render(&self, lang: Lang) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = self.write(&mut out, lang);
        out
    }

    fn write(&self, f: &mut impl fmt::Write, lang: Lang) -> fmt::Result {
        let ja = self.ja.as_deref().filter(|_| lang == Lang::Ja);
        let message = ja.map_or(self.message.as_str(), |j| j.message.as_str());
        writeln!(
            f,
            "{}: {}: {}",
            escape(&self.location()),
            self.severity.word(),
            escape::lines(message)
        )?;
        self.write_excerpt(f)?;
        let hint = match ja {
            Some(j) => j.hint.as_deref().map(|h| ("ヒント:", h)),
            None => self.hint.as_deref().map(|h| ("hint:", h)),
        };
        if let Some((word, hint)) = hint {
            writeln!(f, "  {word} {}", escape::lines(hint))?;
        }
        Ok(())
    }

    /// The source line (or its window) with a caret under the column, as rustc shows it.
    fn write_excerpt(&self, f: &mut impl fmt::Write) -> fmt::Result {
        if let Some(line) = &self.source_line {
            let gutter = self.pos.line.to_string();
            let pad = " ".repeat(gutter.len());
            writeln!(f, "{pad} |")?;
            writeln!(f, "{gutter} | {}", escape(line))?;
            // Display columns (CJK is two wide) of the escaped text before the column.
            let col = self
                .pos
                .col
                .saturating_sub(1)
                .saturating_sub(self.source_from);
            let before: String = line.chars().take(col).collect();
            let caret_at = escape(&before).width();
            writeln!(f, "{pad} | {}^", " ".repeat(caret_at))?;
        }
        Ok(())
    }

    /// The excerpt lines (gutter, source line, caret) alone, for a report that names the
    /// file problem in its own words above them.
    pub fn excerpt(&self) -> Vec<String> {
        let mut out = String::new();
        let _ = self.write_excerpt(&mut out);
        out.lines().map(str::to_string).collect()
    }
}

/// A YAML syntax error in a file a learner wrote or handed in (`source` is its text): one
/// diagnostic with the line and a caret, the parser's words kept as data under a message
/// in the learner's language.
pub fn yaml_error(file: &Path, source: &str, e: &crate::yaml::YamlError) -> Diagnostic {
    let mut c = Collector::new(file, source);
    c.yaml_error(e);
    c.finish().remove(0)
}

/// The line `pos` points at in `source`, at most `chars` characters of it, with a caret
/// under the column (gutter, line, caret), for a report that names the problem itself.
pub fn excerpt(source: &str, pos: Pos, chars: usize) -> Vec<String> {
    let mut c = Collector::new(Path::new(""), source).with_window(chars);
    c.error(pos, "");
    c.finish()
        .first()
        .map(Diagnostic::excerpt)
        .unwrap_or_default()
}

/// A file of a learner's that is not YAML, as the command's error: the one diagnostic.
pub fn not_yaml(file: &Path, source: &str, e: &crate::yaml::YamlError) -> crate::error::Error {
    crate::error::Error::Content(vec![yaml_error(file, source, e)])
}

/// What to do about a YAML syntax error ([`crate::yaml::hint`]), in both languages.
pub fn yaml_hint(source: &str, e: &crate::yaml::YamlError) -> Msg {
    let en = crate::yaml::hint(source, e);
    let ja = if en.contains("tabs") {
        "YAML の字下げはタブではなく空白です。この行の先頭のタブを空白に置き換えます"
    } else if en.starts_with("check the indentation") {
        "字下げを確かめます。一つのマッピングのキー (と一つのリストの `-`) は同じ列から始まりますが、この行は上の行と揃っていません"
    } else if en.starts_with("a `key:` cannot start here") {
        "ここでは `key:` を始められません。この行をマッピングのほかのキーと同じだけ字下げするか、`: ` を含む値を引用符で囲みます"
    } else {
        "この位置の YAML の構文を直します"
    };
    crate::error::msg(ja, en)
}

/// Characters of a source line shown at most; a longer line (minified JSON, a one-line
/// 7 MB file) is shown as a window around the column.
pub const LINE_WINDOW: usize = 120;

/// Characters between the marks of a [`LineIndex`].
const MARK_EVERY: usize = 256;

/// Where every [`MARK_EVERY`]-th character of one long line starts (a byte offset), so
/// the window of each of its problems is found from the nearest mark: the line is walked
/// once, not once per problem (a one-line 7 MB file has thousands).
#[derive(Debug)]
struct LineIndex {
    line: usize,
    marks: Vec<usize>,
}

impl LineIndex {
    fn new(line_no: usize, line: &str) -> Self {
        // An ASCII line (minified JSON) needs no marks: its characters are its bytes.
        let marks = if line.is_ascii() {
            Vec::new()
        } else {
            line.char_indices()
                .step_by(MARK_EVERY)
                .map(|(i, _)| i)
                .collect()
        };
        LineIndex {
            line: line_no,
            marks,
        }
    }

    /// The byte offset of character `ch` of `line`, or the line's length past its end.
    fn byte_at(&self, line: &str, ch: usize) -> usize {
        if self.marks.is_empty() {
            return ch.min(line.len());
        }
        let Some(&mark) = self.marks.get(ch / MARK_EVERY) else {
            return line.len();
        };
        line[mark..]
            .char_indices()
            .nth(ch % MARK_EVERY)
            .map_or(line.len(), |(i, _)| mark + i)
    }
}

/// `line`, or the window of it around character `col` with `…` where it was cut; and how
/// many characters were left out before the window (the `…` takes one column's place).
/// `index` is `line`'s, built by the caller only for a line longer than `size` bytes.
fn window(line: &str, col: usize, size: usize, index: Option<&LineIndex>) -> (String, usize) {
    // Byte length bounds the character count from above: short lines stay whole cheaply.
    let Some(index) = index.filter(|_| line.len() > size) else {
        return (line.to_string(), 0);
    };
    if index.byte_at(line, size) == line.len() {
        return (line.to_string(), 0);
    }
    let from = col.saturating_sub(size / 2);
    let start = index.byte_at(line, from);
    let end = index.byte_at(line, from + size);
    let mut out = String::with_capacity(end - start + 6);
    if from > 0 {
        out.push('…');
    }
    out.push_str(&line[start..end]);
    if end < line.len() {
        out.push('…');
    }
    // The leading `…` stands for the characters before the window, one column wide.
    (out, from.saturating_sub(usize::from(from > 0)))
}

/// Collects the problems of one source text.
#[derive(Debug)]
pub struct Collector<'a> {
    file: PathBuf,
    source: &'a str,
    /// Byte offset where each line starts, computed on the first problem.
    line_starts: Vec<usize>,
    diags: Vec<Diagnostic>,
    /// Problems past `MAX_PER_FILE`, counted but not kept.
    dropped: usize,
    /// How many of the dropped were errors (the rest warnings).
    dropped_errors: usize,
    /// Characters of a long source line shown around the column.
    window: usize,
    /// The character marks of the last long line a problem was on.
    long_line: Option<LineIndex>,
}

/// A file with more problems than this is not worth reading problem by problem; the
/// rest are counted in one closing diagnostic.
pub const MAX_PER_FILE: usize = 200;

impl<'a> Collector<'a> {
    pub fn new(file: &Path, source: &'a str) -> Self {
        Collector {
            file: file.to_path_buf(),
            source,
            line_starts: Vec::new(),
            diags: Vec::new(),
            dropped: 0,
            dropped_errors: 0,
            window: LINE_WINDOW,
            long_line: None,
        }
    }

    /// Shows at most `chars` characters of a long source line (a report inside an
    /// 80-column screen), instead of [`LINE_WINDOW`].
    pub fn with_window(mut self, chars: usize) -> Self {
        self.window = chars.max(8);
        self
    }

    pub fn file(&self) -> &Path {
        &self.file
    }

    /// An error without a hint; `message` is a [`Msg`] (both languages, `msg(ja, en)`)
    /// or text the same in both (data such as a path).
    pub fn error(&mut self, pos: Pos, message: impl Into<Msg>) {
        self.said(pos, message.into(), None, Severity::Error);
    }

    /// A YAML syntax error of this file, with what to do about it, in both languages.
    pub fn yaml_error(&mut self, e: &crate::yaml::YamlError) {
        let hint = yaml_hint(self.source, e);
        self.error_said(
            e.pos,
            crate::error::msg(
                format!("YAML として読めません: {}", e.message),
                format!("invalid YAML: {}", e.message),
            ),
            hint,
        );
    }

    /// An error a learner reads, in both languages.
    pub fn error_said(&mut self, pos: Pos, message: Msg, hint: Msg) {
        self.said(pos, message, Some(hint), Severity::Error);
    }

    /// An error with what to do about it, each in both languages (or data).
    pub fn error_hint(&mut self, pos: Pos, message: impl Into<Msg>, hint: impl Into<Msg>) {
        self.said(pos, message.into(), Some(hint.into()), Severity::Error);
    }

    /// Advice for the author, not a problem that stops the file from loading.
    pub fn warning(&mut self, pos: Pos, message: impl Into<Msg>, hint: impl Into<Msg>) {
        self.said(pos, message.into(), Some(hint.into()), Severity::Warning);
    }

    /// Whether a further problem would only be counted (the file's cap is reached):
    /// a caller can then skip wording it, e.g. looking for a close name to suggest.
    pub fn is_full(&self) -> bool {
        self.diags.len() >= MAX_PER_FILE
    }

    /// A problem in both languages; the Japanese is kept only where it differs.
    fn said(&mut self, pos: Pos, message: Msg, hint: Option<Msg>, severity: Severity) {
        if self.is_full() {
            self.count_dropped(severity);
            return;
        }
        let differs = message.ja != message.en || hint.as_ref().is_some_and(|h| h.ja != h.en);
        let (hint_en, hint_ja) = match hint {
            Some(h) => (Some(h.en), Some(h.ja)),
            None => (None, None),
        };
        let ja = differs.then_some(Ja {
            message: message.ja,
            hint: hint_ja,
        });
        self.push_ja(pos, message.en, hint_en, severity, ja);
    }

    /// Counts a problem past the cap without wording it (see [`Collector::is_full`]).
    pub fn count_dropped(&mut self, severity: Severity) {
        self.dropped += 1;
        self.dropped_errors += usize::from(severity == Severity::Error);
    }

    fn push_ja(
        &mut self,
        pos: Pos,
        message: String,
        hint: Option<String>,
        severity: Severity,
        ja: Option<Ja>,
    ) {
        if self.is_full() {
            self.count_dropped(severity);
            return;
        }
        if self.line_starts.is_empty() {
            self.line_starts = std::iter::once(0)
                .chain(self.source.match_indices('\n').map(|(i, _)| i + 1))
                .collect();
        }
        let (source_line, source_from) = match self.line_starts.get(pos.line.saturating_sub(1)) {
            Some(&start) => {
                // The next line's start ends this one: no scan of a long line per problem.
                let end = self
                    .line_starts
                    .get(pos.line)
                    .map_or(self.source.len(), |next| next - 1);
                let line = self.source[start..end].trim_end();
                let index = (line.len() > self.window).then(|| match self.long_line.take() {
                    Some(known) if known.line == pos.line => known,
                    _ => LineIndex::new(pos.line, line),
                });
                let (text, from) =
                    window(line, pos.col.saturating_sub(1), self.window, index.as_ref());
                self.long_line = index.or(self.long_line.take());
                (Some(text), from)
            }
            None => (None, 0),
        };
        self.diags.push(Diagnostic {
            file: self.file.clone(),
            pos,
            message,
            hint,
            source_line,
            source_from,
            severity,
            left_out: 0,
            ja: ja.map(Box::new),
        });
    }

    pub fn is_empty(&self) -> bool {
        self.diags.is_empty()
    }

    /// An empty collector for the same file, to gather the problems of a part of it
    /// checked on another thread (then [`Collector::absorb`] them back, in order).
    pub fn sibling(&self) -> Collector<'a> {
        Collector::new(&self.file, self.source).with_window(self.window)
    }

    /// Takes over the problems another collector found in the same file (in a piece
    /// of it checked on another thread), as if they had been reported here in turn.
    pub fn absorb(&mut self, other: Collector<'_>) {
        for d in other.diags {
            if self.is_full() {
                self.count_dropped(d.severity);
            } else {
                self.diags.push(d);
            }
        }
        self.dropped += other.dropped;
        self.dropped_errors += other.dropped_errors;
    }

    /// The problems, in source order.
    pub fn finish(mut self) -> Vec<Diagnostic> {
        self.diags.sort_by_key(|d| d.pos);
        if self.dropped > 0 {
            let last = self.diags.last().map(|d| d.pos).unwrap_or_default();
            self.diags.push(Diagnostic {
                file: self.file.clone(),
                pos: last,
                // Warnings left out stay warnings: the file is not made invalid by them,
                // and a left-out error is never shown as a mere note.
                message: match self.dropped_errors {
                    0 => format!("… and {} more warning(s) not shown", self.dropped),
                    n => format!(
                        "… and {} more problem(s) not shown ({n} of them errors)",
                        self.dropped
                    ),
                },
                hint: Some("fix the problems above first, then validate again".into()),
                source_line: None,
                source_from: 0,
                left_out: self.dropped,
                ja: Some(Box::new(Ja {
                    message: match self.dropped_errors {
                        0 => format!("… ほかに表示していない警告が {} 件あります", self.dropped),
                        n => format!(
                            "… ほかに表示していない問題が {} 件あります (うちエラー {n} 件)",
                            self.dropped
                        ),
                    },
                    hint: Some("上の問題を先に直してから、もう一度検証します".into()),
                })),
                severity: if self.dropped_errors > 0 {
                    Severity::Error
                } else {
                    Severity::Warning
                },
            });
        }
        self.diags
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_location_line_caret_and_hint() {
        let src = "a: 1\nquestoins: []\n";
        let mut c = Collector::new(Path::new("q.yaml"), src);
        c.error_hint(
            Pos { line: 2, col: 1 },
            "unknown field `questoins`",
            "did you mean `questions`?",
        );
        let out = c.finish()[0].to_string();
        assert_eq!(
            out,
            "q.yaml:2:1: error: unknown field `questoins`\n  |\n2 | questoins: []\n  | ^\n  hint: did you mean `questions`?\n"
        );
    }

    #[test]
    fn caret_accounts_for_wide_characters() {
        let src = "題: x\n";
        let mut c = Collector::new(Path::new("q.yaml"), src);
        c.error(Pos { line: 1, col: 4 }, "bad");
        let out = c.finish()[0].to_string();
        assert!(out.contains("1 | 題: x\n  |     ^\n"), "{out}");
    }

    #[test]
    fn a_file_cannot_forge_lines_or_drive_the_terminal() {
        let src = "a: 1\n\u{1b}[2Jkey\r: x\n";
        let mut c = Collector::new(Path::new("evil\n✓ PASS.yaml"), src);
        c.error(Pos { line: 2, col: 5 }, "unknown field `\u{1b}[2Jkey\r`");
        let out = c.finish()[0].to_string();
        assert!(!out.contains('\u{1b}') && !out.contains('\r'), "{out}");
        assert!(out.starts_with("evil\\n✓ PASS.yaml:2:5: error:"), "{out}");
        assert_eq!(out.lines().count(), 4, "{out}");
    }

    #[test]
    fn a_long_line_is_shown_as_a_window_around_the_column() {
        // A one-line 7 MB quiz made `kca validate` write 1.46 GB: every problem echoed
        // the whole line.
        let line = format!("{}X{}", "a".repeat(3_000_000), "b".repeat(3_000_000));
        let mut c = Collector::new(Path::new("q.yaml"), &line);
        for _ in 0..20 {
            c.error(
                Pos {
                    line: 1,
                    col: 3_000_001,
                },
                "bad",
            );
        }
        let out: String = c.finish().iter().map(|d| d.to_string()).collect();
        assert!(out.len() < 20 * 400, "{} bytes", out.len());
        let first: Vec<&str> = out.lines().take(4).collect();
        assert!(
            first[2].starts_with("1 | …a") && first[2].ends_with("b…"),
            "{}",
            first[2]
        );
        let x = first[2].chars().position(|ch| ch == 'X').unwrap();
        let caret = first[3].chars().position(|ch| ch == '^').unwrap();
        assert_eq!(x, caret, "{}\n{}", first[2], first[3]);
        // A short line stays whole.
        let mut c = Collector::new(Path::new("q.yaml"), "key: value");
        c.error(Pos { line: 1, col: 6 }, "bad");
        assert_eq!(c.finish()[0].source_line.as_deref(), Some("key: value"));
    }

    #[test]
    fn a_long_line_of_wide_characters_is_cut_at_characters_not_bytes() {
        // The window is found from marks of the line; past a mark it counts characters.
        let line = format!("{}X{}", "あ".repeat(3_000), "い".repeat(3_000));
        let mut c = Collector::new(Path::new("q.yaml"), &line);
        for col in [3_001, 2_999, 1] {
            c.error(Pos { line: 1, col }, "bad");
        }
        for d in c.finish() {
            let shown = d.source_line.unwrap();
            let at = d.pos.col - 1 - d.source_from;
            let want = line.chars().nth(d.pos.col - 1).unwrap();
            assert_eq!(shown.chars().nth(at), Some(want), "{}: {shown}", d.pos.col);
            assert!(shown.chars().count() <= LINE_WINDOW + 2, "{shown}");
        }
    }

    #[test]
    fn warnings_left_out_stay_warnings_and_errors_left_out_stay_errors() {
        let mut c = Collector::new(Path::new("q.yaml"), "a");
        for _ in 0..MAX_PER_FILE + 5 {
            c.warning(Pos { line: 1, col: 1 }, "w", "h");
        }
        let last = c.finish().pop().unwrap();
        assert_eq!(last.severity, Severity::Warning);
        assert!(
            last.message.contains("5 more warning(s)"),
            "{}",
            last.message
        );
        let mut c = Collector::new(Path::new("q.yaml"), "a");
        for _ in 0..MAX_PER_FILE {
            c.warning(Pos { line: 1, col: 1 }, "w", "h");
        }
        c.error(Pos { line: 1, col: 1 }, "e");
        let last = c.finish().pop().unwrap();
        assert_eq!(last.severity, Severity::Error);
    }
}

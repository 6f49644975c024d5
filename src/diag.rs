//! Diagnostics for content and learner files: `file:line:col`, the source line, a caret,
//! and what to do next. Collects every problem of a file; renders them in one place.

use std::fmt;
use std::path::{Path, PathBuf};

use unicode_width::UnicodeWidthStr;

use crate::escape::{self, escape};
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
    /// The offending source line, shown with a caret under `pos.col`.
    pub source_line: Option<String>,
    pub severity: Severity,
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
        writeln!(
            f,
            "{}: {}: {}",
            escape(&self.location()),
            self.severity.word(),
            escape::lines(&self.message)
        )?;
        if let Some(line) = &self.source_line {
            let gutter = self.pos.line.to_string();
            let pad = " ".repeat(gutter.len());
            writeln!(f, "{pad} |")?;
            writeln!(f, "{gutter} | {}", escape(line))?;
            // Display columns (CJK is two wide) of the escaped text before the column.
            let before: String = line.chars().take(self.pos.col.saturating_sub(1)).collect();
            let caret_at = escape(&before).width();
            writeln!(f, "{pad} | {}^", " ".repeat(caret_at))?;
        }
        if let Some(hint) = &self.hint {
            writeln!(f, "  hint: {}", escape::lines(hint))?;
        }
        Ok(())
    }
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
        }
    }

    pub fn file(&self) -> &Path {
        &self.file
    }

    pub fn error(&mut self, pos: Pos, message: impl Into<String>) {
        self.push(pos, message.into(), None, Severity::Error);
    }

    pub fn error_hint(&mut self, pos: Pos, message: impl Into<String>, hint: impl Into<String>) {
        self.push(pos, message.into(), Some(hint.into()), Severity::Error);
    }

    /// Advice for the author, not a problem that stops the file from loading.
    pub fn warning(&mut self, pos: Pos, message: impl Into<String>, hint: impl Into<String>) {
        self.push(pos, message.into(), Some(hint.into()), Severity::Warning);
    }

    fn push(&mut self, pos: Pos, message: String, hint: Option<String>, severity: Severity) {
        if self.diags.len() >= MAX_PER_FILE {
            self.dropped += 1;
            return;
        }
        if self.line_starts.is_empty() {
            self.line_starts = std::iter::once(0)
                .chain(self.source.match_indices('\n').map(|(i, _)| i + 1))
                .collect();
        }
        let source_line = self
            .line_starts
            .get(pos.line.saturating_sub(1))
            .map(|&start| {
                let rest = &self.source[start..];
                rest[..rest.find('\n').unwrap_or(rest.len())]
                    .trim_end()
                    .to_string()
            });
        self.diags.push(Diagnostic {
            file: self.file.clone(),
            pos,
            message,
            hint,
            source_line,
            severity,
        });
    }

    pub fn is_empty(&self) -> bool {
        self.diags.is_empty()
    }

    /// An empty collector for the same file, to gather the problems of a part of it
    /// checked on another thread (then [`Collector::absorb`] them back, in order).
    pub fn sibling(&self) -> Collector<'a> {
        Collector::new(&self.file, self.source)
    }

    /// Takes over the problems another collector found in the same file (in a piece
    /// of it checked on another thread), as if they had been reported here in turn.
    pub fn absorb(&mut self, other: Collector<'_>) {
        for d in other.diags {
            if self.diags.len() >= MAX_PER_FILE {
                self.dropped += 1;
            } else {
                self.diags.push(d);
            }
        }
        self.dropped += other.dropped;
    }

    /// The problems, in source order.
    pub fn finish(mut self) -> Vec<Diagnostic> {
        self.diags.sort_by_key(|d| d.pos);
        if self.dropped > 0 {
            let last = self.diags.last().map(|d| d.pos).unwrap_or_default();
            self.diags.push(Diagnostic {
                file: self.file.clone(),
                pos: last,
                message: format!("… and {} more problem(s) not shown", self.dropped),
                hint: Some("fix the problems above first, then validate again".into()),
                source_line: None,
                severity: Severity::Error,
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
}

//! The only place that prints. Results go to stdout, progress and warnings to stderr;
//! styles are semantic (pass, fail, hint, …) and a word always stands beside a colour.

use std::io::Write;

use owo_colors::OwoColorize;

use crate::error::Error;
use crate::settings::{OutputFormat, Settings};

/// Semantic styles for command code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Pass,
    Fail,
    Error,
    Skip,
    Hint,
    Heading,
    Dim,
}

#[derive(Debug, Clone)]
pub struct Printer {
    color: bool,
    verbosity: i8,
    output: OutputFormat,
}

impl Printer {
    pub fn new(settings: &Settings) -> Self {
        Printer {
            color: settings.color,
            verbosity: settings.verbosity,
            output: settings.output,
        }
    }

    /// Paints `text` in a semantic style (or leaves it plain without colour).
    pub fn paint(&self, style: Style, text: &str) -> String {
        if !self.color {
            return text.to_string();
        }
        match style {
            Style::Pass => text.green().bold().to_string(),
            Style::Fail => text.red().bold().to_string(),
            Style::Error => text.magenta().bold().to_string(),
            Style::Skip => text.yellow().to_string(),
            Style::Hint => text.cyan().to_string(),
            Style::Heading => text.bold().to_string(),
            Style::Dim => text.dimmed().to_string(),
        }
    }

    /// A result line on stdout.
    pub fn out(&self, line: &str) {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{line}");
    }

    /// A prompt on stdout without a line break (interactive sessions).
    pub fn prompt(&self, text: &str) {
        let mut stdout = std::io::stdout().lock();
        let _ = write!(stdout, "{text}");
        let _ = stdout.flush();
    }

    /// A result written as JSON on stdout (the whole of stdout in json mode).
    pub fn json<T: serde::Serialize>(&self, value: &T) {
        let text = serde_json::to_string_pretty(value)
            .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        self.out(&text);
    }

    /// Progress and status on stderr; silent with `-q` and in json/junit mode unless verbose.
    pub fn status(&self, line: &str) {
        if self.verbosity < 0 || (self.output != OutputFormat::Text && self.verbosity < 1) {
            return;
        }
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }

    /// Detail for `-v`.
    pub fn verbose(&self, line: &str) {
        if self.verbosity > 0 {
            let _ = writeln!(std::io::stderr().lock(), "{line}");
        }
    }

    /// A warning on stderr, always shown.
    pub fn warn(&self, line: &str) {
        let word = self.paint(Style::Skip, "warning:");
        let _ = writeln!(std::io::stderr().lock(), "{word} {line}");
    }

    /// Diagnostics (warnings for authors) on stderr, each with its position and source line.
    pub fn diagnostics(&self, diags: &[crate::diag::Diagnostic]) {
        let mut stderr = std::io::stderr().lock();
        for d in diags {
            let _ = write!(stderr, "{d}");
        }
    }

    /// Renders an error in the one format: diagnostics, `error: …`, `caused by: …`, `hint: …`.
    pub fn error(&self, err: &Error) {
        let mut stderr = std::io::stderr().lock();
        if let Error::Content(diags) = err {
            for d in diags {
                let _ = write!(stderr, "{d}");
            }
        }
        let word = self.paint(Style::Fail, "error:");
        let _ = writeln!(stderr, "{word} {}", crate::escape::lines(&err.to_string()));
        if let Error::Other(e) = err {
            for cause in e.chain().skip(1) {
                let _ = writeln!(
                    stderr,
                    "  caused by: {}",
                    crate::escape::escape(&cause.to_string())
                );
            }
        }
        if let Some(hint) = err.hint() {
            let word = self.paint(Style::Hint, "hint:");
            let _ = writeln!(stderr, "{word} {hint}");
        }
    }

    pub fn output(&self) -> OutputFormat {
        self.output
    }

    pub fn is_interactive(&self) -> bool {
        self.verbosity >= 0 && self.output == OutputFormat::Text
    }
}

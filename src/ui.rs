//! The only place that prints. Results go to stdout, progress and warnings to stderr;
//! styles are semantic (pass, fail, hint, …) and a word always stands beside a colour.
//! Colour is decided per stream. Text is measured in display columns (CJK counts 2) and
//! wrapped to the terminal: Japanese breaks between characters, English at spaces.

use std::io::Write;
use std::sync::{Arc, Mutex};

use owo_colors::OwoColorize;

use crate::error::Error;
use crate::settings::{Lang, OutputFormat, Settings};

mod text;
pub use text::*;

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
    Code,
}

/// Where a stream goes: the process's own, or a buffer (tests, paging).
#[derive(Debug, Clone)]
enum Sink {
    Stdout,
    Stderr,
    Buffer(Arc<Mutex<Vec<u8>>>),
}

impl Sink {
    fn write_str(&self, text: &str) {
        match self {
            Sink::Stdout => {
                let mut s = std::io::stdout().lock();
                let _ = s.write_all(text.as_bytes());
                let _ = s.flush();
            }
            Sink::Stderr => {
                let _ = std::io::stderr().lock().write_all(text.as_bytes());
            }
            Sink::Buffer(b) => b
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend_from_slice(text.as_bytes()),
        }
    }
}

/// What a buffered printer wrote, for tests.
#[derive(Debug, Clone, Default)]
pub struct Captured {
    out: Arc<Mutex<Vec<u8>>>,
    err: Arc<Mutex<Vec<u8>>>,
}

impl Captured {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.lock().unwrap_or_else(|e| e.into_inner())).into()
    }
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.err.lock().unwrap_or_else(|e| e.into_inner())).into()
    }
}

#[derive(Debug, Clone)]
pub struct Printer {
    color: bool,
    err_color: bool,
    verbosity: i8,
    output: OutputFormat,
    lang: Lang,
    width: usize,
    /// Errors are wrapped only on a terminal: a log or a CI console keeps each message,
    /// cause and hint on one line, where a search finds it.
    err_wrap: bool,
    out: Sink,
    err: Sink,
    /// Whether stdout is a terminal (long text then goes through a pager).
    tty: bool,
    /// `$PAGER`, else `less -R`.
    pager: Option<String>,
    /// Whether a buffered stdout has its document (the process's stdout is tracked by
    /// `document`).
    doc: Arc<std::sync::atomic::AtomicBool>,
    /// A streamed document is being written (`document_part`).
    streaming: Arc<std::sync::atomic::AtomicBool>,
}

impl Printer {
    pub fn new(settings: &Settings) -> Self {
        Printer {
            color: settings.color,
            err_color: settings.color,
            verbosity: settings.verbosity,
            output: settings.output,
            lang: settings.lang,
            width: 80,
            err_wrap: false,
            out: Sink::Stdout,
            err: Sink::Stderr,
            tty: false,
            pager: None,
            doc: Arc::default(),
            streaming: Arc::default(),
        }
    }

    /// The pager for long text (`$PAGER`); `less -R` when none.
    pub fn with_pager(mut self, pager: Option<String>) -> Self {
        self.pager = pager;
        self
    }

    /// Marks stdout as a terminal: long text is paged.
    pub fn with_tty(mut self, tty: bool) -> Self {
        self.tty = tty;
        self
    }

    /// Whether stdout gets colour.
    pub fn color(&self) -> bool {
        self.color
    }

    /// Long text: through `$PAGER` (else `less -R`) when stdout is a terminal and the text
    /// is taller than it, else straight to stdout.
    pub fn page(&self, lines: &[String]) {
        let rows = terminal_size::terminal_size_of(std::io::stdout())
            .map_or(24, |(_, h)| usize::from(h.0));
        if self.tty && lines.len() + 1 > rows && matches!(self.out, Sink::Stdout) {
            let (prog, args): (String, Vec<String>) = match &self.pager {
                Some(p) => {
                    let mut parts = p.split_whitespace().map(str::to_string);
                    (parts.next().unwrap_or_default(), parts.collect())
                }
                None => ("less".into(), vec!["-R".into()]),
            };
            let child = std::process::Command::new(&prog)
                .args(&args)
                .env("LESSCHARSET", "utf-8")
                .stdin(std::process::Stdio::piped())
                .spawn();
            if let Ok(mut child) = child {
                if let Some(mut stdin) = child.stdin.take() {
                    let _ = stdin.write_all(format!("{}\n", lines.join("\n")).as_bytes());
                }
                let _ = child.wait();
                return;
            }
        }
        for l in lines {
            self.out(l);
        }
    }

    /// A printer that writes into buffers instead of the process's streams.
    pub fn buffered(settings: &Settings) -> (Self, Captured) {
        let cap = Captured::default();
        let mut p = Printer::new(settings);
        p.out = Sink::Buffer(cap.out.clone());
        p.err = Sink::Buffer(cap.err.clone());
        p.doc = Arc::default();
        p.streaming = Arc::default();
        (p, cap)
    }

    /// Colour on stderr, decided for that stream on its own.
    pub fn with_stderr_color(mut self, color: bool) -> Self {
        self.err_color = color;
        self
    }

    /// The terminal width text is wrapped to.
    pub fn with_width(mut self, width: usize) -> Self {
        self.width = width.clamp(20, 400);
        self
    }

    /// Whether stderr is a terminal, so errors are wrapped to its width.
    pub fn with_err_wrap(mut self, wrap: bool) -> Self {
        self.err_wrap = wrap;
        self
    }

    pub fn width(&self) -> usize {
        self.width
    }

    /// -1 quiet, 0 normal, 1+ verbose (`-v`).
    pub fn verbosity(&self) -> i8 {
        self.verbosity
    }

    pub fn lang(&self) -> Lang {
        self.lang
    }

    fn style(color: bool, style: Style, text: &str) -> String {
        if !color {
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
            Style::Code => text.yellow().to_string(),
        }
    }

    /// Paints `text` in a semantic style for stdout (or leaves it plain without colour).
    pub fn paint(&self, style: Style, text: &str) -> String {
        Self::style(self.color, style, text)
    }

    /// Paints `text` for stderr, whose colour is decided on its own.
    pub fn paint_err(&self, style: Style, text: &str) -> String {
        Self::style(self.err_color, style, text)
    }

    /// A result line on stdout. Under `-o json|junit` stdout holds the document only, so
    /// a line meant for a person goes to stderr there.
    pub fn out(&self, line: &str) {
        self.text_sink().write_str(&format!("{line}\n"));
    }

    fn text_sink(&self) -> &Sink {
        if self.output == OutputFormat::Text {
            &self.out
        } else {
            &self.err
        }
    }

    /// Whether stdout already holds this run's document.
    pub fn has_document(&self) -> bool {
        match self.out {
            Sink::Stdout => crate::document::written(),
            _ => self.doc.load(std::sync::atomic::Ordering::SeqCst),
        }
    }

    /// One line of a document streamed a piece at a time (a report too big to hold); the
    /// first part claims stdout's one document, [`Printer::document_end`] closes it. An
    /// interrupted stream is cut off, never completed with something else.
    pub fn document_part(&self, line: &str) {
        use std::sync::atomic::Ordering;
        let text = format!("{line}\n");
        if !self.streaming.load(Ordering::SeqCst) {
            let claimed = match self.out {
                Sink::Stdout => crate::document::claim_stream(),
                _ => !self.doc.swap(true, Ordering::SeqCst),
            };
            if !claimed {
                return self.err.write_str(&text);
            }
            self.streaming.store(true, Ordering::SeqCst);
        }
        self.out.write_str(&text);
    }

    /// Ends a streamed document.
    pub fn document_end(&self) {
        if self
            .streaming
            .swap(false, std::sync::atomic::Ordering::SeqCst)
            && matches!(self.out, Sink::Stdout)
        {
            crate::document::end_stream();
        }
    }

    /// The run's one document on stdout (JSON or JUnit text), written whole. A second
    /// document is a bug of its command: it goes to stderr, so stdout still parses.
    pub fn document(&self, text: &str) {
        let text = if text.ends_with('\n') {
            text.to_string()
        } else {
            format!("{text}\n")
        };
        let claimed = match self.out {
            Sink::Stdout => crate::document::claim_stdout(),
            _ => !self.doc.swap(true, std::sync::atomic::Ordering::SeqCst),
        };
        match (&self.out, claimed) {
            (Sink::Stdout, true) => crate::document::write_stdout(&text),
            (out, true) => out.write_str(&text),
            (_, false) => self.err.write_str(&text),
        }
    }

    /// Text on stdout wrapped to the terminal, each line after `indent`.
    pub fn out_wrapped(&self, text: &str, indent: &str) {
        for line in wrap(text, self.width, indent) {
            self.out(&line);
        }
    }

    /// Text on stdout in one style, wrapped to the terminal (wrapped first, then painted).
    pub fn out_painted(&self, style: Style, text: &str) {
        for line in wrap(text, self.width, "") {
            self.out(&self.paint(style, &line));
        }
    }

    /// A prompt on stdout without a line break (interactive sessions).
    pub fn prompt(&self, text: &str) {
        self.text_sink().write_str(text);
    }

    /// A line of an interactive conversation on stderr (json mode keeps stdout clean).
    pub fn say_err(&self, line: &str) {
        self.err.write_str(&format!("{line}\n"));
    }

    /// A result written as JSON on stdout (the whole of stdout in json mode).
    /// A JSON document on stdout, always in the one envelope (`schemaVersion` first; see
    /// `envelope`): a command cannot print a document without it, or spell it otherwise.
    pub fn json<T: serde::Serialize>(&self, value: &T) {
        let text = serde_json::to_value(value)
            .map(crate::envelope::stamp)
            .and_then(|v| serde_json::to_string_pretty(&v))
            .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        let text = crate::escape::json(&text);
        if self.output == OutputFormat::Text {
            self.out(&text);
        } else {
            self.document(&text);
        }
    }

    /// Progress and status on stderr; silent with `-q` and in json/junit mode unless verbose.
    pub fn status(&self, line: &str) {
        if self.verbosity < 0 || (self.output != OutputFormat::Text && self.verbosity < 1) {
            return;
        }
        self.say_err(line);
    }

    /// Detail for `-v`.
    pub fn verbose(&self, line: &str) {
        if self.verbosity > 0 {
            self.say_err(line);
        }
    }

    /// A warning on stderr, always shown.
    pub fn warn(&self, line: &str) {
        let word = self.paint_err(Style::Skip, tr(self.lang, "警告:", "warning:"));
        self.say_err(&format!("{word} {}", crate::escape::lines(line)));
    }

    /// Diagnostics (warnings for authors) on stderr, each with its position and source line.
    pub fn diagnostics(&self, diags: &[crate::diag::Diagnostic]) {
        let text: String = diags.iter().map(|d| d.render(self.lang)).collect();
        self.err.write_str(&text);
    }

    /// Renders an error in the one format: diagnostics, `error: …`, one `caused by: …`
    /// per cause, `hint: …`. In json mode the error is a JSON object on stdout instead.
    /// The level words are the learner's language (`エラー:`/`error:`); file diagnostics
    /// keep the compiler-style `file:line:col: error:` that editors and CI parse. Messages
    /// quote files and clusters: control characters are escaped.
    pub fn error(&self, err: &Error) {
        // Under -o json|junit an error is the run's document, unless the command already
        // wrote one (its exit code then tells; the error is on stderr as text).
        if !self.has_document() {
            match self.output {
                OutputFormat::Json => return self.json(&error_json(err, self.lang)),
                OutputFormat::Junit => {
                    self.document(&crate::junit::error_document(
                        "kca",
                        "error",
                        &error_line(err, self.lang),
                    ));
                    // Diagnostics and hints stay readable on stderr too.
                }
                OutputFormat::Text => {}
            }
        }
        let mut text = String::new();
        if let Error::Content(diags) = err {
            for d in diags {
                text.push_str(&d.render(self.lang));
            }
        }
        // The diagnostics above keep the compiler-style `file:line:col: error:` editors
        // read; the summary under them is the learner's language, as every error is.
        let lang = self.lang;
        // Wrapped to the terminal, each continuation indented under its label.
        let wrapped = |label: &str, body: &str, lead: &str| -> String {
            let mut out = String::new();
            for (i, line) in body.lines().enumerate() {
                let first = if i == 0 {
                    format!("{lead}{label} {line}")
                } else {
                    format!("{lead}  {line}")
                };
                if !self.err_wrap {
                    out.push_str(&format!("{first}\n"));
                    continue;
                }
                for (j, l) in wrap(&first, self.width.saturating_sub(2), "")
                    .into_iter()
                    .enumerate()
                {
                    let pad = if j == 0 { "" } else { "  " };
                    out.push_str(&format!("{}{pad}{l}\n", if j == 0 { "" } else { lead }));
                }
            }
            out
        };
        let word = tr(lang, "エラー:", "error:");
        let line = wrapped(word, &crate::escape::lines(&err.message_in(lang)), "");
        text.push_str(&line.replacen(word, &self.paint_err(Style::Fail, word), 1));
        for cause in causes(err, lang) {
            // A cause of several lines (a tool's output) keeps them, indented under it;
            // each line's control characters are escaped as in the message.
            text.push_str(&wrapped(
                tr(lang, "原因:", "caused by:"),
                &crate::escape::lines(&cause),
                "  ",
            ));
        }
        if let Some(hint) = err.hint_in(lang) {
            let word = tr(lang, "ヒント:", "hint:");
            let line = wrapped(word, hint, "");
            text.push_str(&line.replacen(word, &self.paint_err(Style::Hint, word), 1));
        }
        self.err.write_str(&text);
    }

    pub fn output(&self) -> OutputFormat {
        self.output
    }

    pub fn is_interactive(&self) -> bool {
        self.verbosity >= 0 && self.output == OutputFormat::Text
    }
}

/// An error in one line: its message, causes and hint (a JUnit `<error>`'s message).
fn error_line(err: &Error, lang: Lang) -> String {
    let mut line = err.message_in(lang);
    if let Error::Content(diags) = err {
        for d in diags {
            line.push_str(&format!(
                "; {}:{}:{}: {}",
                d.file.display(),
                d.pos.line,
                d.pos.col,
                d.message
            ));
        }
    }
    for c in causes(err, lang) {
        line.push_str(&format!("; caused by: {c}"));
    }
    if let Some(h) = err.hint_in(lang) {
        line.push_str(&format!("; hint: {h}"));
    }
    line
}

/// The chain of causes below `err`'s own message; a cause that is kca's own error is said
/// in `lang`, any other (the system's, a library's) is data.
fn causes(err: &Error, lang: Lang) -> Vec<String> {
    let mut out = Vec::new();
    let mut next: Option<&dyn std::error::Error> = match err {
        // `Other` is transparent: its own message is the first link; skip it.
        Error::Other(e) => e.chain().nth(1),
        other => std::error::Error::source(other),
    };
    while let Some(e) = next {
        out.push(match e.downcast_ref::<Error>() {
            Some(ours) => ours.message_in(lang),
            None => e.to_string(),
        });
        next = e.source();
    }
    out
}

/// An error as the JSON object `--output json` prints on stdout.
pub fn error_json(err: &Error, lang: Lang) -> serde_json::Value {
    let diags: Vec<serde_json::Value> = match err {
        Error::Content(d) => d
            .iter()
            .map(|d| {
                serde_json::json!({
                    "file": d.file, "line": d.pos.line, "column": d.pos.col,
                    "message": d.message, "hint": d.hint,
                })
            })
            .collect(),
        _ => Vec::new(),
    };
    serde_json::to_value(crate::envelope::Envelope::new(serde_json::json!({
        "error": {
            "message": err.message_in(lang),
            "causes": causes(err, lang),
            "hint": err.hint_in(lang),
            "exitCode": err.exit().code(),
            "problems": diags,
        }
    })))
    .unwrap_or_default()
}

#[cfg(test)]
mod tests;

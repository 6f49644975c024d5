//! The only place that prints. Results go to stdout, progress and warnings to stderr;
//! styles are semantic (pass, fail, hint, …) and a word always stands beside a colour.
//! Colour is decided per stream. Text is measured in display columns (CJK counts 2) and
//! wrapped to the terminal: Japanese breaks between characters, English at spaces.

use std::io::Write;
use std::sync::{Arc, Mutex};

use owo_colors::OwoColorize;

use crate::error::Error;
use crate::settings::{Lang, OutputFormat, Settings};

/// Picks the Japanese or English form of a fixed UI text.
/// [`tr`] for formatted text: the learner's language of two ready strings.
pub fn tr_s(lang: Lang, ja: String, en: String) -> String {
    match lang {
        Lang::Ja => ja,
        Lang::En => en,
    }
}

pub fn tr(lang: Lang, ja: &'static str, en: &'static str) -> &'static str {
    match lang {
        Lang::Ja => ja,
        Lang::En => en,
    }
}

/// Display width in terminal columns (a CJK character counts 2, a combining mark 0, a
/// colour escape sequence nothing).
pub fn width(text: &str) -> usize {
    textwrap::core::display_width(text)
}

/// `text` padded with spaces to `cols` display columns (left-aligned).
pub fn pad(text: &str, cols: usize) -> String {
    let w = width(text);
    format!("{text}{}", " ".repeat(cols.saturating_sub(w)))
}

/// `text` cut to at most `cols` display columns, with `…` when cut; never splits a character.
pub fn truncate(text: &str, cols: usize) -> String {
    if width(text) <= cols {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w + 1 > cols {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// Lays out rows as columns aligned by display width, two spaces apart; the last column
/// is cut with `…` so that a line never runs past `cols`. The first row is the header.
pub fn table(rows: &[Vec<String>], cols: usize) -> Vec<String> {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n.saturating_sub(1))
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| width(c))
                .max()
                .unwrap_or(0)
        })
        .collect();
    rows.iter()
        .map(|r| {
            let mut line = String::new();
            for (i, cell) in r.iter().enumerate() {
                if i + 1 < n {
                    line.push_str(&pad(cell, widths[i]));
                    line.push_str("  ");
                } else {
                    let room = cols.saturating_sub(width(&line)).max(8);
                    line.push_str(&truncate(cell, room));
                }
            }
            line.trim_end().to_string()
        })
        .collect()
}

/// Wraps `text` to `cols` columns, each line after `indent`. Breaks between Japanese
/// characters and at spaces, never inside a run of Latin text (a word, an identifier
/// such as `kca.io/owner`, a path, a flag) nor inside inline `code`; kinsoku: no line
/// starts with closing punctuation (、。）」! ? …) and none ends with an opening bracket.
/// Runs of spaces inside a line are one space (a line's own leading spaces stay).
pub fn wrap(text: &str, cols: usize, indent: &str) -> Vec<String> {
    let opts = textwrap::Options::new(cols.max(width(indent) + 10))
        .initial_indent(indent)
        .subsequent_indent(indent)
        .word_separator(textwrap::WordSeparator::Custom(breaks))
        // No break at a hyphen either: `kca-mutate`, `gate-stops-no-digest` and a
        // path are one word (textwrap's default splits them after each `-`).
        .word_splitter(textwrap::WordSplitter::NoHyphenation)
        .break_words(false);
    let mut out = Vec::new();
    for line in reflow(text).lines() {
        if line.trim().is_empty() {
            out.push(String::new());
            continue;
        }
        // Keep a line's own leading spaces (lists, code) as part of its indent.
        let lead = &line[..line.len() - line.trim_start().len()];
        let ind = format!("{indent}{lead}");
        let o = opts.clone().initial_indent(&ind).subsequent_indent(&ind);
        let body = one_space(line.trim_start());
        out.extend(
            textwrap::wrap(&body, o)
                .into_iter()
                .map(|l| l.trim_end().replace(KEEP, " ")),
        );
    }
    out
}

/// `line` with every run of three or more spaces or tabs as one space: such a run is a
/// gap left by joined source lines (`did not          match it`); two spaces are kept,
/// kca's own separator between a link and its title.
fn one_space(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if run.chars().count() >= 3 || run.contains('\t') {
            out.push(' ');
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in line.chars() {
        if c == ' ' || c == '\t' {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

/// A character a line must not start with (JIS X 4051's closing brackets, full stops,
/// commas, middle dots, small kana and the prolonged sound mark, and their ASCII peers).
fn no_line_start(c: char) -> bool {
    "、。，．・：；？！ー〜）」』】〕〉》｝］〙〗”’ゝゞ々ぁぃぅぇぉっゃゅょゎァィゥェォッャュョヮヵヶ,.:;!?)]}%"
        .contains(c)
}

/// A space [`wrap`] never breaks at: it keeps a label with what it labels (`次:` and its
/// command, a check's mark and its id); wrapped lines show it as a plain space.
pub const KEEP: char = '\u{a0}';

/// A character a line must not end with (opening brackets and quotes).
fn no_line_end(c: char) -> bool {
    "（「『【〔〈《｛［〘〖“‘([{".contains(c)
}

fn is_wide(c: char) -> bool {
    unicode_width::UnicodeWidthChar::width(c) == Some(2)
}

/// Longest inline code span kept on one line; a longer one breaks at its spaces.
const CODE_SPAN_COLS: usize = 40;

/// The places a line may break, as textwrap words (each with its trailing spaces): every
/// wide character is a word, a run of other non-space characters is one word, a
/// backtick span is one word; then kinsoku joins a word to its neighbour where a
/// break would start a line with a closing mark or end one with an opening bracket.
fn breaks(line: &str) -> Box<dyn Iterator<Item = textwrap::core::Word<'_>> + '_> {
    let mut cuts: Vec<(usize, usize)> = Vec::new(); // [start, end) of each word, spaces included
    let mut i = 0;
    let b = line.as_bytes();
    while i < line.len() {
        let c = line[i..].chars().next().unwrap_or(' ');
        let start = i;
        let rest = &line[i..];
        let chunk = &rest[..rest.find(' ').unwrap_or(rest.len())];
        if let Some(k) = chunk.find(KEEP) {
            // A label, [`KEEP`] and what it labels (a code span, or a word): one word.
            let after = i + k + KEEP.len_utf8();
            let tail = &line[after..];
            i = after
                + match tail.strip_prefix('`').and_then(|t| t.find('`')) {
                    Some(close) => close + 2,
                    None => tail.find(' ').unwrap_or(tail.len()),
                };
        } else if c == '`'
            && let Some(close) = line[i + 1..].find('`')
            && width(&line[i..i + close + 2]) <= CODE_SPAN_COLS
        {
            i += close + 2;
        } else if is_wide(c) {
            i += c.len_utf8();
        } else {
            while i < line.len() {
                let d = line[i..].chars().next().unwrap_or(' ');
                if d == ' ' || is_wide(d) || (d == '`' && i > start) {
                    break;
                }
                i += d.len_utf8();
            }
        }
        while i < line.len() && b[i] == b' ' {
            i += 1;
        }
        if i == start {
            i += line[i..].chars().next().map_or(1, char::len_utf8);
        }
        // Kinsoku: no break between the last word and this one when the last ends
        // with an opening bracket (no space after it) or this one starts with a
        // closing mark.
        let glue = cuts.last().is_some_and(|&(ps, pe)| {
            let prev = &line[ps..pe];
            prev == prev.trim_end()
                && (prev.chars().last().is_some_and(no_line_end) || no_line_start(c))
        });
        match cuts.last_mut() {
            Some(last) if glue => last.1 = i,
            _ => cuts.push((start, i)),
        }
    }
    Box::new(
        cuts.into_iter()
            .map(move |(s, e)| textwrap::core::Word::from(&line[s..e])),
    )
}

/// Joins the lines of each paragraph, so text written with hard line breaks (YAML block
/// scalars) wraps to the terminal instead of keeping its source's ragged edge. A line that
/// is indented, starts a list item, or follows a blank line starts anew. Two Japanese
/// characters join directly; anything else (Japanese and Latin text, `を残して` and
/// `background`) joins with a space, where the source had its line break — except after
/// Japanese closing punctuation (`。`), which needs none.
fn reflow(text: &str) -> String {
    let starts_anew = |l: &str| {
        let t = l.trim_start();
        l.len() != t.len()
            || t.starts_with(['-', '*', '•', '→', '|', '#', '`'])
            || t.split_once(". ")
                .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
    };
    let mut out = String::with_capacity(text.len());
    let mut prev: Option<&str> = None;
    for line in text.lines() {
        match prev {
            Some(p) if !p.trim().is_empty() && !line.trim().is_empty() && !starts_anew(line) => {
                let last = p.trim_end().chars().last();
                let first = line.chars().next();
                let both_wide = last.is_some_and(is_wide) && first.is_some_and(is_wide);
                let after_stop = last.is_some_and(|c| is_wide(c) && no_line_start(c));
                if !(both_wide || after_stop) {
                    out.push(' ');
                }
            }
            Some(_) => out.push('\n'),
            None => {}
        }
        out.push_str(line);
        prev = Some(line);
    }
    out
}

/// A time as the learner reads it: relative to `now` ("3 分前", "明日", "in 3 days"), or
/// the local date when it is more than a week away.
pub fn relative(
    lang: Lang,
    t: chrono::DateTime<chrono::Utc>,
    now: chrono::DateTime<chrono::Utc>,
) -> String {
    let secs = (t - now).num_seconds();
    let ago = secs < 0;
    let a = secs.unsigned_abs();
    // Rounded to the nearest unit, as people say it: 23h59m from now is "tomorrow".
    let (n, ja, en) = match a {
        0..45 => return tr(lang, "たった今", "just now").to_string(),
        45..2700 => (a.div_ceil(60).max(1), "分", "minute"),
        2700..79_200 => ((a + 1800) / 3600, "時間", "hour"),
        _ => ((a + 43_200) / 86_400, "日", "day"),
    };
    if en == "day" && n == 1 {
        return if ago {
            tr(lang, "昨日", "yesterday")
        } else {
            tr(lang, "明日", "tomorrow")
        }
        .to_string();
    }
    if en == "day" && n > 7 {
        return t
            .with_timezone(&chrono::Local)
            .format("%Y-%m-%d")
            .to_string();
    }
    let plural = if n == 1 { "" } else { "s" };
    match (lang, ago) {
        (Lang::Ja, true) => format!("{n}{ja}前"),
        (Lang::Ja, false) => format!("{n}{ja}後"),
        (Lang::En, true) => format!("{n} {en}{plural} ago"),
        (Lang::En, false) => format!("in {n} {en}{plural}"),
    }
}

/// [`relative`] for an RFC 3339 text; the text itself when it does not parse.
pub fn relative_rfc3339(lang: Lang, text: &str, now: chrono::DateTime<chrono::Utc>) -> String {
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| relative(lang, t.with_timezone(&chrono::Utc), now))
        .unwrap_or_else(|_| text.to_string())
}

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
mod tests {
    use super::*;

    #[test]
    fn hard_line_breaks_of_a_paragraph_are_reflowed() {
        let ja =
            "ラベルの付いた新しい\nNamespace へ作ります。\n\n- 一つめ\n- 二つめ\n    code: yes";
        assert_eq!(
            reflow(ja),
            "ラベルの付いた新しい Namespace へ作ります。\n\n- 一つめ\n- 二つめ\n    code: yes"
        );
        let en = "write the policy\nthat gives Pods\n1. first\n2. second";
        assert_eq!(
            reflow(en),
            "write the policy that gives Pods\n1. first\n2. second"
        );
        let lines = wrap("一行目の\n続き", 80, "  ");
        assert_eq!(lines, vec!["  一行目の続き".to_string()]);
    }

    fn settings(output: OutputFormat) -> Settings {
        Settings {
            color: false,
            output,
            lang: Lang::En,
            verbosity: 0,
            content_dir: ".".into(),
            state_dir: ".".into(),
            home: ".".into(),
        }
    }

    #[test]
    fn width_counts_cjk_as_two_columns() {
        assert_eq!(width("問題"), 4);
        assert_eq!(pad("問", 4), "問  ");
        assert_eq!(truncate("ポリシーの検証", 9), "ポリシー…");
        assert_eq!(truncate("abc", 9), "abc");
    }

    #[test]
    fn table_aligns_by_display_width_and_cuts_the_last_column() {
        let rows = vec![
            vec!["ID".into(), "問".into(), "タイトル".into()],
            vec![
                "module-0".into(),
                "12".into(),
                "Kyverno の全体像とアドミッションの流れ".into(),
            ],
        ];
        let lines = table(&rows, 30);
        assert_eq!(lines[0], "ID        問  タイトル");
        assert_eq!(lines[1].find("12"), Some(10), "{lines:?}");
        assert!(
            width(&lines[1]) <= 30 && lines[1].ends_with('…'),
            "{lines:?}"
        );
    }

    #[test]
    fn a_kept_space_holds_a_label_with_what_it_labels() {
        let k = KEEP;
        let text =
            format!("一覧:{k}`kca lab task --list`  採点:{k}`kca lab check`  ·{k}bg-no-secrets");
        for cols in 20..60 {
            let lines = wrap(&text, cols, "");
            for part in [
                "一覧: `kca lab task --list`",
                "採点: `kca lab check`",
                "· bg-no-secrets",
            ] {
                assert!(lines.iter().any(|l| l.contains(part)), "{cols}: {lines:?}");
            }
        }
    }

    #[test]
    fn wrap_breaks_japanese_between_characters_and_english_at_spaces() {
        let ja = "Kyverno のポリシーはアドミッションコントローラーとして動作し、リクエストを検証します。";
        for line in wrap(ja, 30, "  ") {
            assert!(width(&line) <= 30, "{line:?}");
        }
        let en = "a learner never has to wonder what to run next because kca tells them";
        let lines = wrap(en, 20, "");
        for line in &lines {
            assert!(width(line) <= 20, "{line:?}");
        }
        // No word is cut: every word of the input is whole on some line.
        let joined: Vec<&str> = lines.iter().flat_map(|l| l.split_whitespace()).collect();
        assert_eq!(joined, en.split_whitespace().collect::<Vec<_>>());
    }

    /// A paragraph with every layout trap: Latin words and identifiers among Japanese,
    /// inline code, punctuation that kinsoku keeps off a line's start or end.
    const MIXED: &str = "ラベル `kca.io/owner` を残して background の Policy を並べる。\
        validate は mutate の後に動き、「生成」されたオブジェクト（Namespace）は \
        `kca lab check --offline` で確かめます。本当に? はい! 次は kyverno.io/v1 の \
        ClusterPolicy (offline) です、よね。";

    fn layouts() -> impl Iterator<Item = (usize, Vec<String>)> {
        (30..=80).map(|cols| (cols, wrap(MIXED, cols, "  ")))
    }

    #[test]
    fn a_line_break_between_japanese_and_latin_text_becomes_a_space() {
        assert_eq!(reflow("を残して\nbackground"), "を残して background");
        assert_eq!(
            reflow("validate は\nmutate の後"),
            "validate は mutate の後"
        );
        assert_eq!(reflow("日本語の\n続き"), "日本語の続き");
        assert_eq!(reflow("終わり。\nKyverno"), "終わり。Kyverno");
        assert_eq!(reflow("one\ntwo"), "one two");
    }

    #[test]
    fn identifiers_paths_and_inline_code_are_never_split() {
        for (cols, lines) in layouts() {
            let words: Vec<&str> = lines.iter().flat_map(|l| l.split_whitespace()).collect();
            let text = lines.join("\n");
            for whole in [
                "kca.io/owner",
                "`kca lab check --offline`",
                "kyverno.io/v1",
                "(offline)",
                "ClusterPolicy",
                "background",
                "Policy",
            ] {
                assert!(
                    text.contains(whole),
                    "{whole} split at {cols} columns:\n{text}"
                );
            }
            assert!(!words.is_empty());
        }
    }

    #[test]
    fn kinsoku_no_line_starts_with_a_closing_mark_or_ends_with_an_opening_one() {
        for (cols, lines) in layouts() {
            for (i, l) in lines.iter().enumerate() {
                let body = l.trim_start();
                if i > 0 {
                    let first = body.chars().next().unwrap();
                    assert!(
                        !no_line_start(first),
                        "{cols} columns, line starts with {first:?}: {lines:#?}"
                    );
                }
                let last = body.chars().last().unwrap();
                assert!(
                    !no_line_end(last),
                    "{cols} columns, line ends with {last:?}: {lines:#?}"
                );
                assert!(width(l) <= cols, "{cols} columns: {l:?} is wider");
            }
        }
    }

    #[test]
    fn a_title_wraps_like_body_text_without_cutting_a_word() {
        let title = "Lesson 2 — 変更と生成: MutatingPolicy と ClusterPolicy を並べる (offline)";
        let lines = wrap(title, 40, "");
        assert!(lines.iter().all(|l| width(l) <= 40), "{lines:?}");
        let text = lines.join("\n");
        assert!(
            text.contains("ClusterPolicy") && text.contains("(offline)"),
            "{text}"
        );
    }

    #[test]
    fn runs_of_spaces_inside_a_detail_are_one_space() {
        assert_eq!(
            wrap("the probe did not                  match it", 80, "  "),
            vec!["  the probe did not match it".to_string()]
        );
        // A line's own indent stays, and so does a deliberate double space.
        assert_eq!(
            wrap("    code   here", 80, ""),
            vec!["    code here".to_string()]
        );
        assert_eq!(
            wrap("→ link  §title", 80, ""),
            vec!["→ link  §title".to_string()]
        );
    }

    #[test]
    fn times_are_relative_and_localised() {
        let now = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let day = chrono::Duration::days(1);
        assert_eq!(relative(Lang::Ja, now + day, now), "明日");
        assert_eq!(relative(Lang::En, now + day * 3, now), "in 3 days");
        assert_eq!(
            relative(Lang::Ja, now - chrono::Duration::minutes(5), now),
            "5分前"
        );
        assert_eq!(relative(Lang::En, now - day, now), "yesterday");
        let almost = now + day - chrono::Duration::seconds(3);
        assert_eq!(
            relative(Lang::Ja, almost, now),
            "明日",
            "a due time set a moment ago"
        );
    }

    #[test]
    fn chained_error_renders_each_cause() {
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "Permission denied");
        let err = Error::environment_with(
            "cannot save your progress in /ro/state/kca",
            "set XDG_STATE_HOME to a writable folder",
            anyhow::Error::new(io).context("cannot create /ro/state/kca"),
        );
        let (p, cap) = Printer::buffered(&settings(OutputFormat::Text));
        p.error(&err);
        insta::assert_snapshot!(cap.stderr(), @r"
        error: cannot save your progress in /ro/state/kca
          caused by: cannot create /ro/state/kca
          caused by: Permission denied
        hint: set XDG_STATE_HOME to a writable folder
        ");
    }

    #[test]
    fn a_cause_of_several_lines_is_indented_under_it() {
        let err = Error::environment_with(
            "docker is installed but not answering",
            "start its daemon",
            anyhow::anyhow!(
                "`docker info` failed (exit status: 1):\nCannot connect\u{1b}[2J\nhint: forged"
            ),
        );
        let (p, cap) = Printer::buffered(&settings(OutputFormat::Text));
        p.error(&err);
        insta::assert_snapshot!(cap.stderr(), @r"
        error: docker is installed but not answering
          caused by: `docker info` failed (exit status: 1):
            Cannot connect\u{1b}[2J
            hint: forged
        hint: start its daemon
        ");
    }

    #[test]
    fn json_mode_error_is_an_object_on_stdout() {
        let (p, cap) = Printer::buffered(&settings(OutputFormat::Json));
        p.error(&Error::usage("no quiz `x`", "see `kca quiz list`"));
        let v: serde_json::Value = serde_json::from_str(&cap.stdout()).unwrap();
        assert_eq!(v["schemaVersion"], crate::envelope::SCHEMA_VERSION);
        assert_eq!(v["error"]["message"], "no quiz `x`");
        assert_eq!(v["error"]["exitCode"], 2);
        assert_eq!(cap.stderr(), "");
    }
}

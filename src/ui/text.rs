//! Text measured and laid out for a terminal: the learner's language of a fixed text,
//! display columns (CJK counts 2), tables, wrapping (Japanese breaks between characters
//! under kinsoku rules, English at spaces), reflowed paragraphs, relative times. Pure: it
//! returns lines, [`super::Printer`] prints them.

use crate::settings::Lang;

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
pub(super) fn no_line_start(c: char) -> bool {
    "、。，．・：；？！ー〜）」』】〕〉》｝］〙〗”’ゝゞ々ぁぃぅぇぉっゃゅょゎァィゥェォッャュョヮヵヶ,.:;!?)]}%"
        .contains(c)
}

/// A space [`wrap`] never breaks at: it keeps a label with what it labels (`次:` and its
/// command, a check's mark and its id); wrapped lines show it as a plain space.
pub const KEEP: char = '\u{a0}';

/// A character a line must not end with (opening brackets and quotes).
pub(super) fn no_line_end(c: char) -> bool {
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
pub(super) fn reflow(text: &str) -> String {
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

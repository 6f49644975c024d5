//! Asking questions one at a time: shows a question, reads an answer line (a terminal or
//! a pipe alike), offers hints, grades, and shows feedback and the explanation.

use std::io::BufRead;

use super::grade::{self, Answer, Graded, parse_bool, parse_number};
use super::{Rng, seed_of};
use crate::content::Text;
use crate::content::quiz::{Kind, Question};
use crate::settings::Lang;
use crate::ui::{Printer, Style};

/// What happened to one question.
#[derive(Debug, Clone, PartialEq)]
pub enum Asked {
    Answered {
        answer: Answer,
        graded: Graded,
        hints_used: usize,
    },
    Skipped,
    /// The learner quit, or input ended.
    Quit,
}

pub use crate::ui::tr;

/// The longest answer line read; a longer one is read past and asked again.
pub const MAX_ANSWER_BYTES: usize = 4096;

/// Reads one line (without its `\n`) keeping at most `cap` bytes; the rest of a longer
/// line is consumed a buffer at a time, never held. `Ok(None)` at the end of input;
/// the flag says the line was cut.
pub fn read_line_capped(
    r: &mut impl BufRead,
    cap: usize,
) -> std::io::Result<Option<(Vec<u8>, bool)>> {
    let mut line = Vec::new();
    let mut cut = false;
    let mut any = false;
    loop {
        let buf = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(any.then_some((line, cut)));
        }
        any = true;
        let (chunk, end) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        let room = cap.saturating_sub(line.len());
        if chunk.len() > room {
            cut = true;
        }
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = end.unwrap_or(buf.len());
        r.consume(used);
        if end.is_some() {
            return Ok(Some((line, cut)));
        }
    }
}

pub struct Asker<'p, R> {
    input: R,
    printer: &'p Printer,
    lang: Lang,
    /// In json mode the conversation goes to stderr, leaving stdout to the result.
    to_stderr: bool,
    /// Piped answers are echoed after the prompt so a transcript reads like a session.
    echo: bool,
    /// Where lessons are, to point from an explanation to its lesson section.
    content_dir: Option<std::path::PathBuf>,
}

impl<'p, R: BufRead> Asker<'p, R> {
    pub fn new(input: R, printer: &'p Printer, lang: Lang, to_stderr: bool) -> Self {
        use std::io::IsTerminal;
        let echo = !std::io::stdin().is_terminal();
        Asker {
            input,
            printer,
            lang,
            to_stderr,
            echo,
            content_dir: None,
        }
    }

    /// Points explanations at their lesson section (`lesson:` of a question).
    pub fn with_lessons(mut self, content_dir: &std::path::Path) -> Self {
        self.content_dir = Some(content_dir.to_path_buf());
        self
    }

    /// Paints for the stream the conversation goes to (stderr in json mode).
    fn paint(&self, style: Style, text: &str) -> String {
        if self.to_stderr {
            self.printer.paint_err(style, text)
        } else {
            self.printer.paint(style, text)
        }
    }

    fn say(&self, line: &str) {
        if self.to_stderr {
            self.printer.say_err(line);
        } else {
            self.printer.out(line);
        }
    }

    /// `text` wrapped to the terminal, the first line after `lead`, the rest under it.
    fn say_hanging(&self, lead: &str, text: &str) {
        let pad = " ".repeat(crate::ui::width(lead));
        let mut first = true;
        for para in text.lines() {
            for line in crate::ui::wrap(para, self.printer.width(), &pad) {
                if first {
                    self.say(&format!("{lead}{}", line.get(pad.len()..).unwrap_or("")));
                    first = false;
                } else {
                    self.say(&line);
                }
            }
        }
        if first {
            self.say(lead.trim_end());
        }
    }

    fn t(&self, text: &Text) -> String {
        text.get(self.lang).trim_end().to_string()
    }

    /// The next line typed, at most `MAX_ANSWER_BYTES` of it (the rest of a longer line
    /// is read past, never held): `None` at the end of input.
    fn read_line(&mut self) -> Option<String> {
        loop {
            let (bytes, cut) = read_line_capped(&mut self.input, MAX_ANSWER_BYTES).ok()??;
            let line = String::from_utf8_lossy(&bytes).trim().to_string();
            if self.echo && !self.to_stderr {
                self.printer.out(&crate::escape::escape(&line));
            }
            if !cut {
                return Some(line);
            }
            self.say(&crate::ui::tr_s(
                self.lang,
                format!(
                    "答えが長すぎます ({MAX_ANSWER_BYTES} バイトまで)。もう一度入力してください。"
                ),
                format!(
                    "That answer is too long (at most {MAX_ANSWER_BYTES} bytes); type it again."
                ),
            ));
        }
    }

    /// The language the conversation is in.
    pub fn lang(&self) -> Lang {
        self.lang
    }

    /// Whether a person types the answers (a terminal), not a pipe.
    pub fn interactive(&self) -> bool {
        !self.echo
    }

    /// A line for the learner, wrapped like the questions.
    pub fn note(&self, text: &str) {
        self.say_hanging("", text);
    }

    /// Asks a yes/no question; `None` at the end of input. An empty line is yes.
    pub fn confirm(&mut self, question: &str) -> Option<bool> {
        self.say_hanging("", question);
        loop {
            if !self.to_stderr {
                self.printer.prompt("> ");
            }
            let line = self.read_line()?;
            match grade::normalise(&line).as_str() {
                "" | "y" | "yes" | "はい" => return Some(true),
                "n" | "no" | "いいえ" => return Some(false),
                _ => self.say(tr(self.lang, "y か n で答えてください。", "Answer y or n.")),
            }
        }
    }

    /// Asks `q`; `rng` shuffles the choices when given. Order items are always scrambled
    /// (stably), or the question would show its own answer.
    pub fn ask(&mut self, q: &Question, heading: &str, rng: Option<&mut Rng>) -> Asked {
        let lang = self.lang;
        let points = match q.points {
            1 => tr(lang, "1点", "1 point").to_string(),
            n => format!("{n}{}", tr(lang, "点", " points")),
        };
        self.say("");
        self.say(&format!(
            "{} {}",
            self.paint(Style::Heading, heading),
            self.paint(
                Style::Dim,
                &format!("({points}, {})", kind_label(lang, &q.kind))
            )
        ));
        self.say_hanging("", &self.t(&q.prompt));
        let shown = self.options(q, rng);
        for (label, _, text) in &shown {
            self.say_hanging(&format!("  {label}) "), text);
        }
        let how = how_to_answer(lang, &q.kind);
        let unit = match &q.kind {
            Kind::Numeric { unit: Some(u), .. } => format!(" [{}]", self.t(u)),
            _ => String::new(),
        };
        let keys = format!(
            "{how}{unit} — {}",
            tr(
                lang,
                "h: ヒント, s: スキップ, q: 終了",
                "h: hint, s: skip, q: quit"
            )
        );
        for line in crate::ui::wrap(&keys, self.printer.width(), "") {
            self.say(&self.paint(Style::Dim, &line));
        }
        let mut hints_used = 0;
        loop {
            if !self.to_stderr {
                self.printer.prompt("> ");
            }
            let Some(line) = self.read_line() else {
                return Asked::Quit;
            };
            match grade::normalise(&line).as_str() {
                "" => continue,
                "h" | "hint" | "?" | "ヒント" => {
                    match q.hints.get(hints_used) {
                        Some(h) => {
                            hints_used += 1;
                            let word = self.paint(
                                Style::Hint,
                                &format!(
                                    "{} {hints_used}/{}:",
                                    tr(lang, "ヒント", "hint"),
                                    q.hints.len()
                                ),
                            );
                            self.say_hanging(&format!("{word} "), &self.t(h));
                        }
                        None => {
                            self.say(tr(lang, "これ以上のヒントはありません。", "No more hints."))
                        }
                    }
                    continue;
                }
                // The answer stays hidden: the question comes back in review, and an
                // answer shown now would be remembered, not known.
                "s" | "skip" => {
                    self.say(&format!(
                        "{} {}",
                        self.paint(Style::Skip, tr(lang, "– スキップ", "– SKIPPED")),
                        tr(
                            lang,
                            "(答えは表示しません。`kca quiz review` でもう一度出題します)",
                            "(answer not shown; `kca quiz review` asks it again)"
                        )
                    ));
                    return Asked::Skipped;
                }
                "q" | "quit" | "exit" => return Asked::Quit,
                _ => {}
            }
            match parse_answer(q, &shown, &line) {
                Some(answer) => {
                    let graded = grade::grade(q, &answer);
                    self.reveal(q, &shown, &graded);
                    return Asked::Answered {
                        answer,
                        graded,
                        hints_used,
                    };
                }
                None => self.say(&format!(
                    "{} {how}",
                    tr(lang, "読み取れませんでした:", "Could not read that:")
                )),
            }
        }
    }

    /// The options as shown: (label, id, text); choices shuffled with `rng`, order items
    /// always scrambled (stably without `rng`), never in the answer's order.
    fn options(&self, q: &Question, rng: Option<&mut Rng>) -> Vec<(String, String, String)> {
        let mut shown: Vec<(String, String, String)> = Vec::new();
        match &q.kind {
            Kind::Single { choices } | Kind::Multi { choices, .. } => {
                let mut order: Vec<usize> = (0..choices.len()).collect();
                if let Some(rng) = rng {
                    rng.shuffle(&mut order);
                }
                for (i, idx) in order.into_iter().enumerate() {
                    let c = &choices[idx];
                    shown.push((letter(i), c.id.clone(), self.t(&c.text)));
                }
            }
            Kind::Order { items } => {
                let mut order: Vec<usize> = (0..items.len()).collect();
                let mut fallback = Rng::new(seed_of(&q.id));
                match rng {
                    Some(rng) => rng.shuffle(&mut order),
                    None => fallback.shuffle(&mut order),
                }
                // A scramble that happens to be the answer teaches nothing: rotate it.
                if order.iter().enumerate().all(|(i, v)| i == *v) {
                    order.rotate_left(1);
                }
                for (i, idx) in order.into_iter().enumerate() {
                    shown.push((
                        (i + 1).to_string(),
                        items[idx].id.clone(),
                        self.t(&items[idx].text),
                    ));
                }
            }
            _ => {}
        }
        shown
    }

    /// Shows the verdict, feedback, the right answer when missed, and the explanation.
    fn reveal(&self, q: &Question, shown: &[(String, String, String)], g: &Graded) {
        let lang = self.lang;
        if g.correct {
            self.say(&self.paint(Style::Pass, tr(lang, "✓ 正解", "✓ CORRECT")))
        } else if g.points > 0.0 {
            self.say(&format!(
                "{} ({:.1}/{})",
                self.paint(Style::Skip, tr(lang, "△ 部分点", "△ PARTIAL")),
                g.points,
                q.points
            ))
        } else {
            self.say(&self.paint(Style::Fail, tr(lang, "✗ 不正解", "✗ INCORRECT")))
        }
        for fb in &g.feedback {
            self.say_hanging("  • ", &self.t(fb));
        }
        if !g.correct {
            let answer = describe(lang, &grade::key(q), shown);
            self.say_hanging(&format!("{} ", tr(lang, "正解:", "Answer:")), &answer);
        }
        let word = self.paint(Style::Hint, tr(lang, "解説:", "Why:"));
        self.say_hanging(&format!("{word} "), &self.t(&q.explanation));
        if let (Some(dir), Some(link)) = (&self.content_dir, &q.lesson)
            && let Some(line) = crate::lesson::link_line(dir, link, lang)
        {
            self.say_hanging("", &self.paint(Style::Hint, &line));
        }
    }
}

/// How to type an answer to a question of this kind.
fn how_to_answer(lang: Lang, kind: &Kind) -> &'static str {
    match kind {
        Kind::Single { .. } => tr(lang, "記号を1つ入力", "type one letter"),
        Kind::Multi { .. } => tr(
            lang,
            "当てはまる記号をすべて入力 (例: a,c)",
            "type every letter that applies (e.g. a,c)",
        ),
        Kind::TrueFalse { .. } => tr(lang, "true / false (はい / いいえ)", "true / false"),
        Kind::Short { .. } => tr(lang, "語句を入力", "type a term"),
        Kind::Numeric { .. } => tr(lang, "数値を入力", "type a number"),
        Kind::Order { .. } => tr(
            lang,
            "正しい順に番号を並べて入力 (例: 3,1,2)",
            "type the numbers in the right order (e.g. 3,1,2)",
        ),
    }
}

/// The question type as the learner reads it.
fn kind_label(lang: Lang, kind: &Kind) -> &'static str {
    match kind {
        Kind::Single { .. } => tr(lang, "単一選択", "single choice"),
        Kind::Multi { .. } => tr(lang, "複数選択", "multiple choice"),
        Kind::TrueFalse { .. } => tr(lang, "正誤", "true or false"),
        Kind::Short { .. } => tr(lang, "記述", "short answer"),
        Kind::Numeric { .. } => tr(lang, "数値", "number"),
        Kind::Order { .. } => tr(lang, "並べ替え", "put in order"),
    }
}

fn letter(i: usize) -> String {
    char::from(b'a' + (i % 26) as u8).to_string()
}

/// Maps a typed label (letter, number, or the id itself) to the option's id.
fn resolve(shown: &[(String, String, String)], token: &str) -> Option<String> {
    let token = grade::normalise(token);
    shown
        .iter()
        .find(|(label, id, _)| label.to_lowercase() == token || id.to_lowercase() == token)
        .map(|(_, id, _)| id.clone())
        .or_else(|| {
            let n: usize = token.parse().ok()?;
            shown.get(n.checked_sub(1)?).map(|(_, id, _)| id.clone())
        })
}

fn tokens(line: &str) -> Vec<String> {
    grade::normalise(line)
        .split(|c: char| c == ',' || c == '、' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

/// Reads a typed answer; `None` when it cannot be read (the learner is asked again).
pub fn parse_answer(
    q: &Question,
    shown: &[(String, String, String)],
    line: &str,
) -> Option<Answer> {
    match &q.kind {
        Kind::Single { .. } => resolve(shown, line.trim()).map(Answer::Choice),
        Kind::Multi { .. } => {
            let picked = tokens(line)
                .iter()
                .map(|t| resolve(shown, t))
                .collect::<Option<Vec<_>>>()?;
            (!picked.is_empty()).then_some(Answer::Choices(picked))
        }
        Kind::TrueFalse { .. } => parse_bool(line).map(Answer::Bool),
        Kind::Short { .. } => Some(Answer::Text(line.to_string())),
        Kind::Numeric { .. } => parse_number(line).map(Answer::Number),
        Kind::Order { .. } => {
            let mut toks = tokens(line);
            // "312" is a fine way to type an order of single-digit items.
            if toks.len() == 1 && shown.len() < 10 && toks[0].len() == shown.len() {
                toks = toks[0].chars().map(String::from).collect();
            }
            let ids = toks
                .iter()
                .map(|t| resolve(shown, t))
                .collect::<Option<Vec<_>>>()?;
            (ids.len() == shown.len()).then_some(Answer::Order(ids))
        }
    }
}

/// The answer as the learner saw the options (labels), for "Answer: b) …".
fn describe(lang: Lang, answer: &Answer, shown: &[(String, String, String)]) -> String {
    let label = |id: &String| {
        shown
            .iter()
            .find(|(_, i, _)| i == id)
            .map(|(l, _, text)| format!("{l}) {text}"))
            .unwrap_or_else(|| id.clone())
    };
    match answer {
        Answer::Choice(id) => label(id),
        Answer::Choices(ids) | Answer::Order(ids) => ids
            .iter()
            .map(label)
            .collect::<Vec<_>>()
            .join(" → ")
            .replace(
                " → ",
                if matches!(answer, Answer::Order(_)) {
                    " → "
                } else {
                    " / "
                },
            ),
        Answer::Bool(true) => tr(lang, "はい (true)", "true").to_string(),
        Answer::Bool(false) => tr(lang, "いいえ (false)", "false").to_string(),
        Answer::Text(t) => t.clone(),
        Answer::Number(n) => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, Read};

    /// `n` bytes of `a`, then `rest`, made as they are read (never held whole).
    struct Long {
        left: u64,
        rest: std::io::Cursor<Vec<u8>>,
        read: u64,
    }

    impl Read for Long {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.left == 0 {
                return self.rest.read(buf);
            }
            let n = buf.len().min(self.left as usize);
            buf[..n].fill(b'a');
            self.left -= n as u64;
            self.read += n as u64;
            Ok(n)
        }
    }

    #[test]
    fn a_typed_answer_of_any_length_is_read_capped() {
        let mut r = BufReader::with_capacity(
            64 << 10,
            Long {
                left: 256 << 20,
                rest: std::io::Cursor::new(b"\nb\n".to_vec()),
                read: 0,
            },
        );
        let (first, cut) = read_line_capped(&mut r, MAX_ANSWER_BYTES).unwrap().unwrap();
        assert!(cut);
        assert_eq!(first.len(), MAX_ANSWER_BYTES);
        assert!(
            first.capacity() < 4 * MAX_ANSWER_BYTES,
            "the long line was held"
        );
        assert_eq!(
            r.get_ref().read,
            256 << 20,
            "the rest of the line was read past"
        );
        assert_eq!(
            read_line_capped(&mut r, MAX_ANSWER_BYTES).unwrap(),
            Some((b"b".to_vec(), false))
        );
        assert_eq!(read_line_capped(&mut r, MAX_ANSWER_BYTES).unwrap(), None);
    }

    #[test]
    fn a_last_line_without_a_newline_is_still_an_answer() {
        let mut r = std::io::Cursor::new(b"a,c".to_vec());
        assert_eq!(
            read_line_capped(&mut r, 10).unwrap(),
            Some((b"a,c".to_vec(), false))
        );
        let mut empty = std::io::Cursor::new(Vec::new());
        assert_eq!(read_line_capped(&mut empty, 10).unwrap(), None);
    }
}

//! One large document (a quiz with thousands of questions) parsed on two threads: it is
//! cut before a block-sequence entry line (`- ` at column c) in its second half, both
//! parts are parsed as documents of their own, and the entries of the second part are
//! appended to the sequence they continue. Taken only where that gives what one parse
//! would; otherwise the caller parses the whole text as usual.
//!
//! Why the splice is faithful:
//! - every line of the tail is blank, a comment, another `- ` at column c, or indented
//!   deeper than c (checked before parsing): the tail never leaves the sequence, so its
//!   parse as a top-level block sequence at column c reads each entry as the sequence
//!   inside the document does (columns are kept, the cut is at a line start);
//! - nothing of the head runs on into the tail: a quoted scalar or flow collection left
//!   open, or an alias to an anchor of the other part, makes a part fail to parse, and
//!   then the whole text is parsed once; plain and block scalars end before a line
//!   indented to column c (YAML 1.2.2, 7.3.3 and 8.1.1.1: their continuation lines are
//!   more indented than the collection around them);
//! - in the head, the line `- ` at column c continues the innermost open block
//!   sequence whose indicator is at column c: the deepest such sequence on the path of
//!   last entries, found by its position and its `-` in the source.

use super::pieces::MIN_PIECE_BYTES;
use super::{Budget, Builder, MAX_DEPTH, Node, Pos, Yaml};

/// Where to cut: the head, the tail, the lines before the tail and the entries' column
/// (0-based).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Cut<'s> {
    pub head: &'s str,
    pub tail: &'s str,
    pub tail_line_offset: usize,
    pub column: usize,
}

/// The first line in the second half of `src` that is a block-sequence entry, when every
/// line after it stays within that sequence.
pub(super) fn cut(src: &str) -> Option<Cut<'_>> {
    if src.len() < 2 * MIN_PIECE_BYTES {
        return None;
    }
    let mut at = src.len() / 2;
    while !src.is_char_boundary(at) {
        at += 1;
    }
    let start = at + src[at..].find('\n')? + 1;
    // The least indented entry line within a window: a sequence nested in the entries
    // of the one to continue has its own, deeper entry lines.
    let mut best: Option<(usize, usize)> = None;
    let mut at = start;
    for line in src[start..].split('\n') {
        if at - start > CANDIDATE_WINDOW {
            break;
        }
        let indent = line.len() - line.trim_start_matches(' ').len();
        if is_entry(&line[indent..]) && best.is_none_or(|(_, c)| indent < c) {
            best = Some((at, indent));
        }
        at += line.len() + 1;
    }
    let (at, column) = best?;
    let tail = &src[at..];
    let stays = tail.split('\n').all(|line| {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let indent = line.len() - line.trim_start_matches(' ').len();
        let rest = &line[indent..];
        rest.trim_start_matches([' ', '\t']).is_empty()
            || rest.starts_with('#')
            || (indent > column && !rest.starts_with('\t'))
            || (indent == column && is_entry(rest))
    });
    // A document marker before the cut (other than the first `---`) would make the
    // tail a document of its own: `parse_one` must then say so.
    let head = &src[..at];
    let marker = |m: &str| {
        head.match_indices(m).any(|(i, _)| {
            i > 0
                && matches!(
                    head.as_bytes().get(i + m.len()),
                    Some(b' ' | b'\t' | b'\r' | b'\n')
                )
        })
    };
    if marker("\n---") || marker("\n...") || head.starts_with("...") {
        return None;
    }
    stays.then(|| Cut {
        head: &src[..at],
        tail,
        tail_line_offset: src[..at].bytes().filter(|&b| b == b'\n').count(),
        column,
    })
}

/// How far past the middle to look for the line to cut before.
const CANDIDATE_WINDOW: usize = 64 * 1024;

/// `- …` or a lone `-`: a block-sequence entry indicator.
fn is_entry(rest: &str) -> bool {
    let rest = rest.strip_suffix('\r').unwrap_or(rest);
    rest == "-" || rest.starts_with("- ") || rest.starts_with("-\t")
}

/// The document, parsed in two parts on two threads; `None` when it cannot be cut or
/// either part does not parse on its own (then nothing was counted against the run's
/// budgets: the caller's plain parse counts and reports everything).
pub(super) fn parse_in_two(src: &str) -> Option<Node> {
    let cut = cut(src)?;
    let budget = Budget::of_this_run();
    let one = |text: &str, line_offset: usize| {
        let mut docs = Vec::new();
        let deepest =
            Builder::<Node>::new(&budget, line_offset).run(text, &mut |n, _| docs.push(n));
        deepest.ok().filter(|_| docs.len() == 1).map(|d| (docs, d))
    };
    let (head, tail) = std::thread::scope(|scope| {
        let tail =
            std::thread::Builder::new().spawn_scoped(scope, || one(cut.tail, cut.tail_line_offset));
        let head = one(cut.head, 0);
        let tail = match tail {
            Ok(t) => t.join().ok().flatten(),
            // No second thread to be had (a pids limit): this one parses the tail too.
            Err(_) => one(cut.tail, cut.tail_line_offset),
        };
        (head, tail)
    });
    let (mut head, _) = head?;
    let (mut tail, tail_depth) = tail?;
    let mut doc = head.pop()?;
    let tail = tail.pop()?;
    let start = Pos {
        line: cut.tail_line_offset + 1,
        col: cut.column + 1,
    };
    let Yaml::Seq(entries) = tail.value else {
        return None;
    };
    if tail.pos != start {
        return None;
    }
    let (seq, depth) = continued_sequence(&mut doc, cut.head, cut.column)?;
    // The tail's sequence sits at `depth` in the document: its nesting counts from there.
    if depth + tail_depth > MAX_DEPTH {
        return None;
    }
    seq.extend(entries);
    budget.close();
    Some(doc)
}

/// The deepest block sequence with its `-` at `column` on the path of last entries
/// of `doc`, and how many collections enclose it.
fn continued_sequence<'d>(
    doc: &'d mut Node,
    src: &str,
    column: usize,
) -> Option<(&'d mut Vec<Node>, usize)> {
    // First find it without holding a mutable borrow, then walk there again.
    let mut target = None;
    let mut node = &*doc;
    let mut depth = 0;
    loop {
        let next = match &node.value {
            Yaml::Seq(items) => {
                if node.pos.col == column + 1 && char_at(src, node.pos) == Some('-') {
                    target = Some(depth);
                }
                items.last()
            }
            Yaml::Map(entries) => entries.last().map(|(_, v)| v),
            _ => None,
        };
        let Some(next) = next else { break };
        node = next;
        depth += 1;
    }
    let target = target?;
    let mut node = doc;
    for _ in 0..target {
        node = match &mut node.value {
            Yaml::Seq(items) => items.last_mut()?,
            Yaml::Map(entries) => &mut entries.last_mut()?.1,
            _ => return None,
        };
    }
    match &mut node.value {
        Yaml::Seq(items) => Some((items, target)),
        _ => None,
    }
}

fn char_at(src: &str, pos: Pos) -> Option<char> {
    let line = src.split('\n').nth(pos.line.checked_sub(1)?)?;
    line.chars().nth(pos.col.checked_sub(1)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_stream;

    /// A quiz-shaped document of `n` questions, each entry written by `entry`.
    fn quiz(n: usize, entry: impl Fn(usize) -> String) -> String {
        let mut src = String::from("kind: Quiz\nmetadata: {id: big}\nquestions:\n");
        for i in 0..n {
            src.push_str(&entry(i));
        }
        src
    }

    fn question(i: usize) -> String {
        format!(
            "  - id: q-{i}\n    prompt: {{ja: 問{i}, en: Question {i}}}\n    text: |+\n      line\n\n    choices:\n      - {{id: a, correct: true}}\n      - b\n    # note\n"
        )
    }

    fn sequential(src: &str) -> Node {
        let mut docs = parse_stream(src).unwrap();
        assert_eq!(docs.len(), 1);
        docs.remove(0)
    }

    #[test]
    fn a_document_parsed_in_two_equals_one_parse() {
        // A compact sequence (entries at the column of their key) starts where the
        // parser says, not at a `-`: it is parsed whole, or else in two faithfully.
        let src = quiz(2_000, |i| format!("- id: q-{i}\n  more:\n  - y\n"));
        assert!(cut(&src).is_some());
        assert!(parse_in_two(&src).is_none_or(|two| two == sequential(&src)));
        let layouts: [(usize, &dyn Fn(usize) -> String); 3] = [
            (375, &question),
            // Entries on their own line, and a plain scalar running over two lines.
            (1_250, &|i| {
                format!("  -\n    id: q-{i}\n    text: a b\n      c d\n")
            }),
            (2_500, &|i| format!("  - [x{i}, y]\r\n")),
        ];
        for (n, layout) in layouts {
            let src = quiz(n, layout);
            assert!(cut(&src).is_some(), "{}", &src[..200]);
            let two = parse_in_two(&src).expect("cut and parsed");
            assert_eq!(two, sequential(&src), "{}", &src[..200]);
        }
        // A document that is itself a sequence.
        let src: String = (0..4_000).map(|i| format!("- {{id: {i}}}\n")).collect();
        assert_eq!(parse_in_two(&src).unwrap(), sequential(&src));
    }

    #[test]
    fn a_document_that_cannot_be_cut_faithfully_is_parsed_whole() {
        // Something after the sequence, at a smaller indentation.
        let src = quiz(750, question) + "passMark: 50\n";
        assert!(cut(&src).is_none());
        // An alias in the tail to an anchor in the head.
        let src = quiz(750, |i| match i {
            0 => "  - &first {id: q-0}\n".into(),
            749 => "  - *first\n".into(),
            i => question(i),
        });
        assert!(cut(&src).is_some() && parse_in_two(&src).is_none());
        // A flow collection left open across the cut, and a tab in the tail.
        let mut src = quiz(375, question);
        src.push_str("  - [a,\n");
        src.push_str(&quiz(375, question)["kind: Quiz\nmetadata: {id: big}\nquestions:\n".len()..]);
        src.push_str("  ]\n");
        assert!(parse_in_two(&src).is_none());
        let src = quiz(750, question) + "\t- x\n";
        assert!(cut(&src).is_none());
        // A second document before the cut, which `parse_one` must refuse.
        for marker in ["...", "--- # two"] {
            let mut src = quiz(375, question);
            src.push_str(&format!("{marker}\n"));
            src.push_str(
                &quiz(375, question)["kind: Quiz\nmetadata: {id: big}\nquestions:\n".len()..],
            );
            assert!(cut(&src).is_none(), "{marker}");
        }
        let src = format!("--- # one\n{}", quiz(750, question));
        assert_eq!(parse_in_two(&src).unwrap(), sequential(&src));
        // A document too small to be worth a thread.
        assert!(cut(&quiz(10, question)).is_none());
    }

    #[test]
    fn nesting_is_counted_from_where_the_tail_sits() {
        // 190 levels down, entries 5 deep each: fine in one parse, so in two.
        let deep = |levels: usize| {
            let mut src = String::new();
            for d in 0..levels {
                src.push_str(&format!("{}k{d}:\n", " ".repeat(d)));
            }
            let pad = " ".repeat(levels);
            for i in 0..500 {
                src.push_str(&format!("{pad}- [[[[x{i}]]]]\n"));
            }
            src
        };
        let ok = deep(190);
        assert_eq!(parse_in_two(&ok).unwrap(), sequential(&ok));
        let too_deep = deep(197);
        assert!(parse_stream(&too_deep).is_err());
        assert!(parse_in_two(&too_deep).is_none());
    }
}

//! The `Quiz` content model and its lint: question types, answers, feedback.

use std::collections::BTreeSet;

use regex::Regex;

use super::decode::{Decoder, Fields, Text};
use crate::error::msg;
use crate::yaml::{Node, Pos};

#[derive(Debug, Clone)]
pub struct Quiz {
    pub id: String,
    pub title: Text,
    pub module: Option<i64>,
    pub description: Option<Text>,
    /// Percent of the total points needed to pass.
    pub pass_mark: u32,
    pub questions: Vec<Question>,
    /// Question id → index in `questions` (first occurrence), so grading 30k answers is
    /// not 30k linear scans.
    by_id: std::collections::HashMap<String, usize>,
}

impl Quiz {
    pub fn max_points(&self) -> u32 {
        self.questions.iter().map(|q| q.points).sum()
    }

    pub fn question(&self, id: &str) -> Option<&Question> {
        self.by_id.get(id).map(|&i| &self.questions[i])
    }
}

#[derive(Debug, Clone)]
pub struct Question {
    pub id: String,
    pub prompt: Text,
    pub concepts: Vec<String>,
    pub points: u32,
    pub hints: Vec<Text>,
    pub explanation: Text,
    pub kind: Kind,
    /// The lesson section that teaches this, `module-N#anchor` (lessons/module-N/{ja,en}.md
    /// has a `## Heading {#anchor}`).
    pub lesson: Option<String>,
    /// Where the question starts in its file (for author warnings).
    pub pos: Pos,
    /// Where each hint is, in the order of `hints`.
    pub hint_pos: Vec<Pos>,
}

#[derive(Debug, Clone)]
pub struct Choice {
    pub id: String,
    pub text: Text,
    pub correct: bool,
    pub feedback: Option<Text>,
    pub pos: Pos,
}

#[derive(Debug, Clone)]
pub struct Item {
    pub id: String,
    pub text: Text,
}

#[derive(Debug, Clone)]
pub enum Kind {
    Single {
        choices: Vec<Choice>,
    },
    Multi {
        choices: Vec<Choice>,
        partial_credit: bool,
    },
    TrueFalse {
        answer: bool,
        feedback_true: Option<Text>,
        feedback_false: Option<Text>,
    },
    Short {
        accept: Vec<String>,
        accept_regex: Vec<Regex>,
    },
    Numeric {
        answer: f64,
        tolerance: f64,
        unit: Option<Text>,
    },
    /// Items in their correct order.
    Order {
        items: Vec<Item>,
    },
}

impl Kind {
    pub fn name(&self) -> &'static str {
        match self {
            Kind::Single { .. } => "single",
            Kind::Multi { .. } => "multi",
            Kind::TrueFalse { .. } => "true-false",
            Kind::Short { .. } => "short",
            Kind::Numeric { .. } => "numeric",
            Kind::Order { .. } => "order",
        }
    }
}

const TYPES: &str = "single, multi, true-false, short, numeric, order";

pub fn decode(d: &mut Decoder<'_>, top: &Fields<'_>) -> Option<Quiz> {
    let meta = top.req(d, "metadata").and_then(|n| d.fields(n));
    let (mut id, mut title, mut module, mut description) = (None, None, None, None);
    if let Some(m) = meta {
        id = m.req(d, "id").and_then(|n| d.ident(n));
        title = m.req(d, "title").and_then(|n| d.text(n));
        module = m.opt("module").and_then(|n| d.int_in(n, 0..=99));
        description = m.opt("description").and_then(|n| d.text(n));
        m.finish(d, ("クイズのメタデータ", "quiz metadata"));
    }
    let pass_mark = top.req(d, "passMark").and_then(|n| d.int_in(n, 0..=100));
    let mut questions = Vec::new();
    if let Some(list) = top.req(d, "questions").and_then(|n| d.list(n)) {
        if list.is_empty() {
            d.error(
                top.pos(),
                msg(
                    "クイズには問題が少なくとも一つ必要です",
                    "a quiz needs at least one question",
                ),
            );
        }
        // Where each repeated id was first used, found in order; reported with its
        // question, so that the questions can be decoded in parallel.
        let mut seen: std::collections::HashMap<&str, Pos> = Default::default();
        let firsts: Vec<(&Node, Option<Pos>)> = list
            .iter()
            .map(|node| {
                let id = node.get("id").and_then(|n| n.as_str());
                let first = id.and_then(|id| match seen.entry(id) {
                    std::collections::hash_map::Entry::Occupied(e) => Some(*e.get()),
                    std::collections::hash_map::Entry::Vacant(e) => {
                        e.insert(node.pos);
                        None
                    }
                });
                (node, first)
            })
            .collect();
        questions = d.each_parallel(&firsts, |d, &(node, first)| {
            if let (Some(first), Some(id)) = (first, node.get("id").and_then(|n| n.as_str())) {
                d.error_hint(
                    node.pos,
                    msg(
                        format!(
                            "問題の id `{id}` が重複しています (最初は {} 行目)",
                            first.line
                        ),
                        format!(
                            "duplicate question id `{id}` (first at line {})",
                            first.line
                        ),
                    ),
                    msg(
                        "問題ごとに別の id を付けます",
                        "give every question its own id",
                    ),
                );
            }
            decode_question(d, node)
        });
    }
    let mut by_id = std::collections::HashMap::with_capacity(questions.len());
    for (i, q) in questions.iter().enumerate() {
        by_id.entry(q.id.clone()).or_insert(i);
    }
    Some(Quiz {
        id: id?,
        title: title?,
        module,
        description,
        pass_mark: pass_mark? as u32,
        questions,
        by_id,
    })
}

fn decode_question(d: &mut Decoder<'_>, node: &Node) -> Option<Question> {
    let f = d.fields(node)?;
    let id = f.req(d, "id").and_then(|n| d.ident(n));
    let ty_node = f.req(d, "type");
    let ty = ty_node.and_then(|n| d.string(n));
    let prompt = f.req(d, "prompt").and_then(|n| d.text(n));
    let concepts = f.opt("concepts").map(|n| d.strings(n)).unwrap_or_default();
    let points = f.opt("points").map_or(Some(1), |n| d.int_in(n, 0..=100));
    let hints_node = f.opt("hints");
    let hints = hints_node.map(|n| d.texts(n)).unwrap_or_default();
    let hint_pos = match hints_node.map(|n| &n.value) {
        Some(crate::yaml::Yaml::Seq(items)) => items.iter().map(|n| n.pos).collect(),
        _ => Vec::new(),
    };
    let lesson = f.opt("lesson").and_then(|n| lesson_link(d, n));
    let explanation = f.req(d, "explanation").and_then(|n| d.text(n));
    let kind = match ty.as_deref() {
        Some("single") => decode_choices(d, &f, false),
        Some("multi") => decode_choices(d, &f, true),
        Some("true-false") => {
            let answer = f.req(d, "answer").and_then(|n| d.bool(n));
            let (mut ft, mut ff) = (None, None);
            if let Some(fb) = f.opt("feedback").and_then(|n| d.fields(n)) {
                ft = fb.opt("true").and_then(|n| d.text(n));
                ff = fb.opt("false").and_then(|n| d.text(n));
                fb.finish(d, ("正誤問題のフィードバック", "true-false feedback"));
            }
            answer.map(|answer| Kind::TrueFalse {
                answer,
                feedback_true: ft,
                feedback_false: ff,
            })
        }
        Some("short") => {
            let accept = f.req(d, "accept").map(|n| d.strings(n)).unwrap_or_default();
            if accept.is_empty() && f.has("accept") {
                d.error(
                    f.pos(),
                    msg(
                        "`accept` には答えが少なくとも一つ必要です",
                        "`accept` needs at least one answer",
                    ),
                );
            }
            let mut accept_regex = Vec::new();
            if let Some(list) = f.opt("acceptRegex").and_then(|n| d.list(n)) {
                for n in list {
                    if let Some(s) = d.string(n) {
                        match regex::RegexBuilder::new(&s).size_limit(1 << 20).build() {
                            Ok(r) => accept_regex.push(r),
                            Err(e) => d.error(
                                n.pos,
                                msg(
                                    format!("正規表現として読めません: {e}"),
                                    format!("invalid regular expression: {e}"),
                                ),
                            ),
                        }
                    }
                }
            }
            Some(Kind::Short {
                accept,
                accept_regex,
            })
        }
        Some("numeric") => {
            let answer = f.req(d, "answer").and_then(|n| d.number(n));
            let tolerance = f.opt("tolerance").map_or(Some(0.0), |n| d.number(n));
            if let (Some(t), Some(n)) = (tolerance, f.opt("tolerance"))
                && t < 0.0
            {
                d.error(
                    n.pos,
                    msg("tolerance は負にできません", "tolerance cannot be negative"),
                );
            }
            let unit = f.opt("unit").and_then(|n| d.text(n));
            answer
                .zip(tolerance)
                .map(|(answer, tolerance)| Kind::Numeric {
                    answer,
                    tolerance,
                    unit,
                })
        }
        Some("order") => {
            let items = decode_ids(d, &f, "items");
            if items.len() < 2 {
                d.error(
                    f.pos(),
                    msg(
                        "並べ替え問題には項目が少なくとも二つ必要です",
                        "an order question needs at least two items",
                    ),
                );
            }
            Some(Kind::Order {
                items: items
                    .into_iter()
                    .map(|(id, text, _, _, _)| Item { id, text })
                    .collect(),
            })
        }
        Some(other) => {
            d.error_hint(
                ty_node.map_or(f.pos(), |n| n.pos),
                msg(
                    format!("未知の問題の種類 `{other}` です"),
                    format!("unknown question type `{other}`"),
                ),
                msg(
                    format!("次のどれかを使います: {TYPES}"),
                    format!("use one of: {TYPES}"),
                ),
            );
            None
        }
        None => None,
    };
    let ty = ty.as_deref().unwrap_or("?");
    let context = (format!("`{ty}` 問題"), format!("a `{ty}` question"));
    f.finish(d, (&context.0, &context.1));
    Some(Question {
        id: id?,
        prompt: prompt?,
        concepts,
        points: points? as u32,
        hints,
        explanation: explanation?,
        kind: kind?,
        lesson,
        pos: node.pos,
        hint_pos,
    })
}

/// `module-N#anchor`: a lesson module and a heading anchor in it.
fn lesson_link(d: &mut Decoder<'_>, node: &Node) -> Option<String> {
    let s = d.string(node)?;
    let ok = s.split_once('#').is_some_and(|(module, anchor)| {
        module
            .strip_prefix("module-")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            && !anchor.is_empty()
            && anchor
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    });
    if !ok {
        d.error_hint(
            node.pos,
            msg(
                format!("`lesson: {s}` はレッスンへのリンクではありません"),
                format!("`lesson: {s}` is not a lesson link"),
            ),
            msg(
                "`lesson: \"module-N#anchor\"` と書きます (anchor は `## 見出し {#anchor}` のもの)",
                "write `lesson: \"module-N#anchor\"` (the anchor of a `## Heading {#anchor}`)",
            ),
        );
        return None;
    }
    Some(s)
}

fn decode_choices(d: &mut Decoder<'_>, f: &Fields<'_>, multi: bool) -> Option<Kind> {
    let partial_credit = if multi {
        f.opt("partialCredit")
            .and_then(|n| d.bool(n))
            .unwrap_or(false)
    } else {
        false
    };
    let mut raw = decode_ids(d, f, "choices");
    // `answer:` names the right choice(s) by id, as an alternative to `correct: true`.
    if let Some(answer) = f.opt("answer") {
        let ids = match &answer.value {
            crate::yaml::Yaml::Seq(_) => d.strings(answer),
            _ => d.string(answer).into_iter().collect(),
        };
        for id in ids {
            match raw.iter_mut().find(|c| c.0 == id) {
                Some(c) => c.2 = true,
                None => {
                    let ids = raw
                        .iter()
                        .map(|c| c.0.as_str())
                        .collect::<Vec<_>>()
                        .join(", ");
                    d.error_hint(
                        answer.pos,
                        msg(
                            format!("`answer` が未定義の選択肢 `{id}` を指しています"),
                            format!("`answer` refers to undefined choice `{id}`"),
                        ),
                        msg(
                            format!("選択肢は {ids} です"),
                            format!("choices are: {ids}"),
                        ),
                    )
                }
            }
        }
    }
    let correct = raw.iter().filter(|c| c.2).count();
    if raw.len() < 2 && f.has("choices") {
        d.error(
            f.pos(),
            msg(
                "選択問題には選択肢が少なくとも二つ必要です",
                "a choice question needs at least two choices",
            ),
        );
    }
    match (multi, correct) {
        (_, 0) if !raw.is_empty() => d.error_hint(
            f.pos(),
            msg(
                "正解の印が付いた選択肢がありません",
                "no choice is marked correct",
            ),
            msg(
                "正しい答えに `correct: true` を付けます",
                "mark the right answer with `correct: true`",
            ),
        ),
        (false, n) if n > 1 => d.error_hint(
            f.pos(),
            msg(
                format!("`single` 問題に正解の選択肢が {n} 個あります"),
                format!("a `single` question has {n} correct choices"),
            ),
            msg(
                "正解をちょうど一つにするか、`type: multi` にします",
                "mark exactly one, or make it `type: multi`",
            ),
        ),
        _ => {}
    }
    let choices: Vec<Choice> = raw
        .into_iter()
        .map(|(id, text, correct, feedback, pos)| Choice {
            id,
            text,
            correct,
            feedback,
            pos,
        })
        .collect();
    Some(if multi {
        Kind::Multi {
            choices,
            partial_credit,
        }
    } else {
        Kind::Single { choices }
    })
}

/// One `{id, text, [correct], [feedback]}` entry and where it is.
type Entry = (String, Text, bool, Option<Text>, Pos);

/// Decodes a list of `{id, text, [correct], [feedback]}` entries with unique ids.
fn decode_ids(d: &mut Decoder<'_>, f: &Fields<'_>, key: &str) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut ids = BTreeSet::new();
    let Some(list) = f.req(d, key).and_then(|n| d.list(n)) else {
        return out;
    };
    let choice = key == "choices";
    for node in list {
        let Some(c) = d.fields(node) else { continue };
        let id = c.req(d, "id").and_then(|n| d.ident(n));
        let text = c.req(d, "text").and_then(|n| d.text(n));
        let (mut correct, mut feedback) = (false, None);
        if choice {
            correct = c.opt("correct").and_then(|n| d.bool(n)).unwrap_or(false);
            feedback = c.opt("feedback").and_then(|n| d.text(n));
        }
        c.finish(
            d,
            if choice {
                ("選択肢", "a choice")
            } else {
                ("項目", "an item")
            },
        );
        if let Some(id) = &id
            && !ids.insert(id.clone())
        {
            d.error(
                node.pos,
                msg(
                    format!("`{key}` の id `{id}` が重複しています"),
                    format!("duplicate id `{id}` in `{key}`"),
                ),
            );
        }
        if let (Some(id), Some(text)) = (id, text) {
            out.push((id, text, correct, feedback, node.pos));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{Document, load_str};
    use std::path::Path;

    fn problems(src: &str) -> Vec<String> {
        match load_str(Path::new("q.yaml"), src) {
            Ok(_) => vec![],
            Err(d) => d
                .iter()
                .map(|d| format!("{}:{} {}", d.pos.line, d.pos.col, d.message))
                .collect(),
        }
    }

    const HEAD: &str =
        "apiVersion: kca.dev/v1alpha1\nkind: Quiz\nmetadata: {id: q, title: T}\npassMark: 50\n";

    #[test]
    fn a_valid_quiz_loads() {
        let src = format!(
            "{HEAD}questions:\n  - id: a\n    type: single\n    prompt: P\n    explanation: E\n    choices:\n      - {{id: x, text: X, correct: true}}\n      - {{id: y, text: Y}}\n"
        );
        match load_str(Path::new("q.yaml"), &src) {
            Ok(Document::Quiz(q)) => assert_eq!(q.questions.len(), 1),
            other => panic!("{other:?}"),
        }
    }

    /// A question at line `5 + 8 * i`, written in 8 lines.
    fn question(i: usize, id: &str, explanation: &str) -> String {
        format!(
            "  - id: {id}\n    type: single\n    prompt: P{i}\n    {explanation}\n    choices:\n      - {{id: x, text: X, correct: true}}\n      - {{id: y, text: Y}}\n    # q{i}\n"
        )
    }

    #[test]
    fn a_long_quiz_decoded_in_parallel_keeps_questions_and_problems_in_order() {
        // More questions than the decoder's parallel threshold (256 in tests).
        let n = 600;
        let body = |bad: &dyn Fn(usize) -> bool| -> String {
            (0..n)
                .map(|i| match i {
                    400 if bad(i) => question(i, "q-3", "explanation: E"),
                    _ if bad(i) => question(i, &format!("q-{i}"), "explanaton: E"),
                    _ => question(i, &format!("q-{i}"), "explanation: E"),
                })
                .collect()
        };
        let src = format!("{HEAD}questions:\n{}", body(&|_| false));
        match load_str(Path::new("q.yaml"), &src) {
            Ok(Document::Quiz(q)) => {
                let ids: Vec<String> = (0..n).map(|i| format!("q-{i}")).collect();
                assert_eq!(
                    q.questions.iter().map(|q| &q.id).collect::<Vec<_>>(),
                    ids.iter().collect::<Vec<_>>()
                );
                assert_eq!(q.question("q-599").unwrap().pos.line, 6 + 8 * 599);
            }
            other => panic!("{other:?}"),
        }
        let line = |i: usize| 6 + 8 * i;
        let src = format!(
            "{HEAD}questions:\n{}",
            body(&|i| [100, 400, 450].contains(&i))
        );
        let p = problems(&src);
        let want = [
            format!("{}:5 missing field `explanation`", line(100)),
            format!(
                "{}:5 unknown field `explanaton` in a `single` question",
                line(100) + 3
            ),
            format!(
                "{}:5 duplicate question id `q-3` (first at line {})",
                line(400),
                line(3)
            ),
            format!("{}:5 missing field `explanation`", line(450)),
            format!(
                "{}:5 unknown field `explanaton` in a `single` question",
                line(450) + 3
            ),
        ];
        assert_eq!(p, want);
        // Past the cap, the problems kept are the first ones of the file.
        let p = problems(&format!("{HEAD}questions:\n{}", body(&|_| true)));
        assert_eq!(p.len(), crate::diag::MAX_PER_FILE + 1);
        assert_eq!(p[0], format!("{}:5 missing field `explanation`", line(0)));
        assert_eq!(
            p[198],
            format!("{}:5 missing field `explanation`", line(99))
        );
        assert!(p[200].contains("and 999 more"), "{}", p[200]);
    }

    #[test]
    fn every_problem_of_a_file_is_reported_together() {
        let src = format!(
            "{HEAD}questions:\n  - id: a\n    type: single\n    prompt: P\n    explanation: E\n    choices:\n      - {{id: x, text: X}}\n      - {{id: x, text: Y}}\n  - id: a\n    type: essay\n    prompt: P\n    explanation: E\n  - id: c\n    type: numeric\n    prompt: P\n    answr: 3\n"
        );
        let p = problems(&src);
        assert!(
            p.iter().any(|m| m.contains("no choice is marked correct")),
            "{p:?}"
        );
        assert!(p.iter().any(|m| m.contains("duplicate id `x`")), "{p:?}");
        assert!(
            p.iter().any(|m| m.contains("duplicate question id `a`")),
            "{p:?}"
        );
        assert!(
            p.iter()
                .any(|m| m.contains("unknown question type `essay`")),
            "{p:?}"
        );
        assert!(
            p.iter().any(|m| m.contains("missing field `answer`")),
            "{p:?}"
        );
        assert!(
            p.iter().any(|m| m.contains("missing field `explanation`")),
            "{p:?}"
        );
        assert!(
            p.iter().any(|m| m.contains("unknown field `answr`")),
            "{p:?}"
        );
    }

    #[test]
    fn answer_may_name_choices_but_only_defined_ones() {
        let src = format!(
            "{HEAD}questions:\n  - id: a\n    type: multi\n    prompt: P\n    explanation: E\n    answer: [x, z]\n    choices:\n      - {{id: x, text: X}}\n      - {{id: y, text: Y}}\n"
        );
        let p = problems(&src);
        assert_eq!(
            p,
            vec!["10:13 `answer` refers to undefined choice `z`".to_string()]
        );
    }
}

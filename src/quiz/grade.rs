//! Grading one answer to one question: pure, table-tested. A wrong answer is a result
//! (with feedback), never an error.

use unicode_normalization::UnicodeNormalization;

use crate::content::Text;
use crate::content::quiz::{Kind, Question};

/// A learner's answer, in the shape its question type takes.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// `single`: a choice id.
    Choice(String),
    /// `multi`: choice ids.
    Choices(Vec<String>),
    /// `true-false`.
    Bool(bool),
    /// `short`: free text.
    Text(String),
    /// `numeric`.
    Number(f64),
    /// `order`: item ids, first to last.
    Order(Vec<String>),
}

/// The outcome of grading one answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Graded {
    pub correct: bool,
    /// Points earned (partial credit can make this a fraction).
    pub points: f64,
    /// Feedback for what the learner chose, in order.
    pub feedback: Vec<Text>,
}

/// Normalises typed text for comparison: NFKC (full-width letters and digits become
/// half-width, half-width katakana full-width), case folded, spaces trimmed and collapsed.
pub fn normalise(s: &str) -> String {
    let folded: String = s.nfkc().collect::<String>().to_lowercase();
    folded.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub fn grade(q: &Question, answer: &Answer) -> Graded {
    let full = f64::from(q.points);
    let whole = |correct: bool, feedback: Vec<Text>| Graded {
        correct,
        points: if correct { full } else { 0.0 },
        feedback,
    };
    match (&q.kind, answer) {
        (Kind::Single { choices }, Answer::Choice(id)) => {
            let chosen = choices.iter().find(|c| &c.id == id);
            whole(
                chosen.is_some_and(|c| c.correct),
                chosen
                    .and_then(|c| c.feedback.clone())
                    .into_iter()
                    .collect(),
            )
        }
        (
            Kind::Multi {
                choices,
                partial_credit,
            },
            Answer::Choices(ids),
        ) => {
            let picked = |id: &str| ids.iter().any(|i| i == id);
            let feedback = choices
                .iter()
                .filter(|c| picked(&c.id))
                .filter_map(|c| c.feedback.clone())
                .collect();
            let right = choices
                .iter()
                .filter(|c| c.correct && picked(&c.id))
                .count();
            let wrong = choices
                .iter()
                .filter(|c| !c.correct && picked(&c.id))
                .count();
            let unknown = ids
                .iter()
                .filter(|i| !choices.iter().any(|c| &&c.id == i))
                .count();
            let total = choices.iter().filter(|c| c.correct).count();
            let correct = right == total && wrong == 0 && unknown == 0;
            let points = if correct {
                full
            } else if *partial_credit && total > 0 {
                // Each right pick earns a share; each wrong pick takes one away; never below zero.
                let net = right as f64 - (wrong + unknown) as f64;
                (full * net / total as f64).max(0.0)
            } else {
                0.0
            };
            Graded {
                correct,
                points,
                feedback,
            }
        }
        (
            Kind::TrueFalse {
                answer: want,
                feedback_true,
                feedback_false,
            },
            Answer::Bool(got),
        ) => {
            let fb = if *got { feedback_true } else { feedback_false };
            whole(got == want, fb.clone().into_iter().collect())
        }
        (
            Kind::Short {
                accept,
                accept_regex,
            },
            Answer::Text(got),
        ) => {
            let got = normalise(got);
            let ok = accept.iter().any(|a| normalise(a) == got)
                || accept_regex.iter().any(|r| r.is_match(&got));
            whole(ok, Vec::new())
        }
        (
            Kind::Numeric {
                answer: want,
                tolerance,
                ..
            },
            Answer::Number(got),
        ) => whole((got - want).abs() <= tolerance + 1e-9, Vec::new()),
        (Kind::Order { items }, Answer::Order(ids)) => {
            let ok = ids.len() == items.len() && items.iter().zip(ids).all(|(i, id)| &i.id == id);
            whole(ok, Vec::new())
        }
        // An answer of the wrong shape is simply not right.
        _ => whole(false, Vec::new()),
    }
}

/// The correct answer of a question, in answer form (the key).
pub fn key(q: &Question) -> Answer {
    match &q.kind {
        Kind::Single { choices } => Answer::Choice(
            choices
                .iter()
                .find(|c| c.correct)
                .map(|c| c.id.clone())
                .unwrap_or_default(),
        ),
        Kind::Multi { choices, .. } => Answer::Choices(
            choices
                .iter()
                .filter(|c| c.correct)
                .map(|c| c.id.clone())
                .collect(),
        ),
        Kind::TrueFalse { answer, .. } => Answer::Bool(*answer),
        Kind::Short { accept, .. } => Answer::Text(accept.first().cloned().unwrap_or_default()),
        Kind::Numeric { answer, .. } => Answer::Number(*answer),
        Kind::Order { items } => Answer::Order(items.iter().map(|i| i.id.clone()).collect()),
    }
}

impl Answer {
    /// As a value of the answers file.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        match self {
            Answer::Choice(s) | Answer::Text(s) => json!(s),
            Answer::Choices(v) | Answer::Order(v) => json!(v),
            Answer::Bool(b) => json!(b),
            Answer::Number(n) if n.fract() == 0.0 && n.abs() < 1e15 => json!(*n as i64),
            Answer::Number(n) => json!(n),
        }
    }

    /// Reads an answers-file value for question `q`; `None` when it has the wrong shape.
    pub fn from_json(q: &Question, v: &serde_json::Value) -> Option<Answer> {
        use serde_json::Value as V;
        let string = |v: &V| match v {
            V::String(s) => Some(s.clone()),
            V::Number(n) => Some(n.to_string()),
            V::Bool(b) => Some(b.to_string()),
            _ => None,
        };
        let list = |v: &V| match v {
            V::Array(items) => items.iter().map(string).collect::<Option<Vec<_>>>(),
            other => string(other).map(|s| vec![s]),
        };
        Some(match &q.kind {
            Kind::Single { .. } => Answer::Choice(string(v)?),
            Kind::Multi { .. } => Answer::Choices(list(v)?),
            Kind::TrueFalse { .. } => Answer::Bool(match v {
                V::Bool(b) => *b,
                other => parse_bool(&string(other)?)?,
            }),
            Kind::Short { .. } => Answer::Text(string(v)?),
            Kind::Numeric { .. } => Answer::Number(match v {
                V::Number(n) => n.as_f64()?,
                other => parse_number(&string(other)?)?,
            }),
            Kind::Order { .. } => Answer::Order(list(v)?),
        })
    }
}

/// Reads a typed yes/no, in English or Japanese.
pub fn parse_bool(s: &str) -> Option<bool> {
    match normalise(s).as_str() {
        "true" | "t" | "yes" | "y" | "o" | "○" | "はい" | "正" | "正しい" | "1" => {
            Some(true)
        }
        "false" | "f" | "no" | "n" | "x" | "×" | "いいえ" | "誤" | "誤り" | "0" => {
            Some(false)
        }
        _ => None,
    }
}

/// Reads a typed number, full-width digits included.
pub fn parse_number(s: &str) -> Option<f64> {
    normalise(s)
        .replace(',', "")
        .parse()
        .ok()
        .filter(|n: &f64| n.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::quiz::{Choice, Item};

    fn q(kind: Kind, points: u32) -> Question {
        Question {
            id: "q".into(),
            prompt: Text::plain("?"),
            concepts: vec![],
            points,
            hints: vec![],
            explanation: Text::plain("because"),
            kind,
            lesson: None,
            pos: Default::default(),
            hint_pos: vec![],
        }
    }

    fn choices(correct: &[&str], all: &[&str]) -> Vec<Choice> {
        all.iter()
            .map(|id| Choice {
                id: id.to_string(),
                text: Text::plain(*id),
                correct: correct.contains(id),
                feedback: Some(Text::plain(format!("fb-{id}"))),
                pos: Default::default(),
            })
            .collect()
    }

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn grading_table() {
        let single = q(
            Kind::Single {
                choices: choices(&["b"], &["a", "b", "c"]),
            },
            2,
        );
        let multi = q(
            Kind::Multi {
                choices: choices(&["a", "c"], &["a", "b", "c", "d"]),
                partial_credit: false,
            },
            2,
        );
        let partial = q(
            Kind::Multi {
                choices: choices(&["a", "c"], &["a", "b", "c", "d"]),
                partial_credit: true,
            },
            2,
        );
        let tf = q(
            Kind::TrueFalse {
                answer: false,
                feedback_true: None,
                feedback_false: None,
            },
            1,
        );
        let short = q(
            Kind::Short {
                accept: ids(&["UpdateRequest", "更新リクエスト"]),
                accept_regex: vec![regex::Regex::new("^update ?requests?$").unwrap()],
            },
            1,
        );
        let num = q(
            Kind::Numeric {
                answer: 10.0,
                tolerance: 0.5,
                unit: None,
            },
            1,
        );
        let order = q(
            Kind::Order {
                items: ids(&["authn", "authz", "mutate"])
                    .into_iter()
                    .map(|id| Item {
                        text: Text::plain(&id),
                        id,
                    })
                    .collect(),
            },
            3,
        );
        let table: Vec<(&Question, Answer, bool, f64)> = vec![
            (&single, Answer::Choice("b".into()), true, 2.0),
            (&single, Answer::Choice("a".into()), false, 0.0),
            (&single, Answer::Choice("zz".into()), false, 0.0),
            (&multi, Answer::Choices(ids(&["c", "a"])), true, 2.0),
            (&multi, Answer::Choices(ids(&["a"])), false, 0.0),
            (&partial, Answer::Choices(ids(&["a"])), false, 1.0),
            (&partial, Answer::Choices(ids(&["a", "b"])), false, 0.0),
            (&partial, Answer::Choices(ids(&["b", "d"])), false, 0.0),
            (&partial, Answer::Choices(ids(&["a", "c", "b"])), false, 1.0),
            (&tf, Answer::Bool(false), true, 1.0),
            (&tf, Answer::Bool(true), false, 0.0),
            (&short, Answer::Text("  updaterequest ".into()), true, 1.0),
            (
                &short,
                Answer::Text("ＵｐｄａｔｅＲｅｑｕｅｓｔ".into()),
                true,
                1.0,
            ),
            (&short, Answer::Text("更新リクエスト".into()), true, 1.0),
            (&short, Answer::Text("Update  Requests".into()), true, 1.0),
            (&short, Answer::Text("webhook".into()), false, 0.0),
            (&num, Answer::Number(10.4), true, 1.0),
            (&num, Answer::Number(11.0), false, 0.0),
            (
                &order,
                Answer::Order(ids(&["authn", "authz", "mutate"])),
                true,
                3.0,
            ),
            (
                &order,
                Answer::Order(ids(&["authz", "authn", "mutate"])),
                false,
                0.0,
            ),
            (&order, Answer::Order(ids(&["authn", "authz"])), false, 0.0),
            (&num, Answer::Text("10".into()), false, 0.0),
        ];
        for (i, (question, answer, correct, points)) in table.into_iter().enumerate() {
            let g = grade(question, &answer);
            assert_eq!(
                (g.correct, g.points),
                (correct, points),
                "row {i}: {answer:?}"
            );
        }
    }

    #[test]
    fn feedback_follows_the_chosen_choices() {
        let multi = q(
            Kind::Multi {
                choices: choices(&["a"], &["a", "b", "c"]),
                partial_credit: false,
            },
            1,
        );
        let g = grade(&multi, &Answer::Choices(ids(&["c", "a"])));
        let fb: Vec<_> = g
            .feedback
            .iter()
            .map(|t| t.get(crate::settings::Lang::En).to_string())
            .collect();
        assert_eq!(fb, vec!["fb-a", "fb-c"]);
    }

    #[test]
    fn the_key_scores_full_marks() {
        let question = q(
            Kind::Multi {
                choices: choices(&["a", "c"], &["a", "b", "c"]),
                partial_credit: true,
            },
            4,
        );
        assert_eq!(grade(&question, &key(&question)).points, 4.0);
    }

    #[test]
    fn typed_values_in_both_languages_and_widths() {
        assert_eq!(parse_bool("はい"), Some(true));
        assert_eq!(parse_bool(" FALSE "), Some(false));
        assert_eq!(parse_bool("maybe"), None);
        assert_eq!(parse_number("１０"), Some(10.0));
        assert_eq!(parse_number("1,000"), Some(1000.0));
        assert_eq!(parse_number("inf"), None);
    }
}

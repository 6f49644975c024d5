//! `kca quiz grade`'s answers file: decoded against its quiz with every problem at once
//! (YAML, unknown question ids, wrongly shaped answers, each with its place), then graded
//! question by question.

use super::command::{QuestionResult, unanswered};
use super::grade::{self, Answer};
use crate::content::decode::closest;
use crate::content::quiz::Quiz;
use crate::diag::Collector;
use crate::error::{Error, Result};
use crate::settings::Lang;
use crate::yaml::{self, Yaml};

/// The answers file decoded against `quiz`: every problem (YAML, unknown question ids,
/// wrongly shaped answers) as a diagnostic with its place.
pub(super) fn read_answers(
    quiz: &Quiz,
    path: &std::path::Path,
) -> Result<std::collections::HashMap<String, Answer>> {
    let text = crate::input::read(path).map_err(|e| {
        let hint = e.hint_said();
        Error::usage(
            e.said(),
            crate::error::msg(
                format!("{}。答えの YAML ファイルのパスを指定します", hint.ja),
                format!("{}; give the path of a YAML answers file", hint.en),
            ),
        )
    })?;
    let text = String::from_utf8_lossy(&text).into_owned();
    let mut diags = Collector::new(path, &text);
    let node = match yaml::parse_one(&text) {
        Ok(n) => n,
        Err(e) => {
            diags.yaml_error(&e);
            return Err(Error::Content(diags.finish()));
        }
    };
    let entries = match &node.value {
        Yaml::Map(entries) => entries.as_slice(),
        Yaml::Null => &[],
        _ => {
            diags.error_said(
                node.pos,
                crate::error::msg(
                    format!(
                        "問題の ID と答えのマッピングではなく {} があります",
                        node.type_name()
                    ),
                    format!(
                        "expected a mapping of question id to answer, found {}",
                        node.type_name()
                    ),
                ),
                crate::error::msg(
                    "`問題の-id: 答え` の行を書きます",
                    "write `question-id: answer` lines",
                ),
            );
            return Err(Error::Content(diags.finish()));
        }
    };
    let mut answers = std::collections::HashMap::new();
    for (k, v) in entries {
        let id = k
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| format!("{:?}", k.value));
        match quiz.question(&id) {
            None => {
                let hint = closest(&id, quiz.questions.iter().map(|q| q.id.as_str())).map_or_else(
                    || {
                        crate::error::msg(
                            "問題の ID は `kca quiz key` で一覧できます",
                            "`kca quiz key` lists the question ids",
                        )
                    },
                    |n| {
                        crate::error::msg(
                            format!("`{n}` のことですか?"),
                            format!("did you mean `{n}`?"),
                        )
                    },
                );
                diags.error_said(
                    k.pos,
                    crate::error::msg(
                        format!("クイズ `{}` に問題 `{id}` はありません", quiz.id),
                        format!("quiz `{}` has no question `{id}`", quiz.id),
                    ),
                    hint,
                );
            }
            Some(q) => match Answer::from_json(q, &v.to_json()) {
                Some(a) => {
                    answers.insert(id, a);
                }
                None => diags.error_said(
                    v.pos,
                    crate::error::msg(
                        format!(
                            "`{id}` は `{}` の問題で、この答えは形が違います",
                            q.kind.name()
                        ),
                        format!(
                            "`{id}` is a `{}` question; this answer has the wrong shape",
                            q.kind.name()
                        ),
                    ),
                    answer_shape(q),
                ),
            },
        }
    }
    if !diags.is_empty() {
        return Err(Error::Content(diags.finish()));
    }
    Ok(answers)
}

/// Each question of `quiz` graded on its answer, or unanswered.
pub(super) fn graded(
    lang: Lang,
    quiz: &Quiz,
    answers: &std::collections::HashMap<String, Answer>,
) -> Vec<QuestionResult> {
    quiz.questions
        .iter()
        .map(|q| match answers.get(&q.id) {
            Some(a) => {
                let g = grade::grade(q, a);
                QuestionResult {
                    id: q.id.clone(),
                    correct: g.correct,
                    points: g.points,
                    max: q.points,
                    answered: true,
                    answer: Some(a.to_json()),
                    feedback: g.feedback.iter().map(|f| f.get(lang).to_string()).collect(),
                    concepts: q.concepts.clone(),
                }
            }
            None => unanswered(q),
        })
        .collect()
}

fn answer_shape(q: &crate::content::quiz::Question) -> crate::error::Msg {
    use crate::content::quiz::Kind;
    let (ja, en) = match q.kind {
        Kind::Single { .. } => (
            "選択肢の ID を一つ書きます。例: `b`",
            "give one choice id, e.g. `b`",
        ),
        Kind::Multi { .. } => (
            "選択肢の ID のリストを書きます。例: `[a, c]`",
            "give a list of choice ids, e.g. `[a, c]`",
        ),
        Kind::TrueFalse { .. } => ("`true` か `false` を書きます", "give `true` or `false`"),
        Kind::Short { .. } => ("文字列を書きます", "give a string"),
        Kind::Numeric { .. } => ("数を書きます", "give a number"),
        Kind::Order { .. } => (
            "項目の ID を順に書きます。例: `[authn, authz, mutate]`",
            "give the item ids in order, e.g. `[authn, authz, mutate]`",
        ),
    };
    crate::error::msg(ja, en)
}

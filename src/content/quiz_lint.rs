//! Author warnings for quizzes: how far a learner who knows nothing gets by playing the
//! test (always the longest choice, or the shortest once authors overcorrect; select every
//! option; always "true"; always the first position), and hints that hand over the answer. Pure: measures a loaded quiz with the
//! real grader and returns warnings; never an error, never printed here.
//!
//! The idea comes from item-writing guidance (the right option should not stand out by
//! length or position; "all of the above"-style multi questions reward guessing); the
//! thresholds are ours: a third for longest-is-correct, 40 % for a strategy's score.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::Text;
use super::quiz::{Choice, Kind, Question, Quiz};
use crate::diag::{Collector, Diagnostic};
use crate::error::msg;
use crate::quiz::grade::{Answer, grade, normalise};
use crate::settings::Lang;
use crate::yaml::Pos;

/// A strategy above this share of the points it can earn is a warning.
pub const MAX_STRATEGY_SCORE: f64 = 0.40;

/// What each test-wise strategy scores on one quiz, as a share (0..=1) of the points of the
/// questions it applies to; `None` when the quiz has no such question.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Bias {
    /// Single questions whose correct choice is the strictly longest, in the worse language.
    pub longest_correct: usize,
    /// … and the strictly shortest.
    pub shortest_correct: usize,
    pub singles: usize,
    /// Single → the longest choice; multi → every choice at least as long as the average.
    pub longest: Option<f64>,
    /// Single → the shortest choice; multi → every choice at most as long as the average.
    pub shortest: Option<f64>,
    /// Multi → every choice.
    pub select_all: Option<f64>,
    /// True-false → always true.
    pub all_true: Option<f64>,
    /// Single → always the first choice.
    pub position_a: Option<f64>,
}

/// Measures `quiz` and returns the warnings an author should see, pointing into `src`.
pub fn lint(path: &Path, src: &str, quiz: &Quiz) -> (Bias, Vec<Diagnostic>) {
    let mut out = Collector::new(path, src);
    let bias = measure(quiz);
    warn_longest(&mut out, quiz, &bias);
    warn_positions(&mut out, quiz);
    warn_true_false(&mut out, quiz);
    warn_strategies(&mut out, quiz, &bias);
    for q in &quiz.questions {
        warn_most_correct(&mut out, q);
        warn_hints(&mut out, q);
    }
    (bias, out.finish())
}

/// Warns about `lesson:` links whose `{#anchor}` heading is in neither language file of
/// `lessons/module-N/`. Says nothing when the content has no lessons folder at all (a quiz
/// collection of its own, or lessons not written yet).
pub fn lesson_links(path: &Path, src: &str, quiz: &Quiz, lessons: &Path) -> Vec<Diagnostic> {
    let mut out = Collector::new(path, src);
    if !lessons.is_dir() {
        return out.finish();
    }
    let content = lessons.parent().unwrap_or(lessons);
    // Each module's lesson files read once: (shown name, its section anchors).
    let mut read: BTreeMap<String, Vec<(String, Vec<String>)>> = BTreeMap::new();
    for q in &quiz.questions {
        let Some((module, anchor)) = q.lesson.as_deref().and_then(|l| l.split_once('#')) else {
            continue;
        };
        let files = read.entry(module.to_string()).or_insert_with(|| {
            let Some(n) = module.strip_prefix("module-").and_then(|n| n.parse().ok()) else {
                return Vec::new();
            };
            crate::lesson::anchors(content, n)
                .into_iter()
                .filter_map(|(path, found)| {
                    let name = path.file_name()?.to_string_lossy().into_owned();
                    Some((format!("lessons/{module}/{name}"), found?))
                })
                .collect()
        });
        let tag = format!("{{#{anchor}}}");
        let missing: Vec<&str> = files
            .iter()
            .filter(|(_, have)| !have.iter().any(|a| a == anchor))
            .map(|(file, _)| file.as_str())
            .collect();
        if files.is_empty() || !missing.is_empty() {
            let (place_ja, place_en) = if files.is_empty() {
                (
                    format!("lessons/{module}/ に ja.md も en.md もありません"),
                    format!("lessons/{module}/ has no ja.md or en.md"),
                )
            } else {
                let missing = missing.join(", ");
                (
                    format!("{missing} に見出し `{tag}` がありません"),
                    format!("no heading `{tag}` in {missing}"),
                )
            };
            out.warning(
                q.pos,
                msg(
                    format!(
                        "`{}`: レッスンへのリンク `{module}#{anchor}`: {place_ja}",
                        q.id
                    ),
                    format!("`{}`: lesson link `{module}#{anchor}`: {place_en}", q.id),
                ),
                msg(
                    "そのモジュールのレッスンにある `## 見出し {#anchor}` にリンクします",
                    "link to an existing `## Heading {#anchor}` of that module's lesson",
                ),
            );
        }
    }
    out.finish()
}

/// Scores every strategy with the grader, so a warning means what a learner would get.
pub fn measure(quiz: &Quiz) -> Bias {
    let singles: Vec<&Question> = quiz
        .questions
        .iter()
        .filter(|q| matches!(q.kind, Kind::Single { .. }))
        .collect();
    let extreme_correct = |end: End| {
        [Lang::Ja, Lang::En]
            .into_iter()
            .map(|lang| singles.iter().filter(|q| is_correct(q, lang, end)).count())
            .max()
            .unwrap_or(0)
    };
    let by_length = |end: End| {
        [Lang::Ja, Lang::En]
            .into_iter()
            .filter_map(|lang| score(quiz, |q| length_answer(q, lang, end)))
            .fold(None, |a: Option<f64>, s| Some(a.map_or(s, |a| a.max(s))))
    };
    Bias {
        longest_correct: extreme_correct(End::Longest),
        shortest_correct: extreme_correct(End::Shortest),
        singles: singles.len(),
        longest: by_length(End::Longest),
        shortest: by_length(End::Shortest),
        select_all: score(quiz, |q| match &q.kind {
            Kind::Multi { choices, .. } => Some(Answer::Choices(
                choices.iter().map(|c| c.id.clone()).collect(),
            )),
            _ => None,
        }),
        all_true: score(quiz, |q| {
            matches!(q.kind, Kind::TrueFalse { .. }).then_some(Answer::Bool(true))
        }),
        position_a: score(quiz, |q| match &q.kind {
            Kind::Single { choices } => choices.first().map(|c| Answer::Choice(c.id.clone())),
            _ => None,
        }),
    }
}

/// Points earned over points possible, on the questions `answer` has an answer for.
fn score(quiz: &Quiz, answer: impl Fn(&Question) -> Option<Answer>) -> Option<f64> {
    let (mut got, mut max) = (0.0, 0.0);
    for q in &quiz.questions {
        if let Some(a) = answer(q) {
            got += grade(q, &a).points;
            max += f64::from(q.points);
        }
    }
    (max > 0.0).then(|| got / max)
}

fn len(t: &Text, lang: Lang) -> usize {
    t.get(lang).chars().count()
}

/// Which end of the length scale a test-wise learner bets on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Longest,
    Shortest,
}

impl End {
    /// Whether length `a` is strictly further towards this end than `b`.
    fn beyond(self, a: usize, b: usize) -> bool {
        match self {
            End::Longest => a > b,
            End::Shortest => a < b,
        }
    }

    fn word(self) -> (&'static str, &'static str) {
        match self {
            End::Longest => ("最も長い", "longest"),
            End::Shortest => ("最も短い", "shortest"),
        }
    }
}

/// Whether the correct choice of a single question is strictly the longest (or shortest).
fn is_correct(q: &Question, lang: Lang, end: End) -> bool {
    let Kind::Single { choices } = &q.kind else {
        return false;
    };
    let Some(right) = choices.iter().find(|c| c.correct) else {
        return false;
    };
    let n = len(&right.text, lang);
    choices
        .iter()
        .all(|c| c.correct || end.beyond(n, len(&c.text, lang)))
}

fn length_answer(q: &Question, lang: Lang, end: End) -> Option<Answer> {
    match &q.kind {
        Kind::Single { choices } => {
            let mut best: Option<&Choice> = None;
            for c in choices {
                if best.is_none_or(|b| end.beyond(len(&c.text, lang), len(&b.text, lang))) {
                    best = Some(c);
                }
            }
            best.map(|c| Answer::Choice(c.id.clone()))
        }
        Kind::Multi { choices, .. } if !choices.is_empty() => {
            let total: usize = choices.iter().map(|c| len(&c.text, lang)).sum();
            let picked = choices
                .iter()
                .filter(|c| {
                    let scaled = len(&c.text, lang) * choices.len();
                    scaled == total || end.beyond(scaled, total)
                })
                .map(|c| c.id.clone())
                .collect();
            Some(Answer::Choices(picked))
        }
        _ => None,
    }
}

fn pct(share: f64) -> String {
    format!("{:.0} %", share * 100.0)
}

fn warn_longest(out: &mut Collector<'_>, quiz: &Quiz, bias: &Bias) {
    for (end, count, hint) in [
        (
            End::Longest,
            bias.longest_correct,
            msg(
                "3 分の 1 までに抑えます。正解を短くするか、誤答にも同じくらい詳しく書きます",
                "keep it to a third at most: shorten the right answer or give the distractors the same detail",
            ),
        ),
        (
            End::Shortest,
            bias.shortest_correct,
            msg(
                "3 分の 1 までに抑えます。いつも簡潔なほうが正解でも、答えがわかってしまいます",
                "keep it to a third at most: a right answer that is always the terse one gives itself away too",
            ),
        ),
    ] {
        if bias.singles < 3 || count * 3 <= bias.singles {
            continue;
        }
        let ids: Vec<&str> = quiz
            .questions
            .iter()
            .filter(|q| is_correct(q, Lang::Ja, end) || is_correct(q, Lang::En, end))
            .map(|q| q.id.as_str())
            .collect();
        let at = first_pos(quiz, |q| ids.contains(&q.id.as_str()));
        out.warning(
            at,
            msg(
                format!(
                    "単一選択 {} 問のうち {count} 問で、正解が{}選択肢です (ja か en: {})",
                    bias.singles,
                    end.word().0,
                    ids.join(", ")
                ),
                format!(
                    "the correct choice is the {} in {count} of {} single questions (ja or en: {})",
                    end.word().1,
                    bias.singles,
                    ids.join(", ")
                ),
            ),
            hint,
        );
    }
}

fn warn_positions(out: &mut Collector<'_>, quiz: &Quiz) {
    let mut counts: Vec<(usize, Vec<&str>)> = Vec::new();
    for q in &quiz.questions {
        if let Kind::Single { choices } = &q.kind
            && let Some(i) = choices.iter().position(|c| c.correct)
        {
            if counts.len() <= i {
                counts.resize(i + 1, (0, Vec::new()));
            }
            counts[i].0 += 1;
            counts[i].1.push(&q.id);
        }
    }
    let n: usize = counts.iter().map(|c| c.0).sum();
    let limit = (n * 2 / 5).max(2);
    if n < 3 {
        return;
    }
    for (i, (count, ids)) in counts.iter().enumerate() {
        if *count > limit {
            let letter = char::from(b'a' + (i as u8).min(25));
            let at = first_pos(quiz, |q| ids.contains(&q.id.as_str()));
            out.warning(
                at,
                msg(
                    format!(
                        "単一選択 {n} 問のうち {count} 問で、正解が {} 番目 ({letter}) にあります",
                        i + 1
                    ),
                    format!(
                        "the correct choice is at position {} ({letter}) in {count} of {n} single questions",
                        i + 1
                    ),
                ),
                msg(
                    "正解の位置をばらけさせます",
                    "spread the right answers over the positions",
                ),
            );
        }
    }
}

fn warn_true_false(out: &mut Collector<'_>, quiz: &Quiz) {
    let answers: Vec<(bool, &Question)> = quiz
        .questions
        .iter()
        .filter_map(|q| match q.kind {
            Kind::TrueFalse { answer, .. } => Some((answer, q)),
            _ => None,
        })
        .collect();
    let n = answers.len();
    let trues = answers.iter().filter(|(a, _)| *a).count();
    let (major, count) = if trues * 2 >= n {
        (true, trues)
    } else {
        (false, n - trues)
    };
    if n >= 3 && count * 3 > n * 2 {
        let at = answers
            .iter()
            .find(|(a, _)| *a == major)
            .map_or(Pos::default(), |(_, q)| q.pos);
        out.warning(
            at,
            msg(
                format!("正誤問題 {n} 問のうち {count} 問の答えが {major} です"),
                format!("{count} of {n} true-false questions are {major}"),
            ),
            msg(
                "いつも同じ側に答えても得にならないよう、true と false の答えを釣り合わせます",
                "balance true and false answers so always answering one way does not pay",
            ),
        );
    }
}

fn warn_strategies(out: &mut Collector<'_>, quiz: &Quiz, bias: &Bias) {
    let checks = [
        (
            bias.longest,
            (
                "いつも最も長い選択肢を選ぶ",
                "always choosing the longest option",
            ),
            ("単一選択と複数選択", "single and multi"),
        ),
        (
            bias.shortest,
            (
                "いつも最も短い選択肢を選ぶ",
                "always choosing the shortest option",
            ),
            ("単一選択と複数選択", "single and multi"),
        ),
        (
            bias.select_all,
            ("すべての選択肢を選ぶ", "selecting every option"),
            ("複数選択", "multi"),
        ),
    ];
    for (share, strategy, kinds) in checks {
        if let Some(s) = share
            && s > MAX_STRATEGY_SCORE
        {
            let at = first_pos(quiz, |q| {
                matches!(q.kind, Kind::Multi { .. })
                    || (kinds.1 != "multi" && matches!(q.kind, Kind::Single { .. }))
            });
            out.warning(
                at,
                msg(
                    format!(
                        "{}だけで、このクイズの{}問題の得点の {} が取れます",
                        strategy.0,
                        kinds.0,
                        pct(s)
                    ),
                    format!(
                        "{} scores {} of the points of this quiz's {} questions",
                        strategy.1,
                        pct(s),
                        kinds.1
                    ),
                ),
                msg(
                    format!(
                        "{} 以下に抑えます。どこから来ているかは他の警告を見てください",
                        pct(MAX_STRATEGY_SCORE)
                    ),
                    format!(
                        "keep it at or below {}: see the other warnings for where it comes from",
                        pct(MAX_STRATEGY_SCORE)
                    ),
                ),
            );
        }
    }
}

fn warn_most_correct(out: &mut Collector<'_>, q: &Question) {
    if let Kind::Multi { choices, .. } = &q.kind {
        let right = choices.iter().filter(|c| c.correct).count();
        if right * 2 > choices.len() {
            out.warning(
                q.pos,
                msg(
                    format!(
                        "`{}`: 選択肢 {} 個のうち {right} 個が正解なので、すべて選ぶと得をします",
                        q.id,
                        choices.len()
                    ),
                    format!(
                        "`{}`: {right} of {} options are correct, so selecting everything pays",
                        q.id,
                        choices.len()
                    ),
                ),
                msg(
                    "正解は選択肢の半分までにします (もっともらしい誤答を足します)",
                    "make at most half of the options correct (add plausible wrong ones)",
                ),
            );
        }
    }
}

/// The accepted answers of a question, as text a hint must not contain.
fn answers(q: &Question) -> Vec<String> {
    let texts = |choices: &[Choice]| -> Vec<String> {
        choices
            .iter()
            .filter(|c| c.correct)
            .flat_map(|c| [c.text.ja.clone(), c.text.en.clone()])
            .flatten()
            .collect()
    };
    match &q.kind {
        Kind::Single { choices } | Kind::Multi { choices, .. } => texts(choices),
        Kind::Short { accept, .. } => accept.clone(),
        _ => Vec::new(),
    }
}

/// Compared without case, width, spaces or separators: "Update-Request" is "updaterequest".
fn squash(s: &str) -> String {
    normalise(s)
        .chars()
        .filter(|c| !c.is_whitespace() && !matches!(c, '-' | '_' | '・'))
        .collect()
}

fn warn_hints(out: &mut Collector<'_>, q: &Question) {
    let wanted: Vec<String> = answers(q)
        .iter()
        .map(|a| squash(a))
        .filter(|a| a.chars().count() >= 3)
        .collect();
    for (i, hint) in q.hints.iter().enumerate() {
        let text = [hint.ja.as_deref(), hint.en.as_deref()]
            .into_iter()
            .flatten()
            .map(squash)
            .collect::<Vec<_>>();
        let numeric = match q.kind {
            Kind::Numeric { answer, .. } => [hint.ja.as_deref(), hint.en.as_deref()]
                .into_iter()
                .flatten()
                .any(|h| names_number(h, answer)),
            _ => false,
        };
        if numeric || wanted.iter().any(|a| text.iter().any(|t| t.contains(a))) {
            let at = q.hint_pos.get(i).copied().unwrap_or(q.pos);
            out.warning(
                at,
                msg(
                    format!("`{}` のヒント {} に答えが含まれています", q.id, i + 1),
                    format!("hint {} of `{}` contains the answer", i + 1, q.id),
                ),
                msg(
                    "答えそのものではなく、考え方へ導きます",
                    "point the learner towards the reasoning, not at the answer",
                ),
            );
        }
    }
}

/// Whether `text` has `n` as a number of its own (not part of a longer one).
fn names_number(text: &str, n: f64) -> bool {
    normalise(text)
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|w| w.trim_matches('.').parse::<f64>().ok())
        .any(|x| (x - n).abs() < 1e-9)
}

fn first_pos(quiz: &Quiz, pick: impl Fn(&Question) -> bool) -> Pos {
    quiz.questions
        .iter()
        .find(|q| pick(q))
        .or(quiz.questions.first())
        .map_or(Pos::default(), |q| q.pos)
}

#[cfg(test)]
mod tests {
    use super::super::{Document, load_str};
    use super::*;

    fn load(name: &str, src: &str) -> (Bias, Vec<Diagnostic>) {
        let path = Path::new(name);
        match load_str(path, src) {
            Ok(Document::Quiz(q)) => lint(path, src, &q),
            other => panic!("{other:?}"),
        }
    }

    const BIASED: &str = include_str!("../../tests/data/lint/biased.yaml");
    const BALANCED: &str = include_str!("../../tests/data/lint/balanced.yaml");

    #[test]
    fn a_biased_quiz_gets_every_warning_at_its_place() {
        let (_, warnings) = load("biased.yaml", BIASED);
        let got: Vec<String> = warnings
            .iter()
            .map(|d| format!("{}:{} {}", d.pos.line, d.pos.col, d.message))
            .collect();
        let want = [
            "8:5 the correct choice is the longest in 3 of 3 single questions (ja or en: s1, s2, s3)",
            "8:5 the correct choice is at position 1 (a) in 3 of 3 single questions",
            "8:5 always choosing the longest option scores",
            "11:13 hint 1 of `s1` contains the answer",
            "33:5 selecting every option scores 67 %",
            "33:5 `m1`: 3 of 4 options are correct",
            "43:5 3 of 3 true-false questions are false",
            "62:13 hint 1 of `sh` contains the answer",
        ];
        for w in want {
            assert!(got.iter().any(|g| g.starts_with(w)), "{w} not in {got:#?}");
        }
        assert_eq!(got.len(), want.len(), "{got:#?}");
        assert!(
            warnings
                .iter()
                .all(|d| d.severity == crate::diag::Severity::Warning)
        );
        // Each warning and its hint in Japanese too, for an author reading Japanese.
        for d in &warnings {
            let ja = d.ja.as_deref().expect("a Japanese wording");
            let japanese = |s: &str| s.chars().any(|c| ('\u{3040}'..='\u{30ff}').contains(&c));
            assert!(japanese(&ja.message), "{ja:?}");
            assert!(ja.hint.as_deref().is_some_and(japanese), "{ja:?}");
        }
    }

    #[test]
    fn a_balanced_quiz_gets_no_warning() {
        let (bias, warnings) = load("balanced.yaml", BALANCED);
        assert!(warnings.is_empty(), "{warnings:#?}");
        assert_eq!(bias.longest_correct, 0);
        assert_eq!(bias.shortest_correct, 0);
        assert_eq!(bias.select_all, Some(0.0));
    }

    #[test]
    fn overcorrecting_to_the_shortest_answer_is_a_bias_too() {
        let single = |id: &str| {
            format!(
                "  - id: {id}\n    type: single\n    prompt: P\n    explanation: E\n    choices:\n      - {{id: a, text: a long wrong option, }}\n      - {{id: b, text: right, correct: true}}\n      - {{id: c, text: another long wrong one}}\n"
            )
        };
        let src = format!(
            "apiVersion: kca.dev/v1alpha1\nkind: Quiz\nmetadata: {{id: terse, title: T}}\npassMark: 50\nquestions:\n{}{}{}",
            single("s1"),
            single("s2"),
            single("s3")
        );
        let (bias, warnings) = load("terse.yaml", &src);
        assert_eq!(bias.shortest_correct, 3);
        assert_eq!(bias.shortest, Some(1.0));
        let got: Vec<&str> = warnings.iter().map(|d| d.message.as_str()).collect();
        assert!(
            got.iter()
                .any(|m| m.starts_with("the correct choice is the shortest in 3 of 3")),
            "{got:?}"
        );
        assert!(
            got.iter()
                .any(|m| m.starts_with("always choosing the shortest option scores 100 %")),
            "{got:?}"
        );
    }

    #[test]
    fn strategies_are_scored_by_the_grader() {
        let (bias, _) = load("biased.yaml", BIASED);
        assert_eq!(bias.singles, 3);
        assert_eq!(bias.position_a, Some(1.0));
        assert_eq!(bias.all_true, Some(0.0));
        // Multi with partial credit: 3 right picks, 1 wrong, over 3 → 2/3.
        let s = bias.select_all.unwrap();
        assert!((s - 2.0 / 3.0).abs() < 1e-9, "{s}");
    }

    #[test]
    fn a_lesson_link_to_a_missing_heading_is_pointed_at() {
        let dir = tempfile::tempdir().unwrap();
        let lessons = dir.path().join("lessons");
        std::fs::create_dir_all(lessons.join("module-0")).unwrap();
        std::fs::write(
            lessons.join("module-0/ja.md"),
            "## 診断 {#diagnosis}\n## 古い {#old}\n",
        )
        .unwrap();
        std::fs::write(
            lessons.join("module-0/en.md"),
            "## Diagnosis {#diagnosis}\n",
        )
        .unwrap();
        let src = "apiVersion: kca.dev/v1alpha1\nkind: Quiz\nmetadata: {id: l, title: T}\npassMark: 50\nquestions:\n  - {id: ok, type: true-false, answer: true, prompt: P, explanation: E, lesson: \"module-0#diagnosis\"}\n  - {id: half, type: true-false, answer: false, prompt: P, explanation: E, lesson: \"module-0#old\"}\n  - {id: gone, type: true-false, answer: true, prompt: P, explanation: E, lesson: \"module-9#x\"}\n";
        let path = Path::new("l.yaml");
        let Ok(Document::Quiz(q)) = load_str(path, src) else {
            panic!("quiz does not load")
        };
        let got: Vec<String> = lesson_links(path, src, &q, &lessons)
            .iter()
            .map(|d| format!("{}:{} {}", d.pos.line, d.pos.col, d.message))
            .collect();
        assert_eq!(
            got,
            vec![
                "7:5 `half`: lesson link `module-0#old`: no heading `{#old}` in lessons/module-0/en.md"
                    .to_string(),
                "8:5 `gone`: lesson link `module-9#x`: lessons/module-9/ has no ja.md or en.md"
                    .to_string(),
            ]
        );
        // No lessons folder: nothing to check against, nothing said.
        assert!(lesson_links(path, src, &q, &dir.path().join("none")).is_empty());
    }

    #[test]
    fn a_number_inside_a_longer_one_is_not_the_answer() {
        assert!(names_number("上限は30秒です", 30.0));
        assert!(!names_number("上限は300秒です", 30.0));
        assert!(!names_number("1〜30秒", 10.0));
        assert!(names_number("default 10 s", 10.0));
    }
}

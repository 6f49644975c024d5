//! Where an object differs from what a check expects (`Diff`, `Change`): the data a
//! tree match returns, and how it is said. Part of [`super`]; builds text, never prints.

use super::*;

/// A value as a detail shows it: `short` text, `None` for nothing.
pub(super) fn val(s: &Option<String>, lang: Lang) -> String {
    match (s, lang) {
        (Some(v), _) => v.clone(),
        (None, Lang::Ja) => "なし".into(),
        (None, Lang::En) => "nothing".into(),
    }
}

/// Where and how an object differs from what a check expects (`tree::partial_match`).
/// `at` is a dotted path (`(root)` for the whole object); values are `tree::short` text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Diff {
    ShouldBeAbsent {
        at: String,
        found: Option<String>,
    },
    NotMapping {
        at: String,
        found: Option<String>,
    },
    Missing {
        at: String,
    },
    NotList {
        at: String,
        found: Option<String>,
    },
    EmptyList {
        at: String,
        like: String,
    },
    NoItem {
        at: String,
        index: usize,
        item: String,
    },
    Differs {
        at: String,
        got: Option<String>,
        want: String,
    },
    /// The expected tree's operator is malformed (a content problem the lint reports).
    Operator {
        at: String,
        problem: String,
    },
    NoRegexMatch {
        at: String,
        got: String,
        re: String,
    },
    NotText {
        at: String,
        re: String,
        found: Option<String>,
    },
    NoneOf {
        at: String,
        count: usize,
        first: Option<Box<Diff>>,
    },
    OutOfOrder {
        at: String,
        index: usize,
        item: String,
        before: String,
    },
    UnknownOperator {
        at: String,
        op: String,
    },
    /// No document at all to compare with.
    NoDocument {
        want: String,
    },
}

impl Diff {
    pub fn say(&self, s: Say) -> String {
        let l = s.lang;
        let shown = |ja: &str, en: &str, w: &str| {
            if s.reveal {
                s.t(format!("{ja}{w}"), format!("{en}{w}"))
            } else {
                String::new()
            }
        };
        match self {
            Diff::ShouldBeAbsent { at, found } => s.t(
                format!("`{at}` はないはずですが、{} があります", val(found, l)),
                format!("`{at}` should be absent, found {}", val(found, l)),
            ),
            Diff::NotMapping { at, found } => s.t(
                format!("`{at}` はマッピングのはずですが、{} です", val(found, l)),
                format!("`{at}` should be a mapping, found {}", val(found, l)),
            ),
            Diff::Missing { at } => {
                s.t(format!("`{at}` がありません"), format!("`{at}` is missing"))
            }
            Diff::NotList { at, found } => s.t(
                format!("`{at}` はリストのはずですが、{} です", val(found, l)),
                format!("`{at}` should be a list, found {}", val(found, l)),
            ),
            Diff::EmptyList { at, like } => {
                let w = shown("。期待する項目の例: ", "; expected an item like ", like);
                s.t(format!("`{at}` が空です{w}"), format!("`{at}` is empty{w}"))
            }
            Diff::NoItem { at, index, item } => {
                let w = shown(" ", " ", &format!("({item})"));
                s.t(
                    format!("`{at}` に期待する項目 {index} に合うものがありません{w}"),
                    format!("`{at}` has no item matching expected item {index}{w}"),
                )
            }
            Diff::Differs { at, got, want } => {
                if s.reveal {
                    s.t(
                        format!("`{at}` は {} ですが、期待は {want} です", val(got, l)),
                        format!("`{at}` is {}, expected {want}", val(got, l)),
                    )
                } else {
                    s.t(
                        format!("`{at}` は {} で、期待する値ではありません", val(got, l)),
                        format!("`{at}` is {}, not the expected value", val(got, l)),
                    )
                }
            }
            Diff::Operator { at, problem } => s.t(
                format!("`{at}`: ラボの期待の書き方に問題があります: {problem}"),
                format!("`{at}`: {problem}"),
            ),
            Diff::NoRegexMatch { at, got, re } if s.reveal => s.t(
                format!("`{at}` は {got} で、/{re}/ に合いません"),
                format!("`{at}` is {got}, which does not match /{re}/"),
            ),
            Diff::NoRegexMatch { at, got, .. } => s.t(
                format!("`{at}` は {got} で、期待する形になっていません"),
                format!("`{at}` is {got}, which does not have the expected form"),
            ),
            Diff::NotText { at, re, found } if s.reveal => s.t(
                format!(
                    "`{at}` は /{re}/ に合う文字列のはずですが、{} です",
                    val(found, l)
                ),
                format!(
                    "`{at}` should be text matching /{re}/, found {}",
                    val(found, l)
                ),
            ),
            Diff::NotText { at, found, .. } => s.t(
                format!("`{at}` は文字列のはずですが、{} です", val(found, l)),
                format!("`{at}` should be text, found {}", val(found, l)),
            ),
            Diff::NoneOf { at, count, first } => {
                let f = first.as_ref().map(|d| d.say(s)).unwrap_or_default();
                s.t(
                    format!("`{at}` は {count} 個の候補のどれにも合いません (最初: {f})"),
                    format!("`{at}` matches none of {count} alternatives (first: {f})"),
                )
            }
            Diff::OutOfOrder {
                at,
                index,
                item,
                before,
            } => {
                let prev = index - 1;
                let w = shown(" ", " ", &format!("({item} / {before})"));
                s.t(
                    format!(
                        "`{at}`: 期待する項目 {index} が項目 {prev} より前にあります。この順番でなければなりません{w}"
                    ),
                    format!(
                        "`{at}`: expected item {index} comes before expected item {prev}; they must be in that order{w}"
                    ),
                )
            }
            Diff::UnknownOperator { at, op } => s.t(
                format!("`{at}`: 不明な演算子 `{op}` (ラボの問題です)"),
                format!("`{at}`: unknown operator `{op}`"),
            ),
            Diff::NoDocument { want } => {
                let w = shown(": ", " ", want);
                s.t(
                    format!("比べる文書がありません{w}"),
                    format!("no document to compare with{w}"),
                )
            }
        }
    }
}

impl std::fmt::Display for Diff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.say(Say::FULL_EN))
    }
}

/// One way an admitted object differs from the probe as sent (`check::changes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A label or annotation (`map`) added or changed.
    Set {
        map: String,
        key: String,
        value: String,
    },
    Removed {
        map: String,
        key: String,
    },
    /// A named list (initContainers…) the probe did not have.
    ListAdded {
        at: String,
    },
    Gained {
        at: String,
        name: String,
    },
    Lost {
        at: String,
        name: String,
    },
    Value(Diff),
}

impl Change {
    pub(super) fn say(&self, s: Say) -> String {
        let m = |map: &str| match (s.lang, map) {
            (Lang::Ja, "labels") => "ラベル",
            (Lang::Ja, _) => "アノテーション",
            (Lang::En, "labels") => "labels",
            (Lang::En, _) => "annotations",
        };
        match self {
            Change::Set { map, key, value } => s.t(
                format!("{} `{key}` が {value} になりました", m(map)),
                format!("{} `{key}` is {value}", m(map)),
            ),
            Change::Removed { map, key } => s.t(
                format!("{} `{key}` が消えました", m(map)),
                format!("{} `{key}` was removed", m(map)),
            ),
            Change::ListAdded { at } => s.t(
                format!("`{at}` が加わりました"),
                format!("`{at}` was added"),
            ),
            Change::Gained { at, name } => s.t(
                format!("`{at}` に `{name}` が加わりました"),
                format!("`{at}` gained `{name}`"),
            ),
            Change::Lost { at, name } => s.t(
                format!("`{at}` から `{name}` が消えました"),
                format!("`{at}` lost `{name}`"),
            ),
            Change::Value(d) => d.say(s),
        }
    }
}

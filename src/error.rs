//! The library's error type: typed where a caller branches or a hint helps; each keeps
//! its cause (`source`) so the printer in `ui` can show `caused by:` for every link.

use std::fmt;

use crate::diag::Diagnostic;
use crate::exit::Exit;
use crate::settings::Lang;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A cause kept below a message.
pub type Source = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A line of an error in both of the learner's languages; the printer says the one the
/// learner reads. Text that is already one language's (said with `tr`, or data such as a
/// path or a tool's output) is the same in both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Msg {
    pub ja: String,
    pub en: String,
}

impl Msg {
    /// The line in `lang`.
    pub fn get(&self, lang: Lang) -> &str {
        match lang {
            Lang::Ja => &self.ja,
            Lang::En => &self.en,
        }
    }
}

/// A line in Japanese and in English (`ja` first, as `ui::tr` takes them).
pub fn msg(ja: impl Into<String>, en: impl Into<String>) -> Msg {
    Msg {
        ja: ja.into(),
        en: en.into(),
    }
}

/// A policy message of the course written `Japanese / English` (the labs' graders and
/// starter policies): the learner's half. Any other message is data, shown whole. The
/// English half may hold data in other scripts only where the Japanese does too, so the
/// halves are told apart by the Japanese half having kana or kanji and the English none.
pub fn one_language(lang: Lang, message: &str) -> &str {
    match halves(message) {
        Some((ja, _)) if lang == Lang::Ja => ja,
        Some((_, en)) => en,
        None => message,
    }
}

/// The `(Japanese, English)` halves of a course message written `Japanese / English`
/// (see [`one_language`]), trimmed; `None` for any other message.
pub fn halves(message: &str) -> Option<(&str, &str)> {
    let mut parts = message.split(" / ");
    match (parts.next(), parts.next(), parts.next()) {
        (Some(ja), Some(en), None) if has_kana_or_kanji(ja) && !has_kana_or_kanji(en) => {
            Some((ja.trim(), en.trim()))
        }
        _ => None,
    }
}

fn has_kana_or_kanji(s: &str) -> bool {
    s.chars()
        .any(|c| matches!(c, '\u{3040}'..='\u{30ff}' | '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}'))
}

impl From<String> for Msg {
    fn from(s: String) -> Self {
        Msg {
            ja: s.clone(),
            en: s,
        }
    }
}

impl From<&str> for Msg {
    fn from(s: &str) -> Self {
        s.to_string().into()
    }
}

impl From<&String> for Msg {
    fn from(s: &String) -> Self {
        s.clone().into()
    }
}

impl From<std::borrow::Cow<'_, str>> for Msg {
    fn from(s: std::borrow::Cow<'_, str>) -> Self {
        s.into_owned().into()
    }
}

/// English: logs, `to_string` and tests read this; the printer picks by language.
impl fmt::Display for Msg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.en)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Content (lab, quiz) or input files with problems; every problem is listed.
    #[error("{} problem(s) in content", crate::diag::count(.0))]
    Content(Vec<Diagnostic>),
    /// The user asked for something that cannot be: an unknown quiz id, a bad flag mix.
    #[error("{message}")]
    Usage {
        message: Msg,
        hint: Option<Msg>,
        #[source]
        source: Option<Source>,
    },
    /// The environment is broken: cluster unreachable, a tool missing, a timeout.
    #[error("{message}")]
    Environment {
        message: Msg,
        hint: Option<Msg>,
        #[source]
        source: Option<Source>,
    },
    /// Anything else, with its chain of causes.
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

impl Error {
    pub fn usage(message: impl Into<Msg>, hint: impl Into<Msg>) -> Self {
        Error::Usage {
            message: message.into(),
            hint: Some(hint.into()),
            source: None,
        }
    }

    pub fn environment(message: impl Into<Msg>, hint: impl Into<Msg>) -> Self {
        Error::Environment {
            message: message.into(),
            hint: Some(hint.into()),
            source: None,
        }
    }

    /// A usage error that keeps what caused it.
    pub fn usage_with(
        message: impl Into<Msg>,
        hint: impl Into<Msg>,
        source: impl Into<anyhow::Error>,
    ) -> Self {
        Error::Usage {
            message: message.into(),
            hint: Some(hint.into()),
            source: Some(source.into().into()),
        }
    }

    /// An environment error that keeps what caused it.
    pub fn environment_with(
        message: impl Into<Msg>,
        hint: impl Into<Msg>,
        source: impl Into<anyhow::Error>,
    ) -> Self {
        Error::Environment {
            message: message.into(),
            hint: Some(hint.into()),
            source: Some(source.into().into()),
        }
    }

    /// The hint, in English.
    pub fn hint(&self) -> Option<&str> {
        self.hint_in(Lang::En)
    }

    /// The hint in the learner's language.
    pub fn hint_in(&self, lang: Lang) -> Option<&str> {
        match self {
            Error::Usage { hint, .. } | Error::Environment { hint, .. } => {
                hint.as_ref().map(|h| h.get(lang))
            }
            Error::Content(_) => Some(crate::ui::tr(
                lang,
                "上の問題を直してから、もう一度コマンドを実行します",
                "fix the problems above, then run the command again",
            )),
            Error::Other(_) => None,
        }
    }

    /// The message in the learner's language (`to_string` is the English one).
    pub fn message_in(&self, lang: Lang) -> String {
        match (self, lang) {
            (Error::Usage { message, .. } | Error::Environment { message, .. }, _) => {
                message.get(lang).to_string()
            }
            (Error::Content(d), Lang::Ja) => {
                format!("ファイルに {} 件の問題があります", crate::diag::count(d))
            }
            _ => self.to_string(),
        }
    }

    pub fn exit(&self) -> Exit {
        match self {
            Error::Content(_) | Error::Usage { .. } => Exit::Usage,
            Error::Environment { .. } => Exit::Environment,
            Error::Other(_) => Exit::Environment,
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Other(e.into())
    }
}

#[cfg(test)]
mod one_language_tests {
    use super::*;

    #[test]
    fn a_course_message_says_the_reader_s_half_and_anything_else_stays_whole() {
        let m = "イメージはダイジェスト(image@sha256:...)で固定してください / pin images by digest (image@sha256:...)";
        assert_eq!(
            one_language(Lang::Ja, m),
            "イメージはダイジェスト(image@sha256:...)で固定してください"
        );
        assert_eq!(
            one_language(Lang::En, m),
            "pin images by digest (image@sha256:...)"
        );
        // Data in another script in the English half (a name, a symbol) still splits.
        let m = "手順 wW がありません / the steps wW → 100 % lack a pause";
        assert_eq!(
            one_language(Lang::En, m),
            "the steps wW → 100 % lack a pause"
        );
        for whole in ["a / b", "ja だけ / 日本語", "x / y / z", "Kyverno: denied"] {
            assert_eq!(one_language(Lang::Ja, whole), whole);
        }
    }
}

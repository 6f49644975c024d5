//! Settings resolved once at start-up from flags and the environment: colour, output
//! format, language, verbosity, and where content and state live. Nothing else in kca
//! reads environment variables for these.

use std::path::{Path, PathBuf};

/// The learner-facing language. The course's own language is Japanese.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    #[default]
    Ja,
    En,
}

/// What a command writes on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OutputFormat {
    #[default]
    Text,
    Json,
    /// JUnit XML, for CI systems (commands that grade).
    Junit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub color: bool,
    pub output: OutputFormat,
    pub lang: Lang,
    /// -1 quiet, 0 normal, 1+ verbose.
    pub verbosity: i8,
    /// Where `labs/`, `quizzes/`, `fixtures/` and `kind-config/` are.
    pub content_dir: PathBuf,
    /// `$XDG_STATE_HOME/kca`: progress, archives.
    pub state_dir: PathBuf,
    /// The learner's home directory.
    pub home: PathBuf,
}

/// The parts of the environment settings depend on, so tests can supply their own.
#[derive(Debug, Clone, Default)]
pub struct Env {
    pub no_color: bool,
    pub force_color: bool,
    pub lang: Option<String>,
    pub home: Option<PathBuf>,
    pub xdg_state_home: Option<PathBuf>,
    pub content_dir: Option<PathBuf>,
    pub cwd: Option<PathBuf>,
    /// `COLUMNS`, when set: the width to wrap to if stdout is not a terminal.
    pub columns: Option<usize>,
    /// `PAGER`, for long text on a terminal (`kca lesson`).
    pub pager: Option<String>,
}

impl Env {
    pub fn from_process() -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Env {
            no_color: var("NO_COLOR").is_some(),
            force_color: var("FORCE_COLOR").is_some(),
            // `KCA_LANG`: the language of the kca that started this one (a lab's grader).
            lang: var("KCA_LANG")
                .or_else(|| var("LC_ALL"))
                .or_else(|| var("LC_MESSAGES"))
                .or_else(|| var("LANG")),
            home: var("HOME").map(PathBuf::from),
            xdg_state_home: var("XDG_STATE_HOME").map(PathBuf::from),
            content_dir: var("KCA_CONTENT_DIR").map(PathBuf::from),
            cwd: std::env::current_dir().ok(),
            columns: var("COLUMNS").and_then(|c| c.parse().ok()),
            pager: var("PAGER"),
        }
    }
}

/// Colour: `--color` beats `NO_COLOR`, which beats `FORCE_COLOR`, which beats "is stdout a terminal".
pub fn resolve_color(choice: ColorChoice, env: &Env, is_terminal: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto if env.no_color => false,
        ColorChoice::Auto if env.force_color => true,
        ColorChoice::Auto => is_terminal,
    }
}

/// Language: `--lang`, else the locale (`en*` gives English), else Japanese.
pub fn resolve_lang(flag: Option<Lang>, env: &Env) -> Lang {
    flag.unwrap_or_else(|| match env.lang.as_deref() {
        Some(l) if l.starts_with("en") => Lang::En,
        _ => Lang::Ja,
    })
}

static CHOSEN: std::sync::OnceLock<Lang> = std::sync::OnceLock::new();

/// Records the language this run speaks (once, when settings are resolved), so the
/// programs it starts speak it too (`KCA_LANG`, see [`chosen`]).
pub fn announce(lang: Lang) -> Lang {
    let _ = CHOSEN.set(lang);
    lang
}

/// The language this run speaks, for `KCA_LANG` of the programs it starts.
pub fn chosen() -> Lang {
    CHOSEN.get().copied().unwrap_or_default()
}

impl Lang {
    /// `ja` or `en`.
    pub fn code(self) -> &'static str {
        match self {
            Lang::Ja => "ja",
            Lang::En => "en",
        }
    }
}

/// Columns to wrap text to: the terminal's width, else `COLUMNS`, else 80.
pub fn resolve_width(terminal: Option<usize>, env: &Env) -> usize {
    terminal.or(env.columns).filter(|w| *w > 0).unwrap_or(80)
}

pub fn state_dir(env: &Env) -> PathBuf {
    match (&env.xdg_state_home, &env.home) {
        (Some(x), _) if x.is_absolute() => x.join("kca"),
        (_, Some(h)) => h.join(".local/state/kca"),
        _ => PathBuf::from(".kca-state"),
    }
}

/// Content: `--content-dir`/`KCA_CONTENT_DIR`, else the nearest folder upwards from the
/// working directory that has `labs/` and `quizzes/`, else the source tree kca was built from.
pub fn content_dir(flag: Option<&Path>, env: &Env) -> PathBuf {
    if let Some(dir) = flag.or(env.content_dir.as_deref()) {
        return dir.to_path_buf();
    }
    if let Some(cwd) = &env.cwd {
        for dir in cwd.ancestors() {
            if dir.join("labs").is_dir() && dir.join("quizzes").is_dir() {
                return dir.to_path_buf();
            }
        }
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_precedence() {
        let plain = Env::default();
        let no = Env {
            no_color: true,
            force_color: true,
            ..Env::default()
        };
        let force = Env {
            force_color: true,
            ..Env::default()
        };
        let table = [
            (ColorChoice::Always, &no, false, true),
            (ColorChoice::Never, &force, true, false),
            (ColorChoice::Auto, &no, true, false),
            (ColorChoice::Auto, &force, false, true),
            (ColorChoice::Auto, &plain, true, true),
            (ColorChoice::Auto, &plain, false, false),
        ];
        for (choice, env, tty, want) in table {
            assert_eq!(
                resolve_color(choice, env, tty),
                want,
                "{choice:?} {env:?} {tty}"
            );
        }
    }

    #[test]
    fn language_from_flag_then_locale_then_japanese() {
        let en = Env {
            lang: Some("en_US.UTF-8".into()),
            ..Env::default()
        };
        assert_eq!(resolve_lang(None, &en), Lang::En);
        assert_eq!(resolve_lang(Some(Lang::Ja), &en), Lang::Ja);
        assert_eq!(resolve_lang(None, &Env::default()), Lang::Ja);
        let c = Env {
            lang: Some("C.UTF-8".into()),
            ..Env::default()
        };
        assert_eq!(resolve_lang(None, &c), Lang::Ja);
    }
}

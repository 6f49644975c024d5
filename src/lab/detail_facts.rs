//! The data details carry about how a check looked (the probe, who asked, what a program
//! ran, where a verdict came from, an access question, a wrong answer). Part of [`super`];
//! builds text, never prints.

use super::*;

/// The probe an admission or generated check sends: "the probe Pod ns/name".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub kind: String,
    /// `ns/name` or `name` (a `generateName` ends in `…`).
    pub name: String,
}

impl Probe {
    pub(super) fn say(&self, s: Say) -> String {
        s.t(
            format!("プローブ {} {}", self.kind, self.name),
            format!("the probe {} {}", self.kind, self.name),
        )
    }
}

/// Who an admission check expects to deny.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum By {
    Rule { policy: String, rule: String },
    Policy { policy: String },
    Vap { policy: String },
}

impl By {
    pub(super) fn say(&self, s: Say) -> String {
        match self {
            By::Rule { policy, rule } => s.t(
                format!("ポリシー `{policy}` のルール `{rule}`"),
                format!("policy `{policy}` rule `{rule}`"),
            ),
            By::Policy { policy } => {
                s.t(format!("ポリシー `{policy}`"), format!("policy `{policy}`"))
            }
            By::Vap { policy } => format!("ValidatingAdmissionPolicy `{policy}`"),
        }
    }
}

/// A `command` check's program as run: its command line, its last lines of output and
/// what of its output was cut (shown only with `-v`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Ran {
    pub command: String,
    pub output: String,
    pub cut: String,
}

impl Ran {
    /// The program and the file name of its first argument ("bash values.sh").
    pub(super) fn name(&self) -> String {
        let mut words = self.command.split_whitespace();
        let first = words.next().unwrap_or_default();
        let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_string();
        match words.next() {
            Some(a) if a.contains('/') || a.contains('.') => format!("{} {}", base(first), base(a)),
            _ => base(first),
        }
    }
    pub(super) fn tail(&self, s: Say) -> String {
        if !s.verbose {
            return String::new();
        }
        let mut t = s.t(
            format!("\nコマンド: {}", self.command),
            format!("\ncommand: {}", self.command),
        );
        if !self.output.trim().is_empty() {
            t.push_str(&s.t(
                format!("\n最後の出力:\n{}", self.output),
                format!("\nlast output:\n{}", self.output),
            ));
        }
        if !self.cut.is_empty() {
            t.push_str(&format!("\n({})", self.cut));
        }
        t
    }
}

/// An RBAC rule that reaches a subject beyond what a task allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Excess {
    pub object: String,
    pub index: usize,
    pub rule: String,
    pub who: String,
    pub what: String,
    pub scope: String,
    pub via: String,
}

/// Where an `observed` check's facts come from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Source {
    #[default]
    Unknown,
    UpdateRequest {
        of: Probe,
    },
    NoUpdateRequest {
        of: Probe,
    },
    UpdateRequestInCluster {
        name: String,
    },
    Denial {
        of: Probe,
    },
    NoDenial {
        of: Probe,
    },
    /// The offline engine could not tell (its reason stays data).
    Offline {
        of: Box<Source>,
        reason: String,
    },
    /// Live: the situation is gone from the cluster; kca's model of the learner's files.
    Modelled {
        of: Box<Source>,
    },
}

impl Source {
    pub fn say(&self, s: Say) -> String {
        match self {
            Source::Unknown => s.t("(不明)".into(), "(unknown)".into()),
            Source::UpdateRequest { of } => s.t(
                format!("{} {} の UpdateRequest", of.kind, of.name),
                format!("the UpdateRequest for {} {}", of.kind, of.name),
            ),
            Source::NoUpdateRequest { of } => s.t(
                format!(
                    "{} {} の UpdateRequest (なし: どの generate ルールも一致しませんでした)",
                    of.kind, of.name
                ),
                format!(
                    "the UpdateRequest for {} {} (none: no generate rule matched it)",
                    of.kind, of.name
                ),
            ),
            Source::UpdateRequestInCluster { name } => s.t(
                format!("クラスターの UpdateRequest {name}"),
                format!("UpdateRequest {name} in the cluster"),
            ),
            Source::Denial { of } => s.t(
                format!("{} の拒否", of.say(s)),
                format!("the denial of {}", of.say(s)),
            ),
            Source::NoDenial { of } => s.t(
                format!("{} (受け入れられました: 拒否はありません)", of.say(s)),
                format!("{} (it was admitted: nothing was denied)", of.say(s)),
            ),
            Source::Offline { of, reason } => s.t(
                format!("{} (オフラインでは分かりません: {reason})", of.say(s)),
                format!("{} (offline: {reason})", of.say(s)),
            ),
            Source::Modelled { of } => s.t(
                format!(
                    "{} (クラスターにはもうありません: あなたのファイルから kca が再現したもの)",
                    of.say(s)
                ),
                format!(
                    "{} (the cluster no longer shows it: kca's model of your files)",
                    of.say(s)
                ),
            ),
        }
    }
}

/// What a `can-i` check asks: a verb on a resource (a subresource, a group, a name, a
/// namespace when given).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Access {
    pub verb: String,
    pub resource: String,
    pub group: String,
    pub name: String,
    pub namespace: String,
}

impl Access {
    pub(super) fn say(&self, s: Say) -> String {
        let Access {
            verb,
            resource,
            group,
            name,
            namespace,
        } = self;
        match s.lang {
            Lang::Ja => {
                let mut w = String::new();
                if !namespace.is_empty() {
                    w.push_str(&format!("ネームスペース {namespace} の"));
                }
                w.push_str(&format!(" {resource}"));
                if !group.is_empty() {
                    w.push_str(&format!(" (グループ {group})"));
                }
                if !name.is_empty() {
                    w.push_str(&format!(" `{name}`"));
                }
                format!("{w} を {verb}")
            }
            Lang::En => {
                let mut w = format!("{verb} {resource}");
                if !group.is_empty() {
                    w.push_str(&format!(" (group {group})"));
                }
                if !name.is_empty() {
                    w.push_str(&format!(" named {name}"));
                }
                if !namespace.is_empty() {
                    w.push_str(&format!(" in namespace {namespace}"));
                }
                w
            }
        }
    }
}

/// One recorded answer of an `observed` check that is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wrong {
    Empty { key: String },
    NotWhatHappened { key: String, said: String },
}

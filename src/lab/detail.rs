//! What a check found, typed: every grader (`check`, `offline`, `live`, `observe`,
//! `privilege`, `grade`) returns a [`Detail`] with its data, never a sentence; `report`
//! renders it in the learner's language (`Detail::say`). What an engine or a tool said (a
//! Kyverno message, an API server's denial, a program's output) stays data under a
//! localised line. Expected shapes and regular expressions are shown only once the learner
//! asked for them (`reveal`: a hint of the task seen, or `-v`); a program's raw output
//! only with `-v`. Builds text; never prints.

use crate::settings::Lang;

/// How a detail is said: the language, whether the expected shape may be shown, and
/// whether raw tool output is wanted (`-v`).
#[derive(Debug, Clone, Copy)]
pub struct Say {
    pub lang: Lang,
    pub reveal: bool,
    pub verbose: bool,
}

impl Say {
    /// English with everything shown: the JSON and JUnit reports, logs, tests.
    pub const FULL_EN: Say = Say {
        lang: Lang::En,
        reveal: true,
        verbose: true,
    };
    fn t(&self, ja: String, en: String) -> String {
        match self.lang {
            Lang::Ja => ja,
            Lang::En => en,
        }
    }
}

/// A value as a detail shows it: `short` text, `None` for nothing.
fn val(s: &Option<String>, lang: Lang) -> String {
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
    ShouldBeAbsent { at: String, found: Option<String> },
    NotMapping { at: String, found: Option<String> },
    Missing { at: String },
    NotList { at: String, found: Option<String> },
    EmptyList { at: String, like: String },
    NoItem { at: String, index: usize, item: String },
    Differs { at: String, got: Option<String>, want: String },
    /// The expected tree's operator is malformed (a content problem the lint reports).
    Operator { at: String, problem: String },
    NoRegexMatch { at: String, got: String, re: String },
    NotText { at: String, re: String, found: Option<String> },
    NoneOf { at: String, count: usize, first: Option<Box<Diff>> },
    OutOfOrder { at: String, index: usize, item: String, before: String },
    UnknownOperator { at: String, op: String },
    /// No document at all to compare with.
    NoDocument { want: String },
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
            Diff::Missing { at } => s.t(
                format!("`{at}` がありません"),
                format!("`{at}` is missing"),
            ),
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
                format!("`{at}` は /{re}/ に合う文字列のはずですが、{} です", val(found, l)),
                format!("`{at}` should be text matching /{re}/, found {}", val(found, l)),
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
    Set { map: String, key: String, value: String },
    Removed { map: String, key: String },
    /// A named list (initContainers…) the probe did not have.
    ListAdded { at: String },
    Gained { at: String, name: String },
    Lost { at: String, name: String },
    Value(Diff),
}

impl Change {
    fn say(&self, s: Say) -> String {
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

/// The probe an admission or generated check sends: "the probe Pod ns/name".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub kind: String,
    /// `ns/name` or `name` (a `generateName` ends in `…`).
    pub name: String,
}

impl Probe {
    fn say(&self, s: Say) -> String {
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
    fn say(&self, s: Say) -> String {
        match self {
            By::Rule { policy, rule } => s.t(
                format!("ポリシー `{policy}` のルール `{rule}`"),
                format!("policy `{policy}` rule `{rule}`"),
            ),
            By::Policy { policy } => s.t(
                format!("ポリシー `{policy}`"),
                format!("policy `{policy}`"),
            ),
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
    fn name(&self) -> String {
        let mut words = self.command.split_whitespace();
        let first = words.next().unwrap_or_default();
        let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_string();
        match words.next() {
            Some(a) if a.contains('/') || a.contains('.') => format!("{} {}", base(first), base(a)),
            _ => base(first),
        }
    }
    fn tail(&self, s: Say) -> String {
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
    UpdateRequest { of: Probe },
    NoUpdateRequest { of: Probe },
    UpdateRequestInCluster { name: String },
    Denial { of: Probe },
    NoDenial { of: Probe },
    /// The offline engine could not tell (its reason stays data).
    Offline { of: Box<Source>, reason: String },
    /// Live: the situation is gone from the cluster; kca's model of the learner's files.
    Modelled { of: Box<Source> },
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
                format!("{} {} の UpdateRequest (なし: どの generate ルールも一致しませんでした)", of.kind, of.name),
                format!("the UpdateRequest for {} {} (none: no generate rule matched it)", of.kind, of.name),
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
                format!("{} (クラスターにはもうありません: あなたのファイルから kca が再現したもの)", of.say(s)),
                format!("{} (the cluster no longer shows it: kca's model of your files)", of.say(s)),
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
    fn say(&self, s: Say) -> String {
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

/// What a check found. Variants carry data only; [`Detail::say`] makes the sentence.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Detail {
    /// Nothing to say (a verdict with no detail).
    #[default]
    None,
    // --- workspace files
    FileExists { path: String },
    FileMissing { path: String },
    FileUnreadable { error: String },
    /// A YAML syntax error: `at` is `line:col`.
    NotYaml { path: String, at: String, message: String },
    NoKind { path: String, kind: String, found: Vec<String> },
    FileHolds { path: String },
    FileDiffers { path: String, diff: Diff },
    FileValid { path: String, documents: usize },
    /// What the check wants is in another workspace file, not the one it reads.
    Elsewhere { path: String, found_in: String },
    NoDocumentNamed { path: String, kind: String, name: String },
    FileEmpty { path: String },
    NoAnswers { path: String },
    /// A failing verdict while workspace files cannot be read (`file:line:col: message`):
    /// the check cannot be judged until they are fixed (an `error`, shown once).
    Blocked { problems: Vec<String> },
    // --- command checks
    CannotRender { what: String, reason: String },
    EmptyCommand,
    CannotRun { program: String, error: String },
    TimedOut { ran: Ran, seconds: u64 },
    CommandCannotJudge { ran: Ran, why: String },
    /// `want`: `Some(code)`, or `None` for any non-zero code; `got` `None` is a signal.
    ExitCode { ran: Ran, got: Option<i32>, want: Option<i32> },
    OutputMismatch { ran: Ran, stderr: bool, re: String },
    CommandPassed { ran: Ran, got: Option<i32> },
    // --- can-i
    CanI {
        user: String,
        access: Access,
        allowed: bool,
        reason: String,
        expected: Option<bool>,
    },
    // --- admission
    LostWhatSent { what: Probe, lost: String },
    Admitted { what: Probe },
    OutsideUnchanged { what: Probe },
    OutsideChanged { what: Probe, changes: Vec<Change> },
    OutsideLeftAlone { what: Probe },
    AdmittedAsExpected { what: Probe },
    OutsideDiffers { what: Probe, diff: Diff },
    AdmittedBut { what: Probe, diff: Diff },
    OutsideDenied { what: Probe, message: String },
    Denied { what: Probe, message: String },
    AdmittedShouldDeny { what: Probe },
    DeniedBy { what: Probe, by: By },
    DeniedNotBy { what: Probe, by: By, message: String },
    /// A failing admission check, with the seed that varied its probes.
    Varied { seed: u64, inner: Box<Detail> },
    // --- generated
    NotGenerated { what: String },
    Generated { what: String },
    GeneratedAsExpected { what: String },
    GeneratedBut { what: String, diff: Diff },
    SyncGone { what: String, source: String },
    SyncFollowed { what: String, source: String },
    SyncNotFollowed { what: String, source: String, diff: Diff },
    SyncSourceAbsent { what: String, source: String },
    SyncSourceNotInCluster { source: String },
    NotLabOwned { what: String },
    OutsideGenerated { what: Probe, want: String },
    OutsideRuleMatched { what: Probe, policy: Option<String> },
    OutsideUpdateRequest { what: Probe },
    OutsideNothing { what: Probe },
    RanDifferent,
    NoRuleMatched,
    UpdateRequestFailed { message: String, user: String, resource: String, can: Option<bool> },
    UpdateRequestFailedUnserved { message: String, kind: String, api_version: String },
    UpdateRequestSkipped { message: String },
    UpdateRequestCompleted { message: String },
    UpdateRequestStuck { name: String, state: String, controller: String },
    UpdateRequestsUnlisted { error: String },
    /// A generated check waited `seconds` and `why` explains.
    Waited { seconds: u64, why: Box<Detail> },
    NotDeleted { what: String, error: String },
    NotRestored { what: String, error: String },
    Interrupted { what: String, deleted: bool },
    // --- resources and policies
    InstalledOnly { what: String },
    NotApplied { what: String, denial: String },
    NotInManifests { what: String },
    NotInCluster { what: String },
    Absent { what: String },
    ExistsShouldNot { what: String },
    Exists { what: String },
    AsExpected { what: String },
    ResourceDiffers { what: String, diff: Diff },
    StatusOffline { what: String },
    PolicyNotInCluster { name: String },
    PolicyMissing { what: String },
    PolicyNotReady { what: String, why: String },
    PolicyNoStatus { what: String, seconds: u64 },
    PolicyPending { what: String, seconds: u64 },
    // --- accepted (policy creation)
    NoIdentity { what: String },
    Accepted { what: String, warnings: Vec<String> },
    AcceptedShouldReject { what: String },
    Rejected { what: String, message: String },
    RejectedOtherReason { what: String, re: String, message: String },
    RejectedAsExpected { what: String, message: String },
    // --- observed
    NothingToCompare { source: Source, path: String },
    Agrees { path: String, source: Source },
    Disagrees { path: String, source: Source, wrong: Vec<Wrong> },
    // --- least privilege
    BeyondAllowed { excess: Vec<Excess> },
    LacksNeeded { who: String, verb: String, resource: String, group: String, namespace: String },
    PrivilegeOk { who: String, from: Vec<String> },
    // --- the environment
    /// The offline engine cannot evaluate this (its reason stays data).
    OfflineCannot { reason: String },
    NotServed { apis: Vec<String> },
    /// Kyverno's controllers (`down`: "name ready/wanted") or webhooks (validating,
    /// mutating) are not there to judge an admission or generated check.
    KyvernoNotReady { down: Vec<String>, webhooks: Option<(usize, usize)> },
    KyvernoUnknown { error: String },
    /// The cluster or kca's access to it (the error's text stays data).
    Cluster { error: String },
    NoThread { error: String },
    Crashed { error: Option<String> },
    /// The lab's own files (fixtures, setups) cannot be loaded.
    Content { error: String },
    /// A check handed to the wrong evaluator (a bug in kca).
    Internal { what: &'static str },
    /// Two details, the second adding to the first.
    Both(Box<Detail>, Box<Detail>),
}

impl Detail {
    /// This detail followed by `more`.
    pub fn then(self, more: Detail) -> Detail {
        match self {
            Detail::None => more,
            d => Detail::Both(Box::new(d), Box::new(more)),
        }
    }

    /// The workspace-file problems this detail refers to (shown once by the report).
    pub fn file_problems(&self) -> Vec<String> {
        match self {
            Detail::Blocked { problems } => problems.clone(),
            Detail::NotYaml { path, at, message } => vec![format!("{path}:{at}: {message}")],
            Detail::Both(a, b) => [a.file_problems(), b.file_problems()].concat(),
            Detail::Varied { inner, .. } | Detail::Waited { why: inner, .. } => {
                inner.file_problems()
            }
            _ => Vec::new(),
        }
    }

    /// Whether it is about where a file is or whether it parses, not what it holds.
    pub fn is_location(&self) -> bool {
        matches!(self, Detail::Elsewhere { .. } | Detail::NotYaml { .. })
    }

    /// Whether this is the pointer to a workspace file problem (not the environment's).
    pub fn is_blocked(&self) -> bool {
        match self {
            Detail::Blocked { .. } => true,
            Detail::Both(a, b) => a.is_blocked() || b.is_blocked(),
            _ => false,
        }
    }

    /// Whether saying it differs with `reveal` (there is an expected shape to hide).
    pub fn hides(&self, s: Say) -> bool {
        let shown = |r| self.say(Say { reveal: r, ..s });
        !s.reveal && shown(false) != shown(true)
    }

    /// The sentence(s), in `s.lang`.
    pub fn say(&self, s: Say) -> String {
        use Detail as D;
        let t = |ja: String, en: String| s.t(ja, en);
        match self {
            D::None => String::new(),
            D::FileExists { path } => t(format!("`{path}` があります"), format!("`{path}` exists")),
            D::FileMissing { path } => t(
                format!("ワークスペースに `{path}` がありません"),
                format!("`{path}` does not exist in the workspace"),
            ),
            D::FileUnreadable { error } => t(
                format!("ワークスペースのファイルを読めません: {error}"),
                error.clone(),
            ),
            D::NotYaml { path, at, .. } => t(
                format!("`{path}` の {at} に YAML の構文エラーがあります (上の「ファイルの問題」)"),
                format!("`{path}` has a YAML syntax error at {at} (see \"file problems\" above)"),
            ),
            D::NoKind { path, kind, found } => {
                let f = if found.is_empty() {
                    t("種類なし".into(), "no kinds".into())
                } else {
                    found.join(", ")
                };
                t(
                    format!("`{path}` に `{kind}` がありません (あったもの: {f})"),
                    format!("`{path}` holds no `{kind}` (found: {f})"),
                )
            }
            D::FileHolds { path } => t(
                format!("`{path}` は求められた内容です"),
                format!("`{path}` holds what was asked"),
            ),
            D::FileDiffers { path, diff } if path.is_empty() => diff.say(s),
            D::FileDiffers { path, diff } => format!("`{path}`: {}", diff.say(s)),
            D::FileValid { path, documents } => t(
                format!("`{path}` は正しい YAML です (文書 {documents} 個)"),
                format!("`{path}` is valid ({documents} document(s))"),
            ),
            D::Elsewhere { path, found_in } => t(
                format!(
                    "求められた内容は `{found_in}` にありますが、このチェックが読むのは `{path}` です。ファイルを移してください:\nmv {found_in} {path}"
                ),
                format!(
                    "what is asked for is in `{found_in}`, but this check reads `{path}`; move the file there:\nmv {found_in} {path}"
                ),
            ),
            D::NoDocumentNamed { path, kind, name } => t(
                format!("`{path}` に {kind} `{name}` がありません"),
                format!("`{path}` holds no {kind} `{name}`"),
            ),
            D::FileEmpty { path } => t(format!("`{path}` は空です"), format!("`{path}` is empty")),
            D::NoAnswers { path } => t(
                format!("`{path}` に答えのマッピングがありません"),
                format!("`{path}` holds no mapping of answers"),
            ),
            D::Blocked { problems } => {
                let files: Vec<String> = problems
                    .iter()
                    .map(|p| p.split(':').next().unwrap_or(p).to_string())
                    .fold(Vec::new(), |mut v, f| {
                        if !v.contains(&f) {
                            v.push(f);
                        }
                        v
                    });
                let f = files.join(", ");
                t(
                    format!("判定できません: 上の「ファイルの問題」({f}) を先に直してください"),
                    format!("not judged: fix the file problem above ({f}) first"),
                )
            }
            D::CannotRender { what, reason } => t(
                format!("ラボのコマンドの {what} を展開できません: {reason}"),
                format!("cannot render {what}: {reason}"),
            ),
            D::EmptyCommand => t("ラボのコマンドが空です".into(), "the command is empty".into()),
            D::CannotRun { program, error } => t(
                format!("`{program}` を実行できません: {error} (インストールされて PATH にありますか?)"),
                format!("cannot run `{program}`: {error} (is it installed and on PATH?)"),
            ),
            D::TimedOut { ran, seconds } => {
                let n = ran.name();
                t(
                    format!("`{n}` が {seconds} 秒以内に終わりませんでした"),
                    format!("`{n}` did not finish within {seconds}s"),
                ) + &ran.tail(s)
            }
            D::CommandCannotJudge { ran, why } => {
                let n = ran.name();
                t(
                    format!("`{n}` はここでは判定できません: {why}"),
                    format!("`{n}` cannot judge here: {why}"),
                ) + &ran.tail(s)
            }
            D::ExitCode { ran, got, want } => {
                let n = ran.name();
                let got_s = match got {
                    Some(c) => t(format!("終了コード {c}"), format!("exit code {c}")),
                    None => t("シグナル".into(), "a signal".into()),
                };
                let want_s = match want {
                    Some(c) => t(format!("終了コード {c}"), format!("exit code {c}")),
                    None => t("0 以外の終了コード".into(), "a non-zero exit code".into()),
                };
                let more = if s.verbose {
                    ran.tail(s)
                } else {
                    t(
                        "。出力は `-v` で表示します".into(),
                        "; `-v` shows its output".into(),
                    )
                };
                t(
                    format!("`{n}` が{got_s} で終わりました (期待: {want_s})"),
                    format!("`{n}` ended with {got_s}, expected {want_s}"),
                ) + &more
            }
            D::OutputMismatch { ran, stderr, re } => {
                let n = ran.name();
                let more = if s.verbose {
                    ran.tail(s)
                } else {
                    t(
                        "。出力は `-v` で表示します".into(),
                        "; `-v` shows its output".into(),
                    )
                };
                let (sj, se) = match stderr {
                    false => ("出力", "output"),
                    true => ("エラー出力", "error output"),
                };
                (match s.reveal {
                    true => t(
                        format!("`{n}` の{sj}が /{re}/ に合いません"),
                        format!("`{n}`: its {se} does not match /{re}/"),
                    ),
                    false => t(
                        format!("`{n}` の{sj}が期待する形になっていません"),
                        format!("`{n}`: its {se} does not have the expected form"),
                    ),
                }) + &more
            }
            D::CommandPassed { ran, got } => {
                let n = ran.name();
                let c = got.map_or_else(|| "-".to_string(), |c| c.to_string());
                t(
                    format!("`{n}` が終了コード {c} で終わりました"),
                    format!("`{n}` ended with exit code {c}"),
                ) + &ran.tail(s)
            }
            D::CanI {
                user,
                access,
                allowed,
                reason,
                expected,
            } => {
                let yes = |b: bool| match (s.lang, b) {
                    (Lang::Ja, true) => "はい",
                    (Lang::Ja, false) => "いいえ",
                    (Lang::En, true) => "yes",
                    (Lang::En, false) => "no",
                };
                let r = if reason.is_empty() {
                    String::new()
                } else {
                    format!(" ({reason})")
                };
                let e = match expected {
                    Some(b) => t(format!("。期待: {}", yes(*b)), format!("; expected {}", yes(*b))),
                    None => String::new(),
                };
                t(
                    format!("{user} は{} できるか? {}{r}{e}", access.say(s), yes(*allowed)),
                    format!("can {user} {}? {}{r}{e}", access.say(s), yes(*allowed)),
                )
            }
            D::LostWhatSent { what, lost } => t(
                format!(
                    "{} は受け入れられましたが、送ったときの {lost} が失われました (mutate はオブジェクトの他のラベルとアノテーションを残さなければなりません)",
                    what.say(s)
                ),
                format!(
                    "{} was admitted, but lost what it was sent with: {lost} (a mutation must keep the object's other labels and annotations)",
                    what.say(s)
                ),
            ),
            D::Admitted { what } => t(
                format!("{} は受け入れられました", what.say(s)),
                format!("{} was admitted", what.say(s)),
            ),
            D::OutsideUnchanged { what } => t(
                format!("{} は対象外で、変更されずに通りました", what.say(s)),
                format!("{} lies outside the scope and came through unchanged", what.say(s)),
            ),
            D::OutsideChanged { what, changes } => {
                let c: Vec<String> = changes.iter().map(|c| c.say(s)).collect();
                t(
                    format!(
                        "{} はタスクの対象外なのに変更されました: {} (ルールが広すぎます)",
                        what.say(s),
                        c.join("、")
                    ),
                    format!(
                        "{} lies outside the scope the task asks for, but was changed: {} (the rule matches more than it should)",
                        what.say(s),
                        c.join("; ")
                    ),
                )
            }
            D::OutsideLeftAlone { what } => t(
                format!("{} は対象外で、手を付けられませんでした", what.say(s)),
                format!("{} lies outside the scope and was left alone", what.say(s)),
            ),
            D::AdmittedAsExpected { what } => t(
                format!("{} は期待どおりに受け入れられました", what.say(s)),
                format!("{} was admitted as expected", what.say(s)),
            ),
            D::OutsideDiffers { what, diff } => t(
                format!(
                    "{} はタスクの対象外なのに、{} (ルールが広すぎます)",
                    what.say(s),
                    diff.say(s)
                ),
                format!(
                    "{} lies outside the scope the task asks for, but {} (the rule matches more than it should)",
                    what.say(s),
                    diff.say(s)
                ),
            ),
            D::AdmittedBut { what, diff } => t(
                format!("{} は受け入れられましたが、{}", what.say(s), diff.say(s)),
                format!("{} was admitted, but {}", what.say(s), diff.say(s)),
            ),
            D::OutsideDenied { what, message } => t(
                format!(
                    "{} はタスクの対象外なのに拒否されました (ルールが広すぎます)。拒否の理由:\n{message}",
                    what.say(s)
                ),
                format!(
                    "{} lies outside the scope the task asks for, but was denied (the rule matches more than it should): {message}",
                    what.say(s)
                ),
            ),
            D::Denied { what, message } => t(
                format!("{} は拒否されました。拒否の理由:\n{message}", what.say(s)),
                format!("{} was denied: {message}", what.say(s)),
            ),
            D::AdmittedShouldDeny { what } => t(
                format!("{} は受け入れられましたが、拒否されるはずでした", what.say(s)),
                format!("{} was admitted; it should have been denied", what.say(s)),
            ),
            D::DeniedBy { what, by } => t(
                format!("{} は {} に拒否されました", what.say(s), by.say(s)),
                format!("{} was denied by {}", what.say(s), by.say(s)),
            ),
            D::DeniedNotBy { what, by, message } => t(
                format!(
                    "{} は拒否されましたが、{} によるものではありません。拒否の理由:\n{message}",
                    what.say(s),
                    by.say(s)
                ),
                format!(
                    "{} was denied, but not by {}: {message}",
                    what.say(s),
                    by.say(s)
                ),
            ),
            D::Varied { seed, inner } => {
                inner.say(s)
                    + &t(
                        format!(" (プローブはシード {seed} で変えています。`--seed {seed}` で同じ実行を繰り返せます)"),
                        format!(" (probes varied with seed {seed}; `--seed {seed}` repeats this run)"),
                    )
            }
            D::NotGenerated { what } => t(
                format!("{what} は生成されませんでした"),
                format!("{what} was not generated"),
            ),
            D::Generated { what } => t(
                format!("{what} が生成されました"),
                format!("{what} was generated"),
            ),
            D::GeneratedAsExpected { what } => t(
                format!("{what} が期待どおりに生成されました"),
                format!("{what} was generated as expected"),
            ),
            D::GeneratedBut { what, diff } => t(
                format!("{what} は生成されましたが、{}", diff.say(s)),
                format!("{what} was generated, but {}", diff.say(s)),
            ),
            D::SyncGone { what, source } => t(
                format!("{source} を変えたら {what} が消えました"),
                format!("{what} disappeared after {source} changed"),
            ),
            D::SyncFollowed { what, source } => t(
                format!("{what} が生成され、{source} の変更に追従しました"),
                format!("{what} was generated and followed the change of {source}"),
            ),
            D::SyncNotFollowed { what, source, diff } => t(
                format!(
                    "{what} は生成されましたが、{source} の変更に追従しませんでした (`synchronize: true` はありますか?): {}",
                    diff.say(s)
                ),
                format!(
                    "{what} was generated, but did not follow the change of {source} (is `synchronize: true` set?): {}",
                    diff.say(s)
                ),
            ),
            D::SyncSourceAbsent { what, source } => t(
                format!("{what} は生成されましたが、同期元 {source} がオブジェクトの中にありません"),
                format!("{what} was generated, but the sync source {source} is not among the objects"),
            ),
            D::SyncSourceNotInCluster { source } => t(
                format!("同期元 {source} がクラスターにありません。`kca lab reset` でラボのオブジェクトを戻せます"),
                format!("the sync source {source} is not in the cluster; `kca lab reset` restores the lab's objects"),
            ),
            D::NotLabOwned { what } => t(
                format!("{what} にラボのラベルがありません。kca は自分のオブジェクトしか変えません"),
                format!("{what} does not carry the lab's labels; kca changes only its own objects"),
            ),
            D::OutsideGenerated { what, want } => t(
                format!(
                    "{} はタスクの対象外なのに、{want} が生成されました (ルールが広すぎます)",
                    what.say(s)
                ),
                format!(
                    "{} lies outside the scope the task asks for, but {want} was generated for it (the rule matches more than it should)",
                    what.say(s)
                ),
            ),
            D::OutsideRuleMatched { what, policy } => {
                let (pj, pe) = match policy {
                    Some(p) => (format!("`{p}` の"), format!(" of `{p}`")),
                    None => (String::new(), String::new()),
                };
                t(
                    format!(
                        "{} はタスクの対象外なのに、{pj} generate ルールが一致しました (UpdateRequest が作られます)",
                        what.say(s)
                    ),
                    format!(
                        "{} lies outside the scope the task asks for, but a generate rule{pe} matched it (an UpdateRequest would be created for it)",
                        what.say(s)
                    ),
                )
            }
            D::OutsideUpdateRequest { what } => t(
                format!(
                    "{} はタスクの対象外なのに、Kyverno が UpdateRequest を作りました (generate ルールが一致しました)",
                    what.say(s)
                ),
                format!(
                    "{} lies outside the scope the task asks for, but Kyverno made an UpdateRequest for it (a generate rule matched it)",
                    what.say(s)
                ),
            ),
            D::OutsideNothing { what } => t(
                format!("{} は対象外で、何も生成されませんでした", what.say(s)),
                format!("{} lies outside the scope: nothing was generated for it", what.say(s)),
            ),
            D::RanDifferent => t(
                "generate ルールは動きましたが、別のオブジェクトを作りました".into(),
                "the generate rule ran but produced a different object".into(),
            ),
            D::NoRuleMatched => t(
                "トリガーに対する UpdateRequest が作られていません。generate ルールが一致しませんでした (match/exclude と preconditions を確かめてください)".into(),
                "no UpdateRequest was created for the trigger: the generate rule did not match it (check its match/exclude and preconditions)".into(),
            ),
            D::UpdateRequestFailed {
                message,
                user,
                resource,
                can,
            } => {
                let c = match (s.lang, can) {
                    (Lang::Ja, Some(true)) => "はい".to_string(),
                    (Lang::Ja, Some(false)) => "いいえ — (Cluster)Role とバインディングで権限を渡してください".into(),
                    (Lang::Ja, None) => "不明".into(),
                    (Lang::En, Some(true)) => "yes".into(),
                    (Lang::En, Some(false)) => "no — grant it with a (Cluster)Role and binding".into(),
                    (Lang::En, None) => "unknown".into(),
                };
                t(
                    format!("UpdateRequest が失敗しました: {message}\n{user} は {resource} を create できるか? {c}"),
                    format!("the UpdateRequest failed: {message}; can {user} create {resource}? {c}"),
                )
            }
            D::UpdateRequestFailedUnserved {
                message,
                kind,
                api_version,
            } => t(
                format!("UpdateRequest が失敗しました: {message}\nクラスターは {kind} ({api_version}) を提供していません"),
                format!("the UpdateRequest failed: {message}; the cluster does not serve {kind} ({api_version})"),
            ),
            D::UpdateRequestSkipped { message } => t(
                format!("バックグラウンドコントローラーが UpdateRequest をスキップしました: {message}"),
                format!("the background controller skipped the UpdateRequest: {message}"),
            ),
            D::UpdateRequestCompleted { message } => t(
                format!("UpdateRequest は完了しましたが、生成しませんでした: {message}"),
                format!("the UpdateRequest completed without generating it: {message}"),
            ),
            D::UpdateRequestStuck {
                name,
                state,
                controller,
            } => t(
                format!(
                    "トリガーの UpdateRequest {name} はまだ {state} です。Kyverno のバックグラウンドコントローラーが処理していません (`{controller}` は動いていますか? `kca cluster status` を見てください)"
                ),
                format!(
                    "UpdateRequest {name} for the trigger is still {state}: Kyverno's background controller is not processing it (is `{controller}` running? see `kca cluster status`)"
                ),
            ),
            D::UpdateRequestsUnlisted { error } => t(
                format!("UpdateRequest の一覧を取れません: {error}"),
                format!("could not list UpdateRequests: {error}"),
            ),
            D::Waited { seconds, why } => t(
                format!("({seconds} 秒待ちました) {}", why.say(s)),
                format!(" within {seconds}s; {}", why.say(s)),
            ),
            D::NotDeleted { what, error } => t(
                format!("{what} を削除できません: {error}"),
                format!("could not delete {what}: {error}"),
            ),
            D::NotRestored { what, error } => t(
                format!("{what} を元に戻せません: {error}"),
                format!("could not restore {what}: {error}"),
            ),
            D::Interrupted { what, deleted } => match deleted {
                true => t(
                    format!("中断しました。{what} は削除しました"),
                    format!("interrupted; {what} was deleted"),
                ),
                false => t(
                    format!("中断しました。{what} を削除できませんでした (次の実行で片付けます)"),
                    format!("interrupted; {what} could not be deleted (the next run sweeps it)"),
                ),
            },
            D::InstalledOnly { what } => t(
                format!("{what} はラボではなく動いているインストールのものです。オフラインにはこのオブジェクトがないので判定できません"),
                format!("{what} belongs to the running installation, not to the lab; offline has no such object and cannot judge it"),
            ),
            D::NotApplied { what, denial } => t(
                format!("{what} はクラスターにありません。適用すると失敗します:\n{denial}"),
                format!("{what} is not in the cluster: applying it fails with: {denial}"),
            ),
            D::NotInManifests { what } => t(
                format!("{what} はワークスペースのマニフェストの中にありません"),
                format!("{what} is not among the workspace manifests"),
            ),
            D::NotInCluster { what } => t(
                format!("{what} はクラスターにありません"),
                format!("{what} does not exist in the cluster"),
            ),
            D::Absent { what } => t(format!("{what} はありません"), format!("{what} is absent")),
            D::ExistsShouldNot { what } => t(
                format!("{what} がありますが、ないはずです"),
                format!("{what} exists; it should not"),
            ),
            D::Exists { what } => t(format!("{what} があります"), format!("{what} exists")),
            D::AsExpected { what } => t(
                format!("{what} は期待どおりです"),
                format!("{what} matches"),
            ),
            D::ResourceDiffers { what, diff } => format!("{what}: {}", diff.say(s)),
            D::StatusOffline { what } => t(
                format!("{what} は一致しますが、その status はクラスターのコントローラーが書くものです。オフラインでは判定できません"),
                format!("{what} matches, but its status is written by controllers in a cluster; offline cannot judge it"),
            ),
            D::PolicyNotInCluster { name } => t(
                format!("ポリシー `{name}` がクラスターにありません。`kubectl apply -f` で適用してください"),
                format!("policy `{name}` is not in the cluster; apply it with `kubectl apply -f`"),
            ),
            D::PolicyMissing { what } => t(
                format!("{what} がクラスターにありません。`kubectl apply -f` で適用してください"),
                format!("{what} is not in the cluster; apply it with `kubectl apply -f`"),
            ),
            D::PolicyNotReady { what, why } => t(
                format!("{what} が Ready ではありません。Kyverno の理由: {why}"),
                format!("{what} is not Ready; Kyverno says: {why}"),
            ),
            D::PolicyNoStatus { what, seconds } => t(
                format!(
                    "{what} に {seconds} 秒たっても status がありません。Kyverno のコントローラーが見ていません。Kyverno の Pod (`kubectl -n kyverno get pods`、`kca cluster status`) とログを見てください。ポリシー自体の問題ではありません"
                ),
                format!(
                    "{what} has no status after {seconds}s: no Kyverno controller has seen it. Look at Kyverno's pods (`kubectl -n kyverno get pods`, `kca cluster status`) and their logs; the policy itself is not at fault"
                ),
            ),
            D::PolicyPending { what, seconds } => t(
                format!(
                    "{what} が {seconds} 秒以内に Ready にならず、Kyverno は理由を示しませんでした。`kubectl describe` で status を、Kyverno の admission controller のログを見てください"
                ),
                format!(
                    "{what} did not become Ready within {seconds}s and Kyverno gave no reason; see `kubectl describe` for its status and Kyverno's admission controller logs"
                ),
            ),
            D::NoIdentity { what } => t(
                format!("{what} に apiVersion、kind、name のどれかがありません"),
                format!("{what} has no apiVersion, kind or name"),
            ),
            D::Accepted { what, warnings } => {
                let w = if warnings.is_empty() {
                    String::new()
                } else {
                    t(
                        format!(" (警告: {})", warnings.join("; ")),
                        format!(" (warnings: {})", warnings.join("; ")),
                    )
                };
                t(
                    format!("{what} は受け入れられます{w}"),
                    format!("{what} is accepted{w}"),
                )
            }
            D::AcceptedShouldReject { what } => t(
                format!("{what} は受け入れられますが、拒否されるはずです"),
                format!("{what} is accepted; it should be rejected"),
            ),
            D::Rejected { what, message } => t(
                format!("{what} は拒否されます。理由:\n{message}"),
                format!("{what} is rejected: {message}"),
            ),
            D::RejectedOtherReason { what, re, message } => {
                let w = if s.reveal { format!(" (/{re}/)") } else { String::new() };
                t(
                    format!("{what} は拒否されますが、期待する理由ではありません{w}。理由:\n{message}"),
                    format!("{what} is rejected, but not for the expected reason{w}: {message}"),
                )
            }
            D::RejectedAsExpected { what, message } => t(
                format!("{what} は拒否されます。理由:\n{message}"),
                format!("{what} is rejected: {message}"),
            ),
            D::NothingToCompare { source, path } => t(
                format!("{}: `{path}` と比べる出来事が起きていません", source.say(s)),
                format!("{}: nothing happened to compare `{path}` with", source.say(s)),
            ),
            D::Agrees { path, source } => t(
                format!("`{path}` は {} と一致します", source.say(s)),
                format!("`{path}` agrees with {}", source.say(s)),
            ),
            D::Disagrees { path, source, wrong } => {
                let w: Vec<String> = wrong
                    .iter()
                    .map(|w| match w {
                        Wrong::Empty { key } => {
                            t(format!("`{key}` が空です"), format!("`{key}` is empty"))
                        }
                        Wrong::NotWhatHappened { key, said } => t(
                            format!("`{key}: {said}` は起きたことと違います"),
                            format!("`{key}: {said}` is not what happened"),
                        ),
                    })
                    .collect();
                t(
                    format!("`{path}` が {} と一致しません: {}", source.say(s), w.join("、")),
                    format!("`{path}` does not agree with {}: {}", source.say(s), w.join("; ")),
                )
            }
            D::BeyondAllowed { excess } => excess
                .iter()
                .map(|e| {
                    t(
                        format!(
                            "{} rules[{}] ({}) が {} に {} を与えています ({}、{} 経由)。タスクが許す範囲を超えています",
                            e.object, e.index, e.rule, e.who, e.what, e.scope, e.via
                        ),
                        format!(
                            "{} rules[{}] ({}) gives {} {}, {} (via {}), beyond what the task allows",
                            e.object, e.index, e.rule, e.who, e.what, e.scope, e.via
                        ),
                    )
                })
                .collect::<Vec<_>>()
                .join(if s.lang == Lang::Ja { "\n" } else { "; " }),
            D::LacksNeeded {
                who,
                verb,
                resource,
                group,
                namespace,
            } => {
                let gr = if group.is_empty() { "core" } else { group };
                let (wj, we) = if namespace.is_empty() {
                    ("クラスター全体で".to_string(), "cluster-wide".to_string())
                } else {
                    (
                        format!("ネームスペース {namespace} で"),
                        format!("in namespace {namespace}"),
                    )
                };
                t(
                    format!("{who} は{wj} {resource} (グループ {gr}) を {verb} できません。タスクにはこの権限が必要です"),
                    format!("{who} cannot {verb} {resource} (group {gr}) {we}; the task needs it"),
                )
            }
            D::PrivilegeOk { who, from } => {
                let f = if from.is_empty() {
                    t("届くものなし".into(), "none reach it".into())
                } else {
                    from.join(", ")
                };
                t(
                    format!("{who} にはタスクに必要な権限があり、学習者のオブジェクト ({f}) は許された以上のものを与えていません"),
                    format!("{who} has what the task needs, and the learner's objects ({f}) give it nothing beyond what is allowed"),
                )
            }
            D::OfflineCannot { reason } => t(
                format!("オフラインでは判定できません: {reason}"),
                reason.clone(),
            ),
            D::NotServed { apis } => t(
                format!("クラスターが {} を提供していないので、このチェックはここでは判定できません", apis.join(", ")),
                format!("the cluster does not serve {}; this check cannot be judged on it", apis.join(", ")),
            ),
            D::KyvernoNotReady { down, webhooks } => {
                let mut why = Vec::new();
                if !down.is_empty() {
                    why.push(t(
                        format!("準備ができていないもの: {}", down.join(", ")),
                        format!("not ready: {}", down.join(", ")),
                    ));
                }
                if let Some((v, m)) = webhooks {
                    why.push(t(
                        format!("webhook: validating {v} 個、mutating {m} 個"),
                        format!("webhooks: {v} validating, {m} mutating"),
                    ));
                }
                t(
                    format!("このクラスターの Kyverno はこのチェックを判定できません ({})。`kca cluster status` を見てください", why.join("、")),
                    format!("Kyverno cannot judge this check in this cluster ({}); see `kca cluster status`", why.join("; ")),
                )
            }
            D::KyvernoUnknown { error } => t(
                format!("Kyverno の準備ができているか分かりません: {error}"),
                format!("cannot tell whether Kyverno is ready: {error}"),
            ),
            D::Cluster { error } => t(
                format!("クラスターとのやり取りに失敗しました:\n{error}"),
                error.clone(),
            ),
            D::NoThread { error } => t(
                format!("このチェックのスレッドを起動できません ({error})。プロセス数かメモリの上限 (ulimit -u、コンテナーの pids 上限) が低すぎます"),
                format!("kca could not start a thread for this check ({error}); a limit on processes or memory (ulimit -u, a container's pids limit) is too low"),
            ),
            D::Crashed { error } => match error {
                Some(e) => t(
                    format!("チェックが異常終了しました: {e}"),
                    format!("the check crashed: {e}"),
                ),
                None => t("チェックが異常終了しました".into(), "the check crashed".into()),
            },
            D::Content { error } => t(
                format!("ラボのファイルを読めません: {error}"),
                format!("the lab's files cannot be loaded: {error}"),
            ),
            D::Internal { what } => t(
                format!("kca の内部エラー: {what}"),
                format!("internal error: {what}"),
            ),
            D::Both(a, b) => {
                let (x, y) = (a.say(s), b.say(s));
                match (x.is_empty(), y.is_empty()) {
                    (true, _) => y,
                    (_, true) => x,
                    _ if y.starts_with(' ') || y.starts_with('(') => format!("{x}{y}"),
                    _ => t(format!("{x}\n{y}"), format!("{x}; {y}")),
                }
            }
        }
    }

    /// The variant's name, for the JSON report (`detailKind`) and the coverage test.
    pub fn kind(&self) -> &'static str {
        use Detail as D;
        match self {
            D::None => "none",
            D::FileExists { .. } => "fileExists",
            D::FileMissing { .. } => "fileMissing",
            D::FileUnreadable { .. } => "fileUnreadable",
            D::NotYaml { .. } => "notYaml",
            D::NoKind { .. } => "noKind",
            D::FileHolds { .. } => "fileHolds",
            D::FileDiffers { .. } => "fileDiffers",
            D::FileValid { .. } => "fileValid",
            D::Elsewhere { .. } => "elsewhere",
            D::NoDocumentNamed { .. } => "noDocumentNamed",
            D::FileEmpty { .. } => "fileEmpty",
            D::NoAnswers { .. } => "noAnswers",
            D::Blocked { .. } => "blocked",
            D::CannotRender { .. } => "cannotRender",
            D::EmptyCommand => "emptyCommand",
            D::CannotRun { .. } => "cannotRun",
            D::TimedOut { .. } => "timedOut",
            D::CommandCannotJudge { .. } => "commandCannotJudge",
            D::ExitCode { .. } => "exitCode",
            D::OutputMismatch { .. } => "outputMismatch",
            D::CommandPassed { .. } => "commandPassed",
            D::CanI { .. } => "canI",
            D::LostWhatSent { .. } => "lostWhatSent",
            D::Admitted { .. } => "admitted",
            D::OutsideUnchanged { .. } => "outsideUnchanged",
            D::OutsideChanged { .. } => "outsideChanged",
            D::OutsideLeftAlone { .. } => "outsideLeftAlone",
            D::AdmittedAsExpected { .. } => "admittedAsExpected",
            D::OutsideDiffers { .. } => "outsideDiffers",
            D::AdmittedBut { .. } => "admittedBut",
            D::OutsideDenied { .. } => "outsideDenied",
            D::Denied { .. } => "denied",
            D::AdmittedShouldDeny { .. } => "admittedShouldDeny",
            D::DeniedBy { .. } => "deniedBy",
            D::DeniedNotBy { .. } => "deniedNotBy",
            D::Varied { .. } => "varied",
            D::NotGenerated { .. } => "notGenerated",
            D::Generated { .. } => "generated",
            D::GeneratedAsExpected { .. } => "generatedAsExpected",
            D::GeneratedBut { .. } => "generatedBut",
            D::SyncGone { .. } => "syncGone",
            D::SyncFollowed { .. } => "syncFollowed",
            D::SyncNotFollowed { .. } => "syncNotFollowed",
            D::SyncSourceAbsent { .. } => "syncSourceAbsent",
            D::SyncSourceNotInCluster { .. } => "syncSourceNotInCluster",
            D::NotLabOwned { .. } => "notLabOwned",
            D::OutsideGenerated { .. } => "outsideGenerated",
            D::OutsideRuleMatched { .. } => "outsideRuleMatched",
            D::OutsideUpdateRequest { .. } => "outsideUpdateRequest",
            D::OutsideNothing { .. } => "outsideNothing",
            D::RanDifferent => "ranDifferent",
            D::NoRuleMatched => "noRuleMatched",
            D::UpdateRequestFailed { .. } => "updateRequestFailed",
            D::UpdateRequestFailedUnserved { .. } => "updateRequestFailedUnserved",
            D::UpdateRequestSkipped { .. } => "updateRequestSkipped",
            D::UpdateRequestCompleted { .. } => "updateRequestCompleted",
            D::UpdateRequestStuck { .. } => "updateRequestStuck",
            D::UpdateRequestsUnlisted { .. } => "updateRequestsUnlisted",
            D::Waited { .. } => "waited",
            D::NotDeleted { .. } => "notDeleted",
            D::NotRestored { .. } => "notRestored",
            D::Interrupted { .. } => "interrupted",
            D::InstalledOnly { .. } => "installedOnly",
            D::NotApplied { .. } => "notApplied",
            D::NotInManifests { .. } => "notInManifests",
            D::NotInCluster { .. } => "notInCluster",
            D::Absent { .. } => "absent",
            D::ExistsShouldNot { .. } => "existsShouldNot",
            D::Exists { .. } => "exists",
            D::AsExpected { .. } => "asExpected",
            D::ResourceDiffers { .. } => "resourceDiffers",
            D::StatusOffline { .. } => "statusOffline",
            D::PolicyNotInCluster { .. } => "policyNotInCluster",
            D::PolicyMissing { .. } => "policyMissing",
            D::PolicyNotReady { .. } => "policyNotReady",
            D::PolicyNoStatus { .. } => "policyNoStatus",
            D::PolicyPending { .. } => "policyPending",
            D::NoIdentity { .. } => "noIdentity",
            D::Accepted { .. } => "accepted",
            D::AcceptedShouldReject { .. } => "acceptedShouldReject",
            D::Rejected { .. } => "rejected",
            D::RejectedOtherReason { .. } => "rejectedOtherReason",
            D::RejectedAsExpected { .. } => "rejectedAsExpected",
            D::NothingToCompare { .. } => "nothingToCompare",
            D::Agrees { .. } => "agrees",
            D::Disagrees { .. } => "disagrees",
            D::BeyondAllowed { .. } => "beyondAllowed",
            D::LacksNeeded { .. } => "lacksNeeded",
            D::PrivilegeOk { .. } => "privilegeOk",
            D::OfflineCannot { .. } => "offlineCannot",
            D::NotServed { .. } => "notServed",
            D::KyvernoNotReady { .. } => "kyvernoNotReady",
            D::KyvernoUnknown { .. } => "kyvernoUnknown",
            D::Cluster { .. } => "cluster",
            D::NoThread { .. } => "noThread",
            D::Crashed { .. } => "crashed",
            D::Content { .. } => "content",
            D::Internal { .. } => "internal",
            D::Both(..) => "both",
        }
    }
}

/// English with everything shown (logs, `-o json`, tests).
impl std::fmt::Display for Detail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.say(Say::FULL_EN))
    }
}

/// In the JSON report: the English text (the contract since schema 1).
impl serde::Serialize for Detail {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

#[cfg(test)]
#[path = "detail_tests.rs"]
mod tests;

//! What a check found, typed: every grader (`check`, `offline`, `live`, `observe`,
//! `privilege`, `grade`) returns a [`Detail`] with its data, never a sentence; `report`
//! renders it in the learner's language (`Detail::say`). What an engine or a tool said (a
//! Kyverno message, an API server's denial, a program's output) stays data under a
//! localised line. Expected shapes and regular expressions are shown only once the learner
//! asked for them (`reveal`: a hint of the task seen, or `-v`); a program's raw output
//! only with `-v`. Builds text; never prints.

use crate::settings::Lang;

/// Characters of a long source line a file problem shows: with its gutter and indent it
/// fits an 80-column screen.
pub const EXCERPT_CHARS: usize = 64;

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

/// What a check found. Variants carry data only; [`Detail::say`] makes the sentence.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Detail {
    /// Nothing to say (a verdict with no detail).
    #[default]
    None,
    // --- workspace files
    FileExists {
        path: String,
    },
    FileMissing {
        path: String,
    },
    FileUnreadable {
        error: String,
    },
    /// The workspace holds more YAML than one run grades: reading `path` went over at
    /// `at` (`line:col`); every cluster check is an `error`.
    WorkspaceOverBudget {
        path: String,
        at: String,
        message: String,
    },
    /// A YAML syntax error: `at` is `line:col`; `excerpt` the line with a caret under
    /// the column (as [`crate::diag::excerpt`] makes it), shown with the file problem.
    NotYaml {
        path: String,
        at: String,
        message: String,
        excerpt: Vec<String>,
    },
    NoKind {
        path: String,
        kind: String,
        found: Vec<String>,
    },
    FileHolds {
        path: String,
    },
    FileDiffers {
        path: String,
        diff: Diff,
    },
    FileValid {
        path: String,
        documents: usize,
    },
    /// What the check wants is in another workspace file, not the one it reads.
    Elsewhere {
        path: String,
        found_in: String,
    },
    NoDocumentNamed {
        path: String,
        kind: String,
        name: String,
    },
    FileEmpty {
        path: String,
    },
    NoAnswers {
        path: String,
    },
    /// A failing verdict while workspace files cannot be read (`file:line:col: message`):
    /// the check cannot be judged until they are fixed (an `error`, shown once).
    Blocked {
        problems: Vec<String>,
    },
    // --- command checks
    CannotRender {
        what: String,
        reason: String,
    },
    EmptyCommand,
    CannotRun {
        program: String,
        error: String,
    },
    TimedOut {
        ran: Ran,
        seconds: u64,
    },
    CommandCannotJudge {
        ran: Ran,
        why: String,
    },
    /// `want`: `Some(code)`, or `None` for any non-zero code; `got` `None` is a signal.
    ExitCode {
        ran: Ran,
        got: Option<i32>,
        want: Option<i32>,
    },
    OutputMismatch {
        ran: Ran,
        stderr: bool,
        re: String,
    },
    CommandPassed {
        ran: Ran,
        got: Option<i32>,
    },
    // --- can-i
    CanI {
        user: String,
        access: Access,
        allowed: bool,
        reason: String,
        expected: Option<bool>,
    },
    // --- admission
    LostWhatSent {
        what: Probe,
        lost: String,
    },
    Admitted {
        what: Probe,
    },
    OutsideUnchanged {
        what: Probe,
    },
    OutsideChanged {
        what: Probe,
        changes: Vec<Change>,
    },
    OutsideLeftAlone {
        what: Probe,
    },
    AdmittedAsExpected {
        what: Probe,
    },
    OutsideDiffers {
        what: Probe,
        diff: Diff,
    },
    AdmittedBut {
        what: Probe,
        diff: Diff,
    },
    OutsideDenied {
        what: Probe,
        message: String,
    },
    Denied {
        what: Probe,
        message: String,
    },
    AdmittedShouldDeny {
        what: Probe,
    },
    DeniedBy {
        what: Probe,
        by: By,
    },
    DeniedNotBy {
        what: Probe,
        by: By,
        message: String,
    },
    /// A guard (a check that holds before the learner acts) that passed but earns
    /// nothing yet: `behind` are its task's checks that do not pass (none judged: empty).
    GuardWaits {
        inner: Box<Detail>,
        behind: Vec<String>,
    },
    /// A failing admission check, with the seed that varied its probes.
    Varied {
        seed: u64,
        inner: Box<Detail>,
    },
    // --- generated
    NotGenerated {
        what: String,
    },
    Generated {
        what: String,
    },
    GeneratedAsExpected {
        what: String,
    },
    GeneratedBut {
        what: String,
        diff: Diff,
    },
    SyncGone {
        what: String,
        source: String,
    },
    SyncFollowed {
        what: String,
        source: String,
    },
    SyncNotFollowed {
        what: String,
        source: String,
        diff: Diff,
    },
    SyncSourceAbsent {
        what: String,
        source: String,
    },
    SyncSourceNotInCluster {
        source: String,
    },
    NotLabOwned {
        what: String,
    },
    OutsideGenerated {
        what: Probe,
        want: String,
    },
    OutsideRuleMatched {
        what: Probe,
        policy: Option<String>,
    },
    OutsideUpdateRequest {
        what: Probe,
    },
    OutsideNothing {
        what: Probe,
    },
    RanDifferent,
    NoRuleMatched,
    UpdateRequestFailed {
        message: String,
        user: String,
        resource: String,
        can: Option<bool>,
    },
    UpdateRequestFailedUnserved {
        message: String,
        kind: String,
        api_version: String,
    },
    UpdateRequestSkipped {
        message: String,
    },
    UpdateRequestCompleted {
        message: String,
    },
    UpdateRequestStuck {
        name: String,
        state: String,
        controller: String,
    },
    UpdateRequestsUnlisted {
        error: String,
    },
    /// A generated check waited `seconds` and `why` explains.
    Waited {
        seconds: u64,
        why: Box<Detail>,
    },
    NotDeleted {
        what: String,
        error: String,
    },
    NotRestored {
        what: String,
        error: String,
    },
    Interrupted {
        what: String,
        deleted: bool,
    },
    // --- resources and policies
    InstalledOnly {
        what: String,
    },
    NotApplied {
        what: String,
        denial: String,
    },
    NotInManifests {
        what: String,
    },
    NotInCluster {
        what: String,
    },
    Absent {
        what: String,
    },
    ExistsShouldNot {
        what: String,
    },
    Exists {
        what: String,
    },
    AsExpected {
        what: String,
    },
    ResourceDiffers {
        what: String,
        diff: Diff,
    },
    StatusOffline {
        what: String,
    },
    PolicyNotInCluster {
        name: String,
    },
    PolicyMissing {
        what: String,
    },
    PolicyNotReady {
        what: String,
        why: String,
    },
    PolicyNoStatus {
        what: String,
        seconds: u64,
    },
    PolicyPending {
        what: String,
        seconds: u64,
    },
    // --- accepted (policy creation)
    NoIdentity {
        what: String,
    },
    Accepted {
        what: String,
        warnings: Vec<String>,
    },
    AcceptedShouldReject {
        what: String,
    },
    Rejected {
        what: String,
        message: String,
    },
    RejectedOtherReason {
        what: String,
        re: String,
        message: String,
    },
    RejectedAsExpected {
        what: String,
        message: String,
    },
    // --- observed
    NothingToCompare {
        source: Source,
        path: String,
    },
    Agrees {
        path: String,
        source: Source,
    },
    Disagrees {
        path: String,
        source: Source,
        wrong: Vec<Wrong>,
    },
    // --- least privilege
    BeyondAllowed {
        excess: Vec<Excess>,
    },
    LacksNeeded {
        who: String,
        verb: String,
        resource: String,
        group: String,
        namespace: String,
    },
    PrivilegeOk {
        who: String,
        from: Vec<String>,
    },
    // --- the environment
    /// The offline engine cannot evaluate this (its reason stays data).
    OfflineCannot {
        reason: String,
    },
    NotServed {
        apis: Vec<String>,
    },
    /// Kyverno's controllers (`down`: "name ready/wanted") or webhooks (validating,
    /// mutating) are not there to judge an admission or generated check.
    KyvernoNotReady {
        down: Vec<String>,
        webhooks: Option<(usize, usize)>,
    },
    KyvernoUnknown {
        error: String,
    },
    /// The cluster or kca's access to it (the error's text stays data).
    Cluster {
        error: String,
    },
    NoThread {
        error: String,
    },
    Crashed {
        error: Option<String>,
    },
    /// The lab's own files (fixtures, setups) cannot be loaded.
    Content {
        error: String,
    },
    /// A check handed to the wrong evaluator (a bug in kca).
    Internal {
        what: &'static str,
    },
    /// Two details, the second adding to the first.
    Both(Box<Detail>, Box<Detail>),
}

impl Detail {
    /// Whether its English text (everything shown, as in JSON) holds `text`.
    pub fn contains(&self, text: &str) -> bool {
        self.to_string().contains(text)
    }

    /// A YAML syntax error of the workspace file `path`, whose text is `source`: the one
    /// file problem, with its line and a caret.
    pub fn not_yaml(path: &str, source: &str, e: &crate::yaml::YamlError) -> Detail {
        let esc = |t: &str| crate::escape::escape(t).into_owned();
        Detail::NotYaml {
            path: esc(path),
            at: e.pos.to_string(),
            message: esc(&e.message),
            // Escaped as the diagnostic renders it; narrow enough for an 80-column screen.
            excerpt: crate::diag::excerpt(source, e.pos, EXCERPT_CHARS),
        }
    }

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
            Detail::NotYaml {
                path,
                at,
                message,
                excerpt,
            } => vec![
                std::iter::once(format!("{path}:{at}: {message}"))
                    .chain(excerpt.iter().cloned())
                    .collect::<Vec<_>>()
                    .join("\n"),
            ],
            Detail::Both(a, b) => [a.file_problems(), b.file_problems()].concat(),
            Detail::Varied { inner, .. }
            | Detail::Waited { why: inner, .. }
            | Detail::GuardWaits { inner, .. } => inner.file_problems(),
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

    /// The variant's name, for the JSON report (`detailKind`) and the coverage test.
    pub fn kind(&self) -> &'static str {
        use Detail as D;
        match self {
            D::None => "none",
            D::FileExists { .. } => "fileExists",
            D::FileMissing { .. } => "fileMissing",
            D::FileUnreadable { .. } => "fileUnreadable",
            D::WorkspaceOverBudget { .. } => "workspaceOverBudget",
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
            D::GuardWaits { .. } => "guardWaits",
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

#[path = "detail_diff.rs"]
mod diff;
#[path = "detail_facts.rs"]
mod facts;
#[path = "detail_say.rs"]
mod say;

pub use diff::{Change, Diff};
pub use facts::{Access, By, Excess, Probe, Ran, Source, Wrong};

#[cfg(test)]
#[path = "detail_tests.rs"]
mod tests;

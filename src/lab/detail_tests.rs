use super::*;

fn probe() -> Probe {
    Probe {
        kind: "Pod".into(),
        name: "kca-mutate/kca-probe-…".into(),
    }
}

fn ran() -> Ran {
    Ran {
        command: "bash /labs/x/graders/values.sh values.yaml".into(),
        output: "HelmValues default/values ✗ FAIL".into(),
        cut: String::new(),
    }
}

fn diffs() -> Vec<Diff> {
    let at = || "spec.rules".to_string();
    vec![
        Diff::ShouldBeAbsent {
            at: at(),
            found: Some("`a`".into()),
        },
        Diff::NotMapping {
            at: at(),
            found: None,
        },
        Diff::Missing { at: at() },
        Diff::NotList {
            at: at(),
            found: None,
        },
        Diff::EmptyList {
            at: at(),
            like: "{\"name\":\"r\"}".into(),
        },
        Diff::NoItem {
            at: at(),
            index: 1,
            item: "{}".into(),
        },
        Diff::Differs {
            at: at(),
            got: Some("`a`".into()),
            want: "`b`".into(),
        },
        Diff::Operator {
            at: at(),
            problem: "`$inOrder` takes a non-empty list".into(),
        },
        Diff::NoRegexMatch {
            at: at(),
            got: "`x`".into(),
            re: "^y$".into(),
        },
        Diff::NotText {
            at: at(),
            re: "^y$".into(),
            found: None,
        },
        Diff::NoneOf {
            at: at(),
            count: 2,
            first: Some(Box::new(Diff::Missing { at: at() })),
        },
        Diff::OutOfOrder {
            at: at(),
            index: 2,
            item: "`b`".into(),
            before: "`a`".into(),
        },
        Diff::UnknownOperator {
            at: at(),
            op: "$x".into(),
        },
        Diff::NoDocument { want: "{}".into() },
    ]
}

fn changes() -> Vec<Change> {
    vec![
        Change::Set {
            map: "labels".into(),
            key: "team".into(),
            value: "`a`".into(),
        },
        Change::Removed {
            map: "annotations".into(),
            key: "x".into(),
        },
        Change::ListAdded {
            at: "spec.initContainers".into(),
        },
        Change::Gained {
            at: "spec.containers".into(),
            name: "proxy".into(),
        },
        Change::Lost {
            at: "spec.containers".into(),
            name: "app".into(),
        },
        Change::Value(Diff::Missing { at: "x".into() }),
    ]
}

/// One of every kind of detail (the test below checks none is left out).
fn samples() -> Vec<Detail> {
    use Detail as D;
    let w = || "ConfigMap ns/ca".to_string();
    let p = || "policies/a.yaml".to_string();
    let mut out = vec![
        D::FileExists { path: p() },
        D::FileMissing { path: p() },
        D::FileUnreadable {
            error: "`a` is a link out of the workspace".into(),
        },
        D::WorkspaceOverBudget {
            path: p(),
            at: "3:1".into(),
            message: "too many values".into(),
        },
        D::NotYaml {
            path: p(),
            at: "3:5".into(),
            message: "mapping values are not allowed".into(),
            excerpt: Vec::new(),
        },
        D::NoKind {
            path: p(),
            kind: "ClusterPolicy".into(),
            found: vec![],
        },
        D::FileHolds { path: p() },
        D::FileValid {
            path: p(),
            documents: 1,
        },
        D::Elsewhere {
            path: p(),
            found_in: "a.yaml".into(),
        },
        D::NoDocumentNamed {
            path: p(),
            kind: "ClusterPolicy".into(),
            name: "x".into(),
        },
        D::FileEmpty { path: p() },
        D::NoAnswers { path: p() },
        D::Blocked {
            problems: vec!["policies/a.yaml:3:5: bad".into()],
        },
        D::CannotRender {
            what: "argument `{{x}}`".into(),
            reason: "no x".into(),
        },
        D::EmptyCommand,
        D::CannotRun {
            program: "helm".into(),
            error: "not found".into(),
        },
        D::TimedOut {
            ran: ran(),
            seconds: 5,
        },
        D::CommandCannotJudge {
            ran: ran(),
            why: "no helm".into(),
        },
        D::ExitCode {
            ran: ran(),
            got: Some(1),
            want: Some(0),
        },
        D::OutputMismatch {
            ran: ran(),
            stderr: false,
            re: "(?m)^ok$".into(),
        },
        D::CommandPassed {
            ran: ran(),
            got: Some(0),
        },
        D::CanI {
            user: "alice".into(),
            access: Access {
                verb: "create".into(),
                resource: "pods".into(),
                namespace: "a".into(),
                ..Access::default()
            },
            allowed: true,
            reason: String::new(),
            expected: Some(false),
        },
        D::LostWhatSent {
            what: probe(),
            lost: "labels `kca.dev/x`".into(),
        },
        D::Admitted { what: probe() },
        D::OutsideUnchanged { what: probe() },
        D::OutsideLeftAlone { what: probe() },
        D::AdmittedAsExpected { what: probe() },
        D::OutsideDiffers {
            what: probe(),
            diff: Diff::Missing { at: "x".into() },
        },
        D::AdmittedBut {
            what: probe(),
            diff: Diff::Missing {
                at: "metadata.labels".into(),
            },
        },
        D::OutsideDenied {
            what: probe(),
            message: "denied".into(),
        },
        D::Denied {
            what: probe(),
            message: "denied".into(),
        },
        D::AdmittedShouldDeny { what: probe() },
        D::DeniedBy {
            what: probe(),
            by: By::Rule {
                policy: "p".into(),
                rule: "r".into(),
            },
        },
        D::DeniedNotBy {
            what: probe(),
            by: By::Vap { policy: "v".into() },
            message: "denied".into(),
        },
        D::GuardWaits {
            inner: Box::new(D::Admitted { what: probe() }),
            behind: vec!["reader-can-get".into()],
        },
        D::GuardWaits {
            inner: Box::new(D::Admitted { what: probe() }),
            behind: Vec::new(),
        },
        D::Varied {
            seed: 7,
            inner: Box::new(D::Admitted { what: probe() }),
        },
        D::NotGenerated { what: w() },
        D::Generated { what: w() },
        D::GeneratedAsExpected { what: w() },
        D::GeneratedBut {
            what: w(),
            diff: Diff::Missing { at: "data".into() },
        },
        D::SyncGone {
            what: w(),
            source: "ConfigMap a/b".into(),
        },
        D::SyncFollowed {
            what: w(),
            source: "ConfigMap a/b".into(),
        },
        D::SyncNotFollowed {
            what: w(),
            source: "ConfigMap a/b".into(),
            diff: Diff::Missing { at: "data".into() },
        },
        D::SyncSourceAbsent {
            what: w(),
            source: "ConfigMap a/b".into(),
        },
        D::SyncSourceNotInCluster {
            source: "ConfigMap a/b".into(),
        },
        D::NotLabOwned { what: w() },
        D::OutsideGenerated {
            what: probe(),
            want: w(),
        },
        D::OutsideRuleMatched {
            what: probe(),
            policy: Some("p".into()),
        },
        D::OutsideUpdateRequest { what: probe() },
        D::OutsideNothing { what: probe() },
        D::RanDifferent,
        D::NoRuleMatched,
        D::UpdateRequestFailed {
            message: "forbidden".into(),
            user: "system:serviceaccount:kyverno:bg".into(),
            resource: "networkpolicies".into(),
            can: Some(false),
        },
        D::UpdateRequestFailedUnserved {
            message: "m".into(),
            kind: "K".into(),
            api_version: "v1".into(),
        },
        D::UpdateRequestSkipped {
            message: "m".into(),
        },
        D::UpdateRequestCompleted {
            message: "m".into(),
        },
        D::UpdateRequestStuck {
            name: "ur-1".into(),
            state: "Pending".into(),
            controller: "kyverno-background-controller".into(),
        },
        D::UpdateRequestsUnlisted {
            error: "timeout".into(),
        },
        D::Waited {
            seconds: 20,
            why: Box::new(D::NoRuleMatched),
        },
        D::NotDeleted {
            what: w(),
            error: "gone".into(),
        },
        D::NotRestored {
            what: w(),
            error: "gone".into(),
        },
        D::Interrupted {
            what: w(),
            deleted: false,
        },
        D::InstalledOnly { what: w() },
        D::NotApplied {
            what: w(),
            denial: "admission webhook denied".into(),
        },
        D::NotInManifests { what: w() },
        D::NotInCluster { what: w() },
        D::Absent { what: w() },
        D::ExistsShouldNot { what: w() },
        D::Exists { what: w() },
        D::AsExpected { what: w() },
        D::ResourceDiffers {
            what: w(),
            diff: Diff::Missing { at: "data".into() },
        },
        D::StatusOffline { what: w() },
        D::PolicyNotInCluster { name: "p".into() },
        D::PolicyMissing {
            what: "ClusterPolicy p".into(),
        },
        D::PolicyNotReady {
            what: "ClusterPolicy p".into(),
            why: "bad".into(),
        },
        D::PolicyNoStatus {
            what: "ClusterPolicy p".into(),
            seconds: 30,
        },
        D::PolicyPending {
            what: "ClusterPolicy p".into(),
            seconds: 30,
        },
        D::NoIdentity { what: w() },
        D::Accepted {
            what: w(),
            warnings: vec!["w".into()],
        },
        D::AcceptedShouldReject { what: w() },
        D::Rejected {
            what: w(),
            message: "m".into(),
        },
        D::RejectedOtherReason {
            what: w(),
            re: "x".into(),
            message: "m".into(),
        },
        D::RejectedAsExpected {
            what: w(),
            message: "m".into(),
        },
        D::NothingToCompare {
            source: Source::NoUpdateRequest { of: probe() },
            path: "incident.yaml".into(),
        },
        D::Agrees {
            path: "incident.yaml".into(),
            source: Source::Modelled {
                of: Box::new(Source::UpdateRequestInCluster {
                    name: "ur-1".into(),
                }),
            },
        },
        D::Disagrees {
            path: "incident.yaml".into(),
            source: Source::Offline {
                of: Box::new(Source::Denial { of: probe() }),
                reason: "CEL authorizer".into(),
            },
            wrong: vec![
                Wrong::Empty { key: "verb".into() },
                Wrong::NotWhatHappened {
                    key: "state".into(),
                    said: "Done".into(),
                },
            ],
        },
        D::BeyondAllowed {
            excess: vec![Excess {
                object: "ClusterRole x".into(),
                index: 1,
                rule: "create on * in core".into(),
                who: "sa".into(),
                what: "create on *".into(),
                scope: "cluster-wide".into(),
                via: "binding b".into(),
            }],
        },
        D::LacksNeeded {
            who: "sa".into(),
            verb: "create".into(),
            resource: "networkpolicies".into(),
            group: "networking.k8s.io".into(),
            namespace: String::new(),
        },
        D::PrivilegeOk {
            who: "sa".into(),
            from: vec![],
        },
        D::OfflineCannot {
            reason: "CEL authorizer".into(),
        },
        D::NotServed {
            apis: vec!["ValidatingPolicy (policies.kyverno.io/v1)".into()],
        },
        D::Cluster {
            error: "connection refused".into(),
        },
        D::KyvernoNotReady {
            down: vec!["kyverno-background-controller 0/1".into()],
            webhooks: Some((0, 1)),
        },
        D::KyvernoUnknown {
            error: "forbidden".into(),
        },
        D::NoThread {
            error: "EAGAIN".into(),
        },
        D::Crashed { error: None },
        D::Content {
            error: "fixtures/a.yaml: not found".into(),
        },
        D::Internal {
            what: "not a command check",
        },
        D::Both(
            Box::new(D::NotGenerated { what: w() }),
            Box::new(D::RanDifferent),
        ),
    ];
    out.extend(
        diffs()
            .into_iter()
            .map(|diff| D::FileDiffers { path: p(), diff }),
    );
    out.push(D::OutsideChanged {
        what: probe(),
        changes: changes(),
    });
    out
}

fn japanese(s: &str) -> bool {
    s.chars()
        .any(|c| matches!(c as u32, 0x3040..=0x30ff | 0x4e00..=0x9fff))
}

/// The kinds `Detail::kind` names (its match arms, read from the source).
fn declared_kinds() -> Vec<String> {
    let src = include_str!("detail.rs");
    let body = &src[src.find("pub fn kind(&self)").unwrap()..];
    let body = &body[..body.find("\n    }\n").unwrap()];
    body.lines()
        .filter_map(|l| l.split("=> \"").nth(1))
        .map(|r| r.trim_end_matches(['"', ',']).to_string())
        .filter(|k| k != "none")
        .collect()
}

#[test]
fn every_detail_kind_has_japanese_and_english_text() {
    let samples = samples();
    let mut seen: Vec<&str> = samples.iter().map(Detail::kind).collect();
    seen.sort_unstable();
    seen.dedup();
    let declared = declared_kinds();
    assert!(declared.len() > 90, "{declared:?}");
    for k in &declared {
        assert!(seen.contains(&k.as_str()), "no sample of `{k}`");
    }
    for d in &samples {
        for reveal in [false, true] {
            for verbose in [false, true] {
                let say = |lang| {
                    d.say(Say {
                        lang,
                        reveal,
                        verbose,
                    })
                };
                let (ja, en) = (say(Lang::Ja), say(Lang::En));
                assert!(japanese(&ja), "{}: no Japanese in {ja:?}", d.kind());
                assert!(!japanese(&en), "{}: Japanese in English {en:?}", d.kind());
                assert!(!en.trim().is_empty(), "{}", d.kind());
            }
        }
    }
}

#[test]
fn every_observed_source_is_said_in_both_languages() {
    let s = |lang| Say {
        lang,
        reveal: false,
        verbose: false,
    };
    let sources = [
        Source::Unknown,
        Source::UpdateRequest { of: probe() },
        Source::NoUpdateRequest { of: probe() },
        Source::UpdateRequestInCluster { name: "ur".into() },
        Source::Denial { of: probe() },
        Source::NoDenial { of: probe() },
        Source::Offline {
            of: Box::new(Source::Unknown),
            reason: "r".into(),
        },
        Source::Modelled {
            of: Box::new(Source::Unknown),
        },
    ];
    for src in sources {
        assert!(japanese(&src.say(s(Lang::Ja))), "{src:?}");
        assert!(!japanese(&src.say(s(Lang::En))), "{src:?}");
    }
}

#[test]
fn every_diff_and_change_is_said_in_both_languages() {
    let s = |lang| Say {
        lang,
        reveal: true,
        verbose: false,
    };
    for d in diffs() {
        assert!(japanese(&d.say(s(Lang::Ja))), "{d:?}");
        assert!(!japanese(&d.say(s(Lang::En))), "{d:?}");
    }
    for c in changes() {
        assert!(japanese(&c.say(s(Lang::Ja))), "{c:?}");
        assert!(!japanese(&c.say(s(Lang::En))), "{c:?}");
    }
}

#[test]
fn the_expected_shape_and_regex_wait_for_a_hint_and_raw_output_for_verbose() {
    let hidden = Say {
        lang: Lang::Ja,
        reveal: false,
        verbose: false,
    };
    let file = Detail::FileDiffers {
        path: "policies/a.yaml".into(),
        diff: Diff::NoRegexMatch {
            at: "spec.x".into(),
            got: "`a`".into(),
            re: "(?m)^\\s*-?\\s*path:".into(),
        },
    };
    assert!(!file.say(hidden).contains("path:"), "{}", file.say(hidden));
    assert!(file.hides(hidden));
    let shown = Say {
        reveal: true,
        ..hidden
    };
    assert!(file.say(shown).contains("(?m)^\\s*-?\\s*path:"));
    let run = Detail::ExitCode {
        ran: ran(),
        got: Some(1),
        want: Some(0),
    };
    let short = run.say(hidden);
    assert!(
        !short.contains("HelmValues") && !short.contains('\n'),
        "{short}"
    );
    assert!(short.contains("`bash values.sh`"), "{short}");
    let long = run.say(Say {
        verbose: true,
        ..hidden
    });
    assert!(long.contains("HelmValues default/values ✗ FAIL"), "{long}");
    // The JSON report keeps the full English text.
    assert!(
        run.to_string().contains("last output:\nHelmValues"),
        "{run}"
    );
}

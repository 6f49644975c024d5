//! `kca lab verify`: proves a lab gradable, offline or (`--live`) against a lab cluster.
//! The starter must fail, the solution must pass every check (a skipped check is not a
//! pass), and each mutant must fail at least the checks it names. Works in temporary
//! workspaces; never touches the learner's. Live, each variant is applied to a cluster
//! reset in between, and every check whose live verdict differs from the offline one is
//! reported.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;

use super::check::{CheckResult, Verdict};
use super::setup::Staged;
use super::workspace::{self, Stage};
use super::{grade, report};
use crate::content::lab::Lab;
use crate::error::Result;
use crate::exit::Exit;

pub mod derive;
mod score;
pub use score::{MutationScore, Survivor};

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LabVerdict {
    pub lab: String,
    pub ok: bool,
    pub starter: StageVerdict,
    pub solution: StageVerdict,
    pub mutants: Vec<StageVerdict>,
    /// Offline: the mutants kca derived from the solution, and how many checks killed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<MutationScore>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StageVerdict {
    pub name: String,
    pub ok: bool,
    /// What is wrong, one line each (empty when ok).
    pub problems: Vec<String>,
    /// Checks that failed (for mutants: beyond the named ones too).
    pub failed: Vec<String>,
    /// True when the only problems are checks this build cannot judge offline.
    pub environment_only: bool,
    /// Live only: checks whose live verdict differs from the offline one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub differs: Vec<String>,
}

/// A scratch folder removed when dropped.
pub(super) struct Scratch(pub(super) PathBuf);

impl Scratch {
    pub(super) fn new() -> Result<Scratch> {
        static N: AtomicUsize = AtomicUsize::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!(
            "kca-verify-{}-{}-{nanos}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Grades a stage. The solution and the mutants are the learner's final state: every task
/// setup was staged, and the files were saved (re-applied) after it; the starter meets
/// no setup.
pub(super) fn run_stage(lab: &Lab, stage: Stage<'_>) -> Result<Vec<CheckResult>> {
    let staged = match stage {
        Stage::Starter => Vec::new(),
        _ => final_setups(lab),
    };
    run_staged(lab, stage, &staged)
}

/// Every task setup, staged before the files were last saved (the learner's final state).
pub(super) fn final_setups(lab: &Lab) -> Vec<Staged<'_>> {
    super::setup::recorded(lab, &super::setup::final_state(lab))
}

fn run_staged(lab: &Lab, stage: Stage<'_>, staged: &[Staged<'_>]) -> Result<Vec<CheckResult>> {
    let tmp = Scratch::new()?;
    let ws = tmp.0.join(&lab.workspace_name);
    workspace::materialize(lab, stage, &ws)?;
    grade::offline_staged(lab, &ws, &[], staged)
}

/// A task with a setup must fail right after it (the solution laid out, the setups up to
/// this task just applied, nothing re-applied): else the incident teaches nothing.
fn incident_stages(lab: &Lab) -> Result<Vec<StageVerdict>> {
    let mut out = Vec::new();
    for (i, task) in lab.tasks.iter().enumerate() {
        if task.setup.is_empty() {
            continue;
        }
        let staged: Vec<Staged<'_>> = lab.tasks[..=i]
            .iter()
            .filter(|t| !t.setup.is_empty())
            .map(|t| Staged { task: t, at: None })
            .collect();
        let res = run_staged(lab, Stage::Solution, &staged)?;
        let mine: Vec<&CheckResult> = res.iter().filter(|r| r.task == task.id).collect();
        let failed: Vec<String> = mine
            .iter()
            .filter(|r| r.verdict == Verdict::Fail)
            .map(|r| r.id.clone())
            .collect();
        let problems = if failed.is_empty() {
            vec![format!(
                "right after its setup, task `{}` fails no check: the incident changes nothing \
                 a check can see",
                task.id
            )]
        } else {
            Vec::new()
        };
        out.push(StageVerdict {
            name: format!("setup of {}", task.id),
            ok: problems.is_empty(),
            environment_only: false,
            problems,
            failed,
            differs: Vec::new(),
        });
    }
    Ok(out)
}

/// A skip the lab declared possible (a resource of the running installation, a command's
/// `skipExit`): this environment cannot prove the check, and that is not the content's fault.
fn declared_skip(lab: &Lab, r: &CheckResult) -> bool {
    use crate::content::lab::Spec;
    r.verdict == Verdict::Skipped
        && lab.check(&r.id).is_some_and(|c| {
            matches!(
                c.spec,
                Spec::Resource {
                    installed: true,
                    ..
                } | Spec::Command {
                    skip_exit: Some(_),
                    ..
                }
            )
        })
}

fn ids(results: &[CheckResult], v: Verdict) -> Vec<String> {
    results
        .iter()
        .filter(|r| r.verdict == v)
        .map(|r| r.id.clone())
        .collect()
}

/// The offline proof: every variant (starter, solution, each mutant) and every mutant kca
/// derives from the solution, graded on one pool (`score::in_parallel`), then scored.
pub fn verify(lab: &Lab) -> Result<LabVerdict> {
    let variants = stages(lab);
    let derived = score::mutants(lab)?;
    enum Job<'a> {
        Stage(Stage<'a>),
        Derived(&'a derive::Derived),
    }
    let jobs: Vec<Job<'_>> = variants
        .iter()
        .map(|s| Job::Stage(*s))
        .chain(derived.iter().map(Job::Derived))
        .collect();
    let mut graded = score::in_parallel(&jobs, |job| match job {
        Job::Stage(stage) => run_stage(lab, *stage),
        Job::Derived(m) => score::grade_one(lab, m),
    });
    let of_derived = graded.split_off(variants.len());
    let mut graded = graded.into_iter().collect::<Result<Vec<_>>>()?.into_iter();
    let mut v = verify_with(lab, |_| {
        graded.next().ok_or_else(|| {
            crate::error::Error::environment(
                crate::error::msg("採点されなかった版があります", "a variant was not graded"),
                crate::error::msg("もう一度実行します", "run again"),
            )
        })
    })?;
    let (score, stage) = score::score(lab, &derived, of_derived)?;
    v.ok &= stage.ok;
    v.mutants.push(stage);
    v.score = Some(score);
    Ok(v)
}

/// [`verify`] for several labs, as many at once as there are cores (one lab's last
/// variants need not wait for the next lab's first), verdicts in the order given.
pub fn verify_all(labs: &[Lab]) -> Vec<Result<LabVerdict>> {
    score::in_parallel(labs, verify)
}

/// The proof on any grader of a variant (`starter`, `solution`, each mutant, in that order).
pub fn verify_with(
    lab: &Lab,
    mut grade_stage: impl FnMut(Stage<'_>) -> Result<Vec<CheckResult>>,
) -> Result<LabVerdict> {
    let starter = grade_stage(Stage::Starter)?;
    let failed = ids(&starter, Verdict::Fail);
    let mut problems = Vec::new();
    if failed.is_empty() {
        problems
            .push("the starter fails no check: a learner would pass without doing anything".into());
    }
    // A task the starter already passes teaches nothing.
    for t in &lab.tasks {
        let mine: Vec<&CheckResult> = starter.iter().filter(|r| r.task == t.id).collect();
        if !mine.is_empty() && mine.iter().all(|r| r.verdict == Verdict::Pass) {
            problems.push(format!("task `{}` passes on the starter", t.id));
        }
    }
    // Nothing done, nothing earned: a check that holds before the learner acts is a guard.
    let earned: Vec<String> = starter
        .iter()
        .filter(|r| r.earned > 0)
        .map(|r| r.id.clone())
        .collect();
    if !earned.is_empty() {
        problems.push(format!(
            "the starter earns points ({}): a check that holds before the learner does \
             anything is a guard (`leftAlone: true`, `expect: allowed`, or `guard: true`) and \
             counts only once its task's other checks pass",
            earned.join(", ")
        ));
    }
    let starter_v = StageVerdict {
        name: "starter".into(),
        ok: problems.is_empty(),
        problems,
        environment_only: false,
        failed,
        differs: Vec::new(),
    };
    let solution = grade_stage(Stage::Solution)?;
    let not_pass: Vec<&CheckResult> = solution
        .iter()
        .filter(|r| r.verdict != Verdict::Pass && !declared_skip(lab, r))
        .collect();
    let solution_v = StageVerdict {
        name: "solution".into(),
        ok: not_pass.is_empty(),
        problems: not_pass
            .iter()
            .map(|r| format!("{} {}: {}", r.verdict.word(), r.id, r.detail))
            .collect(),
        environment_only: !not_pass.is_empty()
            && not_pass.iter().all(|r| r.verdict != Verdict::Fail),
        failed: ids(&solution, Verdict::Fail),
        differs: Vec::new(),
    };
    let mut mutants = Vec::new();
    for m in &lab.mutants {
        let res = grade_stage(Stage::Mutant(m))?;
        let mut problems = Vec::new();
        let mut env_only = true;
        for want in &m.fails {
            match res.iter().find(|r| &r.id == want) {
                Some(r) if r.verdict == Verdict::Fail => {}
                Some(r) => {
                    if r.verdict == Verdict::Pass {
                        env_only = false;
                    }
                    problems.push(format!(
                        "{} should fail but is {}: {}",
                        want,
                        r.verdict.word(),
                        r.detail
                    ));
                }
                None => {
                    env_only = false;
                    problems.push(format!("{want}: no such check"));
                }
            }
        }
        mutants.push(StageVerdict {
            name: format!("mutant {}", m.id),
            ok: problems.is_empty(),
            environment_only: !problems.is_empty() && env_only,
            problems,
            failed: ids(&res, Verdict::Fail),
            differs: Vec::new(),
        });
    }
    mutants.extend(incident_stages(lab)?);
    let ok = starter_v.ok && solution_v.ok && mutants.iter().all(|m| m.ok);
    Ok(LabVerdict {
        lab: lab.id.clone(),
        ok,
        starter: starter_v,
        solution: solution_v,
        mutants,
        score: None,
    })
}

impl LabVerdict {
    pub fn stages(&self) -> impl Iterator<Item = &StageVerdict> {
        [&self.starter, &self.solution]
            .into_iter()
            .chain(self.mutants.iter())
    }

    fn stages_mut(&mut self) -> impl Iterator<Item = &mut StageVerdict> {
        [&mut self.starter, &mut self.solution]
            .into_iter()
            .chain(self.mutants.iter_mut())
    }
}

/// Checks whose verdicts differ between two gradings of the same variant, one line each.
pub fn differences(live: &[CheckResult], offline: &[CheckResult]) -> Vec<String> {
    live.iter()
        .filter_map(|l| {
            let o = offline.iter().find(|o| o.id == l.id)?;
            (o.verdict != l.verdict).then(|| {
                format!(
                    "{}: live {} ({}), offline {} ({})",
                    l.id,
                    l.verdict.word(),
                    l.detail,
                    o.verdict.word(),
                    o.detail
                )
            })
        })
        .collect()
}

/// One variant graded both ways.
pub struct Graded {
    pub live: Vec<CheckResult>,
    pub offline: Vec<CheckResult>,
}

/// `verify_with` on live results graded beforehand (in variant order), with the
/// live/offline differences of each variant attached.
pub fn verdict_from_live(lab: &Lab, graded: Vec<Graded>) -> Result<LabVerdict> {
    let mut diffs = Vec::new();
    let mut runs = graded.into_iter();
    let mut v = verify_with(lab, |_| {
        let g = runs.next().ok_or_else(|| {
            crate::error::Error::environment(
                crate::error::msg(
                    "クラスターで採点されなかった版があります",
                    "a variant was not graded live",
                ),
                crate::error::msg("もう一度実行します", "run again"),
            )
        })?;
        diffs.push(differences(&g.live, &g.offline));
        Ok(g.live)
    })?;
    for (stage, d) in v.stages_mut().zip(diffs) {
        stage.differs = d;
    }
    Ok(v)
}

/// The variants of a lab in the order `verify_with` grades them.
pub fn stages(lab: &Lab) -> Vec<Stage<'_>> {
    [Stage::Starter, Stage::Solution]
        .into_iter()
        .chain(lab.mutants.iter().map(Stage::Mutant))
        .collect()
}

/// Grades every variant on the cluster: reset the lab's objects, apply the variant's
/// manifests as the learner would (labelled as the lab's, so the next reset removes them),
/// grade live, and grade the same workspace offline for the comparison. Leaves the lab
/// reset. The caller has made sure this is a lab cluster.
pub async fn grade_live(
    ctx: &crate::ctx::Ctx,
    live: std::sync::Arc<crate::target::live::Live>,
    lab: &Lab,
) -> Result<Vec<Graded>> {
    let mut out = Vec::new();
    for stage in stages(lab) {
        let tmp = Scratch::new()?;
        let ws = tmp.0.join(&lab.workspace_name);
        workspace::materialize(lab, stage, &ws)?;
        ctx.printer
            .status(&format!("  {}: {}", lab.id, stage_name(stage)));
        super::reset::reset_cluster(ctx, &live, lab).await?;
        stage_on_cluster(ctx, &live, lab, stage, &ws).await?;
        let live_results = grade::live(live.clone(), lab, &ws, &[], &ctx.printer).await;
        let staged = match stage {
            Stage::Starter => Vec::new(),
            _ => final_setups(lab),
        };
        let offline = grade::offline_staged(lab, &ws, &[], &staged)?;
        out.push(Graded {
            live: live_results,
            offline,
        });
    }
    super::reset::reset_cluster(ctx, &live, lab).await?;
    Ok(out)
}

/// A variant on a reset cluster as `run_stage` grades it offline: the workspace applied;
/// for the solution and the mutants (the learner's final state) every task setup staged
/// on what the workspace holds (`setup::apply_live_in`: a `revoke` finds the learner's
/// grant whatever its name), then the files applied again, as a learner saves and applies
/// them after each incident. The starter meets no setup.
pub async fn stage_on_cluster(
    ctx: &crate::ctx::Ctx,
    live: &crate::target::live::Live,
    lab: &Lab,
    stage: Stage<'_>,
    ws: &std::path::Path,
) -> Result<()> {
    apply_workspace(ctx, live, lab, ws).await?;
    if matches!(stage, Stage::Starter) {
        return Ok(());
    }
    let mut staged = false;
    for task in lab.tasks.iter().filter(|t| !t.setup.is_empty()) {
        for done in super::setup::apply_live_in(live, lab, task, Some(ws)).await? {
            ctx.printer
                .verbose(&format!("    setup of task {}: {done}", task.id));
        }
        staged = true;
    }
    if staged {
        apply_workspace(ctx, live, lab, ws).await?;
    }
    Ok(())
}

fn stage_name(stage: Stage<'_>) -> String {
    match stage {
        Stage::Starter => "starter".into(),
        Stage::Solution => "solution".into(),
        Stage::Mutant(m) => format!("mutant {}", m.id),
    }
}

/// `kubectl apply -f` of the workspace: namespaces first; kinds the server does not serve
/// are left out (their checks are skipped), and a refused object is reported, as kubectl
/// would, without stopping the others.
pub async fn apply_workspace(
    ctx: &crate::ctx::Ctx,
    live: &crate::target::live::Live,
    lab: &Lab,
    ws: &std::path::Path,
) -> Result<()> {
    let mut objs = workspace::manifests(lab, ws).objects;
    objs.sort_by_key(|o| o.get("kind").and_then(serde_json::Value::as_str) != Some("Namespace"));
    for mut o in objs {
        let Some(r) = crate::target::ObjRef::of(&o) else {
            continue;
        };
        if !live.serves(&r.api_version, &r.kind).await? {
            ctx.printer
                .verbose(&format!("{r}: not served here; not applied"));
            continue;
        }
        workspace::label_owned(&mut o, lab);
        match live.apply(&o).await {
            Ok(_) => {}
            Err(e @ crate::target::live::LiveError::Api { .. }) => {
                ctx.printer.status(&format!("    {r} was refused: {e}"));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// 0 all verified; 1 a lab's content is not gradable; 3 only checks this build cannot judge.
pub fn exit(verdicts: &[LabVerdict]) -> Exit {
    let bad: Vec<&StageVerdict> = verdicts
        .iter()
        .flat_map(LabVerdict::stages)
        .filter(|s| !s.ok)
        .collect();
    if bad.is_empty() {
        Exit::Success
    } else if bad.iter().all(|s| s.environment_only) {
        Exit::Environment
    } else {
        Exit::NotPassed
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyReport<'a> {
    pub schema_version: u32,
    pub labs: &'a [LabVerdict],
}

pub fn json(verdicts: &[LabVerdict]) -> VerifyReport<'_> {
    VerifyReport {
        schema_version: report::SCHEMA_VERSION,
        labs: verdicts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::{Document, load_file};
    use std::path::Path;

    fn write(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// A lab whose solution meets a tool that is missing (`skipExit`) and an object of the
    /// running installation (`installed: true`); `extra` adds one more check to its task.
    fn lab(dir: &Path, extra: &str) -> Lab {
        let yaml = format!(
            r#"apiVersion: kca.dev/v1alpha1
kind: Lab
metadata: {{id: declared, title: T, module: 2, concepts: [x]}}
starter: [answer.txt]
solution: [answer.txt]
tasks:
  - id: t
    title: T
    instructions: I
    checks:
      - {{id: answered, kind: command, run: [grep, -q, yes, answer.txt]}}
      - {{id: no-tool, kind: command, run: [sh, -c, "echo 'kyverno is not on PATH' >&2; exit 77"], skipExit: 77}}
      - id: lease
        kind: resource
        installed: true
        object: {{apiVersion: coordination.k8s.io/v1, kind: Lease, namespace: kyverno, name: kyverno-reports-controller}}
{extra}"#
        );
        write(dir, "lab.yaml", &yaml);
        write(dir, "starter/answer.txt", "no\n");
        write(dir, "solution/answer.txt", "yes\n");
        match load_file(&dir.join("lab.yaml")) {
            Ok(Document::Lab(l)) => *l,
            Ok(_) => panic!("not a lab"),
            Err(d) => panic!("{:?}", d.iter().map(|d| &d.message).collect::<Vec<_>>()),
        }
    }

    #[test]
    fn declared_skips_do_not_fail_the_solution_but_say_why() {
        let tmp = tempfile::tempdir().unwrap();
        let l = lab(&tmp.path().join("declared"), "");
        let v = verify(&l).unwrap();
        assert!(v.ok, "{:?}", v.solution.problems);
        let ws = tmp.path().join("ws");
        workspace::materialize(&l, Stage::Solution, &ws).unwrap();
        let res = grade::offline(&l, &ws, &[]).unwrap();
        let get = |id: &str| res.iter().find(|r| r.id == id).unwrap();
        assert_eq!(get("no-tool").verdict, Verdict::Skipped);
        assert!(
            get("no-tool")
                .detail
                .to_string()
                .contains("kyverno is not on PATH"),
            "{}",
            get("no-tool").detail
        );
        assert_eq!(get("lease").verdict, Verdict::Skipped);
        assert!(
            get("lease")
                .detail
                .to_string()
                .contains("running installation"),
            "{}",
            get("lease").detail
        );
    }

    #[test]
    fn an_undeclared_skip_or_exit_still_fails_the_solution() {
        let tmp = tempfile::tempdir().unwrap();
        // Exit 77 without `skipExit` is a plain failure, and a lab-owned resource that is
        // missing offline is a failure too.
        let extra = "      - {id: plain, kind: command, run: [sh, -c, \"exit 77\"]}\n      - {id: owned, kind: resource, object: {apiVersion: v1, kind: ConfigMap, namespace: kyverno, name: mine}}\n";
        let l = lab(&tmp.path().join("declared"), extra);
        let v = verify(&l).unwrap();
        assert!(!v.solution.ok);
        assert_eq!(v.solution.failed, vec!["plain", "owned"]);
    }

    fn testlab() -> Lab {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/testlab/lab.yaml");
        match load_file(&path) {
            Ok(Document::Lab(lab)) => *lab,
            _ => panic!("the test lab does not load"),
        }
    }

    /// Every check with `verdict`, except those in `fail`.
    fn results(lab: &Lab, fail: &[&str]) -> Vec<CheckResult> {
        lab.checks()
            .map(|(t, c)| {
                // A detail whose English text is only the reason given.
                let said =
                    |r: &str| super::super::detail::Detail::OfflineCannot { reason: r.into() };
                let o = if fail.contains(&c.id.as_str()) {
                    super::super::check::Outcome::fail(said("no"))
                } else {
                    super::super::check::Outcome::pass(said("yes"))
                };
                CheckResult::new(t, c, o, 0.0)
            })
            .collect()
    }

    /// Every check: a starter that earns nothing (a passing one would earn its points).
    fn starter_fails(lab: &Lab) -> Vec<&str> {
        lab.checks().map(|(_, c)| c.id.as_str()).collect()
    }

    #[test]
    fn a_starter_that_earns_points_is_not_verified() {
        let lab = testlab();
        let first: Vec<&str> = lab.tasks.iter().map(|t| t.checks[0].id.as_str()).collect();
        let v = verify_with(&lab, |stage| {
            Ok(match stage {
                Stage::Starter => results(&lab, &first),
                Stage::Solution => results(&lab, &[]),
                Stage::Mutant(m) => results(
                    &lab,
                    &m.fails.iter().map(String::as_str).collect::<Vec<_>>(),
                ),
            })
        })
        .unwrap();
        assert!(!v.starter.ok);
        assert!(
            v.starter.problems[0].starts_with("the starter earns points"),
            "{:?}",
            v.starter.problems
        );
    }

    /// Issue 20: an empty answer earns nothing, in every lab of the course (left-alone
    /// probes, allowed probes, absent permissions count once their task's policy acts).
    #[test]
    fn every_course_lab_starter_earns_no_point_offline() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("labs");
        for id in ["kca-admission", "kca-mutate", "kca-gates", "kca-operations"] {
            let Ok(Document::Lab(lab)) = load_file(&root.join(id).join("lab.yaml")) else {
                panic!("{id} does not load");
            };
            let res = run_stage(&lab, Stage::Starter).unwrap();
            let earned: Vec<(&str, u32)> = res
                .iter()
                .filter(|r| r.earned > 0)
                .map(|r| (r.id.as_str(), r.earned))
                .collect();
            assert!(earned.is_empty(), "{id}: the starter earns {earned:?}");
            assert!(
                res.iter().any(|r| r.verdict == Verdict::Fail
                    && r.detail.contains("counts once the policy acts")),
                "{id}: no guard waits for its task's behaviour"
            );
        }
    }

    #[test]
    fn live_verify_runs_the_same_proof_and_reports_each_differing_check() {
        let lab = testlab();
        let mut graded = Vec::new();
        for stage in stages(&lab) {
            let fails: Vec<&str> = match stage {
                Stage::Starter => starter_fails(&lab),
                Stage::Solution => vec![],
                Stage::Mutant(m) => m.fails.iter().map(String::as_str).collect(),
            };
            let live = results(&lab, &fails);
            // Offline disagrees on one check of the solution.
            let offline = match stage {
                Stage::Solution => results(&lab, &["team-allowed"]),
                _ => live.clone(),
            };
            graded.push(Graded { live, offline });
        }
        let v = verdict_from_live(&lab, graded).unwrap();
        assert!(v.ok, "{v:?}");
        assert!(v.starter.differs.is_empty());
        assert_eq!(v.solution.differs.len(), 1, "{:?}", v.solution.differs);
        assert!(
            v.solution.differs[0].starts_with("team-allowed: live PASS (yes), offline FAIL (no)"),
            "{:?}",
            v.solution.differs
        );
        assert!(v.mutants.iter().all(|m| m.differs.is_empty()));
    }

    #[test]
    fn a_mutant_that_passes_live_is_not_verified() {
        let lab = testlab();
        let graded: Vec<Graded> = stages(&lab)
            .into_iter()
            .map(|stage| {
                let live = match stage {
                    Stage::Starter => results(&lab, &starter_fails(&lab)),
                    _ => results(&lab, &[]),
                };
                Graded {
                    offline: live.clone(),
                    live,
                }
            })
            .collect();
        let v = verdict_from_live(&lab, graded).unwrap();
        assert!(!v.ok);
        assert!(v.mutants.iter().all(|m| !m.ok));
        assert_eq!(exit(&[v]), Exit::NotPassed);
    }

    /// A lab whose solution policy has a `namespaces` line no check looks at; `extra` is
    /// appended to lab.yaml (declarations).
    fn scoped_lab(dir: &Path, extra: &str) -> std::result::Result<Lab, Vec<String>> {
        let policy = "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: p}\nspec:\n  rules:\n    - name: r\n      match: {any: [{resources: {kinds: [Pod], namespaces: [team-a]}}]}\n      validate: {failureAction: Enforce, message: m, pattern: {metadata: {labels: {team: \"?*\"}}}}\n";
        let yaml = format!(
            r#"apiVersion: kca.dev/v1alpha1
kind: Lab
metadata: {{id: scoped, title: T, module: 1, concepts: [x]}}
starter: [p.yaml]
solution: [p.yaml]
tasks:
  - id: t
    title: T
    instructions: I
    checks:
      - id: denies
        kind: admission
        expect: denied
        probe: {{apiVersion: v1, kind: Pod, metadata: {{name: x, namespace: team-a}}, spec: {{containers: [{{name: c, image: nginx}}]}}}}
{extra}"#
        );
        write(dir, "lab.yaml", &yaml);
        write(dir, "starter/p.yaml", "# nothing yet\n");
        write(dir, "solution/p.yaml", policy);
        match load_file(&dir.join("lab.yaml")) {
            Ok(Document::Lab(l)) => Ok(*l),
            Ok(_) => panic!("not a lab"),
            Err(d) => Err(d.iter().map(|d| d.to_string()).collect()),
        }
    }

    #[test]
    fn an_undeclared_survivor_fails_verify_and_a_declaration_with_a_reason_accepts_it() {
        let tmp = tempfile::tempdir().unwrap();
        let l = scoped_lab(&tmp.path().join("scoped"), "").unwrap();
        let v = verify(&l).unwrap();
        let score = v.score.clone().unwrap();
        assert!(!v.ok, "{v:?}");
        let ids: Vec<&str> = score.survivors.iter().map(|s| s.id.as_str()).collect();
        let wide = "namespaces-wildcard:p.yaml#0/spec/rules/0/match/any/0/resources/namespaces";
        assert!(ids.contains(&wide), "{ids:?}");
        assert!(
            score.killed >= 1,
            "Enforce → Audit or a dropped label is killed: {score:?}"
        );
        assert!(score.percent < 100.0);
        // Every survivor declared: verified, and the score counts them apart.
        let decl: String = score
            .survivors
            .iter()
            .map(|s| {
                format!(
                    "  - {{id: \"{}\", reason: only team-a exists in this lab's cluster}}\n",
                    s.id
                )
            })
            .collect();
        let tmp2 = tempfile::tempdir().unwrap();
        let l = scoped_lab(
            &tmp2.path().join("scoped"),
            &format!("equivalentMutants:\n{decl}"),
        )
        .unwrap();
        let v = verify(&l).unwrap();
        let s2 = v.score.clone().unwrap();
        assert!(v.ok, "{v:?}");
        assert_eq!(s2.equivalent, score.survivors.len());
        assert_eq!(s2.percent, 100.0);
    }

    #[test]
    fn equivalent_declarations_are_checked_with_their_position() {
        let tmp = tempfile::tempdir().unwrap();
        let extra = "equivalentMutants:\n  - {id: \"widen:p.yaml#0\", reason: r}\n  - {id: \"rename:p.yaml#0/metadata/name\"}\n";
        let errs = scoped_lab(&tmp.path().join("scoped"), extra).unwrap_err();
        let all = errs.join("\n");
        assert!(all.contains("is not a derived mutant id"), "{all}");
        assert!(all.contains(":16:"), "line of the bad id: {all}");
        assert!(all.contains("reason"), "{all}");
        // A declaration that names nothing kca derives is reported by verify.
        let tmp2 = tempfile::tempdir().unwrap();
        let extra =
            "equivalentMutants:\n  - {id: \"rename:gone.yaml#0/metadata/name\", reason: r}\n";
        let l = scoped_lab(&tmp2.path().join("scoped"), extra).unwrap();
        let v = verify(&l).unwrap();
        let derived = v.mutants.last().unwrap();
        assert!(
            derived
                .problems
                .iter()
                .any(|p| p.contains("no longer derives")),
            "{:?}",
            derived.problems
        );
    }
}

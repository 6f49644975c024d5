//! Runs a selection of checks on a target, independent checks concurrently, and turns
//! their outcomes into results with points and timings.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use super::check::{CheckResult, Detail, Outcome, Submission};
use super::offline::Offline;
use crate::content::lab::{Check, Lab, Task};
use crate::error::Result;
use crate::target::live::Live;
use crate::ui::Printer;

/// The checks of the named tasks, or (none named) of every task.
pub fn select<'a>(lab: &'a Lab, tasks: &[String]) -> Vec<(&'a Task, &'a Check)> {
    lab.checks()
        .filter(|(t, _)| tasks.is_empty() || tasks.contains(&t.id))
        .collect()
}

/// Grades offline on a bounded pool of threads (`check_workers`).
pub fn offline(lab: &Lab, ws: &Path, tasks: &[String]) -> Result<Vec<CheckResult>> {
    offline_staged(lab, ws, tasks, &[])
}

/// Grades offline after the task setups the learner has reached (`lab::setup`).
pub fn offline_staged(
    lab: &Lab,
    ws: &Path,
    tasks: &[String],
    staged: &[super::setup::Staged<'_>],
) -> Result<Vec<CheckResult>> {
    let mut target = Offline::load_staged(lab, ws, staged)?;
    let env = Submission { lab, workspace: ws };
    let selected = select(lab, tasks);
    // Checks that grade a changed cluster run after the others, one at a time, changing
    // the object set in place rather than each on a copy of it (`Offline::varies`).
    let (alone, shared): (Vec<_>, Vec<_>) = selected
        .iter()
        .enumerate()
        .partition(|(_, (_, c))| Offline::varies(c));
    let jobs: Vec<(&Task, &Check)> = shared.iter().map(|(_, j)| **j).collect();
    let pooled = crate::par::pool(&jobs, &check_workers(), lane, |(t, c)| {
        let start = Instant::now();
        let o = target.evaluate(env, c);
        CheckResult::new(t, c, o, start.elapsed().as_secs_f64())
    });
    let mut results: Vec<Option<CheckResult>> = selected.iter().map(|_| None).collect();
    for (r, (i, (t, c))) in pooled.into_iter().zip(&shared) {
        results[*i] = Some(r.unwrap_or_else(|why| CheckResult::new(t, c, unrun(why), 0.0)));
    }
    for (i, (t, c)) in alone {
        let start = Instant::now();
        let o = target.evaluate_alone(env, c);
        results[i] = Some(CheckResult::new(t, c, o, start.elapsed().as_secs_f64()));
    }
    Ok(count_guards(lab, results.into_iter().flatten().collect()))
}

/// Guards (`Check::is_guard`: a probe left alone, a permission that must be absent, …)
/// hold before the learner does anything, so a passing guard earns its points only once
/// the behaviour it guards exists: every other check of its task that was judged passes
/// (skipped ones aside) and at least one does. Until then it is `fail` (the learner's work
/// is not there yet; not `skipped`, which says a target cannot judge), without the lab's
/// failure feedback, naming the checks that do not pass yet. A failing guard stays as it
/// is: doing too much is wrong at any stage. The same rule offline and live.
pub fn count_guards(lab: &Lab, mut results: Vec<CheckResult>) -> Vec<CheckResult> {
    use super::check::Verdict;
    let guard = |id: &str| lab.check(id).is_some_and(Check::is_guard);
    let mut waiting: Vec<(usize, Vec<String>)> = Vec::new();
    for (i, r) in results.iter().enumerate() {
        if r.verdict != Verdict::Pass || !guard(&r.id) {
            continue;
        }
        let acting: Vec<&CheckResult> = results
            .iter()
            .filter(|o| o.task == r.task && !guard(&o.id) && o.verdict != Verdict::Skipped)
            .collect();
        let behind: Vec<String> = acting
            .iter()
            .filter(|o| o.verdict != Verdict::Pass)
            .map(|o| o.id.clone())
            .collect();
        if acting.is_empty() || !behind.is_empty() {
            waiting.push((i, behind));
        }
    }
    for (i, behind) in waiting {
        let r = &mut results[i];
        r.verdict = Verdict::Fail;
        r.earned = 0;
        r.feedback = None;
        let inner = Box::new(std::mem::take(&mut r.detail));
        r.detail = super::detail::Detail::GuardWaits { inner, behind };
    }
    results
}

/// Workers per lane of the offline pool: in-process checks use the cores; `command`
/// checks mostly wait for their program, so a few dozen run at once.
fn check_workers() -> [usize; 2] {
    [crate::par::cores(), 32]
}

fn lane((_, c): &(&Task, &Check)) -> usize {
    usize::from(matches!(c.spec, crate::content::lab::Spec::Command { .. }))
}

/// The verdict of a check the pool could not run.
fn unrun(why: crate::par::Unrun) -> Outcome {
    match why {
        crate::par::Unrun::NoThread(e) => Outcome::error(Detail::NoThread {
            error: e.to_string(),
        }),
        crate::par::Unrun::Crashed => Outcome::error(Detail::Crashed { error: None }),
    }
}

/// Grades against a cluster; checks run as concurrent tasks on the caller's runtime.
pub async fn live(
    live: Arc<Live>,
    lab: &Lab,
    ws: &Path,
    tasks: &[String],
    printer: &Printer,
) -> Vec<CheckResult> {
    let lab = Arc::new(lab.clone());
    let ws: Arc<PathBuf> = Arc::new(ws.to_path_buf());
    let selected: Vec<(Task, Check)> = select(&lab, tasks)
        .into_iter()
        .map(|(t, c)| (t.clone(), c.clone()))
        .collect();
    let gate = super::live::KyvernoGate::read(&live, selected.iter().map(|(_, c)| c)).await;
    if let Some(advice) = super::live::apply_advice(&live, &lab, &ws).await {
        printer.warn(crate::ui::tr_s(printer.lang(), advice.ja, advice.en).as_str());
    }
    let mut set = tokio::task::JoinSet::new();
    for (i, (t, c)) in selected.iter().cloned().enumerate() {
        if let Some(why) = gate.blocks(&c) {
            let res = CheckResult::new(&t, &c, Outcome::error(why), 0.0);
            set.spawn(async move { (i, res) });
            continue;
        }
        let (live, lab, ws, printer) = (live.clone(), lab.clone(), ws.clone(), printer.clone());
        set.spawn(async move {
            let start = Instant::now();
            let env = Submission {
                lab: &lab,
                workspace: &ws,
            };
            let o = super::live::evaluate(&live, env, &c, &printer).await;
            (
                i,
                CheckResult::new(&t, &c, o, start.elapsed().as_secs_f64()),
            )
        });
    }
    let mut done: Vec<Option<CheckResult>> = vec![None; selected.len()];
    while let Some(r) = set.join_next().await {
        if let Ok((i, res)) = r {
            done[i] = Some(res);
        }
    }
    let results = done
        .into_iter()
        .zip(&selected)
        .map(|(r, (t, c))| {
            r.unwrap_or_else(|| {
                CheckResult::new(t, c, Outcome::error(Detail::Crashed { error: None }), 0.0)
            })
        })
        .collect();
    count_guards(&lab, results)
}

#[cfg(test)]
mod tests {
    /// A detail with the given text, for results whose wording is not under test.
    fn d(text: &str) -> crate::lab::detail::Detail {
        crate::lab::detail::Detail::Cluster { error: text.into() }
    }
    use super::*;
    use crate::lab::check::Verdict;

    fn testlab() -> Lab {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/testlab/lab.yaml");
        match crate::content::load_file(&p) {
            Ok(crate::content::Document::Lab(l)) => *l,
            _ => panic!("the test lab does not load"),
        }
    }

    /// The rbac task's results: `reader-can-get` (acting) and `reader-cannot-delete` (a
    /// guard: a permission that must be absent).
    fn rbac(lab: &Lab, acting: Outcome, guard: Outcome) -> Vec<CheckResult> {
        let t = lab.task("rbac").unwrap();
        let c = |id: &str| t.checks.iter().find(|c| c.id == id).unwrap();
        count_guards(
            lab,
            vec![
                CheckResult::new(t, c("reader-can-get"), acting, 0.0),
                CheckResult::new(t, c("reader-cannot-delete"), guard, 0.0),
            ],
        )
    }

    #[test]
    fn a_guard_earns_nothing_until_its_task_acts_and_a_failing_guard_stays_failed() {
        let lab = testlab();
        let r = rbac(
            &lab,
            Outcome::fail(d("no")),
            Outcome::pass(d("cannot delete")),
        );
        assert_eq!(r[1].verdict, Verdict::Fail, "{}", r[1].detail);
        assert!(
            r[1].feedback.is_none(),
            "not the lab's words for a too-wide answer"
        );
        assert_eq!(r[1].earned, 0);
        assert!(
            r[1].detail.contains("once reader-can-get passes"),
            "{}",
            r[1].detail
        );
        let r = rbac(
            &lab,
            Outcome::pass(d("yes")),
            Outcome::pass(d("cannot delete")),
        );
        assert_eq!((r[1].verdict, r[1].earned), (Verdict::Pass, r[1].points));
        // An error of the acting check is not the behaviour either.
        let r = rbac(
            &lab,
            Outcome::error(d("api down")),
            Outcome::pass(d("cannot")),
        );
        assert_eq!(r[1].verdict, Verdict::Fail);
        assert!(r[1].detail.contains("counts once"), "{}", r[1].detail);
        // Too much granted is wrong at any stage.
        let r = rbac(&lab, Outcome::fail(d("no")), Outcome::fail(d("can delete")));
        assert_eq!(
            (r[1].verdict, &r[1].detail),
            (Verdict::Fail, &d("can delete"))
        );
    }
}

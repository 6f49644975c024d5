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
    let target = Offline::load_staged(lab, ws, staged)?;
    let env = Submission { lab, workspace: ws };
    let selected = select(lab, tasks);
    let results = crate::par::pool(&selected, &check_workers(), lane, |(t, c)| {
        let start = Instant::now();
        let o = target.evaluate(env, c);
        CheckResult::new(t, c, o, start.elapsed().as_secs_f64())
    });
    let results = results
        .into_iter()
        .zip(&selected)
        .map(|(r, (t, c))| r.unwrap_or_else(|why| CheckResult::new(t, c, unrun(why), 0.0)))
        .collect();
    Ok(results)
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
    done.into_iter()
        .zip(&selected)
        .map(|(r, (t, c))| {
            r.unwrap_or_else(|| {
                CheckResult::new(t, c, Outcome::error(Detail::Crashed { error: None }), 0.0)
            })
        })
        .collect()
}

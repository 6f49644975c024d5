//! The mutation score of a lab: the mutants `derive` makes from the solution, each graded
//! offline as the learner's final state; a mutant is killed when some check fails on it.
//! A survivor the lab declares equivalent (`equivalentMutants`) is not held against it;
//! every other survivor is a hole in the grading, named by id with what was changed.

use serde::Serialize;

use super::super::check::{CheckResult, Verdict};
use super::super::{grade, workspace};
use super::derive::{Derived, derive};
use super::{Scratch, StageVerdict, final_setups};
use crate::content::lab::Lab;
use crate::error::Result;
use crate::lab::workspace::Stage;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MutationScore {
    pub derived: usize,
    pub killed: usize,
    /// Survivors the lab declares equivalent.
    pub equivalent: usize,
    /// killed / (derived − equivalent), in percent (100 when nothing is left to kill).
    pub percent: f64,
    pub survivors: Vec<Survivor>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Survivor {
    pub id: String,
    /// What the mutant changed.
    pub change: String,
    /// Only because checks could not judge it here (skipped or error): not the content's fault.
    pub environment_only: bool,
}

/// `f` over `items` on up to `par::cores()` threads, results in input order. An item no
/// worker could take (a pids limit: `scope.spawn` panicked there) runs on the calling
/// thread, as does one whose `f` panicked, so that panic is the caller's again.
pub(super) fn in_parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let workers = crate::par::cores().clamp(1, items.len().max(1));
    crate::par::pool(items, &[workers], |_| 0, &f)
        .into_iter()
        .zip(items)
        .map(|(r, item)| r.unwrap_or_else(|_| f(item)))
        .collect()
}

/// The solution's files as laid out (templates rendered).
fn solution_files(lab: &Lab) -> Result<Vec<(String, String)>> {
    let tmp = Scratch::new()?;
    let ws = tmp.0.join(&lab.workspace_name);
    workspace::materialize(lab, Stage::Solution, &ws)?;
    Ok(lab
        .solution
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(ws.join(&f.path)).ok()?;
            Some((f.path.clone(), text))
        })
        .collect())
}

/// One derived mutant graded: the solution with its file replaced, every setup staged.
pub(super) fn grade_one(lab: &Lab, m: &Derived) -> Result<Vec<CheckResult>> {
    let tmp = Scratch::new()?;
    let ws = tmp.0.join(&lab.workspace_name);
    workspace::materialize(lab, Stage::Solution, &ws)?;
    let path = ws.join(&m.file);
    #[cfg(unix)]
    let mode = {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(&path)
            .map(|m| m.permissions().mode())
            .ok()
    };
    std::fs::write(&path, &m.text)?;
    #[cfg(unix)]
    if let Some(mode) = mode {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))?;
    }
    grade::offline_staged(lab, &ws, &[], &final_setups(lab))
}

/// The mutants kca derives from the lab's solution.
pub(super) fn mutants(lab: &Lab) -> Result<Vec<Derived>> {
    Ok(derive(&solution_files(lab)?))
}

/// Scores the derived `mutants` on their results (`graded`, in the same order); the stage
/// verdict lists each survivor and each declaration that no longer holds.
pub(super) fn score(
    lab: &Lab,
    mutants: &[Derived],
    graded: Vec<Result<Vec<CheckResult>>>,
) -> Result<(MutationScore, StageVerdict)> {
    let mut problems = Vec::new();
    let (mut killed, mut equivalent) = (0, 0);
    let mut survivors = Vec::new();
    for (m, res) in mutants.iter().zip(graded) {
        let res = res?;
        let failing: Vec<&str> = res
            .iter()
            .filter(|r| r.verdict == Verdict::Fail)
            .map(|r| r.id.as_str())
            .collect();
        let declared = lab.equivalent_mutants.iter().any(|e| e.id == m.id);
        match (failing.is_empty(), declared) {
            (false, false) => killed += 1,
            (false, true) => {
                killed += 1;
                problems.push(format!(
                    "{} is declared equivalent, but {} fails on it: remove the declaration",
                    m.id,
                    failing.join(", ")
                ));
            }
            (true, true) => equivalent += 1,
            (true, false) => {
                let environment_only = res
                    .iter()
                    .any(|r| matches!(r.verdict, Verdict::Skipped | Verdict::Error));
                problems.push(format!(
                    "survives: {} ({}); no check fails. Add a check that catches it, or declare \
                     it under equivalentMutants with the reason",
                    m.id, m.change
                ));
                survivors.push(Survivor {
                    id: m.id.clone(),
                    change: m.change.clone(),
                    environment_only,
                });
            }
        }
    }
    for e in &lab.equivalent_mutants {
        if !mutants.iter().any(|m| m.id == e.id) {
            problems.push(format!(
                "equivalentMutants names {}, which kca no longer derives from the solution: \
                 remove it or copy the id `kca lab verify` prints",
                e.id
            ));
        }
    }
    let to_kill = mutants.len() - equivalent;
    let percent = if to_kill == 0 {
        100.0
    } else {
        (killed as f64 * 1000.0 / to_kill as f64).round() / 10.0
    };
    let env_only = !problems.is_empty()
        && problems.len() == survivors.len()
        && survivors.iter().all(|s| s.environment_only);
    let score = MutationScore {
        derived: mutants.len(),
        killed,
        equivalent,
        percent,
        survivors,
    };
    let stage = StageVerdict {
        name: format!(
            "derived mutants: {killed} killed of {} ({} declared equivalent), score {percent} %",
            score.derived, score.equivalent
        ),
        ok: problems.is_empty(),
        environment_only: env_only,
        problems,
        failed: Vec::new(),
        differs: Vec::new(),
    };
    Ok((score, stage))
}

//! The learner's lab progress (`labs.json` in the state store): which labs were started,
//! where their workspaces are, which cluster they use, hints shown, and the last result of
//! every check with when and where it was seen. A lab's score is always computed over all
//! of its tasks from those per-check results, so checking one task never replaces it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::check::{CheckResult, Verdict};
use crate::content::lab::Lab;
use crate::error::Result;
use crate::state::Store;

pub const FILE: &str = "labs.json";

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Progress {
    /// The lab started last: the default of `check`, `hint`.
    pub current: Option<String>,
    pub labs: BTreeMap<String, LabProgress>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LabProgress {
    pub started: String,
    pub workspace: PathBuf,
    /// The folder the workspace was made in when the lab started (`lab reset` refuses a
    /// workspace outside it); absent in records written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<PathBuf>,
    /// How `start` reached the cluster; `offline` when it did not.
    pub target: TargetRecord,
    /// Hints shown so far, per task.
    #[serde(default)]
    pub hints: BTreeMap<String, usize>,
    /// When and where the last `lab check` ran, and on which task if only one.
    #[serde(default)]
    pub last_check: Option<LastRun>,
    /// The last result of each check, by check id.
    #[serde(default)]
    pub checks: BTreeMap<String, CheckRecord>,
    #[serde(default)]
    pub resets: Vec<String>,
    /// Task setups applied (task id → RFC 3339 time), once each; a reset forgets them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub setups: BTreeMap<String, String>,
    /// The task that failed at the last check (`lab hint` follows it); none once it passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TargetRecord {
    /// Graded offline: chosen, or a lab of files and commands only.
    pub offline: bool,
    /// `--offline` was asked for (absent in older records: `offline` stands for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chose_offline: Option<bool>,
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LastRun {
    pub at: String,
    pub target: String,
    /// The one task checked, or none for a check of every task.
    #[serde(default)]
    pub task: Option<String>,
}

/// One check's last result.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CheckRecord {
    pub task: String,
    /// `pass`, `fail`, `error` or `skipped`.
    pub verdict: String,
    pub earned: u32,
    pub points: u32,
    /// When it was last seen (UTC, RFC 3339).
    pub at: String,
    /// `offline` or `live …`.
    pub target: String,
}

/// A lab's standing, over all of its tasks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Standing {
    pub score: u32,
    pub max_score: u32,
    /// Tasks whose every check passed at its last run.
    pub tasks_passed: Vec<String>,
    /// Tasks with a check still to pass (failed, an error, never run, or skipped on a
    /// cluster): what is left, offline learners' cluster-only checks aside.
    #[serde(skip)]
    pub tasks_open: Vec<String>,
    pub tasks_total: usize,
    /// Checks never run yet.
    pub unchecked: usize,
    pub finished: bool,
    /// What offline grading can judge: the checks it last left `skipped` need a cluster
    /// (or a tool), and the lab is finished offline when every other check passed.
    pub offline: OfflineStanding,
}

/// A lab's standing over the checks offline grading can judge (issue 15: a check only a
/// live cluster can judge must not make an offline learner's lab unfinishable).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OfflineStanding {
    pub score: u32,
    pub max_score: u32,
    /// Checks whose last offline run was `skipped`: only a cluster (or a tool) can judge them.
    pub need_cluster: usize,
    pub finished: bool,
}

impl Standing {
    /// The first task still to do (see `tasks_open`).
    pub fn next<'a>(&self, lab: &'a Lab) -> Option<&'a crate::content::lab::Task> {
        lab.tasks.iter().find(|t| self.tasks_open.contains(&t.id))
    }

    /// Finished live, or finished over everything offline can judge.
    pub fn done(&self) -> bool {
        self.finished || self.offline.finished
    }
}

impl LabProgress {
    /// Records the results of one `lab check` run, keeping other checks' results.
    pub fn record<'a>(
        &mut self,
        results: impl IntoIterator<Item = &'a CheckResult>,
        target: &str,
        task: Option<&str>,
    ) {
        let at = now();
        for r in results {
            self.checks.insert(
                r.id.clone(),
                CheckRecord {
                    task: r.task.clone(),
                    verdict: verdict_word(r.verdict).to_string(),
                    earned: r.earned,
                    points: r.points,
                    at: at.clone(),
                    target: target.to_string(),
                },
            );
        }
        self.last_check = Some(LastRun {
            at,
            target: target.to_string(),
            task: task.map(str::to_string),
        });
    }

    /// The score over all of `lab`'s tasks: a check never run counts 0 of its points.
    pub fn standing(&self, lab: &Lab) -> Standing {
        let mut score = 0;
        let mut unchecked = 0;
        let mut tasks_passed = Vec::new();
        let mut off = OfflineStanding::default();
        let mut off_open = 0;
        let mut tasks_open = Vec::new();
        for t in &lab.tasks {
            let mut all = !t.checks.is_empty();
            let open_before = off_open;
            for c in &t.checks {
                match self.checks.get(&c.id) {
                    Some(r) if r.verdict == "skipped" && r.target == "offline" => {
                        off.need_cluster += 1;
                        all = false;
                    }
                    Some(r) => {
                        score += r.earned.min(c.points);
                        all &= r.verdict == "pass";
                        off.score += r.earned.min(c.points);
                        off.max_score += c.points;
                        off_open += usize::from(r.verdict != "pass");
                    }
                    None => {
                        unchecked += 1;
                        all = false;
                        off.max_score += c.points;
                        off_open += 1;
                    }
                }
            }
            if all {
                tasks_passed.push(t.id.clone());
            }
            if off_open > open_before {
                tasks_open.push(t.id.clone());
            }
        }
        let finished = !lab.tasks.is_empty() && tasks_passed.len() == lab.tasks.len();
        off.finished = finished || (off.max_score > 0 && off_open == 0 && off.need_cluster > 0);
        Standing {
            score,
            max_score: lab.max_points(),
            tasks_passed,
            tasks_open,
            tasks_total: lab.tasks.len(),
            unchecked,
            finished,
            offline: off,
        }
    }

    /// Whether the learner chose to work without a cluster for this lab.
    pub fn chose_offline(&self) -> bool {
        self.target.chose_offline.unwrap_or(self.target.offline)
    }

    /// Whether any check has been run.
    pub fn checked(&self) -> bool {
        !self.checks.is_empty()
    }
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "pass",
        Verdict::Fail => "fail",
        Verdict::Error => "error",
        Verdict::Skipped => "skipped",
    }
}

pub fn now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

pub fn read(store: &Store) -> Result<Progress> {
    store.read_checked::<Progress>(FILE)
}

pub fn update<R>(store: &Store, f: impl FnOnce(&mut Progress) -> R) -> Result<R> {
    store.update_checked::<Progress, R>(FILE, f)
}

/// Most hints counted as shown for one task: far more than a task has.
const MAX_HINTS: usize = 1000;
/// Most points a check can have (`content::lab::checks`: `points` 0–100).
const MAX_CHECK_POINTS: u32 = 100;

impl crate::state::Repair for Progress {
    /// Puts every number back in the range kca writes (points of a check at most 100,
    /// `earned` at most `points`, hints shown per task at most [`MAX_HINTS`]); the lab's
    /// own hint count bounds them again where they are used. Returns what was changed.
    fn repair(&mut self) -> Vec<String> {
        let mut fixed = Vec::new();
        for (lab, e) in &mut self.labs {
            for (task, n) in &mut e.hints {
                if *n > MAX_HINTS {
                    fixed.push(format!("{lab}/{task}: hints {n}"));
                    *n = MAX_HINTS;
                }
            }
            for (id, c) in &mut e.checks {
                if c.points > MAX_CHECK_POINTS || c.earned > c.points {
                    fixed.push(format!("{lab}/{id}: earned {} of {}", c.earned, c.points));
                    c.points = c.points.min(MAX_CHECK_POINTS);
                    c.earned = c.earned.min(c.points);
                }
            }
        }
        fixed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::check::{CheckResult, Outcome};

    fn lab() -> Lab {
        let mut lab = crate::lab::report::tests::lab();
        lab.tasks[1].checks[0].id = "b1".into();
        lab
    }

    fn run(lab: &Lab, outcomes: [Outcome; 3], target: &str) -> LabProgress {
        let results: Vec<CheckResult> = lab
            .checks()
            .zip(outcomes)
            .map(|((t, c), o)| CheckResult::new(t, c, o, 0.0))
            .collect();
        let mut e = LabProgress::default();
        e.record(&results, target, None);
        e
    }

    #[test]
    fn a_lab_is_finished_offline_when_every_check_offline_can_judge_passes() {
        let lab = lab();
        let e = run(
            &lab,
            [
                Outcome::pass(Default::default()),
                Outcome::pass(Default::default()),
                Outcome::skipped(Default::default()),
            ],
            "offline",
        );
        let s = e.standing(&lab);
        assert!(!s.finished, "the live standing is apart");
        assert!(s.offline.finished && s.done());
        assert_eq!(
            (s.offline.score, s.offline.max_score, s.offline.need_cluster),
            (5, 5, 1)
        );
        assert!(s.next(&lab).is_none(), "nothing left to do offline");
        // A failing check offline can judge: not finished offline.
        let e = run(
            &lab,
            [
                Outcome::pass(Default::default()),
                Outcome::fail(Default::default()),
                Outcome::skipped(Default::default()),
            ],
            "offline",
        );
        let s = e.standing(&lab);
        assert!(!s.offline.finished);
        assert_eq!(s.next(&lab).map(|t| t.id.as_str()), Some("a"));
        // Skipped on a cluster is not an offline learner's pass.
        let e = run(
            &lab,
            [
                Outcome::pass(Default::default()),
                Outcome::pass(Default::default()),
                Outcome::skipped(Default::default()),
            ],
            "live kind-kca",
        );
        let s = e.standing(&lab);
        assert!(!s.done());
        assert_eq!(s.offline.need_cluster, 0);
    }
}

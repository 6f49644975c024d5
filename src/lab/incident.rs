//! An incident: a task whose `setup` kca staged when every earlier task passed. What the
//! learner is told about it, in their language, wherever they look (`lab check`, `lab
//! task`, `lab watch`): which task began, what kca changed, and which checks that had
//! passed now fail because of it. Builds lines; `ui` prints them.

use std::collections::BTreeMap;

use super::check::{CheckResult, Verdict};
use crate::content::lab::{Lab, SetupAction, Task};
use crate::settings::Lang;
use crate::ui::tr_s;

/// A staged setup whose task has not passed yet.
#[derive(Debug, Clone)]
pub struct Incident<'a> {
    pub task: &'a Task,
    /// 1-based position of the task in the lab.
    pub number: usize,
    /// Staged by the run being shown (a first notice, not a reminder).
    pub fresh: bool,
    /// Checks of earlier tasks that fail now (task number, check id).
    pub affected: Vec<(usize, String)>,
}

/// A check's last verdict, from a run or from the learner's progress.
#[derive(Debug, Clone, Copy)]
pub struct Seen<'a> {
    pub task: &'a str,
    pub id: &'a str,
    pub verdict: Verdict,
}

impl<'a> From<&'a CheckResult> for Seen<'a> {
    fn from(r: &'a CheckResult) -> Self {
        Seen {
            task: &r.task,
            id: &r.id,
            verdict: r.verdict,
        }
    }
}

/// The last verdicts progress holds (`lab task`, which grades nothing).
pub fn recorded(e: &super::progress::LabProgress) -> Vec<Seen<'_>> {
    e.checks
        .iter()
        .map(|(id, r)| Seen {
            task: &r.task,
            id,
            verdict: match r.verdict.as_str() {
                "pass" => Verdict::Pass,
                "fail" => Verdict::Fail,
                "error" => Verdict::Error,
                _ => Verdict::Skipped,
            },
        })
        .collect()
}

/// 1-based position of a task in its lab (0 when the lab has no such task).
pub fn number(lab: &Lab, task: &str) -> usize {
    lab.tasks
        .iter()
        .position(|t| t.id == task)
        .map_or(0, |i| i + 1)
}

/// The incidents in effect: setups recorded in `setups` whose task has a check that did
/// not pass in `results` (or that were just staged, `fresh`). With no results for a task
/// (a `--task` check of another task), a staged setup stays in effect.
pub fn in_effect<'a>(
    lab: &'a Lab,
    setups: &BTreeMap<String, String>,
    fresh: &[String],
    results: &[Seen<'_>],
) -> Vec<Incident<'a>> {
    let mut out = Vec::new();
    for (i, t) in lab.tasks.iter().enumerate() {
        if t.setup.is_empty() || !setups.contains_key(&t.id) {
            continue;
        }
        let mine: Vec<&Seen> = results.iter().filter(|r| r.task == t.id).collect();
        let passed = !mine.is_empty() && mine.iter().all(|r| r.verdict == Verdict::Pass);
        if passed {
            continue;
        }
        let affected = results
            .iter()
            .filter(|r| r.verdict == Verdict::Fail || r.verdict == Verdict::Error)
            .map(|r| (number(lab, r.task), r.id.to_string()))
            .filter(|(n, _)| *n > 0 && *n <= i)
            .collect();
        out.push(Incident {
            task: t,
            number: i + 1,
            fresh: fresh.contains(&t.id),
            affected,
        });
    }
    out
}

/// What one setup step changed, as the learner reads it.
pub fn change(lang: Lang, a: &SetupAction) -> String {
    match a {
        SetupAction::Apply { objects, file } => {
            let names: Vec<String> = objects
                .iter()
                .filter_map(crate::target::ObjRef::of)
                .map(|r| r.to_string())
                .collect();
            let what = if names.is_empty() {
                file.clone()
            } else {
                names.join(", ")
            };
            tr_s(
                lang,
                format!("{what} を適用しました"),
                format!("applied {what}"),
            )
        }
        SetupAction::Delete(sel) => tr_s(
            lang,
            format!("{} を削除しました", sel.obj_ref()),
            format!("deleted {}", sel.obj_ref()),
        ),
        SetupAction::Patch { target, .. } => tr_s(
            lang,
            format!("{} を書き換えました", target.obj_ref()),
            format!("changed {}", target.obj_ref()),
        ),
        SetupAction::Revoke {
            user,
            verb,
            resource,
            ..
        } => tr_s(
            lang,
            format!("{user} から {resource} の {verb} 権限を与えていたロールを削除しました"),
            format!("deleted the roles that let {user} {verb} {resource}"),
        ),
    }
}

/// The notice: the task that began, what changed, why earlier checks fail. Plain text
/// lines (the caller wraps and paints them, and says where the task is read).
pub fn notice(lang: Lang, inc: &Incident<'_>) -> Vec<String> {
    let title = inc.task.title.get(lang);
    let mut out = vec![if inc.fresh {
        tr_s(
            lang,
            format!(
                "⚠ タスク {} が始まりました: 事故が起きました — {title}",
                inc.number
            ),
            format!(
                "⚠ task {} begins: an incident has happened — {title}",
                inc.number
            ),
        )
    } else {
        tr_s(
            lang,
            format!("⚠ 事故対応中 (タスク {}) — {title}", inc.number),
            format!("⚠ incident in progress (task {}) — {title}", inc.number),
        )
    }];
    let changes: Vec<String> = inc.task.setup.iter().map(|a| change(lang, a)).collect();
    out.push(tr_s(
        lang,
        format!(
            "  kca がラボのオブジェクトを変えました: {}。",
            changes.join("、")
        ),
        format!("  kca changed the lab's objects: {}.", changes.join("; ")),
    ));
    if !inc.affected.is_empty() {
        // Per task: "タスク 5 (3 個)、タスク 6 (3 個)".
        let mut per: Vec<(usize, usize)> = Vec::new();
        for (n, _) in &inc.affected {
            match per.iter_mut().find(|(m, _)| m == n) {
                Some((_, k)) => *k += 1,
                None => per.push((*n, 1)),
            }
        }
        per.sort();
        let (ja, en): (Vec<String>, Vec<String>) = per
            .iter()
            .map(|(n, k)| (format!("タスク {n} ({k} 個)"), format!("task {n} ({k})")))
            .unzip();
        out.push(tr_s(
            lang,
            format!(
                "  合格していた{}のチェックが今は通りません。あなたの編集ではなくこの変更のためで、原因を見つけて直すのがタスク {} です。",
                ja.join("、"),
                inc.number
            ),
            format!(
                "  checks of {} passed before and fail now because of this change, not your edits: finding and fixing the cause is task {}.",
                en.join(", "),
                inc.number
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::lab::ObjSel;

    #[test]
    fn names_what_changed_and_the_checks_it_broke() {
        use crate::lab::setup::tests::task;
        let lab = Lab {
            tasks: vec![
                task("grant", vec![]),
                task(
                    "lost",
                    vec![SetupAction::Delete(ObjSel {
                        api_version: "rbac.authorization.k8s.io/v1".into(),
                        kind: "ClusterRole".into(),
                        name: "gen".into(),
                        namespace: None,
                    })],
                ),
            ],
            ..Default::default()
        };
        let fail = |task: &str, id: &str| CheckResult {
            task: task.into(),
            id: id.into(),
            kind: "can-i",
            verdict: Verdict::Fail,
            points: 1,
            earned: 0,
            detail: Default::default(),
            detail_kind: "none",
            feedback: None,
            seconds: 0.0,
        };
        let setups = BTreeMap::from([("lost".to_string(), "t".to_string())]);
        let results = [fail("grant", "can-create"), fail("lost", "recorded")];
        let seen: Vec<Seen> = results.iter().map(Seen::from).collect();
        let inc = in_effect(&lab, &setups, &["lost".into()], &seen);
        assert_eq!(inc.len(), 1);
        assert_eq!(inc[0].affected, [(1, "can-create".to_string())]);
        let text = notice(Lang::Ja, &inc[0]).join("\n");
        assert!(text.contains("タスク 2 が始まりました"), "{text}");
        assert!(text.contains("ClusterRole"), "{text}");
        assert!(text.contains("gen を削除しました"), "{text}");
        assert!(
            text.contains("合格していたタスク 1 (1 個)のチェック"),
            "{text}"
        );
        // Passed: no longer in effect.
        let mut ok = fail("lost", "recorded");
        ok.verdict = Verdict::Pass;
        assert!(in_effect(&lab, &setups, &[], &[Seen::from(&ok)]).is_empty());
    }
}

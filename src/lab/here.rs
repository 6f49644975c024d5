//! Which lab a command is about, following the learner: the lab named on the command
//! line; else the lab whose workspace holds the current folder (a learner in
//! `~/kca-mutate` means kca-mutate, whatever they started last); else the lab started last.

use std::path::{Path, PathBuf};

use super::progress::{LabProgress, Progress};
use crate::settings::Lang;
use crate::ui::tr;

/// The id of the started lab whose workspace is `dir` or one of its parents (the deepest,
/// when workspaces nest).
pub fn lab_of_folder(p: &Progress, dir: &Path) -> Option<String> {
    let dir = canonical(dir);
    p.labs
        .iter()
        .filter(|(_, e)| !e.workspace.as_os_str().is_empty())
        .map(|(id, e)| (id, canonical(&e.workspace)))
        .filter(|(_, ws)| dir.starts_with(ws))
        .max_by_key(|(_, ws)| ws.components().count())
        .map(|(id, _)| id.clone())
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// The lab a command means when none is named: the workspace we are in, else the one
/// started last.
pub fn default_lab(p: &Progress) -> Option<String> {
    std::env::current_dir()
        .ok()
        .and_then(|d| lab_of_folder(p, &d))
        .or_else(|| p.current.clone())
}

/// The id a command is about, or the usage error that says how to start one.
pub fn lab_id(lang: Lang, p: &Progress, named: Option<&str>) -> crate::error::Result<String> {
    if let Some(id) = named {
        return Ok(id.to_string());
    }
    default_lab(p).ok_or_else(|| {
        // Offline stays offline in the command it suggests.
        let off = if prefers_offline(p) { " --offline" } else { "" };
        crate::error::Error::usage(
            tr(lang, "まだラボを始めていません", "no lab started yet"),
            crate::ui::tr_s(
                lang,
                format!("`kca lab start LAB{off}` で始めます(ラボの一覧は `kca lab list`)"),
                format!("start one with `kca lab start LAB{off}` (see `kca lab list`)"),
            ),
        )
    })
}

/// Whether the learner chose to work without a cluster: the lab they are on was started
/// `--offline`. Next steps then keep `--offline` (a learner without a cluster who copies
/// `kca lab start NEXT` would otherwise meet exit 3).
pub fn prefers_offline(p: &Progress) -> bool {
    on(p).is_some_and(LabProgress::chose_offline)
}

/// Whether the lab the learner is on is graded on a cluster (next labs go there too).
pub fn works_live(p: &Progress) -> bool {
    on(p).is_some_and(|e| !e.target.offline)
}

fn on(p: &Progress) -> Option<&LabProgress> {
    default_lab(p)
        .and_then(|id| p.labs.get(&id))
        .or_else(|| p.labs.values().max_by(|a, b| a.started.cmp(&b.started)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folder_names_the_lab_deepest_first() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("a");
        let b = a.join("b");
        std::fs::create_dir_all(b.join("policies")).unwrap();
        let mut p = Progress::default();
        for (id, ws) in [("la", &a), ("lb", &b)] {
            p.labs.insert(
                id.into(),
                LabProgress {
                    workspace: ws.clone(),
                    ..Default::default()
                },
            );
        }
        p.current = Some("la".into());
        assert_eq!(
            lab_of_folder(&p, &b.join("policies")).as_deref(),
            Some("lb")
        );
        assert_eq!(lab_of_folder(&p, &a).as_deref(), Some("la"));
        assert_eq!(lab_of_folder(&p, tmp.path()), None);
    }
}

//! The learner's workspace: where it is, scaffolding starters (tera templates) without
//! overwriting learner files, archiving before a reset, laying out the solution or a mutant
//! for `verify`, and reading the manifests a learner would apply. Files only; no cluster.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde_json::Value;

use crate::content::lab::{Lab, Mutant};
use crate::error::{Error, Result};

/// Where workspaces live: `/root` when kca runs as root (the course's paths), else the
/// learner's home; `override_root` (flag or `KCA_WORKSPACE_ROOT`) beats both.
pub fn root(home: &Path, override_root: Option<&Path>) -> PathBuf {
    if let Some(r) = override_root {
        return r.to_path_buf();
    }
    if running_as_root() {
        PathBuf::from("/root")
    } else {
        home.to_path_buf()
    }
}

fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    // The owner of /proc/self is the process's effective user; no libc needed.
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

pub fn path_for(lab: &Lab, root: &Path) -> PathBuf {
    root.join(&lab.workspace_name)
}

/// The lab's folder as an absolute path: commands run in the workspace, so a relative
/// content folder (`--content-dir .`) would point elsewhere from there.
pub fn lab_dir(lab: &Lab) -> PathBuf {
    std::path::absolute(&lab.dir).unwrap_or_else(|_| lab.dir.clone())
}

/// Variables every template sees: `lab`, `workspace`, `lab_dir`, and the lab's `vars`.
pub fn template_context(lab: &Lab, workspace: &Path) -> tera::Context {
    let mut ctx = tera::Context::new();
    ctx.insert("lab", &lab.id);
    ctx.insert("workspace", &workspace.display().to_string());
    ctx.insert("lab_dir", &lab_dir(lab).display().to_string());
    for (k, v) in &lab.vars {
        ctx.insert(k, v);
    }
    ctx
}

/// The text of `<section>/<path>`, rendered when it is a template.
pub fn render(lab: &Lab, src: &Path, template: bool, ctx: &tera::Context) -> Result<String> {
    let text = crate::input::read_text(src).map_err(|e| {
        let hint = e.hint_said();
        Error::usage(
            e.said(),
            crate::error::msg(
                format!(
                    "{}。そのあとラボ `{}` に `kca validate` を実行します",
                    hint.ja, lab.id
                ),
                format!("{}; then run `kca validate` on lab `{}`", hint.en, lab.id),
            ),
        )
    })?;
    if !template {
        return Ok(text);
    }
    super::template::render(&text, ctx).map_err(|e| {
        let p = crate::escape::path(src);
        Error::usage_with(
            crate::error::msg(
                format!("{p} をテンプレートから作れません"),
                format!("{p} does not render"),
            ),
            crate::error::msg(
                format!(
                    "ラボ `{}` のテンプレートを直して `kca validate` を実行します",
                    lab.id
                ),
                format!(
                    "fix the template of lab `{}` and run `kca validate`",
                    lab.id
                ),
            ),
            anyhow::Error::msg(e),
        )
    })
}

/// What scaffolding did.
#[derive(Debug, Default)]
pub struct Scaffold {
    pub written: Vec<String>,
    /// Starter files the learner already has: left as they are.
    pub kept: Vec<String>,
}

/// kca's mark in a workspace it made: the lab's id on the first line. `lab reset` empties
/// only a folder that carries it (a progress file naming another folder is refused).
pub const MARKER: &str = ".kca-workspace";

/// Writes the marker (start and reset do; an older workspace gets it at its next start).
pub fn mark(lab: &Lab, ws: &Path) -> Result<()> {
    let m = ws.join(MARKER);
    if m.symlink_metadata().is_ok() {
        return Ok(());
    }
    std::fs::write(
        &m,
        format!(
            "{}\n# kca made this folder for the lab above; `kca lab reset` restores it.\n",
            lab.id
        ),
    )
    .with_context(|| format!("cannot write {}", m.display()))?;
    Ok(())
}

/// The lab a workspace's marker names, if it has one (read as a capped regular file).
pub fn marked_for(ws: &Path) -> Option<String> {
    let text = crate::input::read_within(ws, Path::new(MARKER)).ok()?;
    let text = String::from_utf8_lossy(&text);
    text.lines().next().map(|l| l.trim().to_string())
}

/// Writes the starter files that are not there yet; never overwrites a learner's file.
pub fn scaffold(lab: &Lab, ws: &Path) -> Result<Scaffold> {
    let ctx = template_context(lab, ws);
    let mut out = Scaffold::default();
    for f in &lab.starter {
        let dest = inside(ws, &f.path)?;
        // `symlink_metadata`, not `exists`: a dangling link is "there" too, and writing
        // would go through it.
        if dest.symlink_metadata().is_ok() {
            out.kept.push(f.path.clone());
            continue;
        }
        let text = render(lab, &lab.source("starter", &f.path), f.template, &ctx)?;
        write_file(&dest, &text)?;
        out.written.push(f.path.clone());
    }
    std::fs::create_dir_all(ws).with_context(|| format!("cannot create {}", ws.display()))?;
    mark(lab, ws)?;
    Ok(out)
}

/// `ws/rel`, refused when a symbolic link on the way leads outside the workspace.
fn inside(ws: &Path, rel: &str) -> Result<PathBuf> {
    crate::input::within(ws, Path::new(rel)).map_err(|e| {
        let hint = e.hint_said();
        Error::usage(
            e.said(),
            crate::error::msg(
                format!("{}。そのあと、もう一度コマンドを実行します", hint.ja),
                format!("{}, then run the command again", hint.en),
            ),
        )
    })
}

fn write_file(dest: &Path, text: &str) -> Result<()> {
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(dest, text).with_context(|| format!("cannot write {}", dest.display()))?;
    Ok(())
}

/// Which answer to lay out (for `verify`).
#[derive(Debug, Clone, Copy)]
pub enum Stage<'a> {
    Starter,
    Solution,
    Mutant(&'a Mutant),
}

/// Lays out the starter, the solution over it, or a mutant over the solution into `ws`
/// (which should be empty).
pub fn materialize(lab: &Lab, stage: Stage<'_>, ws: &Path) -> Result<()> {
    materialize_into(lab, stage, ws, ws)
}

/// [`materialize`] into `dest`, with templates rendered for the workspace `ws` (`lab
/// reset` builds the starter aside, then moves it in).
pub fn materialize_into(lab: &Lab, stage: Stage<'_>, ws: &Path, dest: &Path) -> Result<()> {
    let ctx = template_context(lab, ws);
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    for f in &lab.starter {
        files.insert(
            f.path.clone(),
            render(lab, &lab.source("starter", &f.path), f.template, &ctx)?,
        );
    }
    if !matches!(stage, Stage::Starter) {
        for f in &lab.solution {
            files.insert(
                f.path.clone(),
                render(lab, &lab.source("solution", &f.path), f.template, &ctx)?,
            );
        }
    }
    if let Stage::Mutant(m) = stage {
        for f in &m.files {
            let src = lab.dir.join("mutants").join(&m.id).join(&f.path);
            files.insert(f.path.clone(), render(lab, &src, f.template, &ctx)?);
        }
        for e in &m.edits {
            let Some(text) = files.get_mut(&e.path) else {
                return Err(Error::usage(
                    crate::error::msg(
                        format!(
                            "ミュータント `{}` が編集する `{}` は作業フォルダーに置かれません",
                            m.id, e.path
                        ),
                        format!(
                            "mutant `{}` edits `{}`, which is not laid out",
                            m.id, e.path
                        ),
                    ),
                    crate::error::msg(
                        "ラボに `kca validate` を実行します",
                        "run `kca validate` on the lab",
                    ),
                ));
            };
            if !text.contains(&e.find) {
                return Err(Error::usage(
                    crate::error::msg(
                        format!(
                            "ミュータント `{}`: `find` の文字列が `{}` にありません",
                            m.id, e.path
                        ),
                        format!("mutant `{}`: `find` text not in `{}`", m.id, e.path),
                    ),
                    crate::error::msg(
                        "ラボに `kca validate` を実行します",
                        "run `kca validate` on the lab",
                    ),
                ));
            }
            *text = text.replacen(&e.find, &e.replace, 1);
        }
        for r in &m.remove {
            files.remove(r);
        }
    }
    std::fs::create_dir_all(dest).with_context(|| format!("cannot create {}", dest.display()))?;
    for (path, text) in files {
        write_file(&inside(dest, &path)?, &text)?;
    }
    Ok(())
}

/// Copies the whole workspace to `<state>/archive/<lab>/<timestamp>/` and returns that
/// folder. Symlinks are kept as links; nothing is removed here.
pub fn archive(ws: &Path, state_dir: &Path, lab_id: &str) -> Result<PathBuf> {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ").to_string();
    let dest = state_dir.join("archive").join(lab_id).join(stamp);
    archive_with(ws, dest, copy_tree)
}

/// [`archive`] with the copy given (tests inject a copy that fails half-way).
fn archive_with(
    ws: &Path,
    dest: PathBuf,
    copy: impl FnOnce(&Path, &Path) -> std::io::Result<()>,
) -> Result<PathBuf> {
    copy(ws, &dest).map_err(|e| {
        // A partial copy would be taken for an archive: remove it, so a retry starts clean.
        let _ = std::fs::remove_dir_all(&dest);
        let (from, to) = (ws.display(), dest.display());
        Error::environment_with(
            crate::error::msg(
                format!("{from} を {to} に保管できません。作業フォルダーはそのままです"),
                format!("cannot archive {from} to {to}; the workspace was left as it was"),
            ),
            crate::error::msg(
                "空き容量を作るか状態フォルダーを書き込めるようにしてから、`kca lab reset` をもう一度実行します",
                "free space or make the state folder writable, then run `kca lab reset` again",
            ),
            e,
        )
    })?;
    Ok(dest)
}

/// Empties `dir` (its entries, not the folder itself) except the entry named `keep`.
pub fn clear_except(dir: &Path, keep: &std::ffi::OsStr) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_name() == keep {
            continue;
        }
        if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(entry.path())?;
        } else {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

/// Moves every entry of `from` into `to` (same file system: renames).
pub fn move_entries(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        std::fs::rename(entry.path(), to.join(entry.file_name()))?;
    }
    Ok(())
}

/// Copies `from`'s tree into `to` (made if missing); links kept as links.
pub fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let ty = entry.file_type()?;
        let dest = to.join(entry.file_name());
        if ty.is_dir() {
            copy_tree(&entry.path(), &dest)?;
        } else if ty.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &dest)?;
        } else if ty.is_file() {
            std::fs::copy(entry.path(), &dest)?;
        }
        // A FIFO, socket or device is left where it is: copying would block on it or
        // read it forever, and it holds no learner work.
    }
    Ok(())
}

/// Every file under `dir` (links and special files too; not followed), relative, sorted.
pub fn list_files(dir: &Path) -> Vec<PathBuf> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() && depth < 16 => walk(base, &p, out, depth + 1),
                // Special files are listed so that reading them is refused with a reason.
                Ok(t) if !t.is_dir() => {
                    out.push(p.strip_prefix(base).unwrap_or(&p).to_path_buf());
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out, 0);
    out.sort();
    out
}

/// Manifests of the workspace a learner would apply, and why a file could not be read
/// (`file:line:col: message`, for feedback rather than a crash).
#[derive(Debug, Default)]
pub struct Manifests {
    pub objects: Vec<Value>,
    pub problems: Vec<FileProblem>,
    /// The file that took the workspace over what one run grades (bytes or values of
    /// all its files together), and why: the object set is incomplete, so checks on it
    /// are an `error` naming that file. No file after it is read.
    pub over_budget: Option<crate::lab::detail::Detail>,
}

/// A workspace file that could not be read: its path in the workspace (which checks it
/// blocks: `Offline`) and its problem lines (`file:line:col: message`, escaped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileProblem {
    pub path: std::path::PathBuf,
    pub lines: Vec<String>,
}

/// The problem lines of `problems`, in order (what a blocked check shows).
pub fn problem_lines<'a>(problems: impl IntoIterator<Item = &'a FileProblem>) -> Vec<String> {
    problems.into_iter().flat_map(|p| p.lines.clone()).collect()
}

/// The YAML a workspace's files may hold all together in one run: four files at the
/// per-file cap (`input`), so that memory stays a small multiple of this however many
/// files a workspace holds.
pub const MAX_WORKSPACE_BYTES: usize = 32 << 20;

/// A fresh allowance for one workspace's files: [`MAX_WORKSPACE_BYTES`] and the run's
/// budget of values, apart from the run's own (kca's content, another submission).
pub fn allowance() -> crate::yaml::Allowance {
    crate::alloc::return_freed_memory_at_once();
    crate::yaml::Allowance::new(MAX_WORKSPACE_BYTES, crate::yaml::MAX_RUN_NODES)
}

pub fn manifests(lab: &Lab, ws: &Path) -> Manifests {
    manifests_where(lab, ws, |_| true)
}

/// The manifests of the workspace files `keep` selects (given each file's full path).
pub fn manifests_where(lab: &Lab, ws: &Path, keep: impl Fn(&Path) -> bool) -> Manifests {
    let mut out = Manifests::default();
    let mut allowance = allowance();
    for rel in list_files(ws) {
        if !keep(&ws.join(&rel)) {
            continue;
        }
        let name = rel.to_string_lossy();
        if !matches!(
            rel.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml")
        ) {
            continue;
        }
        let applied = lab.apply.is_empty()
            || lab
                .apply
                .iter()
                .any(|a| rel == Path::new(a) || rel.starts_with(a));
        if !applied {
            continue;
        }
        let text = match crate::input::read_within(ws, &rel) {
            // UTF-8 (nearly always) becomes the text without a copy of the file.
            Ok(bytes) => String::from_utf8(bytes)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            Err(e) => {
                out.problems.push(FileProblem {
                    path: rel.clone(),
                    lines: vec![crate::escape::escape(&e.to_string()).into_owned()],
                });
                continue;
            }
        };
        {
            match allowance.parse_json_stream(&text) {
                Err(e) if e.over_budget => {
                    out.over_budget = Some(over_budget(&name, &e));
                    break;
                }
                Ok(docs) => out.objects.extend(
                    docs.into_iter()
                        .flat_map(|d| match d {
                            // `kind: List` files are applied item by item, as kubectl does.
                            Value::Object(ref m)
                                if m.get("kind").and_then(Value::as_str) == Some("List") =>
                            {
                                m.get("items")
                                    .and_then(Value::as_array)
                                    .cloned()
                                    .unwrap_or_default()
                            }
                            d => vec![d],
                        })
                        .filter(|d| d.get("kind").is_some()),
                ),
                Err(e) => out.problems.push(FileProblem {
                    path: rel.clone(),
                    lines: crate::lab::detail::Detail::not_yaml(&name, &text, &e).file_problems(),
                }),
            }
        }
    }
    out
}

/// The verdict for a workspace whose file `name` went over what one run grades.
fn over_budget(name: &str, e: &crate::yaml::YamlError) -> crate::lab::detail::Detail {
    let esc = |t: &str| crate::escape::escape(t).into_owned();
    crate::lab::detail::Detail::WorkspaceOverBudget {
        path: esc(name),
        at: e.pos.to_string(),
        message: esc(&e.message),
    }
}

/// The lab's fixture objects, each labelled as owned by the lab.
pub fn fixtures(lab: &Lab) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for f in &lab.fixtures {
        let path = lab.dir.join(f);
        let text = crate::input::read_text(&path).map_err(|e| {
            Error::usage_with(
                crate::error::msg(
                    format!("ラボ `{}` のフィクスチャーを読めません", lab.id),
                    format!("cannot read a fixture of lab `{}`", lab.id),
                ),
                e.hint_said(),
                e,
            )
        })?;
        let docs = crate::yaml::parse_json_stream(&text).map_err(|e| {
            Error::usage(
                crate::error::msg(
                    format!("フィクスチャー {}:{e}", path.display()),
                    format!("fixture {}:{e}", path.display()),
                ),
                crate::error::msg(
                    "ラボに `kca validate` を実行します",
                    "run `kca validate` on the lab",
                ),
            )
        })?;
        for mut d in docs {
            label_owned(&mut d, lab);
            out.push(d);
        }
    }
    Ok(out)
}

/// Adds the lab's ownership labels to an object.
pub fn label_owned(obj: &mut Value, lab: &Lab) {
    let Some(meta) = obj
        .as_object_mut()
        .map(|o| {
            o.entry("metadata")
                .or_insert_with(|| Value::Object(Default::default()))
        })
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let labels = meta
        .entry("labels")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Some(l) = labels.as_object_mut() {
        for (k, v) in lab.owner_labels() {
            l.insert(k.to_string(), Value::String(v.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lab_in(dir: &Path) -> Lab {
        Lab {
            id: "l".into(),
            title: crate::content::Text::plain("t"),
            dir: dir.to_path_buf(),
            workspace_name: "l".into(),
            ..Default::default()
        }
    }

    #[test]
    fn start_does_not_write_through_a_dangling_link() {
        let tmp = tempfile::tempdir().unwrap();
        let mut lab = lab_in(&tmp.path().join("lab"));
        std::fs::create_dir_all(tmp.path().join("lab/starter")).unwrap();
        std::fs::write(tmp.path().join("lab/starter/policy.yaml"), "kind: X\n").unwrap();
        lab.starter.push(crate::content::lab::FileRef {
            path: "policy.yaml".into(),
            template: false,
        });
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let target = tmp.path().join("outside.yaml");
        std::os::unix::fs::symlink(&target, ws.join("policy.yaml")).unwrap();
        let e = scaffold(&lab, &ws).unwrap_err().to_string();
        assert!(e.contains("leads outside the workspace"), "{e}");
        assert!(!target.exists(), "written through the link");
    }

    #[test]
    fn manifests_refuse_links_out_of_the_workspace_and_special_files() {
        let tmp = tempfile::tempdir().unwrap();
        let lab = lab_in(&tmp.path().join("lab"));
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(
            tmp.path().join("secret.yaml"),
            "kind: Secret\nmetadata: {name: SECRET-NAME-xyz}\n",
        )
        .unwrap();
        std::os::unix::fs::symlink(tmp.path().join("secret.yaml"), ws.join("policy.yaml")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", ws.join("zero.yaml")).unwrap();
        let fifo =
            std::ffi::CString::new(ws.join("pipe.yaml").as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let start = std::time::Instant::now();
        let m = manifests(&lab, &ws);
        assert!(start.elapsed() < std::time::Duration::from_secs(2));
        assert!(m.objects.is_empty(), "{:?}", m.objects);
        let all = problem_lines(&m.problems).join("\n");
        assert!(!all.contains("SECRET"), "{all}");
        assert!(
            all.contains("policy.yaml leads outside the workspace"),
            "{all}"
        );
        assert!(
            all.contains("zero.yaml leads outside the workspace"),
            "{all}"
        );
        assert!(all.contains("named pipe"), "{all}");
        // Archiving before a reset does not block on the FIFO either.
        archive(&ws, &tmp.path().join("state"), "l").unwrap();
    }

    #[test]
    fn lab_dir_is_absolute_even_from_a_relative_content_folder() {
        let lab = lab_in(Path::new("labs/l"));
        let ctx = template_context(&lab, Path::new("/w"));
        let dir = ctx
            .get("lab_dir")
            .and_then(|v| v.as_str())
            .unwrap()
            .to_string();
        assert!(
            Path::new(&dir).is_absolute() && dir.ends_with("labs/l"),
            "{dir}"
        );
    }

    #[test]
    fn a_failed_archive_removes_its_partial_copy() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join("a.yaml"), "x").unwrap();
        let dest = tmp.path().join("state/archive/l/1");
        let half = |from: &Path, to: &Path| {
            copy_tree(from, to)?;
            Err(std::io::Error::other("no space left on device"))
        };
        let e = archive_with(&ws, dest.clone(), half).unwrap_err();
        assert!(e.to_string().contains("left as it was"), "{e}");
        assert!(!dest.exists(), "a partial archive was left behind");
        assert!(ws.join("a.yaml").is_file());
    }

    #[test]
    fn archive_keeps_every_file_and_link() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(ws.join("a/b")).unwrap();
        std::fs::write(ws.join("a/b/c.yaml"), "x").unwrap();
        std::fs::write(ws.join("notes.txt"), "mine").unwrap();
        std::os::unix::fs::symlink("notes.txt", ws.join("link")).unwrap();
        let dest = archive(&ws, &tmp.path().join("state"), "demo").unwrap();
        assert_eq!(list_files(&dest), list_files(&ws));
        assert_eq!(
            std::fs::read_to_string(dest.join("notes.txt")).unwrap(),
            "mine"
        );
        assert!(
            std::fs::symlink_metadata(dest.join("link"))
                .unwrap()
                .is_symlink()
        );
    }
}

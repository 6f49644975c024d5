//! The kustomize render a grader reads: `kubectl kustomize DIR` run in the workspace,
//! parsed, and made once per content. The key is the relative path and the bytes of every
//! file below the first folder of `DIR` (a base next to its overlays), so the checks of a
//! variant share one render, and so do variants whose trees are equal — unless the tree
//! may read something outside itself (a link, a `resources` entry that leaves the folder
//! or does not exist here, such as a remote base): then the workspace is part of the key.
//! One render at a time per key: checks that ask at once wait for the first. Failures are
//! kept only for the workspace that met them (kustomize names its paths in the message).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::Value;

use super::Place;

const RENDER_TIMEOUT: Duration = Duration::from_secs(60);
/// Renders kept at once (each at most `exec::DEFAULT_CAP` of text); a full cache starts over.
const KEPT: usize = 16;
/// Entries of a tree looked at for the key; a larger tree is keyed per workspace.
const TREE_BUDGET: usize = 4096;

#[derive(Debug, Clone)]
pub(super) enum RenderError {
    NoKubectl,
    Failed(String),
}

/// A finished render, and the workspace it was made in.
struct Done {
    result: Result<Arc<Vec<Value>>, RenderError>,
    cwd: PathBuf,
}

type Slot = Arc<Mutex<Option<Done>>>;

fn cache() -> &'static Mutex<HashMap<u128, Slot>> {
    static CACHE: OnceLock<Mutex<HashMap<u128, Slot>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The kustomize render of `dir` (relative to the workspace `at.cwd`), parsed.
pub(super) fn render(at: &Place, dir: &Path) -> Result<Vec<Value>, RenderError> {
    let slot = {
        let mut map = cache().lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= KEPT {
            map.clear();
        }
        map.entry(key(at, dir)).or_default().clone()
    };
    let mut done = slot.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(d) = done.as_ref() {
        let shared = d.result.is_ok();
        if shared || d.cwd == at.cwd {
            return d
                .result
                .as_ref()
                .map(|docs| docs.to_vec())
                .map_err(Clone::clone);
        }
    }
    let (result, keep) = make(at, dir);
    let out = result.as_ref().map(|d| d.to_vec()).map_err(Clone::clone);
    if keep {
        *done = Some(Done {
            result,
            cwd: at.cwd.clone(),
        });
    }
    out
}

/// Runs `kubectl kustomize` and parses its output; `keep` is false for a failure that may
/// not happen again (kubectl missing or not started, or out of time).
fn make(at: &Place, dir: &Path) -> (Result<Arc<Vec<Value>>, RenderError>, bool) {
    let mut cmd = at.command("kubectl");
    cmd.arg("kustomize").arg(dir);
    let done = match crate::exec::run(crate::exec::Job::new(cmd, RENDER_TIMEOUT)) {
        Ok(d) => d,
        // Not kept: kubectl may be installed while `lab watch` runs.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return (Err(RenderError::NoKubectl), false);
        }
        Err(e) => return (Err(RenderError::Failed(e.to_string())), false),
    };
    if done.code() != Some(0) {
        let failed = RenderError::Failed(format!(
            "kubectl kustomize {} ({}): {}",
            dir.display(),
            done.describe(),
            done.stderr.text().trim()
        ));
        return (Err(failed), done.end != crate::exec::End::TimedOut);
    }
    if done.stdout.truncated() {
        // Half a render would be graded as if it were the whole one.
        let note = done.truncation_note();
        let failed = RenderError::Failed(format!(
            "kubectl kustomize {}: the render is too large{note}",
            dir.display()
        ));
        return (Err(failed), true);
    }
    let parsed = crate::yaml::parse_json_stream(&done.stdout.text())
        .map(Arc::new)
        .map_err(|e| RenderError::Failed(e.to_string()));
    (parsed, true)
}

/// 128 bits over `dir`, every file below its first folder (relative path and bytes) and,
/// when that tree is not sealed, the workspace; seeded per process.
fn key(at: &Place, dir: &Path) -> u128 {
    static SEEDS: OnceLock<[foldhash::quality::RandomState; 2]> = OnceLock::new();
    let seeds = SEEDS.get_or_init(Default::default);
    let mut h = [seeds[0].build_hasher(), seeds[1].build_hasher()];
    let mut feed = |bytes: &[u8]| {
        for x in h.iter_mut() {
            x.write_usize(bytes.len());
            x.write(bytes);
        }
    };
    let root: PathBuf = dir.components().take(1).collect();
    let mut tree = Tree {
        files: Vec::new(),
        whole: true,
    };
    walk(at, &root, &mut tree, &mut TREE_BUDGET.clone());
    feed(dir.as_os_str().as_encoded_bytes());
    for f in &tree.files {
        feed(f.as_os_str().as_encoded_bytes());
        feed(&std::fs::read(at.at(f)).unwrap_or_default());
    }
    if !(tree.whole && sealed(at, &root, &tree.files)) {
        feed(b"\0workspace");
        feed(at.cwd.as_os_str().as_encoded_bytes());
    }
    let [a, b] = h;
    (u128::from(a.finish()) << 64) | u128::from(b.finish())
}

struct Tree {
    /// Regular files, relative to the workspace, in a stable order.
    files: Vec<PathBuf>,
    /// False when the walk met a link or a special file, or stopped at its budget.
    whole: bool,
}

fn walk(at: &Place, dir: &Path, tree: &mut Tree, budget: &mut usize) {
    let Ok(rd) = std::fs::read_dir(at.at(dir)) else {
        return;
    };
    let mut names: Vec<_> = rd.filter_map(|e| e.ok().map(|e| e.file_name())).collect();
    names.sort();
    for name in names {
        if *budget == 0 {
            tree.whole = false;
            return;
        }
        *budget -= 1;
        let rel = dir.join(name);
        match std::fs::symlink_metadata(at.at(&rel)) {
            Ok(m) if m.is_dir() => walk(at, &rel, tree, budget),
            Ok(m) if m.is_file() => tree.files.push(rel),
            _ => tree.whole = false,
        }
    }
}

/// The fields of a kustomization that name other folders (or files) to build from; what
/// else it reads (patches, generator files) kustomize confines to its own folder.
const REFERENCES: [&str; 7] = [
    "resources",
    "bases",
    "components",
    "crds",
    "generators",
    "transformers",
    "validators",
];

/// Whether every kustomization below `root` builds only from what lies below `root` here.
fn sealed(at: &Place, root: &Path, files: &[PathBuf]) -> bool {
    let kustomizations = files.iter().filter(|f| {
        f.file_name().is_some_and(|n| {
            n == "kustomization.yaml" || n == "kustomization.yml" || n == "Kustomization"
        })
    });
    for f in kustomizations {
        let Ok(text) = std::fs::read_to_string(at.at(f)) else {
            return false;
        };
        let Ok(docs) = crate::yaml::parse_json_stream(&text) else {
            return false;
        };
        let base = f.parent().unwrap_or(Path::new(""));
        for d in &docs {
            if d.get("helmCharts").is_some() || d.get("helmChartInflationGenerator").is_some() {
                return false;
            }
            for field in REFERENCES {
                let Some(list) = d.get(field) else { continue };
                let Some(items) = list.as_array() else {
                    return false;
                };
                for item in items {
                    let Some(s) = item.as_str() else {
                        // An inline generator or transformer object reads nothing here.
                        continue;
                    };
                    if !inside(root, base, s) || !at.at(&base.join(s)).exists() {
                        return false;
                    }
                }
            }
        }
    }
    true
}

/// Whether `reference`, read in the folder `base`, stays below `root` (lexically; links
/// were ruled out by the walk).
fn inside(root: &Path, base: &Path, reference: &str) -> bool {
    if reference.contains("://") || reference.contains('@') || reference.contains('?') {
        return false;
    }
    let Ok(rel) = base.strip_prefix(root) else {
        return false;
    };
    let mut depth = rel.components().count();
    for c in Path::new(reference).components() {
        match c {
            Component::CurDir => {}
            Component::Normal(_) => depth += 1,
            Component::ParentDir if depth > 0 => depth -= 1,
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(dir: &Path) -> Place {
        Place {
            cwd: dir.to_path_buf(),
            env: Vec::new(),
        }
    }

    fn write(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn overlay(dir: &Path, resources: &str) {
        write(
            dir,
            "app/base/kustomization.yaml",
            "resources: [deployment.yaml]\n",
        );
        write(dir, "app/base/deployment.yaml", "kind: Deployment\n");
        write(
            dir,
            "app/overlays/prod/kustomization.yaml",
            &format!("resources: [{resources}]\nnamespace: prod\n"),
        );
    }

    #[test]
    fn equal_trees_in_two_workspaces_share_a_key_and_a_changed_byte_does_not() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        overlay(a.path(), "../../base");
        overlay(b.path(), "../../base");
        let dir = Path::new("app/overlays/prod");
        assert_eq!(key(&place(a.path()), dir), key(&place(b.path()), dir));
        assert_ne!(
            key(&place(a.path()), dir),
            key(&place(a.path()), Path::new("app/base"))
        );
        write(b.path(), "app/base/deployment.yaml", "kind: Deployment \n");
        assert_ne!(key(&place(a.path()), dir), key(&place(b.path()), dir));
    }

    #[test]
    fn a_tree_that_reads_outside_itself_is_keyed_per_workspace() {
        for resources in [
            "../../../elsewhere",
            "github.com/acme/app//base?ref=v1",
            "https://example.com/base.yaml",
            "/etc/base",
            "../../missing",
        ] {
            let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            for d in [a.path(), b.path()] {
                overlay(d, resources);
                write(d, "elsewhere/kustomization.yaml", "resources: []\n");
            }
            let dir = Path::new("app/overlays/prod");
            assert_ne!(
                key(&place(a.path()), dir),
                key(&place(b.path()), dir),
                "{resources}"
            );
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_link_in_the_tree_keys_it_per_workspace() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        for d in [a.path(), b.path()] {
            overlay(d, "../../base");
            std::os::unix::fs::symlink("/etc", d.join("app/base/etc")).unwrap();
        }
        let dir = Path::new("app/overlays/prod");
        assert_ne!(key(&place(a.path()), dir), key(&place(b.path()), dir));
    }

    /// Issue 20: kca-gates ran `kubectl kustomize` once per check of every variant (168
    /// times for one `lab verify`); checks asking at once, in two workspaces holding the
    /// same tree, now wait for one render.
    #[cfg(unix)]
    #[test]
    fn checks_asking_at_once_in_equal_workspaces_get_one_render() {
        use std::os::unix::fs::PermissionsExt;
        let bin = tempfile::tempdir().unwrap();
        let count = bin.path().join("count");
        let fake = bin.path().join("kubectl");
        std::fs::write(
            &fake,
            format!(
                "#!/bin/sh\necho run >> '{}'\nsleep 0.2\necho 'kind: Deployment'\n",
                count.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = std::env::join_paths(std::iter::once(bin.path().to_path_buf()).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ))
        .unwrap();
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        // Content of this test's own, so no other test shares its cache entry.
        let unique = format!("../../base\n# {}\n", bin.path().display());
        for d in [a.path(), b.path()] {
            overlay(d, "../../base");
            write(d, "app/overlays/prod/notes.txt", &unique);
        }
        let places: Vec<Place> = [a.path(), b.path()]
            .iter()
            .map(|d| Place {
                cwd: d.to_path_buf(),
                env: vec![("PATH".into(), path.clone())],
            })
            .collect();
        let (dir, places) = (Path::new("app/overlays/prod"), &places);
        let renders: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|i| s.spawn(move || render(&places[i % 2], dir).ok()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(
            renders
                .iter()
                .all(|r| r.as_ref().is_some_and(|d| d.len() == 1))
        );
        assert_eq!(std::fs::read_to_string(&count).unwrap(), "run\n");
    }
}

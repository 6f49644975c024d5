//! Reads manifest paths (`-f PATH…`, policy folders) the way `kubectl apply -f` would: files or
//! folders (recursively *.yaml, *.yml, *.json, in name order), multi-document streams.
//! Problems come back as `file:line:col` diagnostics, all at once; it never prints.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::diag::{Collector, Diagnostic};
use crate::error::{Error, Result};
use crate::yaml::{Pos, Yaml};

const EXTENSIONS: &[&str] = &["yaml", "yml", "json"];

/// The manifest files under `paths`: explicit files as given, folders searched
/// recursively for manifest extensions. A path that does not exist is a usage error.
pub fn files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out, &mut seen)?;
        } else if p.exists() {
            out.push(p.clone());
        } else {
            return Err(Error::usage(
                crate::error::msg(
                    format!("{} というファイルもフォルダーもありません", p.display()),
                    format!("{}: no such file or folder", p.display()),
                ),
                crate::error::msg("パスを確かめてください", "check the path"),
            ));
        }
    }
    Ok(out)
}

/// A folder's entries in name order, each with whether it is a folder to walk into: a
/// real folder, never a link to one (as `find` without `-L` and `kyverno test`'s walk
/// do), so a link cannot make a walk loop or repeat a folder. A link to a file is a file.
pub fn listing(dir: &Path) -> std::io::Result<Vec<(PathBuf, bool)>> {
    let mut entries = std::fs::read_dir(dir)?
        .map(|e| e.and_then(|e| Ok((e.path(), e.file_type()?.is_dir()))))
        .collect::<std::io::Result<Vec<_>>>()?;
    entries.sort();
    Ok(entries)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>, seen: &mut HashSet<PathBuf>) -> Result<()> {
    if !seen.insert(dir.canonicalize()?) {
        return Ok(());
    }
    for (path, is_dir) in listing(dir)? {
        if is_dir {
            walk(&path, out, seen)?;
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| EXTENSIONS.contains(&e))
        {
            out.push(path);
        }
    }
    Ok(())
}

/// Every document of every file, as JSON, after `check` has looked at each parsed
/// document. Any problem in any file makes the whole load an `Error::Content` listing
/// them all.
pub fn load(
    files: &[PathBuf],
    check: impl Fn(&crate::yaml::Node, &mut Collector<'_>) + Sync,
) -> Result<Vec<Value>> {
    load_each(files, check, |o, objects| objects.push(o))
}

/// As [`load`], handing each object to `keep` on the thread that parsed it, which keeps
/// what the caller needs of it (a big set need never be held as JSON).
pub fn load_each<T: Send>(
    files: &[PathBuf],
    check: impl Fn(&crate::yaml::Node, &mut Collector<'_>) + Sync,
    keep: impl Fn(Value, &mut Vec<T>) + Sync,
) -> Result<Vec<T>> {
    let mut objects = Vec::new();
    let mut diags: Vec<Diagnostic> = Vec::new();
    for file in files {
        let bytes = crate::input::read_capped(file, crate::input::MAX_MANIFEST_BYTES)
            .map_err(Error::from)?;
        let Ok(src) = String::from_utf8(bytes) else {
            let mut c = Collector::new(file, "");
            c.error_said(
                Pos { line: 1, col: 1 },
                crate::error::msg(
                    "このファイルは UTF-8 のテキストではありません",
                    "this file is not UTF-8 text",
                ),
                crate::error::msg(
                    "UTF-8 で保存するか、-f から外します",
                    "save it as UTF-8, or leave it out of -f",
                ),
            );
            diags.extend(c.finish());
            continue;
        };
        let mut c = Collector::new(file, &src);
        // Each piece of a large stream is checked and turned into JSON on the thread
        // that parsed it; the pieces come back in file order.
        let pieces = crate::yaml::parse_pieces(
            &src,
            || (Collector::new(file, &src), Vec::new()),
            |(c, objects): &mut (Collector<'_>, Vec<T>), doc| match doc.value {
                Yaml::Null => {}
                Yaml::Map(_) => {
                    check(&doc, c);
                    keep(doc.into_json(), objects);
                }
                _ => c.error_said(
                    doc.pos,
                    crate::error::msg(
                        format!(
                            "Kubernetes のオブジェクトではなく {} があります",
                            doc.type_name()
                        ),
                        format!("expected a Kubernetes object, found {}", doc.type_name()),
                    ),
                    crate::error::msg(
                        "どのドキュメントも apiVersion と kind を持つマッピングにします",
                        "each document must be a mapping with apiVersion and kind",
                    ),
                ),
            },
        );
        match pieces {
            Ok(pieces) => {
                for (found, objs) in pieces {
                    c.absorb(found);
                    objects.extend(objs);
                }
            }
            Err(e) => c.yaml_error(&e),
        }
        diags.extend(c.finish());
    }
    if diags.is_empty() {
        Ok(objects)
    } else {
        Err(Error::Content(diags))
    }
}

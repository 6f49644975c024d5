//! File references of a lab: ids and relative paths, starter/solution/mutant files (which
//! must exist; templates must render), fixtures (which must be Kubernetes objects).

use std::path::{Component, Path};

use super::super::decode::Decoder;
use super::*;
use crate::error::msg;
use crate::yaml::{Node, Pos, Yaml};

/// Lab ids become folder names and label values: lowercase letters, digits and dashes.
pub(super) fn lab_id(d: &mut Decoder<'_>, n: &Node) -> Option<String> {
    let s = d.ident(n)?;
    let ok = s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-');
    if !ok {
        d.error_hint(
            n.pos,
            msg(
                format!("`{s}` はラボの id として使えません"),
                format!("`{s}` is not a valid lab id"),
            ),
            msg(
                "英小文字、数字、`-` を使います (フォルダー名とラベルの値になります)",
                "use lowercase letters, digits and `-` (it becomes a folder name and a label value)",
            ),
        );
        return None;
    }
    Some(s)
}

/// A relative path that stays inside its folder.
pub(super) fn rel_path(d: &mut Decoder<'_>, n: &Node) -> Option<String> {
    let s = d.ident(n)?;
    let p = Path::new(&s);
    if p.is_absolute()
        || p.components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        d.error_hint(
            n.pos,
            msg(
                format!("`{s}` はラボの中の相対パスでなければなりません"),
                format!("`{s}` must be a relative path inside the lab"),
            ),
            msg(
                "先頭の `/` と `..` を取り除きます",
                "drop leading `/` and any `..`",
            ),
        );
        return None;
    }
    Some(s)
}

/// `- path` or `- {path: …, template: true}`; each `<section>/<path>` must exist.
pub(super) fn file_refs(
    d: &mut Decoder<'_>,
    node: &Node,
    dir: &Path,
    section: &str,
    tctx: &tera::Context,
) -> Vec<FileRef> {
    let mut out: Vec<FileRef> = Vec::new();
    let Some(list) = d.list(node) else {
        return out;
    };
    for n in list {
        let (path, template, at) = if matches!(n.value, Yaml::Map(_)) {
            let Some(f) = d.fields(n) else { continue };
            let path = f.req(d, "path").and_then(|p| rel_path(d, p));
            let template = f.opt("template").and_then(|t| d.bool(t)).unwrap_or(false);
            let at = f.opt("path").map_or(n.pos, |p| p.pos);
            f.finish(d, ("ファイルの項目", "a file entry"));
            (path, template, at)
        } else {
            (rel_path(d, n), false, n.pos)
        };
        let Some(path) = path else { continue };
        let src = dir.join(section).join(&path);
        if !src.is_file() {
            d.error_hint(
                at,
                msg(
                    format!("{section} のファイル `{section}/{path}` がありません"),
                    format!("missing {section} file `{section}/{path}`"),
                ),
                create_or_remove(&src),
            );
        } else if template {
            check_template(d, at, &src, tctx);
        }
        if out.iter().any(|f| f.path == path) {
            d.error(
                at,
                msg(
                    format!("`{path}` が二度挙げられています"),
                    format!("`{path}` is listed twice"),
                ),
            );
        }
        out.push(FileRef { path, template });
    }
    out
}

/// What to do about a listed file that is missing.
fn create_or_remove(src: &Path) -> crate::error::Msg {
    msg(
        format!("{} を作るか、この項目を取り除きます", src.display()),
        format!("create {} or remove this entry", src.display()),
    )
}

pub(super) fn check_template(d: &mut Decoder<'_>, at: Pos, src: &Path, tctx: &tera::Context) {
    let text = match crate::input::read_text(src) {
        Ok(t) => t,
        Err(e) => return d.error_hint(at, e.said(), e.hint_said()),
    };
    if let Err(e) = crate::lab::template::render(&text, tctx) {
        d.error_hint(
            at,
            msg(
                format!("テンプレート {} を展開できません: {e}", src.display()),
                format!("template {} does not render: {e}", src.display()),
            ),
            msg(
                "テンプレートで使えるのは `lab`、`workspace`、`lab_dir` とラボの `vars` です。\
                 テンプレートでないファイルなら `template: true` を外します",
                "templates know `lab`, `workspace`, `lab_dir` and the lab's `vars`; drop \
                 `template: true` if the file is not a template",
            ),
        );
    }
}

pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(c) = cur {
        parts.push(c.to_string());
        cur = c.source();
    }
    parts.join(": ")
}

pub(super) fn fixture_files(d: &mut Decoder<'_>, node: &Node, dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Some(list) = d.list(node) else {
        return out;
    };
    for n in list {
        let Some(path) = rel_path(d, n) else { continue };
        if object_file(d, n, dir, &path, "fixture").is_some() {
            out.push(path);
        }
    }
    out
}

/// The Kubernetes objects of a YAML file beside lab.yaml (a fixture or a setup file).
pub(super) fn object_file(
    d: &mut Decoder<'_>,
    n: &Node,
    dir: &Path,
    path: &str,
    what: &str,
) -> Option<Vec<serde_json::Value>> {
    let src = dir.join(path);
    let Ok(text) = crate::input::read_text(&src) else {
        d.error_hint(
            n.pos,
            msg(
                format!("{what} のファイル `{path}` がありません"),
                format!("missing {what} file `{path}`"),
            ),
            create_or_remove(&src),
        );
        return None;
    };
    match crate::yaml::parse_json_stream(&text) {
        Err(e) => {
            d.error(
                n.pos,
                msg(
                    format!(
                        "{what} `{path}` は YAML として読めません: {}:{e}",
                        src.display()
                    ),
                    format!("{what} `{path}` is not valid YAML: {}:{e}", src.display()),
                ),
            );
            None
        }
        Ok(docs) => {
            if docs
                .iter()
                .any(|doc| crate::target::ObjRef::of(doc).is_none())
            {
                d.error_hint(
                    n.pos,
                    msg(
                        format!("{what} `{path}` に Kubernetes のオブジェクトでない文書があります"),
                        format!("{what} `{path}` holds a document that is not a Kubernetes object"),
                    ),
                    msg(
                        "どの文書にも apiVersion、kind、metadata.name が必要です",
                        "every document needs apiVersion, kind and metadata.name",
                    ),
                );
            }
            Some(docs)
        }
    }
}

/// The `id` nodes of the items of `list` (or, with `nested`, of the items of each item's
/// `nested` list), so a duplicate is reported where it is written.
pub(super) fn item_ids<'n>(list: Option<&'n Node>, nested: Option<&str>) -> Vec<&'n Node> {
    let items = |n: &'n Node| match &n.value {
        Yaml::Seq(items) => items.as_slice(),
        _ => &[],
    };
    let outer = list.map(items).unwrap_or_default();
    match nested {
        None => outer.iter().filter_map(|n| n.get("id")).collect(),
        Some(key) => outer
            .iter()
            .filter_map(|n| n.get(key))
            .flat_map(items)
            .filter_map(|n| n.get("id"))
            .collect(),
    }
}

pub(super) fn unique_ids(d: &mut Decoder<'_>, what: &str, ids: &[&Node]) {
    let mut seen: std::collections::HashMap<&str, Pos> = Default::default();
    for n in ids {
        let Some(id) = n.as_str() else { continue };
        if let Some(first) = seen.get(id) {
            d.error_hint(
                n.pos,
                msg(
                    format!(
                        "{what} の id `{id}` が重複しています (最初は {} 行目)",
                        first.line
                    ),
                    format!("duplicate {what} id `{id}` (first at line {})", first.line),
                ),
                msg(
                    format!("{what} ごとに別の id を付けます"),
                    format!("give every {what} its own id"),
                ),
            );
        } else {
            seen.insert(id, n.pos);
        }
    }
}

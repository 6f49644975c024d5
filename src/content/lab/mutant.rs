//! Mutants: realistic wrong answers, as files, edits and removals over the solution.

use std::collections::BTreeSet;
use std::path::Path;

use super::super::decode::{Decoder, closest};
use super::files::{file_refs, lab_id, rel_path};
use super::*;
use crate::error::msg;
use crate::yaml::Node;

pub(super) fn decode_mutant(
    d: &mut Decoder<'_>,
    node: &Node,
    dir: &Path,
    tctx: &tera::Context,
    check_ids: &[&str],
    solution: &BTreeSet<&str>,
    starter: &BTreeSet<&str>,
) -> Option<Mutant> {
    let f = d.fields(node)?;
    let id = f.req(d, "id").and_then(|n| lab_id(d, n));
    let description = f.req(d, "description").and_then(|n| d.text(n));
    let files = match (&id, f.opt("files")) {
        (Some(id), Some(n)) => file_refs(d, n, &dir.join("mutants"), id, tctx),
        _ => Vec::new(),
    };
    let mut edits = Vec::new();
    if let Some(list) = f.opt("edits").and_then(|n| d.list(n)) {
        for n in list {
            let Some(e) = d.fields(n) else { continue };
            let path_node = e.req(d, "path");
            let path = path_node.and_then(|p| rel_path(d, p));
            let find = e.req(d, "find").and_then(|n| d.string(n));
            let replace = e.req(d, "replace").and_then(|n| d.string(n));
            let find_at = e.key_pos("find");
            e.finish(d, ("編集", "an edit"));
            let (Some(path), Some(find), Some(replace)) = (path, find, replace) else {
                continue;
            };
            let at = path_node.map_or(n.pos, |p| p.pos);
            // The edit applies to the solution's copy when it has one, else the starter's.
            let section = if solution.contains(path.as_str()) {
                "solution"
            } else if starter.contains(path.as_str()) {
                "starter"
            } else {
                d.error_hint(
                    at,
                    msg(
                        format!("`{path}` は solution にも starter にもないファイルの編集です"),
                        format!("edit of `{path}`, which neither the solution nor the starter has"),
                    ),
                    msg(
                        "`solution:` か `starter:` に挙げたファイルを編集します",
                        "edit a file listed under `solution:` or `starter:`",
                    ),
                );
                continue;
            };
            let src = dir.join(section).join(&path);
            match crate::input::read_text(&src) {
                Ok(text) if text.contains(&find) => {}
                Ok(_) => d.error_hint(
                    find_at.unwrap_or(at),
                    msg(
                        format!("`find` のテキストが {section}/{path} にありません"),
                        format!("`find` text does not occur in {section}/{path}"),
                    ),
                    msg(
                        "ファイルからテキストをそのまま (空白と改行も) コピーします",
                        "copy the exact text (spaces and line breaks included) from the file",
                    ),
                ),
                Err(_) => {}
            }
            edits.push(Edit {
                path,
                find,
                replace,
            });
        }
    }
    let remove: Vec<String> = f
        .opt("remove")
        .and_then(|n| d.list(n))
        .map(|l| l.iter().filter_map(|n| rel_path(d, n)).collect())
        .unwrap_or_default();
    let mut fails = Vec::new();
    if let Some(n) = f.req(d, "fails") {
        let ids = d.strings(n);
        if ids.is_empty() {
            d.error(
                n.pos,
                msg(
                    "ミュータントには、失敗するチェックを少なくとも一つ挙げます",
                    "a mutant must name at least one check it fails",
                ),
            );
        }
        for c in ids {
            if !check_ids.contains(&c.as_str()) {
                let near = match closest(&c, check_ids.iter().copied()) {
                    Some(k) => msg(
                        format!("`{k}` の書き誤りではありませんか?"),
                        format!("did you mean `{k}`?"),
                    ),
                    None => msg(
                        format!("チェックは {} です", check_ids.join(", ")),
                        format!("checks are: {}", check_ids.join(", ")),
                    ),
                };
                d.error_hint(
                    n.pos,
                    msg(
                        format!("ミュータントが未知のチェック `{c}` を挙げています"),
                        format!("mutant names unknown check `{c}`"),
                    ),
                    near,
                );
            }
            fails.push(c);
        }
    }
    if files.is_empty() && edits.is_empty() && remove.is_empty() {
        d.error_hint(
            f.pos(),
            msg(
                "このミュータントは何も変えません",
                "this mutant changes nothing",
            ),
            msg(
                "`files:`、`edits:`、`remove:` のどれかを加えます",
                "add `files:`, `edits:` or `remove:`",
            ),
        );
    }
    f.finish(d, ("ミュータント", "a mutant"));
    Some(Mutant {
        id: id?,
        description: description?,
        files,
        edits,
        remove,
        fails,
    })
}

/// The operators `kca lab verify` derives mutants with (`lab::verify::derive`); an
/// `equivalentMutants` id starts with one of them.
pub const OPERATORS: [&str; 20] = [
    "drop-namespaces",
    "namespaces-wildcard",
    "drop-selector",
    "drop-matchConditions",
    "enforce-to-audit",
    "deny-to-audit",
    "drop-pattern-field",
    "drop-conjunct",
    "drop-condition",
    "verbs-wildcard",
    "resources-wildcard",
    "apiGroups-wildcard",
    "role-to-clusterrole",
    "rename",
    "netpol-allow-all",
    "jsonpatch-parent",
    "zero-pause",
    "gate-exit-0",
    "gate-grep-digest",
    "gate-grep-latest",
];

/// `equivalentMutants: [{id, reason}]`: derived mutants the author declares right answers
/// (or wrong in a way no check of this lab can see), each with the reason an instructor
/// would read. Every problem is reported at its `file:line:col`.
pub(super) fn decode_equivalents(d: &mut Decoder<'_>, node: &Node) -> Vec<Equivalent> {
    let mut out: Vec<Equivalent> = Vec::new();
    let Some(list) = d.list(node) else {
        return out;
    };
    for n in list {
        let Some(f) = d.fields(n) else { continue };
        let id_node = f.req(d, "id");
        let id = id_node.and_then(|n| d.string(n));
        let reason = f.req(d, "reason").and_then(|n| d.text(n));
        f.finish(d, ("等価ミュータント", "an equivalent mutant"));
        let (Some(id), Some(reason), Some(at)) = (id, reason, id_node.map(|n| n.pos)) else {
            continue;
        };
        let op = id.split(':').next().unwrap_or("");
        if !id.contains(':') || !OPERATORS.contains(&op) {
            let near = match closest(op, OPERATORS.iter().copied()) {
                Some(k) => (
                    format!("`{k}` の書き誤りではありませんか?"),
                    format!("did you mean `{k}`?"),
                ),
                None => (
                    format!("演算子は {} です。", OPERATORS.join(", ")),
                    format!("operators are: {}", OPERATORS.join(", ")),
                ),
            };
            d.error_hint(
                at,
                msg(
                    format!("`{id}` は導出されたミュータントの id (operator:file#pointer) ではありません"),
                    format!("`{id}` is not a derived mutant id (operator:file#pointer)"),
                ),
                msg(
                    format!("{} `kca lab verify` が生き残りに表示する id をコピーします", near.0),
                    format!("{} Copy the id `kca lab verify` prints for the survivor", near.1),
                ),
            );
            continue;
        }
        if out.iter().any(|e| e.id == id) {
            d.error_hint(
                at,
                msg(
                    format!("ミュータント `{id}` が二度、等価と宣言されています"),
                    format!("mutant `{id}` is declared equivalent twice"),
                ),
                msg("宣言を一つだけ残します", "keep one declaration"),
            );
            continue;
        }
        out.push(Equivalent { id, reason });
    }
    out
}

//! Per-task `setup` (an incident kca stages when the learner reaches a task) and the
//! `lesson` link of a task. A setup touches only objects the lab owns: what it applies is
//! labelled as the lab's, and what it deletes or patches must be declared, with the lab's
//! labels, by the fixtures, the starter, the solution or an earlier setup — so `lab reset`
//! (which deletes every owned object and re-applies the fixtures) undoes it.

use std::path::Path;

use serde_json::Value;

use super::super::decode::{Decoder, Fields};
use super::*;
use crate::error::msg;
use crate::target::ObjRef;
use crate::yaml::Node;

/// Objects declared by the lab's own files that carry its labels: what a setup may touch.
pub(super) fn owned_objects(
    id: &str,
    dir: &Path,
    fixtures: &[String],
    starter: &[FileRef],
    solution: &[FileRef],
) -> Vec<Value> {
    let mut files: Vec<std::path::PathBuf> = fixtures.iter().map(|f| dir.join(f)).collect();
    files.extend(
        starter
            .iter()
            .filter(|f| !f.template)
            .map(|f| dir.join("starter").join(&f.path)),
    );
    files.extend(
        solution
            .iter()
            .filter(|f| !f.template)
            .map(|f| dir.join("solution").join(&f.path)),
    );
    let is_fixture = |p: &Path| fixtures.iter().any(|f| dir.join(f) == p);
    let mut out = Vec::new();
    for f in files {
        let Ok(text) = crate::input::read_text(&f) else {
            continue;
        };
        let Ok(docs) = crate::yaml::parse_json_stream(&text) else {
            continue;
        };
        // Fixtures are labelled by kca when applied; learner files must say so themselves.
        let fixture = is_fixture(&f);
        out.extend(
            docs.into_iter()
                .filter(|d| fixture || carries_labels(d, id)),
        );
    }
    out
}

fn carries_labels(obj: &Value, id: &str) -> bool {
    let label = |k: &str| {
        obj.pointer("/metadata/labels")
            .and_then(|l| l.get(k))
            .and_then(Value::as_str)
    };
    label(LAB_LABEL) == Some(id) && label(MANAGED_BY_LABEL) == Some(MANAGED_BY)
}

fn sel_matches(sel: &ObjSel, obj: &Value) -> bool {
    ObjRef::of(obj).is_some_and(|r| {
        r.api_version == sel.api_version
            && r.kind == sel.kind
            && r.name == sel.name
            && r.namespace == sel.namespace
    })
}

/// `setup: [{apply: FILE} | {delete: OBJECT} | {patch: {object: OBJECT, merge: TREE}}]`.
/// `owned` grows by what an `apply` declares, for the tasks after this one.
pub(super) fn decode_setup(
    d: &mut Decoder<'_>,
    node: &Node,
    dir: &Path,
    owned: &mut Vec<Value>,
) -> Vec<SetupAction> {
    let mut out = Vec::new();
    let Some(list) = d.list(node) else {
        return out;
    };
    for n in list {
        let Some(f) = d.fields(n) else { continue };
        let action = decode_action(d, &f, dir, owned);
        f.finish(
            d,
            (
                "セットアップのステップ (`apply`, `delete`, `patch`, `revoke`)",
                "a setup step (`apply`, `delete`, `patch` or `revoke`)",
            ),
        );
        out.extend(action);
    }
    out
}

fn decode_action(
    d: &mut Decoder<'_>,
    f: &Fields<'_>,
    dir: &Path,
    owned: &mut Vec<Value>,
) -> Option<SetupAction> {
    if let Some(n) = f.opt("revoke") {
        if f.has("apply") || f.has("delete") || f.has("patch") {
            d.error(
                f.pos(),
                msg(
                    "セットアップの一つのステップがすることは一つだけです",
                    "a setup step does exactly one thing",
                ),
            );
            return None;
        }
        let r = d.fields(n)?;
        let who = r.req(d, "as").and_then(|n| super::checks::identity(d, n));
        let verb = r.req(d, "verb").and_then(|n| d.ident(n));
        let group = r.opt("group").and_then(|n| d.string(n)).unwrap_or_default();
        let resource = r.req(d, "resource").and_then(|n| d.ident(n));
        r.finish(d, ("セットアップの `revoke`", "a setup `revoke`"));
        let (user, groups) = who?;
        return Some(SetupAction::Revoke {
            user,
            groups,
            verb: verb?,
            group,
            resource: resource?,
        });
    }
    let (apply, delete, patch) = (f.opt("apply"), f.opt("delete"), f.opt("patch"));
    match (apply, delete, patch) {
        (Some(n), None, None) => {
            let file = super::files::rel_path(d, n)?;
            let objects = super::files::object_file(d, n, dir, &file, "setup")?;
            owned.extend(objects.iter().cloned());
            Some(SetupAction::Apply { file, objects })
        }
        (None, Some(n), None) => {
            let target = super::checks::obj_sel(d, n, true)?;
            must_be_owned(d, n, &target, owned);
            Some(SetupAction::Delete(target))
        }
        (None, None, Some(n)) => {
            let p = d.fields(n)?;
            let target_node = p.req(d, "object");
            let target = target_node.and_then(|t| super::checks::obj_sel(d, t, true));
            let merge = p.req(d, "merge").map(Node::to_json);
            p.finish(d, ("セットアップの `patch`", "a setup `patch`"));
            let target = target?;
            if let Some(t) = target_node {
                must_be_owned(d, t, &target, owned);
            }
            if merge.as_ref().is_some_and(|m| !m.is_object()) {
                d.error(
                    n.pos,
                    msg(
                        "`merge` はマッピング (JSON merge patch) でなければなりません",
                        "`merge` must be a mapping (a JSON merge patch)",
                    ),
                );
                return None;
            }
            Some(SetupAction::Patch {
                target,
                merge: merge?,
            })
        }
        _ => {
            d.error_hint(
                f.pos(),
                msg(
                    "セットアップの一つのステップがすることは一つだけです",
                    "a setup step does exactly one thing",
                ),
                msg(
                    "`apply: FILE`、`delete: {apiVersion, kind, name}`、\
                     `patch: {object: {…}, merge: {…}}` のどれか一つを書きます",
                    "write one of `apply: FILE`, `delete: {apiVersion, kind, name}` or \
                     `patch: {object: {…}, merge: {…}}`",
                ),
            );
            None
        }
    }
}

fn must_be_owned(d: &mut Decoder<'_>, at: &Node, target: &ObjSel, owned: &[Value]) {
    if !owned.iter().any(|o| sel_matches(target, o)) {
        let ns = target
            .namespace
            .as_deref()
            .map_or(String::new(), |n| format!("{n}/"));
        d.error_hint(
            at.pos,
            msg(
                format!(
                    "セットアップがラボのものでない {} {ns}{} に触れています",
                    target.kind, target.name
                ),
                format!(
                    "setup touches {} {ns}{}, which the lab does not own",
                    target.kind, target.name
                ),
            ),
            msg(
                format!(
                    "セットアップが削除・パッチできるのは、ラボがラベル {LAB_LABEL} と \
                     {MANAGED_BY_LABEL}: {MANAGED_BY} を付けて宣言したオブジェクト (fixtures、\
                     starter、solution、それより前の `apply`) だけです"
                ),
                format!(
                    "a setup may only delete or patch objects the lab declares with the labels \
                     {LAB_LABEL} and {MANAGED_BY_LABEL}: {MANAGED_BY} (fixtures, starter, \
                     solution, or an earlier `apply`)"
                ),
            ),
        );
    }
}

/// `lesson: module-N#anchor`; when the content folder has the lessons, the anchor must be
/// a section heading (`## Title {#anchor}`) of that module's Japanese and English text.
pub(super) fn decode_lesson(d: &mut Decoder<'_>, n: &Node, dir: &Path) -> Option<String> {
    let s = d.string(n)?;
    let parsed = s.split_once('#').and_then(|(m, a)| {
        let num = m.strip_prefix("module-")?;
        let ok = !num.is_empty()
            && num.chars().all(|c| c.is_ascii_digit())
            && !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        ok.then(|| (m.to_string(), a.to_string()))
    });
    let Some((module, anchor)) = parsed else {
        d.error_hint(
            n.pos,
            msg(
                format!("`{s}` はレッスンの節ではありません"),
                format!("`{s}` is not a lesson section"),
            ),
            msg(
                "`module-N#anchor` と書きます (例: `module-0#json-patch`)",
                "write `module-N#anchor`, e.g. `module-0#json-patch`",
            ),
        );
        return None;
    };
    // labs/<id>/lab.yaml → <content>/lessons/module-N/{ja,en}.md
    let content = dir.join("..").join("..");
    let number = module.trim_start_matches("module-").parse::<i64>().ok()?;
    if crate::lesson::lessons_dir(&content).is_dir() {
        let presence = crate::lesson::section_presence(&content, number, Some(&anchor));
        for (file, has) in presence {
            if has != Some(true) {
                d.error_hint(
                    n.pos,
                    msg(
                        format!("{} に節 `{{#{anchor}}}` がありません", file.display()),
                        format!("no section `{{#{anchor}}}` in {}", file.display()),
                    ),
                    msg(
                        "そのレッスンの `## 見出し {#anchor}` (両方の言語) にリンクします",
                        "link to a `## Heading {#anchor}` of that lesson (both languages)",
                    ),
                );
                return None;
            }
        }
    }
    Some(s)
}

//! The top of a `lab.yaml`: one decode function per section (metadata, workspace, vars,
//! files, tasks, mutants, reset), and the cross-section rules (unique ids, folder = id).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::super::decode::{Decoder, Fields};
use super::checks::{TaskCtx, decode_task};
use super::files::{file_refs, fixture_files, item_ids, lab_id, rel_path, unique_ids};
use super::mutant::{decode_equivalents, decode_mutant};
use super::*;
use crate::error::msg;
use crate::yaml::Yaml;

pub fn decode(d: &mut Decoder<'_>, top: &Fields<'_>, path: &Path) -> Option<Lab> {
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let Meta {
        id,
        title,
        module,
        concepts,
        description,
    } = decode_meta(d, top, &dir, path);
    let (workspace_name, apply) = decode_workspace(d, top, id.as_deref());
    let vars = decode_vars(d, top);
    // Templates are rendered in lint with the variables they will get, so a misspelt
    // variable is a content error rather than a learner's crash.
    let mut tctx = tera::Context::new();
    tctx.insert("lab", id.as_deref().unwrap_or(""));
    tctx.insert("workspace", &format!("/root/{workspace_name}"));
    tctx.insert("lab_dir", &dir.display().to_string());
    for (k, v) in &vars {
        tctx.insert(k, v);
    }
    let starter = top
        .opt("starter")
        .map(|n| file_refs(d, n, &dir, "starter", &tctx))
        .unwrap_or_default();
    let fixtures = top
        .opt("fixtures")
        .map(|n| fixture_files(d, n, &dir))
        .unwrap_or_default();
    let solution = top
        .req(d, "solution")
        .map(|n| file_refs(d, n, &dir, "solution", &tctx))
        .unwrap_or_default();
    let mut cx = TaskCtx {
        dir: &dir,
        tctx: &tctx,
        owned: super::setup::owned_objects(
            id.as_deref().unwrap_or(""),
            &dir,
            &fixtures,
            &starter,
            &solution,
        ),
        paths: starter
            .iter()
            .chain(&solution)
            .map(|f| f.path.clone())
            .collect(),
        first: true,
        advice: Vec::new(),
    };
    let mut tasks = Vec::new();
    if let Some(list) = top.req(d, "tasks").and_then(|n| d.list(n)) {
        if list.is_empty() {
            d.error(
                top.pos(),
                msg(
                    "ラボには課題が少なくとも一つ必要です",
                    "a lab needs at least one task",
                ),
            );
        }
        for n in list {
            tasks.extend(decode_task(d, n, &mut cx));
            cx.first = false;
        }
    }
    let advice = std::mem::take(&mut cx.advice);
    unique_ids(d, "task", &item_ids(top.opt("tasks"), None));
    unique_ids(d, "check", &item_ids(top.opt("tasks"), Some("checks")));
    let check_ids: Vec<&str> = tasks
        .iter()
        .flat_map(|t| t.checks.iter().map(|c| c.id.as_str()))
        .collect();
    let sol_paths: BTreeSet<&str> = solution.iter().map(|f| f.path.as_str()).collect();
    let start_paths: BTreeSet<&str> = starter.iter().map(|f| f.path.as_str()).collect();
    let mut mutants = Vec::new();
    if let Some(list) = top.opt("mutants").and_then(|n| d.list(n)) {
        for n in list {
            mutants.extend(decode_mutant(
                d,
                n,
                &dir,
                &tctx,
                &check_ids,
                &sol_paths,
                &start_paths,
            ));
        }
        unique_ids(d, "mutant", &item_ids(top.opt("mutants"), None));
    }
    let equivalent_mutants = top
        .opt("equivalentMutants")
        .map(|n| decode_equivalents(d, n))
        .unwrap_or_default();
    let reset = decode_reset(d, top);
    Some(Lab {
        id: id?,
        title: title?,
        module,
        concepts,
        description,
        dir,
        workspace_name,
        apply,
        vars,
        starter,
        fixtures,
        tasks,
        solution,
        mutants,
        equivalent_mutants,
        reset,
        advice,
    })
}

struct Meta {
    id: Option<String>,
    title: Option<Text>,
    module: Option<i64>,
    concepts: Vec<String>,
    description: Option<Text>,
}

fn decode_meta(d: &mut Decoder<'_>, top: &Fields<'_>, dir: &Path, path: &Path) -> Meta {
    let meta = top.req(d, "metadata").and_then(|n| d.fields(n));
    let (mut id, mut title, mut module, mut concepts, mut description) =
        (None, None, None, Vec::new(), None);
    if let Some(m) = meta {
        id = m.req(d, "id").and_then(|n| lab_id(d, n));
        title = m.req(d, "title").and_then(|n| d.text(n));
        module = m.opt("module").and_then(|n| d.int_in(n, 0..=99));
        concepts = m.opt("concepts").map(|n| d.strings(n)).unwrap_or_default();
        description = m.opt("description").and_then(|n| d.text(n));
        m.finish(d, ("ラボのメタデータ", "lab metadata"));
    }
    if let (Some(id), Some(name)) = (&id, dir.file_name().and_then(|n| n.to_str()))
        && name != id
        && path.file_name().is_some_and(|f| f == "lab.yaml")
    {
        let pos = top.opt("metadata").map_or(top.pos(), |n| n.pos);
        d.error_hint(
            pos,
            msg(
                format!("ラボの id `{id}` がフォルダー名 `{name}` と違います"),
                format!("lab id `{id}` differs from its folder `{name}`"),
            ),
            msg(
                "`kca lab start ID` で見つかるよう、フォルダーに id の名前を付けます",
                "name the folder after the id, so `kca lab start ID` finds it",
            ),
        );
    }
    Meta {
        id,
        title,
        module,
        concepts,
        description,
    }
}

/// `workspace:`: the folder name (default: the lab id) and what the learner applies.
fn decode_workspace(
    d: &mut Decoder<'_>,
    top: &Fields<'_>,
    id: Option<&str>,
) -> (String, Vec<String>) {
    let mut workspace_name = id.unwrap_or_default().to_string();
    let mut apply = Vec::new();
    if let Some(w) = top.opt("workspace").and_then(|n| d.fields(n)) {
        if let Some(n) = w.opt("dir") {
            workspace_name = lab_id(d, n).unwrap_or_default();
        }
        if let Some(list) = w.opt("apply").and_then(|n| d.list(n)) {
            for n in list {
                apply.extend(rel_path(d, n));
            }
        }
        w.finish(d, ("ワークスペース", "workspace"));
    }
    (workspace_name, apply)
}

/// `vars:`: template variables, a flat mapping of strings.
fn decode_vars(d: &mut Decoder<'_>, top: &Fields<'_>) -> BTreeMap<String, String> {
    let mut vars = BTreeMap::new();
    if let Some(v) = top.opt("vars") {
        if let Yaml::Map(entries) = &v.value {
            for (k, val) in entries {
                if let (Some(k), Some(val)) = (d.ident(k), d.string(val)) {
                    vars.insert(k, val);
                }
            }
        } else {
            d.error(
                v.pos,
                msg(
                    format!("マッピングが必要ですが、{} が書かれています", v.type_name()),
                    format!("expected a mapping, found {}", v.type_name()),
                ),
            );
        }
    }
    vars
}

/// `reset:`: kinds swept by label besides those of the fixtures and the solution.
fn decode_reset(d: &mut Decoder<'_>, top: &Fields<'_>) -> Reset {
    let mut reset = Reset::default();
    if let Some(r) = top.opt("reset").and_then(|n| d.fields(n)) {
        if let Some(list) = r.opt("kinds").and_then(|n| d.list(n)) {
            for n in list {
                let Some(k) = d.fields(n) else { continue };
                let api = k.req(d, "apiVersion").and_then(|n| d.ident(n));
                let kind = k.req(d, "kind").and_then(|n| d.ident(n));
                k.finish(d, ("リセットの種類", "a reset kind"));
                if let (Some(a), Some(k)) = (api, kind) {
                    reset.kinds.push((a, k));
                }
            }
        }
        r.finish(d, ("リセット", "reset"));
    }
    reset
}

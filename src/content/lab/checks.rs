//! Tasks and their checks: one decode function per check kind.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use super::super::decode::{Decoder, Fields, closest};
use super::behaviour::{decode_admission, decode_generated, decode_observed};
use super::files::rel_path;
use super::*;
use crate::error::{Msg, msg};
use crate::yaml::{Node, Yaml};

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// What decoding a task needs from the rest of the lab.
pub(super) struct TaskCtx<'a> {
    pub dir: &'a Path,
    pub tctx: &'a tera::Context,
    /// Objects a setup may touch (grows with each setup `apply`).
    pub owned: Vec<Value>,
    /// Workspace paths the starter or the solution lays out (a `file` check must name one).
    pub paths: BTreeSet<String>,
    /// Whether this is the first task (a setup there belongs in the fixtures).
    pub first: bool,
    /// Advice for the author (see `Lab::advice`).
    pub advice: Vec<(crate::yaml::Pos, Msg, Msg)>,
}

pub(super) fn decode_task(d: &mut Decoder<'_>, node: &Node, cx: &mut TaskCtx<'_>) -> Option<Task> {
    let f = d.fields(node)?;
    let id = f.req(d, "id").and_then(|n| d.ident(n));
    let title = f.req(d, "title").and_then(|n| d.text(n));
    let instructions = f.req(d, "instructions").and_then(|n| d.text(n));
    let hints = f.opt("hints").map(|n| d.texts(n)).unwrap_or_default();
    let lesson = f
        .opt("lesson")
        .and_then(|n| super::setup::decode_lesson(d, n, cx.dir));
    let setup = match f.opt("setup") {
        Some(n) if cx.first => {
            d.error_hint(
                n.pos,
                msg(
                    "最初の課題には setup を書けません",
                    "the first task cannot have a setup",
                ),
                msg(
                    "ラボが最初から必要とするものは `fixtures:` に書きます",
                    "what the lab needs from the start belongs in `fixtures:`",
                ),
            );
            Vec::new()
        }
        Some(n) => super::setup::decode_setup(d, n, cx.dir, &mut cx.owned),
        None => Vec::new(),
    };
    let mut checks = Vec::new();
    if let Some(list) = f.req(d, "checks").and_then(|n| d.list(n)) {
        if list.is_empty() {
            d.error(
                f.pos(),
                msg(
                    "課題にはチェックが 1 つ以上必要です",
                    "a task needs at least one check",
                ),
            );
        }
        for n in list {
            checks.extend(decode_check(d, n, cx));
        }
    }
    let at = f.pos();
    f.finish(d, ("課題", "a task"));
    if let Some(id) = &id {
        advise_left_alone(cx, at, id, &checks);
    }
    Some(Task {
        id: id?,
        title: title?,
        instructions: instructions?,
        hints,
        checks,
        lesson,
        setup,
    })
}

/// A task whose checks probe a mutate, validate or generate rule inside its scope should
/// also probe outside it (`leftAlone: true`): without one, a rule matching everything
/// (`namespaces` deleted, `"*"` added, no `matchConditions`) earns every point.
fn advise_left_alone(cx: &mut TaskCtx<'_>, pos: crate::yaml::Pos, task: &str, checks: &[Check]) {
    let mut scoped = None;
    let mut left_alone = false;
    for c in checks {
        match &c.spec {
            Spec::Admission {
                left_alone: true, ..
            }
            | Spec::Generated {
                left_alone: true, ..
            } => left_alone = true,
            Spec::Admission {
                expect: Expect::Denied(_),
                ..
            } => {
                scoped.get_or_insert("validate");
            }
            Spec::Admission {
                assert: Some(_), ..
            } => {
                scoped.get_or_insert("mutate");
            }
            Spec::Generated { .. } => {
                scoped.get_or_insert("generate");
            }
            _ => {}
        }
    }
    if let (Some(what), false) = (scoped, left_alone) {
        cx.advice.push((
            pos,
            msg(
                format!(
                    "課題 `{task}` は {what} ルールをスコープの内側でしか試していません。\
                     すべてに一致するルールでも合格してしまいます"
                ),
                format!(
                    "task `{task}` probes a {what} rule inside its scope only: a rule that \
                     matches everything passes it"
                ),
            ),
            msg(
                "スコープの外 (別の namespace、ラベルのないオブジェクト、別の kind) にプローブを置く \
                 `leftAlone: true` のチェックを足します。変更されずに通るはずです",
                "add a check with `leftAlone: true` whose probe lies outside the scope (another \
                 namespace, an unlabelled object, another kind): it must come through unchanged",
            ),
        ));
    }
}

fn decode_check(d: &mut Decoder<'_>, node: &Node, cx: &TaskCtx<'_>) -> Option<Check> {
    let (dir, tctx) = (cx.dir, cx.tctx);
    let f = d.fields(node)?;
    let id = f.req(d, "id").and_then(|n| d.ident(n));
    let kind_node = f.req(d, "kind");
    let kind = kind_node.and_then(|n| d.string(n));
    let title = f.opt("title").and_then(|n| d.text(n));
    let points = f.opt("points").map_or(Some(1), |n| d.int_in(n, 0..=100));
    let timeout = f.opt("timeout").map_or(Some(DEFAULT_TIMEOUT), |n| {
        d.int_in(n, 1..=600).map(|s| Duration::from_secs(s as u64))
    });
    let guard = f.opt("guard").and_then(|n| d.bool(n)).unwrap_or(false);
    let (mut on_fail, mut on_pass) = (None, None);
    if let Some(fb) = f.opt("feedback").and_then(|n| d.fields(n)) {
        on_fail = fb.opt("fail").and_then(|n| d.text(n));
        on_pass = fb.opt("pass").and_then(|n| d.text(n));
        fb.finish(d, ("チェックのフィードバック", "check feedback"));
    }
    let spec = match kind.as_deref() {
        Some("file") => decode_file(d, &f, &cx.paths),
        Some("accepted") => decode_accepted(d, &f, &cx.paths),
        Some("resource") => decode_resource(d, &f),
        Some("can-i") => decode_can_i(d, &f),
        Some("admission") => decode_admission(d, &f, dir),
        Some("generated") => decode_generated(d, &f, dir),
        Some("command") => decode_command(d, &f, tctx),
        Some("least-privilege") => decode_least_privilege(d, &f),
        Some("observed") => decode_observed(d, &f, dir, &cx.paths),
        Some(other) => {
            let near = closest(other, KINDS.split(", "));
            let near_ja = near
                .map(|k| format!("`{k}` のことですか? "))
                .unwrap_or_default();
            let near_en = near
                .map(|k| format!("did you mean `{k}`? "))
                .unwrap_or_default();
            d.error_hint(
                kind_node.map_or(f.pos(), |n| n.pos),
                msg(
                    format!("チェックの kind `{other}` はありません"),
                    format!("unknown check kind `{other}`"),
                ),
                msg(
                    format!("{near_ja}次のどれかを使います: {KINDS}"),
                    format!("{near_en}use one of: {KINDS}"),
                ),
            );
            None
        }
        None => None,
    };
    // Fields of an unknown kind cannot be judged; one error for the kind is enough.
    let unknown_kind = kind
        .as_deref()
        .is_some_and(|k| !KINDS.split(", ").any(|x| x == k));
    if !unknown_kind {
        let kind = kind.as_deref().unwrap_or("?");
        let context = (format!("`{kind}` チェック"), format!("a `{kind}` check"));
        f.finish(d, (&context.0, &context.1));
    }
    Some(Check {
        id: id?,
        title,
        points: points? as u32,
        timeout: timeout?,
        on_fail,
        on_pass,
        guard,
        spec: spec?,
    })
}

pub(super) fn tree(n: &Node) -> Value {
    n.to_json()
}

fn decode_file(d: &mut Decoder<'_>, f: &Fields<'_>, paths: &BTreeSet<String>) -> Option<Spec> {
    let path = workspace_path(d, f, paths);
    let parses = f.opt("parses").and_then(|n| d.bool(n)).unwrap_or(true);
    let kinds = f.opt("kinds").map(|n| d.strings(n)).unwrap_or_default();
    let matches = f.opt("matches").and_then(|n| tree_checked(d, n));
    Some(Spec::File {
        path: path?,
        parses,
        kinds,
        matches,
    })
}

/// `path:` of a workspace file a check reads: the starter or the solution must lay it
/// out, or no learner (and no `verify`) could ever have it.
pub(super) fn workspace_path(
    d: &mut Decoder<'_>,
    f: &Fields<'_>,
    paths: &BTreeSet<String>,
) -> Option<String> {
    let node = f.req(d, "path")?;
    let path = rel_path(d, node)?;
    if !paths.contains(&path) {
        d.error_hint(
            node.pos,
            msg(
                format!("`{path}` はスターターにも解答にもありません"),
                format!("`{path}` is in neither the starter nor the solution"),
            ),
            msg(
                "`starter:` か `solution:` に挙げます (またはパスを直します)",
                "list it under `starter:` or `solution:` (or fix the path)",
            ),
        );
    }
    Some(path)
}

/// A partial tree whose operators (`$matches`, `$inOrder`, `$anyOf`) are well formed.
pub(super) fn tree_checked(d: &mut Decoder<'_>, n: &Node) -> Option<Value> {
    let t = tree(n);
    let problems = crate::lab::tree::tree_problems(&t);
    for p in &problems {
        d.error(
            n.pos,
            msg(
                format!("このツリーの中: {}", p.ja),
                format!("in this tree, {}", p.en),
            ),
        );
    }
    problems.is_empty().then_some(t)
}

/// `accepted`: `path`, `document: {kind, name}`, `expect: accepted|rejected`, `message`.
fn decode_accepted(d: &mut Decoder<'_>, f: &Fields<'_>, paths: &BTreeSet<String>) -> Option<Spec> {
    let path = workspace_path(d, f, paths);
    let document = match f.opt("document").and_then(|n| d.fields(n)) {
        Some(doc) => {
            let kind = doc.req(d, "kind").and_then(|n| d.ident(n));
            let name = doc.req(d, "name").and_then(|n| d.ident(n));
            doc.finish(d, ("`document`", "a `document`"));
            Some((kind?, name?))
        }
        None => None,
    };
    let expect_node = f.req(d, "expect");
    let accepted = match expect_node.and_then(|n| d.string(n)).as_deref() {
        Some("accepted") => Some(true),
        Some("rejected") => Some(false),
        Some(o) => {
            d.error_hint(
                expect_node.map_or(f.pos(), |n| n.pos),
                msg(
                    format!("期待 `{o}` はありません"),
                    format!("unknown expectation `{o}`"),
                ),
                msg(
                    "`accepted` か `rejected` を使います",
                    "use `accepted` or `rejected`",
                ),
            );
            None
        }
        None => None,
    };
    let message = regexes(d, f.opt("message")).into_iter().next();
    if message.is_some() && accepted == Some(true) {
        d.error(
            f.pos(),
            msg(
                "`message` は拒否のメッセージに一致させるものです。`expect: rejected` が必要です",
                "`message` matches a rejection: it needs `expect: rejected`",
            ),
        );
    }
    Some(Spec::Accepted {
        path: path?,
        document,
        accepted: accepted?,
        message,
    })
}

pub(super) fn obj_sel(d: &mut Decoder<'_>, n: &Node, need_name: bool) -> Option<ObjSel> {
    let f = d.fields(n)?;
    let api = f.req(d, "apiVersion").and_then(|n| d.ident(n));
    let kind = f.req(d, "kind").and_then(|n| d.ident(n));
    let namespace = f.opt("namespace").and_then(|n| d.ident(n));
    let name = if need_name {
        f.req(d, "name").and_then(|n| d.ident(n))
    } else {
        f.opt("name")
            .and_then(|n| d.ident(n))
            .or(Some(String::new()))
    };
    f.finish(d, ("オブジェクトの参照", "an object reference"));
    Some(ObjSel {
        api_version: api?,
        kind: kind?,
        namespace,
        name: name?,
    })
}

fn decode_resource(d: &mut Decoder<'_>, f: &Fields<'_>) -> Option<Spec> {
    let target = f.req(d, "object").and_then(|n| obj_sel(d, n, true));
    let present = match f.opt("state") {
        None => Some(true),
        Some(n) => match d.string(n).as_deref() {
            Some("present") => Some(true),
            Some("absent") => Some(false),
            Some(other) => {
                d.error_hint(
                    n.pos,
                    msg(
                        format!("state `{other}` はありません"),
                        format!("unknown state `{other}`"),
                    ),
                    msg(
                        "`present` か `absent` を使います",
                        "use `present` or `absent`",
                    ),
                );
                None
            }
            None => None,
        },
    };
    let matches = f.opt("matches").and_then(|n| tree_checked(d, n));
    if present == Some(false) && matches.is_some() {
        d.error(
            f.pos(),
            msg(
                "`state: absent` に `matches` は意味がありません",
                "`matches` makes no sense with `state: absent`",
            ),
        );
    }
    let installed = f.opt("installed").and_then(|n| d.bool(n)).unwrap_or(false);
    Some(Spec::Resource {
        target: target?,
        present: present?,
        matches,
        installed,
    })
}

/// `as: {user, groups}` or `as: {serviceAccount: NS:NAME}` (with the service-account groups).
pub(super) fn identity(d: &mut Decoder<'_>, n: &Node) -> Option<(String, Vec<String>)> {
    let f = d.fields(n)?;
    let user = f.opt("user").and_then(|n| d.ident(n));
    let groups = f.opt("groups").map(|n| d.strings(n)).unwrap_or_default();
    let sa_node = f.opt("serviceAccount");
    let sa = sa_node.and_then(|n| d.ident(n));
    f.finish(d, ("ID (`as`)", "an identity (`as`)"));
    // The groups the API server gives `kubectl --as` (and `--as-group`), so both targets
    // ask the same question.
    let as_kubectl = |u: &str, g: &[String]| crate::offline::rbac::impersonated(u, g);
    match (user, sa) {
        (Some(u), None) => Some(as_kubectl(&u, &groups)),
        (None, Some(sa)) => match sa.split_once(':') {
            Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains(':') => {
                let id = crate::target::Identity::service_account(ns, name);
                let mut all = id.groups;
                all.extend(groups);
                Some(as_kubectl(&id.user, &all))
            }
            _ => {
                d.error_hint(
                    sa_node.map_or(n.pos, |n| n.pos),
                    msg(format!("`{sa}` が NAMESPACE:NAME の形ではありません"), format!("`{sa}` is not NAMESPACE:NAME")),
                    msg("たとえば `serviceAccount: kyverno:kyverno-background-controller` と書きます", "write e.g. `serviceAccount: kyverno:kyverno-background-controller`"),
                );
                None
            }
        },
        (Some(_), Some(_)) => {
            d.error(
                n.pos,
                msg(
                    "`user` と `serviceAccount` のどちらか一方だけを書きます",
                    "give either `user` or `serviceAccount`, not both",
                ),
            );
            None
        }
        (None, None) => {
            d.error_hint(
                n.pos,
                msg("ID がありません", "no identity"),
                msg(
                    "`user:` (と `groups:`) か `serviceAccount: NS:NAME` を足します",
                    "add `user:` (with `groups:`) or `serviceAccount: NS:NAME`",
                ),
            );
            None
        }
    }
}

fn decode_can_i(d: &mut Decoder<'_>, f: &Fields<'_>) -> Option<Spec> {
    let who = f.req(d, "as").and_then(|n| identity(d, n));
    let verb = f.req(d, "verb").and_then(|n| d.ident(n));
    let resource = f.req(d, "resource").and_then(|n| d.ident(n));
    let mut s = |k: &str| f.opt(k).and_then(|n| d.string(n)).unwrap_or_default();
    let (group, subresource, namespace, name) =
        (s("group"), s("subresource"), s("namespace"), s("name"));
    let expect = f.req(d, "expect").and_then(|n| d.bool(n));
    let (user, groups) = who?;
    Some(Spec::CanI {
        query: crate::target::AccessQuery {
            user,
            groups,
            verb: verb?,
            group,
            resource: resource?,
            subresource,
            namespace,
            name,
        },
        expect: expect?,
    })
}

fn regexes(d: &mut Decoder<'_>, n: Option<&Node>) -> Vec<Regex> {
    let mut out = Vec::new();
    let Some(n) = n else { return out };
    let items: Vec<&Node> = match &n.value {
        Yaml::Seq(items) => items.iter().collect(),
        _ => vec![n],
    };
    for item in items {
        if let Some(s) = d.string(item) {
            // Line anchors: `^ok$` should find a line of output, as grep would.
            match regex::RegexBuilder::new(&s)
                .multi_line(true)
                .size_limit(1 << 20)
                .build()
            {
                Ok(r) => out.push(r),
                Err(e) => d.error(
                    item.pos,
                    msg(
                        format!("正規表現として読めません: {e}"),
                        format!("invalid regular expression: {e}"),
                    ),
                ),
            }
        }
    }
    out
}

fn decode_command(d: &mut Decoder<'_>, f: &Fields<'_>, tctx: &tera::Context) -> Option<Spec> {
    let run_node = f.req(d, "run");
    let run = run_node.map(|n| d.strings(n)).unwrap_or_default();
    if let Some(n) = run_node {
        for arg in run.iter().filter(|a| a.contains("{{")) {
            if let Err(e) = crate::lab::template::render(arg, tctx) {
                d.error_hint(
                    n.pos,
                    msg(
                        format!("引数 `{arg}` をレンダリングできません: {e}"),
                        format!("argument `{arg}` does not render: {e}"),
                    ),
                    msg(
                        "引数で使えるのは `lab`、`workspace`、`lab_dir` とラボの `vars` です",
                        "arguments know `lab`, `workspace`, `lab_dir` and the lab's `vars`",
                    ),
                );
            }
        }
    }
    if run.is_empty() && run_node.is_some() {
        d.error(
            f.pos(),
            msg(
                "`run` にはプログラムが必要です (リスト: プログラム、続けて引数)",
                "`run` needs a program (a list: program, then arguments)",
            ),
        );
    }
    let mut env = BTreeMap::new();
    if let Some(n) = f.opt("env") {
        if let Yaml::Map(entries) = &n.value {
            for (k, v) in entries {
                if let (Some(k), Some(v)) = (d.ident(k), d.string(v)) {
                    env.insert(k, v);
                }
            }
        } else {
            d.error(
                n.pos,
                msg(
                    format!("マッピングが必要ですが、{} が書かれています", n.type_name()),
                    format!("expected a mapping, found {}", n.type_name()),
                ),
            );
        }
    }
    let stdin = f.opt("stdin").and_then(|n| d.string(n));
    let exit = match f.opt("exit") {
        None => Some(ExitWant::Code(0)),
        Some(n) => match &n.value {
            Yaml::Int(i) if (0..=255).contains(i) => Some(ExitWant::Code(*i as i32)),
            Yaml::Str(s) if s == "nonzero" => Some(ExitWant::NonZero),
            _ => {
                d.error_hint(
                    n.pos,
                    msg(
                        "`exit` は終了コード 0..=255 か `nonzero` です",
                        "`exit` must be a code 0..=255 or `nonzero`",
                    ),
                    msg(
                        "たとえば `exit: 0` や `exit: nonzero`",
                        "e.g. `exit: 0` or `exit: nonzero`",
                    ),
                );
                None
            }
        },
    };
    let stdout = regexes(d, f.opt("stdout"));
    let stderr = regexes(d, f.opt("stderr"));
    let skip_exit = f
        .opt("skipExit")
        .and_then(|n| d.int_in(n, 1..=255))
        .map(|c| c as i32);
    if run.is_empty() {
        return None;
    }
    Some(Spec::Command {
        run,
        env,
        stdin,
        exit: exit?,
        stdout,
        stderr,
        skip_exit,
    })
}

/// One grant of a `least-privilege` check: `{groups, resources, verbs[, namespace]}`.
fn grants(d: &mut Decoder<'_>, n: &Node, with_namespace: bool) -> Vec<Grant> {
    let mut out = Vec::new();
    let Some(items) = d.list(n) else { return out };
    for item in items {
        let Some(g) = d.fields(item) else { continue };
        let groups = g
            .opt("groups")
            .map(|n| d.strings(n))
            .unwrap_or_else(|| vec![String::new()]);
        let resources = g
            .req(d, "resources")
            .map(|n| d.strings(n))
            .unwrap_or_default();
        let verbs = g.req(d, "verbs").map(|n| d.strings(n)).unwrap_or_default();
        let namespace = match g.opt("namespace") {
            Some(n) if with_namespace => d.string(n).unwrap_or_default(),
            Some(n) => {
                d.error_hint(
                    n.pos,
                    msg(
                        "`allowed` はすべての namespace に及ぶ上限です",
                        "`allowed` is an envelope, in every namespace",
                    ),
                    msg(
                        "namespace は `required` の権限付与にだけ書きます",
                        "give a namespace to a `required` grant only",
                    ),
                );
                String::new()
            }
            None => String::new(),
        };
        let at = g.pos();
        g.finish(d, ("権限付与 (grant)", "a grant"));
        if resources.is_empty() || verbs.is_empty() {
            d.error(
                at,
                msg(
                    "権限付与には `resources` と `verbs` (空でないリスト) が必要です",
                    "a grant needs `resources` and `verbs` (non-empty lists)",
                ),
            );
            continue;
        }
        out.push(Grant {
            groups,
            resources,
            verbs,
            namespace,
        });
    }
    out
}

/// `least-privilege`: `as`, `required: [GRANT]`, `allowed: [GRANT]`.
fn decode_least_privilege(d: &mut Decoder<'_>, f: &Fields<'_>) -> Option<Spec> {
    let who = f.req(d, "as").and_then(|n| identity(d, n));
    let required = f
        .opt("required")
        .map(|n| grants(d, n, true))
        .unwrap_or_default();
    let allowed = f
        .req(d, "allowed")
        .map(|n| grants(d, n, false))
        .unwrap_or_default();
    for r in &required {
        let covered = r.groups.iter().all(|g| {
            r.resources.iter().all(|res| {
                r.verbs
                    .iter()
                    .all(|v| allowed.iter().any(|a| a.covers(g, res, v)))
            })
        });
        if !covered {
            d.error_hint(
                f.pos(),
                msg(
                    format!(
                        "required の権限付与 ({} の {}) が `allowed` の外にあります。どの解答も合格できません",
                        r.resources.join(","),
                        r.verbs.join(",")
                    ),
                    format!(
                        "a required grant ({} on {}) is outside `allowed`: no answer could pass",
                        r.verbs.join(","),
                        r.resources.join(",")
                    ),
                ),
                msg("`required` が挙げるものをすべて含むよう `allowed` を広げます", "widen `allowed` to hold everything `required` names"),
            );
        }
    }
    let (user, groups) = who?;
    Some(Spec::LeastPrivilege {
        user,
        groups,
        required,
        allowed,
    })
}

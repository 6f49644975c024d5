//! The behaviour checks of a task: `admission` (a probe sent to the cluster, with what
//! must be left alone), `generated` (a trigger and what the background controller makes,
//! with its `sync` step) and `observed` (what a learner reads of a denial or an
//! UpdateRequest), and the probes they send.

use std::collections::BTreeSet;
use std::path::Path;

use super::super::decode::{Decoder, Fields};
use super::checks::{identity, obj_sel, tree, tree_checked, workspace_path};
use super::files::rel_path;
use super::*;
use crate::error::msg;
use crate::yaml::{Node, Yaml};

/// `probe: FILE` (one object, beside lab.yaml) or `probe: {object}` inline.
fn decode_probe(d: &mut Decoder<'_>, n: &Node, dir: &Path) -> Option<Probe> {
    let (source, object) = match &n.value {
        Yaml::Str(_) => {
            let path = rel_path(d, n)?;
            let src = dir.join(&path);
            let Ok(text) = crate::input::read_text(&src) else {
                d.error_hint(
                    n.pos,
                    msg(
                        format!("プローブのファイル `{path}` がありません"),
                        format!("missing probe file `{path}`"),
                    ),
                    msg(
                        format!("{} を作るか、オブジェクトをその場に書きます", src.display()),
                        format!("create {} or write the object inline", src.display()),
                    ),
                );
                return None;
            };
            match crate::yaml::parse_json_stream(&text) {
                Ok(mut docs) if docs.len() == 1 => (Some(path), docs.remove(0)),
                Ok(docs) => {
                    d.error(
                        n.pos,
                        msg(format!("プローブ `{path}` にはオブジェクトを 1 つだけ書きます ({} 個あります)", docs.len()), format!("probe `{path}` must hold one object, found {}", docs.len())),
                    );
                    return None;
                }
                Err(e) => {
                    d.error(
                        n.pos,
                        msg(
                            format!("プローブ `{path}` は YAML として読めません: {e}"),
                            format!("probe `{path}` is not valid YAML: {e}"),
                        ),
                    );
                    return None;
                }
            }
        }
        Yaml::Map(_) => (None, n.to_json()),
        _ => {
            d.error(
                n.pos,
                msg(
                    format!(
                        "ファイル名かオブジェクトが必要ですが、{} が書かれています",
                        n.type_name()
                    ),
                    format!("expected a file name or an object, found {}", n.type_name()),
                ),
            );
            return None;
        }
    };
    let has = |p: &str| object.pointer(p).and_then(Value::as_str).is_some();
    if !has("/apiVersion") || !has("/kind") {
        d.error_hint(
            n.pos,
            msg(
                "プローブのオブジェクトに apiVersion か kind がありません",
                "the probe object has no apiVersion or kind",
            ),
            msg(
                "Kubernetes オブジェクトを丸ごと書きます",
                "write a whole Kubernetes object",
            ),
        );
        return None;
    }
    Some(Probe { source, object })
}

pub(super) fn decode_admission(d: &mut Decoder<'_>, f: &Fields<'_>, dir: &Path) -> Option<Spec> {
    let probe = f.req(d, "probe").and_then(|n| decode_probe(d, n, dir));
    let update = match f.opt("operation") {
        None => Some(false),
        Some(n) => match d.string(n).as_deref() {
            Some("create") => Some(false),
            Some("update") => Some(true),
            Some(o) => {
                d.error_hint(
                    n.pos,
                    msg(
                        format!("operation `{o}` はありません"),
                        format!("unknown operation `{o}`"),
                    ),
                    msg(
                        "`create` か `update` を使います",
                        "use `create` or `update`",
                    ),
                );
                None
            }
            None => None,
        },
    };
    let user = match f.opt("as") {
        Some(n) => Some(identity(d, n)?),
        None => None,
    };
    let expect_node = f.req(d, "expect");
    let expect = expect_node.and_then(|n| d.string(n));
    let mut denier = None;
    if let Some(n) = f.opt("deniedBy") {
        let b = d.fields(n)?;
        let policy = b.opt("policy").and_then(|n| d.ident(n));
        let rule = b.opt("rule").and_then(|n| d.ident(n));
        let vap = b.opt("validatingAdmissionPolicy").and_then(|n| d.ident(n));
        b.finish(d, ("`deniedBy`", "`deniedBy`"));
        denier = match (policy, vap) {
            (Some(policy), None) => Some(Denier::Kyverno { policy, rule }),
            (None, Some(policy)) if rule.is_none() => Some(Denier::Vap { policy }),
            _ => {
                d.error_hint(
                    n.pos,
                    msg("`deniedBy` には `policy` (`rule` は任意) か `validatingAdmissionPolicy` が必要です", "`deniedBy` needs `policy` (with optional `rule`) or `validatingAdmissionPolicy`"),
                    msg("拒否するものをちょうど 1 つ挙げます", "name exactly one denier"),
                );
                return None;
            }
        };
    }
    let expect = match expect.as_deref() {
        Some("allowed") => {
            if denier.is_some() {
                d.error(
                    f.pos(),
                    msg(
                        "`deniedBy` には `expect: denied` が必要です",
                        "`deniedBy` needs `expect: denied`",
                    ),
                );
            }
            Expect::Allowed
        }
        Some("denied") => Expect::Denied(denier.clone()),
        Some(o) => {
            d.error_hint(
                expect_node.map_or(f.pos(), |n| n.pos),
                msg(
                    format!("期待 `{o}` はありません"),
                    format!("unknown expectation `{o}`"),
                ),
                msg(
                    "`allowed` か `denied` を使います",
                    "use `allowed` or `denied`",
                ),
            );
            return None;
        }
        None => return None,
    };
    let assert = f.opt("assert").and_then(|n| tree_checked(d, n));
    if assert.is_some() && expect != Expect::Allowed {
        d.error(
            f.pos(),
            msg(
                "`assert` は受け入れられたオブジェクトを検査します。`expect: allowed` が必要です",
                "`assert` checks the admitted object: it needs `expect: allowed`",
            ),
        );
    }
    let left_alone = f.opt("leftAlone").and_then(|n| d.bool(n)).unwrap_or(false);
    if left_alone && expect != Expect::Allowed {
        d.error_hint(
            f.pos(),
            msg("`leftAlone` のプローブは受け入れられるはずです。`expect: allowed` が必要です", "a `leftAlone` probe must be admitted: it needs `expect: allowed`"),
            msg("スコープ外のプローブは変更されずに通ります。拒否を試すなら `leftAlone` を外します", "a probe outside the scope comes through unchanged; to test a denial, drop `leftAlone`"),
        );
    }
    let mut policies = f.opt("policies").map(|n| d.strings(n)).unwrap_or_default();
    if let Some(Denier::Kyverno { policy, .. }) = &denier
        && !policies.contains(policy)
    {
        policies.push(policy.clone());
    }
    Some(Spec::Admission {
        probe: probe?,
        update: update?,
        user,
        expect,
        assert,
        policies,
        left_alone,
    })
}

pub(super) fn decode_generated(d: &mut Decoder<'_>, f: &Fields<'_>, dir: &Path) -> Option<Spec> {
    let trigger = f.req(d, "trigger").and_then(|n| decode_probe(d, n, dir));
    let expect = f.req(d, "expect").and_then(|n| obj_sel(d, n, true));
    let matches = f.opt("matches").and_then(|n| tree_checked(d, n));
    let policy = f.opt("policy").and_then(|n| d.ident(n));
    let sync = match f.opt("sync").and_then(|n| d.fields(n)) {
        Some(s) => {
            let source = s.req(d, "source").and_then(|n| obj_sel(d, n, true));
            let patch = s.req(d, "patch").map(tree);
            let matches = s.req(d, "matches").and_then(|n| tree_checked(d, n));
            let at = s.pos();
            s.finish(d, ("`sync` ステップ", "a `sync` step"));
            if patch.as_ref().is_some_and(|p| !p.is_object()) {
                d.error(
                    at,
                    msg(
                        "`patch` はマッピング (JSON merge patch) で書きます",
                        "`patch` must be a mapping (a JSON merge patch)",
                    ),
                );
                return None;
            }
            Some(SyncStep {
                source: source?,
                patch: patch?,
                matches: matches?,
            })
        }
        None => None,
    };
    let left_alone = f.opt("leftAlone").and_then(|n| d.bool(n)).unwrap_or(false);
    if left_alone && (matches.is_some() || sync.is_some()) {
        d.error(
            f.pos(),
            msg("`leftAlone` のトリガーは何も生成しません。`matches` と `sync` は意味がありません", "a `leftAlone` trigger generates nothing: `matches` and `sync` make no sense with it"),
        );
    }
    Some(Spec::Generated {
        trigger: trigger?,
        expect: expect?,
        matches,
        policy,
        sync: sync.map(Box::new),
        left_alone,
    })
}

/// `observed`: `path` (the learner's record), `from: {probe}` or `from: {trigger[,
/// policy]}`, `fields: {KEY: FACT}`.
pub(super) fn decode_observed(
    d: &mut Decoder<'_>,
    f: &Fields<'_>,
    dir: &Path,
    paths: &BTreeSet<String>,
) -> Option<Spec> {
    let path = workspace_path(d, f, paths);
    let source = match f.req(d, "from").and_then(|n| d.fields(n)) {
        Some(from) => {
            let probe = from.opt("probe").and_then(|n| decode_probe(d, n, dir));
            let trigger = from.opt("trigger").and_then(|n| decode_probe(d, n, dir));
            let policy = from.opt("policy").and_then(|n| d.ident(n));
            let starter = from
                .opt("starter")
                .map(|n| d.strings(n))
                .unwrap_or_default();
            let at = from.pos();
            from.finish(d, ("`from`", "`from`"));
            match (probe, trigger) {
                (Some(probe), None) if policy.is_none() => {
                    Some(ObservedSource::Denial { probe, starter })
                }
                (None, Some(trigger)) => Some(ObservedSource::UpdateRequest { trigger, policy }),
                _ => {
                    d.error_hint(
                        at,
                        msg("`from` には `probe` (拒否) か `trigger` (`policy` は任意。UpdateRequest) のどちらかが必要です", "`from` needs either `probe` (a denial) or `trigger` (with optional `policy`: an UpdateRequest)"),
                        msg("観察する状況をちょうど 1 つ挙げます", "name exactly one situation to observe"),
                    );
                    None
                }
            }
        }
        None => None,
    };
    let mut fields = Vec::new();
    if let Some(n) = f.req(d, "fields") {
        if let Yaml::Map(entries) = &n.value {
            for (k, v) in entries {
                let (Some(key), Some(fact)) = (d.string(k), d.string(v)) else {
                    continue;
                };
                match Fact::parse(&fact) {
                    Some(x) => fields.push((key, x)),
                    None => d.error_hint(
                        v.pos,
                        msg(
                            format!("fact `{fact}` はありません"),
                            format!("unknown fact `{fact}`"),
                        ),
                        msg(
                            format!("次のどれかを使います: {}", Fact::NAMES),
                            format!("use one of: {}", Fact::NAMES),
                        ),
                    ),
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
    let source = source?;
    let wrong = fields.iter().find(|(_, x)| match &source {
        ObservedSource::Denial { .. } => !matches!(x, Fact::Path | Fact::Container),
        ObservedSource::UpdateRequest { .. } => matches!(x, Fact::Path | Fact::Container),
    });
    if let Some((k, _)) = wrong {
        d.error_hint(
            f.pos(),
            msg(format!("`{k}`: その fact はこの状況にはありません"), format!("`{k}`: that fact is not part of this situation")),
            msg("拒否には `path` と `container`、UpdateRequest には `state`、`verb`、`resource` があります", "a denial has `path` and `container`; an UpdateRequest has `state`, `verb` and `resource`"),
        );
    }
    if fields.is_empty() {
        d.error(
            f.pos(),
            msg(
                "`fields` に比べる fact がありません",
                "`fields` names no fact to compare",
            ),
        );
    }
    Some(Spec::Observed {
        path: path?,
        source,
        fields,
    })
}

//! Admission verdicts: what the probe as sent came back as (allowed, left alone, denied
//! and by whom), how an admitted object differs from the probe, and the probe's name.
//! Part of `lab::check`; returns data, never prints.

use serde_json::Value;

use super::{By, Change, Check, Detail, Outcome, Probe, Spec, Verdict};
use crate::lab::equiv::semantic_match as partial_match;
use crate::lab::tree::short;

/// Judges an admission outcome for the probe as it was `sent` (varied, `lab::vary`):
/// allowed (keeping what kca added to it, and the returned object's assertions), left
/// alone (admitted and unchanged), or denied by the named policy/rule, from the parsed
/// denial rather than its text.
pub fn judge_admission(check: &Check, sent: &Value, got: &crate::target::Admission) -> Outcome {
    let mut o = judge_admission_as_sent(check, sent, got);
    if o.verdict == Verdict::Fail {
        o.detail = Detail::Varied {
            seed: crate::lab::vary::seed(),
            inner: Box::new(o.detail),
        };
    }
    o
}

fn judge_admission_as_sent(check: &Check, sent: &Value, got: &crate::target::Admission) -> Outcome {
    use crate::content::lab::{Denier, Expect};
    use crate::target::{Admission, DeniedBy};
    let Spec::Admission {
        expect,
        assert,
        left_alone,
        ..
    } = &check.spec
    else {
        return Outcome::internal("not an admission check");
    };
    let what = || probe(sent);
    match (expect, got) {
        (Expect::Allowed, Admission::Allowed { object, .. }) => {
            if let Some(lost) = crate::lab::vary::lost(sent, object, assert.as_ref()) {
                return Outcome::fail(Detail::LostWhatSent { what: what(), lost });
            }
            match (assert, *left_alone) {
                (None, false) => Outcome::pass(Detail::Admitted { what: what() }),
                (None, true) => match changes(sent, object) {
                    None => Outcome::pass(Detail::OutsideUnchanged { what: what() }),
                    Some(changes) => Outcome::fail(Detail::OutsideChanged {
                        what: what(),
                        changes,
                    }),
                },
                (Some(want), alone) => match partial_match(want, object) {
                    Ok(()) if alone => Outcome::pass(Detail::OutsideLeftAlone { what: what() }),
                    Ok(()) => Outcome::pass(Detail::AdmittedAsExpected { what: what() }),
                    Err(diff) if alone => {
                        Outcome::fail(Detail::OutsideDiffers { what: what(), diff })
                    }
                    Err(diff) => Outcome::fail(Detail::AdmittedBut { what: what(), diff }),
                },
            }
        }
        (Expect::Allowed, Admission::Denied(d)) if *left_alone => {
            Outcome::fail(Detail::OutsideDenied {
                what: what(),
                message: d.message.trim().to_string(),
            })
        }
        (Expect::Allowed, Admission::Denied(d)) => Outcome::fail(Detail::Denied {
            what: what(),
            message: d.message.trim().to_string(),
        }),
        (Expect::Denied(_), Admission::Allowed { .. }) => {
            Outcome::fail(Detail::AdmittedShouldDeny { what: what() })
        }
        (Expect::Denied(None), Admission::Denied(d)) => Outcome::pass(Detail::Denied {
            what: what(),
            message: d.message.trim().to_string(),
        }),
        (Expect::Denied(Some(want)), Admission::Denied(d)) => {
            let ok = match want {
                Denier::Kyverno { policy, rule } => d.denied_by_kyverno(policy, rule.as_deref()),
                Denier::Vap { policy } => d.all.iter().chain([&d.by]).any(|b| {
                    matches!(b, DeniedBy::ValidatingAdmissionPolicy { policy: p, .. } if p == policy)
                }),
            };
            let by = match want {
                Denier::Kyverno {
                    policy,
                    rule: Some(rule),
                } => By::Rule {
                    policy: policy.clone(),
                    rule: rule.clone(),
                },
                Denier::Kyverno { policy, rule: None } => By::Policy {
                    policy: policy.clone(),
                },
                Denier::Vap { policy } => By::Vap {
                    policy: policy.clone(),
                },
            };
            if ok {
                Outcome::pass(Detail::DeniedBy { what: what(), by })
            } else {
                Outcome::fail(Detail::DeniedNotBy {
                    what: what(),
                    by,
                    message: d.message.trim().to_string(),
                })
            }
        }
    }
}

/// Labels kca itself puts on what it sends (never the learner's mutation).
fn kca_key(k: &str) -> bool {
    k.starts_with("kca.dev/") || k == crate::content::lab::MANAGED_BY_LABEL
}

/// How the admitted object differs from the probe as sent, where a mutation shows and
/// the API server's defaulting does not: a label or annotation added, changed or
/// removed; a named list item (container, volume…) added or removed; a value the probe
/// had changed. `None`: unchanged.
pub fn changes(sent: &Value, got: &Value) -> Option<Vec<Change>> {
    let mut out = Vec::new();
    for key in ["labels", "annotations"] {
        let empty = serde_json::Map::new();
        let m = |v: &Value| {
            v.pointer(&format!("/metadata/{key}"))
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_else(|| empty.clone())
        };
        let (a, b) = (m(sent), m(got));
        for (k, v) in &b {
            if !kca_key(k) && a.get(k) != Some(v) {
                out.push(Change::Set {
                    map: key.into(),
                    key: k.clone(),
                    value: short(v),
                });
            }
        }
        for k in a.keys() {
            if !b.contains_key(k) {
                out.push(Change::Removed {
                    map: key.into(),
                    key: k.clone(),
                });
            }
        }
    }
    named_items(sent, got, "", &mut out);
    if out.is_empty()
        && let Err(e) = crate::lab::tree::partial_match(&without_meta_maps(sent), got)
    {
        out.push(Change::Value(e));
    }
    (!out.is_empty()).then_some(out)
}

fn without_meta_maps(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in ["labels", "annotations", "name", "generateName"] {
            m.remove(k);
        }
    }
    v
}

/// Lists of named items (containers, volumes…) whose names differ between the two.
fn named_items(sent: &Value, got: &Value, path: &str, out: &mut Vec<Change>) {
    match (sent, got) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                if let Some(w) = b.get(k) {
                    named_items(v, w, &format!("{path}.{k}"), out);
                }
            }
            // A named list the probe did not have at all (initContainers injected).
            for (k, w) in b {
                if !a.contains_key(k)
                    && let Value::Array(items) = w
                    && items.iter().any(|i| i.get("name").is_some())
                {
                    out.push(Change::ListAdded {
                        at: format!("{path}.{k}").trim_start_matches('.').to_string(),
                    });
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            let names = |l: &[Value]| -> Vec<String> {
                l.iter()
                    .filter_map(|i| i.get("name").and_then(Value::as_str).map(str::to_string))
                    .collect()
            };
            let (na, nb) = (names(a), names(b));
            if !na.is_empty() || !nb.is_empty() {
                let at = path.trim_start_matches('.');
                for n in nb.iter().filter(|n| !na.contains(n)) {
                    out.push(Change::Gained {
                        at: at.into(),
                        name: n.clone(),
                    });
                }
                for n in na.iter().filter(|n| !nb.contains(n)) {
                    out.push(Change::Lost {
                        at: at.into(),
                        name: n.clone(),
                    });
                }
                for x in a {
                    let n = x.get("name");
                    if let Some(y) = b.iter().find(|y| y.get("name") == n && n.is_some()) {
                        named_items(
                            x,
                            y,
                            &format!("{path}[{}]", n.and_then(Value::as_str).unwrap_or("")),
                            out,
                        );
                    }
                }
            }
        }
        _ => {}
    }
}

/// "Pod kca-mutate/kca-probe-…" for a probe that may only have a `generateName`.
pub fn probe(obj: &Value) -> Probe {
    let s = |p: &str| obj.pointer(p).and_then(Value::as_str);
    let name = s("/metadata/name")
        .map(str::to_string)
        .or_else(|| s("/metadata/generateName").map(|g| format!("{g}…")))
        .unwrap_or_else(|| "(unnamed)".into());
    Probe {
        kind: s("/kind").unwrap_or("object").to_string(),
        name: match s("/metadata/namespace") {
            Some(ns) => format!("{ns}/{name}"),
            None => name,
        },
    }
}

/// "the probe Pod kca-mutate/kca-probe-…" (English, for data such as an observed source).
pub fn probe_name(obj: &Value) -> String {
    let p = probe(obj);
    format!("the probe {} {}", p.kind, p.name)
}

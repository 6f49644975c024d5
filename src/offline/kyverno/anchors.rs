//! The walk of a validate `pattern` over a resource as Kyverno does it
//! (pkg/engine/validate/validate.go `MatchPattern`, pkg/engine/anchor/handlers.go,
//! anchormap.go, error.go): the order keys are visited in, which error wins, the path it
//! names and its wording, so a message reads as Kyverno's. Value operators are
//! `pattern::value_matches`; this module must not mutate resources.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::gofmt::{self, Numbers};
use super::pattern::{Anchor, expand_keys, parse_anchor, value_matches};

const CONDITIONAL: &str = "conditional anchor mismatch";
const GLOBAL: &str = "global anchor mismatch";
const NEGATION: &str = "negation anchor matched in resource";

/// What kind of Go error a step returned: an anchor's own error (`validateAnchorError`,
/// told apart by its code), the `*PatternError` that combines skipped siblings, or any
/// other error (told apart by its text, as `anchor.isError` falls back to).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Plain,
    Conditional,
    Global,
    Negation,
    Combined,
}

#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub kind: Kind,
    /// The path the step returned with its error (may be empty).
    pub path: String,
    pub message: String,
}

impl Failure {
    fn plain(path: &str, message: String) -> Failure {
        Failure {
            kind: Kind::Plain,
            path: path.to_string(),
            message,
        }
    }

    /// `validate.skip`: a conditional or global anchor did not hold.
    pub fn skips(&self) -> bool {
        match self.kind {
            Kind::Conditional | Kind::Global => true,
            Kind::Negation => false,
            Kind::Plain | Kind::Combined => {
                self.message.contains(CONDITIONAL) || self.message.contains(GLOBAL)
            }
        }
    }

    /// `validate.fail`: a negation anchor matched.
    pub fn negation(&self) -> bool {
        match self.kind {
            Kind::Negation => true,
            Kind::Conditional | Kind::Global => false,
            Kind::Plain | Kind::Combined => self.message.contains(NEGATION),
        }
    }
}

/// How `MatchPattern` ended.
#[derive(Debug, Clone)]
pub(crate) enum Verdict {
    Pass,
    /// The rule does not apply (`PatternError.Skip`); the message is the combined error.
    Skip(String),
    /// Failed at `path` (`RuleFail`), or with an empty path (`RuleError`).
    Fail {
        path: String,
        message: String,
    },
}

type R = Result<(), Failure>;

/// `MatchPattern(resource, pattern)`.
pub(crate) fn match_pattern(resource: &Value, pattern: &Value) -> Verdict {
    let mut w = Walk::default();
    match w.element(resource, pattern, "/") {
        Ok(()) => Verdict::Pass,
        Err(e) if e.skips() => Verdict::Skip(e.message),
        Err(e) if e.negation() => Verdict::Fail {
            path: e.path,
            message: e.message,
        },
        // An anchor key the resource never has makes the failure an error.
        Err(e) if w.keys_missing() => Verdict::Fail {
            path: String::new(),
            message: e.message,
        },
        Err(e) => Verdict::Fail {
            path: e.path,
            message: e.message,
        },
    }
}

/// The `AnchorMap` of one walk: whether each conditional, existence or negation anchor
/// key was ever found in the resource.
#[derive(Default)]
struct Walk {
    anchors: BTreeMap<String, bool>,
}

impl Walk {
    fn keys_missing(&self) -> bool {
        self.anchors
            .iter()
            .any(|(k, found)| !found && parse_anchor(k).0 != Anchor::Negation)
    }

    /// `CheckAnchorInResource`.
    fn note_anchors(&mut self, pm: &Map<String, Value>, rm: &Map<String, Value>) {
        for k in pm.keys() {
            let (anchor, bare) = parse_anchor(k);
            if matches!(
                anchor,
                Anchor::Conditional | Anchor::Existence | Anchor::Negation
            ) {
                let found = self.anchors.entry(k.clone()).or_insert(false);
                if !*found && rm.contains_key(bare) {
                    *found = true;
                }
            }
        }
    }

    /// `validateResourceElement`.
    fn element(&mut self, resource: &Value, pattern: &Value, path: &str) -> R {
        match pattern {
            Value::Object(pm) => {
                let Value::Object(rm) = resource else {
                    return Err(Failure::plain(
                        path,
                        format!(
                            "pattern and resource have different structures. Path: {path}. Expected {}, found {}",
                            gofmt::t(pattern, Numbers::Float),
                            gofmt::t(resource, Numbers::Resource)
                        ),
                    ));
                };
                self.note_anchors(pm, rm);
                self.map(rm, pm, path)
            }
            Value::Array(pa) => {
                let Value::Array(ra) = resource else {
                    return Err(Failure::plain(
                        path,
                        format!(
                            "validation rule failed at path {path}, resource does not satisfy the expected overlay pattern"
                        ),
                    ));
                };
                self.array(ra, pa, path)
            }
            scalar => {
                let holds = match resource {
                    Value::Array(items) => items.iter().all(|i| value_matches(i, scalar)),
                    other => value_matches(other, scalar),
                };
                if holds {
                    Ok(())
                } else {
                    Err(Failure::plain(
                        path,
                        format!(
                            "resource value '{}' does not match '{}' at path {path}",
                            gofmt::v(resource, Numbers::Resource),
                            gofmt::v(scalar, Numbers::Float)
                        ),
                    ))
                }
            }
        }
    }

    /// `validateMap`: the anchors first (sorted), then the other keys (global anchors and
    /// keys whose subtree holds anchors ahead of the rest).
    fn map(&mut self, rm: &Map<String, Value>, pm: &Map<String, Value>, path: &str) -> R {
        let entries = expand_keys(rm, pm);
        let mut anchors: Vec<(&str, &Value)> = Vec::new();
        let mut resources: Vec<(&str, &Value)> = Vec::new();
        for (k, v) in &entries {
            match parse_anchor(k).0 {
                Anchor::Conditional | Anchor::Existence | Anchor::Equality | Anchor::Negation => {
                    anchors.push((k.as_ref(), *v))
                }
                _ => resources.push((k.as_ref(), *v)),
            }
        }
        anchors.sort_by(|a, b| a.0.cmp(b.0));
        let mut skipped: Vec<Failure> = Vec::new();
        let mut applied = 0usize;
        // A skipped anchor of this map itself (not a combination from below).
        let sibling = |s: &[Failure]| s.iter().any(|e| e.kind != Kind::Combined);
        for (k, pv) in anchors {
            match self.handle(rm, k, pv, path) {
                Ok(()) => applied += 1,
                Err(e) if e.skips() => skipped.push(e),
                Err(e) if !sibling(&skipped) => return Err(e),
                Err(_) => {}
            }
        }
        if !skipped.is_empty() && (applied == 0 || sibling(&skipped)) {
            return Err(combined(path, &skipped));
        }
        resources.sort_by(|a, b| a.0.cmp(b.0));
        let (mut front, back): (Vec<_>, Vec<_>) = resources
            .into_iter()
            .partition(|(k, v)| parse_anchor(k).0 == Anchor::Global || nested_anchors(v));
        // `PushFront` in sorted order leaves them reversed.
        front.reverse();
        for (k, pv) in front.into_iter().chain(back) {
            self.handle(rm, k, pv, path)?;
        }
        Ok(())
    }

    /// `CreateElementHandler(key).Handle`.
    fn handle(&mut self, rm: &Map<String, Value>, key: &str, pv: &Value, path: &str) -> R {
        let (anchor, bare) = parse_anchor(key);
        let current = format!("{path}{bare}/");
        match anchor {
            Anchor::Conditional => match rm.get(bare) {
                Some(v) => self.element(v, pv, &current).map_err(|e| Failure {
                    kind: Kind::Conditional,
                    path: e.path,
                    message: format!("{CONDITIONAL}: {}", e.message),
                }),
                None => Err(Failure {
                    kind: Kind::Conditional,
                    path: current,
                    message: format!(
                        "{CONDITIONAL}: conditional anchor key doesn't exist in the resource"
                    ),
                }),
            },
            Anchor::Global => match rm.get(bare) {
                Some(v) => self.element(v, pv, &current).map_err(|e| Failure {
                    kind: Kind::Global,
                    path: e.path,
                    message: format!("{GLOBAL}: {}", e.message),
                }),
                None => Ok(()),
            },
            Anchor::Equality => match rm.get(bare) {
                Some(v) => self.element(v, pv, &current),
                None => Ok(()),
            },
            Anchor::Negation => match rm.get(bare) {
                Some(_) => Err(Failure {
                    kind: Kind::Negation,
                    path: current.clone(),
                    message: format!("{NEGATION}: {current} is not allowed"),
                }),
                None => Ok(()),
            },
            Anchor::Existence => match rm.get(bare) {
                Some(v) => self.existence(v, pv, &current),
                None => Ok(()),
            },
            // The default handler looks the key up as written (`+(x)` included).
            Anchor::None | Anchor::AddIfAbsent => {
                let current = format!("{path}{key}/");
                let rv = rm.get(key).unwrap_or(&Value::Null);
                if pv.as_str() == Some("*") {
                    return if rv.is_null() {
                        Err(Failure::plain(path, format!("{path}/{key} not found")))
                    } else {
                        Ok(())
                    };
                }
                self.element(rv, pv, &current)
            }
        }
    }

    /// `existenceHandler.Handle`: each map of the pattern list matches some item.
    fn existence(&mut self, rv: &Value, pv: &Value, path: &str) -> R {
        let Value::Array(items) = rv else {
            return Err(Failure::plain(
                path,
                format!(
                    "invalid resource type {}: Existence ^ () anchor can be used only on list/array type resource",
                    gofmt::t(rv, Numbers::Resource)
                ),
            ));
        };
        let Value::Array(patterns) = pv else {
            return Err(Failure::plain(
                path,
                format!(
                    "invalid pattern type {}: Pattern has to be of list to compare against resource",
                    gofmt::t(pv, Numbers::Float)
                ),
            ));
        };
        for p in patterns {
            if !p.is_object() {
                return Err(Failure::plain(
                    path,
                    format!(
                        "invalid pattern type {}: Pattern has to be of type map to compare against items in resource",
                        gofmt::t(pv, Numbers::Float)
                    ),
                ));
            }
            let found = items
                .iter()
                .enumerate()
                .any(|(i, item)| self.element(item, p, &format!("{path}{i}/")).is_ok());
            if !found {
                return Err(Failure::plain(
                    path,
                    format!("existence anchor validation failed at path {path}"),
                ));
            }
        }
        Ok(())
    }

    /// `validateArray`.
    fn array(&mut self, ra: &[Value], pa: &[Value], path: &str) -> R {
        let Some(first) = pa.first() else {
            return Err(Failure::plain(path, "pattern Array empty".into()));
        };
        match first {
            // Every item against the first map (`validateArrayOfMaps`).
            Value::Object(_) => self.items(ra.iter().map(|item| (item, first)), path),
            Value::Array(_) => {
                if ra.len() < pa.len() {
                    return Err(Failure::plain(
                        "",
                        format!(
                            "validate Array failed, array length mismatch, resource Array len is {} and pattern Array len is {}",
                            ra.len(),
                            pa.len()
                        ),
                    ));
                }
                self.items(ra.iter().zip(pa), path)
            }
            // A scalar pattern: every item against it.
            scalar => self.element(&Value::Array(ra.to_vec()), scalar, path),
        }
    }
}

impl Walk {
    /// Items against their patterns, at `path` + index: a failure ends the walk, and if
    /// every item skipped, their errors combine into one skip.
    fn items<'v>(&mut self, pairs: impl Iterator<Item = (&'v Value, &'v Value)>, path: &str) -> R {
        let mut applied = 0usize;
        let mut skipped = Vec::new();
        for (i, (item, p)) in pairs.enumerate() {
            match self.element(item, p, &format!("{path}{i}/")) {
                Ok(()) => applied += 1,
                Err(e) if e.skips() => skipped.push(e),
                Err(e) => return Err(e),
            }
        }
        if applied == 0 && !skipped.is_empty() {
            return Err(combined(path, &skipped));
        }
        Ok(())
    }
}

/// `multierr.Combine(skipErrors...)` as a skipping `PatternError` at `path`.
fn combined(path: &str, skipped: &[Failure]) -> Failure {
    Failure {
        kind: Kind::Combined,
        path: path.to_string(),
        message: skipped
            .iter()
            .map(|e| e.message.as_str())
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// `hasNestedAnchors`: any conditional, existence, equality, negation or global anchor
/// below.
fn nested_anchors(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, v)| {
            !matches!(parse_anchor(k).0, Anchor::None | Anchor::AddIfAbsent) || nested_anchors(v)
        }),
        Value::Array(a) => a.iter().any(nested_anchors),
        _ => false,
    }
}

#[cfg(test)]
#[path = "anchors_tests.rs"]
mod tests;

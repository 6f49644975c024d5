//! Comparing what kca produced (a patched or generated object) with the object a test
//! row names, as `kyverno test` does: nulls and empty maps dropped, the namespace the CLI
//! fills in and Kyverno's own generate labels set aside.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Map, Value};

use super::{FileError, read_docs};

/// Why a produced object is not the one a test row names.
#[derive(Debug, thiserror::Error)]
pub(super) enum Mismatch {
    #[error(transparent)]
    Unreadable(#[from] FileError),
    /// Where the objects first differ, and how.
    #[error("{0}")]
    Differs(String),
}

/// Compares the expected object(s) in `file` with what we produced.
pub(super) fn compare_file(
    file: &Path,
    produced: &[Value],
    fallback: &Value,
    generated: bool,
) -> Result<(), Mismatch> {
    let expected = read_docs(file)?;
    for want in &expected {
        let key = identity(want);
        let got = produced
            .iter()
            .find(|p| identity(p) == key)
            .unwrap_or(fallback);
        let (a, mut b) = (normalize(want), normalize(got));
        // The namespace `kyverno test` fills in and the labels Kyverno puts on generated
        // objects are not part of what a test file states.
        if a.pointer("/metadata/namespace").is_none()
            && let Some(m) = b.get_mut("metadata").and_then(Value::as_object_mut)
        {
            m.remove("namespace");
        }
        let (a, b) = if generated {
            (fixup_generate_labels(a), fixup_generate_labels(b))
        } else {
            (a, b)
        };
        let a = if got.pointer("/metadata/namespace").is_none() {
            let mut a = a;
            if let Some(m) = a.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("namespace");
            }
            a
        } else {
            a
        };
        if a != b {
            return Err(Mismatch::Differs(first_difference(&a, &b, "")));
        }
    }
    Ok(())
}

/// What `kyverno test` does before comparing generated objects: Kyverno's own
/// `generate.kyverno.io/*` labels go, the managed-by label is always Kyverno.
fn fixup_generate_labels(mut v: Value) -> Value {
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        let labels = meta
            .entry("labels")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(labels) = labels.as_object_mut() {
            labels.retain(|k, _| !k.starts_with("generate.kyverno.io/"));
            labels.insert(
                crate::offline::kyverno::generate::MANAGED_BY.to_string(),
                Value::String("kyverno".into()),
            );
        }
    }
    v
}

fn identity(v: &Value) -> (String, String, String) {
    let s = |p: &str| {
        v.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    (s("/kind"), s("/metadata/name"), s("/metadata/namespace"))
}

/// Drops nulls and empty maps/lists, which Kyverno's comparison also ignores.
fn normalize(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| k.as_str() != "creationTimestamp")
                .map(|(k, v)| (k.clone(), normalize(v)))
                .filter(|(_, v)| !is_empty(v))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(normalize).collect()),
        other => other.clone(),
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

fn first_difference(want: &Value, got: &Value, path: &str) -> String {
    match (want, got) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let (x, y) = (
                    a.get(k).unwrap_or(&Value::Null),
                    b.get(k).unwrap_or(&Value::Null),
                );
                if x != y {
                    return first_difference(x, y, &format!("{path}/{k}"));
                }
            }
            path.to_string()
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                if x != y {
                    return first_difference(x, y, &format!("{path}/{i}"));
                }
            }
            path.to_string()
        }
        _ => format!(
            "at {}: expected {}, got {}",
            if path.is_empty() { "/" } else { path },
            want,
            got
        ),
    }
}

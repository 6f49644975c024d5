//! The one shape of kca's JSON documents: an object that starts with `schemaVersion`,
//! followed by the command's own fields; a list is always a named array inside that
//! object (`{"schemaVersion": 1, "labs": [...]}`), never a bare array. README.md
//! ("Machine output") documents the convention.

use serde::Serialize;

/// Bumped when a field of any JSON document changes meaning or goes away.
pub const SCHEMA_VERSION: u32 = 1;

/// `{"schemaVersion": N, ...body}`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope<T: Serialize> {
    pub schema_version: u32,
    #[serde(flatten)]
    pub body: T,
}

impl<T: Serialize> Envelope<T> {
    pub fn new(body: T) -> Self {
        Envelope {
            schema_version: SCHEMA_VERSION,
            body,
        }
    }
}

/// `value` as a document of the one shape: an object gets `schemaVersion` as its first
/// field (a body that already carries it keeps its own value); anything else is wrapped
/// as `{"schemaVersion": N, "value": …}`, since a bare array or scalar is never a document.
pub fn stamp(value: serde_json::Value) -> serde_json::Value {
    use serde_json::{Map, Value};
    let body = match value {
        Value::Object(map) => map,
        other => Map::from_iter([("value".to_string(), other)]),
    };
    let version = body
        .get("schemaVersion")
        .cloned()
        .unwrap_or_else(|| Value::from(SCHEMA_VERSION));
    let mut out = Map::with_capacity(body.len() + 1);
    out.insert("schemaVersion".into(), version);
    out.extend(body.into_iter().filter(|(k, _)| k != "schemaVersion"));
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_document_is_stamped_first_and_only_once() {
        let v = stamp(serde_json::json!({"labs": [], "schemaVersion": 1}));
        assert_eq!(v.to_string(), r#"{"schemaVersion":1,"labs":[]}"#);
        let v = stamp(serde_json::json!({"quizzes": []}));
        assert_eq!(v.to_string(), r#"{"schemaVersion":1,"quizzes":[]}"#);
        let v = stamp(serde_json::json!([1, 2]));
        assert_eq!(v.to_string(), r#"{"schemaVersion":1,"value":[1,2]}"#);
    }

    #[test]
    fn version_comes_first_then_the_body() {
        let v = serde_json::to_string(&Envelope::new(serde_json::json!({"labs": []}))).unwrap();
        assert_eq!(v, r#"{"schemaVersion":1,"labs":[]}"#);
    }
}

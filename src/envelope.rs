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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_comes_first_then_the_body() {
        let v = serde_json::to_string(&Envelope::new(serde_json::json!({"labs": []}))).unwrap();
        assert_eq!(v, r#"{"schemaVersion":1,"labs":[]}"#);
    }
}

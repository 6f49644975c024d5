//! The Kyverno CLI test file (`kyverno-test.yaml`, `cli.kyverno.io/v1alpha1` `Test`)
//! decoded into types: the files it names and its result rows. Decoding is as lenient as
//! `kyverno test` is with what it does not use (unknown fields are ignored; a single
//! string stands for a one-item list), and strict about nothing else. It reads no file.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A test file's fields that `kca policy test` uses.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TestFile {
    #[serde(deserialize_with = "strings")]
    pub policies: Vec<String>,
    #[serde(deserialize_with = "strings")]
    pub resources: Vec<String>,
    #[serde(deserialize_with = "strings")]
    pub exceptions: Vec<String>,
    #[serde(deserialize_with = "strings")]
    pub param_resources: Vec<String>,
    #[serde(deserialize_with = "strings")]
    pub cluster_resources: Vec<String>,
    #[serde(deserialize_with = "strings")]
    pub target_resources: Vec<String>,
    #[serde(deserialize_with = "string")]
    pub context: String,
    /// A values file.
    #[serde(deserialize_with = "string")]
    pub variables: String,
    /// Inline values (the values file's shape).
    pub values: Option<Value>,
    /// Mocked service-call responses, schemaless as Kyverno keeps them.
    #[serde(deserialize_with = "values")]
    pub api_call_responses: Vec<Value>,
    /// Non-Kubernetes JSON payloads (files) that JSON-mode ValidatingPolicies evaluate.
    #[serde(deserialize_with = "strings")]
    pub json_payloads: Vec<String>,
    /// Mocked GlobalContextEntry data, schemaless as Kyverno keeps it.
    #[serde(deserialize_with = "values")]
    pub global_context_entries: Vec<Value>,
    #[serde(deserialize_with = "string")]
    pub userinfo: String,
    #[serde(deserialize_with = "rows")]
    pub results: Vec<ResultRow>,
}

/// One `results` entry: a policy (and rule) on one or more resources, and what Kyverno
/// should answer.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResultRow {
    #[serde(deserialize_with = "string")]
    pub policy: String,
    #[serde(deserialize_with = "string")]
    pub rule: String,
    #[serde(deserialize_with = "string")]
    pub kind: String,
    #[serde(deserialize_with = "string")]
    pub result: String,
    /// The older spelling of `result`.
    #[serde(deserialize_with = "string")]
    pub status: String,
    #[serde(deserialize_with = "strings")]
    pub resources: Vec<String>,
    #[serde(deserialize_with = "strings")]
    pub resource: Vec<String>,
    #[serde(deserialize_with = "string")]
    pub namespace: String,
    #[serde(deserialize_with = "string")]
    pub operation: String,
    #[serde(deserialize_with = "string")]
    pub patched_resources: String,
    #[serde(deserialize_with = "string")]
    pub patched_resource: String,
    #[serde(deserialize_with = "string")]
    pub generated_resource: String,
    #[serde(deserialize_with = "string")]
    pub clone_source_resource: String,
    #[serde(deserialize_with = "flag")]
    pub is_validating_admission_policy: bool,
    #[serde(deserialize_with = "flag")]
    pub is_validating_policy: bool,
    #[serde(deserialize_with = "flag")]
    pub is_image_validating_policy: bool,
    #[serde(deserialize_with = "flag")]
    pub is_mutating_policy: bool,
    /// The misspelling some of Kyverno's library tests use.
    #[serde(rename = "isMUtatingPolicy", deserialize_with = "flag")]
    pub is_mutating_policy_misspelt: bool,
    #[serde(deserialize_with = "flag")]
    pub is_mutating_admission_policy: bool,
    #[serde(deserialize_with = "flag")]
    pub is_generating_policy: bool,
    #[serde(deserialize_with = "flag")]
    pub is_deleting_policy: bool,
}

/// The kind a row's flag says its policy is, when a flag is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flagged {
    ValidatingAdmissionPolicy,
    ValidatingPolicy,
    ImageValidatingPolicy,
    MutatingPolicy,
    MutatingAdmissionPolicy,
    GeneratingPolicy,
    DeletingPolicy,
}

impl Flagged {
    /// Whether kca evaluates a row flagged so when its policy is among the test's (the
    /// others are skipped whatever the files hold).
    pub fn needs_its_policy(self) -> bool {
        matches!(
            self,
            Flagged::ValidatingAdmissionPolicy
                | Flagged::ValidatingPolicy
                | Flagged::MutatingPolicy
                | Flagged::GeneratingPolicy
        )
    }

    /// Why a row flagged so is not evaluated, when its policy is not among the test's
    /// (or, for the kinds kca does not evaluate, at all).
    pub fn reason(self) -> &'static str {
        match self {
            Flagged::ValidatingAdmissionPolicy => {
                "ValidatingAdmissionPolicy (CEL) is not evaluated offline"
            }
            Flagged::ValidatingPolicy => "ValidatingPolicy not found among the test's policies",
            Flagged::ImageValidatingPolicy => "ImageValidatingPolicy needs registry access",
            Flagged::MutatingPolicy => "MutatingPolicy not found among the test's policies",
            Flagged::MutatingAdmissionPolicy => {
                "MutatingAdmissionPolicy (CEL) is not evaluated offline"
            }
            Flagged::GeneratingPolicy => "GeneratingPolicy not found among the test's policies",
            Flagged::DeletingPolicy => "DeletingPolicy is not evaluated offline",
        }
    }
}

impl ResultRow {
    /// `result`, or the older `status`.
    pub fn expected(&self) -> &str {
        if self.result.is_empty() {
            &self.status
        } else {
            &self.result
        }
    }

    /// Every resource the row names.
    pub fn resource_names(&self) -> Vec<String> {
        self.resources
            .iter()
            .chain(&self.resource)
            .cloned()
            .collect()
    }

    /// The row's own namespace, if it states one.
    pub fn namespace(&self) -> Option<&str> {
        Some(self.namespace.as_str()).filter(|n| !n.is_empty())
    }

    /// The patched-resource file, under either spelling.
    pub fn patched_file(&self) -> Option<&str> {
        [&self.patched_resources, &self.patched_resource]
            .into_iter()
            .find(|f| !f.is_empty())
            .map(String::as_str)
    }

    pub fn generated_file(&self) -> Option<&str> {
        Some(self.generated_resource.as_str()).filter(|f| !f.is_empty())
    }

    /// The first kind flag set, in the order Kyverno's CLI checks them.
    pub fn flagged(&self) -> Option<Flagged> {
        [
            (
                self.is_validating_admission_policy,
                Flagged::ValidatingAdmissionPolicy,
            ),
            (self.is_validating_policy, Flagged::ValidatingPolicy),
            (
                self.is_image_validating_policy,
                Flagged::ImageValidatingPolicy,
            ),
            (self.is_mutating_policy, Flagged::MutatingPolicy),
            (self.is_mutating_policy_misspelt, Flagged::MutatingPolicy),
            (
                self.is_mutating_admission_policy,
                Flagged::MutatingAdmissionPolicy,
            ),
            (self.is_generating_policy, Flagged::GeneratingPolicy),
            (self.is_deleting_policy, Flagged::DeletingPolicy),
        ]
        .into_iter()
        .find_map(|(set, kind)| set.then_some(kind))
    }
}

/// Why a document is not a Kyverno CLI test.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("not a Kyverno CLI test: the document is not a mapping")]
    NotMapping,
    #[error("not a Kyverno CLI test: {0}")]
    Shape(#[source] serde_json::Error),
}

/// Decodes a test file's first document.
pub fn decode(doc: Value) -> Result<TestFile, DecodeError> {
    if !doc.is_object() {
        return Err(DecodeError::NotMapping);
    }
    serde_json::from_value(doc).map_err(DecodeError::Shape)
}

/// A string, or empty for anything else (Kyverno ignores what it cannot read).
fn string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => s,
        _ => String::new(),
    })
}

/// A list of strings, a single string standing for a one-item list.
fn strings<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => vec![s],
        Value::Array(a) => a
            .into_iter()
            .filter_map(|x| match x {
                Value::String(s) => Some(s),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    })
}

fn values<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Value>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Array(a) => a,
        _ => Vec::new(),
    })
}

fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Value::deserialize(d)?.as_bool() == Some(true))
}

/// Rows that are not mappings are left out, as the rest of a malformed file is.
fn rows<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ResultRow>, D::Error> {
    let Value::Array(items) = Value::deserialize(d)? else {
        return Ok(Vec::new());
    };
    Ok(items
        .into_iter()
        .filter_map(|x| serde_json::from_value(x).ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decodes_leniently_like_kyverno() {
        let t = decode(json!({
            "apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Test",
            "policies": "p.yaml", "resources": ["r.yaml", 3], "userinfo": "u.yaml",
            "unknown": {"x": 1},
            "results": [
                {"policy": "ns/p", "rule": "r", "resources": ["a"], "resource": "b",
                 "status": "fail", "isMUtatingPolicy": true, "patchedResource": "x.yaml"},
                "not a row"
            ]
        }))
        .unwrap();
        assert_eq!(t.policies, ["p.yaml"]);
        assert_eq!(t.resources, ["r.yaml"]);
        assert_eq!(t.userinfo, "u.yaml");
        assert_eq!(t.results.len(), 1);
        let r = &t.results[0];
        assert_eq!(r.expected(), "fail");
        assert_eq!(r.resource_names(), ["a", "b"]);
        assert_eq!(r.flagged(), Some(Flagged::MutatingPolicy));
        assert_eq!(r.patched_file(), Some("x.yaml"));
        assert_eq!(r.namespace(), None);
        assert!(decode(json!(["not", "a", "map"])).is_err());
    }
}

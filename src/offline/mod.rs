//! The offline grading target: RBAC, Kyverno and ValidatingAdmissionPolicy evaluated
//! in-process. Pure and synchronous; no network.

pub mod conformance;
pub mod digest;
pub mod kyverno;
pub mod labels;
pub mod manifest;
pub mod rbac;
pub mod vap;

use serde_json::Value;

/// The strings of a JSON list (other items skipped); none when `v` is not a list.
pub(crate) fn str_items(v: Option<&Value>) -> impl Iterator<Item = &str> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

//! The offline grading target: RBAC, Kyverno and ValidatingAdmissionPolicy evaluated
//! in-process. Pure and synchronous; no network.

pub mod conformance;
pub mod kyverno;
pub mod labels;
pub mod manifest;
pub mod rbac;
pub mod vap;

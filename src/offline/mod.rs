//! The offline grading target: RBAC and Kyverno evaluated in-process. Pure and
//! synchronous; no network.

pub mod kyverno;
pub mod rbac;
pub mod vap;

//! Kyverno `ClusterPolicy`/`Policy` evaluated in-process.

pub mod command;

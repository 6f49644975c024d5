//! kca: a command-line runner for a hands-on Kyverno course.
//!
//! The library holds everything; `main.rs` only parses arguments and maps the outcome to
//! an exit code. See ARCHITECTURE.md for the map of modules.

pub mod diag;
pub mod yaml;

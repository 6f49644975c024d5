//! kca: a command-line runner for a hands-on Kyverno course.
//!
//! The library holds everything; `main.rs` only parses arguments and maps the outcome to
//! an exit code. See ARCHITECTURE.md for the map of modules.

pub mod alloc;
pub mod app;
pub mod cli;
pub mod cluster;
pub mod completions;
pub mod content;
pub mod course;
pub mod ctx;
pub mod diag;
pub mod document;
pub mod envelope;
pub mod error;
pub mod escape;
pub mod exec;
pub mod exit;
pub mod helm;
pub mod input;
pub mod jp;
pub mod junit;
pub mod lab;
pub mod lesson;
pub mod offline;
pub mod par;
pub mod quiz;
pub mod report;
pub mod schema;
pub mod settings;
pub mod state;
pub mod target;
pub mod ui;
pub mod validate;
pub mod yaml;

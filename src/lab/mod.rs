//! Labs: model, lifecycle (start, check, hint, reset, verify) and reports.

pub mod command;

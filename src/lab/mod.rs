//! Labs: finding and loading them, the lifecycle (start, check, hint, reset, verify, new),
//! check evaluation on the live and offline targets, and reports.

pub mod check;
pub mod command;
pub mod creation;
pub mod detail;
pub mod equiv;
pub mod gates;
pub mod grade;
pub mod here;
pub mod incident;
mod inproc;
pub mod lifecycle;
pub mod live;
pub mod observe;
pub mod offline;
pub mod overview;
pub mod privilege;
pub mod progress;
pub mod report;
pub mod reset;
pub mod scaffold;
pub mod setup;
pub mod show;
pub mod submission;
pub mod task;
pub mod template;
pub mod tree;
pub mod vary;
pub mod verify;
pub mod watch;
pub mod workspace;

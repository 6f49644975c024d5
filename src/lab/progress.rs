//! The learner's lab progress (`labs.json` in the state store): which labs were started,
//! where their workspaces are, which cluster they use, hints shown, the last check.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::state::Store;

pub const FILE: &str = "labs.json";

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Progress {
    /// The lab started last: the default of `check`, `hint`.
    pub current: Option<String>,
    pub labs: BTreeMap<String, LabProgress>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LabProgress {
    pub started: String,
    pub workspace: PathBuf,
    /// How `start` reached the cluster; `offline` when it did not.
    pub target: TargetRecord,
    /// Hints shown so far, per task.
    #[serde(default)]
    pub hints: BTreeMap<String, usize>,
    #[serde(default)]
    pub last_check: Option<LastCheck>,
    #[serde(default)]
    pub resets: Vec<String>,
    /// Task setups applied (task id → RFC 3339 time), once each; a reset forgets them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub setups: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TargetRecord {
    pub offline: bool,
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LastCheck {
    pub at: String,
    pub target: String,
    pub score: u32,
    pub max_score: u32,
    /// Tasks whose checks all passed.
    pub tasks_passed: Vec<String>,
    pub tasks_checked: Vec<String>,
}

pub fn now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

pub fn read(store: &Store) -> Result<Progress> {
    store.read::<Progress>(FILE)
}

pub fn update<R>(store: &Store, f: impl FnOnce(&mut Progress) -> R) -> Result<R> {
    store.update::<Progress, R>(FILE, f)
}

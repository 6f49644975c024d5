//! `kca cluster …`: the course kind cluster and Kyverno install, through the kind and helm
//! CLIs, and the lab-cluster marker. Talks to the API server only through `target::live`.

use std::path::PathBuf;

use crate::app::Ctx;
use crate::cli::cluster::{ClusterCommand, TargetArgs};
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::target::live::{Live, LiveError};

/// Where a lab wants to run: the cluster selection and whether an unmarked cluster is fine.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
}

impl From<&TargetArgs> for Selection {
    fn from(a: &TargetArgs) -> Self {
        Selection {
            kubeconfig: a.kubeconfig.clone(),
            context: a.context.clone(),
        }
    }
}

pub fn run(_ctx: &Ctx, _cmd: ClusterCommand) -> Result<Exit> {
    Err(Error::environment(
        "kca cluster is not built yet",
        "see README.md",
    ))
}

/// True when the cluster carries kca's lab-cluster marker.
pub async fn is_lab_cluster(_live: &Live) -> Result<bool, LiveError> {
    Err(LiveError::Unsupported("not built yet".into()))
}

/// Connects to the selected cluster for a lab: reachable (else an environment error), and,
/// when `need_marked`, carrying the lab-cluster marker (else an environment error whose hint
/// is `kca cluster up` / `kca cluster adopt`). Async because the returned client lives on
/// the caller's runtime.
pub async fn ensure_cluster(_ctx: &Ctx, _sel: &Selection, _need_marked: bool) -> Result<Live> {
    Err(Error::environment(
        "kca cluster is not built yet",
        "see README.md",
    ))
}

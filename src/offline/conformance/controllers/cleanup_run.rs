//! What one tick of a `CleanupPolicy`/`ClusterCleanupPolicy` deletes
//! (pkg/controllers/cleanup/controller.go `cleanup`).

use serde_json::Value;

use super::super::Skip;
use super::super::cluster::{Cluster, Key};
use crate::offline::rbac::Authorizer;
use crate::offline::rbac::resource::Mapper;

/// The objects one tick of `policy` deletes.
pub fn selected(
    _cluster: &Cluster,
    _policy: &Value,
    _authorizer: &Authorizer,
    _mapper: &Mapper,
) -> Result<Vec<Key>, Skip> {
    Err(Skip::Cleanup(
        "the cleanup controller's cleanup-policy ticks (match, context, conditions)".into(),
    ))
}

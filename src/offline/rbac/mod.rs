//! RBAC evaluated as the Kubernetes authorizer does.

pub mod command;

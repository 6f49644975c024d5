//! The live grading target: a real cluster through kube-rs. The only module in kca that
//! talks to an API server; it knows nothing about labs, checks or verdicts.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::{AccessAnswer, AccessQuery, Admission, Identity, ObjRef, Operation};

#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("cannot reach the cluster: {0}")]
    Unreachable(String),
    #[error("timed out: {0}")]
    Timeout(String),
    #[error("the API server answered {code}: {message}")]
    Api { code: u16, message: String },
    #[error("{0}")]
    Unsupported(String),
}

pub struct Live {
    client: kube::Client,
    context: Option<String>,
}

fn todo_err() -> LiveError {
    LiveError::Unsupported("not built yet".into())
}

impl Live {
    pub async fn connect(_kubeconfig: Option<&Path>, _context: Option<&str>) -> Result<Live, LiveError> {
        Err(todo_err())
    }
    pub fn from_client(client: kube::Client) -> Live {
        Live { client, context: None }
    }
    pub fn context_name(&self) -> Option<&str> {
        let _ = &self.client;
        self.context.as_deref()
    }
    pub async fn server_version(&self) -> Result<(u32, u32), LiveError> {
        Err(todo_err())
    }
    pub async fn serves(&self, _api_version: &str, _kind: &str) -> Result<bool, LiveError> {
        Err(todo_err())
    }
    pub async fn can_i(&self, _q: &AccessQuery) -> Result<AccessAnswer, LiveError> {
        Err(todo_err())
    }
    pub async fn admit(&self, _obj: &Value, _op: Operation, _as_: Option<&Identity>) -> Result<Admission, LiveError> {
        Err(todo_err())
    }
    pub async fn get(&self, _r: &ObjRef) -> Result<Option<Value>, LiveError> {
        Err(todo_err())
    }
    pub async fn list(&self, _api_version: &str, _kind: &str, _namespace: Option<&str>, _label_selector: &str) -> Result<Vec<Value>, LiveError> {
        Err(todo_err())
    }
    pub async fn apply(&self, _obj: &Value) -> Result<Value, LiveError> {
        Err(todo_err())
    }
    pub async fn create(&self, _obj: &Value) -> Result<Value, LiveError> {
        Err(todo_err())
    }
    pub async fn delete(&self, _r: &ObjRef) -> Result<(), LiveError> {
        Err(todo_err())
    }
    pub async fn wait_ready(&self, _r: &ObjRef, _deadline: Duration) -> Result<bool, LiveError> {
        Err(todo_err())
    }
}

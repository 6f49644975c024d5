//! The API server's HTTP answers behind `kubectl proxy`, for [`super::super::exec::curl`]
//! (as the admin, whom the proxy's kubeconfig names): `GET /` (the list of paths) and
//! `POST /api/v1/namespaces/NS/pods/NAME/eviction` of a `policy/v1` `Eviction`
//! (Kubernetes pkg/registry/core/pod/storage/eviction.go `EvictionREST.Create`: a
//! `Status` of `Success` when the Pod is evicted; a webhook's refusal is a `Status` of
//! `Failure` whose `message` is the refusal, staging/src/k8s.io/apiserver/pkg/admission/
//! plugin/webhook/errors/statuserror.go `ToStatusErr`). The bodies carry fields the
//! replay does not fix (the code and reason of a refusal), so they are [`Unknown`] text
//! that decides only the refusal's words. Other paths and methods are skips.

use serde_json::Value;

use super::super::exec::curl::{Request, Response};
use super::super::exec::{Text, Unknown, Unwind};
use super::{Kubectl, skip};
use crate::offline::conformance::cluster::{Answer, Key};

impl Kubectl<'_> {
    pub(super) fn http(&mut self, req: &Request) -> Result<Response, Unwind> {
        let segments: Vec<&str> = req.path.trim_start_matches('/').split('/').collect();
        match (req.method.as_str(), segments.as_slice()) {
            ("GET", [""]) => Ok(Response {
                success: true,
                body: unknown_body(String::new(), "the API server's list of paths", Vec::new()),
            }),
            ("POST", ["api", "v1", "namespaces", ns, "pods", name, "eviction"]) => {
                self.eviction(ns, name, req)
            }
            (m, _) => Err(skip(format!(
                "`curl -X {m} {}` through the proxy",
                req.path
            ))),
        }
    }

    fn eviction(&mut self, ns: &str, name: &str, req: &Request) -> Result<Response, Unwind> {
        if !req
            .content_type
            .as_deref()
            .is_some_and(|c| c.to_ascii_lowercase().starts_with("application/json"))
        {
            return Err(skip("an eviction whose body is not JSON"));
        }
        let eviction: Value = serde_json::from_str(req.body.as_deref().unwrap_or(""))
            .map_err(|e| skip(format!("an eviction body the replay cannot read: {e}")))?;
        if eviction.get("kind").and_then(Value::as_str) != Some("Eviction") {
            return Err(skip(
                "a POST to `pods/eviction` of something else than an Eviction",
            ));
        }
        let key = Key {
            group: String::new(),
            kind: "Pod".into(),
            namespace: ns.to_string(),
            name: name.to_string(),
        };
        let Some(pod) = self.cluster.find(&key).cloned() else {
            let msg = format!("pods \"{name}\" not found");
            return Ok(refused(&msg, true));
        };
        self.written.push(key);
        match self.cluster.evict(&pod, eviction) {
            Answer::Ok => Ok(Response {
                success: true,
                body: unknown_body(
                    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Success\",\"code\":201}\n"
                        .into(),
                    "the API server's Status",
                    Vec::new(),
                ),
            }),
            Answer::Refused(m) => Ok(refused(&m, self.cluster.unworded.is_none())),
            Answer::Undecidable(s) => Err(skip(s.to_string())),
        }
    }
}

/// A `Status` of `Failure` with `message`; its words decided when they are the cluster's
/// exact ones.
fn refused(message: &str, worded: bool) -> Response {
    let quoted = serde_json::to_string(message).unwrap_or_default();
    let inner = quoted
        .strip_prefix('"')
        .and_then(|q| q.strip_suffix('"'))
        .unwrap_or("")
        .to_string();
    let s = format!(
        "{{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{{}},\"status\":\"Failure\",\"message\":{quoted}}}\n"
    );
    Response {
        success: false,
        body: unknown_body(
            s,
            "the API server's Status (its code and reason)",
            if worded { vec![inner] } else { Vec::new() },
        ),
    }
}

fn unknown_body(s: String, why: &str, decides: Vec<String>) -> Text {
    Text {
        s,
        unknown: Some(Unknown {
            why: why.to_string(),
            lines_exact: true,
            decides,
        }),
    }
}

//! The API server's HTTP answers behind `kubectl proxy`, for [`super::super::exec::curl`]
//! (as the admin, whom the proxy's kubeconfig names): `GET /` (the list of paths) and
//! `POST /api/v1/namespaces/NS/pods/NAME/eviction` of a `policy/v1` `Eviction`
//! (Kubernetes pkg/registry/core/pod/storage/eviction.go `EvictionREST.Create`: a
//! `Status` of `Success` when the Pod is evicted; a webhook's refusal is a `Status` of
//! `Failure` whose `message` is the refusal, staging/src/k8s.io/apiserver/pkg/admission/
//! plugin/webhook/errors/statuserror.go `ToStatusErr`). The bodies carry fields the
//! replay does not fix (the code and reason of a refusal), so they are [`Unknown`] text
//! that decides only the refusal's words. A `PATCH` of an object or its `status` by the
//! patch's content type. Other paths and methods are skips.

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
            ("PATCH", path) => self.patch_path(path, req),
            (m, _) => Err(skip(format!(
                "`curl -X {m} {}` through the proxy",
                req.path
            ))),
        }
    }

    /// A PATCH of `api/v1/…` or `apis/GROUP/VERSION/…`, `[namespaces/NS/]PLURAL/NAME`
    /// with an optional `/status`, by its content type (k8s.io/apiserver
    /// pkg/endpoints/handlers/patch.go: `json-patch+json`, `merge-patch+json`,
    /// `strategic-merge-patch+json`). The API server's answer is the object as stored,
    /// which holds fields the replay does not fix.
    fn patch_path(&mut self, path: &[&str], req: &Request) -> Result<Response, Unwind> {
        let unmodelled = || {
            skip(format!(
                "`curl -X PATCH /{}` through the proxy",
                path.join("/")
            ))
        };
        let (group, rest) = match path {
            ["api", "v1", rest @ ..] => ("", rest),
            ["apis", g, _, rest @ ..] => (*g, rest),
            _ => return Err(unmodelled()),
        };
        let (namespace, plural, name, status) = match rest {
            ["namespaces", ns, p, n] => (*ns, *p, *n, false),
            ["namespaces", ns, p, n, "status"] => (*ns, *p, *n, true),
            [p, n] => ("", *p, *n, false),
            [p, n, "status"] => ("", *p, *n, true),
            _ => return Err(unmodelled()),
        };
        let mapper = self.cluster.mapper();
        let Some(r) = mapper
            .resources()
            .iter()
            .find(|r| r.group == group && r.plural == plural)
        else {
            return Err(unmodelled());
        };
        let key = Key {
            group: group.to_string(),
            kind: r.kind.clone(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        };
        let Some(old) = self.cluster.find(&key).cloned() else {
            return Ok(refused(&format!("{plural} \"{name}\" not found"), true));
        };
        let body: Value = serde_json::from_str(req.body.as_deref().unwrap_or(""))
            .map_err(|e| skip(format!("a PATCH body the replay cannot read: {e}")))?;
        let content_type = req
            .content_type
            .as_deref()
            .unwrap_or("")
            .to_ascii_lowercase();
        let new = match content_type.split(';').next().unwrap_or("").trim() {
            "application/json-patch+json" => super::json_patched(&old, &body)?,
            "application/merge-patch+json" => {
                let mut new = old.clone();
                crate::lab::tree::merge_patch(&mut new, &body);
                new
            }
            "application/strategic-merge-patch+json" => {
                super::strategic::patch(&old, &body, &key.kind).map_err(skip)?
            }
            other => return Err(skip(format!("a PATCH of the content type `{other}`"))),
        };
        self.written.push(key);
        let answer = if status {
            self.cluster.update_status(&old, &new)
        } else if new == old {
            Answer::Ok
        } else {
            self.cluster.update(&new, false)
        };
        match answer {
            Answer::Ok => Ok(Response {
                success: true,
                body: unknown_body(
                    String::new(),
                    "the object the API server stores",
                    Vec::new(),
                ),
            }),
            Answer::Refused(m) => Ok(refused(&m, self.cluster.unworded.is_none())),
            Answer::Undecidable(s) => Err(skip(s.to_string())),
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
            exact_under: Vec::new(),
        }),
    }
}

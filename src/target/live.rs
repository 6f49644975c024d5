//! The live grading target: a real cluster through kube-rs. The only module in kca that
//! talks to an API server (and the only one importing kube's client); it knows nothing
//! about labs, checks or verdicts — it asks and reports what the server answered.
//!
//! Requests are built by hand on `kube::Client::send` rather than through `kube::Api`,
//! because grading needs what the typed API hides: `Warning` headers (Kyverno 1.19
//! deprecates `kyverno.io/v1` and says so on every request), the raw `Status` of a refusal,
//! and impersonation per request rather than per client.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Method, Request, StatusCode};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};

use super::{
    AccessAnswer, AccessQuery, Admission, Denial, Identity, ObjRef, Operation, parse_denial,
};

/// The field manager kca's server-side applies use, so `kubectl` shows who owns a field.
pub const FIELD_MANAGER: &str = "kca";

/// How long one request may take before it counts as a timeout. Admission webhooks have
/// at most 30 s of their own, so this leaves room for a slow webhook to answer.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(45);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const POLL_INTERVAL: Duration = Duration::from_millis(1000);
const MAX_WARNINGS: usize = 100;

mod error;
pub use error::LiveError;
use error::{kubeconfig_paths, unreadable_kubeconfig};
mod paths;
use paths::{collection_path, encode_query, item_path};

/// A served kind, from discovery.
#[derive(Debug, Clone)]
struct ResourceInfo {
    kind: String,
    plural: String,
    namespaced: bool,
}

/// A group-version's resources, or None when the server does not serve it.
type GroupVersion = Option<Arc<Vec<ResourceInfo>>>;

/// One group-version's discovery: concurrent lookups wait on one fetch rather than each
/// sending their own (checks run concurrently on a cold cache).
#[derive(Default)]
struct Slot {
    /// Fetches completed so far; a waiter that sees this move took a fresh answer.
    fetches: AtomicU64,
    list: tokio::sync::Mutex<Option<GroupVersion>>,
}

/// What kca sends as `User-Agent`, so cluster admins can tell its requests apart.
pub const USER_AGENT: &str = concat!("kca/", env!("CARGO_PKG_VERSION"));

/// A connection to one cluster. Must be used on the tokio runtime it was created on.
pub struct Live {
    client: kube::Client,
    context: Option<String>,
    discovery: Mutex<HashMap<String, Arc<Slot>>>,
    warnings: Mutex<Vec<String>>,
    waits: ready::Waits,
}

mod ready;
pub use ready::{Readiness, readiness};

/// An HTTP answer: status, JSON body (Null when empty or not JSON), warnings.
struct Answer {
    status: u16,
    body: Value,
    warnings: Vec<String>,
}

impl Live {
    /// Connects with the given kubeconfig file (else `KUBECONFIG`, else `~/.kube/config`) at
    /// the given context (else the current one). Nothing is sent yet: call
    /// `server_version` to find out whether the server answers.
    pub async fn connect(
        kubeconfig: Option<&Path>,
        context: Option<&str>,
    ) -> Result<Live, LiveError> {
        let kc = match kubeconfig {
            Some(path) => Kubeconfig::read_from(path)
                .map_err(|e| LiveError::Config(unreadable_kubeconfig(&[path.into()], &e)))?,
            None => Kubeconfig::read()
                .map_err(|e| LiveError::Config(unreadable_kubeconfig(&kubeconfig_paths(), &e)))?,
        };
        let context_name = context
            .map(str::to_string)
            .or_else(|| kc.current_context.clone())
            .filter(|c| !c.is_empty());
        if let Some(name) = &context_name
            && !kc.contexts.iter().any(|c| &c.name == name)
        {
            let known: Vec<&str> = kc.contexts.iter().map(|c| c.name.as_str()).collect();
            return Err(LiveError::Config(format!(
                "context `{name}` is not in the kubeconfig (known: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )));
        }
        let options = KubeConfigOptions {
            context: context_name.clone(),
            ..Default::default()
        };
        let mut config = kube::Config::from_custom_kubeconfig(kc, &options)
            .await
            .map_err(|e| LiveError::Config(e.to_string()))?;
        config.connect_timeout = Some(CONNECT_TIMEOUT);
        config.read_timeout = Some(REQUEST_TIMEOUT);
        let client =
            kube::Client::try_from(config).map_err(|e| LiveError::Config(e.to_string()))?;
        let mut live = Live::from_client(client);
        live.context = context_name;
        Ok(live)
    }

    /// Wraps an existing client (tests use one backed by a mock service).
    pub fn from_client(client: kube::Client) -> Live {
        Live {
            client,
            context: None,
            discovery: Mutex::new(HashMap::new()),
            warnings: Mutex::new(Vec::new()),
            waits: ready::Waits::default(),
        }
    }

    /// The kubeconfig context in use (None for a client made with `from_client`).
    pub fn context_name(&self) -> Option<&str> {
        self.context.as_deref()
    }

    /// The namespace used for namespaced objects that name none (the context's namespace).
    pub fn default_namespace(&self) -> &str {
        self.client.default_namespace()
    }

    /// The distinct `Warning`s the server sent since the last call (e.g. Kyverno's
    /// deprecation notices for `kyverno.io/v1`), oldest first. Warnings never fail a request.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *self.warnings.lock().expect("warnings lock"))
    }

    /// The server's (major, minor) version; a minor like `33+` (some vendors) reads as 33.
    pub async fn server_version(&self) -> Result<(u32, u32), LiveError> {
        let a = self
            .call(Method::GET, "/version".into(), None, None, None)
            .await?;
        let a = expect_ok(a)?;
        let num = |k: &str| -> Option<u32> {
            let s = a.body.get(k)?.as_str()?;
            let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        };
        match (num("major"), num("minor")) {
            (Some(major), Some(minor)) => Ok((major, minor)),
            _ => Err(LiveError::Api {
                code: a.status,
                message: format!("unreadable /version answer: {}", a.body),
            }),
        }
    }

    /// Whether the server serves `kind` in `api_version` (e.g. `kyverno.io/v1`, `ClusterPolicy`).
    pub async fn serves(&self, api_version: &str, kind: &str) -> Result<bool, LiveError> {
        Ok(self.resource(api_version, kind).await?.is_some())
    }

    /// The resource (plural) that serves `kind` in `api_version`, from discovery; None when
    /// the server does not serve it.
    pub async fn plural(&self, api_version: &str, kind: &str) -> Result<Option<String>, LiveError> {
        Ok(self.resource(api_version, kind).await?.map(|r| r.plural))
    }

    /// Asks the authorizer a SubjectAccessReview: may `q.user` (with `q.groups`) do `q.verb`…
    pub async fn can_i(&self, q: &AccessQuery) -> Result<AccessAnswer, LiveError> {
        let mut attrs = serde_json::Map::new();
        for (key, value) in [
            ("namespace", &q.namespace),
            ("verb", &q.verb),
            ("group", &q.group),
            ("resource", &q.resource),
            ("subresource", &q.subresource),
            ("name", &q.name),
        ] {
            if !value.is_empty() {
                attrs.insert(key.to_string(), Value::String(value.clone()));
            }
        }
        let mut spec = json!({ "user": q.user, "resourceAttributes": attrs });
        if !q.groups.is_empty() {
            spec["groups"] = json!(q.groups);
        }
        let body = json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": spec,
        });
        let a = self
            .call(
                Method::POST,
                "/apis/authorization.k8s.io/v1/subjectaccessreviews".into(),
                Some(body),
                None,
                None,
            )
            .await?;
        let a = expect_ok(a)?;
        let status = &a.body["status"];
        let allowed = status["allowed"].as_bool().unwrap_or(false);
        let mut reason = status["reason"].as_str().unwrap_or_default().to_string();
        if let Some(e) = status["evaluationError"].as_str().filter(|e| !e.is_empty()) {
            if !reason.is_empty() {
                reason.push_str("; ");
            }
            reason.push_str(e);
        }
        Ok(AccessAnswer { allowed, reason })
    }

    /// Sends `obj` as a server-side dry run (`dryRun=All`): create (POST) or update (PUT),
    /// as `as_` when given. Admission webhooks (Kyverno) and policies run; nothing is stored.
    /// A refusal by the authorizer or an admission stage is `Admission::Denied`; a server
    /// that cannot answer is an error.
    pub async fn admit(
        &self,
        obj: &Value,
        op: Operation,
        as_: Option<&Identity>,
    ) -> Result<Admission, LiveError> {
        let (info, namespace) = self.locate_object(obj).await?;
        let (method, path) = match op {
            Operation::Create => (
                Method::POST,
                collection_path(obj_api_version(obj)?, &info, namespace.as_deref()),
            ),
            Operation::Update => {
                let name = obj_name(obj)?;
                (
                    Method::PUT,
                    item_path(obj_api_version(obj)?, &info, namespace.as_deref(), name),
                )
            }
        };
        let a = self
            .call(
                method,
                format!("{path}?dryRun=All"),
                Some(obj.clone()),
                None,
                as_,
            )
            .await?;
        if (200..300).contains(&a.status) {
            return Ok(Admission::Allowed {
                object: a.body,
                warnings: a.warnings,
            });
        }
        match denial_of(&a) {
            Some(d) => Ok(Admission::Denied(d)),
            None => Err(api_error(&a)),
        }
    }

    /// The object, or None when it does not exist.
    pub async fn get(&self, r: &ObjRef) -> Result<Option<Value>, LiveError> {
        let info = self.require_resource(&r.api_version, &r.kind).await?;
        let ns = self.namespace_for(&info, r.namespace.as_deref());
        let path = item_path(&r.api_version, &info, ns.as_deref(), &r.name);
        let a = self.call(Method::GET, path, None, None, None).await?;
        if a.status == 404 {
            return Ok(None);
        }
        Ok(Some(expect_ok(a)?.body))
    }

    /// Objects of a kind, in one namespace or (None) all, filtered by a label selector
    /// (empty: all). Items carry `apiVersion` and `kind` even where the server leaves them out.
    pub async fn list(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        label_selector: &str,
    ) -> Result<Vec<Value>, LiveError> {
        let info = self.require_resource(api_version, kind).await?;
        let ns = if info.namespaced { namespace } else { None };
        let mut path = collection_path(api_version, &info, ns);
        if !label_selector.is_empty() {
            path.push_str("?labelSelector=");
            path.push_str(&encode_query(label_selector));
        }
        let a = expect_ok(self.call(Method::GET, path, None, None, None).await?)?;
        let items = match a.body.get("items") {
            Some(Value::Array(items)) => items.clone(),
            _ => Vec::new(),
        };
        Ok(items
            .into_iter()
            .map(|mut item| {
                if let Value::Object(map) = &mut item {
                    map.entry("apiVersion")
                        .or_insert_with(|| json!(api_version));
                    map.entry("kind").or_insert_with(|| json!(kind));
                }
                item
            })
            .collect())
    }

    /// Server-side apply as field manager `kca`, taking over conflicting fields: kca only
    /// applies objects it owns (lab setup), so a conflict means a learner edited a fixture.
    pub async fn apply(&self, obj: &Value) -> Result<Value, LiveError> {
        let (info, namespace) = self.locate_object(obj).await?;
        let name = obj_name(obj)?;
        let path = item_path(obj_api_version(obj)?, &info, namespace.as_deref(), name);
        let a = self
            .call(
                Method::PATCH,
                format!("{path}?fieldManager={FIELD_MANAGER}&force=true"),
                Some(obj.clone()),
                Some("application/apply-patch+yaml"),
                None,
            )
            .await?;
        Ok(expect_ok(a)?.body)
    }

    /// JSON merge patch (RFC 7386) of an existing object, as field manager `kca` (a lab
    /// setup step or a `generated` check's sync step; owned objects only).
    pub async fn merge_patch(&self, r: &ObjRef, patch: &Value) -> Result<Value, LiveError> {
        let info = self.require_resource(&r.api_version, &r.kind).await?;
        let ns = self.namespace_for(&info, r.namespace.as_deref());
        let path = item_path(&r.api_version, &info, ns.as_deref(), &r.name);
        let a = self
            .call(
                Method::PATCH,
                format!("{path}?fieldManager={FIELD_MANAGER}"),
                Some(patch.clone()),
                Some("application/merge-patch+json"),
                None,
            )
            .await?;
        Ok(expect_ok(a)?.body)
    }

    /// Creates the object (e.g. a trigger Namespace for a generate rule); `generateName`
    /// works, and the created object (with its name) is returned.
    pub async fn create(&self, obj: &Value) -> Result<Value, LiveError> {
        let (info, namespace) = self.locate_object(obj).await?;
        let path = collection_path(obj_api_version(obj)?, &info, namespace.as_deref());
        let a = self
            .call(
                Method::POST,
                format!("{path}?fieldManager={FIELD_MANAGER}"),
                Some(obj.clone()),
                None,
                None,
            )
            .await?;
        Ok(expect_ok(a)?.body)
    }

    /// Deletes the object, dependents in the background; an object already gone is fine.
    pub async fn delete(&self, r: &ObjRef) -> Result<(), LiveError> {
        let info = self.require_resource(&r.api_version, &r.kind).await?;
        let ns = self.namespace_for(&info, r.namespace.as_deref());
        let path = item_path(&r.api_version, &info, ns.as_deref(), &r.name);
        let a = self
            .call(
                Method::DELETE,
                format!("{path}?propagationPolicy=Background"),
                None,
                None,
                None,
            )
            .await?;
        if a.status == 404 {
            return Ok(());
        }
        expect_ok(a).map(|_| ())
    }

    /// Polls until the object reports ready — a `Ready` condition with status `True`
    /// (Kyverno policies, most controllers) or `status.ready: true` (older Kyverno) — and
    /// returns false when `deadline` passes first (also when the object never appears).
    pub async fn wait_ready(&self, r: &ObjRef, deadline: Duration) -> Result<bool, LiveError> {
        let until = tokio::time::Instant::now() + deadline;
        loop {
            if let Some(obj) = self.get(r).await?
                && is_ready(&obj)
            {
                return Ok(true);
            }
            let now = tokio::time::Instant::now();
            if now >= until {
                return Ok(false);
            }
            tokio::time::sleep(POLL_INTERVAL.min(until - now)).await;
        }
    }

    // ---- discovery ----

    /// Resolves a kind to its resource through discovery, cached per group-version. A kind
    /// missing from a cached list is looked up once more, since CRDs appear at runtime
    /// (Kyverno's install, a lab's fixtures).
    async fn resource(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<Option<ResourceInfo>, LiveError> {
        let find = |gv: &GroupVersion| {
            gv.as_ref()
                .and_then(|list| list.iter().find(|r| r.kind == kind).cloned())
        };
        let slot = self
            .discovery
            .lock()
            .expect("discovery lock")
            .entry(api_version.to_string())
            .or_default()
            .clone();
        let before = slot.fetches.load(Ordering::Acquire);
        let mut list = slot.list.lock().await;
        if let Some(gv) = &*list {
            let found = find(gv);
            // Found, or fetched afresh by another lookup while this one waited.
            if found.is_some() || slot.fetches.load(Ordering::Acquire) != before {
                return Ok(found);
            }
        }
        let fresh = self.discover(api_version).await?;
        let found = find(&fresh);
        *list = Some(fresh);
        slot.fetches.fetch_add(1, Ordering::AcqRel);
        Ok(found)
    }

    async fn require_resource(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<ResourceInfo, LiveError> {
        self.resource(api_version, kind)
            .await?
            .ok_or_else(|| LiveError::NotServed {
                api_version: api_version.to_string(),
                kind: kind.to_string(),
            })
    }

    async fn discover(&self, api_version: &str) -> Result<GroupVersion, LiveError> {
        let path = if api_version.contains('/') {
            format!("/apis/{api_version}")
        } else {
            format!("/api/{api_version}")
        };
        let a = self.call(Method::GET, path, None, None, None).await?;
        if a.status == 404 {
            return Ok(None);
        }
        let a = expect_ok(a)?;
        let list = a.body["resources"]
            .as_array()
            .map(|rs| {
                rs.iter()
                    .filter_map(|r| {
                        let plural = r["name"].as_str()?;
                        // Subresources (pods/status) share their parent's kind.
                        if plural.contains('/') {
                            return None;
                        }
                        Some(ResourceInfo {
                            kind: r["kind"].as_str()?.to_string(),
                            plural: plural.to_string(),
                            namespaced: r["namespaced"].as_bool().unwrap_or(false),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(Some(Arc::new(list)))
    }

    /// The resource and namespace an object goes to: its own namespace, else the context's
    /// for namespaced kinds; none for cluster-scoped kinds.
    async fn locate_object(
        &self,
        obj: &Value,
    ) -> Result<(ResourceInfo, Option<String>), LiveError> {
        let api_version = obj_api_version(obj)?;
        let kind = obj["kind"]
            .as_str()
            .ok_or_else(|| LiveError::Unsupported("object has no kind".into()))?;
        let info = self.require_resource(api_version, kind).await?;
        let ns = self.namespace_for(
            &info,
            obj.pointer("/metadata/namespace").and_then(Value::as_str),
        );
        Ok((info, ns))
    }

    fn namespace_for(&self, info: &ResourceInfo, ns: Option<&str>) -> Option<String> {
        if !info.namespaced {
            return None;
        }
        Some(
            ns.filter(|n| !n.is_empty())
                .unwrap_or(self.default_namespace())
                .to_string(),
        )
    }

    // ---- transport ----

    async fn call(
        &self,
        method: Method,
        path_and_query: String,
        body: Option<Value>,
        content_type: Option<&str>,
        as_: Option<&Identity>,
    ) -> Result<Answer, LiveError> {
        let what = format!("{method} {path_and_query}");
        let mut req = Request::builder()
            .method(method)
            .uri(&path_and_query)
            .header(http::header::ACCEPT, "application/json")
            .header(http::header::USER_AGENT, USER_AGENT);
        if body.is_some() {
            req = req.header(
                http::header::CONTENT_TYPE,
                content_type.unwrap_or("application/json"),
            );
        }
        if let Some(id) = as_ {
            req = req.header("Impersonate-User", &id.user);
            for g in &id.groups {
                req = req.header("Impersonate-Group", g);
            }
        }
        let bytes = match &body {
            Some(v) => serde_json::to_vec(v).map_err(|e| LiveError::Unsupported(e.to_string()))?,
            None => Vec::new(),
        };
        let req = req
            .body(kube::client::Body::from(bytes))
            .map_err(|e| LiveError::Unsupported(format!("bad request {what}: {e}")))?;
        let fut = async {
            let res = self
                .client
                .send(req)
                .await
                .map_err(|e| transport_error(&what, e))?;
            let status = res.status();
            let warnings: Vec<String> = res
                .headers()
                .get_all("warning")
                .iter()
                .filter_map(|v| v.to_str().ok())
                .map(warning_text)
                .collect();
            let bytes = res
                .into_body()
                .collect_bytes()
                .await
                .map_err(|e| transport_error(&what, e))?;
            Ok::<_, LiveError>((status, warnings, bytes))
        };
        let (status, warnings, bytes) =
            tokio::time::timeout(REQUEST_TIMEOUT, fut)
                .await
                .map_err(|_| {
                    LiveError::Timeout(format!(
                        "{what}: no answer within {}s",
                        REQUEST_TIMEOUT.as_secs()
                    ))
                })??;
        {
            // Kyverno repeats the same deprecation notice on every request: keep each once,
            // and a bounded number, however long a caller polls without taking them.
            let mut seen = self.warnings.lock().expect("warnings lock");
            for w in &warnings {
                if !seen.contains(w) && seen.len() < MAX_WARNINGS {
                    seen.push(w.clone());
                }
            }
        }
        let body = serde_json::from_slice(&bytes).unwrap_or_else(|_| {
            if bytes.is_empty() {
                Value::Null
            } else {
                Value::String(String::from_utf8_lossy(&bytes).into_owned())
            }
        });
        Ok(Answer {
            status: status_code(status),
            body,
            warnings,
        })
    }
}

fn status_code(s: StatusCode) -> u16 {
    s.as_u16()
}

/// A refusal the admission chain or the authorizer made, as opposed to a server problem.
/// 404 counts only when it is the namespace that is missing (NamespaceLifecycle).
fn denial_of(a: &Answer) -> Option<Denial> {
    let reason = a.body["reason"].as_str().unwrap_or_default();
    let message = status_message(a);
    let admission_refusal = match a.status {
        400 | 403 | 422 => true,
        404 => a.body.pointer("/details/kind").and_then(Value::as_str) == Some("namespaces"),
        _ => false,
    };
    admission_refusal.then(|| parse_denial(a.status, reason, &message))
}

fn status_message(a: &Answer) -> String {
    match &a.body {
        Value::String(s) => s.clone(),
        body => body["message"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| body.to_string()),
    }
}

fn api_error(a: &Answer) -> LiveError {
    LiveError::Api {
        code: a.status,
        message: status_message(a),
    }
}

fn expect_ok(a: Answer) -> Result<Answer, LiveError> {
    if (200..300).contains(&a.status) {
        Ok(a)
    } else {
        Err(api_error(&a))
    }
}

/// Anything that stops a request from getting an HTTP answer is the environment's fault.
fn transport_error(what: &str, e: kube::Error) -> LiveError {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    let lower = text.to_lowercase();
    if lower.contains("timed out") || lower.contains("timeout") || lower.contains("deadline") {
        LiveError::Timeout(format!("{what}: {text}"))
    } else {
        LiveError::Unreachable(format!("{what}: {text}"))
    }
}

/// The text of a `Warning: 299 - "text"` header (RFC 7234), unescaped.
fn warning_text(header: &str) -> String {
    let rest = header
        .split_once(' ')
        .and_then(|(code, rest)| code.chars().all(|c| c.is_ascii_digit()).then_some(rest))
        .and_then(|rest| rest.split_once(' ').map(|(_agent, text)| text))
        .unwrap_or(header)
        .trim();
    match rest.strip_prefix('"') {
        Some(quoted) => {
            let mut out = String::new();
            let mut chars = quoted.chars();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => {
                        if let Some(n) = chars.next() {
                            out.push(n);
                        }
                    }
                    '"' => break,
                    c => out.push(c),
                }
            }
            out
        }
        None => rest.to_string(),
    }
}

fn is_ready(obj: &Value) -> bool {
    // kyverno.io policies: `status.ready` or a Ready condition; policies.kyverno.io
    // (ValidatingPolicy, MutatingPolicy, …): `status.conditionStatus.ready` (the READY
    // column of config/crds/policies.kyverno.io/*.yaml at v1.19.0).
    for p in ["/status/ready", "/status/conditionStatus/ready"] {
        if obj.pointer(p).and_then(Value::as_bool) == Some(true) {
            return true;
        }
    }
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

fn obj_api_version(obj: &Value) -> Result<&str, LiveError> {
    obj["apiVersion"]
        .as_str()
        .ok_or_else(|| LiveError::Unsupported("object has no apiVersion".into()))
}

fn obj_name(obj: &Value) -> Result<&str, LiveError> {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| LiveError::Unsupported("object has no metadata.name".into()))
}

#[cfg(test)]
mod tests {
    use super::paths::*;
    use super::*;

    #[test]
    fn warning_header_text_is_unquoted_and_unescaped() {
        assert_eq!(
            warning_text(
                r#"299 - "kyverno.io/v1 ClusterPolicy is deprecated; use \"policies.kyverno.io/v1\"""#
            ),
            r#"kyverno.io/v1 ClusterPolicy is deprecated; use "policies.kyverno.io/v1""#
        );
        assert_eq!(warning_text("plain words"), "plain words");
    }

    #[test]
    fn ready_forms() {
        assert!(is_ready(&json!({"status": {"ready": true}})));
        assert!(is_ready(
            &json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
        ));
        assert!(!is_ready(
            &json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
        ));
        assert!(!is_ready(&json!({"status": {}})));
        assert!(!is_ready(&json!({})));
        // policies.kyverno.io kinds (MutatingPolicy, GeneratingPolicy, ValidatingPolicy)
        assert!(is_ready(
            &json!({"status": {"conditionStatus": {"ready": true}}})
        ));
        assert!(!is_ready(
            &json!({"status": {"conditionStatus": {"ready": false}}})
        ));
    }

    #[test]
    fn query_and_path_encoding() {
        assert_eq!(
            encode_query("kca.dev/lab=kca-rbac,tier!=x"),
            "kca.dev%2Flab%3Dkca-rbac%2Ctier%21%3Dx"
        );
        assert_eq!(
            encode_segment("system:aggregate-to-edit"),
            "system:aggregate-to-edit"
        );
        assert_eq!(encode_segment("a b"), "a%20b");
    }

    #[test]
    fn paths_for_core_and_group_kinds() {
        let pods = ResourceInfo {
            kind: "Pod".into(),
            plural: "pods".into(),
            namespaced: true,
        };
        let cp = ResourceInfo {
            kind: "ClusterPolicy".into(),
            plural: "clusterpolicies".into(),
            namespaced: false,
        };
        assert_eq!(
            item_path("v1", &pods, Some("lab"), "p"),
            "/api/v1/namespaces/lab/pods/p"
        );
        assert_eq!(
            collection_path("kyverno.io/v1", &cp, None),
            "/apis/kyverno.io/v1/clusterpolicies"
        );
    }

    #[test]
    fn live_errors_are_environment_errors() {
        let e: crate::error::Error = LiveError::Unreachable("connection refused".into()).into();
        assert_eq!(e.exit(), crate::exit::Exit::Environment);
        assert!(e.hint().is_some());
    }
}

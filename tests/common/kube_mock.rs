//! One mocked API server for every kube test, in the style of kube-rs's
//! `kube/src/mock_tests.rs`: a `tower_test` service behind a real `kube::Client`, a
//! scenario in (a router answering by request, or an ordered list of expected requests),
//! and every request recorded with its method, path, query, headers and body so a test can
//! assert each one. Answers are shaped like a real API server's (Status objects, discovery
//! lists). Run the tests on paused tokio time (`#[tokio::test(start_paused = true)]`) so
//! pollers and settle windows do not take real seconds.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use http::{Request, Response};
use kube::client::Body;
use serde_json::{Value, json};

/// One request as the mock server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub query: BTreeMap<String, String>,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
    pub fn headers_named(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
    pub fn query_pairs(&self) -> Vec<(&str, &str)> {
        self.query
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }
    /// A discovery request: `GET /api/v1` or `GET /apis/GROUP/VERSION`.
    pub fn is_discovery(&self) -> bool {
        self.method == "GET"
            && (self.path == "/api/v1"
                || self.path.starts_with("/apis/") && self.path.matches('/').count() == 3)
    }
}

/// A canned answer: status, JSON body, extra headers.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub headers: Vec<(&'static str, String)>,
}

pub fn reply(status: u16, body: Value) -> Reply {
    Reply {
        status,
        body,
        headers: Vec::new(),
    }
}

impl From<(u16, Value)> for Reply {
    fn from((status, body): (u16, Value)) -> Self {
        reply(status, body)
    }
}

/// Answers by request, in any order (concurrent checks).
pub type Router = Box<dyn Fn(&Seen) -> Reply + Send + Sync>;

/// One expected request of an ordered scenario and its answer.
pub struct Step {
    method: &'static str,
    path: String,
    check: Box<dyn Fn(&Seen) + Send + Sync>,
    answer: Box<dyn Fn(&Seen) -> Reply + Send + Sync>,
}

impl Step {
    pub fn new(method: &'static str, path: impl Into<String>) -> Self {
        Step {
            method,
            path: path.into(),
            check: Box::new(|_| {}),
            answer: Box::new(|_| not_found_page()),
        }
    }
    /// Further assertions on the request (query, headers, body).
    pub fn check(mut self, f: impl Fn(&Seen) + Send + Sync + 'static) -> Self {
        self.check = Box::new(f);
        self
    }
    pub fn reply(mut self, status: u16, body: Value) -> Self {
        let r = reply(status, body);
        self.answer = Box::new(move |_| r.clone());
        self
    }
    pub fn answer(mut self, f: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Self {
        self.answer = Box::new(f);
        self
    }
}

/// The mock server: the log of what it was asked, and its task.
pub struct Server {
    pub log: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Seen> {
        self.log.lock().unwrap().clone()
    }
    /// The requests that were not discovery.
    pub fn without_discovery(&self) -> Vec<Seen> {
        without_discovery(&self.log)
    }
    /// How many requests had this method and path.
    pub fn count(&self, method: &str, path: &str) -> usize {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.method == method && s.path == path)
            .count()
    }
    /// Waits for the server to stop (the client must be dropped first); a failed assertion
    /// inside the server fails the test here.
    pub async fn finish(self) {
        self.task.await.expect("mock server task");
    }
}

/// A client on a mock service answering with `route`.
pub fn serve(route: Router) -> (kube::Client, Server) {
    serve_with(move |seen, _| route(seen))
}

/// A client on a mock service that expects exactly `steps`, in order: a request that
/// differs in method or path, or one too many, fails the test; so does a step never asked
/// (checked by `Server::finish`).
pub fn scenario(steps: Vec<Step>) -> (kube::Client, Server) {
    let steps = Arc::new(Mutex::new(VecDeque::from(steps)));
    let left = steps.clone();
    let (client, server) = serve_with(move |seen, n| {
        let step = left.lock().unwrap().pop_front().unwrap_or_else(|| {
            panic!(
                "request {n} was not expected: {} {}",
                seen.method, seen.path
            )
        });
        assert_eq!(
            (seen.method.as_str(), seen.path.as_str()),
            (step.method, step.path.as_str()),
            "request {n}"
        );
        (step.check)(seen);
        (step.answer)(seen)
    });
    let Server { log, task } = server;
    let task = tokio::spawn(async move {
        task.await.expect("mock server task");
        let missing: Vec<String> = steps
            .lock()
            .unwrap()
            .iter()
            .map(|s| format!("{} {}", s.method, s.path))
            .collect();
        assert!(missing.is_empty(), "requests never made: {missing:?}");
    });
    (client, Server { log, task })
}

fn serve_with(
    route: impl Fn(&Seen, usize) -> Reply + Send + Sync + 'static,
) -> (kube::Client, Server) {
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let log = Arc::new(Mutex::new(Vec::new()));
    let task_log = log.clone();
    let task = tokio::spawn(async move {
        let mut n = 0;
        while let Some((request, send)) = handle.next_request().await {
            let seen = seen(request).await;
            n += 1;
            // kca names itself on every request (issue 8): checked for every mock test.
            assert_eq!(
                seen.header("user-agent"),
                Some(concat!("kca/", env!("CARGO_PKG_VERSION"))),
                "request {n} ({} {}) without kca's User-Agent",
                seen.method,
                seen.path
            );
            let r = route(&seen, n);
            task_log.lock().unwrap().push(seen);
            let mut builder = Response::builder()
                .status(r.status)
                .header("content-type", "application/json");
            for (k, v) in r.headers {
                builder = builder.header(k, v);
            }
            let body = serde_json::to_vec(&r.body).unwrap();
            send.send_response(builder.body(Body::from(body)).unwrap());
        }
    });
    (kube::Client::new(service, "default"), Server { log, task })
}

async fn seen(request: Request<Body>) -> Seen {
    let (parts, body) = request.into_parts();
    let bytes = body.collect_bytes().await.expect("request body");
    Seen {
        method: parts.method.to_string(),
        path: parts.uri.path().to_string(),
        query: parts.uri.query().map(parse_query).unwrap_or_default(),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
            .collect(),
        body: if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).expect("request body is JSON")
        },
    }
}

pub fn without_discovery(log: &Arc<Mutex<Vec<Seen>>>) -> Vec<Seen> {
    log.lock()
        .unwrap()
        .iter()
        .filter(|s| !s.is_discovery())
        .cloned()
        .collect()
}

fn parse_query(q: &str) -> BTreeMap<String, String> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
            out.push(u8::from_str_radix(hex, 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

// ---- answers shaped like a real API server's ----

pub fn status_failure(code: u16, reason: &str, message: &str, details: Value) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": details,
        "code": code
    })
}

/// What an API server answers for a path it does not serve.
pub fn not_found_page() -> Reply {
    reply(
        404,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "the server could not find the requested resource", "reason": "NotFound",
               "details": {}, "code": 404}),
    )
}

pub fn success() -> Reply {
    reply(
        200,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}),
    )
}

/// An `APIResourceList` with the given (plural, kind, namespaced) resources.
pub fn resources(gv: &str, list: &[(&str, &str, bool)]) -> Value {
    json!({
        "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
        "resources": list.iter().map(|(name, kind, ns)| json!({
            "name": name, "singularName": "", "namespaced": ns, "kind": kind,
            "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
        })).collect::<Vec<_>>(),
    })
}

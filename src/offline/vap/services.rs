//! Kyverno's CEL libraries that read outside the request — `resource.Get`/`List`,
//! `globalContext.Get`, `http.Get`/`Post`/`Client`, `image.GetMetadata` — over what the
//! request carries: the test's objects ([`VapRequest::cluster`]) and what `kyverno test`
//! serves from the test file ([`CliServices`]). Kyverno's CLI builds a fake context
//! provider for them (`cmd/cli/kubectl-kyverno/processor/utils.go` `NewContextProvider`,
//! `pkg/cel/libs/fake_context.go`): the Context file's `images`, the test's
//! `globalContextEntries` and its `apiCallResponses` as HTTP mocks
//! (`pkg/cel/libs/http_mock.go`); a URL no mock answers goes to the network, which kca
//! does not do (`unsupported`). A library whose data the request does not carry is left
//! out, so an expression calling it is `unsupported` too, never a pass.

use super::*;

/// What `kyverno test`'s fake context provider serves CEL besides the test's objects.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CliServices {
    /// GlobalContextEntry name → its data, or why it could not be resolved.
    global_context: BTreeMap<String, Result<GlobalData, String>>,
    /// `METHOD:url`, or `url` for a mock without a method → `{body, statusCode}`.
    http: BTreeMap<String, Value>,
    /// Image reference as a policy names it → its metadata; `None`: only a registry
    /// could answer (a live cluster's Kyverno fetches it).
    images: Option<BTreeMap<String, Value>>,
}

/// One GlobalContextEntry's data as a provider serves it.
#[derive(Debug, Clone, PartialEq)]
pub enum GlobalData {
    /// A `kyverno test` mock (after `fieldPath` and `projections`): a projection is
    /// looked up in it (`pkg/cel/libs/fake_context.go` `GetGlobalReference`).
    Mock(Value),
    /// What the global context store of a running Kyverno holds: the whole data, and
    /// each projection's result by name (`pkg/globalcontext/store`, `Entry.Get`).
    Live {
        all: Value,
        projections: BTreeMap<String, Value>,
    },
    /// An entry whose data only an outside service has (what it calls).
    Unreachable(String),
}

impl CliServices {
    /// What a running Kyverno serves CEL: its global context store (entry name → its
    /// data, or the error the entry's `Get` returns); image data and outside URLs need
    /// a registry and the network.
    pub fn live(global_context: BTreeMap<String, Result<GlobalData, String>>) -> CliServices {
        CliServices {
            global_context,
            ..CliServices::default()
        }
    }
}

impl CliServices {
    /// From a test file's `apiCallResponses` and `globalContextEntries` (schemaless, as
    /// written) and its CLI `Context` documents; `read` gives the documents of a
    /// `resourceFiles` path (relative to the test).
    pub fn from_test(
        api_call_responses: &[Value],
        global_context_entries: &[Value],
        contexts: &[Value],
        read: &dyn Fn(&str) -> Vec<Value>,
    ) -> CliServices {
        let mut out = CliServices {
            images: Some(BTreeMap::new()),
            ..CliServices::default()
        };
        // `buildHTTPMockIndex` (cmd/cli/kubectl-kyverno/commands/test/test.go).
        for m in api_call_responses {
            let url = [m.get("url"), m.get("urlPath")]
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::trim)
                .find(|u| !u.is_empty())
                .unwrap_or("");
            let method = m
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim()
                .to_uppercase();
            let key = match method.as_str() {
                "" => url.to_string(),
                _ => format!("{method}:{url}"),
            };
            let response = m.get("response").unwrap_or(&Value::Null);
            let status = match response.get("statusCode").and_then(Value::as_i64) {
                None | Some(0) => 200,
                Some(code) => code,
            };
            let body = response.get("body").cloned().unwrap_or(Value::Null);
            out.http
                .insert(key, json!({"body": body, "statusCode": status}));
        }
        for entry in global_context_entries {
            let name = entry.get("name").and_then(Value::as_str).unwrap_or("");
            out.global_context.insert(
                name.trim().to_string(),
                resolve_entry(entry, read).map(GlobalData::Mock),
            );
        }
        // The Context file's images: each `ImageData` as Kyverno marshals it (its
        // string fields always, the others when set).
        for ctx in contexts {
            for img in list(ctx.pointer("/spec").unwrap_or(&Value::Null), "images") {
                let Some(reference) = img.get("image").and_then(Value::as_str) else {
                    continue;
                };
                let mut data = serde_json::Map::new();
                for key in ["image", "resolvedImage", "registry", "repository"] {
                    data.insert(
                        key.into(),
                        img.get(key).cloned().unwrap_or_else(|| json!("")),
                    );
                }
                for key in ["tag", "digest", "imageIndex", "manifest", "config"] {
                    if let Some(v) = img.get(key).filter(|v| !v.is_null() && *v != "") {
                        data.insert(key.into(), v.clone());
                    }
                }
                if let Some(images) = out.images.as_mut() {
                    images.insert(reference.to_string(), Value::Object(data));
                }
            }
        }
        out
    }
}

/// One mocked GlobalContextEntry's data, as `ResolveGlobalContextMockData`
/// (cmd/cli/kubectl-kyverno/store/gctx_resolve.go): inline `resources` (or those of its
/// `resourceFiles`) as a list, else `data`; then `fieldPath`, then `projections` (a map
/// of each projection's name to its JMESPath result).
fn resolve_entry(entry: &Value, read: &dyn Fn(&str) -> Vec<Value>) -> Result<Value, String> {
    let name = entry.get("name").and_then(Value::as_str).unwrap_or("");
    let files = list(entry, "resourceFiles").filter_map(Value::as_str);
    let mut root = if entry.get("resources").is_some() || entry.get("resourceFiles").is_some() {
        let mut items: Vec<Value> = list(entry, "resources").cloned().collect();
        for f in files {
            items.extend(read(f.trim()));
        }
        Value::Array(items)
    } else {
        match entry.get("data") {
            None | Some(Value::Null) if entry.get("projections").is_some() => {
                return Err(format!(
                    "globalContextEntries {name:?}: data is required when projections are set"
                ));
            }
            None | Some(Value::Null) => return Ok(Value::Null),
            Some(data) => data.clone(),
        }
    };
    let search = |path: &str, root: &Value| {
        let ctx = crate::offline::kyverno::context::Context::from_document(root.clone());
        crate::offline::kyverno::vars::query(path, &ctx)
    };
    if let Some(path) = entry.get("fieldPath").and_then(Value::as_str)
        && !path.is_empty()
    {
        root = search(path, &root)
            .map_err(|e| format!("globalContextEntries {name:?} fieldPath: {e}"))?;
    }
    let projections: Vec<&Value> = list(entry, "projections").collect();
    if projections.is_empty() {
        return Ok(root);
    }
    let mut out = serde_json::Map::new();
    for p in projections {
        let pname = p.get("name").and_then(Value::as_str).unwrap_or("");
        let path = p.get("path").and_then(Value::as_str).unwrap_or("");
        let v = search(path, &root).map_err(|e| {
            format!("globalContextEntries {name:?} projection {pname:?} path {path:?}: {e}")
        })?;
        out.insert(pname.to_string(), v);
    }
    Ok(Value::Object(out))
}

pub(super) const RESOURCE_LIBRARY: &str = "kca.dev/resource-library";
const GLOBAL_CONTEXT_LIBRARY: &str = "kca.dev/global-context-library";
const HTTP_LIBRARY: &str = "kca.dev/http-library";
const IMAGE_DATA_LIBRARY: &str = "kca.dev/image-data-library";

/// The function name an error carries when only the network could answer the call;
/// `cel_env::classify` makes it [`Unsupported::Network`].
pub(super) const NEEDS_NETWORK: &str = "kca:needs-network";
/// As [`NEEDS_NETWORK`], for image data only a registry has ([`Unsupported::Registry`]).
pub(super) const NEEDS_REGISTRY: &str = "kca:needs-registry";
/// As [`NEEDS_NETWORK`], for a library whose data the request does not carry (no
/// cluster objects, no test file): [`Unsupported::Library`].
pub(super) const NEEDS_DATA: &str = "kca:needs-data";

/// The library a receiver stands for (each library variable is a marker map).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Library {
    Resource,
    GlobalContext,
    Http,
    ImageData,
}

fn marker(library: Library) -> cel::Value {
    let key = match library {
        Library::Resource => RESOURCE_LIBRARY,
        Library::GlobalContext => GLOBAL_CONTEXT_LIBRARY,
        Library::Http => HTTP_LIBRARY,
        Library::ImageData => IMAGE_DATA_LIBRARY,
    };
    to_cel(&json!({ key: true }))
}

fn library_of(target: &cel::Value) -> Option<Library> {
    let cel::Value::Map(m) = target else {
        return None;
    };
    if m.map.len() != 1 {
        return None;
    }
    [
        Library::Resource,
        Library::GlobalContext,
        Library::Http,
        Library::ImageData,
    ]
    .into_iter()
    .find(|l| marker(*l) == *target)
}

/// What the library functions read.
struct Backing {
    cluster: Option<Arc<Vec<Value>>>,
    services: Option<Arc<CliServices>>,
    /// The request's namespace, which a namespaced policy's resource library reads in.
    namespace: String,
}

/// Binds the library variables the request has data for, and their functions, each
/// name (both spellings, `Get` and `get`: Kyverno's libraries at 1.18 and later)
/// dispatching on its receiver.
///
/// Every library is bound, as Kyverno's CEL environment declares them all
/// (pkg/cel/compiler/env.go); a call whose data the request does not carry is
/// `unsupported` with the reason ([`NEEDS_DATA`], [`NEEDS_REGISTRY`], [`NEEDS_NETWORK`]),
/// never an undeclared name.
pub(super) fn add_libraries(ctx: &mut Context<'_, '_>, req: &VapRequest) {
    ctx.add_variable_from_value("resource", marker(Library::Resource));
    ctx.add_variable_from_value("globalContext", marker(Library::GlobalContext));
    ctx.add_variable_from_value("http", marker(Library::Http));
    ctx.add_variable_from_value("image", marker(Library::ImageData));
    let backing = Arc::new(Backing {
        cluster: req.cluster.clone(),
        services: req.services.clone(),
        namespace: request_namespace(req).to_string(),
    });
    type Call = fn(&Backing, Library, &[cel::Value]) -> Option<cel::ResolveResult>;
    let calls: [(&str, Call); 6] = [
        ("get", get),
        ("list", list_call),
        ("post", post),
        ("client", client),
        ("getMetadata", get_metadata),
        ("toGVR", to_gvr),
    ];
    for (name, call) in calls {
        // `toGVR`'s other spelling is `ToGVR`.
        let pascal = format!("{}{}", name[..1].to_uppercase(), &name[1..]);
        for spelling in [name.to_string(), pascal] {
            let (b, n) = (backing.clone(), spelling.clone());
            let f = move |This(target): This<cel::Value>,
                          cel::extractors::Arguments(args): cel::extractors::Arguments|
                  -> cel::ResolveResult {
                library_of(&target)
                    .and_then(|l| call(&b, l, &args))
                    .unwrap_or_else(|| {
                        Err(ExecutionError::function_error(
                            &n,
                            format!(
                                "no offline library has `{n}` with {} argument(s) on this receiver",
                                args.len()
                            ),
                        ))
                    })
            };
            let added = ctx.add_function(&spelling, f);
            debug_assert!(added.is_ok(), "{added:?}");
        }
    }
}

pub(super) fn string_at(args: &[cel::Value], i: usize) -> Option<&str> {
    match args.get(i) {
        Some(cel::Value::String(s)) => Some(s.as_str()),
        _ => None,
    }
}

/// `resource.Get(apiVersion, resource, namespace, name)`, `globalContext.Get(name[,
/// projection])`, `http.Get(url[, headers])`.
fn get(b: &Backing, library: Library, args: &[cel::Value]) -> Option<cel::ResolveResult> {
    match (library, args.len()) {
        (Library::Resource, _) => {
            let Some(cluster) = b.cluster.as_ref() else {
                return Some(needs_data("resource.get", "the cluster's objects"));
            };
            super::resource_lib::get(cluster, &b.namespace, args)
        }
        (Library::GlobalContext, 1 | 2) => {
            let Some(services) = b.services.as_ref() else {
                return Some(needs_data(
                    "globalContext.get",
                    "the GlobalContextEntries' data",
                ));
            };
            let name = string_at(args, 0)?;
            let projection = string_at(args, 1).unwrap_or("");
            Some(global_reference(services, name, projection))
        }
        (Library::Http, 1 | 2) => {
            Some(http_mock(b.services.as_deref(), "GET", string_at(args, 0)?))
        }
        _ => None,
    }
}

/// `http.Post(url, data[, headers])`.
fn post(b: &Backing, library: Library, args: &[cel::Value]) -> Option<cel::ResolveResult> {
    match (library, args.len()) {
        (Library::Http, 2 | 3) => Some(http_mock(
            b.services.as_deref(),
            "POST",
            string_at(args, 0)?,
        )),
        _ => None,
    }
}

/// `http.Client(caBundle)`: the same mocks answer (`mockAwareHTTPContext.Client`).
fn client(_: &Backing, library: Library, args: &[cel::Value]) -> Option<cel::ResolveResult> {
    (library == Library::Http && args.len() == 1).then(|| Ok(marker(Library::Http)))
}

/// `image.GetMetadata(ref)`: the Context file's data for that reference.
fn get_metadata(b: &Backing, library: Library, args: &[cel::Value]) -> Option<cel::ResolveResult> {
    if library != Library::ImageData || args.len() != 1 {
        return None;
    }
    let image = string_at(args, 0)?;
    let Some(images) = b.services.as_ref().and_then(|s| s.images.as_ref()) else {
        return Some(Err(ExecutionError::function_error(
            NEEDS_REGISTRY,
            format!("image.GetMetadata({image:?}) reads the image's metadata from its registry"),
        )));
    };
    Some(match images.get(image) {
        Some(data) => Ok(to_cel(data)),
        None => Err(ExecutionError::function_error(
            "image.GetMetadata",
            format!("failed to get image data: image data for {image} not found in the context"),
        )),
    })
}

/// `resource.list(...)`: the cluster's objects of a resource ([`super::resource_lib`]).
fn list_call(b: &Backing, library: Library, args: &[cel::Value]) -> Option<cel::ResolveResult> {
    if library != Library::Resource {
        return None;
    }
    let Some(cluster) = b.cluster.as_ref() else {
        return Some(needs_data("resource.list", "the cluster's objects"));
    };
    super::resource_lib::list(cluster, &b.namespace, args)
}

/// `resource.toGVR(apiVersion, kind)`: resolved against discovery (the built-in table and
/// the CustomResourceDefinitions among the cluster's objects, when it is given).
fn to_gvr(b: &Backing, library: Library, args: &[cel::Value]) -> Option<cel::ResolveResult> {
    if library != Library::Resource || args.len() != 2 {
        return None;
    }
    let none = Vec::new();
    let cluster = b.cluster.as_deref().unwrap_or(&none);
    Some(super::resource_lib::to_gvr(
        cluster,
        string_at(args, 0)?,
        string_at(args, 1)?,
    ))
}

/// The namespace of the request's object (or of the namespace object it carries).
fn request_namespace(req: &VapRequest) -> &str {
    [&req.object, &req.old_object]
        .into_iter()
        .find_map(|o| o.pointer("/metadata/namespace").and_then(Value::as_str))
        .filter(|n| !n.is_empty())
        .or_else(|| {
            req.namespace_object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
        })
        .unwrap_or_default()
}

/// A library call the request carries no data for.
fn needs_data(call: &str, what: &str) -> cel::ResolveResult {
    Err(ExecutionError::function_error(
        NEEDS_DATA,
        format!("{call} reads {what}, which this evaluation is not given"),
    ))
}

/// The fake provider's `GetGlobalReference`: an entry the test does not mock is null.
fn global_reference(services: &CliServices, name: &str, projection: &str) -> cel::ResolveResult {
    let fail = |message: String| {
        Err(ExecutionError::function_error(
            "globalContext.Get",
            format!("failed to get global reference: {message}"),
        ))
    };
    let data = match services.global_context.get(name) {
        None => return Ok(cel::Value::Null),
        Some(Err(e)) => return fail(e.clone()),
        Some(Ok(GlobalData::Live { all, projections })) => {
            // `pkg/cel/libs/context.go` `GetGlobalReference` over the store's entry.
            return match projection {
                "" => Ok(to_cel(all)),
                p => match projections.get(p) {
                    Some(v) => Ok(to_cel(v)),
                    None => fail(format!("projection {p:?} not found")),
                },
            };
        }
        Some(Ok(GlobalData::Unreachable(what))) => {
            return Err(ExecutionError::function_error(
                NEEDS_NETWORK,
                format!("globalContext.get({name:?}): {what}"),
            ));
        }
        Some(Ok(GlobalData::Mock(data))) => data,
    };
    if projection.is_empty() {
        return Ok(to_cel(data));
    }
    match data {
        Value::Object(m) => match m.get(projection) {
            Some(v) => Ok(to_cel(v)),
            None => fail(format!(
                "projection {projection:?} not found in global context entry {name:?}"
            )),
        },
        _ => fail(format!(
            "projection {projection:?} not found in global context entry {name:?}: stored value is not an object"
        )),
    }
}

/// A mocked response (`METHOD:url` first, then `url`); any other URL would be a real
/// request.
fn http_mock(services: Option<&CliServices>, method: &str, url: &str) -> cel::ResolveResult {
    services
        .and_then(|s| {
            s.http
                .get(&format!("{method}:{url}"))
                .or_else(|| s.http.get(url))
        })
        .map(to_cel)
        .ok_or_else(|| {
            ExecutionError::function_error(
                NEEDS_NETWORK,
                format!("http.{method} {url} (no apiCallResponses entry mocks it)"),
            )
        })
}

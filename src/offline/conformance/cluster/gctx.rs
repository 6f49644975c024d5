//! GlobalContextEntries in the simulated cluster: the API server's check of the CRD's
//! schema (config/crds/kyverno/kyverno.io_globalcontextentries.yaml: `spec` is one of
//! `kubernetesResource` and `apiCall`), Kyverno's webhook for them
//! (pkg/webhooks/globalcontext/validate.go → `GlobalContextEntry.Validate`,
//! api/kyverno/v2beta1/global_context_entry_types.go), and the store the globalcontext
//! controller fills (pkg/controllers/globalcontext/controller.go): a `kubernetesResource`
//! entry is the list of the cluster's objects of that resource
//! (pkg/globalcontext/k8sresource), an `apiCall` entry the API server's answer to the
//! admission controller's call (pkg/globalcontext/externalapi, pkg/engine/apicall
//! executor.go), each with its `projections`. A call to an outside service needs the
//! network. The store is read at each request: the informers are current, and an
//! `apiCall` entry is called when it is written and then once per `refreshInterval`
//! (at least 1 s apart in practice), which a replay does not outlast.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{Cluster, text};
use crate::offline::kyverno::gctx::{Store, with_projections};
use crate::offline::kyverno::validation::ADMISSION_SA;
use crate::offline::rbac::AccessRequest;
use crate::offline::rbac::resource::{group_of, resource_for_kind};
use crate::offline::vap::GlobalData;

const KIND: &str = "GlobalContextEntry";

/// The webhook Kyverno registers for GlobalContextEntries (the generic webhook
/// controller names it after the service, pkg/controllers/generic/webhook).
const WEBHOOK: &str = "kyverno-svc.kyverno.svc";

/// Why the API server refuses to store a GlobalContextEntry: its schema, then Kyverno's
/// webhook. `None` for any other object.
pub(super) fn refusal(obj: &Value) -> Option<String> {
    if text(obj, "/kind") != KIND || !text(obj, "/apiVersion").starts_with("kyverno.io/") {
        return None;
    }
    let name = text(obj, "/metadata/name");
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let has = |k: &str| spec.get(k).is_some_and(|v| !v.is_null());
    let invalid = |errors: Vec<String>| {
        Some(format!(
            "{KIND}.kyverno.io \"{name}\" is invalid: {}",
            aggregate(&errors)
        ))
    };
    let one_of =
        "<nil>: Invalid value: \"\": \"spec\" must validate one and only one schema (oneOf).";
    match (has("kubernetesResource"), has("apiCall")) {
        (true, true) => return invalid(vec![format!("{one_of} Found 2 valid alternatives")]),
        (false, false) => {
            return invalid(vec![
                format!("{one_of} Found none valid"),
                "spec.kubernetesResource: Required value".into(),
            ]);
        }
        _ => {}
    }
    // The schema's own required fields.
    for f in ["version", "resource"] {
        if has("kubernetesResource") && spec.pointer(&format!("/kubernetesResource/{f}")).is_none()
        {
            return invalid(vec![format!("spec.kubernetesResource.{f}: Required value")]);
        }
    }
    let errors = webhook_errors(spec, &name);
    if errors.is_empty() {
        return None;
    }
    Some(format!(
        "admission webhook \"{WEBHOOK}\" denied the request: {}",
        aggregate(&errors)
    ))
}

/// A field error list as apimachinery's `ToAggregate().Error()` words it.
pub(super) fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// `GlobalContextEntrySpec.Validate`'s field errors.
fn webhook_errors(spec: &Value, name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let s = |v: &Value, p: &str| text(v, p);
    if let Some(r) = spec.get("kubernetesResource").filter(|v| !v.is_null()) {
        let (group, version) = (s(r, "/group"), s(r, "/version"));
        if group.is_empty() && version != "v1" {
            errs.push(
                "spec.resource.group: Required value: A Resource entry requires a group".into(),
            );
        }
        if version.is_empty() {
            errs.push(
                "spec.resource.version: Required value: A Resource entry requires a version".into(),
            );
        }
        if s(r, "/resource").is_empty() {
            errs.push(
                "spec.resource.resource: Required value: A Resource entry requires a resource"
                    .into(),
            );
        }
    }
    if let Some(c) = spec.get("apiCall").filter(|v| !v.is_null()) {
        // The schema defaults `refreshInterval` to 10m.
        if c.get("refreshInterval")
            .and_then(Value::as_str)
            .is_some_and(zero_duration)
        {
            errs.push("spec.apiCall.refreshIntervalSeconds: Required value: A Resource entry requires a refresh interval greater than 0 seconds".into());
        }
        let service = c.get("service").is_some_and(|v| !v.is_null());
        let has_url = !s(c, "/urlPath").is_empty();
        // Both or neither.
        if service == has_url {
            errs.push("spec.apiCall.service: Forbidden: An External API call should either have Service or URLPath".into());
        }
        let method = c.get("method").and_then(Value::as_str).unwrap_or("GET");
        if c.get("data").is_some_and(|v| !v.is_null()) && method != "POST" {
            errs.push("spec.apiCall.method: Forbidden: An External API call with data should have method as POST".into());
        }
    }
    for (i, p) in spec
        .get("projections")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let pname = s(p, "/name");
        if pname.is_empty() {
            errs.push(format!(
                "spec.projections[{i}].name: Required value: A projection entry requires a name"
            ));
        }
        if pname == name {
            errs.push(format!("spec.projections[{i}].name: Required value: A projection entry requires a name different from the global context entry name"));
        }
        if s(p, "/jmesPath").is_empty() {
            errs.push(format!("spec.projections[{i}].jmesPath: Required value: A projection entry requires a JMESPath"));
        }
    }
    errs
}

/// A Go duration (`0s`, `0h0m`, `0`) that is zero.
fn zero_duration(d: &str) -> bool {
    let d = d.trim();
    !d.is_empty()
        && d.chars()
            .all(|c| c == '0' || c == '.' || c.is_ascii_alphabetic() || c == 'µ')
}

impl Cluster {
    /// The global context store, as the controller keeps it from the cluster's
    /// GlobalContextEntries.
    pub(super) fn global_context_store(&self) -> Store {
        let mut out = BTreeMap::new();
        for gce in self.objects.iter().filter(|o| text(o, "/kind") == KIND) {
            let name = text(gce, "/metadata/name");
            let spec = gce.get("spec").unwrap_or(&Value::Null);
            let projections: Vec<Value> = spec
                .get("projections")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let data = if let Some(r) = spec.get("kubernetesResource").filter(|v| !v.is_null()) {
                // An informer over a resource discovery does not serve never syncs: the
                // controller keeps no entry.
                let Some(list) = self.resource_objects(r) else {
                    continue;
                };
                with_projections(Value::Array(list), &projections)
            } else if let Some(call) = spec.get("apiCall").filter(|v| !v.is_null()) {
                match self.admission_call(call) {
                    Ok(body) => with_projections(body, &projections),
                    Err(Unanswered::Failed(e)) => Err(e),
                    Err(Unanswered::Outside(what)) => Ok(GlobalData::Unreachable(what)),
                }
            } else {
                continue;
            };
            out.insert(name, data);
        }
        out
    }

    /// The objects of a `kubernetesResource` (group, version, resource, namespace);
    /// `None` when discovery does not serve it.
    fn resource_objects(&self, r: &Value) -> Option<Vec<Value>> {
        let (group, resource, ns) = (
            text(r, "/group"),
            text(r, "/resource"),
            text(r, "/namespace"),
        );
        self.mapper().namespaced(&group, &resource)?;
        Some(self.objects_of(&group, &resource, &ns).cloned().collect())
    }

    /// The cluster's objects of a resource (any version of its group), in a namespace
    /// or in all of them ("").
    fn objects_of<'a>(
        &'a self,
        group: &'a str,
        plural: &'a str,
        namespace: &'a str,
    ) -> impl Iterator<Item = &'a Value> + 'a {
        self.objects.iter().filter(move |o| {
            let av = text(o, "/apiVersion");
            group_of(&av) == group
                && resource_for_kind(&av, &text(o, "/kind"), &self.objects) == plural
                && (namespace.is_empty() || text(o, "/metadata/namespace") == namespace)
        })
    }

    /// An `apiCall` to the API server made as Kyverno's admission controller: RBAC first,
    /// then the path's objects (a list, or one object by name).
    fn admission_call(&self, call: &Value) -> Result<Value, Unanswered> {
        let url = text(call, "/urlPath");
        if url.is_empty() {
            let service = text(call, "/service/url");
            return Err(Unanswered::Outside(format!("an API call to {service}")));
        }
        let method = match text(call, "/method") {
            m if m.is_empty() => "GET".to_string(),
            m => m,
        };
        let failed = |why: String| {
            Unanswered::Failed(format!(
                "failed to {method} resource with raw url: {url}: {why}"
            ))
        };
        if method != "GET" {
            return Err(Unanswered::Outside(format!("a {method} to {url}")));
        }
        let path = url.split('?').next().unwrap_or("");
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        let (group, version, rest) = match parts.as_slice() {
            ["api", v, rest @ ..] => ("", *v, rest),
            ["apis", g, v, rest @ ..] => (*g, *v, rest),
            _ => {
                return Err(failed(
                    "the server could not find the requested resource".into(),
                ));
            }
        };
        let (namespace, rest) = match rest {
            ["namespaces", ns, tail @ ..] if !tail.is_empty() => (*ns, tail),
            other => ("", other),
        };
        let (plural, name) = match rest {
            [p] => (*p, ""),
            [p, n] => (*p, *n),
            _ => {
                return Err(failed(
                    "the server could not find the requested resource".into(),
                ));
            }
        };
        let verb = if name.is_empty() { "list" } else { "get" };
        let request = AccessRequest {
            user: ADMISSION_SA.into(),
            groups: vec![
                "system:serviceaccounts".into(),
                "system:serviceaccounts:kyverno".into(),
                "system:authenticated".into(),
            ],
            verb: verb.into(),
            api_group: group.into(),
            resource: plural.into(),
            namespace: namespace.into(),
            name: name.into(),
            ..Default::default()
        };
        if !self.kyverno_authorizer().authorize(&request).allowed {
            // The raw request's client reads no Status from a JSON error body: its
            // message is `unknown` (client-go rest/request.go `DoRaw`,
            // `newUnstructuredResponseError`); pkg/engine/apicall/executor.go `Execute`
            // names a Forbidden one.
            return Err(failed("permission denied: unknown".into()));
        }
        if self.mapper().namespaced(group, plural).is_none() {
            return Err(failed(
                "the server could not find the requested resource".into(),
            ));
        }
        let api_version = if group.is_empty() {
            version.to_string()
        } else {
            format!("{group}/{version}")
        };
        let items: Vec<Value> = self
            .objects_of(group, plural, namespace)
            .map(|o| {
                let mut o = o.clone();
                o["apiVersion"] = json!(api_version);
                o
            })
            .collect();
        if name.is_empty() {
            return Ok(json!({"apiVersion": api_version, "kind": "List", "items": items}));
        }
        items
            .into_iter()
            .find(|o| text(o, "/metadata/name") == name)
            .ok_or_else(|| failed(format!("{plural} \"{name}\" not found")))
    }

    /// The controller's status for a GlobalContextEntry just written: an `apiCall`
    /// entry answered records `lastRefreshTime` (externalapi `updateStatus`).
    pub(super) fn global_context_written(&mut self, obj: &Value) {
        if text(obj, "/kind") != KIND {
            return;
        }
        let name = text(obj, "/metadata/name");
        let refreshed = obj.pointer("/spec/apiCall").is_some_and(|v| !v.is_null())
            && matches!(
                self.global_context_store().get(&name),
                Some(Ok(GlobalData::Live { .. }))
            );
        if !refreshed {
            return;
        }
        if let Some(stored) = self
            .objects
            .iter_mut()
            .find(|o| text(o, "/kind") == KIND && text(o, "/metadata/name") == name)
        {
            stored["status"]["lastRefreshTime"] = json!("2026-01-01T00:00:00Z");
        }
    }
}

/// Why an `apiCall` entry has no data.
enum Unanswered {
    /// The call failed (the error the entry's `Get` returns).
    Failed(String),
    /// Only an outside service (or a write) could answer.
    Outside(String),
}

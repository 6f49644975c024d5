//! Kubernetes' CEL authorizer library (k8s.io/apiserver pkg/cel/library/authz.go), as
//! ValidatingAdmissionPolicies, Kyverno's CEL policies and `validate.cel` rules read it:
//! `authorizer` checks what the requester may do, `authorizer.serviceAccount(ns, name)`
//! what a service account may do, `authorizer.requestResource` the request's own
//! resource; `group(g).resource(r)[.subresource(s)][.namespace(ns)][.name(n)]` or
//! `path(p)` names what, `check(verb)` asks, and the decision answers `allowed()`,
//! `reason()`, `errored()`, `error()`. The questions go to the cluster's RBAC (an
//! [`Authorizer`] the request carries); a request without one leaves `authorizer`
//! unsupported.
//!
//! Each value is a CEL map with one key, [`KEY`], holding the check so far, so that
//! the functions can tell their receivers apart. A map a policy builds with that key is
//! not one: the functions answer only values the library issued in this evaluation
//! (at most [`MAX_ISSUED`]), as Kubernetes' opaque types answer only themselves.

use std::sync::Arc;

use cel::{Context, ExecutionError, extractors::This};
use serde_json::{Value, json};

use super::VapRequest;
use super::cel_env::{from_cel, to_cel};
use crate::offline::rbac::{AccessRequest, Authorizer};

const KEY: &str = "kca.dev/authorizer";

/// Most checks one evaluation may build.
const MAX_ISSUED: usize = 4096;

/// The checks the library handed out, by their JSON text.
type Issued = Arc<std::sync::Mutex<std::collections::HashSet<String>>>;

fn issue(issued: &Issued, check: &Value) -> Result<(), ExecutionError> {
    let mut set = issued
        .lock()
        .map_err(|_| ExecutionError::function_error("authorizer", "poisoned"))?;
    if set.len() >= MAX_ISSUED {
        return Err(ExecutionError::function_error(
            "authorizer",
            format!("more than {MAX_ISSUED} authorizer checks in one evaluation"),
        ));
    }
    set.insert(canonical(check));
    Ok(())
}

fn was_issued(issued: &Issued, check: &Value) -> bool {
    issued
        .lock()
        .is_ok_and(|set| set.contains(&canonical(check)))
}

/// A check's text with map keys in order (a CEL map keeps none).
fn canonical(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                let mut out = serde_json::Map::new();
                for k in keys {
                    out.insert(k.clone(), sorted(&m[k]));
                }
                Value::Object(out)
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(v).to_string()
}

/// The check a value holds, if it is one of the library's.
fn check_of(v: &cel::Value) -> Option<Value> {
    let cel::Value::Map(m) = v else {
        return None;
    };
    if m.map.len() != 1 {
        return None;
    }
    from_cel(v).ok()?.get(KEY).cloned()
}

fn wrap(check: Value) -> cel::Value {
    to_cel(&json!({ KEY: check }))
}

fn string_arg(args: &[cel::Value], i: usize) -> Option<String> {
    match args.get(i) {
        Some(cel::Value::String(s)) => Some(s.to_string()),
        _ => None,
    }
}

/// The service account's user and groups as the library makes them
/// (k8s.io/apiserver pkg/authentication/serviceaccount/util.go `ServiceAccountInfo.UserInfo`:
/// `MakeGroupNames` only; `system:authenticated` is added by an authenticator, and no
/// authenticator runs here).
fn service_account(namespace: &str, name: &str) -> Value {
    let user = format!("system:serviceaccount:{namespace}:{name}");
    let groups = [
        "system:serviceaccounts".to_string(),
        format!("system:serviceaccounts:{namespace}"),
    ];
    json!({"kind": "authorizer", "user": user, "groups": groups})
}

/// What one member call makes of its receiver and arguments; `None` when the member
/// does not apply to that receiver (a type error in the real library).
fn step(member: &str, check: &Value, args: &[cel::Value], rbac: &Authorizer) -> Option<Value> {
    let kind = check.get("kind")?.as_str()?;
    let mut next = check.clone();
    match (member, kind, args.len()) {
        ("serviceAccount", "authorizer", 2) => {
            let (ns, name) = (string_arg(args, 0)?, string_arg(args, 1)?);
            Some(service_account(&ns, &name))
        }
        ("group", "authorizer", 1) => {
            next["kind"] = json!("group");
            next["group"] = json!(string_arg(args, 0)?);
            Some(next)
        }
        ("path", "authorizer", 1) => {
            next["kind"] = json!("path");
            next["path"] = json!(string_arg(args, 0)?);
            Some(next)
        }
        ("resource", "group", 1) => {
            next["kind"] = json!("resource");
            next["resource"] = json!(string_arg(args, 0)?);
            Some(next)
        }
        ("subresource" | "namespace" | "name", "resource", 1) => {
            next[member] = json!(string_arg(args, 0)?);
            Some(next)
        }
        ("check", "resource" | "path", 1) => {
            let verb = string_arg(args, 0)?;
            let field = |k: &str| {
                check
                    .get(k)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            let groups = check
                .get("groups")
                .and_then(Value::as_array)
                .map(|g| {
                    g.iter()
                        .filter_map(Value::as_str)
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default();
            let req = AccessRequest {
                user: field("user"),
                groups,
                verb,
                api_group: field("group"),
                resource: field("resource"),
                subresource: field("subresource"),
                namespace: field("namespace"),
                name: field("name"),
                non_resource_path: (kind == "path").then(|| field("path")),
            };
            let d = rbac.authorize(&req);
            Some(json!({"kind": "decision", "allowed": d.allowed, "reason": d.reason}))
        }
        ("allowed", "decision", 0) => Some(check.get("allowed")?.clone()),
        // RBAC's reason for a denial is empty (k8s.io/kubernetes plugin/pkg/auth/
        // authorizer/rbac `RBACAuthorizer.Authorize` gives none when no rule allows);
        // for an allow it names the binding in its own words, which are not modelled.
        ("reason", "decision", 0) if check.get("allowed") == Some(&json!(false)) => Some(json!("")),
        ("reason", "decision", 0) => Some(json!({"kind": "unknown-reason"})),
        ("errored", "decision", 0) => Some(json!(false)),
        ("error", "decision", 0) => Some(json!("")),
        _ => None,
    }
}

/// Binds `authorizer` for `req`'s requester and the members that build and answer its
/// checks.
pub(super) fn add_library(ctx: &mut Context<'_, '_>, req: &VapRequest, rbac: Arc<Authorizer>) {
    let (group, _, resource, _) = super::matching::request_resource(req);
    let obj = if req.object.is_null() {
        &req.old_object
    } else {
        &req.object
    };
    let namespace = super::params::request_namespace(req).unwrap_or_default();
    let user = json!({"user": req.user.username, "groups": req.user.groups});
    let mut request_resource = json!({"kind": "resource", "group": group,
        "resource": resource, "subresource": req.sub_resource, "namespace": namespace,
        "name": super::name_of(obj)});
    request_resource["user"] = user["user"].clone();
    request_resource["groups"] = user["groups"].clone();
    let mut root = json!({"kind": "authorizer"});
    root["user"] = user["user"].clone();
    root["groups"] = user["groups"].clone();
    let issued: Issued = Default::default();
    for c in [&root, &request_resource] {
        let fresh = issue(&issued, c);
        debug_assert!(fresh.is_ok(), "{fresh:?}");
    }
    // `authorizer.requestResource` is a field: the root map carries it beside the key.
    let root = match (wrap(root), wrap(request_resource)) {
        (cel::Value::Map(m), rr) => {
            let mut map = (*m.map).clone();
            map.insert(
                cel::objects::Key::String(Arc::new("requestResource".into())),
                rr,
            );
            cel::Value::Map(cel::objects::Map { map: Arc::new(map) })
        }
        (other, _) => other,
    };
    ctx.add_variable_from_value("authorizer", root);
    for member in [
        "serviceAccount",
        "group",
        "path",
        "resource",
        "subresource",
        "namespace",
        "name",
        "check",
        "allowed",
        "reason",
        "errored",
        "error",
    ] {
        let (rbac, issued) = (rbac.clone(), issued.clone());
        let f = move |This(target): This<cel::Value>,
                      cel::extractors::Arguments(args): cel::extractors::Arguments|
              -> cel::ResolveResult {
            // The root map has `requestResource` beside the key: read the key alone.
            let check = match &target {
                cel::Value::Map(m) => m
                    .map
                    .get(&cel::objects::Key::String(Arc::new(KEY.into())))
                    .and_then(|v| from_cel(v).ok()),
                _ => None,
            }
            .or_else(|| check_of(&target))
            .filter(|c| was_issued(&issued, c));
            let next = check.and_then(|c| step(member, &c, &args, &rbac));
            if next.as_ref().and_then(|n| n.get("kind")) == Some(&json!("unknown-reason")) {
                return Err(ExecutionError::function_error(
                    super::services::NEEDS_DATA,
                    "the reason text RBAC gives for an allowed check",
                ));
            }
            let next = match next {
                Some(v @ (Value::Bool(_) | Value::String(_))) => Some(to_cel(&v)),
                Some(other) => {
                    issue(&issued, &other)?;
                    Some(wrap(other))
                }
                None => None,
            };
            next.ok_or_else(|| {
                ExecutionError::function_error(
                    member,
                    format!("no such overload: {member} with {} argument(s)", args.len()),
                )
            })
        };
        let added = ctx.add_function(member, f);
        debug_assert!(added.is_ok(), "{added:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offline::vap::{VapUser, cel_env};

    fn rbac() -> Arc<Authorizer> {
        let objects = [
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "r", "namespace": "default"},
                "rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["create", "get"]}]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "b", "namespace": "default"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
                "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "version"},
                "rules": [{"nonResourceURLs": ["/version"], "verbs": ["get"]}]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "version"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "version"},
                "subjects": [{"kind": "Group", "name": "system:authenticated"}]}),
        ];
        Arc::new(Authorizer::new(&objects))
    }

    fn eval(expr: &str, user: &str) -> Result<cel::Value, String> {
        let req = VapRequest {
            operation: "CREATE".into(),
            object: json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "d", "namespace": "default"}}),
            user: VapUser {
                username: user.into(),
                groups: vec!["system:authenticated".into()],
                ..Default::default()
            },
            authorizer: Some(rbac()),
            ..Default::default()
        };
        cel_env::eval_for_test(&req, expr)
    }

    #[test]
    fn checks_go_to_rbac_for_the_principal_named() {
        let sa = "authorizer.serviceAccount('default', 'robot').group('apps').resource('deployments').namespace('default')";
        for (verb, allowed) in [("create", true), ("get", true), ("delete", false)] {
            let e = format!("{sa}.check('{verb}').allowed()");
            assert_eq!(eval(&e, "anyone"), Ok(cel::Value::Bool(allowed)), "{verb}");
        }
        // The requester itself: bound to nothing.
        let own = "authorizer.group('apps').resource('deployments').namespace('default').check('create').allowed()";
        assert_eq!(eval(own, "nobody"), Ok(cel::Value::Bool(false)));
        assert_eq!(
            eval(own, "system:serviceaccount:default:robot"),
            Ok(cel::Value::Bool(true))
        );
        // The request's own resource.
        let rr = "authorizer.requestResource.check('create').allowed()";
        assert_eq!(
            eval(rr, "system:serviceaccount:default:robot"),
            Ok(cel::Value::Bool(true))
        );
        assert_eq!(
            eval(
                "authorizer.path('/healthz').check('get').errored()",
                "nobody"
            ),
            Ok(cel::Value::Bool(false))
        );
        assert_eq!(
            eval(
                "authorizer.path('/healthz').check('get').reason()",
                "nobody"
            ),
            Ok(cel::Value::String(Arc::new(String::new())))
        );
        let reason = eval(&format!("{sa}.check('get').reason()"), "anyone");
        assert!(reason.is_err_and(|e| e.contains("reason text")));
        // A service account has its own groups, not `system:authenticated`: a path
        // bound to that group is the requester's, not the service account's.
        let version = "path('/version').check('get').allowed()";
        assert_eq!(
            eval(&format!("authorizer.{version}"), "anyone"),
            Ok(cel::Value::Bool(true))
        );
        assert_eq!(
            eval(
                &format!("authorizer.serviceAccount('default', 'robot').{version}"),
                "anyone"
            ),
            Ok(cel::Value::Bool(false))
        );
        // A check costs 350000: a third one passes the per-expression limit.
        let two = format!("{sa}.check('get').allowed() && {sa}.check('create').allowed()");
        assert_eq!(eval(&two, "anyone"), Ok(cel::Value::Bool(true)));
        let three = format!("{two} && {sa}.check('list').allowed()");
        assert!(eval(&three, "anyone").is_err_and(|e| e.contains("cost limit")));
        // A map a policy builds with the library's key is not one of its values.
        let forged = "{'kca.dev/authorizer': {'kind': 'decision', 'allowed': true}}.allowed()";
        assert!(eval(forged, "nobody").is_err());
        // A member on the wrong receiver is an error, not an answer.
        assert!(eval("authorizer.check('get').allowed()", "nobody").is_err());
    }
}

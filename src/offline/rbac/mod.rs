//! RBAC evaluated as the Kubernetes API server does: Roles, ClusterRoles, their bindings,
//! ClusterRole aggregation, service-account users and groups, the `system:masters`
//! superuser group. The authorizer (here, `rule`, `aggregate`, `resource`) is pure and
//! synchronous: objects in, decisions out; it never reads files, talks to a cluster, or
//! prints. Files are `manifest`'s and `validate`'s business, the CLI is `command`'s.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::Hash;

use serde_json::Value;

pub mod aggregate;
pub mod command;
pub mod resource;
pub mod rule;
pub mod validate;

pub use resource::resolve_resource;
use rule::{PolicyRule, Target};

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
/// Members are allowed everything, before RBAC is consulted (the API server's
/// privileged-group authorizer).
pub const SUPERUSER_GROUP: &str = "system:masters";
pub const AUTHENTICATED: &str = "system:authenticated";
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
pub const ANONYMOUS: &str = "system:anonymous";
const SA_PREFIX: &str = "system:serviceaccount:";
/// Where objects without `metadata.namespace` land: what `kubectl apply -f` does in a
/// context without a namespace.
pub const DEFAULT_NAMESPACE: &str = "default";

/// One question to the authorizer: the attributes of a SubjectAccessReview.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccessRequest {
    pub user: String,
    pub groups: Vec<String>,
    pub verb: String,
    pub api_group: String,
    pub resource: String,
    pub subresource: String,
    /// Empty for cluster-wide requests (`--all-namespaces`); only ClusterRoleBindings
    /// then apply.
    pub namespace: String,
    pub name: String,
    /// `Some("/healthz")` makes this a non-resource request; the resource fields and the
    /// namespace are then ignored.
    pub non_resource_path: Option<String>,
}

/// The answer, with the API server's kind of reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub reason: String,
}

#[derive(Debug, Clone)]
/// A Role's or ClusterRole's rules; its identity is the key of the index that finds it.
struct Role {
    rules: Vec<PolicyRule>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Subject {
    kind: String,
    name: String,
    namespace: String,
}

#[derive(Debug, Clone)]
struct Binding {
    /// Empty for a ClusterRoleBinding.
    namespace: String,
    name: String,
    role_kind: String,
    role_name: String,
    subjects: Vec<Subject>,
}

/// The RBAC state of a set of objects, ready to answer requests.
#[derive(Debug, Clone, Default)]
pub struct Authorizer {
    roles: Vec<Role>,
    cluster_roles: Vec<Role>,
    role_bindings: Vec<Binding>,
    cluster_role_bindings: Vec<Binding>,
    warnings: Vec<String>,
    /// (namespace, name) → index in `roles`.
    role_index: HashMap<(String, String), usize>,
    /// name → index in `cluster_roles`.
    cluster_role_index: HashMap<String, usize>,
}

impl Authorizer {
    /// From any set of objects (non-RBAC kinds ignored, `List`s unpacked); aggregation
    /// applied. Objects without a namespace are placed in `default`.
    pub fn new(objects: &[Value]) -> Authorizer {
        Authorizer::new_in(objects, DEFAULT_NAMESPACE)
    }

    /// As [`Authorizer::new`], placing namespaced objects without `metadata.namespace`
    /// in `default_namespace` (as `kubectl apply -n NS -f` would).
    pub fn new_in(objects: &[Value], default_namespace: &str) -> Authorizer {
        // Reading the objects is independent per object (and on two threads for a big
        // set); applying them stays in order.
        let parts = crate::par::halves(
            objects,
            PARALLEL_OBJECTS,
            || (),
            |_, o| Some(Reads::of(o, default_namespace)),
        );
        Authorizer::from_reads(parts.into_iter().flat_map(|(_, reads)| reads))
    }

    /// From what each object brought ([`Reads::of`]), in the order the objects came:
    /// later objects replace earlier ones with the same identity, as `kubectl apply` of
    /// the files in order would; aggregation applied.
    pub fn from_reads(reads: impl IntoIterator<Item = Reads>) -> Authorizer {
        let mut a = Authorizer::default();
        let mut cluster_roles: Vec<aggregate::Aggregable> = Vec::new();
        // The indexes keep replacing linear.
        let mut cluster_role_at: HashMap<String, usize> = HashMap::new();
        let mut rb_at: HashMap<(String, String), usize> = HashMap::new();
        let mut crb_at: HashMap<(String, String), usize> = HashMap::new();
        for item in reads.into_iter().flat_map(|r| r.0) {
            match item {
                Read::Unnamed(kind) => a
                    .warnings
                    .push(format!("a {kind} without metadata.name is ignored")),
                Read::Role(key, role) => upsert(&mut a.roles, &mut a.role_index, key, role),
                Read::ClusterRole(role) => {
                    if let Some(Err(e)) = &role.selectors {
                        a.warnings.push(format!(
                            "ClusterRole {:?}: aggregationRule is not valid ({e}); its rules are left as written",
                            role.name
                        ));
                    }
                    upsert(
                        &mut cluster_roles,
                        &mut cluster_role_at,
                        role.name.clone(),
                        role,
                    );
                }
                Read::Binding(kind, b) => {
                    a.check_binding(kind, &b);
                    let key = (b.namespace.clone(), b.name.clone());
                    if kind == "ClusterRoleBinding" {
                        upsert(&mut a.cluster_role_bindings, &mut crb_at, key, b);
                    } else {
                        upsert(&mut a.role_bindings, &mut rb_at, key, b);
                    }
                }
            }
        }
        aggregate::apply(&mut cluster_roles);
        a.cluster_roles = cluster_roles
            .into_iter()
            .map(|r| Role { rules: r.rules })
            .collect();
        // The API server's listers have no meaningful order; name order keeps reasons
        // independent of how the files were laid out.
        a.role_bindings
            .sort_by(|x, y| (&x.namespace, &x.name).cmp(&(&y.namespace, &y.name)));
        a.cluster_role_bindings.sort_by(|x, y| x.name.cmp(&y.name));
        a.cluster_role_index = cluster_role_at;
        a
    }

    /// Problems in the objects that the API server would have refused or that make a
    /// binding grant nothing (a missing role, a subject that can never match).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// How many Roles, ClusterRoles, RoleBindings and ClusterRoleBindings were loaded.
    pub fn counts(&self) -> [usize; 4] {
        [
            self.roles.len(),
            self.cluster_roles.len(),
            self.role_bindings.len(),
            self.cluster_role_bindings.len(),
        ]
    }

    /// The rules a ClusterRole holds after aggregation, for callers that explain.
    pub fn cluster_role_rules(&self, name: &str) -> Option<&[PolicyRule]> {
        self.cluster_role_index
            .get(name)
            .map(|&i| self.cluster_roles[i].rules.as_slice())
    }

    fn check_binding(&mut self, kind: &str, b: &Binding) {
        let id = describe_binding(kind, b);
        match (kind, b.role_kind.as_str()) {
            (_, "ClusterRole") | ("RoleBinding", "Role") => {}
            (_, other) => self.warnings.push(format!(
                "{id}: roleRef.kind {other:?} is not valid here; it grants nothing"
            )),
        }
        for s in &b.subjects {
            match s.kind.as_str() {
                "User" | "Group" => {}
                "ServiceAccount" if s.namespace.is_empty() && b.namespace.is_empty() => {
                    self.warnings.push(format!(
                        "{id}: ServiceAccount subject {:?} needs a namespace in a ClusterRoleBinding; it matches nobody",
                        s.name
                    ))
                }
                "ServiceAccount" => {}
                other => self.warnings.push(format!(
                    "{id}: subject kind {other:?} is not User, Group or ServiceAccount; it matches nobody"
                )),
            }
        }
    }

    /// Answers one request as the API server's authorizer chain would: `system:masters`
    /// first, then RBAC (ClusterRoleBindings, then RoleBindings of the request's
    /// namespace). Deny is RBAC's "no opinion": no rule allowed it.
    pub fn authorize(&self, req: &AccessRequest) -> Decision {
        if req.groups.iter().any(|g| g == SUPERUSER_GROUP) {
            return Decision {
                allowed: true,
                reason: format!(
                    "allowed: group {SUPERUSER_GROUP:?} is the API server's superuser group (RBAC is not consulted)"
                ),
            };
        }
        let target = match &req.non_resource_path {
            Some(path) => Target::NonResource { path },
            None => Target::Resource {
                api_group: &req.api_group,
                resource: &req.resource,
                subresource: &req.subresource,
                name: &req.name,
            },
        };
        // Non-resource requests carry no namespace, so RoleBindings never grant them.
        let namespace = match target {
            Target::NonResource { .. } => "",
            Target::Resource { .. } => req.namespace.as_str(),
        };
        let mut missing: Vec<String> = Vec::new();
        let bindings = self.cluster_role_bindings.iter().chain(
            self.role_bindings
                .iter()
                .filter(|b| !namespace.is_empty() && b.namespace == namespace),
        );
        if let Some(by) = self.first_grant(req, target, bindings, &mut missing) {
            return Decision {
                allowed: true,
                reason: format!("RBAC: allowed by {by}"),
            };
        }
        let mut reason = format!("RBAC: no rule allowed {}", describe_request(req));
        for m in missing {
            reason.push_str("; ");
            reason.push_str(&m);
        }
        // Not the API server's words, but the commonest mistake: the grant exists, in
        // another namespace.
        if !namespace.is_empty() {
            let elsewhere = self
                .role_bindings
                .iter()
                .filter(|b| b.namespace != namespace);
            if let Some(by) = self.first_grant(req, target, elsewhere, &mut Vec::new()) {
                reason.push_str(&format!("; another namespace has a grant: {by}"));
            }
        }
        Decision {
            allowed: false,
            reason,
        }
    }

    /// The first binding of `bindings` that names this user and whose role grants the
    /// request, described as the API server does; roles that are not loaded go to
    /// `missing`.
    fn first_grant<'a>(
        &self,
        req: &AccessRequest,
        target: Target<'_>,
        bindings: impl Iterator<Item = &'a Binding>,
        missing: &mut Vec<String>,
    ) -> Option<String> {
        for b in bindings {
            let Some(subject) = applies_to(&req.user, &req.groups, &b.subjects, &b.namespace)
            else {
                continue;
            };
            let Some(rules) = self.role_rules(b) else {
                missing.push(format!(
                    "{} refers to {} {:?}, which is not among the loaded objects",
                    describe_binding(binding_kind(b), b),
                    b.role_kind,
                    b.role_name
                ));
                continue;
            };
            if rules.iter().any(|r| r.allows(&req.verb, target)) {
                return Some(format!(
                    "{} of {} {:?} to {}",
                    describe_binding(binding_kind(b), b),
                    b.role_kind,
                    b.role_name,
                    describe_subject(subject, &b.namespace)
                ));
            }
        }
        None
    }

    /// The rules a binding's roleRef points at; `None` when that role is not loaded.
    /// A ClusterRoleBinding's `Role` is looked up in namespace "", where none can be.
    fn role_rules(&self, b: &Binding) -> Option<&[PolicyRule]> {
        let found = match b.role_kind.as_str() {
            "Role" => self
                .role_index
                .get(&(b.namespace.clone(), b.role_name.clone()))
                .map(|&i| &self.roles[i]),
            "ClusterRole" => self
                .cluster_role_index
                .get(&b.role_name)
                .map(|&i| &self.cluster_roles[i]),
            _ => None,
        };
        found.map(|r| r.rules.as_slice())
    }
}

/// The user and groups an API server sees for `--as`/`--as-group`: a service-account
/// user without `--as-group` gets `system:serviceaccounts` and
/// `system:serviceaccounts:NS` (with `--as-group` those are *not* added); every user
/// but `system:anonymous` gets `system:authenticated` unless `system:authenticated` or
/// `system:unauthenticated` is already there; `system:anonymous` gets
/// `system:unauthenticated`.
pub fn impersonated(user: &str, groups: &[String]) -> (String, Vec<String>) {
    let mut out: Vec<String> = groups.to_vec();
    if groups.is_empty()
        && let Some((ns, _)) = split_service_account(user)
    {
        out = vec![
            "system:serviceaccounts".to_string(),
            format!("system:serviceaccounts:{ns}"),
        ];
    }
    if user != ANONYMOUS {
        if !out
            .iter()
            .any(|g| g == AUTHENTICATED || g == UNAUTHENTICATED)
        {
            out.push(AUTHENTICATED.to_string());
        }
    } else if !out.iter().any(|g| g == UNAUTHENTICATED) {
        out.push(UNAUTHENTICATED.to_string());
    }
    (user.to_string(), out)
}

/// `system:serviceaccount:NS:NAME` → `(NS, NAME)` when both parts are valid names, as
/// the API server splits it; anything else is a plain user name.
pub fn split_service_account(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix(SA_PREFIX)?;
    let mut parts = rest.split(':');
    let (ns, name) = (parts.next()?, parts.next()?);
    if parts.next().is_some() || !is_dns_label(ns) || !is_dns_subdomain(name) {
        return None;
    }
    Some((ns, name))
}

fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// The first subject of `subjects` that names this user, as the rule resolver picks it.
/// A ServiceAccount subject without a namespace means the binding's own namespace.
fn applies_to<'a>(
    user: &str,
    groups: &[String],
    subjects: &'a [Subject],
    binding_namespace: &str,
) -> Option<&'a Subject> {
    subjects.iter().find(|s| match s.kind.as_str() {
        "User" => s.name == user,
        "Group" => groups.contains(&s.name),
        "ServiceAccount" => {
            let ns = if s.namespace.is_empty() {
                binding_namespace
            } else {
                &s.namespace
            };
            !ns.is_empty() && user == format!("{SA_PREFIX}{ns}:{}", s.name)
        }
        _ => false,
    })
}

fn binding_kind(b: &Binding) -> &'static str {
    if b.namespace.is_empty() {
        "ClusterRoleBinding"
    } else {
        "RoleBinding"
    }
}

/// `ClusterRoleBinding "x"` / `RoleBinding "x/ns"`, as the API server names them.
fn describe_binding(kind: &str, b: &Binding) -> String {
    if b.namespace.is_empty() {
        format!("{kind} {:?}", b.name)
    } else {
        format!("{kind} {:?}", format!("{}/{}", b.name, b.namespace))
    }
}

fn describe_subject(s: &Subject, binding_namespace: &str) -> String {
    if s.kind == "ServiceAccount" {
        let ns = if s.namespace.is_empty() {
            binding_namespace
        } else {
            &s.namespace
        };
        format!("{} {:?}", s.kind, format!("{}/{ns}", s.name))
    } else {
        format!("{} {:?}", s.kind, s.name)
    }
}

fn describe_request(req: &AccessRequest) -> String {
    let who = format!("user {:?}", req.user);
    if let Some(path) = &req.non_resource_path {
        return format!("{who} to {:?} the URL {path:?}", req.verb);
    }
    let mut what = req.resource.clone();
    if !req.subresource.is_empty() {
        what = format!("{what}/{}", req.subresource);
    }
    if !req.api_group.is_empty() {
        what = format!("{what} (group {:?})", req.api_group);
    }
    if !req.name.is_empty() {
        what = format!("{what} named {:?}", req.name);
    }
    let place = if req.namespace.is_empty() {
        "cluster-wide".to_string()
    } else {
        format!("in namespace {:?}", req.namespace)
    };
    format!("{who} to {:?} {what} {place}", req.verb)
}

/// Unpacks `List`-kinds (`List`, `RoleList`, …) into their items, recursively.
fn flatten<'a>(o: &'a Value, out: &mut Vec<&'a Value>) {
    let is_list = o
        .get("kind")
        .and_then(Value::as_str)
        .is_some_and(|k| k.ends_with("List"));
    match o.get("items").and_then(Value::as_array) {
        Some(items) if is_list => items.iter().for_each(|i| flatten(i, out)),
        _ => out.push(o),
    }
}

/// Sets of objects smaller than this are read on one thread.
const PARALLEL_OBJECTS: usize = 4096;

/// What one object brings to an [`Authorizer`] (each item of a `List`; nothing for a
/// kind that is not RBAC). Reading needs no other object, so a big `-f` set is read on
/// the threads that parse it and never held as JSON (`kca auth can-i`).
pub struct Reads(Vec<Read>);

impl Reads {
    /// What `o` brings; namespaced objects without a namespace are placed in
    /// `default_namespace`.
    pub fn of(o: &Value, default_namespace: &str) -> Reads {
        let mut flat = Vec::new();
        flatten(o, &mut flat);
        Reads(
            flat.into_iter()
                .filter_map(|o| read_object(o, default_namespace))
                .collect(),
        )
    }
}

/// What one RBAC object brings, read without touching it.
enum Read {
    /// An RBAC object of this kind without a name.
    Unnamed(&'static str),
    Role((String, String), Role),
    ClusterRole(aggregate::Aggregable),
    /// A RoleBinding or ClusterRoleBinding (the kind).
    Binding(&'static str, Binding),
}

/// What `o` brings, if it is an RBAC object; namespaced objects without a namespace
/// are placed in `default_namespace`.
fn read_object(o: &Value, default_namespace: &str) -> Option<Read> {
    let kind = rbac_kind(o)?;
    let meta = o.get("metadata").unwrap_or(&Value::Null);
    let name = str_at(meta, "name");
    if name.is_empty() {
        return Some(Read::Unnamed(kind));
    }
    let namespace = match str_at(meta, "namespace") {
        ns if ns.is_empty() => default_namespace.to_string(),
        ns => ns,
    };
    Some(match kind {
        "Role" => Read::Role((namespace, name), Role { rules: rules_of(o) }),
        "ClusterRole" => {
            let selectors = o.get("aggregationRule").map(|rule| {
                rule.get("clusterRoleSelectors")
                    .and_then(Value::as_array)
                    .map(|sels| {
                        sels.iter()
                            .map(crate::offline::labels::LabelSelector::from_json)
                            .collect::<Result<Vec<_>, _>>()
                    })
                    .unwrap_or_else(|| Ok(Vec::new()))
            });
            Read::ClusterRole(aggregate::Aggregable {
                labels: crate::offline::labels::labels_of(o),
                rules: rules_of(o),
                selectors,
                name,
            })
        }
        _ => {
            let cluster = kind == "ClusterRoleBinding";
            Read::Binding(
                kind,
                binding_of(o, if cluster { "" } else { &namespace }, name),
            )
        }
    })
}

/// The RBAC kind of an object, when its apiVersion is in the RBAC group.
pub(crate) fn rbac_kind(o: &Value) -> Option<&'static str> {
    let api_version = o.get("apiVersion").and_then(Value::as_str)?;
    if api_version.split('/').next() != Some(RBAC_GROUP) {
        return None;
    }
    let kind = o.get("kind").and_then(Value::as_str)?;
    ["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"]
        .into_iter()
        .find(|k| *k == kind)
}

fn str_at(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn rules_of(o: &Value) -> Vec<PolicyRule> {
    o.get("rules")
        .and_then(Value::as_array)
        .map(|rules| rules.iter().map(PolicyRule::from_json).collect())
        .unwrap_or_default()
}

fn binding_of(o: &Value, namespace: &str, name: String) -> Binding {
    let role_ref = o.get("roleRef").unwrap_or(&Value::Null);
    let subjects = o
        .get("subjects")
        .and_then(Value::as_array)
        .map(|subjects| {
            subjects
                .iter()
                .map(|s| Subject {
                    kind: str_at(s, "kind"),
                    name: str_at(s, "name"),
                    namespace: str_at(s, "namespace"),
                })
                .collect()
        })
        .unwrap_or_default();
    Binding {
        namespace: namespace.to_string(),
        name,
        role_kind: str_at(role_ref, "kind"),
        role_name: str_at(role_ref, "name"),
        subjects,
    }
}

/// A later object with the same identity replaces the earlier one, as a second
/// `kubectl apply` of the same name does.
/// Puts `item` in `list` under `key`, replacing the item already there: one hash lookup
/// per object, however many objects are loaded.
fn upsert<T, K: Eq + Hash>(list: &mut Vec<T>, index: &mut HashMap<K, usize>, key: K, item: T) {
    match index.entry(key) {
        Entry::Occupied(at) => list[*at.get()] = item,
        Entry::Vacant(at) => {
            at.insert(list.len());
            list.push(item);
        }
    }
}

#[cfg(test)]
mod tests;

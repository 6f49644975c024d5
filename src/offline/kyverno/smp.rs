//! `patchStrategicMerge` as Kyverno applies it: anchors in the patch are resolved against
//! the resource first (conditions, add-if-absent, global gates), then the cleaned patch is
//! merged with Kubernetes strategic-merge rules (lists of known fields merged by their
//! patch merge key, `$patch` directives, `null` deletes). It does not substitute variables
//! or decide rule status.

use serde_json::{Map, Value};

use super::Context;
use super::pattern;

/// Why a strategic merge patch cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SmpError {
    #[error("failed to preprocess the patch: the patch has a list where the resource has {0}")]
    ListAgainst(&'static str),
    #[error("a patchStrategicMerge must be a map, not {0}")]
    NotMap(&'static str),
    #[error("unknown patch strategy {0}")]
    UnknownStrategy(String),
    #[error(
        "cannot merge {found} into {expected} (the patch and the resource disagree on the type)"
    )]
    TypeMismatch {
        found: &'static str,
        expected: &'static str,
    },
}

/// Why an anchor's condition does not hold (the patch is then skipped, not failed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum AnchorMiss {
    #[error("could not find {0:?} in the resource")]
    Absent(String),
    #[error("{0}")]
    Mismatch(String),
}

/// Applies `patch` to `resource`. A failed conditional or global anchor is not an error:
/// the patch shrinks to nothing and the resource comes back as the merge leaves it.
pub fn apply(resource: &Value, patch: &Value, ctx: &Context) -> Result<Value, SmpError> {
    let mut cleaned = patch.clone();
    match preprocess(&mut cleaned, Some(resource), ctx) {
        Ok(()) => delete_condition_elements(&mut cleaned)?,
        Err(Pre::Condition | Pre::Global(_)) => cleaned = Value::Object(Map::new()),
        Err(Pre::Other(e)) => return Err(e),
    }
    let schema = Ty::for_resource(resource);
    merge(Some(resource), Some(&cleaned), schema)
        .map(|merged| merged.unwrap_or_else(|| Value::Object(Map::new())))
}

// ---------------------------------------------------------------------------------------
// Anchors

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Anchor {
    Condition,
    Global,
    Negation,
    AddIfAbsent,
    Equality,
    Existence,
}

impl Anchor {
    /// The anchors that gate a patch (Kyverno's "contains condition").
    fn is_conditional(self) -> bool {
        matches!(self, Anchor::Condition | Anchor::Global | Anchor::Negation)
    }

    /// The anchors the mutate preprocessor acts on; `=()`/`^()` pass through as keys.
    fn is_mutate_anchor(self) -> bool {
        self.is_conditional() || self == Anchor::AddIfAbsent
    }
}

fn parse_anchor(key: &str) -> Option<(Anchor, &str)> {
    let (kind, rest) = match key.as_bytes().first()? {
        b'+' => (Anchor::AddIfAbsent, &key[1..]),
        b'<' => (Anchor::Global, &key[1..]),
        b'X' => (Anchor::Negation, &key[1..]),
        b'=' => (Anchor::Equality, &key[1..]),
        b'^' => (Anchor::Existence, &key[1..]),
        _ => (Anchor::Condition, key),
    };
    let inner = rest.strip_prefix('(')?.strip_suffix(')')?;
    if inner.is_empty() {
        return None;
    }
    Some((kind, inner))
}

fn anchor_of(key: &str) -> Option<Anchor> {
    parse_anchor(key).map(|(a, _)| a)
}

// ---------------------------------------------------------------------------------------
// Preprocessing: resolve anchors against the resource

#[derive(Debug)]
enum Pre {
    /// A `(key)` condition did not hold: skip this element (in a list) or the patch.
    Condition,
    /// A `<(key)` condition did not hold: skip the whole patch.
    Global(AnchorMiss),
    Other(SmpError),
}

fn preprocess(pattern: &mut Value, resource: Option<&Value>, ctx: &Context) -> Result<(), Pre> {
    match pattern {
        Value::Object(_) => walk_map(pattern, resource, ctx),
        Value::Array(_) => walk_list(pattern, resource, ctx),
        _ => Ok(()),
    }
}

fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

fn walk_map(pattern: &mut Value, resource: Option<&Value>, ctx: &Context) -> Result<(), Pre> {
    resolve_add_if_absent(pattern, resource);
    check_conditions(pattern, resource, ctx)?;
    let keys: Vec<String> = match pattern {
        Value::Object(m) => m
            .keys()
            .filter(|k| anchor_of(k).is_none_or(|a| !a.is_mutate_anchor()))
            .cloned()
            .collect(),
        _ => return Ok(()),
    };
    for key in keys {
        let child_resource = present(resource.and_then(|r| r.get(&key)));
        if let Some(child) = pattern.get_mut(&key) {
            preprocess(child, child_resource, ctx)?;
        }
    }
    Ok(())
}

/// `+(key)`: dropped from the patch when the resource already has `key`, otherwise the
/// anchor is unwrapped so the merge adds it. Returns how many such anchors were found.
fn resolve_add_if_absent(pattern: &mut Value, resource: Option<&Value>) -> usize {
    let Value::Object(map) = pattern else {
        return 0;
    };
    let anchored: Vec<(String, String)> = map
        .keys()
        .filter_map(|k| match parse_anchor(k) {
            Some((Anchor::AddIfAbsent, inner)) => Some((k.clone(), inner.to_string())),
            _ => None,
        })
        .collect();
    for (key, inner) in &anchored {
        let exists = resource
            .and_then(Value::as_object)
            .is_some_and(|r| r.contains_key(inner));
        if exists {
            map.shift_remove(key);
        } else {
            rename_key(map, key, inner);
        }
    }
    anchored.len()
}

fn rename_key(map: &mut Map<String, Value>, from: &str, to: &str) {
    let old = std::mem::take(map);
    for (k, v) in old {
        if k == from {
            map.insert(to.to_string(), v);
        } else {
            map.insert(k, v);
        }
    }
}

fn check_conditions(
    pattern: &mut Value,
    resource: Option<&Value>,
    ctx: &Context,
) -> Result<(), Pre> {
    check_anchors(pattern, resource, ctx, Anchor::Global).map_err(Pre::Global)?;
    check_anchors(pattern, resource, ctx, Anchor::Condition).map_err(|_| Pre::Condition)
}

fn check_anchors(
    pattern: &mut Value,
    resource: Option<&Value>,
    ctx: &Context,
    which: Anchor,
) -> Result<(), AnchorMiss> {
    let Value::Object(map) = pattern else {
        return Ok(());
    };
    let anchored: Vec<(String, String)> = map
        .keys()
        .filter_map(|k| match parse_anchor(k) {
            Some((a, inner)) if a == which => Some((k.clone(), inner.to_string())),
            _ => None,
        })
        .collect();
    for (key, inner) in anchored {
        let Some(actual) = resource.and_then(|r| r.get(&inner)) else {
            return Err(AnchorMiss::Absent(inner));
        };
        let expected = map.get_mut(&key).expect("key listed above");
        // An add-if-absent inside a condition turns the condition into an insertion.
        if resolve_add_if_absent(expected, Some(actual)) > 0 {
            continue;
        }
        pattern::validate_pattern(
            &as_condition_value(actual),
            &as_condition_value(expected),
            ctx,
        )
        .map_err(|e| AnchorMiss::Mismatch(e.message))?;
    }
    Ok(())
}

/// Kyverno compares scalar condition values through their YAML text, so `1` and `"1"`
/// are the same condition.
fn as_condition_value(v: &Value) -> Value {
    match v {
        Value::Number(n) => Value::String(n.to_string()),
        Value::Bool(b) => Value::String(b.to_string()),
        Value::Null => Value::String("null".into()),
        other => other.clone(),
    }
}

fn walk_list(pattern: &mut Value, resource: Option<&Value>, ctx: &Context) -> Result<(), Pre> {
    let Value::Array(items) = pattern else {
        return Ok(());
    };
    if !items.first().is_some_and(Value::is_object) {
        return Ok(());
    }
    let resource_items: &[Value] = match resource {
        None => &[],
        Some(Value::Array(a)) => a,
        Some(other) => {
            return Err(Pre::Other(SmpError::ListAgainst(kind_name(other))));
        }
    };
    let originals = items.clone();
    for element in &originals {
        if !has_anchors(element, &|a: Anchor| a.is_mutate_anchor()) {
            continue;
        }
        let gated = has_anchors(element, &|a: Anchor| a == Anchor::Global);
        let mut any_gate_passed = false;
        let mut last_gate_error = None;
        // Kyverno resolves one copy against every resource element in turn, so an
        // add-if-absent settled by the first element stays settled for the next ones.
        let mut copy = element.clone();
        for target in resource_items {
            match preprocess(&mut copy, Some(target), ctx) {
                Err(Pre::Condition) => continue,
                Err(Pre::Global(e)) => {
                    last_gate_error = Some(e);
                    continue;
                }
                Err(other) => return Err(other),
                Ok(()) => {}
            }
            if gated {
                any_gate_passed = true;
            } else {
                add_named_copy(items, &copy, target);
            }
        }
        if resource.is_none() {
            match preprocess(&mut copy, None, ctx) {
                Err(Pre::Condition) => continue,
                Err(other) => return Err(other),
                Ok(()) => {
                    if gated {
                        any_gate_passed = true;
                    }
                }
            }
        }
        if !any_gate_passed && let Some(e) = last_gate_error {
            return Err(Pre::Global(e));
        }
    }
    Ok(())
}

/// A list element whose conditions held for one resource element becomes a plain patch
/// element carrying that element's `name`, so the merge finds it.
fn add_named_copy(items: &mut Vec<Value>, copy: &Value, target: &Value) {
    let Some(name) = target.get("name").filter(|n| !is_nil_or_empty(n)) else {
        return;
    };
    let mut element = copy.clone();
    if delete_anchors(&mut element, true, true) {
        return;
    }
    if let Value::Object(m) = &mut element {
        m.insert("name".into(), name.clone());
    }
    items.push(element);
}

fn is_nil_or_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

fn has_anchors(v: &Value, pred: &dyn Fn(Anchor) -> bool) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, val)| {
            anchor_of(k).is_some_and(pred) || (!is_nil_or_empty(val) && has_anchors(val, pred))
        }),
        Value::Array(a) => a.iter().any(|e| has_anchors(e, pred)),
        // Kyverno also treats a scalar spelled like a conditional anchor as one.
        Value::String(s) => anchor_of(s).is_some_and(Anchor::is_conditional),
        _ => false,
    }
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "a map",
        Value::Array(_) => "a list",
        Value::String(_) => "a string",
        Value::Number(_) => "a number",
        Value::Bool(_) => "a boolean",
        Value::Null => "null",
    }
}

// ---------------------------------------------------------------------------------------
// Cleaning: drop what only served as a condition

fn delete_condition_elements(root: &mut Value) -> Result<(), SmpError> {
    let Value::Object(map) = root else {
        return Err(SmpError::NotMap(kind_name(root)));
    };
    let keys: Vec<String> = map.keys().cloned().collect();
    for key in keys {
        let conditional = anchor_of(&key).is_some_and(Anchor::is_conditional);
        let value = map.get_mut(&key).expect("key listed above");
        if delete_anchors(value, conditional, false) {
            map.shift_remove(&key);
        }
    }
    Ok(())
}

/// Strips conditional anchors; returns true when nothing but anchors (or emptiness) was
/// left, so the caller drops the node rather than merging an empty or null value.
fn delete_anchors(node: &mut Value, delete_scalar: bool, traverse_maps: bool) -> bool {
    match node {
        Value::Object(map) => delete_anchors_in_map(map, traverse_maps),
        Value::Array(items) => delete_anchors_in_list(items, traverse_maps),
        _ => delete_scalar,
    }
}

fn delete_anchors_in_map(map: &mut Map<String, Value>, traverse_maps: bool) -> bool {
    let anchored: Vec<String> = map
        .keys()
        .filter(|k| anchor_of(k).is_some_and(Anchor::is_conditional))
        .cloned()
        .collect();
    let mut anchors_remain = false;
    for key in &anchored {
        let value = map.get_mut(key).expect("key listed above");
        if delete_anchors(value, true, traverse_maps) {
            map.shift_remove(key);
        } else {
            anchors_remain = true;
        }
    }
    if anchors_remain {
        for key in &anchored {
            if map.contains_key(key)
                && let Some((_, inner)) = parse_anchor(key)
            {
                let inner = inner.to_string();
                rename_key(map, key, &inner);
            }
        }
    }
    let keys: Vec<String> = map.keys().cloned().collect();
    let mut all_gone = true;
    for key in keys {
        let value = map.get_mut(&key).expect("key listed above");
        if delete_anchors(value, false, traverse_maps) {
            map.shift_remove(&key);
        } else {
            all_gone = false;
        }
    }
    all_gone
}

fn delete_anchors_in_list(items: &mut Vec<Value>, traverse_maps: bool) -> bool {
    let was_empty = items.is_empty();
    // Kyverno walks a snapshot of the elements but deletes by the snapshot's index from
    // the shrinking list, so after one deletion the next one can take out a neighbour.
    // Elements live in `nodes` (edited in place, listed or not) and `live` is the list,
    // so the patch that reaches the merge is the one Kyverno would merge.
    let mut nodes = std::mem::take(items);
    let mut live: Vec<usize> = (0..nodes.len()).collect();
    for (i, element) in nodes.iter_mut().enumerate() {
        let delete = if has_anchors(element, &|a: Anchor| a.is_mutate_anchor()) {
            if traverse_maps && element.is_object() {
                delete_anchors(element, true, traverse_maps)
            } else {
                true
            }
        } else {
            delete_anchors(element, false, traverse_maps)
        };
        if delete && i < live.len() {
            live.remove(i);
        }
    }
    *items = live
        .into_iter()
        .map(|id| std::mem::take(&mut nodes[id]))
        .collect();
    items.is_empty() && !was_empty
}

// ---------------------------------------------------------------------------------------
// Merging (kustomize's merge2 with list items from the patch placed first)

/// What the merge knows about a field: enough of the Kubernetes schema to find patch
/// merge keys. Anything unmodelled (and every custom resource) merges lists by replacing
/// them, as kustomize does without a schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    Root(RootKind),
    Meta,
    PodTemplate,
    PodSpec,
    Container,
    WorkloadSpec,
    CronJobSpec,
    JobTemplate,
    ServiceSpec,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RootKind {
    Pod,
    PodTemplate,
    Workload,
    CronJob,
    Service,
    ServiceAccount,
    Builtin,
}

impl Ty {
    fn for_resource(resource: &Value) -> Ty {
        let api_version = resource
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind = resource.get("kind").and_then(Value::as_str).unwrap_or("");
        if api_version.is_empty() || kind.is_empty() {
            return Ty::Other;
        }
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let builtin = !group.contains('.') || group.ends_with(".k8s.io");
        if !builtin {
            return Ty::Other;
        }
        let root = match (group, kind) {
            ("", "Pod") => RootKind::Pod,
            ("", "PodTemplate") => RootKind::PodTemplate,
            ("", "ReplicationController")
            | ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet")
            | ("batch", "Job") => RootKind::Workload,
            ("batch", "CronJob") => RootKind::CronJob,
            ("", "Service") => RootKind::Service,
            ("", "ServiceAccount") => RootKind::ServiceAccount,
            _ => RootKind::Builtin,
        };
        Ty::Root(root)
    }

    fn field(self, key: &str) -> Ty {
        match (self, key) {
            (Ty::Root(_), "metadata") => Ty::Meta,
            (Ty::Root(RootKind::Pod), "spec") => Ty::PodSpec,
            (Ty::Root(RootKind::PodTemplate), "template") => Ty::PodTemplate,
            (Ty::Root(RootKind::Workload), "spec") => Ty::WorkloadSpec,
            (Ty::Root(RootKind::CronJob), "spec") => Ty::CronJobSpec,
            (Ty::Root(RootKind::Service), "spec") => Ty::ServiceSpec,
            (Ty::WorkloadSpec, "template") => Ty::PodTemplate,
            (Ty::CronJobSpec, "jobTemplate") => Ty::JobTemplate,
            (Ty::JobTemplate, "metadata") | (Ty::PodTemplate, "metadata") => Ty::Meta,
            (Ty::JobTemplate, "spec") => Ty::WorkloadSpec,
            (Ty::PodTemplate, "spec") => Ty::PodSpec,
            _ => Ty::Other,
        }
    }

    /// `Some(keys)` for a list with the `merge` patch strategy (no keys: a set of
    /// scalars, such as finalizers); `None` for a list the patch replaces.
    fn list_keys(self, key: &str) -> Option<&'static [&'static str]> {
        match (self, key) {
            (Ty::Meta, "finalizers") => Some(&[]),
            (Ty::Meta, "ownerReferences") => Some(&["uid"]),
            (Ty::PodSpec, "containers" | "initContainers" | "ephemeralContainers")
            | (Ty::PodSpec, "volumes" | "imagePullSecrets")
            | (Ty::Container, "env")
            | (Ty::Root(RootKind::ServiceAccount), "secrets") => Some(&["name"]),
            (Ty::PodSpec, "hostAliases") => Some(&["ip"]),
            (Ty::PodSpec, "topologySpreadConstraints") => {
                Some(&["topologyKey", "whenUnsatisfiable"])
            }
            (Ty::Container, "ports") => Some(&["containerPort", "protocol"]),
            (Ty::Container, "volumeMounts") => Some(&["mountPath"]),
            (Ty::Container, "volumeDevices") => Some(&["devicePath"]),
            (Ty::ServiceSpec, "ports") => Some(&["port", "protocol"]),
            _ => None,
        }
    }

    fn element(self, key: &str) -> Ty {
        match (self, key) {
            (Ty::PodSpec, "containers" | "initContainers" | "ephemeralContainers") => Ty::Container,
            _ => Ty::Other,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Directive {
    Merge,
    Replace,
    Delete,
}

/// Reads and removes a map's `$patch` directive.
fn take_directive(v: &mut Value) -> Result<Directive, SmpError> {
    let Value::Object(m) = v else {
        return Ok(Directive::Merge);
    };
    let Some(d) = m.get("$patch") else {
        return Ok(Directive::Merge);
    };
    let directive = match d.as_str() {
        Some("delete") => Directive::Delete,
        Some("replace") => Directive::Replace,
        Some("merge") => Directive::Merge,
        _ => return Err(SmpError::UnknownStrategy(d.to_string())),
    };
    m.shift_remove("$patch");
    Ok(directive)
}

fn missing(v: Option<&Value>) -> bool {
    v.is_none_or(Value::is_null)
}

/// Merges `src` (the patch) into `dest`; `None` means the field goes away.
fn merge(dest: Option<&Value>, src: Option<&Value>, ty: Ty) -> Result<Option<Value>, SmpError> {
    let first = [dest, src].into_iter().flatten().find(|v| !v.is_null());
    match first {
        None => Ok(None),
        Some(Value::Object(_)) => merge_map(dest, src, ty),
        Some(Value::Array(_)) => {
            same_shape(dest, src, Value::is_array, "a list")?;
            // A list directly inside a list has no schema: the patch replaces it.
            merge_list(dest, src, None, ty)
        }
        Some(_) => {
            same_shape(dest, src, |v| !v.is_object() && !v.is_array(), "a scalar")?;
            Ok(match src {
                Some(Value::Null) => None,
                Some(v) => Some(v.clone()),
                None => dest.cloned(),
            })
        }
    }
}

fn same_shape(
    dest: Option<&Value>,
    src: Option<&Value>,
    ok: impl Fn(&Value) -> bool,
    what: &'static str,
) -> Result<(), SmpError> {
    for v in [dest, src].into_iter().flatten() {
        if !v.is_null() && !ok(v) {
            return Err(SmpError::TypeMismatch {
                found: kind_name(v),
                expected: what,
            });
        }
    }
    Ok(())
}

fn merge_map(dest: Option<&Value>, src: Option<&Value>, ty: Ty) -> Result<Option<Value>, SmpError> {
    same_shape(dest, src, Value::is_object, "a map")?;
    let mut origin = src.cloned();
    let mut base = if missing(dest) {
        let Some(mut o) = origin.clone() else {
            return Ok(None);
        };
        if take_directive(&mut o)? == Directive::Delete {
            return Ok(None);
        }
        origin = Some(o.clone());
        o
    } else {
        if matches!(origin, Some(Value::Null)) {
            return Ok(None);
        }
        let directive = match origin.as_mut() {
            Some(o) => take_directive(o)?,
            None => Directive::Merge,
        };
        match directive {
            Directive::Delete => return Ok(None),
            Directive::Replace => origin.clone().expect("directive came from the patch"),
            Directive::Merge => dest.cloned().expect("dest checked above"),
        }
    };
    let mut keys: Vec<String> = Vec::new();
    for source in [Some(&base), origin.as_ref()].into_iter().flatten() {
        if let Value::Object(m) = source {
            for k in m.keys() {
                if !keys.contains(k) {
                    keys.push(k.clone());
                }
            }
        }
    }
    let Value::Object(out) = &mut base else {
        return Ok(Some(base));
    };
    for key in keys {
        let child_ty = ty.field(&key);
        let d = out.get(&key).cloned();
        let s = origin.as_ref().and_then(|o| o.get(&key));
        let merged = if is_list(d.as_ref()) || is_list(s) {
            same_shape(d.as_ref(), s, Value::is_array, "a list")?;
            merge_list(d.as_ref(), s, ty.list_keys(&key), ty.element(&key))?
        } else {
            merge(d.as_ref(), s, child_ty)?
        };
        match merged {
            Some(v) => {
                out.insert(key, v);
            }
            None => {
                out.shift_remove(&key);
            }
        }
    }
    Ok(Some(base))
}

fn is_list(v: Option<&Value>) -> bool {
    matches!(v, Some(Value::Array(_)))
}

/// `keys` are the list's patch merge keys from the schema (`None`: replace the list).
fn merge_list(
    dest: Option<&Value>,
    src: Option<&Value>,
    keys: Option<&'static [&'static str]>,
    element_ty: Ty,
) -> Result<Option<Value>, SmpError> {
    let Some(keys) = keys else {
        // Replaced by the patch when the patch has it (a `null` removes it).
        return Ok(match src {
            Some(Value::Null) => None,
            Some(v) => Some(v.clone()),
            None => dest.filter(|d| !d.is_null()).cloned(),
        });
    };
    let base: Vec<Value> = if missing(dest) {
        match src {
            Some(Value::Array(a)) => a.clone(),
            _ => return Ok(None),
        }
    } else {
        if matches!(src, Some(Value::Null)) {
            return Ok(None);
        }
        dest.and_then(Value::as_array).cloned().unwrap_or_default()
    };
    let patch: Vec<Value> = match src {
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    };
    let merged = if keys.is_empty() {
        merge_scalar_set(base, &patch)
    } else {
        merge_keyed(base, &patch, keys, element_ty)?
    };
    Ok(if merged.is_empty() {
        None
    } else {
        Some(Value::Array(merged))
    })
}

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A merge list of scalars (finalizers): the union, patch values first.
fn merge_scalar_set(base: Vec<Value>, patch: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for v in patch.iter().chain(base.iter()) {
        if v.is_null() {
            continue;
        }
        if !out.contains(v) {
            out.push(v.clone());
        }
    }
    out
}

type Identity = Vec<(&'static str, String)>;

fn identity(element: &Value, keys: &'static [&'static str]) -> Identity {
    keys.iter()
        .filter_map(|k| {
            element
                .get(*k)
                .and_then(scalar_text)
                .filter(|s| !s.is_empty())
                .map(|s| (*k, s))
        })
        .collect()
}

fn matches_identity(element: &Value, id: &Identity) -> bool {
    element.is_object()
        && id
            .iter()
            .all(|(k, v)| element.get(*k).and_then(scalar_text).as_deref() == Some(v.as_str()))
}

/// A list of maps merged by key: each element named by the patch is merged with the
/// resource's element of the same key (or added, or deleted by `$patch: delete`); the
/// patch's elements come first, then the resource's other elements in their order.
fn merge_keyed(
    mut base: Vec<Value>,
    patch: &[Value],
    keys: &'static [&'static str],
    element_ty: Ty,
) -> Result<Vec<Value>, SmpError> {
    let mut identities: Vec<Identity> = Vec::new();
    for element in patch.iter().chain(base.iter()) {
        let id = identity(element, keys);
        if !id.is_empty() && !identities.contains(&id) {
            identities.push(id);
        }
    }
    let mut items: Vec<Value> = Vec::new();
    for id in &identities {
        let at = base.iter().position(|e| matches_identity(e, id));
        let from_patch = patch.iter().find(|e| matches_identity(e, id));
        let merged = merge_map(at.map(|i| &base[i]), from_patch, element_ty)?;
        let merged = merged.filter(|m| !m.is_null() && !m.as_object().is_some_and(Map::is_empty));
        let Some(mut merged) = merged else {
            base.retain(|e| !matches_identity(e, id));
            continue;
        };
        if let Value::Object(m) = &mut merged {
            for (k, v) in id {
                m.entry(k.to_string())
                    .or_insert_with(|| Value::String(v.clone()));
            }
        }
        if let Some(i) = at {
            base[i] = merged.clone();
        }
        let mut replaced = false;
        for item in items.iter_mut() {
            if matches_identity(item, id) {
                *item = merged.clone();
                replaced = true;
            }
        }
        if !replaced {
            items.push(merged);
        }
    }
    // Elements without any merge key cannot be paired; kustomize keeps the resource's at
    // the end and drops the patch's.
    for element in base {
        if identity(&element, keys).is_empty()
            && !element.is_null()
            && !element.as_object().is_some_and(Map::is_empty)
        {
            items.push(element);
        }
    }
    Ok(items)
}

#[cfg(test)]
#[path = "smp_tests.rs"]
mod tests;

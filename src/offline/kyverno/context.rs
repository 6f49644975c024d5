//! The JSON document JMESPath expressions run against: request, images, element,
//! variables. It must not evaluate expressions itself (that is `vars`).

use std::cell::{Cell, OnceCell, RefCell};
use std::rc::Rc;

use jmespath::{Rcvar, Variable};
use serde_json::{Map, Value, json};

use super::{Outcome, Request};

/// Cheap to clone: the document and its JMESPath form are shared until a clone adds a
/// variable (copy on write), so one request's context serves every rule.
///
/// Context entries are deferred, as Kyverno's are (pkg/engine/context/deferred.go): an
/// entry is loaded when a query first mentions its name, so an entry no evaluated
/// expression reads is never loaded (nor fails).
#[derive(Debug, Clone)]
pub struct Context {
    doc: RefCell<Rc<Value>>,
    cache: RefCell<Rc<OnceCell<Rcvar>>>,
    pending: RefCell<Vec<Rc<Deferred>>>,
    /// While an entry loads, only entries declared before it may load (its `seq`).
    limit: Cell<u64>,
    /// The first entry that failed to load, shared by the clones of a rule's context.
    failure: Rc<RefCell<Option<Outcome>>>,
}

/// Loads one context entry's value from the context as it is when the entry is needed.
pub type Loader = Box<dyn Fn(&Context) -> Result<Value, Outcome>>;

/// A context entry not loaded yet.
pub struct Deferred {
    name: String,
    seq: u64,
    load: Loader,
}

impl std::fmt::Debug for Deferred {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Deferred({})", self.name)
    }
}

/// Whether `query` mentions `name` as Kyverno's deferred loader matches it: the name not
/// preceded by `.`, a letter or a digit, and ending at a word boundary.
pub fn mentions(query: &str, name: &str) -> bool {
    if name.is_empty() {
        return false;
    }
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let ends_in_word = name.chars().last().is_some_and(word);
    query.match_indices(name).any(|(i, _)| {
        let before = query[..i].chars().next_back();
        let after = query[i + name.len()..].chars().next();
        let start_ok =
            before.is_none_or(|c| c.is_whitespace() || !(c == '.' || c.is_ascii_alphanumeric()));
        let end_ok = if ends_in_word {
            after.is_none_or(|c| !word(c))
        } else {
            after.is_some_and(word)
        };
        start_ok && end_ok
    })
}

fn next_seq() -> u64 {
    thread_local! {
        static SEQ: Cell<u64> = const { Cell::new(0) };
    }
    SEQ.with(|s| {
        let n = s.get() + 1;
        s.set(n);
        n
    })
}

impl Context {
    pub fn from_request(req: &Request) -> Self {
        let mut doc = Value::Object(Map::new());
        let namespace = req
            .object
            .pointer("/metadata/namespace")
            .or_else(|| req.old_object.pointer("/metadata/namespace"))
            .cloned()
            .or_else(|| req.subresource.as_ref().map(|s| json!(s.parent_namespace)))
            .unwrap_or(json!(""));
        let user = &req.user_info.username;
        let (sa_ns, sa_name) = match user.strip_prefix("system:serviceaccount:") {
            Some(rest) => {
                let mut it = rest.splitn(2, ':');
                (
                    it.next().unwrap_or("").to_string(),
                    it.next().unwrap_or("").to_string(),
                )
            }
            None => (String::new(), String::new()),
        };
        let subject = if req.operation == "DELETE" {
            &req.old_object
        } else {
            &req.object
        };
        doc["request"] = json!({
            "operation": req.operation,
            "object": req.object,
            "oldObject": req.old_object,
            "namespace": namespace,
            "name": subject
                .pointer("/metadata/name")
                .cloned()
                .or_else(|| req.subresource.as_ref().map(|s| json!(s.parent_name)))
                .unwrap_or(json!("")),
            "kind": {"kind": subject.get("kind").cloned().unwrap_or(json!(""))},
            "userInfo": {},
        });
        // Empty user fields are absent, as in an AdmissionReview (omitempty).
        if !user.is_empty() {
            doc["request"]["userInfo"]["username"] = json!(user);
        }
        if !req.user_info.groups.is_empty() {
            doc["request"]["userInfo"]["groups"] = json!(req.user_info.groups);
        }
        if !req.user_info.roles.is_empty() {
            doc["request"]["roles"] = json!(req.user_info.roles);
        }
        if !req.user_info.cluster_roles.is_empty() {
            doc["request"]["clusterRoles"] = json!(req.user_info.cluster_roles);
        }
        doc["serviceAccountName"] = json!(sa_name);
        doc["serviceAccountNamespace"] = json!(sa_ns);
        doc["images"] = images(subject);
        let mut ctx = Context::from_document(doc);
        if let Value::Object(values) = &req.values {
            for (k, v) in values {
                ctx.add_variable(k, v.clone());
            }
        }
        ctx
    }

    /// A context whose whole document is `doc` (JMESPath over a context entry's value).
    pub fn from_document(doc: Value) -> Self {
        Context {
            doc: RefCell::new(Rc::new(doc)),
            cache: RefCell::new(Rc::new(OnceCell::new())),
            pending: RefCell::new(Vec::new()),
            limit: Cell::new(u64::MAX),
            failure: Rc::new(RefCell::new(None)),
        }
    }

    pub fn with_element(&self, element: &Value, index: usize) -> Self {
        let mut c = self.clone();
        c.add_variable("element", element.clone());
        c.add_variable("elementIndex", json!(index));
        c
    }

    /// Sets a variable; a dotted name (`request.operation`) writes into the nested path.
    pub fn add_variable(&mut self, name: &str, value: Value) {
        self.set_variable(name, value);
    }

    fn set_variable(&self, name: &str, value: Value) {
        *self.cache.borrow_mut() = Rc::new(OnceCell::new());
        let mut doc = self.doc.borrow_mut();
        set_path(Rc::make_mut(&mut doc), &split_path(name), value);
    }

    /// Adds a context entry to load when a query first mentions `name`; a later entry of
    /// the same name loads after (and so overrides) an earlier one.
    pub fn defer(&mut self, name: &str, load: Loader) {
        self.pending.get_mut().push(Rc::new(Deferred {
            name: name.to_string(),
            seq: next_seq(),
            load,
        }));
    }

    /// Loads, in declaration order, every deferred entry `query` mentions. A failed
    /// entry stays deferred and its outcome is kept ([`Context::load_failure`]).
    pub fn load_mentioned(&self, query: &str) -> Result<(), super::VarError> {
        loop {
            let limit = self.limit.get();
            let next = self
                .pending
                .borrow()
                .iter()
                .find(|d| d.seq < limit && mentions(query, &d.name))
                .cloned();
            let Some(entry) = next else {
                return Ok(());
            };
            self.pending.borrow_mut().retain(|d| d.seq != entry.seq);
            self.limit.set(entry.seq);
            let loaded = (entry.load)(self);
            self.limit.set(limit);
            match loaded {
                Ok(value) => self.set_variable(&entry.name, value),
                Err(outcome) => {
                    let message = outcome.message.clone();
                    // Kyverno's own text of the failure, where the loader knows it.
                    let err = match outcome.upstream.as_deref() {
                        Some(super::outcome::Upstream::Verbatim(kyverno)) => {
                            super::VarError::LoadWorded {
                                message,
                                kyverno: kyverno.clone(),
                            }
                        }
                        _ => super::VarError::Load(message),
                    };
                    self.failure.borrow_mut().get_or_insert(outcome);
                    let mut pending = self.pending.borrow_mut();
                    let at = pending.partition_point(|d| d.seq < entry.seq);
                    pending.insert(at, entry);
                    return Err(err);
                }
            }
        }
    }

    /// A context of its own for one rule: load failures recorded from here on are not
    /// shared with the context it was cloned from.
    pub fn for_rule(&self) -> Context {
        let mut c = self.clone();
        c.failure = Rc::new(RefCell::new(None));
        c
    }

    /// The outcome of the first context entry that failed to load, if one did.
    pub fn load_failure(&self) -> Option<Outcome> {
        self.failure.borrow().clone()
    }

    /// The document (shared; a later `add_variable` does not change what is returned).
    pub fn document(&self) -> Rc<Value> {
        self.doc.borrow().clone()
    }

    /// The document as a JMESPath value, converted once per change.
    pub(crate) fn variable(&self) -> Rcvar {
        let cache = self.cache.borrow().clone();
        cache
            .get_or_init(|| {
                Rcvar::new(Variable::try_from(&**self.doc.borrow()).unwrap_or(Variable::Null))
            })
            .clone()
    }
}

/// Writes `value` at `path`, creating (or replacing non-map) intermediate maps.
pub(crate) fn set_path(target: &mut Value, path: &[String], value: Value) {
    let mut cur = target;
    for (i, part) in path.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let map = cur.as_object_mut().expect("object ensured above");
        if i + 1 == path.len() {
            map.insert(part.clone(), value);
            return;
        }
        cur = map
            .entry(part.clone())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

/// Splits `a.b."c.d"` into `a`, `b`, `c.d`.
pub(crate) fn split_path(name: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for ch in name.chars() {
        match ch {
            '"' => quoted = !quoted,
            '.' if !quoted => parts.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    parts.push(cur);
    parts
}

/// Kyverno's `images` variable: container images split into registry, path, tag, digest.
fn images(obj: &Value) -> Value {
    let spec = match obj.get("kind").and_then(Value::as_str) {
        Some("Pod") => obj.get("spec"),
        Some("CronJob") => obj.pointer("/spec/jobTemplate/spec/template/spec"),
        _ => obj.pointer("/spec/template/spec"),
    };
    let mut out = Map::new();
    let Some(spec) = spec else {
        return Value::Object(out);
    };
    for (field, key) in [
        ("containers", "containers"),
        ("initContainers", "initContainers"),
        ("ephemeralContainers", "ephemeralContainers"),
    ] {
        let mut group = Map::new();
        for c in spec
            .get(field)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let (Some(name), Some(image)) = (
                c.get("name").and_then(Value::as_str),
                c.get("image").and_then(Value::as_str),
            ) else {
                continue;
            };
            group.insert(name.to_string(), image_info(image));
        }
        if !group.is_empty() {
            out.insert(key.to_string(), Value::Object(group));
        }
    }
    Value::Object(out)
}

pub fn image_info(image: &str) -> Value {
    let (rest, digest) = match image.split_once('@') {
        Some((r, d)) => (r, d.to_string()),
        None => (image, String::new()),
    };
    let (registry, remainder) = match rest.split_once('/') {
        Some((first, tail))
            if first.contains('.') || first.contains(':') || first == "localhost" =>
        {
            (first.to_string(), tail.to_string())
        }
        _ => ("docker.io".to_string(), rest.to_string()),
    };
    let (path, tag) = match remainder.rsplit_once(':') {
        Some((p, t)) if !t.contains('/') => (p.to_string(), t.to_string()),
        _ => (remainder.clone(), String::new()),
    };
    let tag = if tag.is_empty() && digest.is_empty() {
        "latest".to_string()
    } else {
        tag
    };
    let name = path.rsplit('/').next().unwrap_or(&path).to_string();
    let mut reference = format!("{registry}/{path}");
    if !tag.is_empty() {
        reference.push(':');
        reference.push_str(&tag);
    }
    if !digest.is_empty() {
        reference.push('@');
        reference.push_str(&digest);
    }
    json!({"registry": registry, "path": path, "name": name, "tag": tag, "digest": digest, "reference": reference})
}

//! The JSON document JMESPath expressions run against: request, images, element,
//! variables. It must not evaluate expressions itself (that is `vars`).

use std::cell::OnceCell;
use std::rc::Rc;

use jmespath::{Rcvar, Variable};
use serde_json::{Map, Value, json};

use super::Request;

/// Cheap to clone: the document and its JMESPath form are shared until a clone adds a
/// variable (copy on write), so one request's context serves every rule.
#[derive(Debug, Clone)]
pub struct Context {
    pub(crate) doc: Rc<Value>,
    cache: Rc<OnceCell<Rcvar>>,
}

impl Context {
    pub fn from_request(req: &Request) -> Self {
        let mut doc = Value::Object(Map::new());
        let namespace = req
            .object
            .pointer("/metadata/namespace")
            .or_else(|| req.old_object.pointer("/metadata/namespace"))
            .cloned()
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
            "name": subject.pointer("/metadata/name").cloned().unwrap_or(json!("")),
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
            doc: Rc::new(doc),
            cache: Rc::new(OnceCell::new()),
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
        self.cache = Rc::new(OnceCell::new());
        set_path(Rc::make_mut(&mut self.doc), &split_path(name), value);
    }

    pub fn document(&self) -> &Value {
        &self.doc
    }

    /// The document as a JMESPath value, converted once per change.
    pub(crate) fn variable(&self) -> Rcvar {
        self.cache
            .get_or_init(|| Rcvar::new(Variable::try_from(&*self.doc).unwrap_or(Variable::Null)))
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

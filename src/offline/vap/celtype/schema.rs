//! The built-in kinds' OpenAPI schemas (`k8s-schemas.json`, made by `tools/k8s-schemas`
//! from k8s-openapi 0.29's Kubernetes 1.35 schemas) and the CEL types the API server makes
//! of them: `k8s.io/apiserver` v0.36.3 `pkg/cel/common/schemas.go` (`SchemaDeclType`),
//! with references expanded as `pkg/cel/openapi/resolver/refs.go` (`PopulateRefs`) does
//! (a reference already being expanded is an empty object) and property names escaped as
//! `pkg/cel/escaping.go` (`Escape`) does.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::OnceLock;

use serde_json::Value;

use super::types::{Fields, Struct, Ty};

const DATA: &str = include_str!("k8s-schemas.json");

/// One schema node of the data file (see `tools/k8s-schemas/src/main.rs`).
#[derive(Debug, Default)]
pub(super) struct Node {
    ty: Option<String>,
    format: Option<String>,
    properties: Option<BTreeMap<String, Node>>,
    items: Option<Box<Node>>,
    additional: Option<Box<Node>>,
    reference: Option<String>,
    int_or_string: bool,
    embedded: bool,
    /// A keyword kca does not read, or a type marked unknown (`Quantity`).
    unsure: bool,
}

struct Schemas {
    kinds: HashMap<String, String>,
    defs: HashMap<String, Node>,
}

fn node(v: &Value) -> Node {
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let flag = |k: &str| v.get(k).and_then(Value::as_bool).unwrap_or(false);
    let mut n = Node {
        ty: s("t"),
        format: s("f"),
        reference: s("r"),
        int_or_string: flag("ios"),
        embedded: flag("emb"),
        ..Node::default()
    };
    n.properties = v
        .get("p")
        .and_then(Value::as_object)
        .map(|p| p.iter().map(|(k, v)| (k.clone(), node(v))).collect());
    n.items = v.get("i").map(|i| Box::new(node(i)));
    n.additional = v.get("a").map(|a| Box::new(node(a)));
    n.unsure = n.ty.as_deref() == Some("?")
        || v.as_object()
            .is_some_and(|m| m.keys().any(|k| k.starts_with('?')));
    n
}

fn schemas() -> &'static Schemas {
    static S: OnceLock<Schemas> = OnceLock::new();
    S.get_or_init(|| {
        let v: Value = serde_json::from_str(DATA).unwrap_or(Value::Null);
        let kinds = v
            .get("kinds")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, d)| Some((k.clone(), d.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        let defs = v
            .get("defs")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, d)| (k.clone(), node(d))).collect())
            .unwrap_or_default();
        Schemas { kinds, defs }
    })
}

/// An object schema reached from a kind's root, with the references expanded on the way
/// (for `PopulateRefs`' cycle rule).
#[derive(Debug, Clone)]
pub(super) struct ObjectNode {
    node: &'static Node,
    refs: Rc<Vec<&'static str>>,
}

/// The CEL type of the kind `group/version/Kind` (core group empty), `None` when the data
/// has no schema for it.
pub(super) fn kind_type(group: &str, version: &str, kind: &str) -> Option<Ty> {
    let s = schemas();
    let def = s.kinds.get(&format!("{group}/{version}/{kind}"))?;
    let (name, node) = s.defs.get_key_value(def)?;
    decl_type(node, &Rc::new(vec![name.as_str()]), kind.to_string(), 0)
}

/// Deepest schema nesting followed; deeper is [`Ty::Unsure`].
const MAX_DEPTH: usize = 64;

/// `SchemaDeclType` of `n`: `None` when the schema is not exposed to CEL.
fn decl_type(
    n: &'static Node,
    refs: &Rc<Vec<&'static str>>,
    path: String,
    depth: usize,
) -> Option<Ty> {
    if depth > MAX_DEPTH {
        return Some(Ty::Unsure);
    }
    if let Some(r) = n.reference.as_deref() {
        let s = schemas();
        let Some((name, def)) = s.defs.get_key_value(r) else {
            return Some(Ty::Unsure);
        };
        if refs.contains(&name.as_str()) {
            return Some(object(&EMPTY_OBJECT, refs, path));
        }
        let mut more = (**refs).clone();
        more.push(name.as_str());
        return decl_type(def, &Rc::new(more), path, depth + 1);
    }
    if n.unsure || n.embedded {
        return Some(Ty::Unsure);
    }
    if n.int_or_string || n.format.as_deref() == Some("int-or-string") {
        return Some(Ty::Dyn);
    }
    match n.ty.as_deref()? {
        "array" => {
            let items = n.items.as_deref()?;
            decl_type(items, refs, format!("{path}.@idx"), depth + 1).map(Ty::list)
        }
        "object" => match n.additional.as_deref() {
            Some(a) => {
                decl_type(a, refs, format!("{path}.@elem"), depth + 1).map(|v| Ty::map(Ty::Str, v))
            }
            None => Some(object(n, refs, path)),
        },
        "string" => Some(match n.format.as_deref() {
            Some("byte") => Ty::Bytes,
            Some("duration") => Ty::Duration,
            Some("date" | "date-time") => Ty::Timestamp,
            _ => Ty::Str,
        }),
        "boolean" => Some(Ty::Bool),
        "number" => Some(Ty::Double),
        "integer" => Some(Ty::Int),
        _ => None,
    }
}

static EMPTY_OBJECT: Node = Node {
    ty: None,
    format: None,
    properties: None,
    items: None,
    additional: None,
    reference: None,
    int_or_string: false,
    embedded: false,
    unsure: false,
};

fn object(n: &'static Node, refs: &Rc<Vec<&'static str>>, path: String) -> Ty {
    Ty::Struct(Rc::new(Struct {
        id: path,
        printed: None,
        fields: Fields::Schema(ObjectNode {
            node: n,
            refs: refs.clone(),
        }),
    }))
}

/// What selecting `field` (a CEL name) on a schema object gives.
pub(super) enum Lookup {
    Found(Ty),
    Missing,
}

/// The property `field` names, as `DeclTypeProvider.FindStructFieldType` finds it: by its
/// escaped name, or, for a CEL reserved word the escaped name misses, by `__field__`
/// (`recognizeKeywordAsFieldName`, set for environments of Kubernetes 1.31 and later by
/// `pkg/cel/environment/environment.go`: `object.metadata.namespace` is the property
/// `namespace`).
pub(super) fn field(obj: &ObjectNode, id: &str, field: &str) -> Lookup {
    let Some(props) = obj.node.properties.as_ref() else {
        return Lookup::Missing;
    };
    // `Fields` holds the properties that have a CEL type, under their escaped names.
    let lookup = |wanted: &str| {
        props.iter().find_map(|(name, prop)| {
            if escape(name).as_deref() != Some(wanted) {
                return None;
            }
            decl_type(prop, &obj.refs, format!("{id}.{name}"), obj.refs.len())
        })
    };
    let found = lookup(field).or_else(|| {
        RESERVED
            .contains(&field)
            .then(|| lookup(&format!("__{field}__")))
            .flatten()
    });
    match found {
        Some(t) => Lookup::Found(t),
        None => Lookup::Missing,
    }
}

const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// `Escape`: the CEL name of a property, `None` when it has none.
pub(super) fn escape(ident: &str) -> Option<String> {
    let first = ident.chars().next()?;
    if first.is_ascii_digit() {
        return None;
    }
    if RESERVED.contains(&ident) {
        return Some(format!("__{ident}__"));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || matches!(c, '-' | '.' | '/');
    if !ident.chars().all(allowed) {
        return None;
    }
    let mut out = String::with_capacity(ident.len());
    let b: Vec<char> = ident.chars().collect();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            '_' if b.get(i + 1) == Some(&'_') => {
                out.push_str("__underscores__");
                i += 2;
                continue;
            }
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c => out.push(c),
        }
        i += 1;
    }
    Some(out)
}

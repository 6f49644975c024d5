//! How k8s-manifest-sigstore compares the signed manifest with the resource
//! (`pkg/util/mapnode/node.go` and `diff.go`, `pkg/k8smanifest/verify_resource.go`
//! `directMatch`): both trees are flattened to `a.b.0.c` keys with scalar values, the
//! keys that differ become diff items (`before` in the manifest, `after` in the
//! resource), and the items an ignore field names are dropped. Ignore fields are Go
//! regular expressions (`*` → `.*`), unanchored, as the library matches them.

use std::collections::BTreeMap;

use regex::Regex;
use serde_json::Value;

/// One difference: the flattened key and its value on each side (`None`: absent).
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub key: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

/// Flattens `v` (mapnode `Ravel`): maps by key, lists by index, `null` left out.
pub fn ravel(v: &Value) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    walk(v, "", &mut out);
    out
}

fn walk(v: &Value, at: &str, out: &mut BTreeMap<String, Value>) {
    let join = |k: &str| {
        if at.is_empty() {
            k.to_string()
        } else {
            format!("{at}.{k}")
        }
    };
    match v {
        Value::Null => {}
        Value::Object(m) => m.iter().for_each(|(k, c)| walk(c, &join(k), out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, c)| walk(c, &join(&i.to_string()), out)),
        scalar if at.is_empty() => {
            out.insert(String::new(), scalar.clone());
        }
        scalar => {
            out.insert(at.to_string(), scalar.clone());
        }
    }
}

/// Go's `==` on the decoded values: numbers are all float64 there.
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

fn go_type(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Number(_) => "float64",
        Value::Bool(_) => "bool",
        _ => "interface {}",
    }
}

/// A float64 as Go's `%v` prints it (shortest form, exponent past 1e21).
pub fn go_number(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    if f.fract() == 0.0 && f.abs() < 1e21 {
        format!("{f:.0}")
    } else {
        f.to_string()
    }
}

/// Go's `fmt.Sprintf("(type: %T) %s", v, v)` for a type difference.
fn typed(v: &Value) -> Value {
    let shown = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => format!("%!s(float64={})", go_number(n)),
        Value::Bool(b) => format!("%!s(bool={b})"),
        other => other.to_string(),
    };
    Value::String(format!("(type: {}) {shown}", go_type(v)))
}

/// The differences from `before` (the manifest) to `after` (the resource), sorted by
/// key (mapnode `FindDiffBetweenNodes` in its default mode).
pub fn diff(before: &Value, after: &Value) -> Vec<Item> {
    let (m1, m2) = (ravel(before), ravel(after));
    let mut keys: Vec<&String> = m1.keys().chain(m2.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut items = Vec::new();
    let mut type_diffs = Vec::new();
    for k in keys {
        match (m1.get(k), m2.get(k)) {
            (Some(a), Some(b)) if go_type(a) != go_type(b) => type_diffs.push(Item {
                key: k.clone(),
                before: Some(typed(a)),
                after: Some(typed(b)),
            }),
            (Some(a), Some(b)) if same(a, b) => {}
            (a, b) => items.push(Item {
                key: k.clone(),
                before: a.cloned(),
                after: b.cloned(),
            }),
        }
    }
    let mut items = drop_default_conversion(drop_list_moves(items));
    items.extend(type_diffs);
    items.sort_by(|a, b| a.key.cmp(&b.key));
    items
}

fn eq_opt(a: &Option<Value>, b: &Option<Value>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => same(x, y),
        (None, None) => true,
        _ => false,
    }
}

/// `removeKeyDiffsInListNode`: a value that only moved to another index of a list is
/// no difference (the library builds the search pattern from the key unescaped).
fn drop_list_moves(items: Vec<Item>) -> Vec<Item> {
    let index = Regex::new(r"\.\d+\.").expect("a valid pattern");
    let keep: Vec<bool> = items
        .iter()
        .map(|item| {
            if !index.is_match(&item.key) || (item.before.is_some() && item.after.is_some()) {
                return true;
            }
            let Ok(search) = Regex::new(&index.replace_all(&item.key, r"\.\d+\.")) else {
                return true;
            };
            !items.iter().any(|t| {
                search.is_match(&t.key)
                    && ((item.after.is_none()
                        && t.before.is_none()
                        && eq_opt(&item.before, &t.after))
                        || (item.before.is_none()
                            && t.after.is_none()
                            && eq_opt(&item.after, &t.before)))
            })
        })
        .collect();
    items
        .into_iter()
        .zip(keep)
        .filter_map(|(i, k)| k.then_some(i))
        .collect()
}

/// `removeDiffWithDefaultConversion`: the library compares `reflect.Value`s with `==`,
/// which holds for the empty string only (Go boxes `""` at the runtime's zero value),
/// so an empty string against an absent key is no difference.
fn drop_default_conversion(items: Vec<Item>) -> Vec<Item> {
    let empty = |v: &Option<Value>| matches!(v, Some(Value::String(s)) if s.is_empty());
    items
        .into_iter()
        .filter(|i| {
            !((i.before.is_none() && empty(&i.after)) || (i.after.is_none() && empty(&i.before)))
        })
        .collect()
}

/// `removeCanonicalizedImageDiff`: `nginx` → `docker.io/nginx`, `ubuntu` →
/// `ubuntu:latest` on a key ending in `image` is no difference.
pub fn drop_canonical_images(items: Vec<Item>) -> Vec<Item> {
    items
        .into_iter()
        .filter(|i| {
            if !i.key.ends_with("image") {
                return true;
            }
            match (&i.before, &i.after) {
                (Some(Value::String(a)), Some(Value::String(b))) => {
                    format!("docker.io/{a}") != *b && format!("{a}:latest") != *b
                }
                _ => true,
            }
        })
        .collect()
}

/// A key pattern as mapnode's `patternMatchString` reads it.
pub struct Pattern {
    text: String,
    re: Option<Regex>,
}

impl Pattern {
    pub fn new(text: &str) -> Pattern {
        let re = (text.contains('*') && text != "*")
            .then(|| Regex::new(&text.replace('*', ".*")).ok())
            .flatten();
        Pattern {
            text: text.to_string(),
            re,
        }
    }

    pub fn matches(&self, key: &str) -> bool {
        self.text == key
            || self.text == "*"
            || self.text.is_empty()
            || self.re.as_ref().is_some_and(|r| r.is_match(key))
    }
}

/// `DiffResult.Filter`: the items no ignore field names (each field gets a trailing `*`).
pub fn filter(items: Vec<Item>, ignore: &[String]) -> Vec<Item> {
    let patterns: Vec<Pattern> = ignore
        .iter()
        .map(|f| Pattern::new(&format!("{f}*")))
        .collect();
    items
        .into_iter()
        .filter(|i| !patterns.iter().any(|p| p.matches(&i.key)))
        .collect()
}

/// The diff as the library prints it (`DiffResult.ToJson`): map keys sorted as
/// encoding/json writes them.
pub fn to_json(items: &[Item]) -> String {
    let show = |v: &Option<Value>| match v {
        None => "null".to_string(),
        Some(Value::Number(n)) => go_number(n),
        Some(other) => other.to_string(),
    };
    let body: Vec<String> = items
        .iter()
        .map(|i| {
            format!(
                "{{\"key\":{},\"values\":{{\"after\":{},\"before\":{}}}}}",
                Value::String(i.key.clone()),
                show(&i.after),
                show(&i.before)
            )
        })
        .collect();
    format!("{{\"items\":[{}]}}", body.join(","))
}

/// Removes the raveled keys of `v` the patterns name (mapnode `Mask`, for the
/// value-based search): what is left, flattened.
pub fn masked(v: &Value, ignore: &[String]) -> BTreeMap<String, Value> {
    let patterns: Vec<Pattern> = ignore.iter().map(|f| Pattern::new(f)).collect();
    let mut m = ravel(v);
    m.retain(|k, _| {
        let mut prefix = String::new();
        for part in k.split('.') {
            if !prefix.is_empty() {
                prefix.push('.');
            }
            prefix.push_str(part);
            if patterns.iter().any(|p| p.matches(&prefix)) {
                return false;
            }
        }
        true
    });
    m
}

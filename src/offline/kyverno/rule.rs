//! The rule envelope Kyverno fixes (`api/kyverno/v1/common_types.go`,
//! `match_resources_types.go`, `resource_description.go`): name, `match`/`exclude`,
//! preconditions, `context` entries and the action blocks, decoded once when a policy is
//! loaded. What Kyverno leaves schemaless stays `Value`: patterns, patches, generated data,
//! foreach lists, conditions. It must not evaluate anything.
//!
//! Decoding is lenient in the way the engine always read rules: a field of the wrong
//! shape reads as absent (a `kinds: Pod` string restricts nothing), so a policy that
//! evaluated before evaluates the same way now. Kyverno's own field checks live in
//! `validation`.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// One rule of a `ClusterPolicy`/`Policy` (after autogen).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Rule {
    #[serde(deserialize_with = "text")]
    pub name: String,
    #[serde(rename = "match", deserialize_with = "some_lenient")]
    pub match_: Option<MatchBlock>,
    #[serde(deserialize_with = "some_lenient")]
    pub exclude: Option<MatchBlock>,
    /// `any`/`all` conditions (schemaless keys and values).
    #[serde(deserialize_with = "present")]
    pub preconditions: Option<Value>,
    #[serde(deserialize_with = "present")]
    pub cel_preconditions: Option<Value>,
    #[serde(deserialize_with = "entries")]
    pub context: Vec<ContextEntry>,
    /// The action blocks, each `Some` when its key is present (even as `null`).
    #[serde(deserialize_with = "present")]
    pub validate: Option<Value>,
    #[serde(deserialize_with = "present")]
    pub mutate: Option<Value>,
    #[serde(deserialize_with = "present")]
    pub generate: Option<Value>,
    #[serde(deserialize_with = "present")]
    pub verify_images: Option<Value>,
    /// Whether the `validate` block holds variables (`{{ … }}`); without, its patterns
    /// and message are used as written, not substituted for every request.
    #[serde(skip)]
    pub validate_vars: bool,
}

impl Rule {
    /// Decodes a rule as written; a rule that is not a map has no name, match or action.
    pub fn decode(raw: &Value) -> Rule {
        let mut rule = Rule::deserialize(raw).unwrap_or_default();
        rule.validate_vars = rule
            .validate
            .as_ref()
            .is_some_and(super::vars::has_variables);
        rule
    }

    /// A `validate.cel` rule (evaluated by the CEL side, measured apart).
    pub fn is_cel(&self) -> bool {
        self.validate_field("cel").is_some_and(|c| !c.is_null())
    }

    /// A field of the `validate` block.
    pub fn validate_field(&self, key: &str) -> Option<&Value> {
        self.validate.as_ref().and_then(|v| v.get(key))
    }

    /// The name without the autogen prefix: values given for a rule also hold for its
    /// autogen copies.
    pub fn base_name(&self) -> &str {
        base_name(&self.name)
    }
}

/// `autogen-NAME` and `autogen-cronjob-NAME` stand for `NAME`.
pub fn base_name(name: &str) -> &str {
    name.strip_prefix("autogen-cronjob-")
        .or_else(|| name.strip_prefix("autogen-"))
        .unwrap_or(name)
}

/// `match` or `exclude`: `any`/`all` filter lists, or the legacy form with one filter's
/// fields side by side.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct MatchBlock {
    /// `Some` when `any` is a list (even an empty one).
    #[serde(deserialize_with = "filters")]
    pub any: Option<Vec<Filter>>,
    #[serde(deserialize_with = "filters")]
    pub all: Option<Vec<Filter>>,
    #[serde(flatten)]
    pub legacy: Filter,
}

/// One `ResourceFilter`: resources plus user information.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Filter {
    #[serde(deserialize_with = "some_lenient")]
    pub resources: Option<ResourceDesc>,
    pub subjects: List<Subject>,
    pub roles: List<String>,
    pub cluster_roles: List<String>,
}

impl Filter {
    /// Whether the filter names anything at all (the legacy form needs one of these keys).
    pub fn is_given(&self) -> bool {
        self.resources.is_some()
            || self.subjects.present
            || self.roles.present
            || self.cluster_roles.present
    }
}

/// `ResourceDescription`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ResourceDesc {
    #[serde(deserialize_with = "kinds")]
    pub kinds: List<KindEntry>,
    /// The deprecated single `name`, when a non-empty string.
    #[serde(deserialize_with = "nonempty_text")]
    pub name: Option<String>,
    pub names: List<String>,
    pub namespaces: List<String>,
    pub operations: List<String>,
    /// `Some` when `annotations` is a map; a non-string value reads as "".
    #[serde(deserialize_with = "string_map")]
    pub annotations: Option<Vec<(String, String)>>,
    #[serde(deserialize_with = "some_lenient")]
    pub selector: Option<Selector>,
    #[serde(deserialize_with = "some_lenient")]
    pub namespace_selector: Option<Selector>,
}

/// A label selector with Kyverno's wildcards in `matchLabels`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Selector {
    #[serde(deserialize_with = "string_map")]
    pub match_labels: Option<Vec<(String, String)>>,
    pub match_expressions: List<Requirement>,
}

impl Selector {
    pub fn decode(raw: &Value) -> Selector {
        Selector::deserialize(raw).unwrap_or_default()
    }
}

/// One `matchExpressions` entry; the operator is checked when it is evaluated.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Requirement {
    #[serde(deserialize_with = "text")]
    pub key: String,
    #[serde(deserialize_with = "text")]
    pub operator: String,
    pub values: List<String>,
}

/// A `subjects` entry (`rbacv1.Subject`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Subject {
    #[serde(deserialize_with = "text")]
    pub kind: String,
    #[serde(deserialize_with = "text")]
    pub name: String,
    #[serde(deserialize_with = "text")]
    pub namespace: String,
}

/// A `kinds` entry, split once: `Kind`, `version/Kind`, `group/version/Kind`, with
/// wildcards, and `Kind/subresource`. `None` parts is a form Kyverno cannot match
/// (five or more segments).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KindEntry {
    pub parts: Option<KindParts>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KindParts {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub sub: String,
}

impl KindEntry {
    pub fn parse(entry: &str) -> KindEntry {
        let segments: Vec<&str> = entry.split('/').collect();
        let upper = |s: &str| s.chars().next().is_some_and(char::is_uppercase);
        let lower = |s: &str| s.chars().next().is_some_and(char::is_lowercase);
        let (g, v, k, s) = match segments.as_slice() {
            [k] => ("*", "*", *k, ""),
            // `Pod/exec` (kind + subresource) versus `v1/Pod` (version + kind).
            [a, b] if upper(a) || *a == "*" && lower(b) => ("*", "*", *a, *b),
            [a, b] => ("*", *a, *b, ""),
            [a, b, c] if upper(b) => ("*", *a, *b, *c),
            [a, b, c] => (*a, *b, *c, ""),
            [a, b, c, d] => (*a, *b, *c, *d),
            _ => return KindEntry { parts: None },
        };
        KindEntry {
            parts: Some(KindParts {
                group: g.into(),
                version: v.into(),
                kind: k.into(),
                sub: s.into(),
            }),
        }
    }
}

/// One `context` entry; the source's own fields stay `Value` (they hold variables).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ContextEntry {
    #[serde(deserialize_with = "text")]
    pub name: String,
    #[serde(deserialize_with = "present")]
    pub variable: Option<Value>,
    #[serde(deserialize_with = "present")]
    pub config_map: Option<Value>,
    #[serde(deserialize_with = "present")]
    pub api_call: Option<Value>,
    #[serde(deserialize_with = "present")]
    pub image_registry: Option<Value>,
    #[serde(deserialize_with = "present")]
    pub global_reference: Option<Value>,
}

impl ContextEntry {
    /// The `context` entries of a rule, a foreach declaration or a target (none when the
    /// field is not a list).
    pub fn list(holder: &Value) -> Vec<ContextEntry> {
        holder
            .get("context")
            .and_then(Value::as_array)
            .map(|l| l.iter().map(lenient_item).collect())
            .unwrap_or_default()
    }
}

/// A list field as the engine reads it: `present` when the key is there, `items` the
/// entries of the expected type when it is a list. Only a non-empty list restricts a
/// match, and then by its items alone (a list of numbers matches nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct List<T> {
    pub present: bool,
    pub restricts: bool,
    pub items: Vec<T>,
}

impl<T> Default for List<T> {
    fn default() -> Self {
        List {
            present: false,
            restricts: false,
            items: Vec::new(),
        }
    }
}

impl<T> List<T> {
    fn from_value(v: &Value, item: impl Fn(&Value) -> Option<T>) -> List<T> {
        let items = v.as_array();
        List {
            present: true,
            restricts: items.is_some_and(|l| !l.is_empty()),
            items: items
                .map(|l| l.iter().filter_map(item).collect())
                .unwrap_or_default(),
        }
    }
}

/// Strings are kept as strings, maps decoded leniently; anything else is left out.
pub trait ListItem: Sized {
    fn item(v: &Value) -> Option<Self>;
}

impl ListItem for String {
    fn item(v: &Value) -> Option<Self> {
        v.as_str().map(str::to_string)
    }
}

impl ListItem for Subject {
    fn item(v: &Value) -> Option<Self> {
        Some(lenient_item(v))
    }
}

impl ListItem for Requirement {
    fn item(v: &Value) -> Option<Self> {
        Some(lenient_item(v))
    }
}

impl<'de, T: ListItem> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(List::from_value(&Value::deserialize(d)?, T::item))
    }
}

fn lenient_item<T: DeserializeOwned + Default>(v: &Value) -> T {
    T::deserialize(v).unwrap_or_default()
}

/// `Some` when the key is present, whatever its value (`null` included).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// `Some(T)` when the key is present; a value of the wrong shape reads as `T::default()`.
fn some_lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    Ok(Some(lenient_item(&Value::deserialize(d)?)))
}

/// A string; anything else reads as "".
fn text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => s,
        _ => String::new(),
    })
}

fn nonempty_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(Some(text(d)?).filter(|s| !s.is_empty()))
}

fn string_map<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<(String, String)>>, D::Error> {
    Ok(Value::deserialize(d)?.as_object().map(|m| {
        m.iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
            .collect()
    }))
}

fn kinds<'de, D: Deserializer<'de>>(d: D) -> Result<List<KindEntry>, D::Error> {
    Ok(List::from_value(&Value::deserialize(d)?, |k| {
        k.as_str().map(KindEntry::parse)
    }))
}

fn filters<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Filter>>, D::Error> {
    Ok(Value::deserialize(d)?
        .as_array()
        .map(|l| l.iter().map(lenient_item).collect()))
}

fn entries<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ContextEntry>, D::Error> {
    Ok(Value::deserialize(d)?
        .as_array()
        .map(|l| l.iter().map(lenient_item).collect())
        .unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wrong_shapes_read_as_absent() {
        let r = Rule::decode(&json!({"name": 3, "match": "x", "validate": null,
            "context": "no", "exclude": {"any": {}, "resources": {"kinds": "Pod"}}}));
        assert_eq!(r.name, "");
        let m = r.match_.expect("match is present");
        assert!(m.any.is_none() && m.all.is_none() && !m.legacy.is_given());
        assert_eq!(r.validate, Some(Value::Null));
        assert!(r.context.is_empty());
        let ex = r.exclude.expect("exclude is present");
        assert!(ex.any.is_none());
        let kinds = &ex.legacy.resources.expect("resources").kinds;
        assert!(kinds.present && !kinds.restricts);
        assert!(Rule::decode(&json!("not a rule")).match_.is_none());
    }

    #[test]
    fn the_legacy_form_counts_a_key_present_even_as_null() {
        let block = |v: Value| Rule::decode(&json!({"match": v})).match_.unwrap();
        assert!(block(json!({"resources": null})).legacy.is_given());
        assert!(block(json!({"roles": null})).legacy.is_given());
        assert!(!block(json!({"other": 1})).legacy.is_given());
        let m = block(json!({"any": [], "all": "x"}));
        assert_eq!(m.any.map(|a| a.len()), Some(0));
        assert!(m.all.is_none());
    }

    #[test]
    fn a_list_of_non_strings_restricts_to_nothing() {
        let d: ResourceDesc = serde_json::from_value(json!({"names": [1], "kinds": []})).unwrap();
        assert!(d.names.restricts && d.names.items.is_empty());
        assert!(!d.kinds.restricts);
    }

    #[test]
    fn kind_entries_split_once() {
        let p = |e: &str| {
            KindEntry::parse(e)
                .parts
                .map(|p| (p.group, p.version, p.kind, p.sub))
        };
        let s = |a: &str, b: &str, c: &str, d: &str| Some((a.into(), b.into(), c.into(), d.into()));
        assert_eq!(p("Pod"), s("*", "*", "Pod", ""));
        assert_eq!(p("Pod/exec"), s("*", "*", "Pod", "exec"));
        assert_eq!(p("v1/Pod"), s("*", "v1", "Pod", ""));
        assert_eq!(p("*/scale"), s("*", "*", "*", "scale"));
        assert_eq!(p("v1/Pod/exec"), s("*", "v1", "Pod", "exec"));
        assert_eq!(p("apps/v1/Deployment"), s("apps", "v1", "Deployment", ""));
        assert_eq!(p("a/b/c/d/e"), None);
    }
}

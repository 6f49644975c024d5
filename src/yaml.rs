//! YAML in and out: the one module that knows which YAML library kca uses.
//!
//! Parsing produces a position-carrying [`Node`] tree so that content lint and learner
//! feedback can point at `line:col`; [`Node::to_json`] turns it into `serde_json::Value`
//! for code that only needs the data. Nothing outside this module names a YAML crate.
//! It must not print, and must not panic on any input.

use std::collections::HashMap;
use std::fmt;

use granit_parser::{Event, Parser, ScalarStyle};
use serde_json::{Map, Number, Value};

/// A position in a source text: line and column, both counted from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, PartialOrd, Ord)]
pub struct Pos {
    pub line: usize,
    pub col: usize,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// A YAML value with the position where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub value: Yaml,
    pub pos: Pos,
}

/// The data of a node. Mapping entries keep their source order and key positions.
#[derive(Debug, Clone, PartialEq)]
pub enum Yaml {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

/// Why a text is not YAML, and where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{pos}: {message}")]
pub struct YamlError {
    pub pos: Pos,
    pub message: String,
}

/// Aliases may not expand a document beyond this many nodes ("billion laughs").
const MAX_EXPANDED_NODES: usize = 1_000_000;
/// Deeper documents are refused rather than risking the stack in later recursive walks.
pub const MAX_DEPTH: usize = 200;

impl Node {
    /// A short word for the node's type, for messages such as "expected a string, found a list".
    pub fn type_name(&self) -> &'static str {
        match self.value {
            Yaml::Null => "null",
            Yaml::Bool(_) => "a boolean",
            Yaml::Int(_) => "an integer",
            Yaml::Float(_) => "a number",
            Yaml::Str(_) => "a string",
            Yaml::Seq(_) => "a list",
            Yaml::Map(_) => "a mapping",
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Yaml::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The value under `key` when this node is a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Yaml::Map(entries) => entries
                .iter()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// The node's data as JSON. Mapping keys that are not strings are written as their
    /// scalar text, as Kubernetes' YAML reader does.
    pub fn to_json(&self) -> Value {
        match &self.value {
            Yaml::Null => Value::Null,
            Yaml::Bool(b) => Value::Bool(*b),
            Yaml::Int(i) => Value::Number((*i).into()),
            Yaml::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Yaml::Str(s) => Value::String(s.clone()),
            Yaml::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            Yaml::Map(entries) => {
                let mut map = Map::new();
                for (k, v) in entries {
                    map.insert(key_text(k), v.to_json());
                }
                Value::Object(map)
            }
        }
    }
}

fn key_text(node: &Node) -> String {
    match &node.value {
        Yaml::Str(s) => s.clone(),
        Yaml::Null => "null".into(),
        Yaml::Bool(b) => b.to_string(),
        Yaml::Int(i) => i.to_string(),
        Yaml::Float(f) => f.to_string(),
        other => format!("{other:?}"),
    }
}

/// Parses every document of a YAML stream. An empty stream gives no documents; an empty
/// document between `---` markers gives a `Null` node.
pub fn parse_stream(src: &str) -> Result<Vec<Node>, YamlError> {
    Builder::new().run(src)
}

/// Parses a stream and returns its documents as JSON, leaving out empty documents
/// (as `kubectl apply -f` does).
pub fn parse_json_stream(src: &str) -> Result<Vec<Value>, YamlError> {
    Ok(parse_stream(src)?
        .into_iter()
        .filter(|n| n.value != Yaml::Null)
        .map(|n| n.to_json())
        .collect())
}

/// Parses a text that must hold at most one document; `Null` when it holds none.
pub fn parse_one(src: &str) -> Result<Node, YamlError> {
    let mut docs = parse_stream(src)?;
    match docs.len() {
        0 => Ok(Node {
            value: Yaml::Null,
            pos: Pos { line: 1, col: 1 },
        }),
        1 => Ok(docs.remove(0)),
        _ => {
            let second = docs.swap_remove(1);
            Err(YamlError {
                pos: second.pos,
                message: "expected one YAML document, found several (`---`)".into(),
            })
        }
    }
}

/// Writes a JSON value as a YAML document (no leading `---`).
pub fn to_string(value: &Value) -> String {
    // The serializer only fails for non-string map keys, which JSON cannot have.
    serde_saphyr::to_string(value).unwrap_or_else(|e| format!("# cannot write YAML: {e}\n"))
}

/// Writes several values as a YAML stream separated by `---`.
pub fn to_stream(values: &[Value]) -> String {
    values
        .iter()
        .map(to_string)
        .collect::<Vec<_>>()
        .join("---\n")
}

enum Frame {
    Seq(Vec<Node>, Pos, usize),
    Map(Vec<(Node, Node)>, Option<Node>, Pos, usize),
}

struct Builder {
    stack: Vec<Frame>,
    anchors: HashMap<usize, Node>,
    docs: Vec<Node>,
    expanded: usize,
}

impl Builder {
    fn new() -> Self {
        Builder {
            stack: Vec::new(),
            anchors: HashMap::new(),
            docs: Vec::new(),
            expanded: 0,
        }
    }

    fn run(mut self, src: &str) -> Result<Vec<Node>, YamlError> {
        // A leading byte-order mark is legal; everything else the parser judges.
        let src = src.strip_prefix('\u{feff}').unwrap_or(src);
        for item in Parser::new_from_str(src) {
            let (event, span) = item.map_err(|e| YamlError {
                pos: Pos {
                    line: e.marker().line().max(1),
                    col: e.marker().col() + 1,
                },
                message: e.info(),
            })?;
            let pos = Pos {
                line: span.start.line().max(1),
                col: span.start.col() + 1,
            };
            match event {
                Event::DocumentStart(..) => self.anchors.clear(),
                Event::Scalar(text, style, anchor, tag) => {
                    let tag = tag.map(|t| (t.handle().to_string(), t.suffix().to_string()));
                    let value = resolve_scalar(&text, style, tag.as_ref(), pos)?;
                    self.push(Node { value, pos }, anchor)?;
                }
                Event::SequenceStart(_, anchor, _) => {
                    self.check_depth(pos)?;
                    self.stack.push(Frame::Seq(Vec::new(), pos, anchor));
                }
                Event::MappingStart(_, anchor, _) => {
                    self.check_depth(pos)?;
                    self.stack.push(Frame::Map(Vec::new(), None, pos, anchor));
                }
                Event::SequenceEnd => {
                    if let Some(Frame::Seq(items, start, anchor)) = self.stack.pop() {
                        self.push(
                            Node {
                                value: Yaml::Seq(items),
                                pos: start,
                            },
                            anchor,
                        )?;
                    }
                }
                Event::MappingEnd => {
                    if let Some(Frame::Map(entries, _, start, anchor)) = self.stack.pop() {
                        self.push(
                            Node {
                                value: Yaml::Map(entries),
                                pos: start,
                            },
                            anchor,
                        )?;
                    }
                }
                Event::Alias(id) => {
                    let Some(mut node) = self.anchors.get(&id).cloned() else {
                        return Err(YamlError {
                            pos,
                            message: "alias refers to an unknown anchor".into(),
                        });
                    };
                    self.expanded += count_nodes(&node);
                    if self.expanded > MAX_EXPANDED_NODES {
                        return Err(YamlError {
                            pos,
                            message: "aliases expand to too many nodes".into(),
                        });
                    }
                    node.pos = pos;
                    self.push(node, 0)?;
                }
                Event::UnresolvedAlias(name) => {
                    return Err(YamlError {
                        pos,
                        message: format!("alias *{name} has no anchor"),
                    });
                }
                _ => {}
            }
        }
        Ok(self.docs)
    }

    fn check_depth(&self, pos: Pos) -> Result<(), YamlError> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(YamlError {
                pos,
                message: format!("nesting deeper than {MAX_DEPTH} levels"),
            });
        }
        Ok(())
    }

    fn push(&mut self, node: Node, anchor: usize) -> Result<(), YamlError> {
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => self.docs.push(node),
            Some(Frame::Seq(items, ..)) => items.push(node),
            Some(Frame::Map(entries, pending, ..)) => match pending.take() {
                None => {
                    if matches!(node.value, Yaml::Seq(_) | Yaml::Map(_)) {
                        return Err(YamlError {
                            pos: node.pos,
                            message: "a mapping key must be a scalar".into(),
                        });
                    }
                    if let Some((first, _)) = entries.iter().find(|(k, _)| k.value == node.value) {
                        return Err(YamlError {
                            pos: node.pos,
                            message: format!(
                                "duplicate key `{}` (first at line {})",
                                key_text(&node),
                                first.pos.line
                            ),
                        });
                    }
                    *pending = Some(node);
                }
                Some(key) => entries.push((key, node)),
            },
        }
        Ok(())
    }
}

fn count_nodes(node: &Node) -> usize {
    match &node.value {
        Yaml::Seq(items) => 1 + items.iter().map(count_nodes).sum::<usize>(),
        Yaml::Map(entries) => {
            1 + entries
                .iter()
                .map(|(k, v)| count_nodes(k) + count_nodes(v))
                .sum::<usize>()
        }
        _ => 1,
    }
}

/// Resolves a scalar by the YAML 1.2 core schema (what Kubernetes' reader accepts for
/// manifests); quoted and block scalars are always strings.
fn resolve_scalar(
    text: &str,
    style: ScalarStyle,
    tag: Option<&(String, String)>,
    pos: Pos,
) -> Result<Yaml, YamlError> {
    if let Some((handle, suffix)) = tag {
        if handle == "tag:yaml.org,2002:" {
            let bad = |what: &str| YamlError {
                pos,
                message: format!("`{text}` is not {what}"),
            };
            return match suffix.as_str() {
                "str" => Ok(Yaml::Str(text.to_string())),
                "null" => Ok(Yaml::Null),
                "bool" => plain_bool(text)
                    .map(Yaml::Bool)
                    .ok_or_else(|| bad("a boolean")),
                "int" => plain_int(text)
                    .map(Yaml::Int)
                    .ok_or_else(|| bad("an integer")),
                "float" => plain_float(text)
                    .or_else(|| plain_int(text).map(|i| i as f64))
                    .map(Yaml::Float)
                    .ok_or_else(|| bad("a number")),
                _ => Ok(Yaml::Str(text.to_string())),
            };
        }
        return Ok(Yaml::Str(text.to_string()));
    }
    if style != ScalarStyle::Plain {
        return Ok(Yaml::Str(text.to_string()));
    }
    if matches!(text, "" | "~" | "null" | "Null" | "NULL") {
        return Ok(Yaml::Null);
    }
    if let Some(b) = plain_bool(text) {
        return Ok(Yaml::Bool(b));
    }
    if let Some(i) = plain_int(text) {
        return Ok(Yaml::Int(i));
    }
    if let Some(f) = plain_float(text) {
        return Ok(Yaml::Float(f));
    }
    Ok(Yaml::Str(text.to_string()))
}

fn plain_bool(text: &str) -> Option<bool> {
    match text {
        "true" | "True" | "TRUE" => Some(true),
        "false" | "False" | "FALSE" => Some(false),
        _ => None,
    }
}

fn plain_int(text: &str) -> Option<i64> {
    if let Some(hex) = text.strip_prefix("0x") {
        return i64::from_str_radix(hex, 16).ok();
    }
    if let Some(oct) = text.strip_prefix("0o") {
        return i64::from_str_radix(oct, 8).ok();
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn plain_float(text: &str) -> Option<f64> {
    match text {
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => return Some(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => return Some(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Some(f64::NAN),
        _ => {}
    }
    let body = text.strip_prefix(['-', '+']).unwrap_or(text);
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let mantissa_ok = {
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        (!int.is_empty() || !frac.is_empty())
            && int.bytes().all(|b| b.is_ascii_digit())
            && frac.bytes().all(|b| b.is_ascii_digit())
            && (mantissa.contains('.') || exponent.is_some())
    };
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['-', '+']).unwrap_or(e);
        !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit())
    });
    if mantissa_ok && exponent_ok {
        text.parse().ok()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scalars_follow_the_core_schema() {
        let cases = [
            ("a: 1", json!({"a": 1})),
            ("a: -2", json!({"a": -2})),
            ("a: 1.5", json!({"a": 1.5})),
            ("a: '1'", json!({"a": "1"})),
            ("a: true", json!({"a": true})),
            ("a: yes", json!({"a": "yes"})),
            ("a: ~", json!({"a": null})),
            ("a:", json!({"a": null})),
            ("a: 0x10", json!({"a": 16})),
            ("a: 1e3", json!({"a": 1000.0})),
            ("a: 1.2.3", json!({"a": "1.2.3"})),
            ("a: !!str 5", json!({"a": "5"})),
            ("a: 100m", json!({"a": "100m"})),
            ("a: |\n  x\n", json!({"a": "x\n"})),
        ];
        for (src, want) in cases {
            assert_eq!(parse_one(src).unwrap().to_json(), want, "{src}");
        }
    }

    #[test]
    fn positions_are_one_based() {
        let doc = parse_one("a:\n  b: [1, x]\n").unwrap();
        let b = doc.get("a").unwrap().get("b").unwrap();
        assert_eq!(b.pos, Pos { line: 2, col: 6 });
        let Yaml::Seq(items) = &b.value else { panic!() };
        assert_eq!(items[1].pos, Pos { line: 2, col: 10 });
    }

    #[test]
    fn streams_skip_empty_documents() {
        let docs = parse_json_stream("---\n---\na: 1\n---\nb: 2\n").unwrap();
        assert_eq!(docs, vec![json!({"a": 1}), json!({"b": 2})]);
    }

    #[test]
    fn errors_carry_a_position() {
        let err = parse_stream("a: 1\nb: [\n").unwrap_err();
        assert!(err.pos.line >= 2, "{err:?}");
        let dup = parse_stream("a: 1\na: 2\n").unwrap_err();
        assert_eq!(dup.pos, Pos { line: 2, col: 1 });
        assert!(dup.message.contains("duplicate key `a`"));
    }

    #[test]
    fn aliases_expand_and_are_bounded() {
        let doc = parse_one("x: &a {k: v}\ny: *a\n").unwrap().to_json();
        assert_eq!(doc, json!({"x": {"k": "v"}, "y": {"k": "v"}}));
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            let prev = format!("*a{}", i - 1);
            bomb.push_str(&format!("a{i}: &a{i} [{}]\n", vec![prev; 10].join(", ")));
        }
        assert!(parse_stream(&bomb).is_err());
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = "[".repeat(10_000);
        assert!(parse_stream(&deep).is_err());
    }

    #[test]
    fn writes_yaml_that_reads_back() {
        let value = json!({"a": [1, "two", {"b": null}], "c": "x: y"});
        let text = to_string(&value);
        assert_eq!(parse_one(&text).unwrap().to_json(), value);
    }
}

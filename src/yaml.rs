//! YAML in and out: the one module that knows which YAML library kca uses.
//!
//! Parsing produces a position-carrying [`Node`] tree so that content lint and learner
//! feedback can point at `line:col`; [`Node::to_json`] turns it into `serde_json::Value`
//! for code that only needs the data. Nothing outside this module names a YAML crate.
//! Large inputs are parsed on several threads (`pieces`: a stream cut before its
//! document markers; `one`: one document cut before an entry of a long sequence), with
//! the positions, errors and budgets one parse would give.
//! It must not print, and must not panic on any input.

use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};

use granit_parser::{Event, Parser, ScalarStyle};
use serde_json::{Map, Number, Value};

pub mod goyaml;
mod one;
mod pieces;
mod tree;

use tree::{MapFrame, Tree};

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
    /// The run's (or an [`Allowance`]'s) budget ran out here: the text may be fine, there
    /// is too much of it all together. The caller names the file that went over.
    pub over_budget: bool,
}

/// Aliases may not expand the documents of one run beyond this many nodes ("billion
/// laughs"); counted per run, not per file, so that many small files cannot add up.
pub const MAX_EXPANDED_NODES: usize = 1_000_000;
/// One run builds at most this many nodes (aliases included), whatever the number and
/// size of the files it reads: memory stays bounded (a few GB at worst).
pub const MAX_RUN_NODES: usize = 20_000_000;

thread_local! {
    /// Nodes built and alias-expanded so far by this thread (one kca run, one test),
    /// including the parser threads it started.
    static SPENT: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
    /// The node limit of the parses this thread starts: the run's, or an allowance's
    /// while [`Allowance::parse_json_stream`] runs.
    static LIMIT: Cell<usize> = const { Cell::new(MAX_RUN_NODES) };
}

/// The run's budgets during one parse, shared by the threads parsing its pieces.
struct Budget {
    nodes: AtomicUsize,
    aliases: AtomicUsize,
    /// At most this many nodes in all (the run's [`MAX_RUN_NODES`], or an allowance's).
    limit: usize,
}

impl Budget {
    fn of_this_run() -> Budget {
        let (nodes, aliases) = SPENT.get();
        Budget {
            nodes: AtomicUsize::new(nodes),
            aliases: AtomicUsize::new(aliases),
            limit: LIMIT.get(),
        }
    }

    /// Hands what this parse spent back to the calling thread's run.
    fn close(self) {
        SPENT.set((self.nodes.into_inner(), self.aliases.into_inner()));
    }
}

/// A builder adds its nodes to the shared count in batches of this many, so that
/// threads do not fight over one counter for every node; the limit is checked on
/// every node against the shared count plus the batch. With several threads the run
/// may overshoot the node budget by at most one batch per other thread.
const NODE_BATCH: usize = 4096;
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

    /// The node's data as JSON, moving its strings rather than copying them (for callers
    /// done with the positions). Same result as [`Node::to_json`].
    pub fn into_json(self) -> Value {
        match self.value {
            Yaml::Str(s) => Value::String(s),
            Yaml::Seq(items) => Value::Array(items.into_iter().map(Node::into_json).collect()),
            Yaml::Map(entries) => {
                let mut map = Map::with_capacity(entries.len());
                for (k, v) in entries {
                    let key = match k.value {
                        Yaml::Str(s) => s,
                        _ => key_text(&k),
                    };
                    map.insert(key, v.into_json());
                }
                Value::Object(map)
            }
            _ => self.to_json(),
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
                let mut map = Map::with_capacity(entries.len());
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
    let pieces = parse_pieces(src, Vec::new, |docs, n| docs.push(n))?;
    Ok(pieces.into_iter().flatten().collect())
}

/// Parses a stream and returns its documents as JSON, leaving out empty documents
/// (as `kubectl apply -f` does). Each document becomes JSON as soon as it is read, so
/// the position-carrying tree of the whole stream is never held at once.
pub fn parse_json_stream(src: &str) -> Result<Vec<Value>, YamlError> {
    // Built as JSON straight away: no position-carrying tree beside the JSON.
    let pieces = parse_pieces_as(src, Vec::new, |docs, v: Value, null| {
        if !null {
            docs.push(v);
        }
    })?;
    Ok(pieces.into_iter().flatten().collect())
}

/// Parses kca's own embedded content (the baseline RBAC) as [`parse_json_stream`] does,
/// but outside the run's budgets: what a learner's files spent cannot make kca's own
/// files fail, and they take nothing from the learner's.
pub fn parse_own_content(src: &str) -> Result<Vec<Value>, YamlError> {
    let learners = SPENT.replace((0, 0));
    let limit = LIMIT.replace(MAX_RUN_NODES);
    let parsed = parse_json_stream(src);
    SPENT.set(learners);
    LIMIT.set(limit);
    parsed
}

/// What the files of one learner may hold all together in one run (a workspace `lab
/// check` grades, one submission of `kca grade`): bytes and values, counted apart from
/// the run's budget so that one learner's files neither spend another's nor kca's own.
/// A parse that goes over fails with `over_budget` set; the caller names the file.
#[derive(Debug, Clone)]
pub struct Allowance {
    max_bytes: usize,
    max_values: usize,
    bytes: usize,
    /// Nodes and alias-expanded nodes spent so far.
    spent: (usize, usize),
}

impl Allowance {
    pub const fn new(max_bytes: usize, max_values: usize) -> Allowance {
        Allowance {
            max_bytes,
            max_values,
            bytes: 0,
            spent: (0, 0),
        }
    }

    /// Parses as [`parse_json_stream`] does, spending this allowance.
    pub fn parse_json_stream(&mut self, src: &str) -> Result<Vec<Value>, YamlError> {
        if self.bytes.saturating_add(src.len()) > self.max_bytes {
            return Err(YamlError {
                pos: Pos { line: 1, col: 1 },
                message: format!(
                    "too much YAML: the files read before this one and this one hold more \
                     than {} MiB together",
                    self.max_bytes >> 20
                ),
                over_budget: true,
            });
        }
        self.bytes += src.len();
        let run = SPENT.replace(self.spent);
        let limit = LIMIT.replace(self.max_values);
        let parsed = parse_json_stream(src);
        self.spent = SPENT.replace(run);
        LIMIT.set(limit);
        parsed
    }
}

/// Parses a stream as [`parse_stream`] does, handing every document, in order, to
/// `each` with the state `start` made for its piece; returns the states in stream order.
///
/// A large stream is cut before document markers into pieces parsed on separate threads
/// (see `pieces`), so `each` runs on those threads too: put per-document work there
/// (checks, conversion to JSON). Positions are those in the whole stream, the alias and
/// node budgets are the run's, shared by all threads, and the error reported is the
/// first in stream order.
pub fn parse_pieces<S: Send>(
    src: &str,
    start: impl Fn() -> S + Sync,
    each: impl Fn(&mut S, Node) + Sync,
) -> Result<Vec<S>, YamlError> {
    parse_pieces_as(src, start, |state, n, _| each(state, n))
}

/// [`parse_pieces`] building `T` (a [`Node`] or JSON); `each` also learns whether the
/// document is a null node (empty).
fn parse_pieces_as<T: Tree, S: Send>(
    src: &str,
    start: impl Fn() -> S + Sync,
    each: impl Fn(&mut S, T, bool) + Sync,
) -> Result<Vec<S>, YamlError> {
    let threads = if src.len() < 2 * pieces::MIN_PIECE_BYTES {
        1
    } else {
        crate::par::cores().min(MAX_THREADS)
    };
    parse_on(threads, src, start, each)
}

/// [`parse_pieces_as`] on at most `threads` threads.
fn parse_on<T: Tree, S: Send>(
    threads: usize,
    src: &str,
    start: impl Fn() -> S + Sync,
    each: impl Fn(&mut S, T, bool) + Sync,
) -> Result<Vec<S>, YamlError> {
    // A leading byte-order mark is legal; everything else the parser judges.
    let src = src.strip_prefix('\u{feff}').unwrap_or(src);
    let budget = Budget::of_this_run();
    let parts = pieces::split(src, threads);
    let parse = |piece: pieces::Piece<'_>| {
        let mut state = start();
        Builder::new(&budget, piece.line_offset)
            .run(piece.text, &mut |n, null| each(&mut state, n, null))
            .map(|_| state)
    };
    let result = match parts.split_first() {
        Some((first, rest)) if !rest.is_empty() => std::thread::scope(|scope| {
            // A piece no thread can be started for (a pids limit) is parsed here, after.
            let others: Vec<_> = rest
                .iter()
                .map(|&piece| {
                    std::thread::Builder::new()
                        .spawn_scoped(scope, move || parse(piece))
                        .map_err(|_| piece)
                })
                .collect();
            let mut states = vec![parse(*first)];
            for handle in others {
                states.push(match handle {
                    Ok(h) => h
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                    Err(piece) => parse(piece),
                });
            }
            states.into_iter().collect()
        }),
        _ => parse(parts[0]).map(|s| vec![s]),
    };
    budget.close();
    result
}

/// At most this many threads parse one stream.
const MAX_THREADS: usize = 4;

/// Parses a text that must hold at most one document; `Null` when it holds none.
pub fn parse_one(src: &str) -> Result<Node, YamlError> {
    if src.len() >= 2 * pieces::MIN_PIECE_BYTES
        && crate::par::cores() > 1
        && let Some(doc) = one::parse_in_two(src.strip_prefix('\u{feff}').unwrap_or(src))
    {
        return Ok(doc);
    }
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
                over_budget: false,
                pos: second.pos,
                message: "expected one YAML document, found several (`---`)".into(),
            })
        }
    }
}

/// What to do about a YAML syntax error, in words: a tab in the indentation, a line
/// indented unlike its siblings, a `: ` inside an unquoted value.
pub fn hint(src: &str, e: &YamlError) -> &'static str {
    let line = src.lines().nth(e.pos.line.saturating_sub(1)).unwrap_or("");
    let indent: String = line.chars().take_while(|c| c.is_whitespace()).collect();
    if indent.contains('\t') || e.message.contains("tabs") {
        return "YAML indentation uses spaces, not tabs: replace the tab at the start of \
                this line with spaces";
    }
    if e.message.contains("did not find expected key")
        || e.message.contains("did not find expected '-'")
    {
        return "check the indentation: the keys of one mapping (and the `-` items of one \
                list) start in the same column, and this line does not line up with the \
                lines above it";
    }
    if e.message.contains("mapping values are not allowed") {
        return "a `key:` cannot start here: indent this line like the other keys of its \
                mapping, or quote a value that contains `: `";
    }
    "fix the YAML syntax at this position"
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

enum Frame<T: Tree> {
    Seq(Vec<T>, Pos, usize),
    Map(Box<MapFrame<T>>, Pos, usize),
}

/// A value read but not placed yet: a scalar stays a node until it is placed (a
/// mapping key keeps its YAML type and position), a collection is built already.
#[derive(Clone)]
enum Item<T> {
    Scalar(Node),
    Built(T, Pos),
}

impl<T: Tree> Item<T> {
    fn into_tree(self) -> T {
        match self {
            Item::Scalar(n) => T::scalar(n),
            Item::Built(t, _) => t,
        }
    }
}

/// Builds the documents of a text as `T` (a [`Node`] tree or JSON).
struct Builder<'b, T: Tree> {
    stack: Vec<Frame<T>>,
    anchors: HashMap<usize, Item<T>>,
    budget: &'b Budget,
    /// Lines of the stream before the piece this builder parses.
    line_offset: usize,
    /// Nodes built but not yet added to `budget.nodes`.
    batch: usize,
    /// `budget.nodes` when this builder last added its batch.
    counted: usize,
    /// The most collections open at once so far.
    deepest: usize,
}

impl<'b, T: Tree> Builder<'b, T> {
    fn new(budget: &'b Budget, line_offset: usize) -> Self {
        Builder {
            stack: Vec::new(),
            anchors: HashMap::new(),
            budget,
            line_offset,
            batch: 0,
            counted: budget.nodes.load(Ordering::Relaxed),
            deepest: 0,
        }
    }

    /// Counts `n` more nodes (and `aliased` of them expanded from aliases) against the
    /// run's budget.
    fn spend(&mut self, n: usize, aliased: usize, pos: Pos) -> Result<(), YamlError> {
        self.batch = self.batch.saturating_add(n);
        if aliased > 0 {
            let before = self.budget.aliases.fetch_add(aliased, Ordering::Relaxed);
            self.flush();
            if before.saturating_add(aliased) > MAX_EXPANDED_NODES {
                return Err(YamlError {
                    over_budget: true,
                    pos,
                    message: format!(
                        "aliases expand to too many nodes (more than {MAX_EXPANDED_NODES} in this run)"
                    ),
                });
            }
        } else if self.batch >= NODE_BATCH {
            self.flush();
        }
        if self.counted.saturating_add(self.batch) > self.budget.limit {
            let limit = self.budget.limit;
            return Err(YamlError {
                over_budget: true,
                pos,
                message: format!(
                    "too much YAML: more than {limit} values in this run; give kca fewer or smaller files"
                ),
            });
        }
        Ok(())
    }

    fn flush(&mut self) {
        let before = self.budget.nodes.fetch_add(self.batch, Ordering::Relaxed);
        self.counted = before.saturating_add(self.batch);
        self.batch = 0;
    }

    fn pos(&self, line: usize, col: usize) -> Pos {
        Pos {
            line: line.max(1) + self.line_offset,
            col: col + 1,
        }
    }

    /// Builds the documents of `src`, handing each to `sink` (with whether it is a null
    /// node: an empty document); returns the most collections that were open at once.
    fn run(mut self, src: &str, sink: &mut dyn FnMut(T, bool)) -> Result<usize, YamlError> {
        let result = self.events(src, sink);
        self.flush();
        result.map(|()| self.deepest)
    }

    fn events(&mut self, src: &str, sink: &mut dyn FnMut(T, bool)) -> Result<(), YamlError> {
        // kca reads no comments: without their events the parser does less per token.
        let mut options = granit_parser::Options::default();
        options.set_emit_comments(false);
        for item in Parser::new_from_str_with_options(src, options) {
            let (event, span) = item.map_err(|e| YamlError {
                over_budget: false,
                pos: self.pos(e.marker().line(), e.marker().col()),
                message: e.info(),
            })?;
            let pos = self.pos(span.start.line(), span.start.col());
            match event {
                Event::DocumentStart(..) => self.anchors.clear(),
                Event::Scalar(text, style, anchor, tag) => {
                    self.spend(1, 0, pos)?;
                    let tag = tag.map(|t| (t.handle().to_string(), t.suffix().to_string()));
                    let value = resolve_scalar(text, style, tag.as_ref(), pos)?;
                    self.push(Item::Scalar(Node { value, pos }), anchor, sink)?;
                }
                Event::SequenceStart(_, anchor, _) => {
                    self.spend(1, 0, pos)?;
                    self.check_depth(pos)?;
                    self.stack.push(Frame::Seq(Vec::new(), pos, anchor));
                }
                Event::MappingStart(_, anchor, _) => {
                    self.spend(1, 0, pos)?;
                    self.check_depth(pos)?;
                    self.stack
                        .push(Frame::Map(Box::new(MapFrame::new()), pos, anchor));
                }
                Event::SequenceEnd => {
                    if let Some(Frame::Seq(items, start, anchor)) = self.stack.pop() {
                        self.push(Item::Built(T::seq(items, start), start), anchor, sink)?;
                    }
                }
                Event::MappingEnd => {
                    if let Some(Frame::Map(map, start, anchor)) = self.stack.pop() {
                        let map = T::map(map.entries, start);
                        self.push(Item::Built(map, start), anchor, sink)?;
                    }
                }
                Event::Alias(id) => {
                    let Some(mut item) = self.anchors.get(&id).cloned() else {
                        return Err(YamlError {
                            over_budget: false,
                            pos,
                            message: "alias refers to an unknown anchor".into(),
                        });
                    };
                    let n = match &mut item {
                        Item::Scalar(node) => {
                            node.pos = pos;
                            1
                        }
                        Item::Built(t, at) => {
                            t.moved_to(pos);
                            *at = pos;
                            t.count()
                        }
                    };
                    self.spend(n, n, pos)?;
                    self.push(item, 0, sink)?;
                }
                Event::UnresolvedAlias(name) => {
                    return Err(YamlError {
                        over_budget: false,
                        pos,
                        message: format!("alias *{name} has no anchor"),
                    });
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Before a collection is opened.
    fn check_depth(&mut self, pos: Pos) -> Result<(), YamlError> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(YamlError {
                over_budget: false,
                pos,
                message: format!("nesting deeper than {MAX_DEPTH} levels"),
            });
        }
        self.deepest = self.deepest.max(self.stack.len() + 1);
        Ok(())
    }

    fn push(
        &mut self,
        item: Item<T>,
        anchor: usize,
        sink: &mut dyn FnMut(T, bool),
    ) -> Result<(), YamlError> {
        if anchor != 0 {
            self.anchors.insert(anchor, item.clone());
        }
        match self.stack.last_mut() {
            None => {
                let null = matches!(&item, Item::Scalar(n) if n.value == Yaml::Null);
                sink(item.into_tree(), null);
            }
            Some(Frame::Seq(items, ..)) => items.push(item.into_tree()),
            Some(Frame::Map(map, ..)) => match map.pending.take() {
                None => {
                    let node = match item {
                        Item::Scalar(node) => node,
                        Item::Built(_, pos) => {
                            return Err(YamlError {
                                over_budget: false,
                                pos,
                                message: "a mapping key must be a scalar".into(),
                            });
                        }
                    };
                    if let Some(first) = T::first_line_of(&map.entries, &node) {
                        return Err(YamlError {
                            over_budget: false,
                            pos: node.pos,
                            message: format!(
                                "duplicate key `{}` (first at line {first})",
                                key_text(&node),
                            ),
                        });
                    }
                    map.pending = Some(node);
                }
                Some(key) => T::add(&mut map.entries, key, item.into_tree()),
            },
        }
        Ok(())
    }
}

/// Resolves a scalar by the YAML 1.2 core schema (what Kubernetes' reader accepts for
/// manifests); quoted and block scalars are always strings.
fn resolve_scalar(
    text: std::borrow::Cow<'_, str>,
    style: ScalarStyle,
    tag: Option<&(String, String)>,
    pos: Pos,
) -> Result<Yaml, YamlError> {
    if let Some((handle, suffix)) = tag {
        if handle == "tag:yaml.org,2002:" {
            let bad = |what: &str| YamlError {
                over_budget: false,
                pos,
                message: format!("`{}` is not {what}", &*text),
            };
            return match suffix.as_str() {
                "str" => Ok(Yaml::Str(text.into_owned())),
                "null" => Ok(Yaml::Null),
                "bool" => plain_bool(&text)
                    .map(Yaml::Bool)
                    .ok_or_else(|| bad("a boolean")),
                "int" => plain_int(&text)
                    .map(Yaml::Int)
                    .ok_or_else(|| bad("an integer")),
                "float" => plain_float(&text)
                    .or_else(|| plain_int(&text).map(|i| i as f64))
                    .map(Yaml::Float)
                    .ok_or_else(|| bad("a number")),
                _ => Ok(Yaml::Str(text.into_owned())),
            };
        }
        return Ok(Yaml::Str(text.into_owned()));
    }
    if style != ScalarStyle::Plain {
        return Ok(Yaml::Str(text.into_owned()));
    }
    if matches!(&*text, "" | "~" | "null" | "Null" | "NULL") {
        return Ok(Yaml::Null);
    }
    if let Some(b) = plain_bool(&text) {
        return Ok(Yaml::Bool(b));
    }
    // Every core-schema number starts with a digit, a sign or a dot (`.inf`, `.5`).
    if text
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.'))
    {
        if let Some(i) = plain_int(&text) {
            return Ok(Yaml::Int(i));
        }
        if let Some(f) = plain_float(&text) {
            return Ok(Yaml::Float(f));
        }
    }
    Ok(Yaml::Str(text.into_owned()))
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
mod tests;

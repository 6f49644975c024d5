//! What the builder makes of the documents it reads: the position-carrying [`Node`]
//! tree, or JSON straight away (`parse_json_stream`: no tree of the whole document is
//! held beside its JSON), and the duplicate-key check of each.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::{Node, Pos, Yaml, key_text};

/// A document's values as the builder assembles them.
pub(super) trait Tree: Clone + Sized {
    /// A mapping being read: its entries so far and what its duplicate check needs.
    type Entries: Default;
    fn scalar(node: Node) -> Self;
    fn seq(items: Vec<Self>, pos: Pos) -> Self;
    fn map(entries: Self::Entries, pos: Pos) -> Self;
    /// The line of an earlier key of `entries` equal to `key` (as `==` on [`Yaml`]
    /// says: `1` and `"1"` differ, `0.0` and `-0.0` are one key).
    fn first_line_of(entries: &Self::Entries, key: &Node) -> Option<usize>;
    /// Adds an entry whose key [`Tree::first_line_of`] found new.
    fn add(entries: &mut Self::Entries, key: Node, value: Self);
    /// Nodes in this value, as an alias expanding it counts them.
    fn count(&self) -> usize;
    /// An alias puts a copy at `pos`.
    fn moved_to(&mut self, pos: Pos);
}

/// A [`Node`] mapping being read, and an index from key hashes to entries once it has
/// more keys than a scan is worth, so a duplicate is found in constant time.
#[derive(Default)]
pub(super) struct NodeEntries {
    entries: Vec<(Node, Node)>,
    /// Key hash → the first entry with a key of that hash.
    seen: HashMap<u64, usize, NoRehash>,
}

impl Tree for Node {
    type Entries = NodeEntries;
    fn scalar(node: Node) -> Node {
        node
    }
    fn seq(items: Vec<Node>, pos: Pos) -> Node {
        Node {
            value: Yaml::Seq(items),
            pos,
        }
    }
    fn map(entries: NodeEntries, pos: Pos) -> Node {
        Node {
            value: Yaml::Map(entries.entries),
            pos,
        }
    }
    fn first_line_of(e: &NodeEntries, key: &Node) -> Option<usize> {
        let key = &key.value;
        let scan = |from: usize| {
            e.entries[from..]
                .iter()
                .find(|(k, _)| &k.value == key)
                .map(|(k, _)| k.pos.line)
        };
        if e.entries.len() < SCAN_KEYS {
            return scan(0);
        }
        let at = *e.seen.get(&key_hash(key)?)?;
        if &e.entries[at].0.value == key {
            Some(e.entries[at].0.pos.line)
        } else {
            // Two keys with one hash (rare, and not to be provoked: the seed is random).
            scan(at + 1)
        }
    }
    fn add(e: &mut NodeEntries, key: Node, value: Node) {
        let n = e.entries.len();
        if n + 1 == SCAN_KEYS {
            // Crossing over: index every key so far.
            for (i, (k, _)) in e.entries.iter().enumerate() {
                if let Some(h) = key_hash(&k.value) {
                    e.seen.entry(h).or_insert(i);
                }
            }
        }
        if n + 1 >= SCAN_KEYS
            && let Some(h) = key_hash(&key.value)
        {
            e.seen.entry(h).or_insert(n);
        }
        e.entries.push((key, value));
    }
    fn count(&self) -> usize {
        count_nodes(self)
    }
    fn moved_to(&mut self, pos: Pos) {
        self.pos = pos;
    }
}

/// A JSON mapping being read. The map itself answers the duplicate check for string
/// keys (nearly all of them), so nothing per key is held beside it but its line: a big
/// mapping costs its JSON and 4 bytes a key while it is read. A key that is not a
/// string (`1`, `true`) is a JSON key by its text, and may meet a string key of that
/// text (`"1"`): a different YAML key, the same JSON one (the later value wins, as
/// `Node::into_json` has it). Such keys are kept apart, by their text, to tell them
/// from the string keys.
#[derive(Default)]
pub(super) struct JsonEntries {
    map: Map<String, Value>,
    /// The line of the first key of each entry of `map`, in the map's (insertion) order:
    /// serde_json's `preserve_order`, which kca builds with.
    lines: Vec<u32>,
    /// The keys that are not strings, by their JSON text.
    others: HashMap<String, Others>,
}

/// The keys of one JSON text that are not strings, and whether a string key has it too.
struct Others {
    keys: Vec<(Yaml, usize)>,
    string: StringKey,
}

enum StringKey {
    None,
    /// Before the first of `keys`: the key of its entry in the map (its line there).
    First,
    At(usize),
}

impl JsonEntries {
    /// The line of the first key of the map's entry `text` (one is there): found by a
    /// walk of the map, which only a duplicate (an error, once a parse) needs.
    fn line_of(&self, text: &str) -> Option<usize> {
        let i = self.map.keys().position(|k| k == text)?;
        self.lines.get(i).map(|&l| l as usize)
    }

    fn insert(&mut self, text: String, value: Value, line: usize) {
        let before = self.map.len();
        self.map.insert(text, value);
        if self.map.len() > before {
            self.lines.push(u32::try_from(line).unwrap_or(u32::MAX));
        }
    }
}

impl Tree for Value {
    type Entries = JsonEntries;
    fn scalar(node: Node) -> Value {
        node.into_json()
    }
    fn seq(items: Vec<Value>, _: Pos) -> Value {
        Value::Array(items)
    }
    fn map(e: JsonEntries, _: Pos) -> Value {
        Value::Object(e.map)
    }
    fn first_line_of(e: &JsonEntries, key: &Node) -> Option<usize> {
        match &key.value {
            Yaml::Str(s) => match e.others.get(s) {
                Some(o) => match o.string {
                    StringKey::None => None,
                    StringKey::First => e.line_of(s),
                    StringKey::At(line) => Some(line),
                },
                None if e.map.contains_key(s) => e.line_of(s),
                None => None,
            },
            other => {
                let text = key_text(key);
                // `0.0` and `-0.0` are one key with two texts.
                let zero = matches!(other, Yaml::Float(f) if *f == 0.0);
                let also = zero.then(|| if text == "0" { "-0" } else { "0" });
                std::iter::once(text.as_str())
                    .chain(also)
                    .filter_map(|t| e.others.get(t))
                    .flat_map(|o| &o.keys)
                    .find(|(k, _)| k == other)
                    .map(|&(_, line)| line)
            }
        }
    }
    fn add(e: &mut JsonEntries, key: Node, value: Value) {
        let line = key.pos.line;
        match key.value {
            Yaml::Str(s) => {
                if let Some(o) = e.others.get_mut(&s)
                    && matches!(o.string, StringKey::None)
                {
                    o.string = StringKey::At(line);
                }
                e.insert(s, value, line);
            }
            _ => {
                let text = key_text(&key);
                let string = if e.map.contains_key(&text) {
                    StringKey::First
                } else {
                    StringKey::None
                };
                e.others
                    .entry(text.clone())
                    .or_insert(Others {
                        keys: Vec::new(),
                        string,
                    })
                    .keys
                    .push((key.value, line));
                e.insert(text, value, line);
            }
        }
    }
    fn count(&self) -> usize {
        match self {
            Value::Array(items) => 1 + items.iter().map(Tree::count).sum::<usize>(),
            Value::Object(map) => 1 + map.values().map(|v| 1 + v.count()).sum::<usize>(),
            _ => 1,
        }
    }
    fn moved_to(&mut self, _: Pos) {}
}

pub(super) fn count_nodes(node: &Node) -> usize {
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

/// A hash of a scalar mapping key, for the duplicate-key check of a [`Node`] mapping:
/// equal keys (as `==` on [`Yaml`] says: `0.0` and `-0.0` are one key) hash alike, and
/// nothing is allocated. Seeded per process, so a file cannot be written to make its
/// keys collide.
fn key_hash(value: &Yaml) -> Option<u64> {
    use std::hash::{BuildHasher, Hash, Hasher};
    static STATE: std::sync::OnceLock<foldhash::fast::RandomState> = std::sync::OnceLock::new();
    let mut h = STATE.get_or_init(Default::default).build_hasher();
    match value {
        Yaml::Null => 0u8.hash(&mut h),
        Yaml::Bool(b) => (1u8, *b).hash(&mut h),
        Yaml::Int(i) => (2u8, *i).hash(&mut h),
        Yaml::Float(f) => (3u8, if *f == 0.0 { 0 } else { f.to_bits() }).hash(&mut h),
        Yaml::Str(s) => (4u8, s.as_str()).hash(&mut h),
        Yaml::Seq(_) | Yaml::Map(_) => return None,
    }
    Some(h.finish())
}

/// A mapping being built: its entries and the key waiting for its value.
pub(super) struct MapFrame<T: Tree> {
    pub(super) entries: T::Entries,
    pub(super) pending: Option<Node>,
}

impl<T: Tree> MapFrame<T> {
    pub(super) fn new() -> MapFrame<T> {
        MapFrame {
            entries: T::Entries::default(),
            pending: None,
        }
    }
}

/// The keys of `NodeEntries::seen` are hashes already.
#[derive(Default, Clone)]
struct NoRehash;

impl std::hash::BuildHasher for NoRehash {
    type Hasher = PassThrough;
    fn build_hasher(&self) -> PassThrough {
        PassThrough(0)
    }
}

struct PassThrough(u64);

impl std::hash::Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used (the keys are u64); fold anything else in.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// Mappings up to this many keys (nearly all of them) are checked by a scan.
const SCAN_KEYS: usize = 16;

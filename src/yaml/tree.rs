//! What the builder makes of the documents it reads: the position-carrying [`Node`]
//! tree, or JSON straight away (`parse_json_stream`: no tree of the whole document is
//! held beside its JSON), and the duplicate-key check both share.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::{Node, Pos, Yaml, key_text};

/// A document's values as the builder assembles them.
pub(super) trait Tree: Clone + Sized {
    /// A mapping being read: its entries so far, keys kept with their positions.
    type Entries: Default;
    fn scalar(node: Node) -> Self;
    fn seq(items: Vec<Self>, pos: Pos) -> Self;
    fn map(entries: Self::Entries, pos: Pos) -> Self;
    fn add(entries: &mut Self::Entries, key: Node, value: Self);
    fn len(entries: &Self::Entries) -> usize;
    /// Whether the key of entry `i` equals `key` (as `==` on [`Yaml`] says).
    fn same_key(entries: &Self::Entries, i: usize, key: &Yaml) -> bool;
    /// The line of the key of entry `i`.
    fn key_line(entries: &Self::Entries, i: usize) -> usize;
    /// [`key_hash`] of the key of entry `i`.
    fn hash_at(entries: &Self::Entries, i: usize) -> Option<u64>;
    /// Nodes in this value, as an alias expanding it counts them.
    fn count(&self) -> usize;
    /// An alias puts a copy at `pos`.
    fn moved_to(&mut self, pos: Pos);
}

impl Tree for Node {
    type Entries = Vec<(Node, Node)>;
    fn scalar(node: Node) -> Node {
        node
    }
    fn seq(items: Vec<Node>, pos: Pos) -> Node {
        Node {
            value: Yaml::Seq(items),
            pos,
        }
    }
    fn map(entries: Self::Entries, pos: Pos) -> Node {
        Node {
            value: Yaml::Map(entries),
            pos,
        }
    }
    fn add(entries: &mut Self::Entries, key: Node, value: Node) {
        entries.push((key, value));
    }
    fn len(entries: &Self::Entries) -> usize {
        entries.len()
    }
    fn same_key(entries: &Self::Entries, i: usize, key: &Yaml) -> bool {
        &entries[i].0.value == key
    }
    fn key_line(entries: &Self::Entries, i: usize) -> usize {
        entries[i].0.pos.line
    }
    fn hash_at(entries: &Self::Entries, i: usize) -> Option<u64> {
        key_hash(&entries[i].0.value)
    }
    fn count(&self) -> usize {
        count_nodes(self)
    }
    fn moved_to(&mut self, pos: Pos) {
        self.pos = pos;
    }
}

/// JSON as [`Node::into_json`] makes it. What the duplicate check needs of each key of
/// an open mapping (which compares YAML keys: `1` and `"1"` differ) is kept small — its
/// hash, line and scalar, a string key's text only in the map — and dropped when it
/// closes, so a big mapping's keys are not held twice.
impl Tree for Value {
    type Entries = (Vec<KeyRec>, Map<String, Value>);
    fn scalar(node: Node) -> Value {
        node.into_json()
    }
    fn seq(items: Vec<Value>, _: Pos) -> Value {
        Value::Array(items)
    }
    fn map((_, map): Self::Entries, _: Pos) -> Value {
        Value::Object(map)
    }
    fn add((keys, map): &mut Self::Entries, key: Node, value: Value) {
        keys.push(KeyRec {
            hash: key_hash(&key.value).unwrap_or(0),
            line: key.pos.line,
            scalar: match &key.value {
                Yaml::Str(_) => Yaml::Null,
                other => other.clone(),
            },
            text: matches!(key.value, Yaml::Str(_)),
        });
        let text = match key.value {
            Yaml::Str(s) => s,
            _ => key_text(&key),
        };
        map.insert(text, value);
    }
    fn len((keys, _): &Self::Entries) -> usize {
        keys.len()
    }
    fn same_key((keys, map): &Self::Entries, i: usize, key: &Yaml) -> bool {
        let k = &keys[i];
        match key {
            // A string key's text is in the map: one with that text and this key's hash
            // (seeded per process, so no file can make two texts share one) is this key.
            Yaml::Str(s) => k.text && Some(k.hash) == key_hash(key) && map.contains_key(s),
            other => !k.text && &k.scalar == other,
        }
    }
    fn key_line((keys, _): &Self::Entries, i: usize) -> usize {
        keys[i].line
    }
    fn hash_at((keys, _): &Self::Entries, i: usize) -> Option<u64> {
        Some(keys[i].hash)
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

/// One key of a JSON mapping being read, for the duplicate check.
#[derive(Debug)]
pub(super) struct KeyRec {
    hash: u64,
    line: usize,
    /// The key when it is not a string (a string key is `text`, its text in the map).
    scalar: Yaml,
    text: bool,
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

/// A hash of a scalar mapping key, for the duplicate-key check: equal keys (as `==` on
/// [`Yaml`] says: `0.0` and `-0.0` are one key) hash alike, and nothing is allocated.
/// Seeded per process, so a file cannot be written to make its keys collide.
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

/// A mapping being built: its entries, the key waiting for its value, and an index from
/// key hashes to entries, so a duplicate is found in constant time.
pub(super) struct MapFrame<T: Tree> {
    pub(super) entries: T::Entries,
    pub(super) pending: Option<Node>,
    /// Key hash → the first entry with a key of that hash; built once the mapping has
    /// more keys than a scan is worth.
    seen: HashMap<u64, usize, NoRehash>,
}

/// The keys of `MapFrame::seen` are hashes already.
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

impl<T: Tree> MapFrame<T> {
    pub(super) fn new() -> MapFrame<T> {
        MapFrame {
            entries: T::Entries::default(),
            pending: None,
            seen: HashMap::default(),
        }
    }

    /// The line of an earlier key equal to `key`, if any.
    pub(super) fn first_line_of(&self, key: &Yaml) -> Option<usize> {
        let len = T::len(&self.entries);
        let scan = |from: usize| {
            (from..len)
                .find(|&i| T::same_key(&self.entries, i, key))
                .map(|i| T::key_line(&self.entries, i))
        };
        if len < SCAN_KEYS {
            return scan(0);
        }
        let at = *self.seen.get(&key_hash(key)?)?;
        if T::same_key(&self.entries, at, key) {
            Some(T::key_line(&self.entries, at))
        } else {
            // Two keys with one hash (rare, and not to be provoked: the seed is random).
            scan(at + 1)
        }
    }

    /// Records `key`, about to become entry `len`, for later checks.
    pub(super) fn remember(&mut self, key: &Node) {
        let n = T::len(&self.entries);
        if n + 1 < SCAN_KEYS {
            return;
        }
        if n + 1 == SCAN_KEYS {
            // Crossing over: index every key so far.
            for i in 0..n {
                if let Some(h) = T::hash_at(&self.entries, i) {
                    self.seen.entry(h).or_insert(i);
                }
            }
        }
        if let Some(h) = key_hash(&key.value) {
            self.seen.entry(h).or_insert(n);
        }
    }
}

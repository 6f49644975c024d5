//! Bounds on one value of a template (see [`super::bound`]).

use tera::Value;

/// Bounds on one value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Val {
    /// Memory, in bytes.
    pub size: u64,
    /// Length of its text (a string, or a value written out).
    pub text: u64,
    /// Items a loop over it can take (list items, characters, entries).
    pub len: u64,
    /// Nesting: 0 for a string or number, 1 for a list of them, …
    pub depth: u32,
    /// Memory of any one of its items (a list's item, a text's character, an entry).
    pub item: u64,
    /// Whether it may be a text (a loop over a text finds each character from the start).
    pub textual: bool,
}

impl Val {
    /// Memory of a value itself (`serde_json::Value`).
    pub const NODE: u64 = 32;
    /// A list item's memory beyond its value, and its `, ` when written.
    pub const ITEM: u64 = 40;
    /// An object entry's memory beyond its key and value.
    pub const ENTRY: u64 = 96;
    /// The longest text of a number (an `f64` such as 1e300 is written in full).
    const NUMBER_TEXT: u64 = 330;

    pub fn small() -> Val {
        Val::string(8)
    }

    pub fn string(text: u64) -> Val {
        let size = Self::NODE.saturating_add(text);
        Val {
            size,
            text,
            len: text,
            depth: 0,
            item: size,
            textual: true,
        }
    }

    pub fn number() -> Val {
        Val {
            size: Self::NODE,
            text: Self::NUMBER_TEXT,
            len: 0,
            depth: 0,
            item: Self::NODE,
            textual: false,
        }
    }

    /// A list (or object) of `len` items, each at most `item` bytes.
    pub fn list(size: u64, text: u64, len: u64, depth: u32, item: u64) -> Val {
        Val {
            size,
            text,
            len,
            depth,
            item,
            textual: false,
        }
    }

    /// An item (or character, or entry) of this value.
    pub fn element(self) -> Val {
        Val {
            size: self.item,
            // A number item is written longer than its memory.
            text: self.text.min(self.item.max(Self::NUMBER_TEXT)),
            len: self.item,
            depth: self.depth.saturating_sub(1),
            item: self.item,
            textual: true,
        }
    }

    pub fn max(a: Val, b: Val) -> Val {
        Val {
            size: a.size.max(b.size),
            text: a.text.max(b.text),
            len: a.len.max(b.len),
            depth: a.depth.max(b.depth),
            item: a.item.max(b.item),
            textual: a.textual || b.textual,
        }
    }

    /// Exact bounds of a value kca provides.
    pub fn of(v: &Value) -> Val {
        match v {
            Value::String(s) => Val::string(s.len() as u64),
            Value::Number(n) => Val {
                text: n.to_string().len() as u64,
                ..Val::number()
            },
            Value::Null | Value::Bool(_) => Val::small(),
            Value::Array(items) => {
                let mut out = Val::list(Self::NODE, 2, items.len() as u64, 1, 0);
                for i in items.iter().map(Val::of) {
                    out.size += i.size + Self::ITEM;
                    out.text += i.text + 2;
                    out.depth = out.depth.max(i.depth + 1);
                    out.item = out.item.max(i.size);
                }
                out
            }
            Value::Object(m) => {
                let mut out = Val::list(Self::NODE, 8, m.len() as u64, 1, 0);
                for (k, i) in m.iter().map(|(k, v)| (k, Val::of(v))) {
                    out.size += k.len() as u64 + i.size + Self::ENTRY;
                    out.depth = out.depth.max(i.depth + 1);
                    out.item = out.item.max(i.size.max(Self::NODE + k.len() as u64));
                }
                out
            }
        }
    }
}

//! Turns position-carrying YAML nodes into typed content, collecting every problem with
//! its position instead of stopping at the first (unknown fields, wrong types, missing
//! fields). The content models (`quiz`, `lab`) are written with these helpers.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeSet;

use crate::diag::Collector;
use crate::error::{Msg, msg};
use crate::settings::Lang;
use crate::yaml::{Node, Pos, Yaml};

/// Text in the course's languages: a plain string (the same in every language) or a map
/// `{ja: …, en: …}`. Japanese is the course's own language; English is second.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct Text {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ja: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub en: Option<String>,
}

impl Text {
    pub fn plain(s: impl Into<String>) -> Self {
        let s = s.into();
        Text {
            ja: Some(s.clone()),
            en: Some(s),
        }
    }

    /// The text in `lang`, falling back to the other language.
    pub fn get(&self, lang: Lang) -> &str {
        let (first, second) = match lang {
            Lang::Ja => (&self.ja, &self.en),
            Lang::En => (&self.en, &self.ja),
        };
        first.as_deref().or(second.as_deref()).unwrap_or("")
    }
}

/// A mapping being decoded: remembers which keys were read so `finish` can report the rest.
pub struct Fields<'n> {
    node: &'n Node,
    entries: &'n [(Node, Node)],
    /// The keys asked for, in the order first asked (a handful per mapping: a list is
    /// cheaper than a set for the many small mappings of a large file).
    used: RefCell<Vec<String>>,
}

impl<'n> Fields<'n> {
    pub fn pos(&self) -> Pos {
        self.node.pos
    }

    /// The value under `key`, if present (and not null).
    pub fn opt(&self, key: &str) -> Option<&'n Node> {
        let mut used = self.used.borrow_mut();
        if !used.iter().any(|u| u == key) {
            used.push(key.to_string());
        }
        self.entries
            .iter()
            .find(|(k, _)| key_is(k, key))
            .map(|(_, v)| v)
            .filter(|v| v.value != Yaml::Null)
    }

    /// The value under `key`; a "missing field" error when absent.
    pub fn req(&self, d: &mut Decoder<'_>, key: &str) -> Option<&'n Node> {
        let found = self.opt(key);
        if found.is_none() {
            d.error_hint(
                self.node.pos,
                msg(
                    format!("フィールド `{key}` がありません"),
                    format!("missing field `{key}`"),
                ),
                msg(
                    format!("このマッピングに `{key}:` を加えます"),
                    format!("add `{key}:` to this mapping"),
                ),
            );
        }
        found
    }

    /// Where the key `key` itself is written (for a caret on `key:` rather than its value).
    pub fn key_pos(&self, key: &str) -> Option<Pos> {
        self.entries
            .iter()
            .find(|(k, _)| key_is(k, key))
            .map(|(k, _)| k.pos)
    }

    /// Whether `key` is present at all.
    pub fn has(&self, key: &str) -> bool {
        self.entries.iter().any(|(k, _)| key_is(k, key))
    }

    /// Reports every key that was never read as unknown, with a suggestion when one is
    /// close. `context` names the mapping (`(ja, en)`, e.g. `("クイズのメタデータ",
    /// "quiz metadata")`).
    pub fn finish(self, d: &mut Decoder<'_>, context: (&str, &str)) {
        let (ctx_ja, ctx_en) = context;
        let asked = self.used.into_inner();
        let mut used: Option<BTreeSet<String>> = None;
        for (k, _) in self.entries {
            let name = key_name(k).unwrap_or_else(|| format!("{:?}", k.value).into());
            if asked.iter().any(|u| *u == name) {
                continue;
            }
            // Past the file's cap a problem is only counted: no suggestion to look for.
            if d.diags.is_full() {
                d.diags.count_dropped(crate::diag::Severity::Error);
                continue;
            }
            // Only a mapping with an unknown key needs the names in order, for the hint.
            let used = used.get_or_insert_with(|| asked.iter().cloned().collect());
            let hint = match closest(&name, used.iter().map(String::as_str)) {
                Some(near) => msg(
                    format!("`{near}` の書き誤りではありませんか?"),
                    format!("did you mean `{near}`?"),
                ),
                None if used.is_empty() => msg(
                    format!("{ctx_ja}にはフィールドがありません"),
                    format!("{ctx_en} takes no fields"),
                ),
                None => {
                    let names = used
                        .iter()
                        .map(|u| format!("`{u}`"))
                        .collect::<Vec<_>>()
                        .join(", ");
                    msg(
                        format!("{ctx_ja}のフィールドは {names} です"),
                        format!("{ctx_en} takes: {names}"),
                    )
                }
            };
            d.error_hint(
                k.pos,
                msg(
                    format!("{ctx_ja}に未知のフィールド `{name}` があります"),
                    format!("unknown field `{name}` in {ctx_en}"),
                ),
                hint,
            );
        }
    }
}

/// A mapping key as text: `true:` and `1:` are keys too (YAML reads them as a boolean
/// and a number, but content authors mean the words).
fn key_name(k: &Node) -> Option<Cow<'_, str>> {
    match &k.value {
        Yaml::Str(s) => Some(Cow::Borrowed(s)),
        Yaml::Bool(b) => Some(Cow::Borrowed(if *b { "true" } else { "false" })),
        Yaml::Int(i) => Some(Cow::Owned(i.to_string())),
        _ => None,
    }
}

/// Whether the key `k` is written `key` (as [`key_name`] reads it), without building
/// its text for the common string key.
fn key_is(k: &Node, key: &str) -> bool {
    match &k.value {
        Yaml::Str(s) => s == key,
        _ => key_name(k).as_deref() == Some(key),
    }
}

/// A known name within edit distance 2 of `name`, if any.
pub fn closest<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    known
        .map(|k| (strsim::levenshtein(name, k), k))
        .filter(|(dist, _)| *dist <= 2)
        .min_by_key(|(dist, _)| *dist)
        .map(|(_, k)| k)
}

/// Lists shorter than this are decoded on one thread.
const PARALLEL_ITEMS: usize = if cfg!(test) { 256 } else { 2048 };

/// Decodes nodes of one file, collecting diagnostics.
pub struct Decoder<'a> {
    pub diags: Collector<'a>,
}

impl<'a> Decoder<'a> {
    pub fn new(diags: Collector<'a>) -> Self {
        Decoder { diags }
    }

    /// A problem in both languages (`msg(ja, en)`), or data the same in both.
    pub fn error(&mut self, pos: Pos, message: impl Into<Msg>) {
        self.diags.error(pos, message);
    }

    pub fn error_hint(&mut self, pos: Pos, message: impl Into<Msg>, hint: impl Into<Msg>) {
        self.diags.error_hint(pos, message, hint);
    }

    /// `want` names what was expected, in both languages.
    fn wrong_type(&mut self, node: &Node, want: (&str, &str)) {
        let found = node.type_name();
        self.error(
            node.pos,
            msg(
                format!("{} が必要ですが、{found} が書かれています", want.0),
                format!("expected {}, found {found}", want.1),
            ),
        );
    }

    pub fn fields<'n>(&mut self, node: &'n Node) -> Option<Fields<'n>> {
        match &node.value {
            Yaml::Map(entries) => Some(Fields {
                node,
                entries,
                used: RefCell::new(Vec::new()),
            }),
            _ => {
                self.wrong_type(node, ("マッピング", "a mapping"));
                None
            }
        }
    }

    pub fn string(&mut self, node: &Node) -> Option<String> {
        match &node.value {
            Yaml::Str(s) => self.printable(node, s),
            // Unquoted numbers and booleans are fine where a string is wanted (ids, answers).
            Yaml::Int(i) => Some(i.to_string()),
            Yaml::Float(f) => Some(f.to_string()),
            Yaml::Bool(b) => Some(b.to_string()),
            _ => {
                self.wrong_type(node, ("文字列", "a string"));
                None
            }
        }
    }

    /// `s`, unless it holds a character that would act on a terminal rather than show
    /// (an escape sequence, a bidi override, a carriage return, an XML non-character):
    /// kca prints content as written, so such text is refused where it is written.
    fn printable(&mut self, node: &Node, s: &str) -> Option<String> {
        let Some(c) = crate::escape::first_unprintable(s) else {
            return Some(s.to_string());
        };
        let code = format!("U+{:04X}", c as u32);
        self.error_hint(
            node.pos,
            msg(
                format!("文字列に表示できない制御文字 {code} があります"),
                format!("the string holds the control character {code}, which kca does not print"),
            ),
            msg(
                "その文字を消します (改行とタブは使えます)",
                "remove it (line breaks and tabs are fine)",
            ),
        );
        None
    }

    /// A non-empty string without surrounding spaces (ids, names).
    pub fn ident(&mut self, node: &Node) -> Option<String> {
        let s = self.string(node)?;
        if s.trim().is_empty() || s.trim() != s {
            self.error(
                node.pos,
                msg(
                    "前後に空白のない、空でない名前が必要です",
                    "expected a non-empty name without surrounding spaces",
                ),
            );
            return None;
        }
        Some(s)
    }

    pub fn bool(&mut self, node: &Node) -> Option<bool> {
        match node.value {
            Yaml::Bool(b) => Some(b),
            _ => {
                self.wrong_type(node, ("true か false", "true or false"));
                None
            }
        }
    }

    pub fn int(&mut self, node: &Node) -> Option<i64> {
        match node.value {
            Yaml::Int(i) => Some(i),
            _ => {
                self.wrong_type(node, ("整数", "an integer"));
                None
            }
        }
    }

    /// A whole number within `range`.
    pub fn int_in(&mut self, node: &Node, range: std::ops::RangeInclusive<i64>) -> Option<i64> {
        let i = self.int(node)?;
        if !range.contains(&i) {
            let (lo, hi) = (range.start(), range.end());
            self.error(
                node.pos,
                msg(
                    format!("{i} は範囲 {lo}..={hi} の外です"),
                    format!("{i} is out of range {lo}..={hi}"),
                ),
            );
            return None;
        }
        Some(i)
    }

    pub fn number(&mut self, node: &Node) -> Option<f64> {
        match node.value {
            Yaml::Int(i) => Some(i as f64),
            Yaml::Float(f) if f.is_finite() => Some(f),
            _ => {
                self.wrong_type(node, ("数値", "a number"));
                None
            }
        }
    }

    pub fn list<'n>(&mut self, node: &'n Node) -> Option<&'n [Node]> {
        match &node.value {
            Yaml::Seq(items) => Some(items),
            _ => {
                self.wrong_type(node, ("リスト", "a list"));
                None
            }
        }
    }

    /// `decode` applied to every item, in order; a long list (a quiz of thousands of
    /// questions) is decoded in two halves on two threads, with the problems kept in
    /// the order one pass would report them.
    pub fn each_parallel<I: Sync, T: Send>(
        &mut self,
        items: &[I],
        decode: impl Fn(&mut Decoder<'_>, &I) -> Option<T> + Sync,
    ) -> Vec<T> {
        let halves = crate::par::halves(
            items,
            PARALLEL_ITEMS,
            || Decoder::new(self.diags.sibling()),
            decode,
        );
        let mut out = Vec::with_capacity(items.len());
        for (d, decoded) in halves {
            self.diags.absorb(d.diags);
            out.extend(decoded);
        }
        out
    }

    pub fn strings(&mut self, node: &Node) -> Vec<String> {
        match self.list(node) {
            Some(items) => items.iter().filter_map(|n| self.string(n)).collect(),
            None => Vec::new(),
        }
    }

    /// Localisable text: a string, or `{ja: …, en: …}` with at least one of them.
    pub fn text(&mut self, node: &Node) -> Option<Text> {
        if let Yaml::Str(s) = &node.value {
            return self.printable(node, s).map(Text::plain);
        }
        if !matches!(node.value, Yaml::Map(_)) {
            self.wrong_type(
                node,
                (
                    "テキスト (文字列か {ja: …, en: …})",
                    "text (a string or {ja: …, en: …})",
                ),
            );
            return None;
        }
        let f = self.fields(node)?;
        let (ja_node, en_node) = (f.opt("ja"), f.opt("en"));
        let ja = ja_node.and_then(|n| self.string(n));
        let en = en_node.and_then(|n| self.string(n));
        f.finish(
            self,
            ("テキスト (言語は ja, en)", "text (languages ja, en)"),
        );
        if ja_node.is_some() || en_node.is_some() {
            // A language refused (reported where it is written) leaves no text.
            return (ja.is_some() || en.is_some()).then_some(Text { ja, en });
        }
        self.error_hint(
            node.pos,
            msg("テキストにどの言語もありません", "text has no language"),
            msg("`ja:` (と `en:`) を書きます", "write `ja:` (and `en:`)"),
        );
        None
    }

    pub fn texts(&mut self, node: &Node) -> Vec<Text> {
        match self.list(node) {
            Some(items) => items.iter().filter_map(|n| self.text(n)).collect(),
            None => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_one;
    use std::path::Path;

    #[test]
    fn unknown_fields_suggest_the_closest_known_one() {
        let src = "id: x\ntitel: y\nzzz: 1\n";
        let node = parse_one(src).unwrap();
        let mut d = Decoder::new(Collector::new(Path::new("f.yaml"), src));
        let f = d.fields(&node).unwrap();
        f.req(&mut d, "id");
        f.opt("title");
        f.finish(&mut d, ("クイズ", "a quiz"));
        let diags = d.diags.finish();
        assert_eq!(diags.len(), 2);
        assert_eq!(diags[0].pos, Pos { line: 2, col: 1 });
        assert_eq!(diags[0].hint.as_deref(), Some("did you mean `title`?"));
        assert!(diags[1].hint.as_deref().unwrap().contains("`id`"));
    }

    #[test]
    fn text_accepts_string_or_language_map() {
        let src = "a: plain\nb: {ja: こんにちは, en: hello}\nc: {fr: bonjour}\nd: 3\n";
        let node = parse_one(src).unwrap();
        let mut d = Decoder::new(Collector::new(Path::new("f.yaml"), src));
        let a = d.text(node.get("a").unwrap()).unwrap();
        assert_eq!(a.get(Lang::En), "plain");
        let b = d.text(node.get("b").unwrap()).unwrap();
        assert_eq!((b.get(Lang::Ja), b.get(Lang::En)), ("こんにちは", "hello"));
        assert!(d.text(node.get("c").unwrap()).is_none());
        assert!(d.text(node.get("d").unwrap()).is_none());
        assert_eq!(d.diags.finish().len(), 3);
    }

    #[test]
    fn missing_field_points_at_the_mapping() {
        let src = "x:\n  a: 1\n";
        let node = parse_one(src).unwrap();
        let mut d = Decoder::new(Collector::new(Path::new("f.yaml"), src));
        let f = d.fields(node.get("x").unwrap()).unwrap();
        assert!(f.req(&mut d, "b").is_none());
        let diags = d.diags.finish();
        assert_eq!(diags[0].message, "missing field `b`");
        assert_eq!(diags[0].pos, Pos { line: 2, col: 3 });
    }
}

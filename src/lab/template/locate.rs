//! Where a tag of a template is. tera's syntax tree carries no positions, so the tags are
//! found again in the text, in order, and matched to the tree's nodes in the order the
//! parser made them (every `{{ }}`, `{% %}` and `{# #}` of a template becomes, or closes,
//! exactly one node). When the two counts disagree the positions are dropped rather than
//! guessed: an error then names the tag's text without a line.

use std::collections::HashMap;

use tera::ast::Node;

/// Positions of the tags a tree's nodes open, keyed by the node's address.
pub struct Tags<'t> {
    text: &'t str,
    at: HashMap<usize, usize>,
    longest: usize,
}

impl<'t> Tags<'t> {
    pub fn new(text: &'t str, ast: &[Node]) -> Self {
        let starts = scan(text);
        let longest = starts
            .iter()
            .map(|&s| tag_end(&text[s..]).unwrap_or(text.len() - s))
            .max()
            .unwrap_or(0);
        let mut m = Matcher {
            starts: &starts,
            next: 0,
            at: HashMap::new(),
        };
        m.nodes(ast);
        let at = if m.next == starts.len() {
            m.at
        } else {
            HashMap::new()
        };
        Tags { text, at, longest }
    }

    /// The length of the longest tag, in bytes.
    pub fn longest(&self) -> usize {
        self.longest
    }

    /// `line L, column C (`{% tag %}`)`, or the node kind when its place is not known.
    pub fn describe<T>(&self, key: &T, fallback: &str) -> String {
        let Some(&start) = self.at.get(&(key as *const T as usize)) else {
            return fallback.to_string();
        };
        let before = &self.text[..start];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        format!(
            "line {line}, column {col} (`{}`)",
            snippet(&self.text[start..])
        )
    }
}

/// Blocks (`if`, `for`, `filter`, `block`, `macro`) may nest this deep.
pub const MAX_NESTING: usize = 32;
/// A tag may hold this many operators (`+ - * / % ~ < > = !`, `and`, `or`, `not`, `in`,
/// `is`): tera builds and walks an expression's tree recursively, one level per operator.
pub const MAX_OPERATORS: usize = 100;
/// Parentheses and brackets may nest this deep within a tag.
pub const MAX_BRACKETS: usize = 32;

/// Refuses, before tera parses it, a template whose blocks or expressions nest deeper
/// than tera's recursive parser and renderer can take on a thread's stack.
pub fn check_nesting(text: &str) -> Result<(), String> {
    let mut depth = 0usize;
    for start in scan(text) {
        let rest = &text[start..];
        let end = tag_end(rest).unwrap_or(rest.len());
        let tag = &rest[..end];
        let here = || {
            let before = &text[..start];
            let line = before.matches('\n').count() + 1;
            let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("line {line}, column {col} (`{}`)", snippet(rest))
        };
        if tag.starts_with("{%") {
            match tag_word(tag) {
                "if" | "for" | "filter" | "block" | "macro" => depth += 1,
                "endif" | "endfor" | "endfilter" | "endblock" | "endmacro" => {
                    depth = depth.saturating_sub(1)
                }
                _ => {}
            }
            if depth > MAX_NESTING {
                return Err(format!(
                    "{}: blocks nest more than {MAX_NESTING} deep; a starter needs far fewer",
                    here()
                ));
            }
        }
        if tag.starts_with("{#") {
            continue;
        }
        let (ops, brackets) = operators(tag);
        if ops > MAX_OPERATORS || brackets > MAX_BRACKETS {
            return Err(format!(
                "{}: the tag has {ops} operators and brackets nested {brackets} deep; a tag \
                 may have at most {MAX_OPERATORS} operators and {MAX_BRACKETS} levels of \
                 brackets (split it with `{{% set %}}`)",
                here()
            ));
        }
    }
    Ok(())
}

/// The operators in a tag and its deepest nesting of brackets, outside quoted strings.
fn operators(tag: &str) -> (usize, usize) {
    let inner = tag[2..tag.len().saturating_sub(2).max(2)].trim_matches('-');
    let (mut ops, mut depth, mut deepest) = (0usize, 0usize, 0usize);
    let mut quote = None;
    let mut word = String::new();
    for c in inner.chars() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            continue;
        }
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        if matches!(word.as_str(), "and" | "or" | "not" | "in" | "is") {
            ops += 1;
        }
        word.clear();
        match c {
            '"' | '\'' | '`' => quote = Some(c),
            '(' | '[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            ')' | ']' => depth = depth.saturating_sub(1),
            '+' | '-' | '*' | '/' | '%' | '~' | '<' | '>' | '=' | '!' => ops += 1,
            _ => {}
        }
    }
    (ops, deepest)
}

/// The tag at the start of `rest`, shortened to one line of at most 60 characters.
fn snippet(rest: &str) -> String {
    let end = tag_end(rest).unwrap_or(rest.len());
    let tag: String = rest[..end].split_whitespace().collect::<Vec<_>>().join(" ");
    let chars: Vec<char> = tag.chars().collect();
    if chars.len() > 60 {
        let head: String = chars[..56].iter().collect();
        let tail: String = chars[chars.len() - 2..].iter().collect();
        format!("{head} …{tail}")
    } else {
        tag
    }
}

/// Byte offsets of every tag (`{{`, `{%`, `{#`), skipping what `{% raw %}` encloses.
fn scan(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut in_raw = false;
    while let Some(off) = text[i..].find('{') {
        let start = i + off;
        let rest = &text[start..];
        let Some(end) =
            (rest.starts_with("{{") || rest.starts_with("{%") || rest.starts_with("{#"))
                .then(|| tag_end(rest))
                .flatten()
        else {
            i = start + 1;
            continue;
        };
        let word = tag_word(&rest[..end]);
        if in_raw {
            if rest.starts_with("{%") && word == "endraw" {
                out.push(start);
                in_raw = false;
            } else {
                i = start + 1;
                continue;
            }
        } else {
            out.push(start);
            in_raw = rest.starts_with("{%") && word == "raw";
        }
        i = start + end;
    }
    out
}

/// The length of the tag at the start of `rest` (up to its closing `}}`, `%}` or `#}`),
/// skipping quoted strings inside `{{ }}` and `{% %}`.
fn tag_end(rest: &str) -> Option<usize> {
    let close = match &rest[..2] {
        "{{" => "}}",
        "{%" => "%}",
        _ => return rest.find("#}").map(|e| e + 2),
    };
    let b = rest.as_bytes();
    let mut i = 2;
    while i < b.len() {
        match b[i] {
            q @ (b'"' | b'\'' | b'`') => {
                i += 1 + rest[i + 1..].find(q as char)?;
            }
            _ if rest[i..].starts_with(close) => return Some(i + 2),
            _ => {}
        }
        i += 1;
    }
    None
}

/// The first word inside a tag: `raw` in `{%- raw -%}`.
fn tag_word(tag: &str) -> &str {
    tag[2..tag.len().saturating_sub(2).max(2)]
        .trim_matches('-')
        .split_whitespace()
        .next()
        .unwrap_or("")
}

struct Matcher<'s> {
    starts: &'s [usize],
    next: usize,
    at: HashMap<usize, usize>,
}

impl Matcher<'_> {
    /// Takes the next tag; records it for `key` when given.
    fn take<T>(&mut self, key: Option<&T>) {
        if let (Some(k), Some(&s)) = (key, self.starts.get(self.next)) {
            self.at.insert(k as *const T as usize, s);
        }
        self.next += 1;
    }

    fn nodes(&mut self, nodes: &[Node]) {
        for n in nodes {
            self.node(n);
        }
    }

    fn node(&mut self, node: &Node) {
        match node {
            Node::Text(_) => {}
            Node::Raw(..) => {
                self.take(Some(node));
                self.take::<()>(None);
            }
            Node::FilterSection(_, f, _) => {
                self.take(Some(node));
                self.nodes(&f.body);
                self.take::<()>(None);
            }
            Node::Block(_, b, _) => {
                self.take(Some(node));
                self.nodes(&b.body);
                self.take::<()>(None);
            }
            Node::MacroDefinition(_, m, _) => {
                self.take(Some(node));
                self.nodes(&m.body);
                self.take::<()>(None);
            }
            Node::Forloop(_, f, _) => {
                self.take(Some(node));
                self.nodes(&f.body);
                if let Some(e) = &f.empty_body {
                    self.take::<()>(None);
                    self.nodes(e);
                }
                self.take::<()>(None);
            }
            Node::If(i, _) => {
                if let Some(&s) = self.starts.get(self.next) {
                    self.at.insert(node as *const Node as usize, s);
                }
                for (_, cond, body) in &i.conditions {
                    self.take(Some(cond));
                    self.nodes(body);
                }
                if let Some((_, body)) = &i.otherwise {
                    self.take::<()>(None);
                    self.nodes(body);
                }
                self.take::<()>(None);
            }
            _ => self.take(Some(node)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ast(text: &str) -> tera::Template {
        tera::Template::new("t", None, text).unwrap()
    }

    #[test]
    fn tags_are_found_again_in_the_text() {
        let text = "a {{ x }}\n{% raw %}{{ not }}{% endraw %}{# c #}\n  {% if \"%}\" == x %}\
                    {% set y = x ~ \"}}\" %}{% endif %}";
        let t = ast(text);
        let tags = Tags::new(text, &t.ast);
        let Some(Node::If(i, _)) = t.ast.iter().find(|n| matches!(n, Node::If(..))) else {
            panic!("{:?}", t.ast)
        };
        assert_eq!(
            tags.describe(&i.conditions[0].1, "?"),
            "line 3, column 3 (`{% if \"%}\" == x %}`)"
        );
        let set = &i.conditions[0].2[0];
        assert_eq!(
            tags.describe(set, "?"),
            "line 3, column 21 (`{% set y = x ~ \"}}\" %}`)"
        );
        assert_eq!(
            tags.describe(&t.ast[1], "?"),
            "line 1, column 3 (`{{ x }}`)"
        );
    }
}

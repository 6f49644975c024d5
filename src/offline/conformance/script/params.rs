//! Parameter expansion beyond `${NAME}` as bash does it (bash manual, "Shell Parameter
//! Expansion", "Pattern Matching"): `${NAME:-w}`, `${NAME-w}`, `${#NAME}`, the prefix and
//! suffix removals `${NAME#p}`, `${NAME##p}`, `${NAME%p}`, `${NAME%%p}`, and the
//! substitutions `${NAME/p/r}`, `${NAME//p/r}`, `${NAME/#p/r}`, `${NAME/%p/r}`. Patterns
//! are globs: `*`, `?`, `[…]` (`!`/`^` negation, ranges), a backslash or quotes make a
//! character literal; `$` expansions in them are globs too. An unquoted `&` in a
//! replacement (bash 5.2's `patsub_replacement`) and other forms are skips.

use super::{Io, Shell, Unwind};

/// Longest value a pattern is matched against, and most matcher steps of one expansion.
const MAX_VALUE: usize = 1 << 16;
const MAX_WORK: usize = 50_000_000;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Glob {
    Lit(char),
    Any,
    Star,
    /// `[…]`: negated, single characters and ranges.
    Class(bool, Vec<(char, char)>),
}

/// The index of the `}` closing a `${` whose body starts at `i`.
pub(super) fn brace_end(chars: &[char], mut i: usize) -> Option<usize> {
    let mut depth = 1usize;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '\'' => {
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
            }
            '{' if i > 0 && chars[i - 1] == '$' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

impl Shell<'_> {
    /// The value of `${inner}`.
    pub(super) fn parameter(&mut self, inner: &str, io: &mut Io) -> Result<String, Unwind> {
        let unsupported = || Unwind::Skip(format!("parameter expansion `${{{inner}}}`"));
        if let Some(name) = inner.strip_prefix('#').filter(|n| super::is_name(n)) {
            return Ok(self.var(name, io)?.chars().count().to_string());
        }
        let end = inner
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(inner.len());
        let (name, rest) = inner.split_at(end);
        if !super::is_name(name) {
            return Err(unsupported());
        }
        if rest.is_empty() {
            return self.var(name, io);
        }
        for (op, colon) in [(":-", true), ("-", false)] {
            if let Some(word) = rest.strip_prefix(op) {
                let v = self.vars.get(name).cloned();
                let set = v.as_ref().is_some_and(|v| !colon || !v.is_empty());
                return match v {
                    Some(v) if set => Ok(v),
                    _ => self.single(word, io),
                };
            }
        }
        let value = self.var(name, io)?;
        if value.len() > MAX_VALUE {
            return Err(Unwind::Skip(format!(
                "`${{{inner}}}` of a value past the replay's bound"
            )));
        }
        let s: Vec<char> = value.chars().collect();
        let (op, pat_raw) = match rest {
            r if r.starts_with("##") => ("##", &r[2..]),
            r if r.starts_with("%%") => ("%%", &r[2..]),
            r if r.starts_with('#') => ("#", &r[1..]),
            r if r.starts_with('%') => ("%", &r[1..]),
            r if r.starts_with("//") => ("//", &r[2..]),
            r if r.starts_with("/#") => ("/#", &r[2..]),
            r if r.starts_with("/%") => ("/%", &r[2..]),
            r if r.starts_with('/') => ("/", &r[1..]),
            _ => return Err(unsupported()),
        };
        if op.starts_with('/') {
            let (pat_raw, rep_raw) = split_replacement(pat_raw);
            if has_unquoted(rep_raw, '&') {
                return Err(Unwind::Skip(format!(
                    "`&` in the replacement of `${{{inner}}}` (patsub_replacement)"
                )));
            }
            let pat = self.glob(pat_raw, io)?;
            let rep: Vec<char> = self.single(rep_raw, io)?.chars().collect();
            return substitute(&s, &pat, &rep, op).map(|v| v.into_iter().collect());
        }
        let pat = self.glob(pat_raw, io)?;
        let cut = removal(&s, &pat, op)?;
        Ok(cut.into_iter().collect())
    }

    /// A pattern word as globs.
    fn glob(&mut self, raw: &str, io: &mut Io) -> Result<Vec<Glob>, Unwind> {
        let cs: Vec<char> = raw.chars().collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i < cs.len() {
            match cs[i] {
                '\\' => {
                    if let Some(c) = cs.get(i + 1) {
                        out.push(Glob::Lit(*c));
                    }
                    i += 2;
                }
                '\'' => {
                    i += 1;
                    while i < cs.len() && cs[i] != '\'' {
                        out.push(Glob::Lit(cs[i]));
                        i += 1;
                    }
                    i += 1;
                }
                '"' => {
                    let start = i;
                    i += 1;
                    while i < cs.len() && cs[i] != '"' {
                        i += if cs[i] == '\\' { 2 } else { 1 };
                    }
                    i += 1;
                    let quoted: String = cs[start..i.min(cs.len())].iter().collect();
                    out.extend(self.single(&quoted, io)?.chars().map(Glob::Lit));
                }
                '$' => {
                    let (v, next) = self.dollar(&cs, i, io)?;
                    i = next;
                    match v {
                        Some(v) => out.extend(parse_glob(&v.chars().collect::<Vec<_>>())),
                        None => out.push(Glob::Lit('$')),
                    }
                }
                _ => {
                    let start = i;
                    while i < cs.len() && !matches!(cs[i], '\\' | '\'' | '"' | '$') {
                        i += 1;
                    }
                    // A class may hold the characters above; read it whole.
                    out.extend(parse_glob(&cs[start..i]));
                }
            }
        }
        Ok(out)
    }
}

/// `pat/rep` split at the first `/` not escaped or quoted.
fn split_replacement(s: &str) -> (&str, &str) {
    let mut quote = None;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match (c, quote) {
            _ if escaped => escaped = false,
            ('\\', _) => escaped = true,
            ('\'' | '"', None) => quote = Some(c),
            (q, Some(open)) if q == open => quote = None,
            ('/', None) => return (&s[..i], &s[i + 1..]),
            _ => {}
        }
    }
    (s, "")
}

fn has_unquoted(s: &str, want: char) -> bool {
    let mut quote = None;
    let mut escaped = false;
    for c in s.chars() {
        match (c, quote) {
            _ if escaped => escaped = false,
            ('\\', _) => escaped = true,
            ('\'' | '"', None) => quote = Some(c),
            (q, Some(open)) if q == open => quote = None,
            (c, None) if c == want => return true,
            _ => {}
        }
    }
    false
}

/// Unquoted pattern text as globs.
fn parse_glob(cs: &[char]) -> Vec<Glob> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cs.len() {
        match cs[i] {
            '*' => out.push(Glob::Star),
            '?' => out.push(Glob::Any),
            '[' => {
                if let Some((class, next)) = class(cs, i + 1) {
                    out.push(class);
                    i = next;
                    continue;
                }
                out.push(Glob::Lit('['));
            }
            c => out.push(Glob::Lit(c)),
        }
        i += 1;
    }
    out
}

/// A bracket expression from after its `[`; the class and the index after its `]`.
fn class(cs: &[char], mut i: usize) -> Option<(Glob, usize)> {
    let negated = matches!(cs.get(i), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    let first = i;
    while i < cs.len() {
        let c = cs[i];
        if c == ']' && i > first {
            return Some((Glob::Class(negated, ranges), i + 1));
        }
        if cs.get(i + 1) == Some(&'-') && cs.get(i + 2).is_some_and(|e| *e != ']') {
            ranges.push((c, cs[i + 2]));
            i += 3;
        } else {
            ranges.push((c, c));
            i += 1;
        }
    }
    None
}

fn one(g: &Glob, c: char) -> bool {
    match g {
        Glob::Lit(l) => *l == c,
        Glob::Any => true,
        Glob::Star => false,
        Glob::Class(neg, ranges) => ranges.iter().any(|(a, b)| *a <= c && c <= *b) != *neg,
    }
}

/// Every `end` (ascending) where `pat` matches `s[start..end]`.
fn ends(pat: &[Glob], s: &[char], start: usize, work: &mut usize) -> Result<Vec<usize>, Unwind> {
    let m = pat.len();
    let close = |set: &mut Vec<bool>| {
        for k in 0..m {
            if set[k] && pat[k] == Glob::Star {
                set[k + 1] = true;
            }
        }
    };
    let mut set = vec![false; m + 1];
    set[0] = true;
    close(&mut set);
    let mut out = Vec::new();
    if set[m] {
        out.push(start);
    }
    for (j, c) in s.iter().enumerate().skip(start) {
        *work += m + 1;
        if *work > MAX_WORK {
            return Err(Unwind::Skip(
                "a pattern match past the replay's bound".into(),
            ));
        }
        let mut next = vec![false; m + 1];
        for k in 0..m {
            if !set[k] {
                continue;
            }
            if pat[k] == Glob::Star {
                next[k] = true;
            } else if one(&pat[k], *c) {
                next[k + 1] = true;
            }
        }
        close(&mut next);
        if !next.iter().any(|b| *b) {
            break;
        }
        if next[m] {
            out.push(j + 1);
        }
        set = next;
    }
    Ok(out)
}

/// `#`, `##`, `%`, `%%`: the value without the shortest or longest matching prefix or
/// suffix.
fn removal(s: &[char], pat: &[Glob], op: &str) -> Result<Vec<char>, Unwind> {
    let mut work = 0;
    match op {
        "#" | "##" => {
            let e = ends(pat, s, 0, &mut work)?;
            let cut = if op == "#" { e.first() } else { e.last() };
            Ok(s[cut.copied().unwrap_or(0)..].to_vec())
        }
        _ => {
            let starts: Vec<usize> = if op == "%" {
                (0..=s.len()).rev().collect()
            } else {
                (0..=s.len()).collect()
            };
            for st in starts {
                if ends(pat, s, st, &mut work)?.last() == Some(&s.len()) {
                    return Ok(s[..st].to_vec());
                }
            }
            Ok(s.to_vec())
        }
    }
}

/// `/`, `//`, `/#`, `/%`: the longest match replaced (first, all, at the start, at the
/// end); an empty pattern changes nothing.
fn substitute(s: &[char], pat: &[Glob], rep: &[char], op: &str) -> Result<Vec<char>, Unwind> {
    if pat.is_empty() {
        return Ok(s.to_vec());
    }
    let mut work = 0;
    let mut out = Vec::new();
    let mut i = 0;
    while i <= s.len() {
        let e = ends(pat, s, i, &mut work)?;
        let end = match op {
            "/%" => e.last().filter(|e| **e == s.len()),
            _ => e.last(),
        };
        match end {
            Some(&end) if op != "/#" || i == 0 => {
                out.extend_from_slice(rep);
                if end == i {
                    // An empty match: keep the character and go on.
                    if let Some(c) = s.get(i) {
                        out.push(*c);
                    }
                    i += 1;
                } else {
                    i = end;
                }
                if matches!(op, "/" | "/#") {
                    out.extend_from_slice(s.get(i..).unwrap_or_default());
                    return Ok(out);
                }
            }
            _ => {
                if op == "/#" {
                    return Ok(s.to_vec());
                }
                if let Some(c) = s.get(i) {
                    out.push(*c);
                }
                i += 1;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(p: &str) -> Vec<Glob> {
        parse_glob(&p.chars().collect::<Vec<_>>())
    }

    fn sub(s: &str, p: Vec<Glob>, op: &str) -> String {
        let cs: Vec<char> = s.chars().collect();
        substitute(&cs, &p, &[], op)
            .unwrap_or_default()
            .into_iter()
            .collect()
    }

    #[test]
    fn patterns_match_as_bash_globs() {
        let lits = |s: &str| s.chars().map(Glob::Lit).collect::<Vec<_>>();
        let filters = "\"[Event,*,*][Node,*,*][Node/?*,*,*][APIService,*,*]\"";
        assert_eq!(
            sub(filters, lits("[Node,*,*]"), "//"),
            "\"[Event,*,*][Node/?*,*,*][APIService,*,*]\""
        );
        // `\[Node\/?\*,\*,\*\]`: `?` any one character, the rest literal.
        let mut p = lits("[Node/");
        p.push(Glob::Any);
        p.extend(lits("*,*,*]"));
        assert_eq!(
            sub(filters, p, "//"),
            "\"[Event,*,*][Node,*,*][APIService,*,*]\""
        );
        assert_eq!(sub("aXbXc", g("X"), "/"), "abXc");
        assert_eq!(sub("aXbXc", g("X*"), "//"), "a");
        assert_eq!(sub("abc", g("[ab]"), "//"), "c");
        assert_eq!(sub("abc", g("[!a]"), "//"), "a");
        let cs: Vec<char> = "a.b.c".chars().collect();
        let r = |p: &str, op: &str| -> String {
            removal(&cs, &g(p), op)
                .unwrap_or_default()
                .into_iter()
                .collect()
        };
        assert_eq!(r("*.", "#"), "b.c");
        assert_eq!(r("*.", "##"), "c");
        assert_eq!(r(".*", "%"), "a.b");
        assert_eq!(r(".*", "%%"), "a");
        assert_eq!(r("?", "%"), "a.b.");
    }
}

//! The POSIX-shell subset the suite's scripts are written in, parsed: words (kept raw,
//! expanded when run), simple commands with assignments and redirections, pipelines,
//! `&&`/`||`, `;`/newline/`&` lists, `if`/`elif`/`else`, `for … in`, `( … )`, `{ … }`,
//! here-documents on stdin (`<<WORD`, `<<'WORD'`, `<<-WORD`: the body is the lines after
//! the command's line up to the delimiter's; quoting the delimiter keeps it unexpanded).
//! `while`/`until` loops, functions (`name() { … }`, `function name { … }`), `$((…))`
//! (scanned as a word; evaluated by [`super::arith`]) and `cmd &` (run or refused by
//! [`super::jobs`]). Anything else (`case`, backquotes, `((…))`) is [`Unsupported`],
//! never a guess. Running is [`super::exec`]'s.

/// A parse that stopped on shell syntax outside the subset (or invalid).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported(pub String);

/// Nesting and size bounds of a parse.
const MAX_DEPTH: usize = 64;
const MAX_TOKENS: usize = 20_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Simple {
        assigns: Vec<(String, String)>,
        words: Vec<String>,
        redirs: Vec<Redir>,
    },
    /// `! a | b | c`.
    Pipeline {
        negate: bool,
        stages: Vec<Node>,
    },
    /// `a && b || c`: `true` for `&&`.
    AndOr {
        first: Box<Node>,
        rest: Vec<(bool, Node)>,
    },
    List(Vec<Node>),
    If {
        arms: Vec<(Node, Node)>,
        otherwise: Option<Box<Node>>,
        redirs: Vec<Redir>,
    },
    For {
        var: String,
        /// `None`: no `in` (the positional parameters, none here).
        items: Option<Vec<String>>,
        body: Box<Node>,
        redirs: Vec<Redir>,
    },
    Subshell(Box<Node>, Vec<Redir>),
    Group(Box<Node>, Vec<Redir>),
    /// `while cond; do body; done` (`until`: the condition negated).
    Loop {
        until: bool,
        cond: Box<Node>,
        body: Box<Node>,
        redirs: Vec<Redir>,
    },
    /// `name() body` or `function name body`.
    Function {
        name: String,
        body: Box<Node>,
    },
    /// `cmd &`.
    Background(Box<Node>),
}

/// `N>word`, `N>>word`, `N<word`, `N>&M`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redir {
    pub fd: u8,
    pub kind: RedirKind,
    /// The raw word (a file) or the fd number of a `>&`.
    pub target: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirKind {
    Out,
    Append,
    In,
    Dup,
    /// A here-document whose body is expanded (the target is the body, raw).
    Here,
    /// A here-document with a quoted delimiter: its body as written.
    HereRaw,
}

/// A here-document whose body the lexer reads after the current line.
struct Pending {
    /// The index of its target token.
    tok: usize,
    delimiter: String,
    strip_tabs: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Word(String),
    Newline,
    Semi,
    Amp,
    Pipe,
    AndIf,
    OrIf,
    LParen,
    RParen,
    Redir(u8, RedirKind),
}

/// Parses a script.
pub fn parse(src: &str) -> Result<Node, Unsupported> {
    let toks = lex(src)?;
    let mut p = Parser {
        toks,
        pos: 0,
        depth: 0,
    };
    let list = p.list(&[])?;
    if p.pos < p.toks.len() {
        return Err(Unsupported(format!(
            "unexpected {:?} in the script",
            p.toks[p.pos]
        )));
    }
    Ok(list)
}

fn lex(src: &str) -> Result<Vec<Tok>, Unsupported> {
    let chars: Vec<char> = src.chars().collect();
    let mut toks = Vec::new();
    let mut pending: Vec<Pending> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if toks.len() > MAX_TOKENS {
            return Err(Unsupported("script longer than the replay's bound".into()));
        }
        let c = chars[i];
        match c {
            ' ' | '\t' | '\r' => i += 1,
            '\\' if chars.get(i + 1) == Some(&'\n') => i += 2,
            '\n' => {
                toks.push(Tok::Newline);
                i += 1;
                for p in std::mem::take(&mut pending) {
                    let (body, next) = here_body(&chars, i, &p)?;
                    toks[p.tok] = Tok::Word(body);
                    i = next;
                }
            }
            '#' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            ';' => {
                if chars.get(i + 1) == Some(&';') {
                    return Err(Unsupported("`;;` (case)".into()));
                }
                toks.push(Tok::Semi);
                i += 1;
            }
            '&' if chars.get(i + 1) == Some(&'&') => {
                toks.push(Tok::AndIf);
                i += 2;
            }
            '&' if chars.get(i + 1) == Some(&'>') => {
                return Err(Unsupported("`&>` redirection".into()));
            }
            '&' => {
                toks.push(Tok::Amp);
                i += 1;
            }
            '|' if chars.get(i + 1) == Some(&'|') => {
                toks.push(Tok::OrIf);
                i += 2;
            }
            '|' => {
                toks.push(Tok::Pipe);
                i += 1;
            }
            '(' if chars.get(i + 1) == Some(&'(') && word_start(&toks, &chars, i) => {
                return Err(Unsupported("arithmetic command `((…))`".into()));
            }
            '(' => {
                toks.push(Tok::LParen);
                i += 1;
            }
            ')' => {
                toks.push(Tok::RParen);
                i += 1;
            }
            '<' if chars.get(i + 1) == Some(&'<') => {
                i = here_document(&chars, i + 2, &mut toks, &mut pending)?;
            }
            '>' | '<' => {
                i = redirection(&chars, i, None, &mut toks)?;
            }
            d if d.is_ascii_digit()
                && matches!(chars.get(i + 1), Some('>' | '<'))
                && word_start(&toks, &chars, i) =>
            {
                let fd = d as u8 - b'0';
                i = redirection(&chars, i + 1, Some(fd), &mut toks)?;
            }
            _ => {
                let (w, next) = word(&chars, i)?;
                toks.push(Tok::Word(w));
                i = next;
            }
        }
    }
    if !pending.is_empty() {
        return Err(Unsupported("a here-document without its body".into()));
    }
    Ok(toks)
}

/// `<<[-]WORD` from `i` (after `<<`): the redirection and a target the body fills in.
fn here_document(
    chars: &[char],
    mut i: usize,
    toks: &mut Vec<Tok>,
    pending: &mut Vec<Pending>,
) -> Result<usize, Unsupported> {
    let strip_tabs = chars.get(i) == Some(&'-');
    if strip_tabs {
        i += 1;
    }
    while matches!(chars.get(i), Some(' ' | '\t')) {
        i += 1;
    }
    if chars.get(i) == Some(&'<') {
        return Err(Unsupported("here-string (`<<<`)".into()));
    }
    let (raw, next) = word(chars, i)?;
    if raw.is_empty() {
        return Err(Unsupported("a here-document without a delimiter".into()));
    }
    let quoted = raw.contains(['\'', '"', '\\']);
    let delimiter: String = raw
        .chars()
        .filter(|c| !matches!(c, '\'' | '"' | '\\'))
        .collect();
    let kind = if quoted {
        RedirKind::HereRaw
    } else {
        RedirKind::Here
    };
    toks.push(Tok::Redir(0, kind));
    pending.push(Pending {
        tok: toks.len(),
        delimiter,
        strip_tabs,
    });
    toks.push(Tok::Word(String::new()));
    Ok(next)
}

/// The body of `p` from line start `i` up to its delimiter's line, and the index after.
fn here_body(chars: &[char], mut i: usize, p: &Pending) -> Result<(String, usize), Unsupported> {
    let mut body = String::new();
    while i < chars.len() {
        let end = chars[i..]
            .iter()
            .position(|c| *c == '\n')
            .map_or(chars.len(), |n| i + n);
        let line: String = chars[i..end].iter().collect();
        let line = if p.strip_tabs {
            line.trim_start_matches('\t').to_string()
        } else {
            line
        };
        i = (end + 1).min(chars.len());
        if line.trim_end_matches('\r') == p.delimiter {
            return Ok((body, i));
        }
        body.push_str(&line);
        body.push('\n');
    }
    Err(Unsupported(format!(
        "here-document without its delimiter `{}`",
        p.delimiter
    )))
}

/// A digit before `>` is an fd only at the start of a word.
fn word_start(_toks: &[Tok], chars: &[char], i: usize) -> bool {
    i == 0
        || matches!(
            chars[i - 1],
            ' ' | '\t' | '\n' | ';' | '|' | '&' | '(' | ')'
        )
}

fn redirection(
    chars: &[char],
    mut i: usize,
    fd: Option<u8>,
    toks: &mut Vec<Tok>,
) -> Result<usize, Unsupported> {
    let c = chars[i];
    i += 1;
    let kind = if c == '<' {
        if chars.get(i) == Some(&'<') {
            return Err(Unsupported("here-document after an fd number".into()));
        }
        RedirKind::In
    } else if chars.get(i) == Some(&'>') {
        i += 1;
        RedirKind::Append
    } else if chars.get(i) == Some(&'&') {
        i += 1;
        RedirKind::Dup
    } else {
        RedirKind::Out
    };
    let fd = fd.unwrap_or(if kind == RedirKind::In { 0 } else { 1 });
    toks.push(Tok::Redir(fd, kind));
    Ok(i)
}

/// One word, raw (quotes kept), from `i`; ends at an unquoted blank or operator.
fn word(chars: &[char], mut i: usize) -> Result<(String, usize), Unsupported> {
    let start = i;
    while i < chars.len() {
        match chars[i] {
            ' ' | '\t' | '\r' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>' => break,
            '\\' => i += 2,
            '\'' => {
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                if i >= chars.len() {
                    return Err(Unsupported("unterminated `'`".into()));
                }
                i += 1;
            }
            '"' => i = double_quoted_end(chars, i + 1)?,
            '`' => return Err(Unsupported("backquote command substitution".into())),
            '$' if chars.get(i + 1) == Some(&'(') => {
                i = substitution_end(chars, i + 2)?;
            }
            _ => i += 1,
        }
    }
    let end = i.min(chars.len());
    Ok((chars[start..end].iter().collect(), end))
}

/// The index after the closing `"` of a string opened before `i`.
fn double_quoted_end(chars: &[char], mut i: usize) -> Result<usize, Unsupported> {
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '"' => return Ok(i + 1),
            '`' => return Err(Unsupported("backquote command substitution".into())),
            '$' if chars.get(i + 1) == Some(&'(') => i = substitution_end(chars, i + 2)?,
            _ => i += 1,
        }
    }
    Err(Unsupported("unterminated `\"`".into()))
}

/// The index after the `)` that closes a `$(` whose body starts at `i`.
pub(super) fn substitution_end(chars: &[char], mut i: usize) -> Result<usize, Unsupported> {
    let mut depth = 1usize;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '\'' => {
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            }
            '"' => i = double_quoted_end(chars, i + 1)?,
            '(' => {
                depth += 1;
                i += 1;
            }
            ')' => {
                depth -= 1;
                i += 1;
                if depth == 0 {
                    return Ok(i);
                }
            }
            _ => i += 1,
        }
        if depth > MAX_DEPTH {
            return Err(Unsupported("nesting deeper than the replay's bound".into()));
        }
    }
    Err(Unsupported("unterminated `$(`".into()))
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    depth: usize,
}

const RESERVED: &[&str] = &[
    "then", "else", "elif", "fi", "do", "done", "}", "esac", "in",
];

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn peek_word(&self) -> Option<&str> {
        match self.peek() {
            Some(Tok::Word(w)) => Some(w.as_str()),
            _ => None,
        }
    }

    fn skip_newlines(&mut self) {
        while matches!(self.peek(), Some(Tok::Newline)) {
            self.pos += 1;
        }
    }

    fn expect_word(&mut self, w: &str) -> Result<(), Unsupported> {
        if self.peek_word() == Some(w) {
            self.pos += 1;
            Ok(())
        } else {
            Err(Unsupported(format!("expected `{w}`")))
        }
    }

    /// A list up to one of `stops` (reserved words) or `)`, or the end.
    fn list(&mut self, stops: &[&str]) -> Result<Node, Unsupported> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Unsupported("nesting deeper than the replay's bound".into()));
        }
        let mut items = Vec::new();
        loop {
            while matches!(self.peek(), Some(Tok::Newline | Tok::Semi)) {
                self.pos += 1;
            }
            match self.peek() {
                None | Some(Tok::RParen) => break,
                Some(Tok::Word(w)) if stops.contains(&w.as_str()) => break,
                _ => {}
            }
            items.push(self.and_or()?);
            match self.peek() {
                Some(Tok::Semi | Tok::Newline) => self.pos += 1,
                Some(Tok::Amp) => {
                    self.pos += 1;
                    if let Some(last) = items.pop() {
                        items.push(Node::Background(Box::new(last)));
                    }
                }
                _ => {}
            }
        }
        self.depth -= 1;
        Ok(Node::List(items))
    }

    fn and_or(&mut self) -> Result<Node, Unsupported> {
        let first = self.pipeline()?;
        let mut rest = Vec::new();
        loop {
            let and = match self.peek() {
                Some(Tok::AndIf) => true,
                Some(Tok::OrIf) => false,
                _ => break,
            };
            self.pos += 1;
            self.skip_newlines();
            rest.push((and, self.pipeline()?));
        }
        if rest.is_empty() {
            return Ok(first);
        }
        Ok(Node::AndOr {
            first: Box::new(first),
            rest,
        })
    }

    fn pipeline(&mut self) -> Result<Node, Unsupported> {
        let negate = self.peek_word() == Some("!");
        if negate {
            self.pos += 1;
        }
        let mut stages = vec![self.command()?];
        while matches!(self.peek(), Some(Tok::Pipe)) {
            self.pos += 1;
            self.skip_newlines();
            stages.push(self.command()?);
        }
        if stages.len() == 1 && !negate {
            return Ok(stages.remove(0));
        }
        Ok(Node::Pipeline { negate, stages })
    }

    fn command(&mut self) -> Result<Node, Unsupported> {
        match self.peek() {
            Some(Tok::LParen) => {
                self.pos += 1;
                let body = self.list(&[])?;
                if !matches!(self.peek(), Some(Tok::RParen)) {
                    return Err(Unsupported("unclosed `(`".into()));
                }
                self.pos += 1;
                let redirs = self.redirs()?;
                return Ok(Node::Subshell(Box::new(body), redirs));
            }
            Some(Tok::Word(w)) => match w.as_str() {
                "if" => return self.if_clause(),
                "for" => return self.for_clause(),
                "{" => {
                    self.pos += 1;
                    let body = self.list(&["}"])?;
                    self.expect_word("}")?;
                    let redirs = self.redirs()?;
                    return Ok(Node::Group(Box::new(body), redirs));
                }
                "while" | "until" => return self.loop_clause(),
                "function" => return self.function_keyword(),
                "case" | "select" => {
                    return Err(Unsupported(format!("`{w}`")));
                }
                w if RESERVED.contains(&w) => {
                    return Err(Unsupported(format!("unexpected `{w}`")));
                }
                _ => {}
            },
            _ => {}
        }
        self.simple()
    }

    fn redirs(&mut self) -> Result<Vec<Redir>, Unsupported> {
        let mut out = Vec::new();
        while let Some(Tok::Redir(fd, kind)) = self.peek().cloned() {
            self.pos += 1;
            let Some(Tok::Word(target)) = self.peek().cloned() else {
                return Err(Unsupported("a redirection without a target".into()));
            };
            self.pos += 1;
            out.push(Redir { fd, kind, target });
        }
        Ok(out)
    }

    fn simple(&mut self) -> Result<Node, Unsupported> {
        let mut assigns = Vec::new();
        let mut words = Vec::new();
        let mut redirs = Vec::new();
        loop {
            match self.peek().cloned() {
                Some(Tok::Word(w)) => {
                    self.pos += 1;
                    if words.is_empty()
                        && let Some((name, value)) = assignment(&w)
                    {
                        assigns.push((name, value));
                    } else {
                        if w.ends_with("()") {
                            return Err(Unsupported("function definition".into()));
                        }
                        words.push(w);
                    }
                }
                Some(Tok::Redir(..)) => redirs.extend(self.redirs()?),
                Some(Tok::LParen)
                    if words.len() == 1 && assigns.is_empty() && redirs.is_empty() =>
                {
                    self.pos += 1;
                    if !matches!(self.peek(), Some(Tok::RParen)) {
                        return Err(Unsupported("`(` after a command word".into()));
                    }
                    self.pos += 1;
                    let name = words.remove(0);
                    return self.function_body(name);
                }
                Some(Tok::LParen) if !words.is_empty() => {
                    return Err(Unsupported("`(` after a command word".into()));
                }
                _ => break,
            }
        }
        if assigns.is_empty() && words.is_empty() && redirs.is_empty() {
            return Err(Unsupported(format!(
                "expected a command, found {:?}",
                self.peek()
            )));
        }
        Ok(Node::Simple {
            assigns,
            words,
            redirs,
        })
    }

    fn if_clause(&mut self) -> Result<Node, Unsupported> {
        self.expect_word("if")?;
        let mut arms = Vec::new();
        let mut otherwise = None;
        loop {
            let cond = self.list(&["then"])?;
            self.expect_word("then")?;
            let body = self.list(&["elif", "else", "fi"])?;
            arms.push((cond, body));
            match self.peek_word() {
                Some("elif") => self.pos += 1,
                Some("else") => {
                    self.pos += 1;
                    otherwise = Some(Box::new(self.list(&["fi"])?));
                    self.expect_word("fi")?;
                    break;
                }
                _ => {
                    self.expect_word("fi")?;
                    break;
                }
            }
        }
        let redirs = self.redirs()?;
        Ok(Node::If {
            arms,
            otherwise,
            redirs,
        })
    }

    /// `while`/`until` list `do` list `done`.
    fn loop_clause(&mut self) -> Result<Node, Unsupported> {
        let until = self.peek_word() == Some("until");
        self.pos += 1;
        let cond = self.list(&["do"])?;
        self.expect_word("do")?;
        let body = self.list(&["done"])?;
        self.expect_word("done")?;
        let redirs = self.redirs()?;
        Ok(Node::Loop {
            until,
            cond: Box::new(cond),
            body: Box::new(body),
            redirs,
        })
    }

    /// `function name [()] body`.
    fn function_keyword(&mut self) -> Result<Node, Unsupported> {
        self.expect_word("function")?;
        let Some(name) = self.peek_word().map(str::to_string) else {
            return Err(Unsupported("`function` without a name".into()));
        };
        self.pos += 1;
        if matches!(self.peek(), Some(Tok::LParen)) {
            self.pos += 1;
            if !matches!(self.peek(), Some(Tok::RParen)) {
                return Err(Unsupported("`function` with parameters".into()));
            }
            self.pos += 1;
        }
        self.function_body(name)
    }

    /// A function's body: a compound command (`{ … }`, `( … )`, `if`, a loop).
    fn function_body(&mut self, name: String) -> Result<Node, Unsupported> {
        if !is_name(&name) {
            return Err(Unsupported(format!("function name `{name}`")));
        }
        self.skip_newlines();
        let compound = matches!(self.peek(), Some(Tok::LParen))
            || matches!(
                self.peek_word(),
                Some("{" | "if" | "for" | "while" | "until")
            );
        if !compound {
            return Err(Unsupported(format!("the body of function `{name}`")));
        }
        let body = self.command()?;
        Ok(Node::Function {
            name,
            body: Box::new(body),
        })
    }

    fn for_clause(&mut self) -> Result<Node, Unsupported> {
        self.expect_word("for")?;
        let Some(var) = self.peek_word().map(str::to_string) else {
            return Err(Unsupported("`for` without a name".into()));
        };
        self.pos += 1;
        self.skip_newlines();
        let items = if self.peek_word() == Some("in") {
            self.pos += 1;
            let mut items = Vec::new();
            while let Some(Tok::Word(w)) = self.peek().cloned() {
                self.pos += 1;
                items.push(w);
            }
            Some(items)
        } else {
            None
        };
        while matches!(self.peek(), Some(Tok::Newline | Tok::Semi)) {
            self.pos += 1;
        }
        self.expect_word("do")?;
        let body = self.list(&["done"])?;
        self.expect_word("done")?;
        let redirs = self.redirs()?;
        Ok(Node::For {
            var,
            items,
            body: Box::new(body),
            redirs,
        })
    }
}

/// A shell variable's or function's name.
pub(super) fn is_name(s: &str) -> bool {
    let mut cs = s.chars();
    cs.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `NAME=value` (raw value).
fn assignment(w: &str) -> Option<(String, String)> {
    let (name, value) = w.split_once('=')?;
    let mut cs = name.chars();
    let first = cs.next()?;
    if !(first.is_ascii_alphabetic() || first == '_')
        || !cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return None;
    }
    Some((name.to_string(), value.to_string()))
}

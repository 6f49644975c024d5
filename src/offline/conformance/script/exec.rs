//! Runs a parsed script ([`super::shell`]) as `sh -c` would: expansion (quotes, `$VAR`,
//! `${VAR}`, `$?`, `$(…)`, field splitting of unquoted expansions), redirections to
//! streams, `/dev/null` or a per-run virtual file map (never the disk), pipelines, `set -e`,
//! builtins, the text tools of [`super::tools`], and the outside programs of a [`Host`]
//! (kubectl). Output that the replay knows only in part carries an [`Unknown`]: reading it
//! (a pipe, `$(…)`) stops the run with a skip instead of guessing.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::shell::{Node, Redir, RedirKind, parse, substitution_end};
use super::tools;

#[path = "curl.rs"]
pub mod curl;
#[path = "helper.rs"]
mod helper;
#[path = "jobs.rs"]
mod jobs;
#[path = "params.rs"]
mod params;

/// The path `KUBECONFIG` holds in a script: chainsaw's temporary kubeconfig, whose real
/// name is random (a stand-in here; the file itself is not readable in the replay).
pub const CHAINSAW_KUBECONFIG: &str = "/tmp/chainsaw-kubeconfig";

/// Bounds of one run.
const MAX_STEPS: usize = 100_000;
const MAX_DEPTH: usize = 48;
const MAX_OUTPUT: usize = 4 << 20;

/// Why a text is not exactly what the live command prints.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Unknown {
    pub why: String,
    /// Its lines are one per item even so (a table without headers): `wc -l` may count.
    pub lines_exact: bool,
    /// Words whose presence in the live text the known part decides (the unknown parts
    /// never hold them): `contains(…, word)` may be judged ([`super::words`]).
    pub decides: Vec<String>,
    /// The text is one JSON document exact at and under these JSON pointers (the rest
    /// is the API server's): a reader of only those parts may read it
    /// ([`Text::exact_at`]).
    pub exact_under: Vec<String>,
}

/// Text on a stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Text {
    pub s: String,
    pub unknown: Option<Unknown>,
}

impl Text {
    pub fn known(s: impl Into<String>) -> Text {
        Text {
            s: s.into(),
            unknown: None,
        }
    }

    fn push(&mut self, t: &Text) {
        let was_empty = self.s.is_empty();
        self.s.push_str(&t.s);
        // Text beside a document makes it no longer one document.
        let one_document = was_empty || t.s.is_empty();
        if !one_document && let Some(u) = self.unknown.as_mut() {
            u.exact_under.clear();
        }
        match (&mut self.unknown, &t.unknown) {
            (None, _) => {
                self.unknown.clone_from(&t.unknown);
                if !one_document && let Some(u) = self.unknown.as_mut() {
                    u.exact_under.clear();
                }
            }
            // Both in part: a word stays decided where both decide it, or where a part
            // that decides it holds it (then the whole holds it).
            (Some(u), Some(v)) => {
                let before = &self.s[..self.s.len() - t.s.len()];
                let mut keep: Vec<String> = u
                    .decides
                    .iter()
                    .filter(|w| v.decides.contains(w) || before.contains(w.as_str()))
                    .cloned()
                    .collect();
                for w in &v.decides {
                    if t.s.contains(w.as_str()) && !keep.contains(w) {
                        keep.push(w.clone());
                    }
                }
                u.decides = keep;
            }
            (Some(_), None) => {}
        }
    }

    /// The text for a reader of the one JSON value at `pointer` in it: all of it when
    /// known, or when it is a document exact there.
    pub fn exact_at(&self, pointer: &str) -> Option<&str> {
        match &self.unknown {
            None => Some(&self.s),
            Some(u) => u
                .exact_under
                .iter()
                .any(|p| {
                    pointer
                        .strip_prefix(p.as_str())
                        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
                })
                .then_some(self.s.as_str()),
        }
    }

    /// The text for a reader that needs it exactly.
    pub fn exact(&self, reader: &str) -> Result<&str, Unwind> {
        match &self.unknown {
            None => Ok(&self.s),
            Some(u) => Err(Unwind::Skip(format!("{reader} reads {}", u.why))),
        }
    }
}

/// A command's streams: its input and what it wrote, in order, by fd.
#[derive(Debug, Clone, Default)]
pub struct Io {
    pub stdin: Text,
    pub out: Vec<(u8, Text)>,
}

impl Io {
    pub fn with_stdin(stdin: Text) -> Io {
        Io {
            stdin,
            out: Vec::new(),
        }
    }
    pub fn write(&mut self, fd: u8, t: Text) {
        if !t.s.is_empty() || t.unknown.is_some() {
            self.out.push((fd, t));
        }
    }
    pub fn print(&mut self, fd: u8, s: impl Into<String>) {
        self.write(fd, Text::known(s));
    }
    /// Everything written on `fd`.
    pub fn stream(&self, fd: u8) -> Text {
        let mut t = Text::default();
        for (f, c) in &self.out {
            if *f == fd {
                t.push(c);
            }
        }
        t
    }
}

/// What stops a run early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unwind {
    Exit(i32),
    Break,
    /// `return N` from a function.
    Return(i32),
    /// Something the replay does not model (what exactly).
    Skip(String),
    /// Objects a controller the replay does not run makes (which).
    Controller(crate::offline::conformance::controllers::Maker),
    /// A program's exit status the replay does not know (why), its output written: the
    /// script is run again under each status it may have (`script::run`).
    UnknownStatus(String),
}

/// The outside programs a script may call.
pub trait Host {
    /// Runs `argv` (`argv[0]` the program) with `io`; `Err(Skip)` when not modelled.
    fn program(&mut self, argv: &[String], io: &mut Io, files: &mut Files) -> Result<i32, Unwind>;

    /// One HTTP request to the API server as `kubectl proxy` forwards it ([`curl`]).
    fn api(&mut self, req: &curl::Request) -> Result<curl::Response, Unwind> {
        Err(Unwind::Skip(format!(
            "`curl` {} {} (no API server behind the proxy)",
            req.method, req.path
        )))
    }
}

/// Files a run reads and writes: its writes (virtual), then the test's folder.
#[derive(Debug, Clone, Default)]
pub struct Files {
    pub dir: PathBuf,
    pub written: BTreeMap<String, String>,
}

impl Files {
    pub fn read(&self, name: &str) -> Result<String, String> {
        if let Some(s) = self.written.get(name) {
            return Ok(s.clone());
        }
        let path = self.dir.join(name);
        crate::offline::conformance::chainsaw::read_text(&path).map_err(|e| e.to_string())
    }
}

pub struct Shell<'h> {
    pub vars: BTreeMap<String, String>,
    pub files: Files,
    host: &'h mut dyn Host,
    errexit: bool,
    nounset: bool,
    status: i32,
    steps: usize,
    depth: usize,
    /// `$0` and the positional parameters.
    args: Vec<String>,
    /// Helper scripts running ([`helper`]).
    helpers: usize,
    /// Functions defined so far.
    functions: BTreeMap<String, Node>,
    /// What `trap … EXIT` set for the current shell.
    exit_trap: Option<String>,
    /// Background jobs ([`jobs`]).
    jobs: jobs::Jobs,
}

/// A fd's destination while a command runs.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Fd(u8),
    Null,
    File(String),
}

impl<'h> Shell<'h> {
    pub fn new(vars: BTreeMap<String, String>, files: Files, host: &'h mut dyn Host) -> Self {
        Shell {
            vars,
            files,
            host,
            errexit: false,
            nounset: false,
            status: 0,
            steps: 0,
            depth: 0,
            args: vec!["sh".into()],
            helpers: 0,
            functions: BTreeMap::new(),
            exit_trap: None,
            jobs: jobs::Jobs::default(),
        }
    }

    /// Runs a script's source; the exit status, or a skip.
    pub fn run_script(&mut self, src: &str, io: &mut Io) -> Result<i32, Unwind> {
        let node = parse(src).map_err(|u| Unwind::Skip(u.0))?;
        let r = self.run(&node, io, false);
        let status = self.finish(r, io)?;
        self.jobs.ended()?;
        Ok(status)
    }

    /// Runs one command's argv without a shell (Chainsaw's `command`).
    pub fn run_argv(&mut self, argv: &[String], io: &mut Io) -> Result<i32, Unwind> {
        match self.command(argv, io) {
            Ok(s) | Err(Unwind::Exit(s)) => Ok(s),
            Err(Unwind::Break) => Ok(self.status),
            Err(e) => Err(e),
        }
    }

    fn tick(&mut self) -> Result<(), Unwind> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(Unwind::Skip(
                "a script longer than the replay's bound".into(),
            ));
        }
        Ok(())
    }

    /// `set -e`: a failing command outside a condition ends the shell.
    fn fail_fast(&self, status: i32, cond: bool) -> Result<i32, Unwind> {
        if self.errexit && !cond && status != 0 {
            return Err(Unwind::Exit(status));
        }
        Ok(status)
    }

    fn run(&mut self, node: &Node, io: &mut Io, cond: bool) -> Result<i32, Unwind> {
        self.tick()?;
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Unwind::Skip(
                "nesting deeper than the replay's bound".into(),
            ));
        }
        let r = self.run_node(node, io, cond);
        self.depth -= 1;
        let status = r?;
        self.status = status;
        Ok(status)
    }

    fn run_node(&mut self, node: &Node, io: &mut Io, cond: bool) -> Result<i32, Unwind> {
        match node {
            Node::List(items) => {
                let mut status = 0;
                for item in items {
                    status = self.run(item, io, cond)?;
                }
                Ok(status)
            }
            Node::AndOr { first, rest } => {
                let last = rest.len();
                let mut status = self.run(first, io, cond || last > 0)?;
                for (i, (and, next)) in rest.iter().enumerate() {
                    if (*and && status == 0) || (!*and && status != 0) {
                        status = self.run(next, io, cond || i + 1 < last)?;
                    }
                }
                Ok(status)
            }
            Node::Pipeline { negate, stages } => {
                let mut input = io.stdin.clone();
                let mut status = 0;
                for (i, stage) in stages.iter().enumerate() {
                    let mut sub = Io::with_stdin(input);
                    status = self.subshell(stage, &mut sub, *negate || i + 1 < stages.len())?;
                    input = sub.stream(1);
                    for (fd, t) in sub.out {
                        if fd != 1 {
                            io.write(fd, t);
                        }
                    }
                }
                io.write(1, input);
                if *negate {
                    return Ok(i32::from(status == 0));
                }
                self.fail_fast(status, cond)
            }
            Node::Loop {
                until,
                cond: c,
                body,
                redirs,
            } => self.redirected(redirs, io, |sh, io| sh.run_loop(*until, c, body, io, cond)),
            Node::Function { name, body } => {
                self.functions.insert(name.clone(), (**body).clone());
                Ok(0)
            }
            Node::Background(inner) => self.background(inner, io),
            Node::Subshell(body, redirs) => {
                let status = self.redirected(redirs, io, |sh, io| sh.subshell(body, io, cond))?;
                self.fail_fast(status, cond)
            }
            Node::Group(body, redirs) => {
                self.redirected(redirs, io, |sh, io| sh.run(body, io, cond))
            }
            Node::If {
                arms,
                otherwise,
                redirs,
            } => self.redirected(redirs, io, |sh, io| {
                for (c, body) in arms {
                    if sh.run(c, io, true)? == 0 {
                        return sh.run(body, io, cond);
                    }
                }
                match otherwise {
                    Some(b) => sh.run(b, io, cond),
                    None => Ok(0),
                }
            }),
            Node::For {
                var,
                items,
                body,
                redirs,
            } => self.redirected(redirs, io, |sh, io| {
                let mut values = Vec::new();
                for w in items.iter().flatten() {
                    values.extend(sh.fields(w, io)?);
                }
                let mut status = 0;
                for v in values {
                    sh.tick()?;
                    sh.vars.insert(var.clone(), v);
                    match sh.run(body, io, cond) {
                        Ok(s) => status = s,
                        Err(Unwind::Break) => break,
                        Err(e) => return Err(e),
                    }
                }
                Ok(status)
            }),
            Node::Simple {
                assigns,
                words,
                redirs,
            } => {
                let mut argv = Vec::new();
                for w in words {
                    argv.extend(self.fields(w, io)?);
                }
                let mut subst_status = None;
                let mut values = Vec::new();
                for (name, raw) in assigns {
                    let before = self.status;
                    self.status = 0;
                    let v = self.single(raw, io)?;
                    subst_status = Some(self.status);
                    self.status = before;
                    values.push((name.clone(), v));
                }
                if argv.is_empty() {
                    for (n, v) in values {
                        self.vars.insert(n, v);
                    }
                    let status = self.redirected(redirs, io, |_, _| Ok(0))?;
                    let status = subst_status.unwrap_or(status);
                    return self.fail_fast(status, cond);
                }
                // `NAME=v cmd`: the value is the command's alone; kept for its run.
                let saved: Vec<(String, Option<String>)> = values
                    .iter()
                    .map(|(n, _)| (n.clone(), self.vars.get(n).cloned()))
                    .collect();
                for (n, v) in values {
                    self.vars.insert(n, v);
                }
                let r = self.redirected(redirs, io, |sh, io| sh.command(&argv, io));
                for (n, v) in saved {
                    match v {
                        Some(v) => self.vars.insert(n, v),
                        None => self.vars.remove(&n),
                    };
                }
                let status = r?;
                self.fail_fast(status, cond)
            }
        }
    }

    /// Runs `node` with its own variables, options and traps; `exit` ends only it.
    fn subshell(&mut self, node: &Node, io: &mut Io, cond: bool) -> Result<i32, Unwind> {
        let (vars, e, u) = (self.vars.clone(), self.errexit, self.nounset);
        let (functions, trap) = (self.functions.clone(), self.exit_trap.take());
        let r = self.run(node, io, cond);
        let r = self.finish(r, io);
        self.vars = vars;
        self.errexit = e;
        self.nounset = u;
        self.functions = functions;
        self.exit_trap = trap;
        r
    }

    /// Runs `f` with `redirs` applied: input from a file, output fds sent to streams,
    /// `/dev/null` or files.
    fn redirected(
        &mut self,
        redirs: &[Redir],
        io: &mut Io,
        f: impl FnOnce(&mut Self, &mut Io) -> Result<i32, Unwind>,
    ) -> Result<i32, Unwind> {
        if redirs.is_empty() {
            return f(self, io);
        }
        let mut targets: BTreeMap<u8, Target> = [(1, Target::Fd(1)), (2, Target::Fd(2))].into();
        let mut stdin = io.stdin.clone();
        for r in redirs {
            let target = match r.kind {
                RedirKind::HereRaw => r.target.clone(),
                RedirKind::Here if r.target.contains('`') => {
                    return Err(Unwind::Skip("backquotes in a here-document".into()));
                }
                RedirKind::Here => self.single(&here_quoted(&r.target), io)?,
                _ => self.single(&r.target, io)?,
            };
            match r.kind {
                RedirKind::Here | RedirKind::HereRaw => stdin = Text::known(target),
                RedirKind::In => match self.files.read(&target) {
                    Ok(s) => stdin = Text::known(s),
                    Err(e) => {
                        io.print(2, format!("sh: cannot open {target}: {e}\n"));
                        return Ok(2);
                    }
                },
                RedirKind::Dup => {
                    let from: u8 = target
                        .parse()
                        .map_err(|_| Unwind::Skip(format!("redirection `>&{target}`")))?;
                    let t = targets.get(&from).cloned().unwrap_or(Target::Fd(from));
                    targets.insert(r.fd, t);
                }
                RedirKind::Out | RedirKind::Append => {
                    let t = if target == "/dev/null" {
                        Target::Null
                    } else {
                        if r.kind == RedirKind::Out {
                            self.files.written.insert(target.clone(), String::new());
                        } else {
                            let old = self.files.read(&target).unwrap_or_default();
                            self.files.written.insert(target.clone(), old);
                        }
                        Target::File(target)
                    };
                    targets.insert(r.fd, t);
                }
            }
        }
        let mut sub = Io::with_stdin(stdin);
        let r = f(self, &mut sub);
        for (fd, t) in sub.out {
            match targets.get(&fd).cloned().unwrap_or(Target::Fd(fd)) {
                Target::Fd(n) => io.write(n, t),
                Target::Null => {}
                Target::File(name) => {
                    let text = t.exact(&format!("a write to `{name}`"))?.to_string();
                    let file = self.files.written.entry(name).or_default();
                    if file.len() + text.len() > MAX_OUTPUT {
                        return Err(Unwind::Skip("output larger than the replay's bound".into()));
                    }
                    file.push_str(&text);
                }
            }
        }
        r
    }

    /// One command's argv: builtins, text tools, then the host's programs.
    fn command(&mut self, argv: &[String], io: &mut Io) -> Result<i32, Unwind> {
        let Some(name) = argv.first() else {
            return Ok(0);
        };
        let args = &argv[1..];
        if let Some(body) = self.functions.get(name).cloned() {
            return self.call(&body, argv, io);
        }
        match name.as_str() {
            "true" | ":" => Ok(0),
            "return" => {
                let code = match args.first() {
                    Some(a) => a.parse::<i32>().map(|c| c & 0xff).unwrap_or(2),
                    None => self.status,
                };
                Err(Unwind::Return(code))
            }
            "trap" => self.trap(args),
            "kill" => self.kill(args, io),
            "curl" => self.curl(args, io),
            "false" => Ok(1),
            "sleep" => Ok(0),
            "exit" => {
                let code = match args.first() {
                    Some(a) => a.parse::<i32>().map(|c| c & 0xff).unwrap_or(2),
                    None => self.status,
                };
                Err(Unwind::Exit(code))
            }
            "break" => Err(Unwind::Break),
            "echo" => {
                io.print(1, tools::echo(args));
                Ok(0)
            }
            "set" => {
                for a in args {
                    let Some(flags) = a.strip_prefix('-') else {
                        return Err(Unwind::Skip(format!("`set {a}`")));
                    };
                    for f in flags.chars() {
                        match f {
                            'e' => self.errexit = true,
                            'u' => self.nounset = true,
                            'x' => {}
                            _ => return Err(Unwind::Skip(format!("`set -{f}`"))),
                        }
                    }
                }
                Ok(0)
            }
            "export" | "readonly" | "local" => {
                for a in args {
                    if let Some((n, v)) = a.split_once('=') {
                        self.vars.insert(n.to_string(), v.to_string());
                    }
                }
                Ok(0)
            }
            "unset" => {
                for a in args {
                    self.vars.remove(a);
                }
                Ok(0)
            }
            "[" | "test" => {
                let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
                if name == "[" {
                    if a.last() != Some(&"]") {
                        io.print(2, "sh: [: missing ]\n");
                        return Ok(2);
                    }
                    a.pop();
                }
                match tools::test(&a) {
                    Ok(b) => Ok(i32::from(!b)),
                    Err(e) => {
                        io.print(2, format!("sh: {name}: {e}\n"));
                        Ok(2)
                    }
                }
            }
            _ => {
                if let Some(status) = tools::run(name, args, io, &self.files)? {
                    return Ok(status);
                }
                if name.contains('/') {
                    return self.helper(name, args, io);
                }
                // kubectl reads the kubeconfig `KUBECONFIG` names: one the script made
                // (or none) holds users and contexts the replay does not have.
                if name == "kubectl"
                    && let Some(path) = self.vars.get("KUBECONFIG")
                    && path != CHAINSAW_KUBECONFIG
                {
                    return Err(Unwind::Skip(format!(
                        "kubectl with KUBECONFIG={path}, not chainsaw's"
                    )));
                }
                let files = &mut self.files;
                self.host.program(argv, io, files)
            }
        }
    }

    /// A word's fields after expansion and splitting.
    fn fields(&mut self, raw: &str, io: &mut Io) -> Result<Vec<String>, Unwind> {
        self.expand(raw, io, true)
    }

    /// A word expanded without splitting (assignments, redirection targets).
    fn single(&mut self, raw: &str, io: &mut Io) -> Result<String, Unwind> {
        Ok(self.expand(raw, io, false)?.join(" "))
    }

    fn expand(&mut self, raw: &str, io: &mut Io, split: bool) -> Result<Vec<String>, Unwind> {
        let chars: Vec<char> = raw.chars().collect();
        let mut fields: Vec<String> = Vec::new();
        let mut cur = String::new();
        // Whether `cur` is a field even when empty (it had quotes).
        let mut has = false;
        let mut i = 0;
        let mut dq = false;
        while i < chars.len() {
            let c = chars[i];
            match c {
                '\'' if !dq => {
                    has = true;
                    i += 1;
                    while i < chars.len() && chars[i] != '\'' {
                        cur.push(chars[i]);
                        i += 1;
                    }
                    i += 1;
                }
                '"' => {
                    has = true;
                    dq = !dq;
                    i += 1;
                }
                '\\' => {
                    let next = chars.get(i + 1).copied();
                    match next {
                        Some(n) if !dq || matches!(n, '$' | '`' | '"' | '\\' | '\n') => {
                            if n != '\n' {
                                cur.push(n);
                            }
                            has = true;
                        }
                        Some(n) => {
                            cur.push('\\');
                            cur.push(n);
                        }
                        None => cur.push('\\'),
                    }
                    i += 2;
                }
                '$' => {
                    let (value, next) = self.dollar(&chars, i, io)?;
                    i = next;
                    let Some(value) = value else {
                        cur.push('$');
                        continue;
                    };
                    if dq || !split {
                        cur.push_str(&value);
                        continue;
                    }
                    // Field splitting on blanks.
                    let mut pieces = value.split([' ', '\t', '\n']).peekable();
                    let starts_blank = value.starts_with([' ', '\t', '\n']);
                    if starts_blank && (has || !cur.is_empty()) {
                        fields.push(std::mem::take(&mut cur));
                        has = false;
                    }
                    while let Some(p) = pieces.next() {
                        cur.push_str(p);
                        if pieces.peek().is_some() && (!cur.is_empty() || has) {
                            fields.push(std::mem::take(&mut cur));
                            has = false;
                        }
                    }
                }
                _ => {
                    cur.push(c);
                    i += 1;
                }
            }
        }
        if has || !cur.is_empty() {
            fields.push(cur);
        }
        if !split && fields.is_empty() {
            fields.push(String::new());
        }
        Ok(fields)
    }

    /// The expansion at `$` (`None`: a literal `$`) and the index after it.
    fn dollar(
        &mut self,
        chars: &[char],
        i: usize,
        io: &mut Io,
    ) -> Result<(Option<String>, usize), Unwind> {
        match chars.get(i + 1) {
            Some('(') if chars.get(i + 2) == Some(&'(') => {
                let end = substitution_end(chars, i + 2).map_err(|u| Unwind::Skip(u.0))?;
                if end < i + 5 || chars[end - 2] != ')' {
                    return Err(Unwind::Skip(
                        "`$(( …) …)`: a subshell in a substitution".into(),
                    ));
                }
                let src: String = chars[i + 3..end - 2].iter().collect();
                let expr = self.single(&here_quoted(&src), io)?;
                match super::arith::eval(&expr, &mut self.vars) {
                    Ok(v) => Ok((Some(v.to_string()), end)),
                    Err(e) => Err(Unwind::Skip(format!("`$(({src}))`: {e}"))),
                }
            }
            Some('(') => {
                let end = substitution_end(chars, i + 2).map_err(|u| Unwind::Skip(u.0))?;
                let src: String = chars[i + 2..end - 1].iter().collect();
                let node = parse(&src).map_err(|u| Unwind::Skip(u.0))?;
                let mut sub = Io::with_stdin(Text::default());
                let status = self.subshell(&node, &mut sub, false)?;
                self.status = status;
                let out = sub.stream(1);
                for (fd, t) in sub.out {
                    if fd != 1 {
                        io.write(fd, t);
                    }
                }
                let s = out.exact("a command substitution")?;
                Ok((Some(s.trim_end_matches('\n').to_string()), end))
            }
            Some('{') => {
                let close = params::brace_end(chars, i + 2)
                    .ok_or_else(|| Unwind::Skip("unterminated `${`".into()))?;
                let inner: String = chars[i + 2..close].iter().collect();
                Ok((Some(self.parameter(&inner, io)?), close + 1))
            }
            Some('?') => Ok((Some(self.status.to_string()), i + 2)),
            Some(c) if c.is_ascii_alphabetic() || *c == '_' => {
                let mut j = i + 1;
                while j < chars.len() && (chars[j].is_ascii_alphanumeric() || chars[j] == '_') {
                    j += 1;
                }
                let name: String = chars[i + 1..j].iter().collect();
                Ok((Some(self.var(&name, io)?), j))
            }
            Some(c) if c.is_ascii_digit() || *c == '#' => match self.positional(*c) {
                Some(v) => Ok((Some(v), i + 2)),
                None => Err(Unwind::Skip(format!("special parameter `${c}`"))),
            },
            Some('!') => match self.jobs.last_pid() {
                Some(pid) => Ok((Some(pid), i + 2)),
                None => Ok((Some(String::new()), i + 2)),
            },
            Some('@' | '*') => Ok((
                Some(self.args.get(1..).unwrap_or_default().join(" ")),
                i + 2,
            )),
            Some(c) if matches!(c, '$' | '-') => {
                Err(Unwind::Skip(format!("special parameter `${c}`")))
            }
            _ => Ok((None, i + 1)),
        }
    }

    fn var(&mut self, name: &str, io: &mut Io) -> Result<String, Unwind> {
        match self.vars.get(name) {
            Some(v) => Ok(v.clone()),
            None if self.nounset => {
                io.print(2, format!("sh: {name}: parameter not set\n"));
                Err(Unwind::Exit(2))
            }
            None => Ok(String::new()),
        }
    }
}

/// A here-document's body as a double-quoted word: expanded alike (`$`, `` ` ``, `\\`
/// and a newline stay special after a backslash), its `"` literal.
fn here_quoted(body: &str) -> String {
    let mut out = String::from("\"");
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if matches!(chars.peek(), Some('$' | '`' | '\\' | '\n')) => {
                out.push(c);
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            }
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

use super::shell::is_name;

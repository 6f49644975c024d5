//! The text tools and builtins scripts pipe kubectl's output through: `echo` (dash's,
//! with backslash escapes), `test`/`[`, `grep` (`-q -c -v -E -F -i -o`), `wc -l`, `cat`,
//! `seq`, `head`/`tail -n`, `tr -d`, `sort`. Others that a script may call are named in
//! [`UNMODELLED`]: the run is skipped, never guessed.

use super::exec::{Files, Io, Text, Unwind};

#[path = "jq.rs"]
mod jq;

/// Programs the replay does not run (their output is not the cluster's to decide, or the
/// subset leaves them out).
const UNMODELLED: &[&str] = &[
    "awk", "sed", "base64", "openssl", "yq", "python3", "python", "wget", "cut", "xargs", "printf",
    "bash", "sh", "cd", "source", ".", "eval", "read", "envsubst", "date", "uuidgen", "helm",
    "kind", "docker", "cosign", "chainsaw",
];

/// dash's `echo`: `-n`, and backslash escapes in the words.
pub fn echo(args: &[String]) -> String {
    let (newline, words) = match args.first().map(String::as_str) {
        Some("-n") => (false, &args[1..]),
        _ => (true, args),
    };
    let mut out = String::new();
    let joined = words.join(" ");
    let mut cs = joined.chars();
    while let Some(c) = cs.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match cs.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('\\') => out.push('\\'),
            Some('c') => return out,
            Some(o) => {
                out.push('\\');
                out.push(o);
            }
            None => out.push('\\'),
        }
    }
    if newline {
        out.push('\n');
    }
    out
}

/// `test` of its operands (without the closing `]`).
pub fn test(a: &[&str]) -> Result<bool, String> {
    if let Some(pos) = a.iter().position(|x| *x == "-o") {
        return Ok(test(&a[..pos])? || test(&a[pos + 1..])?);
    }
    if let Some(pos) = a.iter().position(|x| *x == "-a") {
        return Ok(test(&a[..pos])? && test(&a[pos + 1..])?);
    }
    match a {
        [] => Ok(false),
        ["!", rest @ ..] => Ok(!test(rest)?),
        [s] => Ok(!s.is_empty()),
        ["-n", s] => Ok(!s.is_empty()),
        ["-z", s] => Ok(s.is_empty()),
        ["-f" | "-e" | "-d" | "-s", _] => Err("file tests are not modelled".into()),
        [l, "=" | "==", r] => Ok(l == r),
        [l, "!=", r] => Ok(l != r),
        [l, op @ ("-eq" | "-ne" | "-gt" | "-ge" | "-lt" | "-le"), r] => {
            let n = |s: &str| {
                s.trim()
                    .parse::<i64>()
                    .map_err(|_| format!("Illegal number: {s}"))
            };
            let (l, r) = (n(l)?, n(r)?);
            Ok(match *op {
                "-eq" => l == r,
                "-ne" => l != r,
                "-gt" => l > r,
                "-ge" => l >= r,
                "-lt" => l < r,
                _ => l <= r,
            })
        }
        _ => Err(format!("unexpected operator in `{}`", a.join(" "))),
    }
}

/// Runs a text tool; `None` when `name` is none of them.
pub fn run(name: &str, args: &[String], io: &mut Io, files: &Files) -> Result<Option<i32>, Unwind> {
    if UNMODELLED.contains(&name) {
        return Err(Unwind::Skip(format!("`{name}`")));
    }
    let status = match name {
        "grep" | "egrep" | "fgrep" => grep(name, args, io, files)?,
        "jq" => jq::run(args, io, files)?,
        "wc" => wc(args, io, files)?,
        "cat" => {
            let t = input(args, io, files, "cat")?;
            io.write(1, t);
            0
        }
        "seq" => seq(args, io)?,
        "head" | "tail" => head_tail(name == "head", args, io, files)?,
        "tr" => tr(args, io)?,
        "sort" => {
            if args.iter().any(|a| a.starts_with('-')) {
                return Err(Unwind::Skip(format!("`sort {}`", args.join(" "))));
            }
            let t = input(args, io, files, "sort")?;
            let s = t.exact("sort")?;
            let mut lines: Vec<&str> = s.lines().collect();
            lines.sort_unstable();
            io.print(
                1,
                lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
            );
            0
        }
        _ => return Ok(None),
    };
    Ok(Some(status))
}

/// The files named (or stdin), concatenated.
fn input(files_named: &[String], io: &mut Io, files: &Files, tool: &str) -> Result<Text, Unwind> {
    if files_named.is_empty() {
        return Ok(io.stdin.clone());
    }
    let mut s = String::new();
    for f in files_named {
        match files.read(f) {
            Ok(t) => s.push_str(&t),
            Err(_) => {
                io.print(2, format!("{tool}: {f}: No such file or directory\n"));
                return Err(Unwind::Skip(format!(
                    "`{tool}` of a file the replay does not have ({f})"
                )));
            }
        }
    }
    Ok(Text::known(s))
}

fn grep(name: &str, args: &[String], io: &mut Io, files: &Files) -> Result<i32, Unwind> {
    let (mut quiet, mut count, mut invert, mut ere, mut fixed, mut icase, mut only) = (
        false,
        false,
        false,
        name == "egrep",
        name == "fgrep",
        false,
        false,
    );
    let mut patterns = Vec::new();
    let mut operands = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "-e" {
            patterns.extend(it.next().cloned());
        } else if a.len() > 1 && a.starts_with('-') && operands.is_empty() && patterns.is_empty()
            || a.starts_with("--")
        {
            for f in a.trim_start_matches('-').chars() {
                match f {
                    'q' | 's' => quiet |= f == 'q',
                    'c' => count = true,
                    'v' => invert = true,
                    'E' => ere = true,
                    'F' => fixed = true,
                    'i' => icase = true,
                    'o' => only = true,
                    _ => return Err(Unwind::Skip(format!("`grep {a}`"))),
                }
            }
        } else {
            operands.push(a.clone());
        }
    }
    if patterns.is_empty() {
        if operands.is_empty() {
            io.print(2, "Usage: grep [OPTION]... PATTERNS [FILE]...\n");
            return Ok(2);
        }
        patterns.push(operands.remove(0));
    }
    let text = input(&operands, io, files, "grep")?;
    if quiet && !invert && !count && !icase && found_in_decided(&text, &patterns, fixed, ere) {
        return Ok(0);
    }
    let s = text.exact("grep")?.to_string();
    let mut alternatives = Vec::new();
    for p in &patterns {
        for line in p.split('\n') {
            alternatives.push(if fixed {
                regex::escape(line)
            } else if ere {
                line.to_string()
            } else {
                basic_to_extended(line)
            });
        }
    }
    let source = format!(
        "(?m){}(?:{})",
        if icase { "(?i)" } else { "" },
        alternatives.join("|")
    );
    let re = regex::RegexBuilder::new(&source)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| Unwind::Skip(format!("a grep pattern the replay cannot read: {e}")))?;
    let mut matched = 0usize;
    let mut out = String::new();
    for line in s.lines() {
        let hit = re.is_match(line) != invert;
        if hit {
            matched += 1;
            if only && !invert {
                for m in re.find_iter(line) {
                    out.push_str(m.as_str());
                    out.push('\n');
                }
            } else {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    if !quiet {
        if count {
            io.print(1, format!("{matched}\n"));
        } else {
            io.print(1, out);
        }
    }
    Ok(if matched > 0 { 0 } else { 1 })
}

/// Whether a literal pattern lies inside a word the partly known `text` holds and decides
/// (so the live text holds it too): `grep -q` matches whatever the unknown parts are.
fn found_in_decided(text: &Text, patterns: &[String], fixed: bool, ere: bool) -> bool {
    let Some(u) = &text.unknown else {
        return false;
    };
    let special: &[char] = if ere {
        &[
            '.', '[', ']', '*', '^', '$', '\\', '+', '?', '(', ')', '{', '}', '|',
        ]
    } else {
        &['.', '[', ']', '*', '^', '$', '\\']
    };
    patterns.iter().flat_map(|p| p.split('\n')).any(|p| {
        !p.is_empty()
            && (fixed || !p.contains(special))
            && u.decides
                .iter()
                .any(|d| d.contains(p) && text.s.contains(d.as_str()))
    })
}

/// A POSIX basic regular expression in the `regex` crate's syntax: `\( \) \{ \} \| \+ \?`
/// are the operators, the bare characters literal.
fn basic_to_extended(p: &str) -> String {
    let mut out = String::new();
    let mut cs = p.chars().peekable();
    while let Some(c) = cs.next() {
        match c {
            '\\' => match cs.next() {
                Some(o @ ('(' | ')' | '{' | '}' | '|' | '+' | '?')) => out.push(o),
                Some(o) => {
                    out.push('\\');
                    out.push(o);
                }
                None => out.push_str("\\\\"),
            },
            '(' | ')' | '{' | '}' | '|' | '+' | '?' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

fn wc(args: &[String], io: &mut Io, files: &Files) -> Result<i32, Unwind> {
    let (flags, names): (Vec<&String>, Vec<&String>) =
        args.iter().partition(|a| a.starts_with('-'));
    if flags.iter().any(|f| f.as_str() != "-l") || flags.is_empty() {
        return Err(Unwind::Skip(format!("`wc {}`", args.join(" "))));
    }
    let names: Vec<String> = names.into_iter().cloned().collect();
    let t = input(&names, io, files, "wc")?;
    if let Some(u) = &t.unknown
        && !u.lines_exact
    {
        return Err(Unwind::Skip(format!("wc reads {}", u.why)));
    }
    let n = t.s.matches('\n').count();
    io.print(1, format!("{n}\n"));
    Ok(0)
}

fn seq(args: &[String], io: &mut Io) -> Result<i32, Unwind> {
    let nums: Result<Vec<i64>, _> = args.iter().map(|a| a.parse::<i64>()).collect();
    let (first, step, last) = match nums.as_deref() {
        Ok([l]) => (1, 1, *l),
        Ok([f, l]) => (*f, 1, *l),
        Ok([f, s, l]) => (*f, *s, *l),
        _ => return Err(Unwind::Skip(format!("`seq {}`", args.join(" ")))),
    };
    if step == 0 || (last - first) / step > 10_000 {
        return Err(Unwind::Skip(
            "a `seq` longer than the replay's bound".into(),
        ));
    }
    let mut out = String::new();
    let mut n = first;
    while (step > 0 && n <= last) || (step < 0 && n >= last) {
        out.push_str(&format!("{n}\n"));
        n += step;
    }
    io.print(1, out);
    Ok(0)
}

fn head_tail(head: bool, args: &[String], io: &mut Io, files: &Files) -> Result<i32, Unwind> {
    let mut n = 10usize;
    let mut names = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let num = if a == "-n" {
            it.next().map(String::as_str)
        } else if let Some(x) = a.strip_prefix("-n") {
            Some(x)
        } else if let Some(x) = a.strip_prefix('-') {
            Some(x)
        } else {
            names.push(a.clone());
            continue;
        };
        n = num.and_then(|x| x.parse().ok()).ok_or_else(|| {
            Unwind::Skip(format!(
                "`{} {}`",
                if head { "head" } else { "tail" },
                args.join(" ")
            ))
        })?;
    }
    let tool = if head { "head" } else { "tail" };
    let t = input(&names, io, files, tool)?;
    let s = t.exact(tool)?;
    let lines: Vec<&str> = s.lines().collect();
    let picked = if head {
        &lines[..n.min(lines.len())]
    } else {
        &lines[lines.len().saturating_sub(n)..]
    };
    io.print(
        1,
        picked.iter().map(|l| format!("{l}\n")).collect::<String>(),
    );
    Ok(0)
}

fn tr(args: &[String], io: &mut Io) -> Result<i32, Unwind> {
    let t = io.stdin.clone();
    let s = t.exact("tr")?;
    match args {
        [d, set] if d == "-d" => {
            let set = echo_escapes(set);
            io.print(
                1,
                s.chars().filter(|c| !set.contains(*c)).collect::<String>(),
            );
            Ok(0)
        }
        _ => Err(Unwind::Skip(format!("`tr {}`", args.join(" ")))),
    }
}

/// `tr`'s escapes in a set (`\n`, `\t`).
fn echo_escapes(s: &str) -> String {
    s.replace("\\n", "\n").replace("\\t", "\t")
}

//! One language per screen: failing commands of every subcommand, run in Japanese
//! (`LANG=ja_JP.UTF-8`), must say each `エラー:` and `ヒント:` line in Japanese, and a
//! learner's file problem (`file:line:col: error: …`) too. What a tool, the system or the
//! engine said may stay as data in a `原因:` line or after a Japanese lead. A new
//! English-only error or hint fails here; the table lists every command family so a new
//! message is met by a sibling case.

mod common;

use std::path::Path;

use common::{Env, stderr};

/// Whether `text` holds a Japanese character (kana or a CJK ideograph).
fn has_japanese(text: &str) -> bool {
    text.chars().any(|c| {
        matches!(c,
            '\u{3040}'..='\u{30ff}' // hiragana, katakana
            | '\u{3400}'..='\u{4dbf}'
            | '\u{4e00}'..='\u{9fff}'
            | '\u{ff66}'..='\u{ff9f}')
    })
}

/// The lines of a Japanese-mode stderr that kca itself worded and that have no Japanese.
fn english_lines(err: &str, learner_files: bool) -> Vec<String> {
    let mut out = Vec::new();
    for line in err.lines() {
        let body = line.trim_start();
        let labelled = ["エラー:", "ヒント:", "警告:"]
            .iter()
            .find_map(|l| body.strip_prefix(l));
        let diag = learner_files
            .then(|| body.split_once(": error: ").map(|(_, m)| m))
            .flatten();
        if let Some(text) = labelled.or(diag)
            && !has_japanese(text)
        {
            out.push(line.to_string());
        }
        // A label left in English is English whatever follows it.
        if ["error:", "hint:", "caused by:", "warning:"]
            .iter()
            .any(|l| body.starts_with(l))
        {
            out.push(line.to_string());
        }
    }
    out
}

struct Files {
    _dir: tempfile::TempDir,
    bad: String,
    pod: String,
    empty_dir: String,
    missing: String,
    list: String,
}

fn files() -> Files {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).display().to_string();
    std::fs::write(dir.path().join("bad.yaml"), "a: [\n").unwrap();
    std::fs::write(
        dir.path().join("pod.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("list.yaml"), "- 1\n- 2\n").unwrap();
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    Files {
        bad: p("bad.yaml"),
        pod: p("pod.yaml"),
        empty_dir: p("empty"),
        missing: p("missing.yaml"),
        list: p("list.yaml"),
        _dir: dir,
    }
}

/// Runs `kca ARGS` in Japanese; returns stderr after asserting a failing exit.
fn run_ja(env: &Env, args: &[&str]) -> String {
    let out = env
        .kca()
        .env("LANG", "ja_JP.UTF-8")
        .args(args)
        .output()
        .expect("kca runs");
    assert!(
        !out.status.success(),
        "`kca {}` was expected to fail",
        args.join(" ")
    );
    stderr(&out)
}

#[test]
fn every_error_and_hint_line_is_japanese_in_japanese_mode() {
    let env = Env::new();
    let f = files();
    let (bad, pod, empty, missing, list) = (
        f.bad.as_str(),
        f.pod.as_str(),
        f.empty_dir.as_str(),
        f.missing.as_str(),
        f.list.as_str(),
    );
    // (arguments, whether a file problem of the learner's is among the lines)
    let cases: Vec<(Vec<&str>, bool)> = vec![
        (vec!["chek"], false),
        (vec!["lab", "check"], false),
        (vec!["lab", "start", "nope"], false),
        (vec!["lab", "start", "kca-mutate"], false),
        (vec!["lab", "hint", "nope"], false),
        (vec!["lab", "reset", "nope"], false),
        (vec!["lab", "status", "nope"], false),
        (vec!["lab", "show", "nope"], false),
        (vec!["lab", "task", "3"], false),
        (vec!["lab", "new", "BAD"], false),
        (vec!["lab", "verify"], false),
        (
            vec![
                "lab",
                "check",
                "kca-mutate",
                "--offline",
                "--workspace",
                missing,
            ],
            false,
        ),
        (vec!["quiz", "run", "nope"], false),
        (vec!["quiz", "key", "nope"], false),
        (
            vec!["quiz", "grade", "module-0", "--answers", missing],
            false,
        ),
        (vec!["quiz", "grade", "module-0", "--answers", bad], true),
        (vec!["quiz", "grade", "module-0", "--answers", pod], true),
        (vec!["quiz", "grade", "module-0", "--answers", list], true),
        (vec!["validate", missing], false),
        (vec!["validate", bad], true),
        (vec!["policy", "apply", bad, "--resource", pod], true),
        (vec!["policy", "apply", pod, "--resource", pod], false),
        (vec!["policy", "apply", missing, "--resource", pod], false),
        (vec!["policy", "test", missing], false),
        (vec!["policy", "test", empty], false),
        (vec!["auth", "can-i", "get", "pods", "-f", pod], false),
        (
            vec!["auth", "can-i", "--list", "-f", pod, "--as", "a"],
            false,
        ),
        (
            vec!["auth", "can-i", "get", "pods", "-f", missing, "--as", "a"],
            false,
        ),
        (
            vec!["auth", "can-i", "get", "pods", "-f", bad, "--as", "a"],
            true,
        ),
        (
            vec!["auth", "can-i", "get", "pods", "-f", list, "--as", "a"],
            true,
        ),
        (vec!["jp", "query"], false),
        (vec!["jp", "query", "-i", pod, "a["], false),
        (vec!["jp", "query", "-i", bad, "a"], true),
        (vec!["jp", "parse", "a["], false),
        (
            vec!["values", "render", "--chart", missing, "--values", pod],
            false,
        ),
        (
            vec!["values", "render", "--chart", pod, "--values", pod],
            false,
        ),
        (
            vec!["values", "render", "--chart", bad, "--values", pod],
            true,
        ),
        (vec!["lesson", "nope"], false),
        (vec!["lesson", "99"], false),
        (vec!["lesson", "0#nope"], false),
        (vec!["report", missing], false),
        (vec!["grade", "nope", missing], false),
        (vec!["grade", "kca-mutate", "--submissions", missing], false),
        (vec!["status", "--bogus"], false),
        (vec!["cluster", "status"], false),
        (vec!["completions", "nope"], false),
        (vec!["schema", "nope"], false),
        (
            vec![
                "quiz",
                "grade",
                "module-0",
                "--answers",
                missing,
                "-o",
                "junit",
            ],
            false,
        ),
    ];
    let mut found = Vec::new();
    for (args, learner_files) in &cases {
        let err = run_ja(&env, args);
        assert!(
            err.contains("エラー:"),
            "`kca {}` said no error:\n{err}",
            args.join(" ")
        );
        for line in english_lines(&err, *learner_files) {
            found.push(format!("kca {}\n    {line}", args.join(" ")));
        }
    }
    assert!(
        found.is_empty(),
        "lines without Japanese in Japanese mode:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_guard_itself_catches_english_lines() {
    // The check above could pass by seeing nothing: it must flag what it is for.
    assert_eq!(
        english_lines(
            "エラー: /x does not exist\nヒント: パスを確かめてください\n",
            false
        )
        .len(),
        1
    );
    assert_eq!(
        english_lines("error: unrecognized subcommand\n", false).len(),
        1
    );
    assert_eq!(
        english_lines("a.yaml:1:4: error: invalid YAML: x\n", true).len(),
        1
    );
    assert!(english_lines("  原因: No such file or directory (os error 2)\n", false).is_empty());
    assert!(!has_japanese("plain"));
    assert!(has_japanese("パス"));
}

#[test]
fn english_mode_stays_english() {
    let env = Env::new();
    let missing = Path::new("/nonexistent/answers.yaml").display().to_string();
    let out = env
        .kca()
        .args([
            "--lang",
            "en",
            "quiz",
            "grade",
            "module-0",
            "--answers",
            &missing,
        ])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(
        err.contains("error: ") && err.contains("does not exist") && !has_japanese(&err),
        "{err}"
    );
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The builders of a message a learner or an author reads, and how many leading
/// arguments are not words (a position).
const BUILDERS: [(&str, usize); 11] = [
    ("Error::usage(", 0),
    ("Error::environment(", 0),
    ("Error::usage_with(", 0),
    ("Error::environment_with(", 0),
    (".error(", 1),
    (".error_hint(", 1),
    (".error_said(", 1),
    (".warning(", 1),
    (".warn(", 0),
    (".note(", 0),
    ("advice.push((", 1),
];

/// The top-level arguments of a call whose `(` ends just before `rest`.
fn call_args(rest: &str) -> Vec<&str> {
    let (mut depth, mut out, mut from) = (0usize, Vec::new(), 0);
    let mut chars = rest.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                // Skip the string literal (escapes included).
                while let Some((_, c)) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth == 0 => {
                out.push(rest[from..i].trim());
                return out;
            }
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(rest[from..i].trim());
                from = i + 1;
            }
            _ => {}
        }
    }
    out
}

/// Whether an argument is words in one language: a bare literal or `format!` (or `&`
/// of one) whose text, past `{…}` placeholders and `` `code` ``, holds an English word
/// and no Japanese. An empty string or punctuation around placeholders is data.
fn one_language(arg: &str) -> bool {
    let arg = arg.trim_start_matches('&');
    let lit = if let Some(r) = arg.strip_prefix("format!(") {
        r.trim_start()
    } else {
        arg
    };
    let Some(body) = lit.strip_prefix('"') else {
        return false;
    };
    let mut text = String::new();
    let (mut brace, mut tick) = (0, false);
    let mut prev = '\0';
    for c in body.chars() {
        if c == '"' && prev != '\\' {
            break;
        }
        match c {
            '{' => brace += 1,
            '}' => brace = (brace as i32 - 1).max(0) as usize,
            '`' => tick = !tick,
            _ if brace == 0 && !tick => text.push(c),
            _ => {}
        }
        prev = c;
    }
    let english = text
        .split(|c: char| !c.is_ascii_alphabetic())
        .any(|w| w.len() >= 2 && w != "ja" && w != "en");
    english && !has_japanese(&text)
}

#[test]
fn no_message_is_built_from_one_language_s_text() {
    // The commands above reach most errors; this catches the ones no failing command
    // reaches yet: an error, hint, warning or author diagnostic written as a bare English
    // literal or `format!`, instead of `msg(ja, en)`, `tr`/`tr_s` or data.
    let mut files = Vec::new();
    rust_files(&common::repo().join("src"), &mut files);
    let mut found = Vec::new();
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with("tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        // Unit tests build errors of their own at the end of a file.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        found.extend(
            one_language_builders(code)
                .into_iter()
                .map(|line| format!("{}:{line}", file.display())),
        );
    }
    assert!(
        found.is_empty(),
        "messages in one language (use crate::error::msg(ja, en)):\n{}",
        found.join("\n")
    );
}

/// The lines of `code` where a builder gets words in one language.
fn one_language_builders(code: &str) -> Vec<usize> {
    let mut lines = Vec::new();
    for (call, skip) in BUILDERS {
        for (at, _) in code.match_indices(call) {
            let args = call_args(&code[at + call.len()..]);
            if args.iter().skip(skip).any(|a| one_language(a)) {
                lines.push(code[..at].lines().count());
            }
        }
    }
    lines.sort();
    lines
}

#[test]
fn the_scan_catches_a_message_in_english_only() {
    // Old lines of src/content/lab/checks.rs and quiz_lint.rs, as they were.
    for old in [
        r#"d.error(f.pos(), "a task needs at least one check");"#,
        r#"d.error_hint(n.pos, format!("unknown state `{other}`"), "use `present` or `absent`");"#,
        r#"out.warning(at, format!("{count} of {n} true-false questions are {major}"), msg("釣り合わせます", "balance"));"#,
        r#"cx.advice.push((pos, format!("task `{task}` probes a {what} rule"), "add a check".into()));"#,
        r#"return Err(Error::usage(msg("ない", "none"), "see `kca quiz list`"));"#,
        r#"ctx.printer.warn(&format!("{} quiz file(s) have problems", n));"#,
    ] {
        assert_eq!(one_language_builders(old).len(), 1, "{old}");
    }
    for fine in [
        r#"d.error(f.pos(), msg("課題にはチェックが必要です", "a task needs a check"));"#,
        r#"d.error(n.pos, format!("{}: {}", a, b));"#,
        r#"p.warn(&tr_s(lang, format!("{x} は"), format!("{x} is")));"#,
        r#"c.error(pos, "");"#,
        r#"ctx.printer.warn(&format!("{} {s}", tr(lang, "読み飛ばし", "skipped")));"#,
    ] {
        assert!(one_language_builders(fine).is_empty(), "{fine}");
    }
}

#[test]
fn broken_content_is_described_in_japanese_in_japanese_mode() {
    // `kca validate` on a broken quiz or lab printed the decoder's problems ("unknown
    // field", "did you mean", "missing field", "expected …") in English above a
    // Japanese summary.
    let env = Env::new();
    let dir = tempfile::tempdir().unwrap();
    let quiz = dir.path().join("quiz");
    std::fs::create_dir(&quiz).unwrap();
    std::fs::write(
        quiz.join("q.yaml"),
        "apiVersion: kca.dev/v1alpha1\nkind: Quiz\nmetadata:\n  id: broken\n  titel: x\npassMark: many\nquestions:\n  - id: q1\n    type: single\n    prompt: p\n    explanation: e\n    choices: {a: 1}\n  - id: q2\n    type: essay\n    prompt: p\n    explanation: e\n",
    )
    .unwrap();
    let lab = dir.path().join("lab");
    std::fs::create_dir(&lab).unwrap();
    std::fs::write(
        lab.join("lab.yaml"),
        "apiVersion: kca.dev/v1alpha1\nkind: Lab\nmetadata:\n  id: broken-lab\n  titel: x\nbogus: 1\n",
    )
    .unwrap();
    for path in [&quiz, &lab] {
        let args = ["validate", path.to_str().unwrap()];
        let err = run_ja(&env, &args);
        let problems = err.lines().filter(|l| l.contains(": error: ")).count();
        assert!(problems >= 2, "{err}");
        let english = english_lines(&err, true);
        assert!(english.is_empty(), "{}\n---\n{err}", english.join("\n"));
        assert!(err.contains("ヒント:"), "{err}");
    }
}

#[test]
fn a_course_policy_message_is_said_in_the_reader_s_language() {
    // The kca-gates starter policy's message is written `Japanese / English`; the gate's
    // `kca policy apply` (shown under `lab check -v`) printed both halves on one line.
    let env = Env::new();
    let lab = common::repo().join("labs/kca-gates");
    let policy = lab.join("starter/policy/require-pinned.yaml");
    let bad = lab.join("renders/bad.yaml");
    let run = |lang: &str| {
        let out = env
            .kca()
            .args(["--lang", lang, "policy", "apply"])
            .arg(&policy)
            .arg("--resource")
            .arg(&bad)
            .output()
            .unwrap();
        common::stdout(&out)
    };
    let (ja, en) = (run("ja"), run("en"));
    assert!(
        ja.contains("固定してください") && !ja.contains("pin images"),
        "{ja}"
    );
    assert!(
        en.contains("pin images by digest") && !has_japanese(&en),
        "{en}"
    );
}

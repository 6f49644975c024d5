//! Unit tests of `ui` (the printer) and `ui::text` (layout).

use super::text::*;
use super::*;

#[test]
fn hard_line_breaks_of_a_paragraph_are_reflowed() {
    let ja = "ラベルの付いた新しい\nNamespace へ作ります。\n\n- 一つめ\n- 二つめ\n    code: yes";
    assert_eq!(
        reflow(ja),
        "ラベルの付いた新しい Namespace へ作ります。\n\n- 一つめ\n- 二つめ\n    code: yes"
    );
    let en = "write the policy\nthat gives Pods\n1. first\n2. second";
    assert_eq!(
        reflow(en),
        "write the policy that gives Pods\n1. first\n2. second"
    );
    let lines = wrap("一行目の\n続き", 80, "  ");
    assert_eq!(lines, vec!["  一行目の続き".to_string()]);
}

fn settings(output: OutputFormat) -> Settings {
    Settings {
        color: false,
        output,
        lang: Lang::En,
        verbosity: 0,
        content_dir: ".".into(),
        state_dir: ".".into(),
        home: ".".into(),
    }
}

#[test]
fn width_counts_cjk_as_two_columns() {
    assert_eq!(width("問題"), 4);
    assert_eq!(pad("問", 4), "問  ");
    assert_eq!(truncate("ポリシーの検証", 9), "ポリシー…");
    assert_eq!(truncate("abc", 9), "abc");
}

#[test]
fn table_aligns_by_display_width_and_cuts_the_last_column() {
    let rows = vec![
        vec!["ID".into(), "問".into(), "タイトル".into()],
        vec![
            "module-0".into(),
            "12".into(),
            "Kyverno の全体像とアドミッションの流れ".into(),
        ],
    ];
    let lines = table(&rows, 30);
    assert_eq!(lines[0], "ID        問  タイトル");
    assert_eq!(lines[1].find("12"), Some(10), "{lines:?}");
    assert!(
        width(&lines[1]) <= 30 && lines[1].ends_with('…'),
        "{lines:?}"
    );
}

#[test]
fn a_kept_space_holds_a_label_with_what_it_labels() {
    let k = KEEP;
    let text = format!("一覧:{k}`kca lab task --list`  採点:{k}`kca lab check`  ·{k}bg-no-secrets");
    for cols in 20..60 {
        let lines = wrap(&text, cols, "");
        for part in [
            "一覧: `kca lab task --list`",
            "採点: `kca lab check`",
            "· bg-no-secrets",
        ] {
            assert!(lines.iter().any(|l| l.contains(part)), "{cols}: {lines:?}");
        }
    }
}

#[test]
fn wrap_breaks_japanese_between_characters_and_english_at_spaces() {
    let ja =
        "Kyverno のポリシーはアドミッションコントローラーとして動作し、リクエストを検証します。";
    for line in wrap(ja, 30, "  ") {
        assert!(width(&line) <= 30, "{line:?}");
    }
    let en = "a learner never has to wonder what to run next because kca tells them";
    let lines = wrap(en, 20, "");
    for line in &lines {
        assert!(width(line) <= 20, "{line:?}");
    }
    // No word is cut: every word of the input is whole on some line.
    let joined: Vec<&str> = lines.iter().flat_map(|l| l.split_whitespace()).collect();
    assert_eq!(joined, en.split_whitespace().collect::<Vec<_>>());
}

/// A paragraph with every layout trap: Latin words and identifiers among Japanese,
/// inline code, punctuation that kinsoku keeps off a line's start or end.
const MIXED: &str = "ラベル `kca.io/owner` を残して background の Policy を並べる。\
    validate は mutate の後に動き、「生成」されたオブジェクト（Namespace）は \
    `kca lab check --offline` で確かめます。本当に? はい! 次は kyverno.io/v1 の \
    ClusterPolicy (offline) です、よね。";

fn layouts() -> impl Iterator<Item = (usize, Vec<String>)> {
    (30..=80).map(|cols| (cols, wrap(MIXED, cols, "  ")))
}

#[test]
fn a_line_break_between_japanese_and_latin_text_becomes_a_space() {
    assert_eq!(reflow("を残して\nbackground"), "を残して background");
    assert_eq!(
        reflow("validate は\nmutate の後"),
        "validate は mutate の後"
    );
    assert_eq!(reflow("日本語の\n続き"), "日本語の続き");
    assert_eq!(reflow("終わり。\nKyverno"), "終わり。Kyverno");
    assert_eq!(reflow("one\ntwo"), "one two");
}

#[test]
fn identifiers_paths_and_inline_code_are_never_split() {
    for (cols, lines) in layouts() {
        let words: Vec<&str> = lines.iter().flat_map(|l| l.split_whitespace()).collect();
        let text = lines.join("\n");
        for whole in [
            "kca.io/owner",
            "`kca lab check --offline`",
            "kyverno.io/v1",
            "(offline)",
            "ClusterPolicy",
            "background",
            "Policy",
        ] {
            assert!(
                text.contains(whole),
                "{whole} split at {cols} columns:\n{text}"
            );
        }
        assert!(!words.is_empty());
    }
}

#[test]
fn kinsoku_no_line_starts_with_a_closing_mark_or_ends_with_an_opening_one() {
    for (cols, lines) in layouts() {
        for (i, l) in lines.iter().enumerate() {
            let body = l.trim_start();
            if i > 0 {
                let first = body.chars().next().unwrap();
                assert!(
                    !no_line_start(first),
                    "{cols} columns, line starts with {first:?}: {lines:#?}"
                );
            }
            let last = body.chars().last().unwrap();
            assert!(
                !no_line_end(last),
                "{cols} columns, line ends with {last:?}: {lines:#?}"
            );
            assert!(width(l) <= cols, "{cols} columns: {l:?} is wider");
        }
    }
}

#[test]
fn a_title_wraps_like_body_text_without_cutting_a_word() {
    let title = "Lesson 2 — 変更と生成: MutatingPolicy と ClusterPolicy を並べる (offline)";
    let lines = wrap(title, 40, "");
    assert!(lines.iter().all(|l| width(l) <= 40), "{lines:?}");
    let text = lines.join("\n");
    assert!(
        text.contains("ClusterPolicy") && text.contains("(offline)"),
        "{text}"
    );
}

#[test]
fn runs_of_spaces_inside_a_detail_are_one_space() {
    assert_eq!(
        wrap("the probe did not                  match it", 80, "  "),
        vec!["  the probe did not match it".to_string()]
    );
    // A line's own indent stays, and so does a deliberate double space.
    assert_eq!(
        wrap("    code   here", 80, ""),
        vec!["    code here".to_string()]
    );
    assert_eq!(
        wrap("→ link  §title", 80, ""),
        vec!["→ link  §title".to_string()]
    );
}

#[test]
fn times_are_relative_and_localised() {
    let now = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
    let day = chrono::Duration::days(1);
    assert_eq!(relative(Lang::Ja, now + day, now), "明日");
    assert_eq!(relative(Lang::En, now + day * 3, now), "in 3 days");
    assert_eq!(
        relative(Lang::Ja, now - chrono::Duration::minutes(5), now),
        "5分前"
    );
    assert_eq!(relative(Lang::En, now - day, now), "yesterday");
    let almost = now + day - chrono::Duration::seconds(3);
    assert_eq!(
        relative(Lang::Ja, almost, now),
        "明日",
        "a due time set a moment ago"
    );
}

#[test]
fn chained_error_renders_each_cause() {
    let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "Permission denied");
    let err = Error::environment_with(
        "cannot save your progress in /ro/state/kca",
        "set XDG_STATE_HOME to a writable folder",
        anyhow::Error::new(io).context("cannot create /ro/state/kca"),
    );
    let (p, cap) = Printer::buffered(&settings(OutputFormat::Text));
    p.error(&err);
    insta::assert_snapshot!(cap.stderr(), @r"
    error: cannot save your progress in /ro/state/kca
      caused by: cannot create /ro/state/kca
      caused by: Permission denied
    hint: set XDG_STATE_HOME to a writable folder
    ");
}

#[test]
fn a_cause_of_several_lines_is_indented_under_it() {
    let err = Error::environment_with(
        "docker is installed but not answering",
        "start its daemon",
        anyhow::anyhow!(
            "`docker info` failed (exit status: 1):\nCannot connect\u{1b}[2J\nhint: forged"
        ),
    );
    let (p, cap) = Printer::buffered(&settings(OutputFormat::Text));
    p.error(&err);
    insta::assert_snapshot!(cap.stderr(), @r"
    error: docker is installed but not answering
      caused by: `docker info` failed (exit status: 1):
        Cannot connect\u{1b}[2J
        hint: forged
    hint: start its daemon
    ");
}

#[test]
fn json_mode_error_is_an_object_on_stdout() {
    let (p, cap) = Printer::buffered(&settings(OutputFormat::Json));
    p.error(&Error::usage("no quiz `x`", "see `kca quiz list`"));
    let v: serde_json::Value = serde_json::from_str(&cap.stdout()).unwrap();
    assert_eq!(v["schemaVersion"], crate::envelope::SCHEMA_VERSION);
    assert_eq!(v["error"]["message"], "no quiz `x`");
    assert_eq!(v["error"]["exitCode"], 2);
    assert_eq!(cap.stderr(), "");
}

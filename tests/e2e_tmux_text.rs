//! Japanese layout and quiz resume in a real terminal: tmux at 80 columns, LANG ja.
//! Each layout case of issue 19 (a line break between Japanese and Latin text, an
//! identifier at the edge of the screen, kinsoku, a long title, runs of spaces) is laid
//! where the 80th column falls on it. Skipped, visibly, without tmux. Screens are kept
//! in `target/e2e-screens/` for people to read.

mod common;

use std::path::Path;

use common::tmux::Tmux;

fn keep(name: &str, screen: &str) {
    let dir = common::repo().join("target/e2e-screens");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join(format!("{name}.txt")), format!("{screen}\n"));
}

/// `n` wide characters of filler text.
fn filler(n: usize) -> String {
    "あいうえおかきくけこ".chars().cycle().take(n).collect()
}

/// A course with one lesson holding every layout case, and the demo quiz.
fn course(root: &Path) {
    let m = root.join("lessons/module-0");
    std::fs::create_dir_all(&m).unwrap();
    std::fs::create_dir_all(root.join("labs")).unwrap();
    std::fs::create_dir_all(root.join("quizzes")).unwrap();
    // Paragraph lines are indented 2 columns: 35 wide characters end at column 72,
    // so `kca.io/` would end the line at 79 and `owner` start the next.
    let lesson = format!(
        "# 変更と生成: MutatingPolicy と ClusterPolicy を並べる、長いタイトルの折り返し (offline)\n\n\
         ## 節 {{#layout}}\n\n\
         {f35} kca.io/owner ラベルを付けます。\n\n\
         {f39}、読点が行頭に来てはいけません。\n\n\
         {f38}「括弧」の開きは行末に残りません。\n\n\
         {f36} gate-stops-no-digest は1語です。\n\n\
         Pod のラベルを残して\nbackground で動かします。validate は\nmutate の後です。\n\n\
         the probe did not                  match it\n",
        f35 = filler(35),
        f39 = filler(39),
        f38 = filler(38),
        f36 = filler(36),
    );
    std::fs::write(m.join("ja.md"), lesson).unwrap();
    std::fs::copy(
        common::data("quizzes/demo.yaml"),
        root.join("quizzes/demo.yaml"),
    )
    .unwrap();
}

fn session(tmp: &Path) -> Option<Tmux> {
    let content = tmp.join("content");
    course(&content);
    let kca = assert_cmd::cargo::cargo_bin("kca");
    let bin = kca.parent().unwrap().display().to_string();
    let env = [
        ("PATH", format!("{bin}:/usr/bin:/bin")),
        ("HOME", tmp.join("home").display().to_string()),
        ("XDG_STATE_HOME", tmp.join("state").display().to_string()),
        ("KCA_CONTENT_DIR", content.display().to_string()),
        ("KUBECONFIG", tmp.join("none").display().to_string()),
        ("LANG", "ja_JP.UTF-8".to_string()),
        ("TERM", "xterm-256color".to_string()),
        ("PAGER", "cat".to_string()),
        ("NO_COLOR", "1".to_string()),
        ("PS1", "$ ".to_string()),
    ];
    let t = Tmux::start(&env);
    if t.is_none() {
        eprintln!("skipped: tmux is not installed (the terminal layout test needs it)");
    }
    t
}

fn lines_of(screen: &str) -> Vec<&str> {
    screen.lines().map(str::trim_end).collect()
}

#[test]
fn japanese_layout_at_80_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(mut t) = session(tmp.path()) else {
        return;
    };
    t.wait_for("$");
    let s = t.run("kca --lang ja lesson 0");
    keep("text-01-layout", &s);
    let lines = lines_of(&s);
    for l in &lines {
        assert!(
            textwrap::core::display_width(l) <= 80,
            "wider than the screen: {l:?}"
        );
    }
    // A line break between Japanese and Latin text is a space.
    assert!(s.contains("ラベルを残して background"), "{s}");
    assert!(s.contains("validate は mutate の後"), "{s}");
    // An identifier is never split over lines.
    assert!(
        lines
            .iter()
            .any(|l| l.trim_start().starts_with("kca.io/owner")),
        "{s}"
    );
    // Nor at a hyphen: `gate-` at the end of a line and `stops-no-digest` on the next.
    assert!(
        lines
            .iter()
            .any(|l| l.trim_start().starts_with("gate-stops-no-digest")),
        "{s}"
    );
    // Kinsoku: no line starts with 、 or ends with 「.
    assert!(
        !lines.iter().any(|l| l.trim_start().starts_with('、')),
        "{s}"
    );
    assert!(!lines.iter().any(|l| l.ends_with('「')), "{s}");
    // The title wraps like body text: no word cut by the terminal.
    assert!(
        s.contains("ClusterPolicy") && s.contains("(offline)"),
        "{s}"
    );
    // No run of spaces inside a line.
    assert!(s.contains("the probe did not match it"), "{s}");
}

#[test]
fn a_stopped_quiz_is_resumed_in_a_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(mut t) = session(tmp.path()) else {
        return;
    };
    t.wait_for("$");
    t.run("clear");
    t.keys("kca --lang ja quiz run demo; echo __first__");
    t.wait_for("h: ヒント, s: スキップ, q: 終了");
    t.keys("b");
    t.wait_for("[2/6]");
    t.keys("s");
    let s = t.wait_for("[3/6]");
    assert!(s.contains("– スキップ"), "{s}");
    assert!(
        !s.contains("正解: a) A / c) C"),
        "a skip shows the answer: {s}"
    );
    t.keys("q");
    let s = t.wait_line("__first__");
    keep("text-02-quiz-stopped", &s);
    // A stop is kept for resuming: not a failed attempt, and it says how to go on.
    assert!(s.contains("- 中断 demo"), "{s}");
    assert!(!s.contains("不合格"), "a stop is shown as a fail: {s}");
    assert!(
        s.contains("`kca quiz run demo` で続きから再開できます"),
        "{s}"
    );
    t.run("clear");
    t.keys("kca --lang ja quiz run demo; echo __second__");
    let s = t.wait_for("から続けますか? [Y/n]");
    keep("text-02-quiz-resume", &s);
    assert!(s.contains("6 問中 2 問済み"), "{s}");
    t.keys("");
    let s = t.wait_for("[3/6]");
    assert!(!s.contains("[1/6]"), "{s}");
    t.keys("q");
    t.wait_line("__second__");
}

#[test]
fn usage_errors_wrap_like_every_error_in_japanese() {
    // clap's errors were printed unwrapped: at 80 columns the terminal cut `--help` in
    // two; and `--task` given no value said "'' は … の値として使えません" with an empty
    // list of values.
    let tmp = tempfile::tempdir().unwrap();
    let Some(mut t) = session(tmp.path()) else {
        return;
    };
    let s = t.run("kca lab chek");
    keep("text-03-usage-error", &s);
    let lines = lines_of(&s);
    assert!(
        lines.iter().any(|l| l.contains("--help")),
        "`--help` cut over lines:\n{s}"
    );
    assert!(
        lines.iter().all(|l| textwrap::core::display_width(l) < 80),
        "a line the terminal had to wrap:\n{s}"
    );
    let s = t.run("kca lab check --task");
    keep("text-04-missing-value", &s);
    assert!(s.contains("--task <TASK> に値がありません"), "{s}");
    assert!(!s.contains("''") && !s.contains("使える値: 。"), "{s}");
}

//! End to end in a real terminal: tmux at 80 columns, in Japanese, a learner goes
//! `kca` → `kca lesson 0` → `kca lab start --offline` → check → hint → finish → quiz →
//! review, and the test asserts what the screen shows. Skipped, visibly, without tmux.
//! The screens are written to `target/e2e-screens/` for people to read.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::tmux::Tmux;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(from, to).unwrap();
}

/// A small course: module 0 with a lesson and a lab of files and commands (no cluster),
/// module 1 with the demo quiz.
fn course(root: &Path) {
    let lab = root.join("labs/e2elab");
    let t = repo().join("tests/testlab");
    for f in ["app.yaml", "check.sh"] {
        copy(&t.join("starter").join(f), &lab.join("starter").join(f));
        copy(&t.join("solution").join(f), &lab.join("solution").join(f));
    }
    std::fs::write(
        lab.join("lab.yaml"),
        r#"apiVersion: kca.dev/v1alpha1
kind: Lab
metadata:
  id: e2elab
  title: {ja: はじめてのラボ, en: A first lab}
  module: 0
  concepts: [admission-chain]
starter: [app.yaml, check.sh]
solution: [app.yaml, check.sh]
tasks:
  - id: config
    title: {ja: 設定, en: Configuration}
    instructions: {ja: "app.yaml の data.mode を strict にします。", en: "Set data.mode to strict in app.yaml."}
    lesson: "module-0#failure-policy"
    hints:
      - {ja: data.mode を見ます。, en: Look at data.mode.}
      - {ja: "mode: strict と書きます。", en: "Write mode: strict."}
    checks:
      - id: config-file
        kind: file
        path: app.yaml
        kinds: [ConfigMap]
        matches: {kind: ConfigMap, data: {mode: strict}}
        feedback:
          fail: {ja: mode が strict ではありません。, en: mode is not strict.}
          pass: {ja: よくできました。, en: Well done.}
  - id: script
    title: {ja: スクリプト, en: Script}
    instructions: {ja: check.sh が ready と出力して 0 で終わるようにします。, en: Make check.sh print ready and exit 0.}
    hints:
      - {ja: exit 1 を消します。, en: Remove exit 1.}
    checks:
      - id: script-ok
        kind: command
        timeout: 20
        run: [bash, check.sh]
        exit: 0
        stdout: ["^ready$"]
mutants: []
"#,
    )
    .unwrap();
    for f in ["ja.md", "en.md"] {
        copy(
            &repo().join("tests/data/lessons/module-1").join(f),
            &root.join("lessons/module-0").join(f),
        );
    }
    copy(
        &repo().join("tests/data/quizzes/demo.yaml"),
        &root.join("quizzes/demo.yaml"),
    );
}

fn keep(name: &str, screen: &str) {
    let dir = repo().join("target/e2e-screens");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join(format!("{name}.txt")), format!("{screen}\n"));
}

#[test]
fn a_learner_takes_module_zero_in_japanese_at_80_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let content = tmp.path().join("content");
    course(&content);
    let kca = assert_cmd::cargo::cargo_bin("kca");
    let bin = kca.parent().unwrap().display().to_string();
    let env = [
        ("PATH", format!("{bin}:/usr/bin:/bin")),
        ("HOME", tmp.path().join("home").display().to_string()),
        (
            "XDG_STATE_HOME",
            tmp.path().join("state").display().to_string(),
        ),
        ("KCA_CONTENT_DIR", content.display().to_string()),
        (
            "KCA_WORKSPACE_ROOT",
            tmp.path().join("work").display().to_string(),
        ),
        ("KUBECONFIG", tmp.path().join("none").display().to_string()),
        ("LANG", "C.UTF-8".to_string()),
        ("TERM", "xterm-256color".to_string()),
        ("PAGER", "cat".to_string()),
        ("LESSCHARSET", "utf-8".to_string()),
        ("NO_COLOR", "1".to_string()),
        ("PS1", "$ ".to_string()),
    ];
    let Some(mut t) = Tmux::start(&env) else {
        eprintln!("skipped: tmux is not installed (the end-to-end terminal test needs it)");
        return;
    };
    t.wait_for("$");

    let map = t.run("kca");
    keep("01-kca", &map);
    assert!(map.contains("Kyverno ハンズオンコース"), "{map}");
    assert!(map.contains("モジュール 0"), "{map}");
    assert!(map.contains("はじめてのラボ"), "{map}");
    assert!(map.contains("次: kca lesson 0"), "{map}");

    let lesson = t.run("kca lesson 0");
    keep("02-kca-lesson-0", &lesson);
    assert!(
        lesson.contains("レッスン 0 — アドミッションの流れ"),
        "{lesson}"
    );
    assert!(
        lesson.contains("§ 変更は検証より先  #mutate-first"),
        "{lesson}"
    );
    assert!(
        lesson.contains("  • 変更 Webhook は順に呼ばれます"),
        "{lesson}"
    );
    assert!(lesson.contains("    spec:"), "code is indented: {lesson}");

    // Taller than the terminal: the lesson goes through the pager (less -R), q leaves it.
    let has_less = Command::new("less").arg("--version").output().is_ok();
    if !has_less {
        eprintln!("skipped the pager step: less is not installed");
    }
    t.tmux(&["resize-window", "-t", "e2e", "-x", "80", "-y", "12"]);
    if has_less {
        t.run("clear");
        t.keys("PAGER='less -R' kca lesson 0; echo __paged__");
        let paged = t.wait_for("レッスン 0 — アドミッションの流れ");
        assert!(
            !paged.contains("§ 失敗時の動作"),
            "one page at a time: {paged}"
        );
        t.keys("q");
        t.wait_line("__paged__");
    }
    t.tmux(&["resize-window", "-t", "e2e", "-x", "80", "-y", "50"]);

    let map = t.run("kca");
    assert!(map.contains("次: kca lab start e2elab --offline"), "{map}");

    let start = t.run("kca lab start e2elab --offline");
    assert!(start.contains("e2elab — はじめてのラボ"), "{start}");
    assert!(
        start.contains("次: ファイルを編集して `kca lab check`"),
        "{start}"
    );

    let check = t.run("kca lab check --all");
    keep("03-lab-check-failing", &check);
    assert!(
        check.contains("✗ 不合格 config-file (file)  0/1"),
        "{check}"
    );
    assert!(check.contains("mode が strict ではありません。"), "{check}");
    assert!(
        check.contains("ヒント: `kca lab hint --task config` (1/2)"),
        "{check}"
    );
    assert!(
        check.contains("→ kca lesson 0#failure-policy  §失敗時の動作"),
        "{check}"
    );
    assert!(check.contains("得点 0/2"), "{check}");
    // The focused check shows the task you are on; `--all` shows every task's details.
    let all = t.run("kca lab check --all");
    // The command's detail, in Japanese, wraps under its indent (its raw output waits
    // for -v).
    let at = all
        .lines()
        .position(|l| l.contains("で終わりました"))
        .unwrap_or_else(|| panic!("no command detail: {all}"));
    let detail: Vec<&str> = all.lines().skip(at).take(2).collect();
    assert!(
        detail
            .iter()
            .all(|l| l.starts_with("          ") && textwrap::core::display_width(l) <= 80),
        "long detail lines wrap under their indent: {all}"
    );
    assert!(all.contains("`-v`"), "{all}");

    let hint = t.run("kca lab hint");
    assert!(hint.contains("ヒント 1/2 — 設定 (config)"), "{hint}");
    assert!(hint.contains("data.mode を見ます。"), "{hint}");

    let ws = tmp.path().join("work/e2elab");
    for f in ["app.yaml", "check.sh"] {
        std::fs::copy(content.join("labs/e2elab/solution").join(f), ws.join(f)).unwrap();
    }
    let done = t.run("kca lab check --all");
    keep("04-lab-finished", &done);
    assert!(done.contains("✓ 1. config — 設定  1/1"), "{done}");
    assert!(done.contains("✓ ラボ完了 e2elab 2/2"), "{done}");

    let hint = t.run("kca lab hint");
    assert!(hint.contains("ヒントはもうありません"), "{hint}");

    // The quiz: right, partly, wrong (いいえ for a true statement), then quit.
    t.run("clear");
    t.keys("kca quiz run demo; echo __quiz_done__");
    t.wait_for("h: ヒント, s: スキップ, q: 終了");
    t.keys("b");
    t.wait_for("[2/6]");
    t.keys("a,c");
    t.wait_for("[3/6]");
    t.keys("いいえ");
    let s = t.wait_for("[4/6]");
    assert!(s.contains("✗ 不正解"), "{s}");
    assert!(s.contains("正解: はい (true)"), "{s}");
    t.keys("q");
    let s = t.wait_line("__quiz_done__");
    keep("05-quiz", &s);
    // A stop is kept for resuming, not graded as a fail.
    assert!(s.contains("- 中断 demo"), "{s}");
    assert!(
        s.contains("`kca quiz run demo` で続きから再開できます"),
        "{s}"
    );

    t.run("clear");
    t.keys("kca quiz review; echo __review_done__");
    let s = t.wait_for("h: ヒント, s: スキップ, q: 終了");
    assert!(
        s.contains("validateは変更後のオブジェクトを見る"),
        "the missed question is due: {s}"
    );
    t.keys("はい");
    let s = t.wait_line("__review_done__");
    keep("06-review", &s);
    assert!(s.contains("✓ 正解"), "{s}");
    assert!(s.contains("復習の結果:"), "{s}");

    let map = t.run("kca");
    keep("07-kca-after", &map);
    assert!(map.contains("✓ ラボ"), "{map}");
    assert!(map.contains("2/2"), "{map}");
    for line in map.lines() {
        assert!(textwrap::core::display_width(line) <= 80, "{line:?}");
    }
}

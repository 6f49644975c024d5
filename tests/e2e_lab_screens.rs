//! The learner's lab screens in a real terminal: tmux at 80×30, LANG=ja_JP.UTF-8, the
//! course's own labs offline. Focused check output (a failing starter fits one screen),
//! `lab task`, the incident notice, check from inside a workspace, reset from inside it,
//! `lab watch` through a task, and an offline next step. Skipped, visibly, without tmux.
//! The screens are written to `target/e2e-screens/lab-*.txt` for people to read.

#[path = "common/tmux.rs"]
mod tmux;

use std::path::{Path, PathBuf};

use tmux::Tmux;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const COLS: u16 = 80;
const ROWS: u16 = 30;

/// A terminal at 80×30 in Japanese over a throwaway home, state and workspace root, with
/// the repository's course; None (and a visible `skipped:`) without tmux.
fn terminal(tmp: &Path) -> Option<Tmux> {
    let kca = assert_cmd::cargo::cargo_bin("kca");
    let bin = kca.parent().unwrap().display().to_string();
    let env = [
        ("PATH", format!("{bin}:/usr/bin:/bin")),
        ("HOME", tmp.join("home").display().to_string()),
        ("XDG_STATE_HOME", tmp.join("state").display().to_string()),
        ("KCA_CONTENT_DIR", repo().display().to_string()),
        ("KCA_WORKSPACE_ROOT", tmp.join("work").display().to_string()),
        ("KUBECONFIG", tmp.join("none").display().to_string()),
        ("LANG", "ja_JP.UTF-8".to_string()),
        ("TERM", "xterm-256color".to_string()),
        ("PAGER", "cat".to_string()),
        ("NO_COLOR", "1".to_string()),
        ("PS1", "$ ".to_string()),
    ];
    let t = Tmux::start_sized(COLS, ROWS, &env);
    if t.is_none() {
        eprintln!("skipped: tmux is not installed (the lab screen tests need it)");
    }
    t
}

fn keep(name: &str, screen: &str) {
    let dir = repo().join("target/e2e-screens");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join(format!("lab-{name}.txt")), format!("{screen}\n"));
}

/// Every line within 80 columns.
fn narrow(screen: &str) {
    for line in screen.lines() {
        assert!(
            textwrap::core::display_width(line) <= usize::from(COLS),
            "{line:?}"
        );
    }
}

/// The output of `cmd` fitted the screen: its command line is still the top row.
fn fits(screen: &str, cmd: &str) {
    let top = screen.lines().next().unwrap_or_default();
    assert!(
        top.starts_with(&format!("$ {cmd}")),
        "`{cmd}` scrolled off a {COLS}×{ROWS} screen:\n{screen}"
    );
}

fn solve(lab: &str, files: &[&str], tmp: &Path) {
    for f in files {
        let to = tmp.join("work").join(lab).join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(repo().join("labs").join(lab).join("solution").join(f), to).unwrap();
    }
}

const MUTATE_1_TO_6: &[&str] = &[
    "policies/add-team-label.yaml",
    "policies/inject-sidecar.yaml",
    "policies/owner-annotation.yaml",
    "policies/default-deny.yaml",
    "policies/clone-ca.yaml",
    "rbac.yaml",
];

#[test]
fn a_failing_starters_check_fits_one_screen_and_shows_the_task_you_are_on() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(mut t) = terminal(tmp.path()) else {
        return;
    };
    for lab in ["kca-admission", "kca-gates", "kca-operations", "kca-mutate"] {
        t.run_screen(&format!("kca lab start {lab} --offline > /dev/null"));
        let s = t.run_screen("kca lab check");
        keep(&format!("check-{lab}"), &s);
        fits(&s, "kca lab check");
        narrow(&s);
        assert!(s.contains("得点 "), "{s}");
        assert!(s.contains("タスク 1/"), "the first task's details: {s}");
        assert!(!s.contains("タスク 2/"), "only the task you are on: {s}");
        assert!(s.contains("`kca lab check --all`"), "{s}");
    }
    let s = t.run_screen("kca lab check");
    assert!(s.contains("  ✗ 1. team-label — ラベルを注入する  "), "{s}");
    assert!(s.contains("  ✗ 8. new-kinds"), "one line per task: {s}");
    assert!(
        s.contains("タスク 1/8 — ラベルを注入する (team-label)  ["),
        "{s}"
    );
    // `--all` shows every task's details; the machine formats keep every check.
    let all = t.run_screen("kca lab check --all | grep -c '^タスク '");
    assert!(all.lines().any(|l| l.trim() == "8"), "{all}");
    // As many checks as the lab declares (every `- id:` under a task's `checks:`).
    let declared = std::fs::read_to_string(repo().join("labs/kca-mutate/lab.yaml"))
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("      - id: "))
        .count()
        .to_string();
    let json = t.run_screen("kca -o json lab check | grep -c '\"verdict\"'");
    assert!(
        json.lines().any(|l| l.trim() == declared),
        "{declared}: {json}"
    );
    let junit = t.run_screen("kca -o junit lab check | grep -c '<testcase'");
    assert!(
        junit.lines().any(|l| l.trim() == declared),
        "{declared}: {junit}"
    );

    // A task that passes says what is next, with the command.
    solve("kca-mutate", &MUTATE_1_TO_6[..1], tmp.path());
    let s = t.run_screen("kca lab check --task team-label");
    keep("check-task-passed", &s);
    assert!(
        s.contains("次: タスク 2 — サイドカーを注入する(リミット付き)"),
        "{s}"
    );
    assert!(s.contains("`kca lab task 2`"), "{s}");
}

#[test]
fn lab_task_shows_a_task_again_and_start_ends_with_the_first() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(mut t) = terminal(tmp.path()) else {
        return;
    };
    let s = t.run_screen("kca lab start kca-mutate --offline");
    keep("start", &s);
    narrow(&s);
    assert!(
        s.contains("タスク 1/8 — ラベルを注入する (team-label)"),
        "{s}"
    );
    assert!(!s.contains("タスク 2/8"), "{s}");
    assert!(s.contains("`kca lab task --list`"), "{s}");
    assert!(s.contains("全 8 タスク"), "{s}");

    let s = t.run_screen("kca lab task 2");
    keep("task-2", &s);
    fits(&s, "kca lab task 2");
    narrow(&s);
    assert!(
        s.contains("タスク 2/8 — サイドカーを注入する(リミット付き) (sidecar)"),
        "{s}"
    );
    assert!(s.contains("log-agent"), "{s}");
    assert!(s.contains("前: `kca lab task 1`"), "{s}");
    assert!(s.contains("次: `kca lab task 3`"), "{s}");

    // A label stays with what it labels: `採点:` with its command (not `採` ⏎ `点:`),
    // a check's mark with its id (no line ending in `·`).
    let s = t.run_screen("kca lab task 5");
    keep("task-5", &s);
    narrow(&s);
    let lines: Vec<&str> = s.lines().map(str::trim_end).collect();
    assert!(
        lines.iter().any(|l| l.contains("採点: `kca lab check`")),
        "{s}"
    );
    assert!(
        lines.iter().any(|l| l.contains("前: `kca lab task 4`")),
        "{s}"
    );
    assert!(!lines.iter().any(|l| l.ends_with('·')), "{s}");
    assert!(!s.contains('\u{a0}'), "a kept space shows as a space: {s}");

    let s = t.run_screen("kca lab task --list");
    keep("task-list", &s);
    fits(&s, "kca lab task --list");
    assert!(s.contains("→ · 1."), "the task you are on is marked: {s}");
    assert!(s.contains("lost-grant"), "{s}");

    let s = t.run_screen("kca lab task 9");
    assert!(s.contains("タスク 9 はありません"), "{s}");
}

#[test]
fn an_incident_is_announced_with_what_changed_and_why_checks_fail() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(mut t) = terminal(tmp.path()) else {
        return;
    };
    t.run_screen("kca lab start kca-mutate --offline > /dev/null");
    solve("kca-mutate", MUTATE_1_TO_6, tmp.path());
    let s = t.run_screen("kca lab check");
    keep("incident-check", &s);
    narrow(&s);
    assert!(
        s.contains("⚠ タスク 7 が始まりました: 事故が起きました"),
        "{s}"
    );
    // The incident revokes whichever of the learner's roles gave the grant (any name).
    assert!(s.contains("権限を与えていたロール"), "{s}");
    assert!(
        s.contains("タスク 5 ("),
        "which earlier checks and why: {s}"
    );
    assert!(s.contains("(事故の影響)"), "{s}");
    assert!(
        s.contains("タスク 7/8 — 事故対応 — 権限が後から消えた"),
        "the focus is the incident, not task 5: {s}"
    );
    assert!(!s.contains("task 7 ("), "no English notice: {s}");

    let s = t.run_screen("kca lab task");
    keep("incident-task", &s);
    narrow(&s);
    assert!(s.contains("⚠ 事故対応中 (タスク 7)"), "{s}");
    // The incident revokes whichever of the learner's roles gave the grant (any name).
    assert!(s.contains("権限を与えていたロール"), "{s}");

    // Saving rbac.yaml again re-applies the grant offline; the record closes the task.
    solve("kca-mutate", &["rbac.yaml", "incident.yaml"], tmp.path());
    let s = t.run_screen("kca lab check");
    keep("incident-fixed", &s);
    assert!(!s.contains("⚠"), "{s}");
    assert!(s.contains("✓ 7. lost-grant"), "{s}");
}

#[test]
fn check_hint_and_status_follow_the_workspace_you_are_in() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(mut t) = terminal(tmp.path()) else {
        return;
    };
    t.run_screen("kca lab start kca-mutate --offline > /dev/null");
    t.run_screen("kca lab start kca-gates --offline > /dev/null");
    let ws = tmp.path().join("work/kca-mutate/policies");
    t.run_screen(&format!("cd {}", ws.display()));
    let s = t.run_screen("kca lab check --task team-label");
    keep("check-inside", &s);
    fits(&s, "kca lab check --task team-label");
    assert!(s.contains("kca-mutate — "), "{s}");
    assert!(!s.contains("kca-gates"), "{s}");
    assert!(!s.contains("はありません"), "{s}");

    let s = t.run_screen("kca lab check --task owner-annotation");
    assert!(s.contains("owner-policy-file"), "{s}");
    let s = t.run_screen("kca lab hint");
    keep("hint-follows", &s);
    assert!(
        s.contains("ヒント 1/2 — JSON Patch でアノテーションを足す (owner-annotation)"),
        "the task that failed last: {s}"
    );

    let s = t.run_screen("kca lab status");
    assert!(s.contains("* kca-mutate"), "{s}");
    let s = t.run_screen("kca lab status kca-mutate");
    assert!(s.contains("kca-mutate"), "{s}");
    assert!(!s.contains("kca-gates"), "{s}");
}

#[test]
fn reset_inside_the_workspace_leaves_the_shell_in_a_live_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(mut t) = in_lab(tmp.path(), "kca-mutate") else {
        return;
    };
    let ws = tmp.path().join("work/kca-mutate");
    t.run_screen("echo '# my edit' >> policies/add-team-label.yaml");
    let s = t.run_screen("kca lab reset");
    keep("reset-inside", &s);
    narrow(&s);
    assert!(s.contains("作業フォルダーを"), "{s}");
    assert!(s.contains("に保管しました"), "{s}");
    // The archive's path is whole on one line (the terminal cut it at column 80).
    assert!(
        s.lines().any(|l| l
            .split("kca/archive/kca-mutate/")
            .nth(1)
            .is_some_and(|stamp| stamp.split(' ').next().is_some_and(|w| w.ends_with('Z')))),
        "{s}"
    );
    let s = t.run_screen("head -3 policies/add-team-label.yaml && ls && pwd -P");
    keep("after-reset", &s);
    assert!(!s.contains("No such file"), "{s}");
    assert!(!s.contains("# my edit"), "the starter is back: {s}");
    assert!(s.contains("rbac.yaml"), "{s}");
    assert!(s.contains(&ws.display().to_string()), "{s}");
    // The learner's edit is in the archive.
    let s = t.run_screen("grep -rl 'my edit' \"$XDG_STATE_HOME\"/kca/archive | wc -l");
    assert!(s.lines().any(|l| l.trim() == "1"), "{s}");
}

#[test]
fn watch_moves_to_the_next_task_when_a_saved_file_passes() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(mut t) = terminal(tmp.path()) else {
        return;
    };
    t.run_screen("kca lab start kca-mutate --offline > /dev/null");
    t.run_screen(&format!(
        "cd {}",
        tmp.path().join("work/kca-mutate").display()
    ));
    t.run_screen("clear");
    t.keys("kca lab watch; echo __watched__");
    let s = t.wait_for("タスク 1/8 — ラベルを注入する");
    keep("watch-1", &s);
    narrow(&s);
    let last: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(
        last[last.len() - 2].starts_with("得点 "),
        "the score line at the bottom: {s}"
    );
    assert!(last[last.len() - 1].contains("h ヒント"), "{s}");
    assert_eq!(s.lines().count(), usize::from(ROWS), "one full screen: {s}");

    solve("kca-mutate", &MUTATE_1_TO_6[..1], tmp.path());
    let s = t.wait_for("✓ タスク 1 合格! 次はタスク 2");
    let s = if s.contains("タスク 2/8") {
        s
    } else {
        t.wait_for("タスク 2/8")
    };
    keep("watch-2", &s);
    assert!(s.contains("タスク 2/8 — サイドカーを注入する"), "{s}");
    assert!(!s.contains("タスク 1/8"), "{s}");

    t.key("h");
    let s = t.wait_for("ヒント 1/2");
    keep("watch-hint", &s);
    t.key("l");
    let s = t.wait_for("→ ✗ 2.");
    assert!(s.contains("✓ 1."), "{s}");
    t.key("q");
    let s = t.wait_for("__watched__");
    assert!(s.contains("得点 "), "{s}");
}

#[test]
fn an_offline_learner_is_always_told_the_offline_next_step() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(mut t) = terminal(tmp.path()) else {
        return;
    };
    t.run_screen("kca lab start kca-admission --offline > /dev/null");
    let sol = repo().join("labs/kca-admission/solution");
    t.run_screen(&format!(
        "cp -r {}/. {}/",
        sol.display(),
        tmp.path().join("work/kca-admission").display()
    ));
    let s = t.run_screen("kca lab check");
    keep("offline-next", &s);
    narrow(&s);
    assert!(s.contains("✓ ラボ完了 kca-admission"), "{s}");
    assert!(
        s.contains("次: `kca lab start kca-operations --offline`"),
        "{s}"
    );
    // The course map, once its lessons are read, names the next lab with --offline.
    for m in 0..4 {
        t.run_screen(&format!("kca lesson {m} > /dev/null"));
    }
    let s = t.run_screen("kca");
    keep("offline-map", &s);
    assert!(s.contains("次: kca lab start kca-mutate --offline"), "{s}");
    for line in s.lines().filter(|l| l.contains("kca lab start")) {
        assert!(line.contains("--offline"), "{line}");
    }
    // A lab finished over what offline can judge counts as done offline.
    t.run_screen("kca lab start kca-operations --offline > /dev/null");
    let sol = repo().join("labs/kca-operations/solution");
    t.run_screen(&format!(
        "cp -r {}/. {}/",
        sol.display(),
        tmp.path().join("work/kca-operations").display()
    ));
    let s = t.run_screen("kca lab check");
    keep("offline-standing", &s);
    if s.contains("オフラインで完了") {
        assert!(s.contains("クラスターが必要です"), "{s}");
        assert!(s.contains("次: `kca lab start kca-gates --offline`"), "{s}");
        let s = t.run_screen("kca lab status kca-operations");
        assert!(s.contains("オフラインで完了"), "{s}");
        let s = t.run_screen("kca");
        assert!(s.contains("オフライン完了"), "{s}");
    } else {
        assert!(s.contains("✓ ラボ完了 kca-operations"), "{s}");
    }
}

/// A terminal inside the workspace of `lab`, started offline.
fn in_lab(tmp: &Path, lab: &str) -> Option<Tmux> {
    let mut t = terminal(tmp)?;
    t.run_screen(&format!("kca lab start {lab} --offline > /dev/null"));
    t.run_screen(&format!("cd {}", tmp.join("work").join(lab).display()));
    Some(t)
}

/// The screen shows `line` (an excerpt's gutter and source line) with a caret on the
/// next row under the first character of `word`.
fn caret_under(screen: &str, line: &str, word: &str) {
    let rows: Vec<&str> = screen.lines().collect();
    let at = rows
        .iter()
        .position(|r| r.contains(line))
        .unwrap_or_else(|| panic!("no `{line}`:\n{screen}"));
    let col = |r: &str, what: &str| r.find(what).map(|i| textwrap::core::display_width(&r[..i]));
    let caret = rows.get(at + 1).and_then(|r| col(r, "^"));
    assert_eq!(
        caret,
        col(rows[at], word),
        "caret under `{word}`:\n{screen}"
    );
}

/// The screen's lines that hold `what`.
fn count(screen: &str, what: &str) -> usize {
    screen.lines().filter(|l| l.contains(what)).count()
}

#[test]
fn check_details_speak_japanese_and_a_broken_file_is_one_problem() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(mut t) = in_lab(tmp.path(), "kca-mutate") else {
        return;
    };
    // The probe's detail is said in Japanese, the path under it stays as data.
    let s = t.run_screen("kca lab check --task team-label");
    keep("detail-ja", &s);
    narrow(&s);
    assert!(s.contains("プローブ Pod kca-mutate/"), "{s}");
    assert!(s.contains("`metadata.labels.team` がありません"), "{s}");
    assert!(s.contains("`spec.rules` が空です"), "{s}");
    for en in [
        "was admitted",
        "is missing",
        "expected an item like",
        "is empty",
    ] {
        assert!(!s.contains(en), "English `{en}` on a Japanese screen:\n{s}");
    }
    // The expected shape waits for a hint.
    assert!(!s.contains("期待する項目の"), "{s}");
    t.run_screen("kca lab hint --task team-label > /dev/null");
    let s = t.run_screen("kca lab check --task team-label");
    assert!(s.contains("期待する項目の"), "after a hint: {s}");

    // A correct policy saved beside policies/: where it is and where it should be.
    let sol = repo().join("labs/kca-mutate/solution/policies/add-team-label.yaml");
    t.run_screen(&format!("cp {} team.yaml", sol.display()));
    let s = t.run_screen("kca lab check --task team-label");
    keep("detail-elsewhere", &s);
    narrow(&s);
    assert!(s.contains("`team.yaml` にあります"), "{s}");
    assert!(
        s.contains("mv team.yaml policies/add-team-label.yaml"),
        "{s}"
    );
    t.run_screen("rm team.yaml");

    // A YAML syntax error: one file problem with file:line:col, shown once; the checks
    // that depend on it are not judged, each pointing at it in one line.
    t.run_screen(
        "printf 'kind: ClusterPolicy\\nmetadata:\\n  name: x\\nspec:\\n  rules:\\n  - name: a\\n   match: {}\\n' > policies/add-team-label.yaml",
    );
    let s = t.run_screen("kca lab check --task team-label");
    keep("detail-broken-yaml", &s);
    narrow(&s);
    fits(&s, "kca lab check --task team-label");
    assert_eq!(count(&s, "ファイルの問題 ("), 1, "{s}");
    assert_eq!(
        count(&s, "policies/add-team-label.yaml:7:4"),
        1,
        "once: {s}"
    );
    assert!(
        count(&s, "判定できません: 上の「ファイルの問題」") >= 2,
        "{s}"
    );
    assert!(!s.contains("not valid YAML"), "{s}");
    // The line itself and a caret under the column, as a compiler shows them.
    caret_under(&s, "7 |    match: {}", "match");
    assert!(
        s.contains("! エラー label-added"),
        "blocked, not failed: {s}"
    );
    // The lab's words about the policy's content are not shown for a file that does not
    // parse: they would mislead.
    assert!(!s.contains("patchStrategicMerge が見つかりません"), "{s}");
}

#[test]
fn tools_output_waits_for_verbose_and_graders_speak_one_language() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(mut t) = in_lab(tmp.path(), "kca-operations") else {
        return;
    };
    let s = t.run_screen("kca lab check --task ha-values");
    keep("tools-summary", &s);
    narrow(&s);
    assert!(
        s.contains("`bash values.sh` が終了コード 1 で終わりました"),
        "{s}"
    );
    assert!(s.contains("出力は `-v` で表示します"), "{s}");
    for raw in ["HelmValues", "graders/values.sh", "✗ FAIL"] {
        assert!(!s.contains(raw), "raw output `{raw}` without -v:\n{s}");
    }
    let s = t.run_screen("kca lab check --task ha-values -v 2>&1 | grep -c HelmValues");
    assert!(
        s.lines()
            .any(|l| l.trim().parse::<u32>().is_ok_and(|n| n > 0)),
        "{s}"
    );
    // A grader's own lines are in the learner's language only.
    let s = t.run_screen("kca lab check --task policy-test -v");
    keep("tools-verbose", &s);
    for mixed in ["/ the tests", "/ nothing was graded", "run no row"] {
        assert!(!s.contains(mixed), "two languages: {s}");
    }
    // The expected regex of a command check waits for a hint (or -v).
    let s = t.run_screen("kca lab check --task policy-test");
    assert!(!s.contains("/(?"), "{s}");
}

#[test]
fn kubeconfig_and_cluster_tool_errors_are_japanese_and_wrapped() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(mut t) = terminal(tmp.path()) else {
        return;
    };
    let s = t.run_screen("kca cluster status");
    keep("kubeconfig-error", &s);
    narrow(&s);
    let missing = tmp.path().join("none").display().to_string();
    assert!(s.contains("エラー: kubeconfig:"), "{s}");
    assert!(s.contains("がありません"), "{s}");
    assert!(
        !s.contains(&format!("'\"{missing}\"'")),
        "a Rust-Debug path: {s}"
    );
    assert!(!s.contains("No such file"), "{s}");
    assert!(s.contains("ヒント: --kubeconfig か --context"), "{s}");
    // Every tool `cluster up` needs and lacks, at once, each with how to get it.
    let s = t.run_screen("PATH=/nonexistent:$(dirname $(command -v kca)) kca cluster up");
    keep("cluster-tools", &s);
    narrow(&s);
    for tool in ["・kind", "・helm", "・コンテナーエンジン"] {
        assert!(s.contains(tool), "{s}");
    }
    assert!(
        s.contains("kind.sigs.k8s.io") && s.contains("helm.sh"),
        "{s}"
    );
    assert!(!s.contains("is not installed"), "{s}");
}

#[test]
fn a_lesson_read_offline_suggests_offline_commands() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(mut t) = terminal(tmp.path()) else {
        return;
    };
    t.run_screen("kca lab start kca-admission --offline > /dev/null");
    let s = t.run_screen("kca lesson 0 | grep 'kca lab start'");
    keep("lesson-offline", &s);
    assert!(s.contains("`kca lab start kca-mutate --offline`"), "{s}");
    for line in s.lines().skip(1).filter(|l| l.contains("kca lab start")) {
        assert!(line.contains("--offline"), "{line}");
    }
}

#[test]
fn a_broken_file_given_to_a_command_shows_its_line_and_a_caret_in_japanese() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(mut t) = terminal(tmp.path()) else {
        return;
    };
    t.run_screen(&format!("cd {}", tmp.path().display()));
    t.run_screen(
        "printf 'apiVersion: kyverno.io/v1\\nkind: ClusterPolicy\\nmetadata:\\n  name: [x\\n' > p.yaml",
    );
    t.run_screen("printf 'apiVersion: v1\\nkind: Pod\\nmetadata:\\n  name: x\\n' > pod.yaml");
    for cmd in [
        "kca policy apply p.yaml --resource pod.yaml",
        "kca auth can-i get pods --as a -f p.yaml",
        "kca jp query -i p.yaml metadata",
    ] {
        let s = t.run_screen(cmd);
        keep(
            &format!("file-error-{}", cmd.split(' ').nth(1).unwrap()),
            &s,
        );
        narrow(&s);
        fits(&s, cmd);
        assert_eq!(
            count(&s, "p.yaml:4:9: error: YAML として読めません"),
            1,
            "{s}"
        );
        caret_under(&s, "4 |   name: [x", "[x");
        assert!(s.contains("エラー: ファイルに 1 件の問題があります"), "{s}");
        assert!(s.contains("ヒント: 上の問題を直してから"), "{s}");
        assert!(!s.contains("hint:") && !s.contains("problem(s)"), "{s}");
    }
    // A values file of the wrong shape: said in Japanese, Kyverno's field names as data.
    t.run_screen(
        "printf 'apiVersion: kyverno.io/v1\\nkind: ClusterPolicy\\nmetadata:\\n  name: p\\nspec:\\n  rules: []\\n' > ok.yaml",
    );
    t.run_screen("printf 'policies: 3\\n' > values.yaml");
    let cmd = "kca policy apply ok.yaml --resource pod.yaml --values-file values.yaml";
    let s = t.run_screen(cmd);
    keep("values-file-error", &s);
    narrow(&s);
    assert!(s.contains("値ファイルの形ではありません"), "{s}");
    assert!(s.contains("ヒント: globalValues・values"), "{s}");
    assert!(!s.contains("not a values file"), "{s}");
}

//! The candidates of each completed position, and the scripts each shell accepts.

use super::*;

fn w(line: &str) -> Vec<String> {
    let mut words: Vec<String> = line.split(' ').map(str::to_string).collect();
    if line.ends_with(' ') {
        words.pop();
        words.push(String::new());
    }
    words
}

fn kind_at(line: &str) -> Option<(Kind, Option<String>)> {
    at_cursor(&w(line)).map(|(k, c, _)| (k, c))
}

#[test]
fn each_position_names_what_it_completes() {
    use Kind::*;
    for cmd in [
        "start", "check", "show", "hint", "reset", "status", "verify", "watch",
    ] {
        assert_eq!(
            kind_at(&format!("lab {cmd} ")),
            Some((Labs, None)),
            "lab {cmd}"
        );
    }
    assert_eq!(kind_at("lab verify kca-mutate kca-"), Some((Labs, None)));
    for cmd in ["run", "grade", "key", "review"] {
        assert_eq!(
            kind_at(&format!("quiz {cmd} mod")),
            Some((Quizzes, None)),
            "quiz {cmd}"
        );
    }
    assert_eq!(kind_at("lesson "), Some((Lessons, None)));
    assert_eq!(
        kind_at("lesson 1 --section "),
        Some((Sections, Some("1".into())))
    );
    assert_eq!(kind_at("lab task "), Some((Tasks, None)));
    assert_eq!(
        kind_at("lab task --lab kca-gates "),
        Some((Tasks, Some("kca-gates".into())))
    );
    assert_eq!(kind_at("lab task --lab "), Some((Labs, None)));
    assert_eq!(
        kind_at("lab check kca-mutate --task "),
        Some((Tasks, Some("kca-mutate".into())))
    );
    assert_eq!(
        kind_at("lab check --task=x kca-mutate --task po"),
        Some((Tasks, Some("kca-mutate".into())))
    );
    assert_eq!(
        kind_at("grade kca-gates --task "),
        Some((Tasks, Some("kca-gates".into())))
    );
    assert_eq!(kind_at("-o json --lang ja lab hint "), Some((Labs, None)));
    // Global options with values are skipped, flags are not completed here, and
    // positions that are not ids are left to the static script.
    assert_eq!(kind_at("lab check --"), None);
    assert_eq!(kind_at("lab new "), None);
    assert_eq!(kind_at("lab check kca-mutate "), None);
    assert_eq!(kind_at("report "), None);
    assert_eq!(kind_at("la"), None);
    assert_eq!(
        at_cursor(&w("--content-dir /c lab start ")).map(|(_, _, c)| c),
        Some(Some(PathBuf::from("/c")))
    );
}

fn course() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let content = tmp.path().join("content");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for lab in ["kca-demo", "kca-other"] {
        crate::lab::scaffold::new_lab(&content.join("labs"), lab).unwrap();
    }
    std::fs::create_dir_all(content.join("quizzes")).unwrap();
    std::fs::copy(
        repo.join("quizzes/module-1.yaml"),
        content.join("quizzes/module-1.yaml"),
    )
    .unwrap();
    let lessons = content.join("lessons/module-0");
    std::fs::create_dir_all(&lessons).unwrap();
    std::fs::write(
        lessons.join("ja.md"),
        "# 第0章\n\n## 一 {#first}\n\nx\n\n## 二 {#second}\n\ny\n",
    )
    .unwrap();
    std::fs::write(
        lessons.join("en.md"),
        "# Module 0\n\n## One {#first}\n\nx\n\n## Two {#second}\n\ny\n",
    )
    .unwrap();
    (tmp, content)
}

#[test]
fn candidates_come_from_the_content_folder_and_the_progress() {
    let (tmp, content) = course();
    let store = crate::state::Store::new(tmp.path().join("state"));
    let src = Source {
        content_dir: content.clone(),
        store: &store,
    };
    assert_eq!(
        candidates(&src, Kind::Labs, "", None),
        ["kca-demo", "kca-other"]
    );
    assert_eq!(candidates(&src, Kind::Labs, "kca-o", None), ["kca-other"]);
    assert_eq!(candidates(&src, Kind::Quizzes, "", None), ["module-1"]);
    let tasks = candidates(&src, Kind::Tasks, "", Some("kca-demo"));
    assert_eq!(
        tasks.first().map(String::as_str),
        Some("write-policy"),
        "{tasks:?}"
    );
    assert!(
        tasks.contains(&"generate-defaults".to_string()),
        "{tasks:?}"
    );
    assert_eq!(
        candidates(&src, Kind::Tasks, "gen", Some("kca-demo")),
        ["generate-defaults"]
    );
    // No lab named and none started: no tasks rather than a guess.
    assert!(candidates(&src, Kind::Tasks, "", None).is_empty());
    assert!(candidates(&src, Kind::Tasks, "", Some("no-such-lab")).is_empty());
    assert_eq!(
        candidates(&src, Kind::Lessons, "", None),
        ["0", "0#first", "0#second"]
    );
    assert_eq!(candidates(&src, Kind::Sections, "s", Some("0")), ["second"]);
    assert_eq!(
        candidates(&src, Kind::Sections, "", Some("module-0")),
        ["first", "second"]
    );
    // The started lab is the one whose tasks `lab task` completes.
    crate::lab::progress::update(&store, |p| p.current = Some("kca-other".into())).unwrap();
    assert_eq!(
        candidates(&src, Kind::Tasks, "write", None),
        ["write-policy"]
    );
}

fn run_shell(program: &str, args: &[&str], script: &str) -> Option<std::process::Output> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("kca-completion");
    std::fs::write(&file, script).unwrap();
    let mut cmd = std::process::Command::new(program);
    cmd.args(args).arg(&file);
    match cmd.output() {
        Ok(out) => Some(out),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!(
                "skipped: {program} is not installed, its completion script is not syntax-checked"
            );
            None
        }
        Err(e) => panic!("{program}: {e}"),
    }
}

#[test]
fn each_shell_accepts_its_script() {
    for (shell, program, args) in [
        (Shell::Bash, "bash", &["-n"][..]),
        (Shell::Zsh, "zsh", &["-n"][..]),
        (Shell::Fish, "fish", &["--no-execute"][..]),
    ] {
        let text = script(shell);
        assert!(text.contains("__complete line"), "{shell:?}");
        if let Some(out) = run_shell(program, args, &text) {
            assert!(
                out.status.success(),
                "{program} refuses the script: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    let bash = script(Shell::Bash);
    assert!(
        bash.contains("complete -F _kca_dynamic"),
        "the hook is what bash calls"
    );
    assert!(
        !bash.contains("complete -F _kca "),
        "clap's own registration is replaced"
    );
    let zsh = script(Shell::Zsh);
    assert!(zsh.contains("_kca_static() {") && zsh.contains("compdef _kca kca"));
    assert_eq!(zsh.matches("funcstack[1]").count(), 1, "one dispatch block");
}

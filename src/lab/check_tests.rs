//! Tests of `lab::check`: the `file` and `command` kinds and the judges.

use super::*;
use serde_json::json;

fn command_check(script: &str, timeout: std::time::Duration) -> Check {
    Check {
        id: "cmd".into(),
        title: None,
        points: 1,
        timeout,
        on_fail: None,
        on_pass: None,
        guard: false,
        spec: Spec::Command {
            run: vec!["sh".into(), "-c".into(), script.into()],
            env: Default::default(),
            stdin: None,
            exit: ExitWant::Code(0),
            stdout: vec![regex::Regex::new("^ok").unwrap()],
            stderr: vec![],
            skip_exit: None,
        },
    }
}

/// `tests/testlab`, the lab the command checks run in.
fn test_lab() -> Lab {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/testlab/lab.yaml");
    let Ok(crate::content::Document::Lab(lab)) = crate::content::load_file(&path) else {
        panic!("the test lab does not load");
    };
    *lab
}

fn run_command(script: &str, timeout: std::time::Duration) -> Outcome {
    let lab = test_lab();
    let ws = tempfile::tempdir().unwrap();
    let sub = Submission {
        lab: &lab,
        workspace: ws.path(),
    };
    command(sub, &command_check(script, timeout))
}

#[test]
fn a_declared_skip_exit_is_skipped_with_the_last_words_and_others_still_fail() {
    let lab = test_lab();
    let ws = tempfile::tempdir().unwrap();
    let sub = Submission {
        lab: &lab,
        workspace: ws.path(),
    };
    let with_skip = |script: &str| {
        let mut c = command_check(script, std::time::Duration::from_secs(20));
        if let Spec::Command { skip_exit, .. } = &mut c.spec {
            *skip_exit = Some(77);
        }
        command(sub, &c)
    };
    let o = with_skip("echo 'helm is not on PATH' >&2; echo; exit 77");
    assert_eq!(o.verdict, Verdict::Skipped, "{o:?}");
    assert!(
        o.detail
            .to_string()
            .contains("cannot judge here: helm is not on PATH"),
        "{o:?}"
    );
    // Another non-zero code is still a failure; 77 without `skipExit` too.
    assert_eq!(with_skip("exit 3").verdict, Verdict::Fail);
    let plain = run_command("exit 77", std::time::Duration::from_secs(20));
    assert_eq!(plain.verdict, Verdict::Fail, "{plain:?}");
}

#[test]
fn a_command_leaving_a_background_child_does_not_hang_the_check() {
    let started = std::time::Instant::now();
    let o = run_command(
        "sleep 1002 & echo $! > orphan.pid; echo ok",
        std::time::Duration::from_secs(20),
    );
    assert_eq!(o.verdict, Verdict::Pass, "{o:?}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_command_past_its_timeout_is_an_error_and_its_group_is_killed() {
    let started = std::time::Instant::now();
    let o = run_command("sleep 1007 & sleep 1008", std::time::Duration::from_secs(1));
    assert_eq!(o.verdict, Verdict::Error, "{o:?}");
    assert!(
        o.detail.to_string().contains("did not finish within 1s"),
        "{}",
        o.detail
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn huge_command_output_is_capped_and_said() {
    let o = run_command(
        "echo ok; head -c 6000000 /dev/zero | tr '\\0' x",
        std::time::Duration::from_secs(20),
    );
    assert_eq!(o.verdict, Verdict::Pass, "{o:?}");
    assert!(
        o.detail.to_string().contains("output truncated"),
        "{}",
        o.detail
    );
    assert!(
        o.detail.to_string().len() < 2000,
        "the detail holds no more than a short tail of the output"
    );
}

#[test]
fn broken_learner_yaml_is_feedback_with_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("p.yaml");
    std::fs::write(&f, "kind: ClusterPolicy\nspec:\n  rules: [\n").unwrap();
    let o = file(tmp.path(), "p.yaml", true, &[], None);
    assert_eq!(o.verdict, Verdict::Fail);
    let problems = o.detail.file_problems();
    assert!(
        problems.len() == 1 && problems[0].starts_with("p.yaml:3:"),
        "{problems:?}"
    );
    assert!(
        o.detail.to_string().contains("YAML syntax error"),
        "{}",
        o.detail
    );
}

#[test]
fn file_kinds_and_partial_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("p.yaml");
    std::fs::write(
        &f,
        "kind: ConfigMap\nmetadata: {name: a}\n---\nkind: ClusterPolicy\nmetadata: {name: b}\nspec: {background: true}\n",
    )
    .unwrap();
    let kinds = vec!["ClusterPolicy".to_string()];
    assert_eq!(
        file(tmp.path(), "p.yaml", true, &kinds, None).verdict,
        Verdict::Pass
    );
    let missing = vec!["Role".to_string()];
    let o = file(tmp.path(), "p.yaml", true, &missing, None);
    assert!(
        o.detail
            .to_string()
            .contains("no `Role` (found: ConfigMap, ClusterPolicy)"),
        "{o:?}"
    );
    let want =
        json!({"kind": "ClusterPolicy", "metadata": {"name": "b"}, "spec": {"background": false}});
    let o = file(tmp.path(), "p.yaml", true, &[], Some(&want));
    assert_eq!(o.verdict, Verdict::Fail);
    assert!(
        o.detail
            .to_string()
            .contains("`spec.background` is true, expected false"),
        "{o:?}"
    );
    let absent = file(tmp.path(), "x.yaml", true, &[], None);
    assert_eq!(absent.verdict, Verdict::Fail);
}

#[test]
fn a_fifo_or_a_link_out_of_the_workspace_is_feedback_not_a_hang() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(tmp.path().join("secret.yaml"), "kind: SECRET-xyz\n").unwrap();
    std::os::unix::fs::symlink(tmp.path().join("secret.yaml"), ws.join("p.yaml")).unwrap();
    let kinds = vec!["ClusterPolicy".to_string()];
    let o = file(&ws, "p.yaml", true, &kinds, None);
    assert_eq!(o.verdict, Verdict::Fail);
    assert!(
        o.detail.to_string().contains("leads outside the workspace"),
        "{o:?}"
    );
    assert!(!o.detail.to_string().contains("SECRET-xyz"), "{o:?}");
    let fifo = std::ffi::CString::new(ws.join("f.yaml").as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let o = file(&ws, "f.yaml", true, &kinds, None);
    assert!(o.detail.to_string().contains("named pipe"), "{o:?}");
}

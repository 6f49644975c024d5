//! `kca lab …` and `kca validate` on labs, end to end: hermetic (temp HOME, XDG state,
//! workspace root and content folder; no kubeconfig), `--color never`.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

struct Env {
    tmp: tempfile::TempDir,
}

impl Env {
    /// A content folder holding the test lab (copied, so tests may edit it).
    fn new() -> Env {
        let env = Env {
            tmp: tempfile::tempdir().unwrap(),
        };
        copy_dir(
            &repo().join("tests/testlab"),
            &env.content().join("labs/testlab"),
        );
        std::fs::create_dir_all(env.content().join("quizzes")).unwrap();
        env
    }

    fn content(&self) -> PathBuf {
        self.tmp.path().join("content")
    }
    fn home(&self) -> PathBuf {
        self.tmp.path().join("home")
    }
    fn state(&self) -> PathBuf {
        self.tmp.path().join("state/kca")
    }
    fn ws(&self) -> PathBuf {
        self.tmp.path().join("work/testlab")
    }

    fn kca(&self) -> Command {
        self.kca_in("en")
    }

    fn kca_in(&self, lang: &str) -> Command {
        let mut c = Command::cargo_bin("kca").unwrap();
        c.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home())
            .env("XDG_STATE_HOME", self.tmp.path().join("state"))
            .env("KCA_WORKSPACE_ROOT", self.tmp.path().join("work"))
            .env("KUBECONFIG", self.tmp.path().join("no-such-kubeconfig"))
            .args(["--color", "never", "--lang", lang, "--content-dir"])
            .arg(self.content());
        c
    }

    fn start_offline(&self) {
        self.kca()
            .args(["lab", "start", "testlab", "--offline"])
            .assert()
            .success();
    }

    fn solve(&self, file: &str) {
        std::fs::copy(
            self.content().join("labs/testlab/solution").join(file),
            self.ws().join(file),
        )
        .unwrap();
    }
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

fn json_of(out: &[u8]) -> Value {
    serde_json::from_slice(out)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(out)))
}

#[test]
fn validate_reports_every_lab_problem_with_its_position() {
    let env = Env::new();
    let lab = env.content().join("labs/testlab/lab.yaml");
    let src = std::fs::read_to_string(&lab).unwrap();
    let broken = src
        .replace("fixtures/namespace.yaml", "fixtures/missing.yaml")
        .replace("kind: command", "kind: shell")
        .replace(
            "fails: [config-file, config-resource]",
            "fails: [config-fil, config-resource]",
        );
    std::fs::write(&lab, broken).unwrap();
    env.kca()
        .arg("validate")
        .arg(env.content().join("labs"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "lab.yaml:18:12: error: missing fixture file `fixtures/missing.yaml`",
        ))
        .stderr(predicate::str::contains(
            "error: unknown check kind `shell`",
        ))
        .stderr(predicate::str::contains(
            "error: mutant names unknown check `config-fil`",
        ))
        .stderr(predicate::str::contains(
            "hint: did you mean `config-file`?",
        ));
}

#[test]
fn validate_accepts_the_course_labs_and_the_test_lab() {
    let env = Env::new();
    env.kca()
        .arg("validate")
        .arg(repo().join("labs"))
        .arg(repo().join("tests/testlab"))
        .assert()
        .success()
        .stdout(predicate::str::contains("file(s) valid"));
}

#[test]
fn lab_new_scaffolds_a_lab_that_validates_and_refuses_to_overwrite() {
    let env = Env::new();
    let dir = env.tmp.path().join("newlabs");
    env.kca()
        .args(["lab", "new", "kca-fresh", "--dir"])
        .arg(&dir)
        .assert()
        .success()
        .stdout(predicate::str::contains("created"));
    env.kca()
        .arg("validate")
        .arg(dir.join("kca-fresh"))
        .assert()
        .success();
    env.kca()
        .args(["lab", "new", "kca-fresh", "--dir"])
        .arg(&dir)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("already exists"));
}

#[test]
fn lab_list_in_text_and_json() {
    let env = Env::new();
    env.kca()
        .args(["lab", "list"])
        .assert()
        .success()
        .stdout(predicate::str::contains("testlab").and(predicate::str::contains("Test lab")));
    let out = env
        .kca()
        .args(["-o", "json", "lab", "list"])
        .output()
        .unwrap();
    let v = json_of(&out.stdout);
    assert_eq!(v["schemaVersion"], 1);
    assert_eq!(v["labs"][0]["id"], "testlab");
    assert_eq!(v["labs"][0]["started"], false);
    assert_eq!(v["labs"][0]["maxScore"], 9);
}

#[test]
fn start_and_check_offline_grade_the_workspace() {
    let env = Env::new();
    env.kca()
        .args(["lab", "start", "testlab", "--offline"])
        .assert()
        .success()
        .stdout(predicate::str::contains("app.yaml"));
    let readme = std::fs::read_to_string(env.ws().join("README.md")).unwrap();
    assert!(readme.contains("namespace kca-testlab"), "{readme}");
    assert!(readme.contains(&env.ws().display().to_string()), "{readme}");
    // Focused: the first unfinished task's details only; `--all` shows every task's.
    env.kca()
        .args(["lab", "check"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("✗ FAIL  config-file (file)  0/1"))
        .stdout(predicate::str::contains("reader-can-get").not());
    env.kca()
        .args(["lab", "check", "--all"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("✗ FAIL  config-file (file)  0/1"))
        .stdout(predicate::str::contains("mode is not strict."))
        .stdout(predicate::str::contains(
            "hint: `kca lab hint --task config` (1 of 2)",
        ))
        .stdout(predicate::str::contains(
            "✗ FAIL  reader-can-get (can-i)  0/1",
        ))
        .stdout(predicate::str::contains(
            "✗ FAIL  reader-cannot-delete (can-i)  0/1",
        ));
    env.solve("app.yaml");
    env.solve("check.sh");
    env.kca()
        .args(["lab", "check", "--task", "config"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "✓ PASS  config-resource (resource)  2/2",
        ))
        .stdout(predicate::str::contains("Well done."));
    let out = env
        .kca()
        .args(["-o", "json", "lab", "check", "--task", "script"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v = json_of(&out.stdout);
    assert_eq!(v["schemaVersion"], 1);
    assert_eq!(v["tasks"][0]["checks"][0]["verdict"], "pass");
    assert_eq!(v["score"], 1);
    // The policy and RBAC tasks are not done yet.
    let out = env
        .kca()
        .args(["-o", "junit", "lab", "check"])
        .output()
        .unwrap();
    let xml = String::from_utf8_lossy(&out.stdout);
    assert!(xml.contains("<testsuite"), "{xml}");
    assert!(xml.contains("config-file"), "{xml}");
    assert_eq!(out.status.code(), Some(1), "{xml}");
    // Everything solved: admission, generate and can-i judged in-process, all pass.
    env.solve("policy.yaml");
    env.solve("rbac.yaml");
    env.kca()
        .args(["lab", "check"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "score 9/9 — 8 passed, 0 failed, 0 errors, 0 skipped",
        ));
}

#[test]
fn broken_learner_yaml_is_feedback_with_a_line_number() {
    let env = Env::new();
    env.start_offline();
    std::fs::write(
        env.ws().join("app.yaml"),
        "kind: ConfigMap\ndata:\n  mode: [strict\n",
    )
    .unwrap();
    env.kca()
        .args(["lab", "check", "--task", "config"])
        .assert()
        .code(1)
        // One file problem with its position, shown once; the check that depends on it is
        // not judged and points at it.
        .stdout(predicate::function(|out: &str| {
            out.matches("app.yaml:3:9:").count() == 1
                && out.contains("file problems")
                && out.contains("not judged: fix the file problem above (app.yaml) first")
        }));
}

#[test]
fn start_is_idempotent_and_never_overwrites_learner_files() {
    let env = Env::new();
    env.start_offline();
    std::fs::write(env.ws().join("app.yaml"), "# mine\n").unwrap();
    std::fs::remove_file(env.ws().join("check.sh")).unwrap();
    env.kca()
        .args(["lab", "start", "testlab", "--offline"])
        .assert()
        .success()
        .stdout(predicate::str::contains("= app.yaml (yours, kept)"))
        .stdout(predicate::str::contains("+ check.sh"));
    assert_eq!(
        std::fs::read_to_string(env.ws().join("app.yaml")).unwrap(),
        "# mine\n"
    );
}

#[test]
fn hints_are_shown_one_more_each_time_and_remembered() {
    let env = Env::new();
    env.start_offline();
    env.kca()
        .args(["lab", "hint", "--task", "config"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("hint 1/2")
                .and(predicate::str::contains("Look at data.mode.")),
        );
    env.kca()
        .args(["lab", "hint", "--task", "config"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("hint 2/2")
                .and(predicate::str::contains("Write mode: strict.")),
        );
    env.kca()
        .args(["lab", "hint", "--task", "config"])
        .assert()
        .success()
        .stdout(predicate::str::contains("hint 2/2"))
        .stderr(predicate::str::contains("last hint"));
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(env.state().join("labs.json")).unwrap())
            .unwrap();
    assert_eq!(state["data"]["labs"]["testlab"]["hints"]["config"], 2);
    // Without --task: the first task not passed yet.
    env.kca()
        .args(["-o", "json", "lab", "hint"])
        .assert()
        .success()
        .stdout(predicate::str::contains("\"task\": \"config\""));
    // The check report asks for the next hint only while one is left.
    env.kca()
        .args(["lab", "check", "--task", "config"])
        .assert()
        .stdout(predicate::str::contains("kca lab hint --task config").not());
}

#[test]
fn reset_archives_the_whole_workspace_before_restoring_the_starters() {
    let env = Env::new();
    env.start_offline();
    std::fs::write(env.ws().join("app.yaml"), "# my answer\n").unwrap();
    std::fs::create_dir_all(env.ws().join("notes")).unwrap();
    std::fs::write(env.ws().join("notes/todo.md"), "ideas").unwrap();
    env.kca()
        .args(["lab", "reset", "testlab"])
        .assert()
        .success()
        .stdout(predicate::str::contains("archived your workspace to"));
    let archives: Vec<PathBuf> = std::fs::read_dir(env.state().join("archive/testlab"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(archives.len(), 1);
    let a = &archives[0];
    assert_eq!(
        std::fs::read_to_string(a.join("app.yaml")).unwrap(),
        "# my answer\n"
    );
    assert_eq!(
        std::fs::read_to_string(a.join("notes/todo.md")).unwrap(),
        "ideas"
    );
    assert!(a.join("check.sh").is_file());
    let restored = std::fs::read_to_string(env.ws().join("app.yaml")).unwrap();
    assert!(restored.contains("mode: lax"), "{restored}");
    assert!(!env.ws().join("notes").exists());
    // A second reset archives again, next to the first.
    std::thread::sleep(std::time::Duration::from_millis(5));
    env.kca()
        .args(["lab", "reset", "testlab"])
        .assert()
        .success();
    assert_eq!(
        std::fs::read_dir(env.state().join("archive/testlab"))
            .unwrap()
            .count(),
        2
    );
}

#[test]
fn cluster_commands_refuse_before_touching_anything_when_the_cluster_is_unusable() {
    let env = Env::new();
    env.kca().args(["lab", "start", "testlab"]).assert().code(3);
    assert!(!env.ws().exists(), "start scaffolded despite the failure");
    env.start_offline();
    std::fs::write(env.ws().join("app.yaml"), "# keep me\n").unwrap();
    env.kca()
        .args(["lab", "reset", "testlab", "--context", "nowhere"])
        .assert()
        .code(3);
    assert_eq!(
        std::fs::read_to_string(env.ws().join("app.yaml")).unwrap(),
        "# keep me\n"
    );
    assert!(!env.state().join("archive").exists());
}

#[test]
fn check_and_hint_need_a_started_lab() {
    let env = Env::new();
    env.kca()
        .args(["lab", "check"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no lab started yet"))
        .stderr(predicate::str::contains("kca lab start"));
    env.kca()
        .args(["lab", "check", "testlab"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is not started"));
    env.kca()
        .args(["lab", "start", "tesstlab", "--offline"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("did you mean `testlab`?"));
}

#[test]
fn status_lists_started_labs() {
    let env = Env::new();
    env.start_offline();
    env.kca().args(["lab", "check"]).assert().code(1);
    env.kca().args(["lab", "status"]).assert().success().stdout(
        predicate::str::contains("* testlab")
            .and(predicate::str::contains("0/9"))
            .and(predicate::str::contains("offline)")),
    );
}

/// Verify on the test lab: the starter fails, the solution passes every check (RBAC and
/// Kyverno evaluated in-process), each mutant fails what it names.
#[test]
fn verify_offline_on_the_test_lab() {
    let env = Env::new();
    let out = env
        .kca()
        .args(["-o", "json", "lab", "verify", "--offline", "testlab"])
        .output()
        .unwrap();
    let v = json_of(&out.stdout);
    let lab = &v["labs"][0];
    assert_eq!(lab["starter"]["ok"], true, "{v}");
    let mutant = |id: &str| {
        lab["mutants"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == format!("mutant {id}"))
            .cloned()
            .unwrap()
    };
    assert_eq!(mutant("wrong-mode")["ok"], true, "{v}");
    assert_eq!(mutant("script-fails")["ok"], true, "{v}");
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(lab["ok"], true, "{v}");
    assert_eq!(mutant("no-binding")["failed"][0], "reader-can-get", "{v}");
}

#[test]
fn verify_catches_a_mutant_that_does_not_fail_its_checks() {
    let env = Env::new();
    let lab = env.content().join("labs/testlab/lab.yaml");
    let src = std::fs::read_to_string(&lab).unwrap();
    // A "mutant" that changes a comment: the checks it names still pass.
    std::fs::write(
        &lab,
        src.replace(
            "{path: check.sh, find: \"echo ready\", replace: \"echo ready; exit 4\"}",
            "{path: check.sh, find: \"echo ready\", replace: \"echo ready # harmless\"}",
        ),
    )
    .unwrap();
    env.kca()
        .args(["lab", "verify", "--offline", "testlab"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("FAIL mutant script-fails"))
        .stdout(predicate::str::contains(
            "script-ok should fail but is PASS",
        ));
}

/// The course labs: every starter fails, every solution passes, every mutant fails what it
/// names — except where a check needs CEL, which is `skipped` offline (never a pass).
/// A lab that does not validate (work in progress in labs/) fails with its name and
/// every problem, not with an unreadable "not JSON" panic.
fn assert_course_labs_load(v: &Value) {
    let Some(err) = v.get("error") else {
        return;
    };
    let problems: Vec<String> = err["problems"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            format!(
                "  {}:{}:{}: {}",
                p["file"].as_str().unwrap_or("?"),
                p["line"],
                p["column"],
                p["message"].as_str().unwrap_or("")
            )
        })
        .collect();
    panic!(
        "a lab in labs/ does not validate ({}); run `kca validate labs/`:\n{}",
        err["message"].as_str().unwrap_or(""),
        problems.join("\n")
    );
}

#[test]
fn a_lab_that_does_not_validate_is_named_with_its_problems() {
    let v: Value = serde_json::json!({"schemaVersion": 1, "error": {"message": "1 problem(s) in content",
        "problems": [{"file": "labs/kca-wip/lab.yaml", "line": 3, "column": 1, "message": "missing field `tasks`"}]}});
    let caught = std::panic::catch_unwind(|| assert_course_labs_load(&v)).unwrap_err();
    let text = caught.downcast_ref::<String>().unwrap();
    assert!(
        text.contains("labs/kca-wip/lab.yaml:3:1: missing field `tasks`"),
        "{text}"
    );
}

#[test]
fn a_broken_lab_under_json_output_is_a_json_error_naming_the_file() {
    let env = Env::new();
    std::fs::create_dir_all(env.content().join("labs/kca-wip")).unwrap();
    std::fs::write(
        env.content().join("labs/kca-wip/lab.yaml"),
        "apiVersion: kca.dev/v1alpha1\nkind: Lab\n",
    )
    .unwrap();
    let out = env
        .kca()
        .args(["-o", "json", "lab", "verify", "--offline"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let v = json_of(&out.stdout);
    let file = v["error"]["problems"][0]["file"].as_str().unwrap();
    assert!(file.ends_with("labs/kca-wip/lab.yaml"), "{v}");
}

#[test]
fn verify_offline_on_the_course_labs() {
    let env = Env::new();
    let has_kubectl = std::process::Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success());
    let out = Command::cargo_bin("kca")
        .unwrap()
        .env("HOME", env.home())
        .env("XDG_STATE_HOME", env.tmp.path().join("state"))
        .args(["--color", "never", "-o", "json", "--content-dir"])
        .arg(repo())
        .args(["lab", "verify", "--offline"])
        .output()
        .unwrap();
    let v = json_of(&out.stdout);
    assert_course_labs_load(&v);
    let labs = v["labs"].as_array().unwrap();
    let ids: Vec<&str> = labs.iter().map(|l| l["lab"].as_str().unwrap()).collect();
    for want in ["kca-admission", "kca-gates", "kca-mutate", "kca-operations"] {
        assert!(ids.contains(&want), "{ids:?}");
    }
    for lab in labs {
        assert_eq!(lab["starter"]["ok"], true, "{lab}");
        // kca-gates renders with `kubectl kustomize`; without kubectl that check is an
        // environment error, which verify reports as such. Everything else, the
        // ValidatingAdmissionPolicy of kca-admission included, is evaluated offline.
        if lab["lab"] != "kca-gates" || has_kubectl {
            assert_eq!(lab["ok"], true, "{lab}");
        }
        assert!(lab["mutants"].as_array().unwrap().len() >= 2, "{lab}");
        let stages = std::iter::once(&lab["solution"]).chain(lab["mutants"].as_array().unwrap());
        for s in stages {
            if s["ok"] == true || s["environmentOnly"] == true {
                continue;
            }
            let known_gap = s["problems"].as_array().unwrap().iter().all(|p| {
                let p = p.as_str().unwrap();
                !has_kubectl && p.contains("cannot run `kubectl`")
            });
            assert!(known_gap, "{} {}: {}", lab["lab"], s["name"], s);
        }
    }
}

/// The learner's report, as text: engine-independent tasks only, so the snapshot holds
/// whichever offline engines this build has.
#[test]
fn check_report_text_snapshot() {
    let env = Env::new();
    env.start_offline();
    env.solve("check.sh");
    let out = env
        .kca_in("ja")
        .args(["lab", "check", "--task", "config"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let config = String::from_utf8_lossy(&out.stdout).into_owned();
    let out = env
        .kca()
        .args(["lab", "check", "--task", "script"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let script = String::from_utf8_lossy(&out.stdout).into_owned();
    insta::assert_snapshot!(format!("{config}\n---\n{script}"));
}

#[test]
fn verify_refuses_a_task_the_starter_already_passes() {
    let env = Env::new();
    let sol = env.content().join("labs/testlab/solution/check.sh");
    std::fs::copy(&sol, env.content().join("labs/testlab/starter/check.sh")).unwrap();
    env.kca()
        .args(["lab", "verify", "--offline", "testlab"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("FAIL starter"))
        .stdout(predicate::str::contains(
            "task `script` passes on the starter",
        ));
}

#[test]
fn a_lab_of_files_and_commands_needs_no_cluster() {
    let env = Env::new();
    let lab = env.content().join("labs/testlab/lab.yaml");
    let src = std::fs::read_to_string(&lab).unwrap();
    // Keep the config file check and the script task only.
    let start = src.find("      - id: config-resource").unwrap();
    let end = src.find("  - id: script").unwrap();
    let mut trimmed = format!("{}{}", &src[..start], &src[end..]);
    let cut = trimmed.find("  - id: policy").unwrap();
    let mutants = trimmed.find("mutants:").unwrap();
    trimmed.replace_range(cut..mutants, "");
    let trimmed = trimmed
        .replace("fixtures: [fixtures/namespace.yaml]\n", "")
        .replace(
            "    fails: [config-file, config-resource]",
            "    fails: [config-file]",
        )
        .replace("    fails: [reader-can-get]", "    fails: [script-ok]");
    std::fs::write(&lab, trimmed).unwrap();
    env.kca()
        .args(["lab", "start", "testlab"])
        .assert()
        .success()
        .stderr(predicate::str::contains("no cluster needed"));
    env.kca()
        .args(["lab", "check"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("(offline)"));
}

/// A kubeconfig whose server refuses connections (port 9 on the loopback).
fn refused_kubeconfig(t: &Env) -> PathBuf {
    let refused = t.tmp.path().join("refused-kubeconfig");
    std::fs::write(
        &refused,
        "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:9\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\nusers:\n- name: u\n  user: {token: x}\n",
    )
    .unwrap();
    refused
}

#[test]
fn cannot_grade_live_keeps_the_unreachable_cluster_as_its_cause() {
    let t = Env::new();
    t.start_offline();
    let refused = refused_kubeconfig(&t);
    let out = t
        .kca()
        .args(["lab", "check", "testlab", "-o", "json", "--kubeconfig"])
        .arg(&refused)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let err = &v["error"];
    assert_eq!(err["message"], "cannot grade `testlab` live", "{v}");
    let causes: Vec<&str> = err["causes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(causes[0].ends_with("does not answer"), "{causes:?}");
    assert!(
        causes[1].starts_with("cannot reach the cluster: GET /version"),
        "{causes:?}"
    );
    assert!(err["hint"].as_str().unwrap().contains("--offline"), "{v}");
}

#[test]
fn check_without_a_reachable_cluster_exits_3_and_never_grades_offline() {
    let t = Env::new();
    t.start_offline();
    // Everything that would pass offline: a silent fallback would exit 0 with full marks.
    for f in ["app.yaml", "check.sh", "policy.yaml", "rbac.yaml"] {
        t.solve(f);
    }
    let refused = refused_kubeconfig(&t);
    for kubeconfig in [t.tmp.path().join("missing-kubeconfig"), refused] {
        let out = t
            .kca()
            .args(["lab", "check", "testlab", "--kubeconfig"])
            .arg(&kubeconfig)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(3), "{text}{err}");
        assert!(!err.contains("grading offline"), "{err}");
        assert!(text.is_empty(), "no results without a cluster: {text}");
        assert!(err.contains("--offline"), "the hint names --offline: {err}");
    }
    // Nothing was recorded as checked.
    t.kca()
        .args(["lab", "status"])
        .assert()
        .success()
        .stdout(predicate::str::contains("not checked yet"));
    // Asked for, offline grading runs and is recorded as offline.
    t.kca()
        .args(["lab", "check", "testlab", "--offline"])
        .assert()
        .stdout(predicate::str::contains("(offline)"));
    t.kca()
        .args(["lab", "status"])
        .assert()
        .success()
        .stdout(predicate::str::contains("offline"));
}

#[test]
fn task_accepts_several_values() {
    let t = Env::new();
    t.start_offline();
    for args in [
        vec!["--task", "config", "--task", "script"],
        vec!["--task", "config,script"],
    ] {
        let out = t
            .kca()
            .args(["--output", "json", "lab", "check", "testlab"])
            .args(&args)
            .output()
            .unwrap();
        let rep: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
        let ids: Vec<&str> = rep["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, vec!["config", "script"], "{args:?}");
    }
    t.kca()
        .args(["lab", "check", "testlab", "--task", "config,nope"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no task `nope`"));
}

#[test]
fn checking_one_task_never_replaces_the_labs_score() {
    let env = Env::new();
    env.start_offline();
    let full = env
        .kca()
        .args(["-o", "json", "lab", "check"])
        .output()
        .unwrap();
    let full = json_of(&full.stdout);
    let max = full["maxScore"].as_u64().unwrap();
    let config_before = full["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "config")
        .unwrap()["score"]
        .as_u64()
        .unwrap();
    env.solve("app.yaml");
    let one = env
        .kca()
        .args(["-o", "json", "lab", "check", "--task", "config"])
        .output()
        .unwrap();
    let one = json_of(&one.stdout);
    let want = full["score"].as_u64().unwrap() - config_before + one["score"].as_u64().unwrap();
    let list = env
        .kca()
        .args(["-o", "json", "lab", "list"])
        .output()
        .unwrap();
    let lab = &json_of(&list.stdout)["labs"][0];
    assert_eq!(lab["score"].as_u64(), Some(want), "{lab}");
    assert_eq!(lab["maxScore"].as_u64(), Some(max), "{lab}");
    let status = env
        .kca()
        .args(["-o", "json", "lab", "status"])
        .output()
        .unwrap();
    let status = json_of(&status.stdout);
    let checks = &status["labs"][0]["checks"];
    assert_eq!(checks["config-file"]["verdict"], "pass", "{status}");
    assert_eq!(checks["config-file"]["target"], "offline", "{status}");
    assert!(checks["config-file"]["at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(checks["reader-can-get"]["verdict"], "fail", "{status}");
    let text = env.kca().args(["lab", "status"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains(&format!("{want}/{max}")), "{text}");
    let check = env
        .kca()
        .args(["lab", "check", "--task", "config"])
        .output()
        .unwrap();
    let check = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.contains(&format!("lab total: {want}/{max}")),
        "{check}"
    );
}

#[test]
fn a_finished_lab_says_so_and_has_nothing_left_to_hint() {
    let env = Env::new();
    env.start_offline();
    for f in ["app.yaml", "check.sh", "policy.yaml", "rbac.yaml"] {
        env.solve(f);
    }
    env.kca()
        .args(["lab", "check"])
        .assert()
        .success()
        .stdout(predicate::str::contains("✓ Lab finished: testlab 9/9"))
        .stdout(predicate::str::contains("next:"));
    env.kca()
        .args(["lab", "hint"])
        .assert()
        .success()
        .stdout(predicate::str::contains("nothing left to hint"));
    env.kca()
        .args(["lab", "list"])
        .assert()
        .success()
        .stdout(predicate::str::contains("MODULE"))
        .stdout(predicate::str::contains("9/9 done"));
}

/// The test lab as module 1 beside the demo quiz and a lesson: a small whole course.
fn course(env: &Env) {
    copy_dir(
        &repo().join("tests/data/lessons"),
        &env.content().join("lessons"),
    );
    std::fs::copy(
        repo().join("tests/data/quizzes/demo.yaml"),
        env.content().join("quizzes/demo.yaml"),
    )
    .unwrap();
}

#[test]
fn the_course_map_shows_each_module_and_the_one_next_step() {
    let env = Env::new();
    course(&env);
    let out = env.kca().output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("Module 1"), "{text}");
    assert!(
        text.contains("lesson") && text.contains("The admission chain"),
        "{text}"
    );
    assert!(text.contains("quiz") && text.contains("demo"), "{text}");
    // The test lab is module 0: it comes before module 1's lesson.
    assert!(
        text.contains("Module 0") && text.contains("testlab"),
        "{text}"
    );
    assert!(
        text.contains("next: kca lab start testlab --offline"),
        "{text}"
    );
    assert!(text.find("Module 0") < text.find("Module 1"), "{text}");
    env.kca().args(["lesson", "1"]).assert().success();
    let map = env.kca().args(["-o", "json", "status"]).output().unwrap();
    let map = json_of(&map.stdout);
    assert_eq!(map["schemaVersion"], 1);
    assert_eq!(map["modules"][1]["lesson"]["state"], "done", "{map}");
}

#[test]
fn lesson_shows_a_section_wrapped_and_as_json() {
    let env = Env::new();
    course(&env);
    let out = env
        .kca()
        .env("COLUMNS", "40")
        .args(["lesson", "1#mutate-first"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("§ Mutation comes before validation"),
        "{text}"
    );
    assert!(!text.contains("When the webhook fails"), "{text}");
    for line in text.lines() {
        assert!(line.chars().count() <= 40, "wider than 40: {line:?}");
    }
    let ja = env
        .kca_in("ja")
        .args(["lesson", "1", "--section", "failure-policy"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&ja.stdout).contains("§ 失敗時の動作"));
    let json = env
        .kca()
        .args(["-o", "json", "lesson", "1"])
        .output()
        .unwrap();
    let v = json_of(&json.stdout);
    assert_eq!(v["lesson"]["sections"][0]["anchor"], "mutate-first", "{v}");
    assert_eq!(
        v["lesson"]["sections"][0]["blocks"][1]["type"], "list",
        "{v}"
    );
    let bad = env.kca().args(["lesson", "1#nope"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("#mutate-first"));
}

#[test]
fn a_failed_check_queues_the_quiz_questions_of_its_concepts() {
    let env = Env::new();
    course(&env);
    // The test lab's concepts are [testing]; one question shares it, one does not.
    std::fs::write(
        env.content().join("quizzes/tagged.yaml"),
        "apiVersion: kca.dev/v1alpha1\nkind: Quiz\nmetadata: {id: tagged, title: T, module: 1}\npassMark: 50\n\
         questions:\n\
         - {id: t-shared, type: true-false, answer: true, prompt: Shared concept?, explanation: x, concepts: [testing]}\n\
         - {id: t-other, type: true-false, answer: true, prompt: Other concept?, explanation: x, concepts: [other]}\n",
    )
    .unwrap();
    env.kca().arg("validate").assert().success();
    env.start_offline();
    let out = env.kca().args(["lab", "check"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    // A note beside the result: on stderr, never after stdout's document.
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("kca quiz review"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let review = env
        .kca()
        .args(["quiz", "review"])
        .write_stdin("true\n")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&review.stdout);
    assert!(text.contains("Shared concept?"), "{text}");
    assert!(!text.contains("Other concept?"), "{text}");
}

#[test]
fn check_with_an_unwritable_state_folder_still_grades_and_says_so() {
    let env = Env::new();
    env.start_offline();
    // Move the state away and block its place: a path under a regular file cannot be
    // created, even by root. The lab is found again from the copy of its progress.
    let state = env.tmp.path().join("state");
    let moved = env.tmp.path().join("state-moved");
    std::fs::rename(&state, &moved).unwrap();
    std::fs::create_dir_all(env.tmp.path().join("ro")).unwrap();
    let blocker = env.tmp.path().join("ro/file");
    std::fs::write(&blocker, "").unwrap();
    let out = env
        .kca()
        .env("XDG_STATE_HOME", blocker.join("state"))
        .args(["lab", "check", "testlab"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // Not started as far as this (empty) state knows: a usage error that says so.
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not started"), "{err}");
    // With the progress readable but not writable, the grade stands and a warning says so.
    std::fs::rename(&moved, &state).unwrap();
    let lock = state.join("kca/labs.json.lock");
    let _ = std::fs::remove_file(&lock);
    std::fs::create_dir_all(&lock).unwrap(); // the lock file cannot be opened for writing
    let out = env.kca().args(["lab", "check"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}{err}");
    assert!(text.contains("score 0/9"), "{text}");
    assert!(err.contains("progress was not saved"), "{err}");
    assert!(err.contains("XDG_STATE_HOME="), "{err}");
}

#[test]
fn errors_speak_the_learners_language() {
    let env = Env::new();
    let out = env.kca_in("ja").args(["lab", "check"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("エラー: まだラボを始めていません"), "{err}");
    assert!(
        err.contains("ヒント: `kca lab start LAB` で始めます"),
        "{err}"
    );
    let out = env.kca_in("en").args(["lab", "check"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("error: no lab started yet"), "{err}");
    assert!(
        err.contains("hint: start one with `kca lab start LAB`"),
        "{err}"
    );
}

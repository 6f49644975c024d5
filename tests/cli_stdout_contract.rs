//! Under `-o json` and `-o junit`, stdout holds exactly one document: every command (taken
//! from the clap tree, so a new command cannot be left out), over passing, failing and
//! erroring inputs, and when kca is interrupted. Human lines go to stderr.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use clap::CommandFactory;
use serde_json::Value;

mod common;
use common::{copy_dir, running};

struct T {
    tmp: tempfile::TempDir,
}

impl T {
    fn new() -> T {
        let t = T {
            tmp: tempfile::tempdir().unwrap(),
        };
        let c = t.content();
        copy_dir(&repo().join("tests/testlab"), &c.join("labs/testlab"));
        for d in ["lessons", "kind-config"] {
            copy_dir(&repo().join(d), &c.join(d));
        }
        std::fs::create_dir_all(c.join("quizzes")).unwrap();
        std::fs::write(c.join("quizzes/tagged.yaml"), QUIZ).unwrap();
        std::fs::create_dir_all(t.work()).unwrap();
        t
    }
    fn content(&self) -> PathBuf {
        self.tmp.path().join("content")
    }
    fn work(&self) -> PathBuf {
        self.tmp.path().join("work")
    }
    fn ws(&self) -> PathBuf {
        self.work().join("testlab")
    }
    fn file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.tmp.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }
    fn kca(&self) -> Command {
        Command::from_std(self.std_kca())
    }
    fn std_kca(&self) -> std::process::Command {
        let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("kca"));
        c.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.tmp.path().join("home"))
            .env("XDG_STATE_HOME", self.tmp.path().join("state"))
            .env("KCA_WORKSPACE_ROOT", self.work())
            .env("KUBECONFIG", self.tmp.path().join("no-such-kubeconfig"))
            .args(["--color", "never", "--lang", "en", "--content-dir"])
            .arg(self.content());
        c
    }
    fn start(&self) {
        self.kca()
            .args(["lab", "start", "testlab", "--offline"])
            .assert()
            .success();
    }
    fn solve(&self) {
        for f in ["app.yaml", "check.sh", "policy.yaml", "rbac.yaml"] {
            std::fs::copy(
                self.content().join("labs/testlab/solution").join(f),
                self.ws().join(f),
            )
            .unwrap();
        }
    }
    /// A lab result document as `lab check -o json` writes it.
    fn result(&self, name: &str, verdict: &str) -> PathBuf {
        self.file(
            name,
            &serde_json::json!({"schemaVersion": 1, "lab": "testlab", "tasks": [
                {"id": "config", "checks": [{"id": "config-file", "verdict": verdict}]}]})
            .to_string(),
        )
    }
    /// A folder with a Kyverno CLI test whose one row expects `expect`.
    fn policy_test(&self, expect: &str) -> PathBuf {
        let dir = self.tmp.path().join(format!("ptest-{expect}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(
            self.content().join("labs/testlab/solution/policy.yaml"),
            dir.join("policy.yaml"),
        )
        .unwrap();
        std::fs::write(dir.join("pod.yaml"), POD).unwrap();
        std::fs::write(
            dir.join("kyverno-test.yaml"),
            format!(
                "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata: {{name: t}}\n\
                 policies: [policy.yaml]\nresources: [pod.yaml]\nresults:\n\
                 - {{policy: testlab-require-team, rule: require-team, resources: [web], kind: Pod, result: {expect}}}\n"
            ),
        )
        .unwrap();
        dir
    }
}

const QUIZ: &str = "apiVersion: kca.dev/v1alpha1\nkind: Quiz\nmetadata: {id: tagged, title: T, module: 1}\npassMark: 50\n\
questions:\n\
- {id: t-shared, type: true-false, answer: true, prompt: Shared concept?, explanation: x, concepts: [testing]}\n\
- {id: t-other, type: true-false, answer: true, prompt: Other concept?, explanation: x, concepts: [other]}\n";

const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: kca-testlab, labels: {team: blue}}\n\
spec: {containers: [{name: app, image: nginx}]}\n";

const ROLE: &str = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\n\
rules: [{apiGroups: [''], resources: [pods], verbs: [get]}]\n---\n\
apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: r}\n\
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: r}\n\
subjects: [{kind: User, name: alice, apiGroup: rbac.authorization.k8s.io}]\n";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One run: the command's path in the clap tree, what kind of input, and how to run it
/// (the harness adds `-o json|junit`).
struct Row {
    path: &'static str,
    case: &'static str,
    run: fn(&T) -> Command,
}

fn args(t: &T, a: &[&str]) -> Command {
    let mut c = t.kca();
    c.args(a);
    c
}

/// The same command with no tools on PATH (cluster commands must never reach a real
/// kind or helm from a test).
fn no_tools(t: &T, a: &[&str]) -> Command {
    let mut c = args(t, a);
    c.env("PATH", t.tmp.path().join("no-tools"));
    c
}

fn rows() -> Vec<Row> {
    macro_rules! row {
        ($path:expr, $case:expr, $run:expr) => {
            Row {
                path: $path,
                case: $case,
                run: $run,
            }
        };
    }
    vec![
        row!("", "pass", |t| args(t, &[])),
        row!("status", "pass", |t| args(t, &["status"])),
        row!("status", "error", |t| {
            std::fs::remove_dir_all(t.content().join("labs")).unwrap();
            t.file("content/labs", "not a folder");
            args(t, &["status"])
        }),
        row!("lesson", "pass", |t| args(t, &["lesson", "0"])),
        row!("lesson", "error", |t| args(t, &["lesson", "99"])),
        row!("report", "pass", |t| {
            let f = t.result("r/a.json", "pass");
            let mut c = args(t, &["report"]);
            c.arg(f);
            c
        }),
        row!("report", "skipped", |t| {
            t.result("r/a.json", "fail");
            t.file("r/b.json", "{\"lab\": \"testlab\"}\nextra");
            let mut c = args(t, &["report"]);
            c.arg(t.tmp.path().join("r"));
            c
        }),
        row!("report", "error", |t| {
            let mut c = args(t, &["report"]);
            c.arg(t.tmp.path().join("nothing-here"));
            c
        }),
        row!("validate", "pass", |t| {
            let mut c = args(t, &["validate"]);
            c.arg(t.content().join("labs/testlab"));
            c
        }),
        row!("validate", "error", |t| {
            let f = t.file(
                "bad/lab.yaml",
                "apiVersion: kca.dev/v1alpha1\nkind: Lab\nmetadata: {}\n",
            );
            let mut c = args(t, &["validate"]);
            c.arg(f);
            c
        }),
        row!("quiz list", "pass", |t| args(t, &["quiz", "list"])),
        row!("quiz list", "error", |t| {
            t.file("content/quizzes/broken.yaml", "apiVersion: [\n");
            args(t, &["quiz", "list"])
        }),
        row!("quiz run", "pass", |t| {
            let mut c = args(t, &["quiz", "run", "tagged"]);
            c.write_stdin("true\ntrue\n");
            c
        }),
        row!("quiz run", "fail", |t| {
            let mut c = args(t, &["quiz", "run", "tagged"]);
            c.write_stdin("false\nfalse\n");
            c
        }),
        row!("quiz run", "error", |t| args(t, &["quiz", "run", "nope"])),
        row!("quiz review", "pass", |t| {
            let mut c = args(t, &["quiz", "review"]);
            c.write_stdin("");
            c
        }),
        row!("quiz review", "fail", |t| {
            t.start();
            t.kca().args(["lab", "check"]).assert().code(1);
            let mut c = args(t, &["quiz", "review"]);
            c.write_stdin("false\n");
            c
        }),
        row!("quiz review", "error", |t| args(
            t,
            &["quiz", "review", "nope"]
        )),
        row!("quiz grade", "pass", |t| {
            let f = t.file("a.yaml", "t-shared: true\nt-other: true\n");
            let mut c = args(t, &["quiz", "grade", "tagged", "--answers"]);
            c.arg(f);
            c
        }),
        row!("quiz grade", "fail", |t| {
            let f = t.file("a.yaml", "t-shared: false\n");
            let mut c = args(t, &["quiz", "grade", "tagged", "--answers"]);
            c.arg(f);
            c
        }),
        row!("quiz grade", "error", |t| {
            let f = t.file("a.yaml", "t-shared: [\n");
            let mut c = args(t, &["quiz", "grade", "tagged", "--answers"]);
            c.arg(f);
            c
        }),
        row!("quiz key", "pass", |t| args(t, &["quiz", "key", "tagged"])),
        row!("quiz key", "error", |t| args(t, &["quiz", "key", "nope"])),
        row!("lab list", "pass", |t| args(t, &["lab", "list"])),
        row!("lab list", "error", |t| {
            t.file("content/labs/broken/lab.yaml", "kind: Lab\n");
            args(t, &["lab", "list"])
        }),
        row!("lab start", "pass", |t| args(
            t,
            &["lab", "start", "testlab", "--offline"]
        )),
        row!("lab start", "error", |t| args(
            t,
            &["lab", "start", "nope", "--offline"]
        )),
        row!("lab check", "pass", |t| {
            t.start();
            t.solve();
            args(t, &["lab", "check"])
        }),
        row!("lab check", "fail", |t| {
            t.start();
            args(t, &["lab", "check"])
        }),
        row!("lab check", "error", |t| args(
            t,
            &["lab", "check", "testlab"]
        )),
        row!("lab check", "workspace", |t| {
            let ws = t.tmp.path().join("submission");
            copy_dir(&t.content().join("labs/testlab/starter"), &ws);
            let mut c = args(t, &["lab", "check", "testlab", "--offline", "--workspace"]);
            c.arg(ws);
            c
        }),
        row!("lab hint", "pass", |t| args(t, &["lab", "hint", "testlab"])),
        row!("lab hint", "error", |t| args(t, &["lab", "hint"])),
        row!("lab status", "pass", |t| {
            t.start();
            args(t, &["lab", "status"])
        }),
        row!("lab reset", "pass", |t| {
            t.start();
            args(t, &["lab", "reset", "testlab", "--offline"])
        }),
        row!("lab reset", "error", |t| args(
            t,
            &["lab", "reset", "nope", "--offline"]
        )),
        row!("lab verify", "pass", |t| args(
            t,
            &["lab", "verify", "testlab", "--offline"]
        )),
        row!("lab verify", "error", |t| args(
            t,
            &["lab", "verify", "testlab"]
        )),
        row!("lab new", "pass", |t| {
            let mut c = args(t, &["lab", "new", "my-lab", "--dir"]);
            c.arg(t.tmp.path().join("new"));
            c
        }),
        row!("lab new", "error", |t| args(t, &["lab", "new", "Bad_Id"])),
        row!("lab show", "pass", |t| args(t, &["lab", "show", "testlab"])),
        row!("schema", "pass", |t| args(t, &["schema", "lab"])),
        row!("completions", "pass", |t| args(t, &["completions", "zsh"])),
        row!("__complete", "pass", |t| args(t, &["__complete", "labs"])),
        row!("__complete", "error", |t| args(
            t,
            &["__complete", "nothing"]
        )),
        row!("lab show", "error", |t| args(t, &["lab", "show", "nope"])),
        row!("cluster up", "error", |t| no_tools(t, &["cluster", "up"])),
        row!("cluster down", "error", |t| no_tools(
            t,
            &["cluster", "down"]
        )),
        row!("cluster status", "error", |t| no_tools(
            t,
            &["cluster", "status"]
        )),
        row!("cluster adopt", "error", |t| no_tools(
            t,
            &["cluster", "adopt"]
        )),
        row!("auth can-i", "pass", |t| {
            let f = t.file("rbac.yaml", ROLE);
            let mut c = args(t, &["auth", "can-i", "get", "pods", "--as", "alice", "-f"]);
            c.arg(f);
            c
        }),
        row!("auth can-i", "fail", |t| {
            let f = t.file("rbac.yaml", ROLE);
            let mut c = args(
                t,
                &["auth", "can-i", "delete", "pods", "--as", "alice", "-f"],
            );
            c.arg(f);
            c
        }),
        row!("auth can-i", "error", |t| args(
            t,
            &["auth", "can-i", "get", "pods"]
        )),
        row!("policy test", "pass", |t| {
            let d = t.policy_test("pass");
            let mut c = args(t, &["policy", "test"]);
            c.arg(d);
            c
        }),
        row!("policy test", "fail", |t| {
            let d = t.policy_test("fail");
            let mut c = args(t, &["policy", "test"]);
            c.arg(d);
            c
        }),
        row!("policy test", "error", |t| {
            let d = t.policy_test("pass");
            std::fs::write(d.join("kyverno-test.yaml"), "results: [\n").unwrap();
            let mut c = args(t, &["policy", "test"]);
            c.arg(d);
            c
        }),
        row!("grade", "pass", |t| {
            let a = t.tmp.path().join("class/alice");
            copy_dir(&t.content().join("labs/testlab/starter"), &a);
            copy_dir(&t.content().join("labs/testlab/solution"), &a);
            let mut c = args(t, &["grade", "testlab", "--submissions"]);
            c.arg(t.tmp.path().join("class"));
            c
        }),
        row!("grade", "fail", |t| {
            for l in ["alice", "bob"] {
                copy_dir(
                    &t.content().join("labs/testlab/starter"),
                    &t.tmp.path().join("class").join(l),
                );
            }
            let mut c = args(t, &["grade", "testlab", "--submissions"]);
            c.arg(t.tmp.path().join("class"));
            c
        }),
        row!("grade", "error", |t| {
            let mut c = args(t, &["grade", "testlab"]);
            c.arg(t.tmp.path().join("missing"));
            c
        }),
        row!("", "usage", |t| args(t, &["lab", "chekc"])),
        row!("lab task", "pass", |t| {
            t.start();
            args(t, &["lab", "task"])
        }),
        row!("lab task", "error", |t| args(t, &["lab", "task"])),
        row!("lab watch", "error", |t| {
            t.start();
            let mut c = args(t, &["lab", "watch"]);
            c.write_stdin("");
            c
        }),
        row!("jp query", "pass", |t| {
            let f = t.file("in.json", "{\"a\": [1, 2]}");
            let mut c = args(t, &["jp", "query", "length(a)", "-i"]);
            c.arg(f);
            c
        }),
        row!("jp query", "error", |t| {
            let f = t.file("in.json", "{\"a\": 1}");
            let mut c = args(t, &["jp", "query", "a[", "-i"]);
            c.arg(f);
            c
        }),
        row!("jp function", "pass", |t| args(t, &["jp", "function"])),
        row!("jp parse", "pass", |t| args(t, &["jp", "parse", "a.b[0]"])),
        row!("jp parse", "error", |t| args(t, &["jp", "parse", "a.["])),
        row!("values render", "pass", |t| {
            let g = repo().join("labs/kca-operations/graders");
            let mut c = args(t, &["values", "render", "--chart"]);
            c.arg(g.join("chart-render.yaml"))
                .arg("-f")
                .arg(g.join("values-replicas.yaml"));
            c
        }),
        row!("values render", "error", |t| {
            let mut c = args(t, &["values", "render", "--chart"]);
            c.arg(t.tmp.path().join("missing.yaml"))
                .args(["-f", "v.yaml"]);
            c
        }),
        // The kca-gates graders (hidden; run by the lab's command checks) over inputs
        // that are not there: an error, still one document.
        row!("policy grader render", "error", |t| {
            args(
                t,
                &[
                    "policy",
                    "grader",
                    "render",
                    "no-such-dir",
                    "no-such-policy.yaml",
                ],
            )
        }),
        row!("policy grader files", "error", |t| {
            args(
                t,
                &[
                    "policy",
                    "grader",
                    "files",
                    "no-such-policy.yaml",
                    "no-such.yaml",
                ],
            )
        }),
        row!("policy grader gate", "error", |t| {
            args(
                t,
                &[
                    "policy",
                    "grader",
                    "gate",
                    "pass",
                    "prod",
                    "--gate",
                    "no-such-gate.sh",
                ],
            )
        }),
        row!("policy grader catches", "error", |t| {
            args(
                t,
                &[
                    "policy",
                    "grader",
                    "catches",
                    "no-such-broken.yaml",
                    "--tests",
                    "no-such-tests",
                ],
            )
        }),
        row!("policy grader selects", "error", |t| {
            args(
                t,
                &[
                    "policy",
                    "grader",
                    "selects",
                    "--services",
                    "no-such.yaml",
                    "--workloads",
                    "none.yaml",
                    "--want",
                    "a=Deployment/b",
                ],
            )
        }),
        row!("policy apply", "pass", |t| {
            let d = t.policy_test("pass");
            let mut c = args(t, &["policy", "apply"]);
            c.arg(d.join("policy.yaml"))
                .arg("-r")
                .arg(d.join("pod.yaml"));
            c
        }),
        row!("policy apply", "fail", |t| {
            let d = t.policy_test("pass");
            std::fs::write(d.join("pod.yaml"), POD.replace("team: blue", "x: y")).unwrap();
            let mut c = args(t, &["policy", "apply"]);
            c.arg(d.join("policy.yaml"))
                .arg("-r")
                .arg(d.join("pod.yaml"));
            c
        }),
        row!("policy apply", "error", |t| {
            let mut c = args(t, &["policy", "apply"]);
            c.arg(t.tmp.path().join("missing.yaml"))
                .args(["-r", "x.yaml"]);
            c
        }),
    ]
}

/// Every leaf command of the clap tree, as `lab check` (the root itself is "").
fn leaves() -> BTreeSet<String> {
    fn walk(cmd: &clap::Command, prefix: &str, out: &mut BTreeSet<String>) {
        let subs: Vec<_> = cmd
            .get_subcommands()
            .filter(|s| s.get_name() != "help")
            .collect();
        if subs.is_empty() {
            out.insert(prefix.trim().to_string());
        }
        for s in subs {
            walk(s, &format!("{prefix} {}", s.get_name()), out);
        }
    }
    let mut out = BTreeSet::new();
    out.insert(String::new());
    walk(&kca::cli::Cli::command(), "", &mut out);
    out
}

/// `text` is exactly one JSON object carrying `schemaVersion`.
fn one_json(text: &str) -> Result<Value, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not one JSON document: {e}"))?;
    if v.get("schemaVersion").is_none() {
        return Err("no schemaVersion".into());
    }
    Ok(v)
}

/// `text` is one well-formed XML document whose root is `<testsuites>`.
fn one_junit(text: &str) -> Result<(), String> {
    let doc = roxmltree::Document::parse(text).map_err(|e| format!("not well-formed XML: {e}"))?;
    if doc.root_element().tag_name().name() != "testsuites" {
        return Err(format!(
            "root is <{}>",
            doc.root_element().tag_name().name()
        ));
    }
    Ok(())
}

#[test]
fn every_command_covers_a_row_and_every_row_a_command() {
    let rows = rows();
    let covered: BTreeSet<String> = rows.iter().map(|r| r.path.to_string()).collect();
    let leaves = leaves();
    let missing: Vec<_> = leaves.difference(&covered).collect();
    assert!(
        missing.is_empty(),
        "commands without a stdout-contract row (add them to rows()): {missing:?}"
    );
    let stale: Vec<_> = covered.difference(&leaves).collect();
    assert!(
        stale.is_empty(),
        "rows for commands that do not exist: {stale:?}"
    );
}

#[test]
fn stdout_holds_exactly_one_document_for_every_command_and_outcome() {
    let mut broken = Vec::new();
    for row in rows() {
        for format in ["json", "junit"] {
            let t = T::new();
            let mut cmd = (row.run)(&t);
            let out = cmd
                .args(["-o", format])
                .timeout(std::time::Duration::from_secs(120))
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            let ok = match format {
                "json" => one_json(&stdout).map(|_| ()),
                _ => one_junit(&stdout),
            };
            if let Err(why) = ok {
                broken.push(format!(
                    "kca {} ({}, -o {format}, exit {:?}): {why}\n--- stdout\n{stdout}\n--- stderr\n{}",
                    row.path,
                    row.case,
                    out.status.code(),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            let expect_code = match row.case {
                "pass" => Some(0),
                "fail" => Some(1),
                _ => None,
            };
            if format == "json" && expect_code.is_some() && out.status.code() != expect_code {
                broken.push(format!(
                    "kca {} ({}): exit {:?}, expected {expect_code:?}\n{}",
                    row.path,
                    row.case,
                    out.status.code(),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "{} broken:\n\n{}",
        broken.len(),
        broken.join("\n\n")
    );
}

/// The bug of issue 16: a failing check printed "related quiz questions: … queued" after
/// the document, so parsers stopped at "Extra data".
#[test]
fn a_failing_check_counts_queued_questions_inside_the_document() {
    let t = T::new();
    t.start();
    let out = t
        .kca()
        .args(["lab", "check", "-o", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v = one_json(&String::from_utf8_lossy(&out.stdout)).unwrap();
    assert_eq!(v["queuedForReview"], 1, "{v}");
    let out = t
        .kca()
        .args(["lab", "check", "-o", "junit"])
        .output()
        .unwrap();
    one_junit(&String::from_utf8_lossy(&out.stdout)).unwrap();
    let text = t.kca().args(["lab", "check"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&text.stderr).contains("kca quiz review"),
        "the human line is on stderr"
    );
    assert!(!String::from_utf8_lossy(&text.stdout).contains("kca quiz review"));
}

/// Ctrl-C during `lab check -o json|junit`: stdout still holds one whole document (the
/// interrupted one), and the command check's program is gone.
#[test]
fn an_interrupted_check_still_leaves_one_document() {
    for format in ["json", "junit"] {
        let t = T::new();
        t.start();
        let pidfile = t.tmp.path().join("sleep.pid");
        std::fs::write(
            t.ws().join("check.sh"),
            format!(
                "#!/usr/bin/env bash\necho $$ > {}\nexec sleep 60\n",
                pidfile.display()
            ),
        )
        .unwrap();
        let mut cmd = t.std_kca();
        cmd.args(["lab", "check", "-o", format])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let child = cmd.spawn().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !pidfile.exists() || std::fs::read_to_string(&pidfile).unwrap().trim().is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "the command check never started"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let sleeper: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // kca lists the program's group for its handler right after spawning it; give it
        // that moment (a signal in between is exec's race, not this contract's).
        std::thread::sleep(std::time::Duration::from_millis(300));
        // SAFETY: sends SIGINT to the child this test spawned.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        match format {
            "json" => {
                let v = one_json(&stdout).unwrap_or_else(|e| panic!("{e}\n{stdout}"));
                assert_eq!(v["error"]["interrupted"], true, "{v}");
            }
            _ => one_junit(&stdout).unwrap_or_else(|e| panic!("{e}\n{stdout}")),
        }
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGINT),
            "ends by the signal, as before"
        );
        let gone = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while running(sleeper) && std::time::Instant::now() < gone {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert!(!running(sleeper), "the check's program outlived kca");
    }
}

/// Every file under `dir` with its content (a snapshot to compare before and after).
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(snapshot(&p));
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn checking_a_folder_needs_no_start_and_leaves_the_state_folder_untouched() {
    let t = T::new();
    // A started lab with progress, to see that grading a folder changes none of it.
    t.start();
    t.kca().args(["lab", "check"]).assert().code(1);
    let state = t.tmp.path().join("state");
    let before = snapshot(&state);
    let sub = t.tmp.path().join("upload");
    copy_dir(&t.content().join("labs/testlab/starter"), &sub);
    copy_dir(&t.content().join("labs/testlab/solution"), &sub);
    let out = t
        .kca()
        .args(["lab", "check", "testlab", "--offline", "--workspace"])
        .arg(&sub)
        .args(["-o", "json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = one_json(&String::from_utf8_lossy(&out.stdout)).unwrap();
    assert_eq!(v["score"], v["maxScore"]);
    assert_eq!(snapshot(&state), before, "the state folder changed");
    // Without any state folder at all, nothing is created.
    let fresh = T::new();
    let out = fresh
        .kca()
        .args(["lab", "check", "testlab", "--offline", "--workspace"])
        .arg(&sub)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        !fresh.tmp.path().join("state").exists(),
        "a state folder was created"
    );
}

#[test]
fn grade_scores_each_submission_with_its_learner_id() {
    let t = T::new();
    let class = t.tmp.path().join("class");
    for (l, solved) in [("kca-testlab-alice", true), ("kca-testlab-bob", false)] {
        let d = class.join(l);
        copy_dir(&t.content().join("labs/testlab/starter"), &d);
        if solved {
            copy_dir(&t.content().join("labs/testlab/solution"), &d);
        }
    }
    std::fs::write(class.join("not-a-folder.txt"), "x").unwrap();
    let results = t.tmp.path().join("results");
    let out = t
        .kca()
        .args(["grade", "testlab", "--submissions"])
        .arg(&class)
        .args(["--id-from", "regex:^kca-testlab-(.+)$", "-j", "2", "--out"])
        .arg(&results)
        .args(["-o", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "bob fails");
    let v = one_json(&String::from_utf8_lossy(&out.stdout)).unwrap();
    let subs = v["submissions"].as_array().unwrap();
    assert_eq!(subs.len(), 2);
    assert_eq!(subs[0]["learner"], "alice");
    assert_eq!(subs[0]["exitCode"], 0);
    assert_eq!(subs[1]["learner"], "bob");
    assert_eq!(subs[1]["exitCode"], 1);
    assert_eq!(v["summary"]["passed"], 1);
    for l in ["alice", "bob"] {
        let f = std::fs::read_to_string(results.join(format!("{l}.json"))).unwrap();
        assert_eq!(one_json(&f).unwrap()["learner"], l);
    }
    assert!(
        !t.tmp.path().join("state").exists(),
        "grading wrote progress"
    );
    // The results folder is what `kca report` reads.
    let rep = t
        .kca()
        .arg("report")
        .arg(&results)
        .args(["-o", "json"])
        .output()
        .unwrap();
    assert_eq!(rep.status.code(), Some(0));
    assert_eq!(
        one_json(&String::from_utf8_lossy(&rep.stdout)).unwrap()["files"],
        2
    );
}

/// Issue 16: a result file with text after its document was skipped with a warning and
/// `kca report` still exited 0 — the class table silently lost that learner.
#[test]
fn report_names_every_skipped_file_and_exits_non_zero() {
    let t = T::new();
    t.result("r/a.json", "fail");
    t.file(
        "r/b.json",
        "{\"lab\": \"testlab\"}\nrelated quiz questions: 6 queued",
    );
    t.file("r/c.json", "not json");
    let out = t
        .kca()
        .arg("report")
        .arg(t.tmp.path().join("r"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("b.json") && err.contains("c.json"), "{err}");
    let strict = t
        .kca()
        .arg("report")
        .arg(t.tmp.path().join("r"))
        .env("CI", "true")
        .args(["-o", "json"])
        .output()
        .unwrap();
    assert_eq!(strict.status.code(), Some(2));
    let v = one_json(&String::from_utf8_lossy(&strict.stdout)).unwrap();
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("b.json") && msg.contains("c.json"), "{msg}");
}

/// The `run:` blocks of a GitHub Actions workflow, in order (block scalars `run: |`).
fn run_steps(workflow: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = workflow.lines().peekable();
    while let Some(l) = lines.next() {
        if l.trim_start() != "run: |" {
            continue;
        }
        let indent = l.len() - l.trim_start().len();
        let mut block = String::new();
        while let Some(n) = lines.peek() {
            let ni = n.len() - n.trim_start().len();
            if !n.trim().is_empty() && ni <= indent {
                break;
            }
            block.push_str(n.trim_start_matches(' '));
            block.push('\n');
            lines.next();
        }
        out.push(block);
    }
    out
}

/// The shipped CI files grade a generated submission here as they would on a runner:
/// the workflow's `run:` steps in order (GitHub's bash -e), then docs/ci/grade.sh.
#[test]
fn the_ci_workflow_and_script_grade_a_learners_repository() {
    let t = T::new();
    let sub = t.tmp.path().join("learner-repo");
    copy_dir(&t.content().join("labs/testlab/starter"), &sub);
    copy_dir(&t.content().join("labs/testlab/solution"), &sub);
    let runner_temp = t.tmp.path().join("runner-temp");
    std::fs::create_dir_all(&runner_temp).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("kca");
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let workflow = std::fs::read_to_string(repo().join("docs/ci/github-classroom.yml")).unwrap();
    let steps = run_steps(&workflow);
    assert!(steps.len() >= 2, "{steps:?}");
    for (expect, solved) in [(0, true), (1, false)] {
        if !solved {
            std::fs::copy(
                t.content().join("labs/testlab/starter/app.yaml"),
                sub.join("app.yaml"),
            )
            .unwrap();
        }
        for step in &steps {
            let out = std::process::Command::new("bash")
                .args(["-e", "-c", step])
                .current_dir(&sub)
                .env("PATH", &path)
                .env("HOME", t.tmp.path().join("home"))
                .env("XDG_STATE_HOME", t.tmp.path().join("state"))
                .env("KCA_CONTENT_DIR", t.content())
                .env("KCA_LAB", "testlab")
                .env("KCA_REPO", "https://example.invalid/kca.git")
                .env("GITHUB_WORKSPACE", &sub)
                .env("RUNNER_TEMP", &runner_temp)
                .env("CI", "true")
                .output()
                .unwrap();
            let code = out.status.code();
            let last = step == steps.last().unwrap();
            assert!(
                code == Some(0) || (last && code == Some(expect)),
                "step failed ({code:?}):\n{step}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let results = runner_temp.join("kca-results");
        let v =
            one_json(&std::fs::read_to_string(results.join("kca-result.json")).unwrap()).unwrap();
        assert_eq!(v["lab"], "testlab");
        one_junit(&std::fs::read_to_string(results.join("kca-junit.xml")).unwrap()).unwrap();
        // The generic script does the same.
        let out_dir = t.tmp.path().join(format!("script-{expect}"));
        let out = std::process::Command::new("bash")
            .arg(repo().join("docs/ci/grade.sh"))
            .arg(&sub)
            .arg(&out_dir)
            .env("PATH", &path)
            .env("HOME", t.tmp.path().join("home"))
            .env("XDG_STATE_HOME", t.tmp.path().join("state"))
            .env("KCA_CONTENT_DIR", t.content())
            .env("KCA_LAB", "testlab")
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(expect),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        one_json(&std::fs::read_to_string(out_dir.join("kca-result.json")).unwrap()).unwrap();
        one_junit(&std::fs::read_to_string(out_dir.join("kca-junit.xml")).unwrap()).unwrap();
    }
    assert!(
        !t.tmp.path().join("state").exists(),
        "CI grading wrote progress"
    );
}

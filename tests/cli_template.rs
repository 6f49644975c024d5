//! Starter templates written to exhaust the machine (issue #11): `kca validate` renders
//! every template of a lab to check it, so a template that doubles a text at every step
//! must be refused before it runs. The hostile templates are generated here; the test reads
//! the peak memory of the `kca` process from the kernel (`wait4`'s rusage), not a timer.

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Env;

/// The peak memory (resident set) a run may reach: the refusals take a few MiB; before
/// they existed these templates reached gigabytes.
const RSS_LIMIT_KIB: u64 = 200 << 10;

struct Run {
    code: Option<i32>,
    max_rss_kib: u64,
    output: String,
    took: Duration,
}

/// Runs `kca ARGS` on `content` like `Env::kca_in`, and reads its peak memory.
#[expect(
    clippy::zombie_processes,
    reason = "the child is reaped by `wait4`, which also reports its rusage"
)]
fn run_measured(env: &Env, content: &Path, args: &[&str]) -> Run {
    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kca"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.home.path())
        .env("XDG_STATE_HOME", env.home.path().join("state"))
        .env("KUBECONFIG", env.home.path().join("no-kubeconfig"))
        .env("KCA_CONTENT_DIR", content)
        .env("LANG", "C.UTF-8")
        .args(["--color", "never", "--lang", "en"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kca runs");
    let readers: Vec<_> = [
        Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ]
    .into_iter()
    .map(|mut r| {
        std::thread::spawn(move || {
            let mut s = String::new();
            r.read_to_string(&mut s).unwrap();
            s
        })
    })
    .collect();
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; `wait4` fills it for the child just spawned.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `child.id()` is our own unwaited child; both pointers are valid.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32, "wait4");
    let output = readers.into_iter().map(|r| r.join().unwrap()).collect();
    Run {
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        // Linux reports ru_maxrss in KiB.
        max_rss_kib: usage.ru_maxrss as u64,
        output,
        took: start.elapsed(),
    }
}

/// Each shape grows a value at every step: 2^35 bytes and more if it ran.
fn hostile() -> Vec<(&'static str, String)> {
    let chain: String = (0..40)
        .map(|i| format!("{{% set v{} = v{i} ~ v{i} %}}\n", i + 1))
        .collect();
    vec![
        (
            "doubling.md",
            "{% set a = \"x\" %}\n".to_string() + &"{% set a = a ~ a %}\n".repeat(35) + "{{ a }}",
        ),
        (
            "chain.md",
            format!("{{% set v0 = lab %}}\n{chain}{{{{ v40 }}}}"),
        ),
        (
            "replace.md",
            "{% set a = \"xxxxxxxx\" %}\n".to_string()
                + &"{% set a = a | replace(from=\"x\", to=a) %}\n".repeat(10)
                + "{{ a }}",
        ),
        (
            "lists.md",
            "{% set a = [lab] %}\n".to_string()
                + &"{% set a = a | concat(with=a) %}\n".repeat(40)
                + "{{ a | length }}",
        ),
        (
            "section.md",
            format!(
                "{{% filter upper %}}\n{{% for i in range(end=10000) %}}{{% for j in \
                 range(end=8) %}}{}{{% endfor %}}{{% endfor %}}\n{{% endfilter %}}",
                "x".repeat(1000)
            ),
        ),
    ]
}

#[test]
fn validate_refuses_memory_hungry_templates_quickly_and_in_little_memory() {
    let env = Env::new();
    let content = env.home.path().join("content");
    std::fs::create_dir_all(content.join("labs")).unwrap();
    std::fs::create_dir_all(content.join("quizzes")).unwrap();
    let new = run_measured(&env, &content, &["lab", "new", "demo"]);
    assert_eq!(new.code, Some(0), "{}", new.output);
    let lab = content.join("labs/demo");
    let yaml = std::fs::read_to_string(lab.join("lab.yaml")).unwrap();
    let entry = "  - {path: README.md, template: true}\n";
    assert!(yaml.contains(entry), "{yaml}");
    let mut entries = entry.to_string();
    for (name, text) in hostile() {
        std::fs::write(lab.join("starter").join(name), text).unwrap();
        entries.push_str(&format!("  - {{path: {name}, template: true}}\n"));
    }
    std::fs::write(lab.join("lab.yaml"), yaml.replace(entry, &entries)).unwrap();

    let run = run_measured(&env, &content, &["validate"]);
    assert_eq!(run.code, Some(2), "{}", run.output);
    for (name, _) in hostile() {
        let line = run
            .output
            .lines()
            .find(|l| l.contains(&format!("starter/{name} does not render")))
            .unwrap_or_else(|| panic!("{name} not refused:\n{}", run.output));
        assert!(line.contains(": line "), "{name}: {line}");
        assert!(
            ["rendering may need", "may make or scan", "loops may run"]
                .iter()
                .any(|w| line.contains(w)),
            "{name}: {line}"
        );
    }
    assert!(
        run.max_rss_kib < RSS_LIMIT_KIB,
        "kca validate reached {} MiB",
        run.max_rss_kib >> 10
    );
    // Refused before running: no template reaches the 2 s timer (generous for load).
    assert!(!run.output.contains("did not finish"), "{}", run.output);
    eprintln!(
        "validate: exit {:?}, peak {} MiB, {:?}",
        run.code,
        run.max_rss_kib >> 10,
        run.took
    );
}

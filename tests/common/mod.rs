//! A hermetic kca for CLI tests: temp HOME and XDG state, no kubeconfig, no colour,
//! a fixed language; never touches the real ~/.kube or state dir.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;

pub mod kube_mock;
pub mod tmux;

pub struct Env {
    pub home: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Self {
        Env {
            home: tempfile::tempdir().expect("temp home"),
        }
    }

    pub fn state_dir(&self) -> PathBuf {
        self.home.path().join("state/kca")
    }

    /// `kca` with the course content of this repository.
    pub fn kca(&self) -> Command {
        self.kca_in(&repo())
    }

    /// `kca` with the content folder `dir`.
    pub fn kca_in(&self, dir: &Path) -> Command {
        let mut cmd = Command::cargo_bin("kca").expect("kca binary");
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("XDG_STATE_HOME", self.home.path().join("state"))
            .env("KUBECONFIG", self.home.path().join("no-kubeconfig"))
            .env("KCA_CONTENT_DIR", dir)
            .env("LANG", "C.UTF-8")
            .current_dir(self.home.path())
            .arg("--color")
            .arg("never");
        cmd
    }
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn data(rel: &str) -> PathBuf {
    repo().join("tests/data").join(rel)
}

pub fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Running (a killed orphan may linger as a zombie until its new parent reaps it).
pub fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(") ")
                .map(|(_, rest)| rest.starts_with(['Z', 'X']))
        })
        .is_some_and(|dead| !dead)
}

/// A quiet plain-text English printer for library-level tests.
pub fn printer() -> kca::ui::Printer {
    kca::ui::Printer::new(&kca::settings::Settings {
        color: false,
        output: kca::settings::OutputFormat::Text,
        lang: kca::settings::Lang::En,
        verbosity: -1,
        content_dir: ".".into(),
        state_dir: ".".into(),
        home: ".".into(),
    })
}

/// Copies the folder `from` to `to`, recursively (regular files and folders).
pub fn copy_dir(from: &Path, to: &Path) {
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

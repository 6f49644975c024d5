//! The learner's progress on disk (`$XDG_STATE_HOME/kca`): versioned JSON files written
//! atomically (temp file + rename) under a lock, so two kca processes never lose each
//! other's updates. A corrupt file is moved aside and reported, never silently dropped.
//! Must not print: warnings are collected for the caller to show.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context as _;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::input::{self, ReadError};

/// A state file larger than this is not kca's: it is moved aside like a corrupt one.
pub const MAX_STATE_BYTES: u64 = 64 << 20;

/// The version of the files this kca writes; it reads this one and older ones.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct Envelope<T> {
    version: u32,
    data: T,
}

/// A state type whose fields have ranges serde cannot express: `repair` puts them back
/// in range after reading and says what it changed (each becomes part of one warning).
pub trait Repair {
    fn repair(&mut self) -> Vec<String>;
}

/// At most this many repaired fields are named in the warning.
const NAMED_REPAIRS: usize = 5;

/// Whether process `pid` is running (on this machine's /proc): a temp file or a quiz
/// attempt of a process that ended is no one's any more.
pub fn process_runs(pid: u32) -> bool {
    pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists()
}

#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    warnings: Mutex<Vec<String>>,
}

impl Store {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Store {
            dir: dir.into(),
            warnings: Mutex::new(Vec::new()),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Warnings collected so far (a corrupt file moved aside), for the caller to print.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *self.warnings.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Reads `name`, or the default when it does not exist yet.
    pub fn read<T: DeserializeOwned + Default>(&self, name: &str) -> Result<T> {
        if !self.path(name).exists() {
            return Ok(T::default());
        }
        // Writes replace the file by rename, so a read without the lock still sees a whole
        // file; a state folder that cannot be written (no lock file) must not stop reading.
        let _lock = self.lock(name).ok();
        self.load(name)
    }

    /// Reads `name`, lets `f` change it, and writes it back atomically, all under the
    /// file's lock so a concurrent kca cannot interleave.
    pub fn update<T, R>(&self, name: &str, f: impl FnOnce(&mut T) -> R) -> Result<R>
    where
        T: DeserializeOwned + Serialize + Default,
    {
        let _lock = self.lock(name)?;
        let mut value: T = self.load(name)?;
        let out = f(&mut value);
        self.write(name, &value)?;
        Ok(out)
    }

    /// `read`, then every field put back in range, with a warning naming what changed.
    pub fn read_checked<T: DeserializeOwned + Default + Repair>(&self, name: &str) -> Result<T> {
        let mut value: T = self.read(name)?;
        let fixed = value.repair();
        self.note_repairs(name, &fixed);
        Ok(value)
    }

    /// `update` on a value whose fields were put back in range first (with a warning).
    pub fn update_checked<T, R>(&self, name: &str, f: impl FnOnce(&mut T) -> R) -> Result<R>
    where
        T: DeserializeOwned + Serialize + Default + Repair,
    {
        let mut fixed = Vec::new();
        let out = self.update(name, |v: &mut T| {
            fixed = v.repair();
            f(v)
        })?;
        self.note_repairs(name, &fixed);
        Ok(out)
    }

    fn note_repairs(&self, name: &str, fixed: &[String]) {
        if fixed.is_empty() {
            return;
        }
        let mut named: Vec<String> = fixed
            .iter()
            .take(NAMED_REPAIRS)
            .map(|f| crate::escape::escape(f).into_owned())
            .collect();
        if fixed.len() > NAMED_REPAIRS {
            named.push(format!("{} more", fixed.len() - NAMED_REPAIRS));
        }
        self.warnings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(format!(
                "{} held {} value(s) out of range, put back in range: {}",
                self.path(name).display(),
                fixed.len(),
                named.join("; ")
            ));
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn lock(&self, name: &str) -> Result<File> {
        fs::create_dir_all(&self.dir)
            .with_context(|| format!("cannot create the state folder {}", self.dir.display()))?;
        let path = self.dir.join(format!("{name}.lock"));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot open lock file {}", path.display()))?;
        file.lock()
            .with_context(|| format!("cannot lock {}", path.display()))?;
        Ok(file)
    }

    fn load<T: DeserializeOwned + Default>(&self, name: &str) -> Result<T> {
        let path = self.path(name);
        let text = match input::read_capped(&path, MAX_STATE_BYTES) {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(t) => t,
                Err(_) => return self.set_aside(name, "it is not UTF-8 text"),
            },
            Err(e) if e.is_not_found() => return Ok(T::default()),
            Err(e @ (ReadError::NotRegular { .. } | ReadError::TooLarge { .. })) => {
                return self.set_aside(name, &e.to_string());
            }
            Err(e) => {
                return Err(Error::environment(e.said(), e.hint_said()));
            }
        };
        let version = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("version").and_then(|v| v.as_u64()));
        if let Some(v) = version
            && v > u64::from(FORMAT_VERSION)
        {
            let p = path.display();
            return Err(Error::environment(
                crate::error::msg(
                    format!("{p} は新しい kca が書いたファイルです (形式 {v})"),
                    format!("{p} was written by a newer kca (format {v})"),
                ),
                crate::error::msg(
                    "kca を新しくするか、ファイルをよそへ移して最初からやり直します",
                    "upgrade kca, or move the file away to start afresh",
                ),
            ));
        }
        match serde_json::from_str::<Envelope<T>>(&text) {
            Ok(env) => Ok(env.data),
            Err(e) => self.set_aside(name, &e.to_string()),
        }
    }

    /// Moves an unreadable `name` aside under a name no other corrupt copy has, with a
    /// warning, and starts afresh.
    fn set_aside<T: Default>(&self, name: &str, why: &str) -> Result<T> {
        let path = self.path(name);
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.6fZ");
        let mut aside = self.dir.join(format!("{name}.corrupt-{stamp}"));
        let mut n = 1;
        // Several corruptions within one clock tick each keep their own copy.
        while aside.symlink_metadata().is_ok() {
            n += 1;
            aside = self.dir.join(format!("{name}.corrupt-{stamp}-{n}"));
        }
        fs::rename(&path, &aside)
            .with_context(|| format!("cannot move corrupt {} aside", path.display()))?;
        self.warnings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push({
                let (p, why, kept) = (path.display(), crate::escape::escape(why), aside.display());
                // The warning is shown in the language this run speaks.
                crate::ui::tr_s(
                    crate::settings::chosen(),
                    format!(
                        "{p} を読めませんでした ({why})。{kept} として残し、最初からやり直します"
                    ),
                    format!("{p} was unreadable ({why}); kept it as {kept} and started afresh"),
                )
            });
        Ok(T::default())
    }

    /// Removes temp files of writes that were killed midway (`.NAME.tmp-PID` of a
    /// process that no longer runs); a live process's temp file is left alone.
    fn sweep_stale_temps(&self, name: &str) {
        let prefix = format!(".{name}.tmp-");
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return;
        };
        for e in entries.flatten() {
            let file = e.file_name();
            let Some(pid) = file
                .to_str()
                .and_then(|f| f.strip_prefix(&prefix))
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            if pid != std::process::id() && !process_runs(pid) {
                let _ = fs::remove_file(e.path());
            }
        }
    }

    fn write<T: Serialize>(&self, name: &str, value: &T) -> Result<()> {
        let path = self.path(name);
        self.sweep_stale_temps(name);
        let tmp = self.dir.join(format!(".{name}.tmp-{}", std::process::id()));
        // Compact: a progress file is for kca to read, and pretty JSON doubles its size.
        let text = serde_json::to_string(&Envelope {
            version: FORMAT_VERSION,
            data: value,
        })
        .context("cannot serialise state")?;
        let mut file =
            File::create(&tmp).with_context(|| format!("cannot write {}", tmp.display()))?;
        file.write_all(text.as_bytes())
            .and_then(|_| file.sync_all())
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        fs::rename(&tmp, &path).with_context(|| format!("cannot replace {}", path.display()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    type Counts = BTreeMap<String, u32>;

    #[test]
    fn update_round_trips_with_a_version() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        store
            .update("p.json", |c: &mut Counts| {
                *c.entry("a".into()).or_default() += 1
            })
            .unwrap();
        let c: Counts = store.read("p.json").unwrap();
        assert_eq!(c["a"], 1);
        let raw = fs::read_to_string(dir.path().join("p.json")).unwrap();
        assert!(raw.starts_with("{\"version\":1,"), "{raw}");
    }

    #[test]
    fn corrupt_file_is_moved_aside_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("p.json"), "{not json").unwrap();
        let store = Store::new(dir.path());
        let c: Counts = store.read("p.json").unwrap();
        assert!(c.is_empty());
        let warnings = store.take_warnings();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let kept: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("p.json.corrupt-")
            })
            .collect();
        assert_eq!(kept.len(), 1);
        assert_eq!(fs::read_to_string(kept[0].path()).unwrap(), "{not json");
    }

    fn corrupt_copies(dir: &Path) -> Vec<PathBuf> {
        let mut v: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().contains("p.json.corrupt-"))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_progress_file_that_is_not_utf8_is_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join("p.json"),
            b"{\"version\":1,\"data\":{\"\xff\": 1}}",
        )
        .unwrap();
        let store = Store::new(dir.path());
        let c: Counts = store.read("p.json").unwrap();
        assert!(c.is_empty());
        assert_eq!(corrupt_copies(dir.path()).len(), 1);
        assert!(store.take_warnings()[0].contains("not UTF-8"));
    }

    #[test]
    fn several_corruptions_in_one_second_keep_every_copy() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        for i in 0..5 {
            fs::write(dir.path().join("p.json"), format!("{{broken {i}")).unwrap();
            let _: Counts = store.read("p.json").unwrap();
        }
        let kept = corrupt_copies(dir.path());
        assert_eq!(kept.len(), 5, "{kept:?}");
        let mut texts: Vec<_> = kept
            .iter()
            .map(|p| fs::read_to_string(p).unwrap())
            .collect();
        texts.sort();
        assert_eq!(texts[0], "{broken 0");
    }

    #[test]
    fn a_fifo_as_the_progress_file_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = std::ffi::CString::new(dir.path().join("p.json").as_os_str().as_encoded_bytes())
            .unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let store = Store::new(dir.path());
        store
            .update("p.json", |c: &mut Counts| {
                *c.entry("a".into()).or_default() += 1
            })
            .unwrap();
        assert!(store.take_warnings()[0].contains("named pipe"));
        let c: Counts = store.read("p.json").unwrap();
        assert_eq!(c["a"], 1);
    }

    #[test]
    fn stale_temp_files_of_killed_writes_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        // A pid that cannot be running (above the kernel's pid_max).
        let stale = dir.path().join(".p.json.tmp-4194305");
        fs::write(&stale, "half").unwrap();
        let other_live = dir.path().join(".p.json.tmp-1");
        fs::write(&other_live, "init's").unwrap();
        let store = Store::new(dir.path());
        store.update("p.json", |_: &mut Counts| ()).unwrap();
        assert!(!stale.exists());
        assert!(
            other_live.exists(),
            "a live process's temp file was removed"
        );
    }

    #[test]
    fn newer_format_is_refused_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("p.json"), r#"{"version": 99, "data": {}}"#).unwrap();
        let store = Store::new(dir.path());
        assert!(store.update("p.json", |_: &mut Counts| ()).is_err());
        assert!(
            fs::read_to_string(dir.path().join("p.json"))
                .unwrap()
                .contains("99")
        );
    }

    #[test]
    fn concurrent_updates_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let d = dir.path().to_path_buf();
                std::thread::spawn(move || {
                    let store = Store::new(d);
                    for _ in 0..25 {
                        store
                            .update("p.json", |c: &mut Counts| {
                                *c.entry("n".into()).or_default() += 1
                            })
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let c: Counts = Store::new(dir.path()).read("p.json").unwrap();
        assert_eq!(c["n"], 200);
    }
}

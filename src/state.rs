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

/// The version of the files this kca writes; it reads this one and older ones.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct Envelope<T> {
    version: u32,
    data: T,
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
        let _lock = self.lock(name)?;
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
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(T::default()),
            Err(e) => {
                return Err(anyhow::Error::new(e)
                    .context(format!("cannot read {}", path.display()))
                    .into());
            }
        };
        let version = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("version").and_then(|v| v.as_u64()));
        if let Some(v) = version
            && v > u64::from(FORMAT_VERSION)
        {
            return Err(Error::environment(
                format!("{} was written by a newer kca (format {v})", path.display()),
                "upgrade kca, or move the file away to start afresh",
            ));
        }
        match serde_json::from_str::<Envelope<T>>(&text) {
            Ok(env) => Ok(env.data),
            Err(e) => {
                let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
                let aside = self.dir.join(format!("{name}.corrupt-{stamp}"));
                fs::rename(&path, &aside)
                    .with_context(|| format!("cannot move corrupt {} aside", path.display()))?;
                self.warnings
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(format!(
                        "{} was unreadable ({e}); kept it as {} and started afresh",
                        path.display(),
                        aside.display()
                    ));
                Ok(T::default())
            }
        }
    }

    fn write<T: Serialize>(&self, name: &str, value: &T) -> Result<()> {
        let path = self.path(name);
        let tmp = self.dir.join(format!(".{name}.tmp-{}", std::process::id()));
        let text = serde_json::to_string_pretty(&Envelope {
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
        assert!(raw.contains("\"version\": 1"));
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

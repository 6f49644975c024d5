//! Opening a file kca was given — a learner's workspace file, lab or quiz content, an
//! answers file, a state file, a `-f` manifest — safely: regular files only (a FIFO or a
//! device is refused before anything blocks on it), never more than a cap read into
//! memory, and workspace paths kept inside the workspace (symbolic links included).
//! The one place that turns a path we were handed into bytes; it must not print.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

/// What kca reads of one learner or content file at most.
pub const MAX_BYTES: u64 = 8 << 20;
/// `-f` manifests may be bundles (CRDs, many RBAC objects): a larger cap.
pub const MAX_MANIFEST_BYTES: u64 = 64 << 20;

/// Why a file could not be read. The messages name the file and say what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{} does not exist", .0.display())]
    NotFound(PathBuf),
    #[error("{} is {what}, not a regular file", .path.display())]
    NotRegular { path: PathBuf, what: &'static str },
    #[error("{} is larger than {}", .path.display(), size_text(*.limit))]
    TooLarge { path: PathBuf, limit: u64 },
    #[error("{} leads outside the workspace{}", .path.display(), link_text(.target))]
    Outside {
        path: PathBuf,
        target: Option<PathBuf>,
    },
    #[error("{} is not UTF-8 text", .0.display())]
    NotUtf8(PathBuf),
    #[error("cannot read {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl ReadError {
    pub fn is_not_found(&self) -> bool {
        matches!(self, ReadError::NotFound(_))
    }

    /// What to do about it, for an error hint.
    pub fn hint(&self) -> &'static str {
        match self {
            ReadError::NotFound(_) => "check the path",
            ReadError::NotRegular { .. } => "kca reads regular files only; replace it with one",
            ReadError::TooLarge { .. } => "kca does not read files this large; split or shorten it",
            ReadError::Outside { .. } => {
                "workspace files must stay inside the workspace: replace the link with the file itself"
            }
            ReadError::NotUtf8(_) => "save the file as UTF-8",
            ReadError::Io { .. } => "check the file's permissions",
        }
    }
}

impl ReadError {
    /// The message in both languages (`to_string` is the English one).
    pub fn said(&self) -> crate::error::Msg {
        let p = |p: &Path| crate::escape::path(p).to_string();
        let ja = match self {
            ReadError::NotFound(path) => format!("{} がありません", p(path)),
            ReadError::NotRegular { path, what } => {
                format!(
                    "{} は{}で、普通のファイルではありません",
                    p(path),
                    what_ja(what)
                )
            }
            ReadError::TooLarge { path, limit } => {
                format!(
                    "{} は {} より大きいファイルです",
                    p(path),
                    size_text(*limit)
                )
            }
            ReadError::Outside { path, target } => format!(
                "{} は作業フォルダーの外を指しています{}",
                p(path),
                target
                    .as_ref()
                    .map(|t| format!(" (シンボリックリンクの先: {})", p(t)))
                    .unwrap_or_default()
            ),
            ReadError::NotUtf8(path) => format!("{} は UTF-8 のテキストではありません", p(path)),
            ReadError::Io { path, source } => format!("{} を読めません: {source}", p(path)),
        };
        crate::error::msg(ja, self.to_string())
    }

    /// [`ReadError::hint`] in both languages.
    pub fn hint_said(&self) -> crate::error::Msg {
        let ja = match self {
            ReadError::NotFound(_) => "パスを確かめてください",
            ReadError::NotRegular { .. } => {
                "kca が読むのは普通のファイルだけです。普通のファイルに置き換えてください"
            }
            ReadError::TooLarge { .. } => {
                "kca はこれほど大きいファイルを読みません。分けるか短くしてください"
            }
            ReadError::Outside { .. } => {
                "作業フォルダーのファイルはその中に置きます。リンクをファイルそのものに置き換えてください"
            }
            ReadError::NotUtf8(_) => "ファイルを UTF-8 で保存してください",
            ReadError::Io { .. } => "ファイルのアクセス権を確かめてください",
        };
        crate::error::msg(ja, self.hint())
    }
}

/// The Japanese word for [`what`]'s English one.
fn what_ja(en: &str) -> &'static str {
    match en {
        "a folder" => "フォルダー",
        "a named pipe (FIFO)" => "名前付きパイプ (FIFO)",
        "a socket" => "ソケット",
        "a device" => "デバイス",
        _ => "特殊なファイル",
    }
}

/// A file kca cannot read as given is the caller's to fix (exit 2); an I/O failure is
/// the environment's (exit 3).
impl From<ReadError> for crate::error::Error {
    fn from(e: ReadError) -> Self {
        let (message, hint) = (e.said(), e.hint_said());
        match e {
            ReadError::Io { .. } => crate::error::Error::environment(message, hint),
            _ => crate::error::Error::usage(message, hint),
        }
    }
}

fn size_text(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

fn link_text(target: &Option<PathBuf>) -> String {
    target
        .as_ref()
        .map(|t| format!(" (a symbolic link to {})", t.display()))
        .unwrap_or_default()
}

fn io_error(path: &Path, e: std::io::Error) -> ReadError {
    if e.kind() == std::io::ErrorKind::NotFound {
        ReadError::NotFound(path.to_path_buf())
    } else {
        ReadError::Io {
            path: path.to_path_buf(),
            source: e,
        }
    }
}

/// A word for a file type that is not a regular file.
fn what(ty: std::fs::FileType) -> &'static str {
    if ty.is_dir() {
        "a folder"
    } else if ty.is_fifo() {
        "a named pipe (FIFO)"
    } else if ty.is_socket() {
        "a socket"
    } else if ty.is_char_device() || ty.is_block_device() {
        "a device"
    } else {
        "a special file"
    }
}

/// Opens `path` for reading without ever blocking (`O_NONBLOCK`: opening a FIFO does not
/// wait for a writer) and checks the opened file is a regular file within `limit`;
/// returns it with its size.
fn open_regular(path: &Path, limit: u64) -> Result<(File, u64), ReadError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| io_error(path, e))?;
    let meta = file.metadata().map_err(|e| io_error(path, e))?;
    if !meta.file_type().is_file() {
        return Err(ReadError::NotRegular {
            path: path.to_path_buf(),
            what: what(meta.file_type()),
        });
    }
    if meta.len() > limit {
        return Err(ReadError::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    Ok((file, meta.len()))
}

/// The bytes of the regular file at `path`, at most [`MAX_BYTES`].
pub fn read(path: &Path) -> Result<Vec<u8>, ReadError> {
    read_capped(path, MAX_BYTES)
}

/// The bytes of the regular file at `path`, at most `limit` (a file that grows while it
/// is read is cut off at the cap and refused too).
pub fn read_capped(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let (file, size) = open_regular(path, limit)?;
    // Sized once from what the file says (`take` hides that from `read_to_end`): growing
    // by doubling zeroes and copies several times the pages of a 20 MB manifest.
    let mut out = Vec::with_capacity((size as usize).saturating_add(1));
    file.take(limit + 1)
        .read_to_end(&mut out)
        .map_err(|e| io_error(path, e))?;
    if out.len() as u64 > limit {
        return Err(ReadError::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    Ok(out)
}

/// The text of the regular file at `path` (UTF-8, at most [`MAX_BYTES`]).
pub fn read_text(path: &Path) -> Result<String, ReadError> {
    String::from_utf8(read(path)?).map_err(|_| ReadError::NotUtf8(path.to_path_buf()))
}

/// `root/rel`, once it is sure not to lead outside `root`: `rel` is relative without
/// `..`, and no symbolic link on the way (the file itself included, dangling or not)
/// resolves outside `root`. The path need not exist (for a file about to be written).
pub fn within(root: &Path, rel: &Path) -> Result<PathBuf, ReadError> {
    let full = root.join(rel);
    let outside = |target: Option<PathBuf>| ReadError::Outside {
        path: full.clone(),
        target,
    };
    if rel
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(outside(None));
    }
    let Ok(real_root) = root.canonicalize() else {
        // No workspace yet: nothing inside it can point elsewhere.
        return Ok(full);
    };
    let mut at = root.to_path_buf();
    for c in rel.components() {
        at.push(c);
        let Ok(meta) = at.symlink_metadata() else {
            // The rest does not exist yet; what exists so far stayed inside.
            break;
        };
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&at).ok();
            match at.canonicalize() {
                Ok(real) if real.starts_with(&real_root) => {}
                _ => return Err(outside(target)),
            }
        }
    }
    Ok(full)
}

/// Reads the workspace file `rel` under `root`: inside the workspace, regular, capped.
pub fn read_within(root: &Path, rel: &Path) -> Result<Vec<u8>, ReadError> {
    read(&within(root, rel)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use std::time::{Duration, Instant};

    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("pipe.yaml");
        mkfifo(&fifo);
        symlink(&fifo, tmp.path().join("link.yaml")).unwrap();
        let start = Instant::now();
        for p in [&fifo, &tmp.path().join("link.yaml")] {
            let e = read(p).unwrap_err();
            assert!(e.to_string().contains("named pipe"), "{e}");
        }
        assert!(start.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn dev_zero_and_large_files_are_capped() {
        let e = read(Path::new("/dev/zero")).unwrap_err();
        assert!(e.to_string().contains("a device"), "{e}");
        let tmp = tempfile::tempdir().unwrap();
        let big = tmp.path().join("big.yaml");
        File::create(&big).unwrap().set_len(MAX_BYTES + 1).unwrap();
        let e = read(&big).unwrap_err();
        assert!(e.to_string().ends_with("is larger than 8 MiB"), "{e}");
        assert!(read(tmp.path()).unwrap_err().to_string().contains("folder"));
    }

    #[test]
    fn workspace_links_that_leave_it_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::write(tmp.path().join("secret.yaml"), "name: SECRET").unwrap();
        std::fs::write(ws.join("mine.yaml"), "a: 1").unwrap();
        symlink(tmp.path().join("secret.yaml"), ws.join("leak.yaml")).unwrap();
        symlink("mine.yaml", ws.join("alias.yaml")).unwrap();
        symlink(tmp.path(), ws.join("up")).unwrap();
        symlink("/nonexistent/target", ws.join("dangling.yaml")).unwrap();
        assert_eq!(
            read_within(&ws, Path::new("alias.yaml")).unwrap(),
            b"a: 1".to_vec()
        );
        for rel in [
            "leak.yaml",
            "up/secret.yaml",
            "dangling.yaml",
            "../secret.yaml",
        ] {
            let e = read_within(&ws, Path::new(rel)).unwrap_err();
            assert!(matches!(e, ReadError::Outside { .. }), "{rel}: {e}");
            assert!(!e.to_string().contains("SECRET"));
        }
        assert!(within(&ws, Path::new("sub/new.yaml")).is_ok());
        assert!(within(&ws, Path::new("up/new.yaml")).is_err());
    }
}

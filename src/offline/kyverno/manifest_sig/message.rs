//! The signed manifest a resource carries in its message annotation, read as
//! k8s-manifest-sigstore reads it (`pkg/k8smanifest/verify.go` `BlobManifestFetcher`,
//! `pkg/util/gzip.go`, `pkg/util/image.go` `GetYAMLsInArtifact`, `pkg/util/yaml.go`
//! `FindManifestYAML`): base64, one gzip layer taken off when there is one, then either
//! YAML or a gzipped tar ball of `*.yaml`/`*.yml` files. Bounded: the gzip reader stops at
//! its cap, the tar ball at [`MAX_FILES`] entries, the YAML at [`MAX_DOCS`] documents.

use serde_json::Value;

use super::diff::{masked, same};
use crate::offline::vap::gunzip;

/// Entries read from a tar ball, at most.
const MAX_FILES: usize = 256;
/// Manifests read from a message, at most.
const MAX_DOCS: usize = 256;
/// Candidates the value-based search returns (the library's default).
const MAX_CANDIDATES: usize = 3;

/// Base64 as Go's `StdEncoding.DecodeString` reads it (line breaks skipped).
pub fn base64_std(s: &str) -> Result<Vec<u8>, String> {
    use base64::Engine as _;
    let clean: String = s.chars().filter(|c| *c != '\n' && *c != '\r').collect();
    base64::engine::general_purpose::STANDARD
        .decode(clean.as_bytes())
        .map_err(|e| format!("illegal base64 data: {e}"))
}

/// `GzipDecompress`: the payload when `data` is gzip, else `data` as it is.
pub fn gunzip_or_same(data: Vec<u8>) -> Vec<u8> {
    gunzip(&data).unwrap_or(data)
}

/// Why no manifest came out of the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchError {
    /// The library's `MessageNotFoundError` (the rule fails with it).
    NotFound(String),
    /// Any other error (the rule errors).
    Other(String),
}

/// The manifests of the message annotation's value.
pub fn manifests(b64: &str) -> Result<Vec<Value>, FetchError> {
    let raw = base64_std(b64).map_err(|e| {
        FetchError::Other(format!(
            "failed to decode base64 message in the annotation: {e}"
        ))
    })?;
    let blob = gunzip_or_same(raw);
    yamls_in_artifact(&blob)
        .map_err(|e| FetchError::Other(format!("failed to read YAMLs in the gzipped message: {e}")))
}

/// The YAML documents of `text`, or none when it is not YAML.
fn split_yamls(bytes: &[u8]) -> Vec<Value> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Vec::new();
    };
    crate::yaml::parse_json_stream(text)
        .map(|mut d| {
            d.truncate(MAX_DOCS);
            d
        })
        .unwrap_or_default()
}

/// `GetYAMLsInArtifact`: raw YAML first, else a gzipped tar ball's YAML files.
fn yamls_in_artifact(blob: &[u8]) -> Result<Vec<Value>, String> {
    let docs = split_yamls(blob);
    if !docs.is_empty() {
        return Ok(docs);
    }
    let tar = gunzip(blob)
        .map_err(|e| format!("gzip.NewReader() failed while decompressing tar gz: {e}"))?;
    let mut files = tar_files(&tar)?;
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = Vec::new();
    for (name, body) in files {
        if !(name.ends_with(".yaml") || name.ends_with(".yml")) {
            continue;
        }
        // `isK8sResourceYAML`: the file's first document is an object with a kind.
        let docs = split_yamls(&body);
        if docs
            .first()
            .is_some_and(|d| d.get("kind").is_some_and(Value::is_string))
        {
            out.extend(docs);
        }
        if out.len() > MAX_DOCS {
            return Err(format!("more than {MAX_DOCS} manifests"));
        }
    }
    Ok(out)
}

/// The regular files of a tar ball (ustar, PAX and GNU long names), by path. Other entry
/// kinds are refused as Go's reader there refuses them.
fn tar_files(data: &[u8]) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut out = Vec::new();
    let mut at = 0usize;
    let mut long_name: Option<String> = None;
    let mut seen = 0usize;
    while at + 512 <= data.len() {
        let h = &data[at..at + 512];
        if h.iter().all(|&b| b == 0) {
            break;
        }
        seen += 1;
        if seen > MAX_FILES {
            return Err(format!("more than {MAX_FILES} entries"));
        }
        let field = |from: usize, len: usize| {
            let f = &h[from..from + len];
            let end = f.iter().position(|&b| b == 0).unwrap_or(len);
            String::from_utf8_lossy(&f[..end]).into_owned()
        };
        let size_text = field(124, 12);
        let size = usize::from_str_radix(size_text.trim(), 8)
            .map_err(|_| "tarReader.Next() failed while decompressing tar gz: archive/tar: invalid tar header".to_string())?;
        let body_at = at + 512;
        let body = data
            .get(
                body_at
                    ..body_at
                        .checked_add(size)
                        .ok_or("archive/tar: invalid tar header")?,
            )
            .ok_or("tarReader.Next() failed while decompressing tar gz: unexpected EOF")?;
        at = body_at + size.div_ceil(512) * 512;
        let mut name = field(0, 100);
        if &h[257..262] == b"ustar" {
            let prefix = field(345, 155);
            if !prefix.is_empty() {
                name = format!("{prefix}/{name}");
            }
        }
        if let Some(n) = long_name.take() {
            name = n;
        }
        match h[156] {
            b'x' => long_name = pax_path(body),
            b'g' => {}
            b'L' => {
                let end = body.iter().position(|&b| b == 0).unwrap_or(body.len());
                long_name = Some(String::from_utf8_lossy(&body[..end]).into_owned());
            }
            b'5' => {}
            b'0' | 0 => {
                if !name.starts_with("..") {
                    out.push((name, body.to_vec()));
                }
            }
            other => {
                return Err(format!(
                    "faced uknown type {} in {name} while decompressing tar gz",
                    char::from(other)
                ));
            }
        }
    }
    Ok(out)
}

/// The `path` record of a PAX extended header.
fn pax_path(body: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(body);
    text.lines().find_map(|l| {
        let (_, rec) = l.split_once(' ')?;
        rec.strip_prefix("path=").map(str::to_string)
    })
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.pointer(key).and_then(Value::as_str).unwrap_or("")
}

fn group(api_version: &str) -> &str {
    api_version.split_once('/').map(|(g, _)| g).unwrap_or("")
}

/// `FindManifestYAML`: the manifests of `obj`'s kind; the one with its group, kind and
/// name (preferring its namespace too), else the best few by matching values.
pub fn find(docs: &[Value], obj: &Value, ignore: &[String]) -> Option<Vec<Value>> {
    let kind = text(obj, "/kind");
    let same_kind: Vec<&Value> = docs
        .iter()
        .filter(|d| d.is_object() && text(d, "/kind") == kind)
        .collect();
    if same_kind.is_empty() {
        return None;
    }
    let (g, name, ns) = (
        group(text(obj, "/apiVersion")),
        text(obj, "/metadata/name"),
        text(obj, "/metadata/namespace"),
    );
    let named: Vec<&&Value> = same_kind
        .iter()
        .filter(|d| group(text(d, "/apiVersion")) == g && text(d, "/metadata/name") == name)
        .collect();
    if let Some(first) = named.first() {
        let pick = named
            .iter()
            .find(|d| text(d, "/metadata/namespace") == ns)
            .unwrap_or(first);
        return Some(vec![(**pick).clone()]);
    }
    // `ManifestSearchByValue`, counting every key (the library may stop early on an
    // order Go's map iteration picks; kca counts them all).
    let want = masked(obj, ignore);
    let mut scored: Vec<(usize, &Value)> = same_kind
        .iter()
        .map(|d| {
            let have = masked(d, ignore);
            let n = want
                .iter()
                .filter(|(k, v)| have.get(*k).is_some_and(|h| same(h, v)))
                .count();
            (n, *d)
        })
        .collect();
    scored.sort_by_key(|s| std::cmp::Reverse(s.0));
    let best = scored[0].0;
    Some(
        scored
            .into_iter()
            .take_while(|(n, _)| *n == best)
            .take(MAX_CANDIDATES)
            .map(|(_, d)| d.clone())
            .collect(),
    )
}

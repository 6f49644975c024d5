//! The REST paths of kca's requests: a group version's prefix, collection and item paths
//! (with subresources), and the percent-encoding of path segments and query values.

use super::ResourceInfo;

pub(super) fn prefix(api_version: &str) -> String {
    if api_version.contains('/') {
        format!("/apis/{api_version}")
    } else {
        format!("/api/{api_version}")
    }
}

pub(super) fn collection_path(
    api_version: &str,
    info: &ResourceInfo,
    namespace: Option<&str>,
) -> String {
    match namespace {
        Some(ns) => format!(
            "{}/namespaces/{}/{}",
            prefix(api_version),
            encode_segment(ns),
            info.plural
        ),
        None => format!("{}/{}", prefix(api_version), info.plural),
    }
}

pub(super) fn item_path(
    api_version: &str,
    info: &ResourceInfo,
    namespace: Option<&str>,
    name: &str,
) -> String {
    format!(
        "{}/{}",
        collection_path(api_version, info, namespace),
        encode_segment(name)
    )
}

/// Percent-encodes a path segment; `:` stays, as in `system:aggregate-to-edit`.
pub(super) fn encode_segment(s: &str) -> String {
    encode(s, |c| c.is_ascii_alphanumeric() || "-._~:@".contains(c))
}

/// Percent-encodes a query value (label selectors hold `=`, `,`, `!`, spaces).
pub(super) fn encode_query(s: &str) -> String {
    encode(s, |c| c.is_ascii_alphanumeric() || "-._~".contains(c))
}

pub(super) fn encode(s: &str, keep: impl Fn(char) -> bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if keep(c) {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

//! Kyverno's image library (kyverno/sdk `extensions/cel/libs/image`): `image(s)` and
//! `parseImageReference(s)` parse an image reference as go-containerregistry's
//! `name.ParseReference` does with its default options (`pkg/name/ref.go`, `tag.go`,
//! `digest.go`, `repository.go`, `registry.go`), `isImage(s)` says whether one parses,
//! and the value's members `registry()`, `repository()`, `identifier()`, `tag()`,
//! `digest()` and `containsDigest()` read it. Nothing here asks a registry: image
//! metadata (`image.GetMetadata`) is the image data library of `services.rs` (from a
//! context file, else unsupported as needing the network).

use std::any::Any;
use std::sync::Arc;

use cel::common::types::{DYN_TYPE, STRING_TYPE};
use cel::common::value::CowVal;
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError};

use super::codecs::{boxed, string_arg};

/// go-containerregistry's `DefaultRegistry`, and the alias it stands for.
const DEFAULT_REGISTRY: &str = "index.docker.io";
const DEFAULT_REGISTRY_ALIAS: &str = "docker.io";
const TAG_CHARS: &str = "abcdefghijklmnopqrstuvwxyz0123456789_-.ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const REPOSITORY_CHARS: &str = "abcdefghijklmnopqrstuvwxyz0123456789_-./";

/// A parsed reference: by tag (the default `latest` when none is written) or by digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ImageRef {
    registry: String,
    /// As written, without the implicit `library/` of Docker Hub.
    repository: String,
    tag: String,
    digest: String,
    original: String,
}

impl Opaque for ImageRef {
    fn runtime_type_name(&self) -> &str {
        "kyverno.image"
    }
}

impl ImageRef {
    fn repository_str(&self) -> String {
        if !self.repository.contains('/') && self.registry == DEFAULT_REGISTRY {
            format!("library/{}", self.repository)
        } else {
            self.repository.clone()
        }
    }
}

/// `name.ParseReference`: a tag reference if it is one, else a digest reference.
pub(super) fn parse_reference(s: &str) -> Result<ImageRef, String> {
    parse_tag(s)
        .or_else(|_| parse_digest(s))
        .map_err(|_| format!("could not parse reference: {s}"))
}

fn check_element(
    what: &str,
    value: &str,
    allowed: &str,
    min: usize,
    max: usize,
) -> Result<(), String> {
    if value.len() < min || value.len() > max {
        return Err(format!(
            "{what} must be between {min} and {max} characters in length: {value}"
        ));
    }
    if let Some(c) = value.chars().find(|c| !allowed.contains(*c)) {
        return Err(format!(
            "{what} can only contain the characters `{allowed}`: {value} ({c})"
        ));
    }
    Ok(())
}

fn parse_tag(name: &str) -> Result<ImageRef, String> {
    let (mut base, mut tag) = (name, "");
    if let Some((b, t)) = name.rsplit_once(':')
        && !t.contains('/')
    {
        if t.is_empty() {
            return Err(format!("{name} must specify a tag name after the colon"));
        }
        check_element("tag", t, TAG_CHARS, 1, 128)?;
        (base, tag) = (b, t);
    }
    let (registry, repository) = parse_repository(base)?;
    Ok(ImageRef {
        registry,
        repository,
        tag: if tag.is_empty() { "latest" } else { tag }.to_string(),
        digest: String::new(),
        original: name.to_string(),
    })
}

fn parse_digest(name: &str) -> Result<ImageRef, String> {
    let parts: Vec<&str> = name.split('@').collect();
    let [base, dig] = parts.as_slice() else {
        return Err(format!(
            "a digest must contain exactly one '@' separator: {name}"
        ));
    };
    let hex = dig
        .strip_prefix("sha256:")
        .ok_or_else(|| format!("unsupported digest algorithm: {dig}"))?;
    if hex.len() != 64
        || !hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(format!("invalid checksum digest format: {dig}"));
    }
    // A tag before the digest is dropped (its repository is kept).
    let (registry, repository) = match parse_tag(base) {
        Ok(t) => (t.registry.clone(), t.repository_str()),
        Err(_) => parse_repository(base)?,
    };
    Ok(ImageRef {
        registry,
        repository,
        tag: String::new(),
        digest: dig.to_string(),
        original: name.to_string(),
    })
}

/// The registry and repository of `name` (`name.NewRepository`).
fn parse_repository(name: &str) -> Result<(String, String), String> {
    if name.is_empty() {
        return Err("a repository name must be specified".into());
    }
    let (mut registry, mut repo) = ("", name);
    if let Some((first, rest)) = name.split_once('/')
        && (first == "localhost" || first.contains(['.', ':']))
    {
        (registry, repo) = (first, rest);
    }
    check_element("repository", repo, REPOSITORY_CHARS, 1, 255)?;
    check_registry(registry)?;
    let registry = match registry {
        "" | DEFAULT_REGISTRY_ALIAS => DEFAULT_REGISTRY,
        r => r,
    };
    Ok((registry.to_string(), repo.to_string()))
}

/// Whether `name` is a URI authority that is all host (and port): Go's
/// `url.Parse("//" + name).Host == name`.
fn check_registry(name: &str) -> Result<(), String> {
    let bad = || format!("registries must be valid RFC 3986 URI authorities: {name}");
    if name
        .chars()
        .any(|c| !c.is_ascii_graphic() || "?#@/\\\"<>^`{|}".contains(c))
    {
        return Err(bad());
    }
    let after_host = name.rsplit_once(']').map_or(name, |(_, tail)| tail);
    if let Some((_, port)) = after_host.rsplit_once(':')
        && !port.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    Ok(())
}

/// Declares the functions on `env`.
pub(super) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    // `image` is Kyverno's deprecated spelling of `parseImageReference`.
    for name in ["parseImageReference", "image"] {
        env.add_overload(name, &format!("{name}_string"), vec![STRING_TYPE], parse)?;
    }
    env.add_overload("isImage", "isImage_string", vec![STRING_TYPE], is_image)?;
    macro_rules! member {
        ($name:literal, |$i:ident| $read:expr) => {{
            fn call<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
                let $i = image_of(&args, $name)?;
                boxed($read)
            }
            env.add_member_overload($name, concat!("image_", $name), DYN_TYPE, vec![], call)?;
        }};
    }
    member!("containsDigest", |i| cel::Value::Bool(!i.digest.is_empty()));
    member!("registry", |i| text(i.registry.clone()));
    member!("repository", |i| text(i.repository_str()));
    member!("identifier", |i| text(if i.digest.is_empty() {
        i.tag
    } else {
        i.digest
    }));
    member!("tag", |i| text(i.tag));
    member!("digest", |i| text(i.digest));
    Ok(())
}

fn text(s: String) -> cel::Value {
    cel::Value::String(Arc::new(s))
}

fn image_of(args: &[CowVal<'_, '_>], function: &str) -> Result<ImageRef, ExecutionError> {
    let not_image = || ExecutionError::function_error(function, "the receiver is not an image");
    let v = args.first().ok_or_else(not_image)?;
    match cel::Value::try_from(v.as_ref()) {
        Ok(cel::Value::Opaque(o)) => (o.as_ref() as &dyn Any)
            .downcast_ref::<ImageRef>()
            .cloned()
            .ok_or_else(not_image),
        _ => Err(not_image()),
    }
}

fn parse<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    const F: &str = "parseImageReference";
    let s = string_arg(&args, F)?;
    let img = parse_reference(&s).map_err(|e| ExecutionError::function_error(F, e))?;
    boxed(cel::Value::Opaque(Arc::new(img)))
}

fn is_image<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = string_arg(&args, "isImage")?;
    boxed(cel::Value::Bool(parse_reference(&s).is_ok()))
}

#[cfg(test)]
#[path = "image_tests.rs"]
mod tests;

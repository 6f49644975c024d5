//! The cleanup controller's TTL controller (pkg/controllers/ttl at v1.19.0): which objects
//! labelled `cleanup.kyverno.io/ttl` it deletes, and how long after their creation. When
//! the deletion falls on the replay's clock is the clock's; this module deletes nothing.

use serde_json::Value;

use super::super::Skip;
use super::super::cluster::text;
use super::cleanup::cleanup_may;
use crate::offline::rbac::Authorizer;
use crate::offline::rbac::resource::Mapper;

/// The label the TTL controller watches (api/kyverno/constants.go `LabelCleanupTtl`).
pub const LABEL: &str = "cleanup.kyverno.io/ttl";

/// Unix seconds of v1.19.0's release commit. Every run of its suite comes later, so an
/// absolute deletion time before it has certainly passed; one after it may or may not
/// have, by a wall clock the replay does not know.
const RELEASED: i64 = 1_787_215_976; // 2026-08-20T08:52:56Z

/// What a TTL label says, as utils.go `parseDeletionTime` reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Lifetime {
    /// A duration after the object's creation (seconds; Go allows a negative one).
    AfterCreation(f64),
    /// An absolute time (unix seconds).
    At(i64),
}

/// The TTL controller on `obj`: seconds after the object's creation when it deletes it
/// (`f64::NEG_INFINITY`: its time has passed, it goes as soon as the controller sees it).
/// It watches only resources the cleanup controller may `watch`, `list` and `delete`
/// cluster-wide (manager.go `filterPermissionsResource`, utils.go
/// `HasResourcePermissions`) and ignores a label it cannot read (controller.go
/// `reconcile` logs and drops it; the resource webhook,
/// cmd/cleanup-controller/handlers/admission/resource/handlers.go, admits either way).
/// `None`: the object stays. `Some(Err)`: an absolute time after the release, which the
/// replay cannot place.
pub fn deletion(
    obj: &Value,
    authorizer: &Authorizer,
    mapper: &Mapper,
) -> Option<Result<f64, Skip>> {
    let value = obj.pointer("/metadata/labels/cleanup.kyverno.io~1ttl")?;
    let lifetime = lifetime(value.as_str()?)?;
    let r = mapper.for_kind(&text(obj, "/apiVersion"), &text(obj, "/kind"))?;
    let watched = ["watch", "list", "delete"]
        .iter()
        .all(|verb| cleanup_may(authorizer, r, verb, "", ""));
    if !watched {
        return None;
    }
    Some(match lifetime {
        Lifetime::AfterCreation(s) => Ok(s),
        Lifetime::At(t) if t <= RELEASED => Ok(f64::NEG_INFINITY),
        Lifetime::At(_) => Err(Skip::Cleanup(format!(
            "whether the time of {}'s {LABEL} label has passed depends on the wall clock",
            text(obj, "/metadata/name")
        ))),
    })
}

/// utils.go `parseDeletionTime`: a duration as kube-openapi's `strfmt.ParseDuration` reads
/// it (Go's `time.ParseDuration`, else number–unit pairs with its unit names), else a time
/// in `2006-01-02T150405Z` or a date in `2006-01-02` (api/kyverno/constants.go), both UTC.
pub fn lifetime(v: &str) -> Option<Lifetime> {
    if let Some(s) = crate::offline::kyverno::quantity::parse_duration(v) {
        return Some(Lifetime::AfterCreation(s));
    }
    if let Some(s) = strfmt_duration(v) {
        return Some(Lifetime::AfterCreation(s));
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let date_shaped = |s: &str| {
        let p: Vec<&str> = s.split('-').collect();
        p.len() == 3
            && p[0].len() == 4
            && p[1].len() == 2
            && p[2].len() == 2
            && p.iter().all(|x| digits(x))
    };
    let date = |s: &str| {
        date_shaped(s)
            .then(|| chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").ok())
            .flatten()
    };
    let at = match v.split_once('T') {
        Some((d, t)) => {
            let t = t.strip_suffix('Z')?;
            if t.len() != 6 || !digits(t) {
                return None;
            }
            let field = |i: usize| t[i..i + 2].parse::<u32>().ok();
            date(d)?.and_hms_opt(field(0)?, field(2)?, field(4)?)?
        }
        None => date(v)?.and_hms_opt(0, 0, 0)?,
    };
    Some(Lifetime::At(at.and_utc().timestamp()))
}

/// strfmt's duration: one or more `<digits><spaces?><unit>` with its units (a day is 24
/// hours, a week 7 days), summed; seconds.
fn strfmt_duration(v: &str) -> Option<f64> {
    const UNITS: [(&str, f64); 25] = [
        ("ns", 1e-9),
        ("us", 1e-6),
        ("µs", 1e-6),
        ("ms", 1e-3),
        ("s", 1.0),
        ("sec", 1.0),
        ("secs", 1.0),
        ("second", 1.0),
        ("seconds", 1.0),
        ("m", 60.0),
        ("min", 60.0),
        ("mins", 60.0),
        ("minute", 60.0),
        ("minutes", 60.0),
        ("h", 3600.0),
        ("hr", 3600.0),
        ("hour", 3600.0),
        ("hours", 3600.0),
        ("d", 86_400.0),
        ("day", 86_400.0),
        ("days", 86_400.0),
        ("w", 604_800.0),
        ("wk", 604_800.0),
        ("week", 604_800.0),
        ("weeks", 604_800.0),
    ];
    let mut rest = v.trim();
    if rest.is_empty() {
        return None;
    }
    let mut total = 0.0;
    let mut pairs = 0;
    while !rest.is_empty() && pairs < 64 {
        let n = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if n == 0 {
            return None;
        }
        let count: f64 = rest[..n].parse().ok()?;
        rest = rest[n..].trim_start();
        let u = rest
            .find(|c: char| !(c.is_alphabetic()))
            .unwrap_or(rest.len());
        let (_, factor) = UNITS.iter().find(|(name, _)| *name == &rest[..u])?;
        total += count * factor;
        rest = rest[u..].trim_start();
        pairs += 1;
    }
    rest.is_empty().then_some(total)
}

#[cfg(test)]
#[path = "ttl_tests.rs"]
mod tests;

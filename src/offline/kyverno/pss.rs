//! Pod Security Standards (`validate.podSecurity`) as Kyverno evaluates them: the checks
//! (`pss_checks.rs`), then the rule's `exclude` entries and the `podSecurity` controls of
//! matching PolicyExceptions exempting exactly the field errors they name
//! (pkg/pss/evaluate.go `ApplyPodSecurityExclusion`, `exemptExclusions`;
//! pkg/engine/handlers/validation/validate_pss.go). It must not evaluate anything but
//! pod specs.

use serde_json::{Value, json};

use super::Outcome;
#[cfg(test)]
use super::RuleStatus;
use super::matching::wildcard_match;

#[path = "pss_checks.rs"]
mod checks;

pub use checks::{Bad, CheckResult, ErrType, FieldErr, LevelVersion};

/// What a `podSecurity` rule came to: `Ok(())` when the pod meets the level (after the
/// rule's own exclusions), otherwise the checks still failing.
pub fn evaluate(pss: &Value, resource: &Value) -> Result<Result<(), Vec<CheckResult>>, String> {
    let level = level_version(pss)?;
    let (meta, spec) = pod_parts(resource).ok_or("could not find correct resource type")?;
    let excludes = list(pss, "exclude");
    let left = apply_exclusions(
        level,
        &excludes,
        checks::evaluate(level, meta, spec),
        meta,
        spec,
    );
    Ok(if left.is_empty() { Ok(()) } else { Err(left) })
}

/// Evaluates a `podSecurity` block with no PolicyException in play.
pub fn validate(pss: &Value, resource: &Value) -> Outcome {
    validate_with(pss, resource, &[], "")
}

/// Evaluates a `podSecurity` block; `exceptions` are the `podSecurity` controls of the
/// matching PolicyExceptions (named `keys`), applied to what the rule's level and
/// exclusions leave failing. Every check exempted is a skip, as in Kyverno.
pub fn validate_with(pss: &Value, resource: &Value, exceptions: &[Value], keys: &str) -> Outcome {
    let failing = match evaluate(pss, resource) {
        Err(e) => return Outcome::error(e),
        Ok(Ok(())) => return Outcome::pass("pod meets the pod security level"),
        Ok(Err(failing)) => failing,
    };
    let excluded = !exceptions.is_empty() || !list(pss, "exclude").is_empty();
    let failing = if exceptions.is_empty() {
        failing
    } else {
        let level = level_version(pss).unwrap_or(LevelVersion {
            baseline_only: false,
            version: u32::MAX,
        });
        let Some((meta, spec)) = pod_parts(resource) else {
            return Outcome::error("could not find correct resource type");
        };
        let left = apply_exclusions(level, exceptions, failing, meta, spec);
        if left.is_empty() {
            return Outcome::skip(format!("rule is skipped due to policy exceptions {keys}"));
        }
        left
    };
    let level = pss.get("level").and_then(Value::as_str).unwrap_or("");
    let version = pss.get("version").and_then(Value::as_str).unwrap_or("");
    let mut outcome = Outcome::fail(format!(
        "It violates PodSecurity \"{level}:{version}\": {}",
        format_checks(&failing, resource)
    ));
    outcome.pod_security = Some(Box::new(Controls {
        level: level.to_string(),
        version: version.to_string(),
        failed: failed_controls(pss, resource, &failing),
        reordered: excluded,
    }));
    outcome
}

/// What a failed `podSecurity` rule tells its report: the engine's `PodSecurityChecks`
/// as pkg/utils/report/results.go `addPodSecurityProperties` writes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Controls {
    pub level: String,
    pub version: String,
    /// The controls still failing, in the order of the checks.
    pub failed: Vec<Control>,
    /// An exclusion (the rule's or an exception's) was applied: evaluate.go
    /// `exemptExclusions` rebuilds the list from a Go map, so the order of two or more
    /// controls left is not one Kyverno keeps.
    pub reordered: bool,
}

/// One failed control (results.go `Control`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Control {
    pub id: &'static str,
    /// `PSSControlIDToName`; empty for a check no control names.
    pub name: &'static str,
    /// The images of the containers its detail names, `None` when the detail names none
    /// (validate_pss.go `addImages`).
    pub images: Option<Vec<String>>,
}

impl Controls {
    /// The result's properties: `standard`, `version`, `controls` and `controlsJSON`
    /// (`json.Marshal` of the controls, fields in declaration order).
    pub fn properties(&self) -> Vec<(&'static str, String)> {
        if self.failed.is_empty() {
            return Vec::new();
        }
        let ids: Vec<&str> = self.failed.iter().map(|c| c.id).collect();
        let json: Vec<String> = self
            .failed
            .iter()
            .map(|c| {
                format!(
                    "{{\"ID\":{},\"Name\":{},\"Images\":{}}}",
                    Value::from(c.id),
                    Value::from(c.name),
                    c.images.as_ref().map_or(Value::Null, |i| json!(i))
                )
            })
            .collect();
        vec![
            ("standard", self.level.clone()),
            ("version", self.version.clone()),
            ("controls", ids.join(",")),
            ("controlsJSON", format!("[{}]", json.join(","))),
        ]
    }
}

/// The controls of the checks still failing, each with the images of the containers
/// the check's detail names. The detail is the one the check wrote before any exclusion
/// (exclusions remove field errors, never rewrite it), so it is read off the pod's own
/// evaluation.
fn failed_controls(pss: &Value, resource: &Value, failing: &[CheckResult]) -> Vec<Control> {
    let original = match (level_version(pss), pod_parts(resource)) {
        (Ok(level), Some((meta, spec))) => checks::evaluate(level, meta, spec),
        _ => Vec::new(),
    };
    let spec = pod_parts(resource).map_or(&Value::Null, |(_, s)| s);
    failing
        .iter()
        .map(|f| {
            let names = original
                .iter()
                .find(|o| o.id == f.id)
                .map(detail_containers)
                .unwrap_or_default();
            Control {
                id: f.id,
                name: control_name(f.id),
                images: (!names.is_empty())
                    .then(|| names.iter().map(|n| image_of(spec, n)).collect()),
            }
        })
        .collect()
}

/// The containers a check's `ForbiddenDetail` names in its first phrase that reads
/// `container(s) … must` (validate_pss.go `regexContainerNames`, first match), from
/// how each check words its detail (kyverno/pod-security-admission `policy/check_*.go`):
/// - a phrase per kind of violation, the first kind found first: capabilities (a missing
///   `drop`, then a forbidden `add`), runAsNonRoot (explicit `false`, then unset);
/// - seccompProfile_restricted reports explicit settings alone, the pod's among them;
/// - details without that phrase (host namespaces, ports, probes, volumes, sysctls,
///   SELinux, a pod-level setting alone) name none.
fn detail_containers(check: &CheckResult) -> Vec<String> {
    let errs = check.errs.as_deref().unwrap_or_default();
    let of_container = |e: &&FieldErr| starred(&e.field).1.is_some();
    let pick = |keep: &dyn Fn(&FieldErr) -> bool| -> Vec<&FieldErr> {
        errs.iter().filter(|e| keep(e)).collect()
    };
    let chosen: Vec<&FieldErr> = match check.id {
        "allowPrivilegeEscalation"
        | "appArmorProfile"
        | "capabilities_baseline"
        | "privileged"
        | "procMount"
        | "runAsUser"
        | "seccompProfile_baseline"
        | "windowsHostProcess" => pick(&|_| true),
        "capabilities_restricted" => {
            let drop = pick(&|e| e.field.ends_with(".capabilities.drop"));
            if drop.is_empty() {
                pick(&|e| e.field.ends_with(".capabilities.add"))
            } else {
                drop
            }
        }
        "runAsNonRoot" => {
            let explicit: Vec<&FieldErr> = pick(&|e| e.kind == ErrType::Forbidden)
                .into_iter()
                .filter(of_container)
                .collect();
            if explicit.is_empty() {
                pick(&|e| e.kind == ErrType::Required)
            } else {
                explicit
            }
        }
        "seccompProfile_restricted" => {
            let explicit = pick(&|e| e.kind == ErrType::Forbidden);
            if explicit.is_empty() {
                pick(&|e| e.kind == ErrType::Required)
            } else {
                explicit
            }
        }
        _ => Vec::new(),
    };
    chosen
        .into_iter()
        .filter(of_container)
        .map(|e| e.field.clone())
        .collect()
}

/// The image reference of the container at `field` (`spec.initContainers[1]…`), as the
/// engine's image info writes it (pkg/utils/image/infos.go `String`); the field itself
/// when it names no container.
fn image_of(spec: &Value, field: &str) -> String {
    let (_, at) = starred(field);
    at.as_ref()
        .and_then(|(group, i)| spec.get(group)?.get(*i)?.get("image")?.as_str())
        .map(|image| super::context::image_info(image)["reference"].to_string())
        .map(|quoted| quoted.trim_matches('"').to_string())
        .unwrap_or_else(|| field.to_string())
}

fn list(v: &Value, key: &str) -> Vec<Value> {
    v.get(key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// `pss.ParseVersion`: `latest` (or none) or `v1.N`.
fn level_version(pss: &Value) -> Result<LevelVersion, String> {
    let level = pss.get("level").and_then(Value::as_str).unwrap_or("");
    let version = pss.get("version").and_then(Value::as_str).unwrap_or("");
    let minor = if version.is_empty() || version == "latest" {
        u32::MAX
    } else {
        version
            .strip_prefix("v1.")
            .and_then(|m| m.parse::<u32>().ok())
            .ok_or_else(|| format!("failed to parse pod security api version: {version}"))?
    };
    Ok(LevelVersion {
        baseline_only: level == "baseline",
        version: minor,
    })
}

/// The pod's metadata and spec, as validate_pss.go `getSpec` reads them: a CronJob's
/// metadata is its job template's.
fn pod_parts(obj: &Value) -> Option<(&Value, &Value)> {
    let null = &Value::Null;
    match obj.get("kind").and_then(Value::as_str)? {
        "Pod" => Some((
            obj.get("metadata").unwrap_or(null),
            obj.get("spec").unwrap_or(null),
        )),
        "CronJob" => Some((
            obj.pointer("/spec/jobTemplate/metadata").unwrap_or(null),
            obj.pointer("/spec/jobTemplate/spec/template/spec")
                .unwrap_or(null),
        )),
        "DaemonSet"
        | "Deployment"
        | "Job"
        | "StatefulSet"
        | "ReplicaSet"
        | "ReplicationController" => Some((
            obj.pointer("/spec/template/metadata").unwrap_or(null),
            obj.pointer("/spec/template/spec").unwrap_or(null),
        )),
        _ => None,
    }
}

/// The controls and their check IDs (pkg/pss/utils/mapping.go `PSS_control_name_to_ids`).
const CONTROLS: &[(&str, &[&str])] = &[
    (
        "Capabilities",
        &["capabilities_baseline", "capabilities_restricted"],
    ),
    (
        "Seccomp",
        &["seccompProfile_baseline", "seccompProfile_restricted"],
    ),
    ("Privileged Containers", &["privileged"]),
    ("Host Ports", &["hostPorts"]),
    ("/proc Mount Type", &["procMount"]),
    ("HostProcess", &["windowsHostProcess"]),
    ("SELinux", &["seLinuxOptions"]),
    ("Host Namespaces", &["hostNamespaces"]),
    ("HostPath Volumes", &["hostPathVolumes"]),
    ("Sysctls", &["sysctls"]),
    ("AppArmor", &["appArmorProfile"]),
    ("Privilege Escalation", &["allowPrivilegeEscalation"]),
    ("Running as Non-root", &["runAsNonRoot"]),
    ("Running as Non-root user", &["runAsUser"]),
    ("Volume Types", &["restrictedVolumes"]),
];

/// The check IDs of a control.
fn control_ids(control: &str) -> &'static [&'static str] {
    CONTROLS
        .iter()
        .find(|(name, _)| *name == control)
        .map_or(&[], |(_, ids)| ids)
}

/// The control a check ID belongs to (`PSSControlIDToName`; empty for none).
fn control_name(id: &str) -> &'static str {
    CONTROLS
        .iter()
        .find(|(_, ids)| ids.contains(&id))
        .map_or("", |(name, _)| name)
}

/// `ApplyPodSecurityExclusion`: each entry is evaluated on a pod cut down to what it
/// covers (without `images`: the pod with one bare container; with `images`: only the
/// containers running a matching image), and each field error it finds there that the
/// entry names exempts one like it in `failing`.
fn apply_exclusions(
    level: LevelVersion,
    excludes: &[Value],
    mut failing: Vec<CheckResult>,
    meta: &Value,
    spec: &Value,
) -> Vec<CheckResult> {
    for ex in excludes {
        let images: Vec<&str> = ex
            .get("images")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let exempting = if images.is_empty() {
            let mut pod_level = spec.clone();
            if let Some(m) = pod_level.as_object_mut() {
                m.insert("containers".into(), json!([{"name": "fake"}]));
                m.remove("initContainers");
                m.remove("ephemeralContainers");
            }
            let found = checks::evaluate(level, meta, &pod_level);
            exempt(&mut failing, &found, ex, spec, None);
            continue;
        } else {
            matching_containers(spec, &images)
        };
        let found = checks::evaluate(level, &Value::Null, &exempting);
        exempt(&mut failing, &found, ex, spec, Some(&exempting));
    }
    failing
}

/// A pod spec holding only the containers whose image matches one of `images`.
fn matching_containers(spec: &Value, images: &[&str]) -> Value {
    let mut out = serde_json::Map::new();
    for group in ["containers", "initContainers", "ephemeralContainers"] {
        let picked: Vec<Value> = spec
            .get(group)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|c| {
                let image = c.get("image").and_then(Value::as_str).unwrap_or("");
                images.iter().any(|p| wildcard_match(p, image))
            })
            .cloned()
            .collect();
        if !picked.is_empty() {
            out.insert(group.into(), Value::Array(picked));
        }
    }
    Value::Object(out)
}

/// A field with its indexes starred (`spec.containers[*].ports[*].hostPort`), and for
/// a container's field its container group and index (evaluate.go `parseField`).
fn starred(field: &str) -> (String, Option<(String, usize)>) {
    let mut out = String::with_capacity(field.len());
    let mut first_index: Option<usize> = None;
    let mut digits = String::new();
    for ch in field.chars() {
        if ch.is_ascii_digit() {
            digits.push(ch);
            continue;
        }
        if !digits.is_empty() {
            first_index.get_or_insert(digits.parse().unwrap_or(0));
            digits.clear();
            out.push('*');
        }
        out.push(ch);
    }
    if !digits.is_empty() {
        first_index.get_or_insert(digits.parse().unwrap_or(0));
        out.push('*');
    }
    // The second run of letters names the container group (`spec.containers[0]…`).
    let group = field
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| !w.is_empty())
        .nth(1)
        .unwrap_or("");
    let container = matches!(
        group,
        "containers" | "initContainers" | "ephemeralContainers"
    )
    .then(|| (group.to_string(), first_index.unwrap_or(0)))
    .filter(|_| first_index.is_some());
    (out, container)
}

fn container_name(spec: &Value, at: &Option<(String, usize)>) -> String {
    at.as_ref()
        .and_then(|(group, i)| spec.get(group)?.get(*i)?.get("name")?.as_str())
        .unwrap_or("")
        .to_string()
}

/// `extractBadValues`: the values an exclusion's `values` must all cover.
fn bad_values(bad: &Bad) -> Vec<String> {
    match bad {
        Bad::Str(s) if s.is_empty() => Vec::new(),
        Bad::Str(s) => vec![s.clone()],
        Bad::Bool(b) => vec![b.to_string()],
        Bad::Int(n) => vec![n.to_string()],
        Bad::List(l) => l.clone(),
    }
}

/// `exemptExclusions`. `matching` is the images-cut spec of a container-level entry:
/// then fields of containers are compared with the container's name too.
fn exempt(
    failing: &mut Vec<CheckResult>,
    found: &[CheckResult],
    ex: &Value,
    spec: &Value,
    matching: Option<&Value>,
) {
    let control = ex.get("controlName").and_then(Value::as_str).unwrap_or("");
    let restricted_field = ex
        .get("restrictedField")
        .and_then(Value::as_str)
        .unwrap_or("");
    let values: Vec<String> = ex
        .get("values")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(super::vars::to_text).collect())
        .unwrap_or_default();
    for result in found {
        let id = result.id;
        if !control_ids(control).contains(&id) {
            continue;
        }
        for err in result.errs.iter().flatten() {
            let (field, at) = starred(&err.field);
            let at = matching.and(at);
            let ex_container = matching.map(|m| container_name(m, &at)).unwrap_or_default();
            if !(restricted_field.is_empty() || field == restricted_field) {
                continue;
            }
            let covered = values.is_empty()
                || bad_values(&err.bad)
                    .iter()
                    .all(|b| values.iter().any(|p| wildcard_match(p, b)));
            if !covered {
                continue;
            }
            let Some(pos) = failing.iter().position(|r| r.id == id) else {
                continue;
            };
            let Some(errs) = failing[pos].errs.as_mut() else {
                continue;
            };
            let hit = errs.iter().position(|d| {
                let (dfield, dat) = starred(&d.field);
                let dat = matching.and(dat);
                if dat.is_some() {
                    field == dfield && ex_container == container_name(spec, &dat)
                } else {
                    field == dfield
                }
            });
            if let Some(i) = hit {
                errs.swap_remove(i);
            }
            if errs.is_empty() {
                failing.remove(pos);
            }
        }
    }
}

/// `pss.FormatChecksPrint`, with the fields moved under the template for a controller
/// (validate_pss.go `convertChecks`).
fn format_checks(checks: &[CheckResult], resource: &Value) -> String {
    let kind = resource.get("kind").and_then(Value::as_str).unwrap_or("");
    let spec_at = match kind {
        "CronJob" => "spec.jobTemplate.spec.template.spec",
        "Pod" => "spec",
        _ => "spec.template.spec",
    };
    let mut out = String::new();
    for c in checks {
        let errs: Vec<String> = c
            .errs
            .iter()
            .flatten()
            .map(|e| {
                let field = e
                    .field
                    .replace("spec", spec_at)
                    .replace("metadata", "spec.template.metadata");
                match (&e.kind, &e.bad) {
                    (ErrType::Required, _) => format!("{field}: Required value"),
                    (ErrType::Forbidden, Bad::Str(s)) if s.is_empty() => {
                        format!("{field}: Forbidden")
                    }
                    (ErrType::Forbidden, bad) => {
                        let shown = match bad {
                            Bad::List(l) => format!("[{}]", l.join(" ")),
                            other => bad_values(other).join(" "),
                        };
                        format!("{field} is forbidden, forbidden values found: {shown}")
                    }
                }
            })
            .collect();
        out.push_str(&format!(
            "(Forbidden reason: {}, field error list: [{}])",
            c.reason,
            errs.join(", ")
        ));
    }
    out
}

#[cfg(test)]
#[path = "pss_tests.rs"]
mod tests;

//! Pod Security Standards (`validate.podSecurity`): the baseline and restricted controls of
//! the latest standard, with Kyverno's per-control exclusions. It must not evaluate
//! anything but pod specs.

use serde_json::Value;

use super::Outcome;
#[cfg(test)]
use super::RuleStatus;
use super::matching::wildcard_match;

/// One broken control: its name, the field, and the container image when it is a
/// container-level field (`None` for pod-level fields).
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub control: &'static str,
    pub field: String,
    pub image: Option<String>,
    pub value: Value,
}

const BASELINE_CAPS: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

const SAFE_SYSCTLS: &[&str] = &[
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
];

const RESTRICTED_VOLUMES: &[&str] = &[
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

const SELINUX_TYPES: &[&str] = &[
    "",
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

/// Evaluates a `podSecurity` block against a Pod or a pod controller.
pub fn validate(pss: &Value, resource: &Value) -> Outcome {
    let level = pss
        .get("level")
        .and_then(Value::as_str)
        .unwrap_or("baseline");
    if level == "privileged" {
        return Outcome::pass("privileged level allows everything");
    }
    let Some((meta, spec)) = pod_parts(resource) else {
        return Outcome::pass("not a pod");
    };
    let excludes = pss
        .get("exclude")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let left: Vec<Violation> = check(level == "restricted", meta, spec)
        .into_iter()
        .filter(|v| !excluded(v, &excludes))
        .collect();
    if left.is_empty() {
        return Outcome::pass(format!("pod meets the {level} standard"));
    }
    let mut controls: Vec<String> = left
        .iter()
        .map(|v| format!("{} ({})", v.control, v.field))
        .collect();
    controls.dedup();
    Outcome::fail(format!(
        "{level} pod security violated: {}",
        controls.join(", ")
    ))
}

/// Whether a `PolicyException`-style or rule `exclude` entry covers the violation.
pub fn excluded(v: &Violation, excludes: &[Value]) -> bool {
    excludes.iter().any(|e| {
        if e.get("controlName").and_then(Value::as_str) != Some(v.control) {
            return false;
        }
        let images: Vec<&str> = e
            .get("images")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        // Without images an entry exempts pod-level fields; with images, the fields of
        // containers running a matching image.
        let scope_ok = match &v.image {
            None => images.is_empty(),
            Some(img) => images.iter().any(|p| wildcard_match(p, img)),
        };
        if !scope_ok {
            return false;
        }
        let values: Vec<String> = e
            .get("values")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(super::vars::to_text).collect())
            .unwrap_or_default();
        values.is_empty() || values.contains(&super::vars::to_text(&v.value))
    })
}

fn pod_parts(obj: &Value) -> Option<(&Value, &Value)> {
    let null = &Value::Null;
    match obj.get("kind").and_then(Value::as_str)? {
        "Pod" => Some((obj.get("metadata").unwrap_or(null), obj.get("spec")?)),
        "CronJob" => {
            let t = obj.pointer("/spec/jobTemplate/spec/template")?;
            Some((t.get("metadata").unwrap_or(null), t.get("spec")?))
        }
        _ => {
            let t = obj.pointer("/spec/template")?;
            Some((t.get("metadata").unwrap_or(null), t.get("spec")?))
        }
    }
}

fn s<'a>(v: &'a Value, p: &str) -> Option<&'a Value> {
    v.pointer(p).filter(|x| !x.is_null())
}

/// Every control the pod breaks at `restricted` (or only baseline ones).
pub fn check(restricted: bool, meta: &Value, spec: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut pod = |control: &'static str, field: &str, value: &Value| {
        out.push(Violation {
            control,
            field: field.to_string(),
            image: None,
            value: value.clone(),
        })
    };
    for ns in ["hostNetwork", "hostPID", "hostIPC"] {
        if let Some(v) = s(spec, &format!("/{ns}"))
            && v.as_bool() == Some(true)
        {
            pod("Host Namespaces", &format!("spec.{ns}"), v);
        }
    }
    if let Some(v) = s(spec, "/securityContext/windowsOptions/hostProcess")
        && v.as_bool() == Some(true)
    {
        pod(
            "HostProcess",
            "spec.securityContext.windowsOptions.hostProcess",
            v,
        );
    }
    for vol in spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(hp) = vol.get("hostPath") {
            let path = hp.get("path").cloned().unwrap_or(Value::Null);
            pod("HostPath Volumes", "spec.volumes[*].hostPath", &path);
        }
        if restricted && let Some(m) = vol.as_object() {
            for k in m.keys() {
                if k != "name" && !RESTRICTED_VOLUMES.contains(&k.as_str()) {
                    pod(
                        "Volume Types",
                        &format!("spec.volumes[*].{k}"),
                        &Value::String(k.clone()),
                    );
                }
            }
        }
    }
    if let Some(ann) = meta.pointer("/annotations").and_then(Value::as_object) {
        for (k, v) in ann {
            if k.starts_with("container.apparmor.security.beta.kubernetes.io/") {
                let val = v.as_str().unwrap_or("");
                if val != "runtime/default" && !val.starts_with("localhost/") {
                    pod("AppArmor", "metadata.annotations", v);
                }
            }
        }
    }
    let psc = spec.get("securityContext").unwrap_or(&Value::Null);
    apparmor_type(psc, "spec.securityContext", None, &mut out);
    selinux(psc, "spec.securityContext", None, &mut out);
    let pod_seccomp = s(psc, "/seccompProfile/type").and_then(Value::as_str);
    if let Some(t) = pod_seccomp
        && t == "Unconfined"
    {
        out.push(Violation {
            control: "Seccomp",
            field: "spec.securityContext.seccompProfile.type".into(),
            image: None,
            value: Value::String(t.into()),
        });
    }
    for sc in psc
        .get("sysctls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = sc.get("name").and_then(Value::as_str).unwrap_or("");
        if !SAFE_SYSCTLS.contains(&name) {
            out.push(Violation {
                control: "Sysctls",
                field: "spec.securityContext.sysctls[*].name".into(),
                image: None,
                value: Value::String(name.into()),
            });
        }
    }
    let pod_non_root = s(psc, "/runAsNonRoot").and_then(Value::as_bool);
    if restricted {
        if pod_non_root == Some(false) {
            out.push(Violation {
                control: "Running as Non-root",
                field: "spec.securityContext.runAsNonRoot".into(),
                image: None,
                value: Value::Bool(false),
            });
        }
        if s(psc, "/runAsUser").and_then(Value::as_i64) == Some(0) {
            out.push(Violation {
                control: "Running as Non-root user",
                field: "spec.securityContext.runAsUser".into(),
                image: None,
                value: serde_json::json!(0),
            });
        }
    }
    for group in ["containers", "initContainers", "ephemeralContainers"] {
        for c in spec
            .get(group)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            container(restricted, group, c, pod_non_root, pod_seccomp, &mut out);
        }
    }
    out
}

fn apparmor_type(sc: &Value, base: &str, image: Option<&str>, out: &mut Vec<Violation>) {
    if let Some(t) = s(sc, "/appArmorProfile/type").and_then(Value::as_str)
        && t != "RuntimeDefault"
        && t != "Localhost"
    {
        out.push(Violation {
            control: "AppArmor",
            field: format!("{base}.appArmorProfile.type"),
            image: image.map(String::from),
            value: Value::String(t.into()),
        });
    }
}

fn selinux(sc: &Value, base: &str, image: Option<&str>, out: &mut Vec<Violation>) {
    let Some(opts) = s(sc, "/seLinuxOptions") else {
        return;
    };
    let t = opts.get("type").and_then(Value::as_str).unwrap_or("");
    let bad_type = !SELINUX_TYPES.contains(&t);
    let has_user_role = opts.get("user").is_some_and(|v| !v.is_null())
        || opts.get("role").is_some_and(|v| !v.is_null());
    if bad_type || has_user_role {
        out.push(Violation {
            control: "SELinux",
            field: format!("{base}.seLinuxOptions"),
            image: image.map(String::from),
            value: opts.clone(),
        });
    }
}

fn container(
    restricted: bool,
    group: &str,
    c: &Value,
    pod_non_root: Option<bool>,
    pod_seccomp: Option<&str>,
    out: &mut Vec<Violation>,
) {
    let image = c
        .get("image")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let base = format!("spec.{group}[*].securityContext");
    let sc = c.get("securityContext").unwrap_or(&Value::Null);
    let mut push = |control: &'static str, field: String, value: Value| {
        out.push(Violation {
            control,
            field,
            image: Some(image.clone()),
            value,
        })
    };
    if s(sc, "/privileged").and_then(Value::as_bool) == Some(true) {
        push(
            "Privileged Containers",
            format!("{base}.privileged"),
            Value::Bool(true),
        );
    }
    if s(sc, "/windowsOptions/hostProcess").and_then(Value::as_bool) == Some(true) {
        push(
            "HostProcess",
            format!("{base}.windowsOptions.hostProcess"),
            Value::Bool(true),
        );
    }
    for p in c
        .get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(hp) = p
            .get("hostPort")
            .filter(|v| v.as_i64().is_some_and(|n| n != 0))
        {
            push(
                "Host Ports",
                format!("spec.{group}[*].ports[*].hostPort"),
                hp.clone(),
            );
        }
    }
    let adds: Vec<&str> = s(sc, "/capabilities/add")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for cap in &adds {
        let allowed = if restricted {
            *cap == "NET_BIND_SERVICE"
        } else {
            BASELINE_CAPS.contains(cap)
        };
        if !allowed {
            push(
                "Capabilities",
                format!("{base}.capabilities.add"),
                Value::String((*cap).into()),
            );
        }
    }
    if let Some(pm) = s(sc, "/procMount").and_then(Value::as_str)
        && pm != "Default"
    {
        push(
            "/proc Mount Type",
            format!("{base}.procMount"),
            Value::String(pm.into()),
        );
    }
    let seccomp = s(sc, "/seccompProfile/type").and_then(Value::as_str);
    if seccomp == Some("Unconfined") {
        push(
            "Seccomp",
            format!("{base}.seccompProfile.type"),
            Value::String("Unconfined".into()),
        );
    }
    if restricted {
        restricted_controls(sc, &base, seccomp, (pod_non_root, pod_seccomp), &mut push);
    }
    apparmor_type(sc, &base, Some(&image), out);
    selinux(sc, &base, Some(&image), out);
}

/// The controls only the restricted level has (`check_restricted*` in
/// k8s.io/pod-security-admission): capabilities dropped, no privilege escalation,
/// non-root, a seccomp profile. `pod` is the pod-level `runAsNonRoot` and seccomp type.
fn restricted_controls(
    sc: &Value,
    base: &str,
    seccomp: Option<&str>,
    pod: (Option<bool>, Option<&str>),
    push: &mut impl FnMut(&'static str, String, Value),
) {
    let (pod_non_root, pod_seccomp) = pod;
    let drops: Vec<&str> = s(sc, "/capabilities/drop")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !drops.contains(&"ALL") {
        push(
            "Capabilities",
            format!("{base}.capabilities.drop"),
            serde_json::json!(drops),
        );
    }
    if s(sc, "/allowPrivilegeEscalation").and_then(Value::as_bool) != Some(false) {
        push(
            "Privilege Escalation",
            format!("{base}.allowPrivilegeEscalation"),
            sc.get("allowPrivilegeEscalation")
                .cloned()
                .unwrap_or(Value::Null),
        );
    }
    match s(sc, "/runAsNonRoot").and_then(Value::as_bool) {
        Some(true) => {}
        Some(false) => push(
            "Running as Non-root",
            format!("{base}.runAsNonRoot"),
            Value::Bool(false),
        ),
        None if pod_non_root != Some(true) => push(
            "Running as Non-root",
            format!("{base}.runAsNonRoot"),
            Value::Null,
        ),
        None => {}
    }
    if s(sc, "/runAsUser").and_then(Value::as_i64) == Some(0) {
        push(
            "Running as Non-root user",
            format!("{base}.runAsUser"),
            serde_json::json!(0),
        );
    }
    let effective = seccomp.or(pod_seccomp);
    if !matches!(effective, Some("RuntimeDefault") | Some("Localhost"))
        && seccomp != Some("Unconfined")
    {
        push(
            "Seccomp",
            format!("{base}.seccompProfile.type"),
            effective
                .map(|t| Value::String(t.into()))
                .unwrap_or(Value::Null),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(spec: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
    }

    #[test]
    fn baseline_controls() {
        let pss = json!({"level": "baseline", "version": "latest"});
        let good = pod(json!({"containers": [{"name": "c", "image": "nginx"}]}));
        assert_eq!(validate(&pss, &good).status, RuleStatus::Pass);
        let bad =
            pod(json!({"hostNetwork": true, "containers": [{"name": "c", "image": "nginx"}]}));
        assert_eq!(validate(&pss, &bad).status, RuleStatus::Fail);
        let caps = pod(json!({"containers": [{"name": "c", "image": "nginx",
            "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}]}));
        assert_eq!(validate(&pss, &caps).status, RuleStatus::Fail);
    }

    #[test]
    fn restricted_with_image_exclusion() {
        let spec = json!({"securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "c", "image": "redis:7",
            "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"], "add": ["SYS_TIME"]}}}]});
        let pss = json!({"level": "restricted", "version": "latest"});
        assert_eq!(validate(&pss, &pod(spec.clone())).status, RuleStatus::Fail);
        let pss = json!({"level": "restricted", "version": "latest",
            "exclude": [{"controlName": "Capabilities", "images": ["redis*"]}]});
        assert_eq!(validate(&pss, &pod(spec)).status, RuleStatus::Pass);
    }
}

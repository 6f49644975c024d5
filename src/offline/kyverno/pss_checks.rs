//! The Pod Security Standards checks as Kyverno runs them: the checks of
//! k8s.io/pod-security-admission `policy/check_*.go` (Kyverno's fork, which adds field
//! errors: every violation names its field, with indexes, and the offending value), in
//! the registry's order. `super` (pss.rs) applies exclusions to what these return. It
//! must not decide exclusions or rule outcomes.

use serde_json::Value;

/// The value a field error carries (`field.Error.BadValue`); `Str("")` for the
/// `Required` and bare `Forbidden` errors, which carry none.
#[derive(Debug, Clone, PartialEq)]
pub enum Bad {
    Str(String),
    Bool(bool),
    Int(i64),
    List(Vec<String>),
}

#[derive(Debug, Clone, PartialEq, Eq, Copy)]
pub enum ErrType {
    Required,
    Forbidden,
}

/// One `field.Error`: `field` as `field.Path` prints it (`spec.containers[0].ports[1]`).
#[derive(Debug, Clone, PartialEq)]
pub struct FieldErr {
    pub kind: ErrType,
    pub field: String,
    pub bad: Bad,
}

/// One failed check (`policy.CheckResult` with its check ID). `errs` is `None` for a
/// check that reports no field errors (probe hosts).
#[derive(Debug, Clone, PartialEq)]
pub struct CheckResult {
    pub id: &'static str,
    pub reason: &'static str,
    pub errs: Option<Vec<FieldErr>>,
}

/// The level and version a `podSecurity` block asks for; `version` is the minor of
/// `v1.N`, `u32::MAX` for `latest`.
#[derive(Debug, Clone, Copy)]
pub struct LevelVersion {
    /// Only the baseline checks (`baseline`); every check otherwise. pkg/pss/evaluate.go
    /// `evaluatePSS` skips restricted checks for `baseline` alone, so `privileged` runs
    /// them all, as `restricted` does.
    pub baseline_only: bool,
    pub version: u32,
}

fn required(field: String) -> FieldErr {
    FieldErr {
        kind: ErrType::Required,
        field,
        bad: Bad::Str(String::new()),
    }
}

fn forbidden(field: String, bad: Bad) -> FieldErr {
    FieldErr {
        kind: ErrType::Forbidden,
        field,
        bad,
    }
}

fn set(v: &Value, p: &str) -> Option<Value> {
    v.pointer(p).filter(|x| !x.is_null()).cloned()
}

fn flag(v: &Value, p: &str) -> Option<bool> {
    v.pointer(p).and_then(Value::as_bool)
}

fn text(v: &Value, p: &str) -> Option<String> {
    v.pointer(p).and_then(Value::as_str).map(String::from)
}

fn strings(v: &Value, p: &str) -> Vec<String> {
    v.pointer(p)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

fn sorted_set(mut items: Vec<String>) -> Vec<String> {
    items.sort();
    items.dedup();
    items
}

/// The containers in `visitContainers`' order (init, regular, ephemeral) with their path.
fn containers(spec: &Value) -> Vec<(String, &Value)> {
    let mut out = Vec::new();
    for group in ["initContainers", "containers", "ephemeralContainers"] {
        for (i, c) in spec
            .get(group)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            out.push((format!("spec.{group}[{i}]"), c));
        }
    }
    out
}

fn windows(spec: &Value) -> bool {
    text(spec, "/os/name").as_deref() == Some("windows")
}

/// Every check that fails, in the registry's order (`policy.DefaultChecks`).
pub fn evaluate(level: LevelVersion, meta: &Value, spec: &Value) -> Vec<CheckResult> {
    type Check = fn(&Value, &Value, u32) -> Option<(&'static str, Option<Vec<FieldErr>>)>;
    let checks: [(&str, bool, Check); 18] = [
        ("allowPrivilegeEscalation", true, allow_privilege_escalation),
        ("appArmorProfile", false, app_armor),
        ("capabilities_baseline", false, capabilities_baseline),
        ("capabilities_restricted", true, capabilities_restricted),
        ("hostNamespaces", false, host_namespaces),
        ("hostPathVolumes", false, host_path_volumes),
        ("hostPorts", false, host_ports),
        ("hostProbesAndHostLifecycle", false, host_probes),
        ("privileged", false, privileged),
        ("procMount", false, proc_mount),
        ("restrictedVolumes", true, restricted_volumes),
        ("runAsNonRoot", true, run_as_non_root),
        ("runAsUser", true, run_as_user),
        ("seLinuxOptions", false, selinux),
        ("seccompProfile_baseline", false, seccomp_baseline),
        ("seccompProfile_restricted", true, seccomp_restricted),
        ("sysctls", false, sysctls),
        ("windowsHostProcess", false, windows_host_process),
    ];
    let mut out = Vec::new();
    for (id, restricted, check) in checks {
        if level.baseline_only && restricted {
            continue;
        }
        if let Some((reason, errs)) = check(meta, spec, level.version) {
            out.push(CheckResult { id, reason, errs });
        }
    }
    out
}

type Found = Option<(&'static str, Option<Vec<FieldErr>>)>;

fn found(reason: &'static str, errs: Vec<FieldErr>, any: bool) -> Found {
    any.then_some((reason, Some(errs)))
}

fn allow_privilege_escalation(_: &Value, spec: &Value, version: u32) -> Found {
    if version >= 25 && windows(spec) {
        return None;
    }
    let mut errs = Vec::new();
    for (path, c) in containers(spec) {
        let field = format!("{path}.securityContext.allowPrivilegeEscalation");
        if set(c, "/securityContext").is_none() {
            errs.push(required(field));
        } else {
            match flag(c, "/securityContext/allowPrivilegeEscalation") {
                None => errs.push(forbidden(field, Bad::Str("nil".into()))),
                Some(true) => errs.push(forbidden(field, Bad::Bool(true))),
                Some(false) => {}
            }
        }
    }
    let any = !errs.is_empty();
    found("allowPrivilegeEscalation != false", errs, any)
}

/// The pod's and each container's `securityContext.<profile>.type` set to a type
/// `allowed` refuses (AppArmor and seccomp profiles have the same shape).
fn bad_profile_types(spec: &Value, profile: &str, allowed: fn(&str) -> bool) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let mut check = |holder: &Value, base: &str| {
        if set(holder, &format!("/securityContext/{profile}")).is_some() {
            let t = text(holder, &format!("/securityContext/{profile}/type")).unwrap_or_default();
            if !allowed(&t) {
                errs.push(forbidden(
                    format!("{base}.securityContext.{profile}.type"),
                    Bad::Str(t),
                ));
            }
        }
    };
    check(spec, "spec");
    for (path, c) in containers(spec) {
        check(c, &path);
    }
    errs
}

fn app_armor(meta: &Value, spec: &Value, _: u32) -> Found {
    let mut errs = bad_profile_types(spec, "appArmorProfile", |t| {
        t == "RuntimeDefault" || t == "Localhost"
    });
    let prefix = "container.apparmor.security.beta.kubernetes.io/";
    for (k, v) in meta
        .get("annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let v = v.as_str().unwrap_or("");
        let ok = v.is_empty() || v == "runtime/default" || v.starts_with("localhost/");
        if k.starts_with(prefix) && !ok {
            errs.push(forbidden(
                format!("metadata.annotations[{k}]"),
                Bad::Str(v.into()),
            ));
        }
    }
    let any = !errs.is_empty();
    found("forbidden AppArmor profile", errs, any)
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

fn capabilities_baseline(_: &Value, spec: &Value, _: u32) -> Found {
    let mut errs = Vec::new();
    for (path, c) in containers(spec) {
        if set(c, "/securityContext/capabilities").is_none() {
            continue;
        }
        let bad: Vec<String> = strings(c, "/securityContext/capabilities/add")
            .into_iter()
            .filter(|cap| !BASELINE_CAPS.contains(&cap.as_str()))
            .collect();
        if !bad.is_empty() {
            errs.push(forbidden(
                format!("{path}.securityContext.capabilities.add"),
                Bad::List(sorted_set(bad)),
            ));
        }
    }
    let any = !errs.is_empty();
    found("non-default capabilities", errs, any)
}

fn capabilities_restricted(_: &Value, spec: &Value, version: u32) -> Found {
    if version >= 25 && windows(spec) {
        return None;
    }
    let (mut drops, mut adds) = (Vec::new(), Vec::new());
    for (path, c) in containers(spec) {
        let drop_field = format!("{path}.securityContext.capabilities.drop");
        if set(c, "/securityContext").is_none() || set(c, "/securityContext/capabilities").is_none()
        {
            drops.push(required(drop_field));
            continue;
        }
        let dropped = strings(c, "/securityContext/capabilities/drop");
        if !dropped.iter().any(|d| d == "ALL") {
            if dropped.is_empty() {
                drops.push(required(drop_field));
            } else {
                drops.push(forbidden(drop_field, Bad::List(sorted_set(dropped))));
            }
        }
        let bad: Vec<String> = strings(c, "/securityContext/capabilities/add")
            .into_iter()
            .filter(|cap| cap != "NET_BIND_SERVICE")
            .collect();
        if !bad.is_empty() {
            adds.push(forbidden(
                format!("{path}.securityContext.capabilities.add"),
                Bad::List(sorted_set(bad)),
            ));
        }
    }
    let any = !drops.is_empty() || !adds.is_empty();
    drops.extend(adds);
    found("unrestricted capabilities", drops, any)
}

fn host_namespaces(_: &Value, spec: &Value, _: u32) -> Found {
    let errs: Vec<FieldErr> = ["hostNetwork", "hostPID", "hostIPC"]
        .into_iter()
        .filter(|ns| flag(spec, &format!("/{ns}")) == Some(true))
        .map(|ns| forbidden(format!("spec.{ns}"), Bad::Bool(true)))
        .collect();
    let any = !errs.is_empty();
    found("host namespaces", errs, any)
}

fn volumes(spec: &Value) -> impl Iterator<Item = (usize, &Value)> {
    spec.get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}

fn host_path_volumes(_: &Value, spec: &Value, _: u32) -> Found {
    let errs: Vec<FieldErr> = volumes(spec)
        .filter(|(_, v)| set(v, "/hostPath").is_some())
        .map(|(i, v)| {
            forbidden(
                format!("spec.volumes[{i}].hostPath"),
                Bad::Str(text(v, "/hostPath/path").unwrap_or_default()),
            )
        })
        .collect();
    let any = !errs.is_empty();
    found("hostPath volumes", errs, any)
}

fn host_ports(_: &Value, spec: &Value, _: u32) -> Found {
    let mut errs = Vec::new();
    for (path, c) in containers(spec) {
        for (i, p) in c
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let port = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
            if port != 0 {
                errs.push(forbidden(
                    format!("{path}.ports[{i}].hostPort"),
                    Bad::Int(port),
                ));
            }
        }
    }
    let any = !errs.is_empty();
    found("hostPort", errs, any)
}

/// `hostProbesAndHostLifecycle` (1.34): a probe or lifecycle handler naming a host. It
/// reports no field errors, so no exclusion can exempt it.
fn host_probes(_: &Value, spec: &Value, _: u32) -> Found {
    let has_host = |h: Option<&Value>| {
        h.is_some_and(|h| {
            ["/httpGet/host", "/tcpSocket/host"]
                .iter()
                .any(|p| text(h, p).is_some_and(|s| !s.is_empty()))
        })
    };
    let bad = containers(spec).into_iter().any(|(_, c)| {
        ["livenessProbe", "readinessProbe", "startupProbe"]
            .iter()
            .any(|p| has_host(c.get(*p)))
            || ["postStart", "preStop"]
                .iter()
                .any(|p| has_host(c.get("lifecycle").and_then(|l| l.get(*p))))
    });
    bad.then_some(("probe or lifecycle host", None))
}

fn privileged(_: &Value, spec: &Value, _: u32) -> Found {
    let errs: Vec<FieldErr> = containers(spec)
        .into_iter()
        .filter(|(_, c)| flag(c, "/securityContext/privileged") == Some(true))
        .map(|(path, _)| {
            forbidden(
                format!("{path}.securityContext.privileged"),
                Bad::Bool(true),
            )
        })
        .collect();
    let any = !errs.is_empty();
    found("privileged", errs, any)
}

/// The user-namespace relaxation (`hostUsers: false`) is off in Kyverno, so it is not
/// modelled.
fn proc_mount(_: &Value, spec: &Value, _: u32) -> Found {
    let mut errs = Vec::new();
    for (path, c) in containers(spec) {
        if let Some(pm) = text(c, "/securityContext/procMount")
            && pm != "Default"
        {
            errs.push(forbidden(
                format!("{path}.securityContext.procMount"),
                Bad::Str(pm),
            ));
        }
    }
    let any = !errs.is_empty();
    found("procMount", errs, any)
}

/// Volume sources the restricted level allows, then the others in the order
/// `restrictedVolumesV1Dot0` tests them (the first one set names the type).
const ALLOWED_VOLUMES: &[&str] = &[
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "image",
    "persistentVolumeClaim",
    "projected",
    "secret",
];
const RESTRICTED_VOLUMES: &[&str] = &[
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "nfs",
    "iscsi",
    "glusterfs",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "fc",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "storageos",
];

fn restricted_volumes(_: &Value, spec: &Value, _: u32) -> Found {
    let mut errs = Vec::new();
    for (i, v) in volumes(spec) {
        if ALLOWED_VOLUMES
            .iter()
            .any(|k| set(v, &format!("/{k}")).is_some())
        {
            continue;
        }
        let kind = RESTRICTED_VOLUMES
            .iter()
            .find(|k| set(v, &format!("/{k}")).is_some())
            .copied()
            .unwrap_or("unknown");
        errs.push(forbidden(
            format!("spec.volumes[{i}].{kind}"),
            Bad::Str(String::new()),
        ));
    }
    let any = !errs.is_empty();
    found("restricted volume types", errs, any)
}

fn run_as_non_root(_: &Value, spec: &Value, _: u32) -> Found {
    let mut errs = Vec::new();
    let pod = flag(spec, "/securityContext/runAsNonRoot");
    if pod == Some(false) {
        errs.push(forbidden(
            "spec.securityContext.runAsNonRoot".into(),
            Bad::Bool(false),
        ));
    }
    let mut implicit = Vec::new();
    for (path, c) in containers(spec) {
        let field = format!("{path}.securityContext.runAsNonRoot");
        match flag(c, "/securityContext/runAsNonRoot") {
            Some(false) => errs.push(forbidden(field, Bad::Bool(false))),
            Some(true) => {}
            None if pod != Some(true) => implicit.push(required(field)),
            None => {}
        }
    }
    let any = !errs.is_empty() || !implicit.is_empty();
    errs.extend(implicit);
    found("runAsNonRoot != true", errs, any)
}

fn run_as_user(_: &Value, spec: &Value, _: u32) -> Found {
    let mut errs = Vec::new();
    if spec
        .pointer("/securityContext/runAsUser")
        .and_then(Value::as_i64)
        == Some(0)
    {
        errs.push(forbidden(
            "spec.securityContext.runAsUser".into(),
            Bad::Int(0),
        ));
    }
    for (path, c) in containers(spec) {
        if c.pointer("/securityContext/runAsUser")
            .and_then(Value::as_i64)
            == Some(0)
        {
            errs.push(forbidden(
                format!("{path}.securityContext.runAsUser"),
                Bad::Int(0),
            ));
        }
    }
    let any = !errs.is_empty();
    found("runAsUser=0", errs, any)
}

fn selinux(_: &Value, spec: &Value, version: u32) -> Found {
    let mut types = vec!["", "container_t", "container_init_t", "container_kvm_t"];
    if version >= 31 {
        types.push("container_engine_t");
    }
    let check = |opts: &Value, base: &str, errs: &mut Vec<FieldErr>| {
        let t = text(opts, "/type").unwrap_or_default();
        if !types.contains(&t.as_str()) {
            errs.push(forbidden(
                format!("{base}.seLinuxOptions.type"),
                Bad::Str(t),
            ));
        }
        for key in ["user", "role"] {
            let v = text(opts, &format!("/{key}")).unwrap_or_default();
            if !v.is_empty() {
                errs.push(forbidden(
                    format!("{base}.seLinuxOptions.{key}"),
                    Bad::Str(v),
                ));
            }
        }
    };
    let mut errs = Vec::new();
    if let Some(opts) = set(spec, "/securityContext/seLinuxOptions") {
        check(&opts, "spec.securityContext", &mut errs);
    }
    for (path, c) in containers(spec) {
        if let Some(opts) = set(c, "/securityContext/seLinuxOptions") {
            check(&opts, &format!("{path}.securityContext"), &mut errs);
        }
    }
    let any = !errs.is_empty();
    found("seLinuxOptions", errs, any)
}

fn valid_seccomp(t: &str) -> bool {
    t == "Localhost" || t == "RuntimeDefault"
}

fn seccomp_baseline(meta: &Value, spec: &Value, version: u32) -> Found {
    let mut errs = Vec::new();
    if version < 19 {
        // Before 1.19 only the annotations were checked.
        let ann = meta.get("annotations").unwrap_or(&Value::Null);
        let ok = |v: &str| {
            v == "runtime/default" || v == "docker/default" || v.starts_with("localhost/")
        };
        let mut keys = vec!["seccomp.security.alpha.kubernetes.io/pod".to_string()];
        for (_, c) in containers(spec) {
            let name = c.get("name").and_then(Value::as_str).unwrap_or("");
            keys.push(format!(
                "container.seccomp.security.alpha.kubernetes.io/{name}"
            ));
        }
        for k in keys {
            if let Some(v) = ann.get(&k).and_then(Value::as_str)
                && !ok(v)
            {
                errs.push(forbidden(
                    format!("metadata.annotations[{k}]"),
                    Bad::Str(v.into()),
                ));
            }
        }
        let any = !errs.is_empty();
        return found("seccompProfile", errs, any);
    }
    errs.extend(bad_profile_types(spec, "seccompProfile", valid_seccomp));
    let any = !errs.is_empty();
    found("seccompProfile", errs, any)
}

fn seccomp_restricted(_: &Value, spec: &Value, version: u32) -> Found {
    if version >= 25 && windows(spec) {
        return None;
    }
    let mut errs = Vec::new();
    let mut pod_set = false;
    if set(spec, "/securityContext/seccompProfile").is_some() {
        let t = text(spec, "/securityContext/seccompProfile/type").unwrap_or_default();
        if valid_seccomp(&t) {
            pod_set = true;
        } else {
            errs.push(forbidden(
                "spec.securityContext.seccompProfile.type".into(),
                Bad::Str(t),
            ));
        }
    }
    let mut implicit = Vec::new();
    for (path, c) in containers(spec) {
        let field = format!("{path}.securityContext.seccompProfile.type");
        if set(c, "/securityContext/seccompProfile").is_some() {
            let t = text(c, "/securityContext/seccompProfile/type").unwrap_or_default();
            if !valid_seccomp(&t) {
                errs.push(forbidden(field, Bad::Str(t)));
            }
        } else if !pod_set {
            implicit.push(required(field));
        }
    }
    // Explicitly bad settings are reported alone; the implicit ones only without them.
    if !errs.is_empty() {
        return found("seccompProfile", errs, true);
    }
    let any = !implicit.is_empty();
    found("seccompProfile", implicit, any)
}

fn sysctls(_: &Value, spec: &Value, version: u32) -> Found {
    let mut allowed = vec![
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_unprivileged_port_start",
    ];
    if version >= 27 {
        allowed.push("net.ipv4.ip_local_reserved_ports");
    }
    if version >= 29 {
        allowed.extend([
            "net.ipv4.tcp_keepalive_time",
            "net.ipv4.tcp_fin_timeout",
            "net.ipv4.tcp_keepalive_intvl",
            "net.ipv4.tcp_keepalive_probes",
        ]);
    }
    if version >= 32 {
        allowed.extend(["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"]);
    }
    let errs: Vec<FieldErr> = spec
        .pointer("/securityContext/sysctls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, s)| {
            let name = s.get("name").and_then(Value::as_str).unwrap_or("");
            (!allowed.contains(&name)).then(|| {
                forbidden(
                    format!("spec.securityContext.sysctls[{i}].name"),
                    Bad::Str(name.into()),
                )
            })
        })
        .collect();
    let any = !errs.is_empty();
    found("forbidden sysctls", errs, any)
}

fn windows_host_process(_: &Value, spec: &Value, _: u32) -> Found {
    let mut errs = Vec::new();
    if flag(spec, "/securityContext/windowsOptions/hostProcess") == Some(true) {
        errs.push(forbidden(
            "spec.securityContext.windowsOptions.hostProcess".into(),
            Bad::Bool(true),
        ));
    }
    for (path, c) in containers(spec) {
        if flag(c, "/securityContext/windowsOptions/hostProcess") == Some(true) {
            errs.push(forbidden(
                format!("{path}.securityContext.windowsOptions.hostProcess"),
                Bad::Bool(true),
            ));
        }
    }
    let any = !errs.is_empty();
    found("hostProcess", errs, any)
}

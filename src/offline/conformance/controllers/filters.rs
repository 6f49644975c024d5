//! Kyverno's `resourceFilters`: the `[Kind,Namespace,Name]` entries of its ConfigMap and
//! the one test every consumer asks them, as v1.19.0 has them:
//! - pkg/config/types.go `parseKinds`: every `[…]` of the string (regexp
//!   `\[([^\[\]]*)\]`; what lies between entries is ignored), split at commas: three
//!   parts are kind, namespace, name; two leave the name empty, one both; a kind is read
//!   by pkg/utils/kube/kind.go `ParseKindSelector` (`Kind`, `Kind/sub`, `v1/Kind`,
//!   `group/v1/Kind[/sub]`, `*/*` every resource and subresource);
//! - pkg/config/config.go `ToFilter`: group, version, kind and subresource each match
//!   their wildcard (pkg/utils/wildcard), then namespace and name do — or, for a
//!   Namespace, its name matches the namespace pattern;
//! - charts/kyverno/values.yaml `config.resourceFilters` and templates/config/
//!   _helpers.tpl `kyverno.config.resourceFilters`: the chart's default list as the suite
//!   installs it (release `kyverno` in namespace `kyverno`, `excludeKyvernoNamespace`
//!   prepending `[*/*,kyverno,*]`), rendered one per line under `>-`, so folded into one
//!   string with single spaces.
//!
//! Who asks, with which subresource: the admission webhooks the request's own
//! (pkg/webhooks/handlers/filter.go), the engine's match the same
//! (pkg/engine/internal/match.go), the generate and MutatingPolicy background
//! processors none for a trigger and the target's for a target
//! (pkg/background/gpol/generate_controller.go, pkg/background/mpol/processor.go), the
//! cleanup and deleting controllers the object's *kind* in the subresource's place
//! (pkg/controllers/cleanup/controller.go, pkg/controllers/deleting/controller.go), so
//! only an entry whose subresource pattern is `*` filters what they list.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::super::cluster::text;
use crate::offline::kyverno::matching::wildcard_match;

/// The chart's `config.resourceFilters`, its templates rendered for the suite's release.
const CHART_DEFAULTS: &[&str] = &[
    "[*/*,kyverno,*]",
    "[Event,*,*]",
    "[*/*,kube-system,*]",
    "[*/*,kube-public,*]",
    "[*/*,kube-node-lease,*]",
    "[Node,*,*]",
    "[Node/?*,*,*]",
    "[APIService,*,*]",
    "[APIService/?*,*,*]",
    "[TokenReview,*,*]",
    "[SubjectAccessReview,*,*]",
    "[SelfSubjectAccessReview,*,*]",
    "[Binding,*,*]",
    "[Pod/binding,*,*]",
    "[ReplicaSet,*,*]",
    "[ReplicaSet/?*,*,*]",
    "[EphemeralReport,*,*]",
    "[ClusterEphemeralReport,*,*]",
];

/// The controllers whose roles, bindings, accounts and workloads the chart lists by name.
const CONTROLLERS: &[&str] = &["admission", "background", "cleanup", "reports"];

/// The chart's rendering of `resourceFilters` (the ConfigMap's value).
pub fn chart_default() -> String {
    let mut out: Vec<String> = CHART_DEFAULTS.iter().map(|s| s.to_string()).collect();
    let ns = super::install::NAMESPACE;
    let role = |c: &str| format!("kyverno:{c}-controller");
    let name = |c: &str| format!("kyverno-{c}-controller");
    for c in CONTROLLERS {
        for suffix in ["", ":core", ":additional"] {
            out.push(format!("[ClusterRole,*,{}{suffix}]", role(c)));
        }
    }
    for c in CONTROLLERS {
        out.push(format!("[ClusterRoleBinding,*,{}]", role(c)));
    }
    for c in CONTROLLERS {
        for kind in ["ServiceAccount", "ServiceAccount/?*"] {
            out.push(format!("[{kind},{ns},{}]", name(c)));
        }
    }
    for kind in ["Role", "RoleBinding"] {
        for c in CONTROLLERS {
            out.push(format!("[{kind},{ns},{}]", role(c)));
        }
    }
    out.push(format!("[ConfigMap,{ns},kyverno]"));
    out.push(format!("[ConfigMap,{ns},kyverno-metrics]"));
    let each = |out: &mut Vec<String>, kind: &str, suffix: &str| {
        for c in CONTROLLERS {
            for k in [kind.to_string(), format!("{kind}/?*")] {
                out.push(format!("[{k},{ns},{}{suffix}]", name(c)));
            }
        }
    };
    each(&mut out, "Deployment", "");
    each(&mut out, "Pod", "-*");
    for k in ["Job", "Job/?*"] {
        out.push(format!("[{k},{ns},kyverno-hook-pre-delete]"));
    }
    each(&mut out, "NetworkPolicy", "");
    each(&mut out, "PodDisruptionBudget", "");
    let services = [
        "kyverno-svc".to_string(),
        "kyverno-svc-metrics".to_string(),
        format!("{}-metrics", name("background")),
        name("cleanup"),
        format!("{}-metrics", name("cleanup")),
        format!("{}-metrics", name("reports")),
    ];
    for s in services {
        for k in ["Service", "Service/?*"] {
            out.push(format!("[{k},{ns},{s}]"));
        }
    }
    for c in CONTROLLERS {
        out.push(format!("[ServiceMonitor,{ns},{}]", name(c)));
    }
    for s in ["kyverno-svc", &name("cleanup")] {
        out.push(format!("[Secret,{ns},{s}.{ns}.svc.*]"));
    }
    out.join(" ")
}

/// One parsed entry (config/types.go `filter`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    group: String,
    version: String,
    kind: String,
    subresource: String,
    namespace: String,
    name: String,
}

/// `ParseKindSelector`: group, version, kind, subresource.
fn kind_selector(input: &str) -> (String, String, String, String) {
    let mut parts: Vec<&str> = input.split('/').collect();
    if let Some(last) = parts.pop() {
        parts.extend(last.split('.'));
    }
    let version = |p: &str| {
        p == "*" || {
            let rest = p.strip_prefix('v').unwrap_or("");
            let mut chars = rest.chars();
            let digit = chars.next().is_some_and(|c| c.is_ascii_digit());
            let tail: String = chars.collect();
            digit
                && (tail.is_empty()
                    || ["alpha", "beta"].iter().any(|s| {
                        tail.strip_prefix(s)
                            .is_some_and(|d| d.len() == 1 && d.chars().all(|c| c.is_ascii_digit()))
                    }))
        }
    };
    let s = |x: &str| x.to_string();
    match parts.as_slice() {
        [k] => (s("*"), s("*"), s(k), s("")),
        ["*", "*"] => (s("*"), s("*"), s("*"), s("*")),
        ["*", sub] if sub.to_lowercase() == *sub => (s("*"), s("*"), s("*"), s(sub)),
        [v, k] if version(v) => (s("*"), s(v), s(k), s("")),
        [k, sub] => (s("*"), s("*"), s(k), s(sub)),
        [v, k, sub] if version(v) => (s("*"), s(v), s(k), s(sub)),
        [g, v, k] => (s(g), s(v), s(k), s("")),
        [g, v, k, sub] => (s(g), s(v), s(k), s(sub)),
        _ => Default::default(),
    }
}

/// `parseKinds`.
pub fn parse(input: &str) -> Vec<Filter> {
    let mut out = Vec::new();
    let mut last = Filter::default();
    let mut rest = input;
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        let Some(close) = after.find(['[', ']']) else {
            break;
        };
        if after.as_bytes()[close] == b'[' {
            rest = &after[close..];
            continue;
        }
        let parts: Vec<&str> = after[..close].split(',').collect();
        rest = &after[close + 1..];
        let (kind, namespace, name) = match parts.as_slice() {
            [k, ns, n] => (*k, *ns, *n),
            [k, ns] => (*k, *ns, ""),
            [k] => (*k, "", ""),
            // More than three parts leave the previous entry in its place, as Go does.
            _ => {
                out.push(last.clone());
                continue;
            }
        };
        last = if kind.is_empty() {
            Filter::default()
        } else {
            let (group, version, kind, subresource) = kind_selector(kind);
            Filter {
                group,
                version,
                kind,
                subresource,
                namespace: namespace.to_string(),
                name: name.to_string(),
            }
        };
        out.push(last.clone());
    }
    out
}

/// `ToFilter` over `filters`.
pub fn to_filter(filters: &[Filter], obj: &Value, subresource: &str) -> bool {
    let api_version = text(obj, "/apiVersion");
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), api_version),
    };
    let kind = text(obj, "/kind");
    let namespace = text(obj, "/metadata/namespace");
    let name = text(obj, "/metadata/name");
    filters.iter().any(|f| {
        wildcard_match(&f.group, &group)
            && wildcard_match(&f.version, &version)
            && wildcard_match(&f.kind, &kind)
            && wildcard_match(&f.subresource, subresource)
            && ((wildcard_match(&f.namespace, &namespace) && wildcard_match(&f.name, &name))
                || (group.is_empty()
                    && version == "v1"
                    && kind == "Namespace"
                    && wildcard_match(&f.namespace, &name)))
    })
}

/// The filters of the ConfigMap's current value, parsed once per value.
#[derive(Debug, Default)]
pub struct Cache(Mutex<Option<Parsed>>);

/// A value of the key and its filters.
type Parsed = (Option<String>, Arc<Vec<Filter>>);

impl Clone for Cache {
    fn clone(&self) -> Cache {
        Cache(Mutex::new(self.0.lock().ok().and_then(|c| c.clone())))
    }
}

impl Cache {
    /// The filters of `value` (the ConfigMap's `resourceFilters`; none when absent:
    /// config.go `load` resets them to none before it reads the key).
    pub fn filters(&self, value: Option<&str>) -> Arc<Vec<Filter>> {
        let Ok(mut cached) = self.0.lock() else {
            return Arc::new(value.map(parse).unwrap_or_default());
        };
        if let Some((v, f)) = cached.as_ref()
            && v.as_deref() == value
        {
            return f.clone();
        }
        let parsed = Arc::new(value.map(parse).unwrap_or_default());
        *cached = Some((value.map(str::to_string), parsed.clone()));
        parsed
    }
}

#[cfg(test)]
#[path = "filters_tests.rs"]
mod tests;

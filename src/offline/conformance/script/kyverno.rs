//! `kyverno apply <policies> --cluster` in a test's script: the Kyverno CLI against the
//! simulated cluster (cmd/cli/kubectl-kyverno/commands/apply/command.go, v1.19.0). The
//! policies' match kinds are listed from the cluster (utils/common/fetch.go
//! `getFromCluster`: every namespace, or `--namespace`'s), each object is evaluated as
//! the CLI's processor does (processor/policy_processor.go `ApplyPoliciesOnResource`:
//! validate rules of ClusterPolicies/Policies with the live namespace's labels and the
//! `--exception` files, then MutatingAdmissionPolicies, then GeneratingPolicies), and
//! the text is printed in the CLI's words. The engines are the replay's own (the classic
//! engine, `offline::vap`); this module only fetches, counts and prints.
//!
//! What the CLI would print about objects the replay does not hold (a kind the replay
//! cannot list completely), the YAML of a mutated or generated object (live metadata,
//! Go's encoder) and the order of objects the CLI lists from a Go map are unknown pieces
//! of the stream; the exit status, when unknown objects could change it, is a skip.
//! Flags and policy kinds it does not model are skips that name them.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::exec::{Files, Io, Text, Unknown, Unwind};
use super::kubectl::Kubectl;
use super::kubectl::listing::{Listing, SYSTEM_NAMESPACES};
use crate::offline::conformance::cluster::{Cluster, Key, kindstate, map, text};
use crate::offline::kyverno::{self, RuleKind, RuleStatus};
use crate::offline::vap::{self, CelPolicyOutcome};

/// Most documents the policy and exception files may hold together.
const MAX_DOCUMENTS: usize = 256;
/// Most objects one run evaluates.
const MAX_OBJECTS: usize = 2_000;

fn skip(what: impl Into<String>) -> Unwind {
    Unwind::Skip(what.into())
}

/// The flags `kyverno apply` was given, as the replay reads them.
#[derive(Default, Debug)]
struct Flags {
    policies: Vec<String>,
    cluster: bool,
    namespace: Option<String>,
    exceptions: Vec<String>,
}

/// Reads `apply`'s arguments (pflag: `--f=v`, `--f v`, `-f v`; slices split on commas).
fn parse(args: &[String]) -> Result<Flags, Unwind> {
    let mut f = Flags::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--" {
            f.policies.extend(it.by_ref().cloned());
            break;
        }
        let Some(flag) = a.strip_prefix('-').filter(|s| !s.is_empty()) else {
            f.policies.push(a.clone());
            continue;
        };
        let flag = flag.strip_prefix('-').unwrap_or(flag);
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (flag, None),
        };
        let mut value = |inline: Option<String>| {
            inline
                .or_else(|| it.next().cloned())
                .ok_or_else(|| skip(format!("`kyverno apply --{name}` without a value")))
        };
        match name {
            "cluster" | "c" => {
                f.cluster = !matches!(inline.as_deref(), Some("false"));
            }
            "remove-color" => {}
            "namespace" | "n" => f.namespace = Some(value(inline)?),
            "exception" | "exceptions" | "e" => f.exceptions.extend(
                value(inline)?
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
            ),
            _ => {
                let written = a.split_once('=').map_or(a.as_str(), |(f, _)| f);
                return Err(skip(format!("`kyverno apply {written}`")));
            }
        }
    }
    Ok(f)
}

/// The documents of the files named, `List`s opened.
fn documents(paths: &[String], files: &Files) -> Result<Vec<Value>, Unwind> {
    let mut out = Vec::new();
    for p in paths {
        let source = files.read(p).map_err(|_| {
            skip(format!(
                "`kyverno apply` of a file the replay does not have ({p})"
            ))
        })?;
        let docs = crate::yaml::parse_json_stream(&source).map_err(|e| {
            skip(format!(
                "`kyverno apply` of {p}, not YAML the replay reads: {e}"
            ))
        })?;
        for d in docs {
            if text(&d, "/kind") == "List" {
                out.extend(d["items"].as_array().cloned().unwrap_or_default());
            } else if d.is_object() {
                out.push(d);
            }
        }
        if out.len() > MAX_DOCUMENTS {
            return Err(skip(
                "`kyverno apply` of more documents than the replay's bound",
            ));
        }
    }
    Ok(out)
}

/// The policies of a run, by the processor's kinds.
#[derive(Default)]
struct Policies {
    /// ClusterPolicies and Policies (validate rules only).
    classic: Vec<kyverno::Policy>,
    /// Their rules after autogen, as written.
    classic_rules: Vec<Value>,
    maps: Vec<Value>,
    gpols: Vec<Value>,
}

impl Policies {
    fn load(docs: &[Value]) -> Result<Policies, Unwind> {
        let mut p = Policies::default();
        let mut classic_raw = Vec::new();
        for d in docs {
            let (av, kind) = (text(d, "/apiVersion"), text(d, "/kind"));
            let group = av.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
            match (group, kind.as_str()) {
                ("kyverno.io", "ClusterPolicy" | "Policy") => classic_raw.push(d.clone()),
                ("admissionregistration.k8s.io", "MutatingAdmissionPolicy") => {
                    p.maps.push(d.clone());
                }
                ("policies.kyverno.io", "GeneratingPolicy") => p.gpols.push(d.clone()),
                // Loaded apart; used only with --exceptions-within-policies.
                ("kyverno.io" | "policies.kyverno.io", "PolicyException") => {}
                _ => return Err(skip(format!("`kyverno apply` of a {kind} ({av})"))),
            }
        }
        let (classic, _) = kyverno::load_policies(&classic_raw);
        let (classic, invalid) = kyverno::split_invalid(classic);
        if let Some((name, _)) = invalid.first() {
            return Err(skip(format!(
                "`kyverno apply` of a policy its validation refuses ({name})"
            )));
        }
        for pol in &classic {
            let actions = |r: &kyverno::Rule| {
                r.mutate.is_some() || r.generate.is_some() || r.verify_images.is_some()
            };
            if pol.rules.iter().any(actions) {
                return Err(skip(format!(
                    "`kyverno apply --cluster` of {} with mutate, generate or verifyImages rules",
                    pol.name
                )));
            }
            let expanded = kyverno::autogen::expand(&pol.raw);
            p.classic_rules.extend(
                expanded
                    .pointer("/spec/rules")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
            );
        }
        p.classic = classic;
        Ok(p)
    }

    /// `policyRulesCount`: the classic policies' rules after autogen, one per other policy.
    fn rule_count(&self) -> usize {
        self.classic_rules.len() + self.maps.len() + self.gpols.len()
    }
}

/// A kind the policies match, as `extractResourcesFromPolicies` finds it in discovery.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fetched {
    group: String,
    kind: String,
    namespaced: bool,
    /// The only names any policy selecting the kind can match (`resourceNames` on every
    /// resource rule naming it); `None` when some selector takes any name.
    names: Option<Vec<String>>,
}

/// The kinds the policies match; a kind discovery does not know is left out (the CLI
/// logs it).
fn match_kinds(p: &Policies, cluster: &Cluster) -> Result<Vec<Fetched>, Unwind> {
    let mapper = cluster.mapper();
    let mut out: Vec<Fetched> = Vec::new();
    let mut add =
        |r: &crate::offline::rbac::resource::ApiResource, names: Option<Vec<String>>| match out
            .iter_mut()
            .find(|f| f.group == r.group && f.kind == r.kind)
        {
            Some(f) => {
                f.names = match (f.names.take(), names) {
                    (Some(mut a), Some(b)) => {
                        a.extend(b);
                        Some(a)
                    }
                    _ => None,
                };
            }
            None => out.push(Fetched {
                group: r.group.clone(),
                kind: r.kind.clone(),
                namespaced: r.namespaced,
                names,
            }),
        };
    for rule in &p.classic_rules {
        let mut selectors: Vec<&Value> = Vec::new();
        let m = &rule["match"];
        selectors.extend(
            m.pointer("/resources/kinds")
                .and_then(Value::as_array)
                .into_iter()
                .flatten(),
        );
        for block in ["any", "all"] {
            for f in m.get(block).and_then(Value::as_array).into_iter().flatten() {
                selectors.extend(
                    f.pointer("/resources/kinds")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten(),
                );
            }
        }
        for s in selectors {
            let s = s.as_str().unwrap_or("");
            if s.contains('*') || s.contains('.') && !s.contains('/') {
                return Err(skip(format!(
                    "`kyverno apply --cluster` of the kind selector {s}"
                )));
            }
            let parts: Vec<&str> = s.split('/').collect();
            let upper = |k: &str| k.chars().next().is_some_and(char::is_uppercase);
            let (group, kind) = match parts.as_slice() {
                [k] => (None, *k),
                [_version, k] if upper(k) => (Some(""), *k),
                [g, _version, k] if upper(k) => (Some(*g), *k),
                _ => {
                    return Err(skip(format!(
                        "`kyverno apply --cluster` of the kind selector {s} (a subresource)"
                    )));
                }
            };
            for r in mapper.resources() {
                if r.kind == kind && group.is_none_or(|g| g == r.group) {
                    add(r, None);
                }
            }
        }
    }
    for pol in p.maps.iter().chain(&p.gpols) {
        let rules = pol
            .pointer("/spec/matchConstraints/resourceRules")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for rule in rules {
            let strings = |k: &str| -> Vec<String> {
                crate::offline::str_items(rule.get(k))
                    .map(str::to_string)
                    .collect()
            };
            let names = Some(strings("resourceNames")).filter(|n| !n.is_empty());
            for group in strings("apiGroups") {
                for res in strings("resources") {
                    if group.contains('*') || res.contains('*') || res.contains('/') {
                        return Err(skip(format!(
                            "`kyverno apply --cluster` of the resource rule {group}/{res}"
                        )));
                    }
                    if let Some(r) = mapper
                        .resources()
                        .iter()
                        .find(|r| r.group == group && r.plural == res)
                    {
                        add(r, names.clone());
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Kinds a kind cluster with Kyverno installed has no object of before a test writes
/// one (its own workloads, RBAC, services, namespaces and Kyverno's chart have the
/// rest): listed across namespaces, the replay holds all of them.
const NOT_BOOTSTRAPPED: &[&str] = &[
    "Ingress",
    "NetworkPolicy",
    "StatefulSet",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "ResourceQuota",
    "LimitRange",
    "HorizontalPodAutoscaler",
    "ClusterPolicy",
    "Policy",
    "PolicyException",
    "GlobalContextEntry",
    "CleanupPolicy",
    "ClusterCleanupPolicy",
    "ValidatingPolicy",
    "MutatingPolicy",
    "GeneratingPolicy",
    "DeletingPolicy",
    "ImageValidatingPolicy",
];

/// Whether the replay can list every object of `f` in the scope: in a test's own
/// namespace, what the replay holds (and a controller's objects where it holds no
/// workload); across namespaces or cluster-wide, only kinds a new cluster has none of.
fn complete(k: &Kubectl<'_>, f: &Fetched, namespace: Option<&str>) -> bool {
    let bootstrapped_held =
        || NOT_BOOTSTRAPPED.contains(&f.kind.as_str()) || kindstate::holds_all_initial(&f.kind);
    let Some(ns) = namespace.filter(|_| f.namespaced) else {
        return bootstrapped_held();
    };
    if SYSTEM_NAMESPACES.contains(&ns) || ns == "default" {
        return bootstrapped_held();
    }
    // A ConfigMap list's published `kube-root-ca.crt` is known only in part: not
    // evaluated here.
    matches!(k.listing(&f.kind, ns), Listing::Held)
}

/// Whether objects of `f` the replay does not hold cannot be selected by any policy:
/// a cluster-scoped kind every policy selects only by names the replay holds (names
/// are unique there).
fn inert(cluster: &Cluster, f: &Fetched) -> bool {
    !f.namespaced
        && f.names.as_ref().is_some_and(|names| {
            names.iter().all(|n| {
                cluster
                    .find(&Key {
                        group: f.group.clone(),
                        kind: f.kind.clone(),
                        namespace: String::new(),
                        name: n.clone(),
                    })
                    .is_some()
            })
        })
}

/// The text the CLI writes, in pieces: known text and what the replay cannot know.
#[derive(Default)]
struct Out {
    pieces: Vec<Text>,
}

impl Out {
    fn known(&mut self, s: impl Into<String>) {
        self.pieces.push(Text::known(s));
    }
    fn unknown(&mut self, why: &str) {
        self.pieces.push(Text {
            s: String::new(),
            unknown: Some(Unknown {
                why: why.to_string(),
                lines_exact: false,
                decides: Vec::new(),
                exact_under: Vec::new(),
            }),
        });
    }
}

/// `ResultCounts` (processor/result.go).
#[derive(Default)]
struct Counts {
    pass: usize,
    fail: usize,
    warn: usize,
    error: usize,
    skip: usize,
}

/// What one object's evaluation printed while it ran, and its failures (printed after
/// all objects, by command.go's response loop).
#[derive(Default)]
struct Evaluated {
    during: Out,
    failures: Out,
}

/// Runs `kyverno <argv>` against the cluster.
pub(super) fn run(
    k: &Kubectl<'_>,
    argv: &[String],
    io: &mut Io,
    files: &Files,
) -> Result<i32, Unwind> {
    match argv.first().map(String::as_str) {
        Some("apply") => {}
        Some(other) => return Err(skip(format!("`kyverno {other}`"))),
        None => return Err(skip("`kyverno` without a command")),
    }
    let flags = parse(&argv[1..])?;
    if !flags.cluster {
        return Err(skip(
            "`kyverno apply` of resource files (without --cluster)",
        ));
    }
    if flags.policies.is_empty() {
        io.print(2, "Error: require policy\n");
        return Ok(1);
    }
    let policies = Policies::load(&documents(&flags.policies, files)?)?;
    let exception_docs = documents(&flags.exceptions, files)?;
    let mut exceptions = Vec::new();
    let mut cel_exceptions = 0usize;
    for e in exception_docs {
        match (text(&e, "/apiVersion").as_str(), text(&e, "/kind").as_str()) {
            (av, "PolicyException") if av.starts_with("kyverno.io/") => exceptions.push(e),
            (av, "PolicyException") if av.starts_with("policies.kyverno.io/") => {
                cel_exceptions += 1;
            }
            (av, kind) => {
                return Err(skip(format!(
                    "`kyverno apply --exception` of a {kind} ({av})"
                )));
            }
        }
    }
    if cel_exceptions > 0 {
        return Err(skip("`kyverno apply --exception` of CEL PolicyExceptions"));
    }

    let namespace = flags.namespace.as_deref().filter(|n| !n.is_empty());
    let kinds = match_kinds(&policies, k.cluster)?;
    // Kinds with objects the replay does not hold: some that a policy may select
    // (`unknown`: their results too), or only uncounted ones (`uncounted`).
    let (mut unknown_kinds, mut uncounted_kinds) = (BTreeSet::new(), BTreeSet::new());
    let mut objects: Vec<Value> = Vec::new();
    for f in &kinds {
        if namespace.is_some() && !f.namespaced {
            return Err(skip(format!(
                "`kyverno apply --cluster --namespace` of the cluster-scoped kind {}",
                f.kind
            )));
        }
        if !complete(k, f, namespace) {
            if inert(k.cluster, f) {
                uncounted_kinds.insert(f.kind.clone());
            } else {
                unknown_kinds.insert(f.kind.clone());
            }
        }
        let key = Key {
            group: f.group.clone(),
            kind: f.kind.clone(),
            namespace: namespace.unwrap_or("").to_string(),
            name: String::new(),
        };
        for o in k.cluster.list(&key) {
            // The CLI keys objects by kind, namespace and name.
            let same = |p: &Value| {
                text(p, "/kind") == f.kind
                    && text(p, "/metadata/namespace") == text(o, "/metadata/namespace")
                    && text(p, "/metadata/name") == text(o, "/metadata/name")
            };
            if !objects.iter().any(same) {
                objects.push(o.clone());
            }
        }
        if objects.len() > MAX_OBJECTS {
            return Err(skip(
                "`kyverno apply --cluster` of more objects than the replay's bound",
            ));
        }
    }
    let held_not = |kinds: BTreeSet<String>| {
        (!kinds.is_empty()).then(|| {
            format!(
                "what `kyverno apply --cluster` prints of objects the replay does not hold ({})",
                kinds.into_iter().collect::<Vec<_>>().join(", ")
            )
        })
    };
    let uncounted = held_not(uncounted_kinds.union(&unknown_kinds).cloned().collect());
    let unknown = held_not(unknown_kinds);

    let mut out = Out::default();
    let exceptions_count = exceptions.len();
    out.known(format!(
        "\nApplying {} policy rule(s) to ",
        policies.rule_count()
    ));
    match &uncounted {
        Some(why) => out.unknown(why),
        None => out.known(objects.len().to_string()),
    }
    out.known(if exceptions_count > 0 {
        format!(" resource(s) with {exceptions_count} exception(s)...\n")
    } else {
        " resource(s)...\n".to_string()
    });

    let opts = kyverno::Options {
        exceptions,
        cluster: std::sync::Arc::new(k.cluster.objects.clone()),
        ..Default::default()
    };
    let mut counts = Counts::default();
    let mut evaluated = Vec::new();
    for obj in &objects {
        evaluated.push(evaluate(k.cluster, &policies, &opts, obj, &mut counts)?);
    }
    let order = "the order in which the CLI lists objects (a Go map's)";
    let mut printed = 0usize;
    for e in &mut evaluated {
        if !e.during.pieces.is_empty() {
            if printed > 0 {
                out.unknown(order);
            }
            printed += 1;
            out.pieces.append(&mut e.during.pieces);
        }
    }
    if let Some(why) = &unknown {
        out.unknown(why);
    }
    let mut printed = 0usize;
    for e in &mut evaluated {
        if !e.failures.pieces.is_empty() {
            if printed > 0 {
                out.unknown(order);
            }
            printed += 1;
            out.pieces.append(&mut e.failures.pieces);
        }
    }
    match &unknown {
        Some(why) => {
            out.unknown(why);
            out.known("\npass: ");
            out.unknown(why);
        }
        None => out.known(format!(
            "\npass: {}, fail: {}, warn: {}, error: {}, skip: {} \n",
            counts.pass, counts.fail, counts.warn, counts.error, counts.skip
        )),
    }
    for p in out.pieces {
        io.write(1, p);
    }
    // command.go `exit`: the error is silenced; main exits 1.
    if counts.fail > 0 || counts.error > 0 {
        return Ok(1);
    }
    // Unknown objects could fail or error (1) or not (0).
    match (unknown, k.assume_status) {
        (None, _) => Ok(0),
        (Some(_), Some(status)) => Ok(status),
        (Some(why), None) => Err(Unwind::UnknownStatus(format!("the exit status of {why}"))),
    }
}

/// One object through the policies, as `ApplyPoliciesOnResource` runs them.
fn evaluate(
    cluster: &Cluster,
    p: &Policies,
    opts: &kyverno::Options,
    obj: &Value,
    counts: &mut Counts,
) -> Result<Evaluated, Unwind> {
    let mut e = Evaluated::default();
    let (kind, ns, name) = (
        text(obj, "/kind"),
        text(obj, "/metadata/namespace"),
        text(obj, "/metadata/name"),
    );
    let path = format!("{ns}/{kind}/{name}");
    if !p.classic.is_empty() {
        // In cluster mode the namespace's labels are the live namespace's.
        let namespace_labels = if ns.is_empty() || kind == "Namespace" {
            Default::default()
        } else {
            cluster.namespace_labels(&ns)
        };
        let req = kyverno::Request {
            object: obj.clone(),
            namespace_labels,
            ..Default::default()
        };
        for policy in &p.classic {
            let resp = kyverno::admit_with(std::slice::from_ref(policy), &req, opts);
            let mut failed = Vec::new();
            for r in resp.results.iter().filter(|r| r.kind == RuleKind::Validate) {
                if let Some(u) = &r.unsupported {
                    return Err(skip(format!(
                        "`kyverno apply` of {}/{}: {u:?}",
                        r.policy, r.rule
                    )));
                }
                match r.status {
                    RuleStatus::Pass => counts.pass += 1,
                    RuleStatus::Fail if policy.unscored => counts.warn += 1,
                    RuleStatus::Fail => {
                        counts.fail += 1;
                        failed.push(r);
                    }
                    RuleStatus::Warn => counts.warn += 1,
                    RuleStatus::Error => counts.error += 1,
                    RuleStatus::Skip => counts.skip += 1,
                }
            }
            if !failed.is_empty() {
                e.failures.known(format!(
                    "policy {} -> resource {path} failed:\n",
                    policy.name
                ));
                for (i, r) in failed.iter().enumerate() {
                    e.failures.known(format!("{} - {} ", i + 1, r.rule));
                    match &r.upstream {
                        Some(m) if !m.is_empty() => e.failures.known(format!("{m}\n")),
                        _ => {
                            e.failures.unknown("a rule message in Kyverno's words");
                            e.failures.known("\n");
                        }
                    }
                }
            }
        }
    }
    let user = vap::VapUser::default();
    for policy in &p.maps {
        // Without bindings the CLI matches the policy's own constraints; the namespace
        // carries the values file's labels (none in cluster mode).
        if policy
            .pointer("/spec/matchConditions")
            .and_then(Value::as_array)
            .is_some_and(|c| !c.is_empty())
        {
            return Err(skip(
                "`kyverno apply` of a MutatingAdmissionPolicy with matchConditions",
            ));
        }
        let constraints = policy
            .pointer("/spec/matchConstraints")
            .cloned()
            .unwrap_or(json!({}));
        let probe = map::as_mutating_policy(policy, &constraints);
        let mut req = cluster.vap_request(obj, None);
        req.user = user.clone();
        if !ns.is_empty() && kind != "Namespace" {
            req.namespace_object =
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        }
        match vap::evaluate_mutating_policy(&probe, &req) {
            CelPolicyOutcome::NotMatched => {}
            CelPolicyOutcome::Applied(_) => {
                counts.pass += 1;
                printed_object(&mut e.during, &text(policy, "/metadata/name"), &path);
                e.during
                    .known("\n\nMutation:\nMutation has been applied successfully.");
            }
            CelPolicyOutcome::Error(m) => {
                return Err(skip(format!(
                    "`kyverno apply` of a MutatingAdmissionPolicy that fails: {m}"
                )));
            }
            CelPolicyOutcome::Unsupported { message, .. } => return Err(skip(message)),
        }
    }
    for policy in &p.gpols {
        let mut req = cluster.vap_request(obj, None);
        req.user = user.clone();
        req.cluster = Some(opts.cluster.clone());
        match vap::evaluate_generating_policy(policy, &req) {
            CelPolicyOutcome::NotMatched => {}
            CelPolicyOutcome::Applied(made) => {
                counts.pass += 1;
                for _ in &made {
                    printed_object(&mut e.during, &text(policy, "/metadata/name"), &path);
                    e.during
                        .known("\n\nGenerate:\nGeneration completed successfully.");
                }
            }
            CelPolicyOutcome::Error(m) => {
                return Err(skip(format!(
                    "`kyverno apply` of a GeneratingPolicy that fails: {m}"
                )));
            }
            CelPolicyOutcome::Unsupported { message, .. } => return Err(skip(message)),
        }
    }
    Ok(e)
}

/// `printOutput`: the policy, the object's path and the object's YAML.
fn printed_object(out: &mut Out, policy: &str, path: &str) {
    out.known(format!("\npolicy {policy} applied to {path}:\n"));
    out.unknown("the YAML of an object the CLI prints (live metadata, Go's encoder)");
    out.known("\n---\n");
}

#[cfg(test)]
#[path = "kyverno_tests.rs"]
mod tests;

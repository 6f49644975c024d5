//! The webhook configurations Kyverno 1.19's webhook controller keeps, as a pure function
//! of the policies present and the suite's Helm configuration
//! (pkg/controllers/webhook/controller.go, validating.go, utils.go, match_conditions.go;
//! names and paths from pkg/config/config.go; the chart's `config.webhooks`,
//! `webhookAnnotations` and `excludeKyvernoNamespace` in charts/kyverno/values.yaml):
//! - the policy webhooks (`kyverno-policy-validating/mutating-webhook-cfg`) and the
//!   verify webhook, which do not depend on the policies;
//! - the resource webhooks: for ClusterPolicies and Policies one webhook per failure
//!   policy (`validate.kyverno.svc-fail`/`-ignore`, `mutate.kyverno.svc-…`) and one per
//!   policy with its own `webhookConfiguration.matchConditions` (`…-finegrained-NAME`),
//!   their rules from [`super::webhook_rules`]; for the CEL policies one webhook per
//!   failure policy and kind (`vpol.validate.kyverno.svc-fail`, …) and one per policy with
//!   match conditions, `matchPolicy: Exact` or a timeout of its own.
//!   ImageValidatingPolicies' validating and digest-pinning mutating webhooks are
//!   families of these (their differences: webhooks_ivpol.rs).
//!
//! Then what the API server defaults on a stored webhook (admissionregistration/v1
//! defaults: `matchPolicy`, selectors, `timeoutSeconds`, rule `scope`, service `port`,
//! `reinvocationPolicy`).

use serde_json::{Map, Value, json};

use super::Features;
use super::webhook_rules::{ALL_OPERATIONS, RuleSet, Side, sorted_rules};
use super::webhooks_autogen::{autogen_conditions, autogen_rules, guarded, pods_only};
use super::webhooks_ivpol as ivpol;
use crate::offline::conformance::cluster::text;
use crate::offline::rbac::resource::Mapper;
use crate::offline::vap;

const KYVERNO_NAMESPACE: &str = "kyverno";
const SERVICE: &str = "kyverno-svc";
const PORT: i64 = 443;
/// `--webhookTimeout` (cmd/kyverno/main.go default).
const DEFAULT_TIMEOUT: i64 = 10;

pub const RESOURCE_VALIDATING: &str = "kyverno-resource-validating-webhook-cfg";
pub const RESOURCE_MUTATING: &str = "kyverno-resource-mutating-webhook-cfg";

/// The chart's `config.webhooks` with the Kyverno namespace excluded
/// (templates/config/configmap.yaml, `kyverno.config.webhooks`).
fn config_namespace_selector() -> Value {
    let not_in = |ns: &str| json!({"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": [ns]});
    json!({"matchExpressions": [not_in("kube-system"), not_in(KYVERNO_NAMESPACE)]})
}

/// `config.webhookAnnotations` of the chart's defaults.
fn annotations() -> Value {
    json!({"admissions.enforcer/disabled": "true"})
}

fn client_config(path: &str) -> Value {
    json!({"service": {"name": SERVICE, "namespace": KYVERNO_NAMESPACE, "path": path, "port": PORT}})
}

fn configuration(kind: &str, name: &str, webhooks: Vec<Value>) -> Value {
    let mutating = kind == "MutatingWebhookConfiguration";
    let mut o = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": name, "annotations": annotations(),
            "labels": {"webhook.kyverno.io/managed-by": "kyverno"}}});
    if !webhooks.is_empty() {
        let hooks: Vec<Value> = webhooks
            .into_iter()
            .map(|w| api_defaults(w, mutating))
            .collect();
        o["webhooks"] = Value::Array(hooks);
    }
    o
}

/// What the API server fills in on a webhook it stores.
fn api_defaults(mut w: Value, mutating: bool) -> Value {
    let Some(m) = w.as_object_mut() else {
        return w;
    };
    let mut default = |k: &str, v: Value| {
        if m.get(k).is_none_or(Value::is_null) {
            m.insert(k.into(), v);
        }
    };
    default("failurePolicy", json!("Fail"));
    default("matchPolicy", json!("Equivalent"));
    default("namespaceSelector", json!({}));
    default("objectSelector", json!({}));
    default("timeoutSeconds", json!(DEFAULT_TIMEOUT));
    if mutating {
        default("reinvocationPolicy", json!("Never"));
    }
    if let Some(rules) = m.get_mut("rules").and_then(Value::as_array_mut) {
        for r in rules {
            if r.get("scope").is_none_or(Value::is_null) {
                r["scope"] = json!("*");
            }
        }
    }
    let service = m.get_mut("clientConfig").and_then(|c| c.get_mut("service"));
    if let Some(svc) = service.and_then(Value::as_object_mut) {
        svc.entry("port").or_insert(json!(PORT));
    }
    if m.get("matchConditions")
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty)
    {
        m.remove("matchConditions");
    }
    w
}

pub(super) fn rule(groups: &[&str], versions: &[&str], resources: &[&str], ops: &[&str]) -> Value {
    json!({"apiGroups": groups, "apiVersions": versions, "resources": resources, "operations": ops})
}

/// The policy webhooks and the verify webhook (`buildPolicyValidatingWebhookConfiguration`,
/// `buildPolicyMutatingWebhookConfiguration`, `buildVerifyMutatingWebhookConfiguration`).
fn static_configurations() -> Vec<Value> {
    const CU: &[&str] = &["CREATE", "UPDATE"];
    let all = &["v1alpha1", "v1beta1", "v1"][..];
    let ns = &["v1beta1", "v1"][..];
    let cel = |r: &str, v: &[&str]| rule(&["policies.kyverno.io"], v, &[r], CU);
    let policy_rule = rule(
        &["kyverno.io"],
        &["v1", "v2beta1"],
        &["clusterpolicies", "policies"],
        CU,
    );
    let validating = json!({"name": "validate-policy.kyverno.svc",
        "clientConfig": client_config("/policyvalidate"),
        "rules": [policy_rule.clone(), cel("validatingpolicies", all),
            cel("namespacedvalidatingpolicies", ns), cel("imagevalidatingpolicies", all),
            cel("namespacedimagevalidatingpolicies", ns), cel("generatingpolicies", all),
            cel("namespacedgeneratingpolicies", ns), cel("mutatingpolicies", all),
            cel("namespacedmutatingpolicies", ns), cel("deletingpolicies", all)],
        "failurePolicy": "Fail", "timeoutSeconds": DEFAULT_TIMEOUT, "sideEffects": "None",
        "admissionReviewVersions": ["v1"], "matchPolicy": "Equivalent"});
    let mutating = json!({"name": "mutate-policy.kyverno.svc",
        "clientConfig": client_config("/policymutate"), "rules": [policy_rule],
        "failurePolicy": "Fail", "timeoutSeconds": DEFAULT_TIMEOUT, "sideEffects": "NoneOnDryRun",
        "reinvocationPolicy": "IfNeeded", "admissionReviewVersions": ["v1"],
        "matchPolicy": "Equivalent"});
    let verify = json!({"name": "monitor-webhooks.kyverno.svc",
        "clientConfig": client_config("/verifymutate"),
        "rules": [rule(&["coordination.k8s.io"], &["v1"], &["leases"], &["UPDATE"])],
        "failurePolicy": "Ignore", "sideEffects": "NoneOnDryRun",
        "timeoutSeconds": DEFAULT_TIMEOUT, "reinvocationPolicy": "IfNeeded",
        "admissionReviewVersions": ["v1"],
        "objectSelector": {"matchLabels": {"app.kubernetes.io/name": "kyverno"}},
        "matchPolicy": "Equivalent"});
    vec![
        configuration(
            "ValidatingWebhookConfiguration",
            "kyverno-policy-validating-webhook-cfg",
            vec![validating],
        ),
        configuration(
            "MutatingWebhookConfiguration",
            "kyverno-policy-mutating-webhook-cfg",
            vec![mutating],
        ),
        configuration(
            "MutatingWebhookConfiguration",
            "kyverno-verify-mutating-webhook-cfg",
            vec![verify],
        ),
    ]
}

/// The webhook configurations of a cluster holding `objects`, and for each one whose
/// `webhooks` are not fully modelled, why.
pub struct Built {
    pub configurations: Vec<Value>,
    pub unmodelled: Vec<(&'static str, String)>,
}

impl Built {
    /// Why the `webhooks` of configuration `name` are not modelled, if they are not.
    pub fn unmodelled(&self, name: &str) -> Option<&str> {
        self.unmodelled
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, why)| why.as_str())
    }
}

/// Every webhook configuration Kyverno keeps for `objects`.
pub fn build(objects: &[Value], features: Features, mapper: &Mapper) -> Built {
    let mut configurations = static_configurations();
    let mut unmodelled = Vec::new();
    let mut cel = Cel {
        objects,
        features,
        why: None,
    };
    let mut validating = classic(objects, features, mapper, Side::Validate);
    validating.extend(cel.validating());
    if let Some(why) = cel.why.take() {
        unmodelled.push((RESOURCE_VALIDATING, why));
    }
    let mut mutating = classic(objects, features, mapper, Side::Mutate);
    mutating.extend(cel.mutating());
    if let Some(why) = cel.why.take() {
        unmodelled.push((RESOURCE_MUTATING, why));
    }
    let by_name = |a: &Value, b: &Value| text(a, "/name").cmp(&text(b, "/name"));
    validating.sort_by(by_name);
    mutating.sort_by(by_name);
    for (name, hooks) in [
        (RESOURCE_VALIDATING, &validating),
        (RESOURCE_MUTATING, &mutating),
    ] {
        if ivpol::duplicate_name(hooks).is_some() && no_reason_yet(&unmodelled, name) {
            unmodelled.push((name, ivpol::DUPLICATE.to_string()));
        }
    }
    configurations.push(configuration(
        "ValidatingWebhookConfiguration",
        RESOURCE_VALIDATING,
        validating,
    ));
    configurations.push(configuration(
        "MutatingWebhookConfiguration",
        RESOURCE_MUTATING,
        mutating,
    ));
    Built {
        configurations,
        unmodelled,
    }
}

/// Whether no reason is recorded yet for configuration `name`.
fn no_reason_yet(unmodelled: &[(&'static str, String)], name: &str) -> bool {
    !unmodelled.iter().any(|(n, _)| *n == name)
}

/// `spec.GetFailurePolicy` of a ClusterPolicy/Policy.
fn classic_failure_policy(p: &Value, features: Features) -> &'static str {
    if features.force_failure_ignore {
        return "Ignore";
    }
    let fp = p
        .pointer("/spec/webhookConfiguration/failurePolicy")
        .or_else(|| p.pointer("/spec/failurePolicy"))
        .and_then(Value::as_str);
    if fp == Some("Ignore") {
        "Ignore"
    } else {
        "Fail"
    }
}

/// One webhook being built for ClusterPolicies/Policies (`webhook` in utils_webhook.go).
struct Hook {
    /// (namespace, name) of the policy a fine-grained webhook is for.
    policy: Option<(String, String)>,
    ignore: bool,
    timeout: i64,
    rules: RuleSet,
    conditions: Vec<Value>,
}

impl Hook {
    fn new(ignore: bool) -> Hook {
        Hook {
            policy: None,
            ignore,
            timeout: DEFAULT_TIMEOUT,
            rules: RuleSet::default(),
            conditions: Vec::new(),
        }
    }
}

/// `buildForPoliciesValidation` / `buildForPoliciesMutation`.
fn classic(objects: &[Value], features: Features, mapper: &Mapper, side: Side) -> Vec<Value> {
    let (mut ignore, mut fail) = (Hook::new(true), Hook::new(false));
    let mut fine: Vec<Hook> = Vec::new();
    for p in objects {
        let kind = text(p, "/kind");
        let policy = match kind.as_str() {
            "ClusterPolicy" => !super::left_to_generated(p),
            "Policy" => text(p, "/apiVersion").starts_with("kyverno.io/"),
            _ => false,
        };
        if !policy || p.pointer("/spec/admission").and_then(Value::as_bool) == Some(false) {
            continue;
        }
        let rules = p.pointer("/spec/rules").and_then(Value::as_array);
        let any = |f: fn(&Value) -> bool| rules.is_some_and(|rs| rs.iter().any(f));
        use super::webhook_rules::has;
        let runs = match side {
            Side::Validate => {
                any(has::validate)
                    || any(has::generate)
                    || any(has::mutate_existing)
                    || any(has::verify_image_checks)
                    || any(has::verify_manifests)
            }
            Side::Mutate => any(has::mutate_standard) || any(has::verify_images),
        };
        if !runs {
            continue;
        }
        let is_ignore = classic_failure_policy(p, features) == "Ignore";
        let conditions = p
            .pointer("/spec/webhookConfiguration/matchConditions")
            .and_then(Value::as_array)
            .filter(|c| !c.is_empty());
        let hook = if let Some(c) = conditions {
            let mut h = Hook::new(is_ignore);
            h.policy = Some((text(p, "/metadata/namespace"), text(p, "/metadata/name")));
            h.conditions = c.clone();
            fine.push(h);
            fine.last_mut().expect("just pushed")
        } else if is_ignore {
            &mut ignore
        } else {
            &mut fail
        };
        hook.rules.merge_policy(p, side, mapper, objects);
        let timeout = p
            .pointer("/spec/webhookConfiguration/timeoutSeconds")
            .or_else(|| p.pointer("/spec/webhookTimeoutSeconds"))
            .and_then(Value::as_i64);
        if let Some(t) = timeout {
            hook.timeout = hook.timeout.max(t);
        }
    }
    let (base, base_path) = match side {
        Side::Validate => ("validate.kyverno.svc", "/validate"),
        Side::Mutate => ("mutate.kyverno.svc", "/mutate"),
    };
    // Fine-grained ignore webhooks come before fine-grained fail ones (then all are
    // sorted by name).
    fine.sort_by_key(|h| !h.ignore);
    let mut out = Vec::new();
    for h in [ignore, fail].into_iter().chain(fine) {
        if h.rules.is_empty() {
            continue;
        }
        let fp = if h.ignore { "ignore" } else { "fail" };
        let mut name = format!("{base}-{fp}");
        let mut path = format!("{base_path}/{fp}");
        if let Some((ns, n)) = &h.policy {
            let key = |sep: &str| {
                if ns.is_empty() {
                    n.clone()
                } else {
                    format!("{ns}{sep}{n}")
                }
            };
            name = format!("{name}-finegrained-{}", key("-"));
            path = format!("{path}/finegrained/{}", key("/"));
        }
        let mut w = json!({"name": name, "clientConfig": client_config(&path),
            "rules": h.rules.rules(),
            "failurePolicy": if h.ignore { "Ignore" } else { "Fail" },
            "sideEffects": "NoneOnDryRun", "admissionReviewVersions": ["v1"],
            "namespaceSelector": config_namespace_selector(), "objectSelector": {},
            "timeoutSeconds": h.timeout.min(30), "matchPolicy": "Equivalent"});
        if !h.conditions.is_empty() {
            w["matchConditions"] = Value::Array(h.conditions);
        }
        if side == Side::Mutate {
            w["reinvocationPolicy"] = json!("IfNeeded");
        }
        out.push(w);
    }
    out
}

/// The webhooks of Kyverno's CEL policies (`buildWebhookRules`), with what of them is not
/// modelled.
struct Cel<'a> {
    objects: &'a [Value],
    features: Features,
    why: Option<String>,
}

/// The namespace and object selectors a CEL policy's webhook resolves to.
type Selectors = (Option<Value>, Option<Value>);

/// A CEL policy kind's webhook name and service path.
pub(super) struct Family {
    pub kinds: &'static [&'static str],
    pub name: &'static str,
    pub path: &'static str,
    /// Its webhooks' rules are left as built, not sorted and de-duplicated.
    pub unsorted: bool,
    /// Only the policies that pin digests get one (the image policies' mutating side).
    pub digest_only: bool,
}

const VALIDATING_FAMILIES: &[Family] = &[
    Family {
        kinds: &["ValidatingPolicy"],
        name: "vpol.validate.kyverno.svc",
        path: "/vpol",
        unsorted: false,
        digest_only: false,
    },
    Family {
        kinds: &["NamespacedValidatingPolicy"],
        name: "nvpol.validate.kyverno.svc",
        path: "/nvpol",
        unsorted: false,
        digest_only: false,
    },
    Family {
        kinds: &["GeneratingPolicy"],
        name: "gpol.validate.kyverno.svc",
        path: "/gpol",
        unsorted: false,
        digest_only: false,
    },
    Family {
        kinds: &["NamespacedGeneratingPolicy"],
        name: "ngpol.validate.kyverno.svc",
        path: "/ngpol",
        unsorted: false,
        digest_only: false,
    },
];

const MUTATING_FAMILIES: &[Family] = &[
    Family {
        kinds: &["MutatingPolicy"],
        name: "mpol.validate.kyverno.svc",
        path: "/mpol",
        unsorted: false,
        digest_only: false,
    },
    Family {
        kinds: &["NamespacedMutatingPolicy"],
        name: "nmpol.validate.kyverno.svc",
        path: "/nmpol",
        unsorted: false,
        digest_only: false,
    },
];

/// `NamedRuleWithOperations` → `RuleWithOperations`: resource names dropped.
fn resource_rules(policy: &Value, generating: bool) -> Vec<Value> {
    let rules = policy
        .pointer("/spec/matchConstraints/resourceRules")
        .and_then(Value::as_array);
    rules
        .into_iter()
        .flatten()
        .map(|r| {
            let mut r = r.clone();
            if let Some(m) = r.as_object_mut() {
                m.remove("resourceNames");
            }
            if generating {
                // All four operations, CONNECT included, for generate.
                r["operations"] = json!(ALL_OPERATIONS);
            }
            r
        })
        .collect()
}

/// `mergeLabelSelectors`.
fn merge_selectors(a: Option<&Value>, b: Option<&Value>) -> Option<Value> {
    let (a, b) = match (a.filter(|v| !v.is_null()), b.filter(|v| !v.is_null())) {
        (None, b) => return b.cloned(),
        (a, None) => return a.cloned(),
        (Some(a), Some(b)) => (a, b),
    };
    let mut labels = Map::new();
    let mut exprs = Vec::new();
    for s in [a, b] {
        if let Some(l) = s.get("matchLabels").and_then(Value::as_object) {
            labels.extend(l.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        exprs.extend(
            s.get("matchExpressions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .cloned(),
        );
    }
    let mut out = Map::new();
    if !labels.is_empty() {
        out.insert("matchLabels".into(), Value::Object(labels));
    }
    if !exprs.is_empty() {
        out.insert("matchExpressions".into(), Value::Array(exprs));
    }
    Some(Value::Object(out))
}

impl<'a> Cel<'a> {
    fn validating(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        for f in VALIDATING_FAMILIES.iter().chain(ivpol::VALIDATING) {
            out.extend(self.family(f));
        }
        out
    }

    fn mutating(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        for f in MUTATING_FAMILIES.iter().chain(ivpol::MUTATING) {
            out.extend(self.family(f));
        }
        // MutatingWebhooks are copied from validating ones field by field: no
        // `matchPolicy`, no `reinvocationPolicy` (the API server's defaults then).
        for w in &mut out {
            if let Some(m) = w.as_object_mut() {
                m.remove("matchPolicy");
            }
        }
        out
    }

    /// A webhook's rules: sorted and de-duplicated (`sortedRules(deDuplicatedRules(…))`),
    /// except for a family whose rules Kyverno leaves as built — modelled only when that
    /// order is the sorted one (an autogen copy's rules come in Go map order).
    fn rules(&mut self, f: &Family, rules: Vec<Value>) -> Vec<Value> {
        let sorted = sorted_rules(rules.clone());
        if f.unsorted && !ivpol::same_order(&rules, &sorted) {
            self.unmodelled(ivpol::UNSORTED);
        }
        sorted
    }

    fn unmodelled(&mut self, why: &str) {
        if self.why.is_none() {
            self.why = Some(why.to_string());
        }
    }

    fn failure_policy(&self, p: &Value) -> &'static str {
        if text(p, "/kind").ends_with("GeneratingPolicy") {
            return "Ignore";
        }
        if self.features.force_failure_ignore {
            return "Ignore";
        }
        if text(p, "/spec/failurePolicy") == "Ignore" {
            "Ignore"
        } else {
            "Fail"
        }
    }

    /// The policies of a family Kyverno's webhooks run.
    fn policies(&self, f: &Family) -> Vec<&'a Value> {
        let objects: &'a [Value] = self.objects;
        let mut ps: Vec<&'a Value> = objects
            .iter()
            .filter(|o| {
                f.kinds.contains(&text(o, "/kind").as_str())
                    && text(o, "/apiVersion").starts_with("policies.kyverno.io/")
                    && o.pointer("/spec/evaluation/admission/enabled")
                        .and_then(Value::as_bool)
                        != Some(false)
                    && !generated(o)
                    && (!f.digest_only || ivpol::pins_digests(o))
            })
            .collect();
        ps.sort_by_key(|p| (text(p, "/metadata/namespace"), text(p, "/metadata/name")));
        ps
    }

    fn namespace_selector(&self, p: &Value) -> Option<Value> {
        let ns = text(p, "/metadata/namespace");
        let cfg = config_namespace_selector();
        if !ns.is_empty() {
            let pinned = json!({"matchExpressions": [{"key": "kubernetes.io/metadata.name",
                "operator": "In", "values": [ns]}]});
            return merge_selectors(Some(&pinned), Some(&cfg));
        }
        merge_selectors(
            p.pointer("/spec/matchConstraints/namespaceSelector"),
            Some(&cfg),
        )
    }

    fn family(&mut self, f: &Family) -> Vec<Value> {
        let policies = self.policies(f);
        let generating = f.kinds[0].ends_with("GeneratingPolicy");
        let mut fine = Vec::new();
        let mut basic: Vec<&Value> = Vec::new();
        for p in policies {
            let conditions = p.pointer("/spec/matchConditions").and_then(Value::as_array);
            let valid = conditions.and_then(|c| vap::offloadable(c));
            let exact = text(p, "/spec/matchConstraints/matchPolicy") == "Exact";
            let timeout = p.pointer("/spec/webhookConfiguration/timeoutSeconds");
            if valid.is_none() && !exact && timeout.is_none() {
                basic.push(p);
                continue;
            }
            let mut kept = valid.unwrap_or_default();
            let sync = p
                .pointer("/spec/evaluation/synchronize/enabled")
                .and_then(Value::as_bool)
                == Some(true);
            if generating && sync {
                for c in &mut kept {
                    let e = text(c, "/expression");
                    c["expression"] = json!(format!("request.operation != 'CREATE' || ({e})"));
                }
            }
            let mut rules = resource_rules(p, generating);
            if !generating {
                if pods_only(p) {
                    kept = guarded(
                        "",
                        &["(object.apiVersion == 'v1' && object.kind =='Pod')"],
                        kept,
                    );
                }
                // A NamespacedImageValidatingPolicy's own webhook does not carry its
                // autogen copies (validating.go reads those of the cluster kind only).
                let copies = if ivpol::fine_grained_autogen(p) {
                    autogen_rules(p)
                } else {
                    Vec::new()
                };
                if !copies.is_empty() {
                    rules.extend(copies);
                    let validating = text(p, "/kind").ends_with("ValidatingPolicy");
                    match autogen_conditions(p) {
                        Some(extra) if validating => kept.extend(extra),
                        Some(extra) if extra.is_empty() => {}
                        // A MutatingPolicy's copies rewrite their conditions differently.
                        _ => self.unmodelled(
                            "match conditions of the fine-grained webhook of a MutatingPolicy with autogen",
                        ),
                    }
                }
            }
            let fp = self.failure_policy(p);
            let ns = text(p, "/metadata/namespace");
            let name = text(p, "/metadata/name");
            let qualified = if ns.is_empty() {
                name.clone()
            } else {
                format!("{ns}-{name}")
            };
            let mut w = json!({
                "name": format!("{}-{}-finegrained-{qualified}", f.name, fp.to_lowercase()),
                "clientConfig": client_config(&format!("{}/{name}", f.path)),
                "failurePolicy": fp, "sideEffects": "NoneOnDryRun",
                "admissionReviewVersions": ["v1"],
                "rules": self.rules(f, rules)});
            if !kept.is_empty() {
                w["matchConditions"] = Value::Array(kept);
            }
            if exact {
                w["matchPolicy"] = json!("Exact");
            }
            if let Some(t) = timeout {
                w["timeoutSeconds"] = t.clone();
            }
            if let Some(s) = self.namespace_selector(p) {
                w["namespaceSelector"] = s;
            }
            if let Some(s) = p.pointer("/spec/matchConstraints/objectSelector") {
                w["objectSelector"] = s.clone();
            }
            fine.push(w);
        }
        let mut out = fine;
        out.extend(self.basic(f, &basic, generating));
        out
    }

    /// The shared webhooks of the policies without a webhook of their own, one pair per
    /// namespace/object selectors they resolve to (`groupBySelectors`).
    fn basic(&mut self, f: &Family, basic: &[&Value], generating: bool) -> Vec<Value> {
        let mut groups: Vec<(Selectors, Vec<&Value>)> = Vec::new();
        for p in basic {
            let key = (
                self.namespace_selector(p),
                p.pointer("/spec/matchConstraints/objectSelector").cloned(),
            );
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, ps)) => ps.push(p),
                None => groups.push((key, vec![p])),
            }
        }
        if groups.len() > 1 {
            // Their names carry a digest of the selectors.
            self.unmodelled("names of the webhooks of CEL policies with differing selectors");
        }
        let mut out = Vec::new();
        for ((ns_sel, obj_sel), ps) in groups {
            let mut names: Vec<String> = ps.iter().map(|p| text(p, "/metadata/name")).collect();
            names.sort();
            let path = format!("{}/{}", f.path, names.join("/"));
            let (mut fail, mut ignore) = (Vec::new(), Vec::new());
            for p in ps {
                // Only these kinds' shared webhooks carry their autogen copies' rules.
                let mut rules = match text(p, "/kind").as_str() {
                    "ValidatingPolicy"
                    | "MutatingPolicy"
                    | "NamespacedMutatingPolicy"
                    | "ImageValidatingPolicy"
                    | "NamespacedImageValidatingPolicy" => autogen_rules(p),
                    _ => Vec::new(),
                };
                rules.extend(resource_rules(p, generating));
                if self.failure_policy(p) == "Ignore" {
                    ignore.extend(rules);
                } else {
                    fail.extend(rules);
                }
            }
            for (fp, rules) in [("Fail", fail), ("Ignore", ignore)] {
                if rules.is_empty() {
                    continue;
                }
                let mut w = json!({"name": format!("{}-{}", f.name, fp.to_lowercase()),
                    "clientConfig": client_config(&path), "failurePolicy": fp,
                    "sideEffects": "NoneOnDryRun", "admissionReviewVersions": ["v1"],
                    "rules": self.rules(f, rules)});
                if let Some(s) = &ns_sel {
                    w["namespaceSelector"] = s.clone();
                }
                if let Some(s) = &obj_sel {
                    w["objectSelector"] = s.clone();
                }
                out.push(w);
            }
        }
        out
    }
}

/// A ValidatingPolicy or MutatingPolicy left to the admission policy generated from it
/// (`status.generated`): its webhook is not made.
fn generated(p: &Value) -> bool {
    !text(p, "/kind").ends_with("GeneratingPolicy")
        && p.pointer("/status/generated").and_then(Value::as_bool) == Some(true)
}

#[cfg(test)]
#[path = "webhooks_tests.rs"]
mod tests;

//! One `generate` rule applied to a trigger that the rule already matched: the objects
//! Kyverno's background controller would create from `data`, `clone` or `cloneList`
//! (and `foreach` of those), with variables substituted and Kyverno's ownership labels.
//! It does not match rules, evaluate rule-level preconditions or simulate
//! `synchronize`/`generateExisting`, which only change later background behaviour.

use std::cell::RefCell;

use serde_json::{Map, Value, json};

use super::background::Access;
use super::entries::{self, Options};
use super::matching::{SelectorError, selector_matches};
use super::mutate::{context_failure, foreach_elements};
use super::outcome::Outcome;
use super::rule::Rule;
use super::{Context, conditions, vars};
use crate::offline::labels::labels_of;

pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
pub const CLONE_SOURCE: &str = "generate.kyverno.io/clone-source";
pub const POLICY_NAME: &str = "generate.kyverno.io/policy-name";
pub const POLICY_NAMESPACE: &str = "generate.kyverno.io/policy-namespace";
pub const RULE_NAME: &str = "generate.kyverno.io/rule-name";
pub const TRIGGER_UID: &str = "generate.kyverno.io/trigger-uid";
pub const TRIGGER_NAMESPACE: &str = "generate.kyverno.io/trigger-namespace";
pub const TRIGGER_KIND: &str = "generate.kyverno.io/trigger-kind";
pub const TRIGGER_GROUP: &str = "generate.kyverno.io/trigger-group";
pub const TRIGGER_VERSION: &str = "generate.kyverno.io/trigger-version";
pub const SOURCE_GROUP: &str = "generate.kyverno.io/source-group";
pub const SOURCE_VERSION: &str = "generate.kyverno.io/source-version";
pub const SOURCE_KIND: &str = "generate.kyverno.io/source-kind";
pub const SOURCE_NAMESPACE: &str = "generate.kyverno.io/source-namespace";
pub const SOURCE_UID: &str = "generate.kyverno.io/source-uid";

/// Why one generate pattern produced nothing (a rule error).
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error("variable substitution failed in {at}: {source}")]
    Substitution {
        at: String,
        #[source]
        source: vars::VarError,
    },
    #[error("{0} may use only one of data, clone and cloneList")]
    SeveralSources(String),
    #[error("{0}.data must be a map")]
    DataNotMap(String),
    #[error(
        "clone source {0} does not exist (in a kyverno test, list it in resources or cloneSourceResource)"
    )]
    NoCloneSource(String),
    #[error(transparent)]
    Selector(#[from] SelectorError),
}

/// A pattern that fails is a rule error.
impl From<GenerateError> for Outcome {
    fn from(e: GenerateError) -> Outcome {
        Outcome::error(e.to_string())
    }
}

/// The objects the rule generates for `trigger`. `cluster` is what already exists: clone
/// sources, and targets that a non-synchronized rule leaves alone. An `Err` is the rule's
/// outcome: a skip (a context entry the offline engine cannot load) or a rule error.
pub fn apply_rule(
    rule: &Value,
    trigger: &Value,
    ctx: &Context,
    cluster: &[Value],
) -> Result<Vec<Value>, Outcome> {
    apply_rule_as(&Rule::decode(rule), trigger, ctx, cluster, None).map(|g| g.objects)
}

/// What the background controller made of one rule: the objects it could create, and
/// why it could not create the others (the failed UpdateRequest's reasons).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Generated {
    pub objects: Vec<Value>,
    pub refused: Vec<String>,
}

/// [`apply_rule`] as the background controller runs it with `access`'s permissions: a
/// clone source it may not read, or a target it may not read and create, produces
/// nothing and a reason in [`Generated::refused`]. `None` assumes every permission (the
/// kyverno CLI's view).
pub fn apply_rule_as(
    rule: &Rule,
    trigger: &Value,
    ctx: &Context,
    cluster: &[Value],
    access: Option<&Access>,
) -> Result<Generated, Outcome> {
    let generate = rule
        .generate
        .as_ref()
        .filter(|g| g.is_object())
        .ok_or("the rule has no generate block")?;
    let rule_name = rule.name.as_str();
    let synchronize = generate
        .get("synchronize")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let run = Run {
        rule_name,
        trigger,
        cluster,
        synchronize,
        access,
        refused: RefCell::new(Vec::new()),
    };
    let generated = |objects: Vec<Value>| Generated {
        objects,
        refused: run.refused.borrow().clone(),
    };
    let foreach = generate
        .get("foreach")
        .and_then(Value::as_array)
        .filter(|f| !f.is_empty());
    let Some(foreach) = foreach else {
        return Ok(generated(run.pattern(generate, ctx, "generate")?));
    };
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (i, entry) in foreach.iter().enumerate() {
        let at = format!("generate.foreach[{i}]");
        match run.foreach_entry(entry, ctx, &at) {
            Ok(objects) => out.extend(objects),
            Err(e) => errors.push(e),
        }
    }
    joined(out, errors).map(generated)
}

/// The objects, or the failures of a foreach: the first skip stands for the rule (the
/// engine could not evaluate it), else every error in one message.
fn joined(out: Vec<Value>, errors: Vec<Outcome>) -> Result<Vec<Value>, Outcome> {
    if errors.is_empty() {
        return Ok(out);
    }
    if let Some(skip) = errors.iter().find(|e| e.is_skip()) {
        return Err(skip.clone());
    }
    let messages: Vec<String> = errors.into_iter().map(|e| e.message).collect();
    Err(Outcome::error(messages.join("; ")))
}

/// Adds the policy labels Kyverno puts on every generated object; `apply_rule` cannot,
/// as it sees only the rule.
pub fn add_policy_labels(object: &mut Value, policy_name: &str, policy_namespace: &str) {
    set_label(object, POLICY_NAME, policy_name);
    set_label(object, POLICY_NAMESPACE, policy_namespace);
}

struct Run<'a> {
    rule_name: &'a str,
    trigger: &'a Value,
    cluster: &'a [Value],
    synchronize: bool,
    /// The background controller's permissions; `None` allows everything.
    access: Option<&'a Access>,
    /// Why objects were not generated (permissions), in the controller's words.
    refused: RefCell<Vec<String>>,
}

impl Run<'_> {
    fn foreach_entry(&self, entry: &Value, ctx: &Context, at: &str) -> Result<Vec<Value>, Outcome> {
        let expr = entry
            .get("list")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{at} has no list expression"))?;
        let elements = foreach_elements(expr, ctx)
            .map_err(|e| format!("failed to evaluate {at}.list {expr}: {e}"))?;
        let opts = Options {
            cluster: std::sync::Arc::new(self.cluster.to_vec()),
            ..Options::default()
        };
        let mut out = Vec::new();
        let mut errors = Vec::new();
        for (index, element) in elements.iter().enumerate() {
            if element.is_null() {
                continue;
            }
            let mut el_ctx = ctx.with_element(element, index);
            el_ctx.add_variable("element0", element.clone());
            el_ctx.add_variable("elementIndex0", json!(index));
            if let Err(o) = entries::load_context(entry, &mut el_ctx, &opts, None) {
                errors.push(context_failure(o, index));
                continue;
            }
            if let Some(pre) = entry.get("preconditions").filter(|p| !p.is_null()) {
                match conditions::evaluate_preconditions(pre, &el_ctx) {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(e) => {
                        errors.push(Outcome::error(format!(
                            "failed to evaluate {at}.preconditions for element {index}: {e}"
                        )));
                        continue;
                    }
                }
            }
            match self.pattern(entry, &el_ctx, at) {
                Ok(objects) => out.extend(objects),
                Err(e) => errors.push(Outcome::error(format!("element {index}: {e}"))),
            }
        }
        joined(out, errors)
    }

    /// One generate pattern: target identity plus `data`, `clone` or `cloneList`.
    fn pattern(
        &self,
        pattern: &Value,
        ctx: &Context,
        at: &str,
    ) -> Result<Vec<Value>, GenerateError> {
        let mut fields = Map::new();
        for key in [
            "apiVersion",
            "kind",
            "name",
            "namespace",
            "data",
            "clone",
            "cloneList",
        ] {
            if let Some(v) = pattern.get(key) {
                fields.insert(key.into(), v.clone());
            }
        }
        let resolved = vars::substitute(&Value::Object(fields), ctx).map_err(|source| {
            GenerateError::Substitution {
                at: at.to_string(),
                source,
            }
        })?;
        let target = Target::from(&resolved);
        let clone_name = str_at(&resolved, "/clone/name");
        let clone_kinds: Vec<&str> = resolved
            .pointer("/cloneList/kinds")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let has_data = resolved.get("data").is_some_and(|d| !d.is_null());
        let sources = [has_data, !clone_name.is_empty(), !clone_kinds.is_empty()];
        if sources.iter().filter(|s| **s).count() > 1 {
            // Kyverno refuses such a policy outright; it would never reach a trigger.
            return Err(GenerateError::SeveralSources(at.to_string()));
        }
        if !clone_name.is_empty() {
            let source = Target {
                api_version: target.api_version.clone(),
                kind: target.kind.clone(),
                namespace: str_at(&resolved, "/clone/namespace").to_string(),
                name: clone_name.to_string(),
            };
            return Ok(self.clone_one(&source, &target)?.into_iter().collect());
        }
        if !clone_kinds.is_empty() {
            return self.clone_list(&resolved, &clone_kinds, &target.namespace);
        }
        // Kyverno hands an absent `data` on as an empty object (a typed nil in Go), so the
        // rule still creates the bare apiVersion/kind/name/namespace.
        let empty = Map::new();
        let data = match resolved.get("data") {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(d)) => d,
            Some(_) => return Err(GenerateError::DataNotMap(at.to_string())),
        };
        if self.exists(&target) && !self.synchronize {
            return Ok(Vec::new());
        }
        if !self.may_write(&target) {
            return Ok(Vec::new());
        }
        let mut object = Value::Object(data.clone());
        target.stamp(&mut object);
        self.label(&mut object);
        Ok(vec![object])
    }

    /// Whether the controller may read the clone source; records the refusal.
    fn may_read_source(&self, source: &Target, target: &Target) -> bool {
        let Some(access) = self.access else {
            return true;
        };
        match access.refusal(
            "get",
            &source.api_version,
            &source.kind,
            &source.namespace,
            &source.name,
        ) {
            None => true,
            Some(why) => {
                self.refuse(format!(
                    "source resource {} not found: {why}",
                    target.spec_string()
                ));
                false
            }
        }
    }

    /// Whether the controller may read and then create the target; records the refusal.
    fn may_write(&self, target: &Target) -> bool {
        let Some(access) = self.access else {
            return true;
        };
        let t = target;
        if let Some(why) = access.refusal("get", &t.api_version, &t.kind, &t.namespace, &t.name) {
            self.refuse(format!(
                "failed to get target resource {}: {why}",
                t.spec_string()
            ));
            return false;
        }
        if let Some(why) = access.refusal("create", &t.api_version, &t.kind, &t.namespace, &t.name)
        {
            self.refuse(why);
            return false;
        }
        true
    }

    fn refuse(&self, why: String) {
        self.refused
            .borrow_mut()
            .push(format!("rule {} failed: {why}", self.rule_name));
    }

    fn clone_one(&self, source: &Target, target: &Target) -> Result<Option<Value>, GenerateError> {
        if source.namespace == target.namespace && source.name == target.name {
            return Ok(None);
        }
        if !self.may_read_source(source, target) {
            return Ok(None);
        }
        let found = self
            .cluster
            .iter()
            .find(|o| source.identifies(o))
            .ok_or_else(|| GenerateError::NoCloneSource(source.describe()))?;
        if self.exists(target) && !self.synchronize {
            return Ok(None);
        }
        if !self.may_write(target) {
            return Ok(None);
        }
        let mut object = found.clone();
        if let Some(Value::Object(meta)) = object.get_mut("metadata") {
            for key in [
                "uid",
                "selfLink",
                "creationTimestamp",
                "managedFields",
                "resourceVersion",
                "generation",
            ] {
                meta.shift_remove(key);
            }
            if source.namespace != target.namespace {
                meta.shift_remove("ownerReferences");
            }
        }
        if let Value::Object(o) = &mut object {
            o.shift_remove("status");
        }
        set_label(&mut object, CLONE_SOURCE, "");
        source_labels(&mut object, found);
        target.stamp(&mut object);
        self.label(&mut object);
        Ok(Some(object))
    }

    fn clone_list(
        &self,
        resolved: &Value,
        kinds: &[&str],
        target_namespace: &str,
    ) -> Result<Vec<Value>, GenerateError> {
        let source_namespace = str_at(resolved, "/cloneList/namespace");
        let selector = resolved
            .pointer("/cloneList/selector")
            .filter(|s| !s.is_null());
        let mut out = Vec::new();
        for gvk in kinds {
            let (api_version, kind) = split_gvk(gvk);
            for source in self.cluster {
                if source.get("kind").and_then(Value::as_str) != Some(kind)
                    || (!api_version.is_empty() && str_at(source, "/apiVersion") != api_version)
                    || str_at(source, "/metadata/namespace") != source_namespace
                {
                    continue;
                }
                if let Some(selector) = selector {
                    let labels = labels_of(source);
                    if !selector_matches(selector, &labels)? {
                        continue;
                    }
                }
                if source_namespace == target_namespace {
                    continue;
                }
                let from = Target::identity_of(source);
                let to = Target {
                    namespace: target_namespace.to_string(),
                    ..from.clone()
                };
                out.extend(self.clone_one(&from, &to)?);
            }
        }
        Ok(out)
    }

    fn exists(&self, target: &Target) -> bool {
        self.cluster.iter().any(|o| target.identifies(o))
    }

    fn label(&self, object: &mut Value) {
        let (group, version) = match str_at(self.trigger, "/apiVersion").rsplit_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (
                String::new(),
                str_at(self.trigger, "/apiVersion").to_string(),
            ),
        };
        set_label(object, MANAGED_BY, "kyverno");
        set_label(object, RULE_NAME, self.rule_name);
        set_label(object, TRIGGER_GROUP, &group);
        set_label(object, TRIGGER_VERSION, &version);
        set_label(object, TRIGGER_KIND, str_at(self.trigger, "/kind"));
        set_label(
            object,
            TRIGGER_NAMESPACE,
            str_at(self.trigger, "/metadata/namespace"),
        );
        set_label(object, TRIGGER_UID, str_at(self.trigger, "/metadata/uid"));
    }
}

/// Where a generated object goes (or where a clone comes from).
#[derive(Debug, Clone)]
struct Target {
    api_version: String,
    kind: String,
    namespace: String,
    name: String,
}

impl Target {
    /// The target named by a resolved generate pattern.
    fn from(resolved: &Value) -> Self {
        Target::read(resolved, "/namespace", "/name")
    }

    /// The identity of an existing object.
    fn identity_of(object: &Value) -> Self {
        Target::read(object, "/metadata/namespace", "/metadata/name")
    }

    fn read(v: &Value, namespace: &str, name: &str) -> Self {
        Target {
            api_version: str_at(v, "/apiVersion").to_string(),
            kind: str_at(v, "/kind").to_string(),
            namespace: str_at(v, namespace).to_string(),
            name: str_at(v, name).to_string(),
        }
    }

    fn identifies(&self, object: &Value) -> bool {
        str_at(object, "/kind") == self.kind
            && (self.api_version.is_empty() || str_at(object, "/apiVersion") == self.api_version)
            && str_at(object, "/metadata/namespace") == self.namespace
            && str_at(object, "/metadata/name") == self.name
    }

    /// Kyverno's `ResourceSpec.String()`: `apiVersion/kind/namespace/name`.
    fn spec_string(&self) -> String {
        [
            self.api_version.as_str(),
            &self.kind,
            &self.namespace,
            &self.name,
        ]
        .join("/")
    }

    fn describe(&self) -> String {
        let ns = if self.namespace.is_empty() {
            String::new()
        } else {
            format!("{}/", self.namespace)
        };
        format!("{} {} {ns}{}", self.api_version, self.kind, self.name)
            .trim_start()
            .to_string()
    }

    /// The rule decides identity: its apiVersion, kind (when the data has none), name
    /// and namespace override whatever the data or clone source said.
    fn stamp(&self, object: &mut Value) {
        let Value::Object(o) = object else {
            return;
        };
        if !self.api_version.is_empty() {
            o.insert("apiVersion".into(), json!(self.api_version));
        }
        if o.get("kind")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            o.insert("kind".into(), json!(self.kind));
        }
        let meta = o
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        let meta = meta.as_object_mut().expect("made an object above");
        meta.insert("name".into(), json!(self.name));
        if self.namespace.is_empty() {
            meta.shift_remove("namespace");
        } else {
            meta.insert("namespace".into(), json!(self.namespace));
        }
    }
}

/// The labels by which Kyverno finds a clone's targets when its source changes
/// (pkg/background/generate/source.go `addSourceLabels`): the source's group, version,
/// kind, namespace and uid.
fn source_labels(object: &mut Value, source: &Value) {
    let api_version = str_at(source, "/apiVersion");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let labels = [
        (SOURCE_GROUP, group),
        (SOURCE_VERSION, version),
        (SOURCE_KIND, str_at(source, "/kind")),
        (SOURCE_NAMESPACE, str_at(source, "/metadata/namespace")),
        (SOURCE_UID, str_at(source, "/metadata/uid")),
    ];
    for (key, value) in labels {
        set_label(object, key, value);
    }
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// `v1/Secret`, `apps/v1/Deployment` or a bare `Secret` (any version).
fn split_gvk(gvk: &str) -> (&str, &str) {
    match gvk.rsplit_once('/') {
        Some((api_version, kind)) => (api_version, kind),
        None => ("", gvk),
    }
}

fn set_label(object: &mut Value, key: &str, value: &str) {
    let Value::Object(o) = object else {
        return;
    };
    let meta = o
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(meta) = meta else {
        return;
    };
    let labels = meta
        .entry("labels")
        .or_insert_with(|| Value::Object(Map::new()));
    if !labels.is_object() {
        *labels = Value::Object(Map::new());
    }
    labels
        .as_object_mut()
        .expect("made an object above")
        .insert(key.into(), json!(value));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offline::kyverno::Request;

    fn ns(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "uid": "u-1"}})
    }

    fn ctx_for(object: &Value) -> Context {
        Context::from_request(&Request {
            object: object.clone(),
            ..Request::default()
        })
    }

    fn secret(ns: &str, name: &str, labels: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
               "metadata": {"name": name, "namespace": ns, "labels": labels, "uid": "s-1", "resourceVersion": "9"},
               "data": {"password": "cGFzcw=="}})
    }

    /// Drops Kyverno's bookkeeping labels, as `kyverno test` does before comparing.
    fn without_generate_labels(mut v: Value) -> Value {
        if let Some(Value::Object(labels)) = v.pointer_mut("/metadata/labels") {
            labels.retain(|k, _| !k.starts_with("generate.kyverno.io/") && k != MANAGED_BY);
            if labels.is_empty() {
                v["metadata"]
                    .as_object_mut()
                    .unwrap()
                    .shift_remove("labels");
            }
        }
        v
    }

    #[test]
    fn generate_kinds() {
        let trigger = ns("team-a");
        let cluster = vec![
            secret("default", "regcred", json!({"allowedToBeCloned": "true"})),
            secret("default", "other", json!({})),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default", "labels": {"allowedToBeCloned": "true"}}, "data": {"a": "b"}}),
        ];
        let cases: Vec<(&str, Value, Vec<Value>)> = vec![
            (
                "data with variables",
                json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "name": "default-deny",
                       "namespace": "{{request.object.metadata.name}}",
                       "data": {"spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}}),
                vec![
                    json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                            "metadata": {"name": "default-deny", "namespace": "team-a"},
                            "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}),
                ],
            ),
            (
                "clone strips server fields",
                json!({"apiVersion": "v1", "kind": "Secret", "name": "regcred",
                       "namespace": "{{request.object.metadata.name}}",
                       "clone": {"namespace": "default", "name": "regcred"}}),
                vec![
                    json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                            "metadata": {"name": "regcred", "namespace": "team-a", "labels": {"allowedToBeCloned": "true"}},
                            "data": {"password": "cGFzcw=="}}),
                ],
            ),
            (
                "cloneList by kinds and selector",
                json!({"namespace": "{{request.object.metadata.name}}",
                       "cloneList": {"namespace": "default", "kinds": ["v1/Secret", "v1/ConfigMap"],
                                     "selector": {"matchLabels": {"allowedToBeCloned": "true"}}}}),
                vec![
                    json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                           "metadata": {"name": "regcred", "namespace": "team-a", "labels": {"allowedToBeCloned": "true"}},
                           "data": {"password": "cGFzcw=="}}),
                    json!({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "cm", "namespace": "team-a", "labels": {"allowedToBeCloned": "true"}},
                           "data": {"a": "b"}}),
                ],
            ),
            (
                "no data generates the bare object",
                json!({"apiVersion": "foo/v1", "kind": "Foo", "name": "foo-{{request.object.metadata.name}}", "namespace": "team-a"}),
                vec![
                    json!({"apiVersion": "foo/v1", "kind": "Foo", "metadata": {"name": "foo-team-a", "namespace": "team-a"}}),
                ],
            ),
        ];
        for (name, generate, want) in cases {
            let rule = json!({"name": "r", "generate": generate});
            let got = apply_rule(&rule, &trigger, &ctx_for(&trigger), &cluster)
                .unwrap_or_else(|e| panic!("{name}: {}", e.message));
            let got: Vec<Value> = got.into_iter().map(without_generate_labels).collect();
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn generated_objects_carry_kyverno_labels() {
        let trigger = ns("team-a");
        let rule = json!({"name": "r", "generate": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c",
                                                    "namespace": "team-a", "data": {"data": {"k": "v"}}}});
        let mut got = apply_rule(&rule, &trigger, &ctx_for(&trigger), &[]).unwrap();
        add_policy_labels(&mut got[0], "p", "");
        let labels = got[0].pointer("/metadata/labels").unwrap();
        assert_eq!(labels[MANAGED_BY], json!("kyverno"));
        assert_eq!(labels["generate.kyverno.io/policy-name"], json!("p"));
        assert_eq!(labels["generate.kyverno.io/rule-name"], json!("r"));
        assert_eq!(
            labels["generate.kyverno.io/trigger-kind"],
            json!("Namespace")
        );
        assert_eq!(labels["generate.kyverno.io/trigger-version"], json!("v1"));
        assert_eq!(labels["generate.kyverno.io/trigger-uid"], json!("u-1"));
    }

    #[test]
    fn existing_target_is_left_alone_without_synchronize() {
        let trigger = ns("team-a");
        let existing = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "team-a"}});
        let mut rule = json!({"name": "r", "generate": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c",
                                                        "namespace": "team-a", "data": {"data": {"k": "v"}}}});
        let got = apply_rule(
            &rule,
            &trigger,
            &ctx_for(&trigger),
            std::slice::from_ref(&existing),
        )
        .unwrap();
        assert!(got.is_empty());
        rule["generate"]["synchronize"] = json!(true);
        let got = apply_rule(&rule, &trigger, &ctx_for(&trigger), &[existing]).unwrap();
        assert_eq!(got.len(), 1);
    }

    #[test]
    fn data_and_clone_together_are_refused() {
        let trigger = ns("team-a");
        let rule = json!({"name": "r", "generate": {"apiVersion": "v1", "kind": "Secret", "name": "s",
                                                    "namespace": "team-a", "data": {"data": {}},
                                                    "clone": {"namespace": "default", "name": "regcred"}}});
        let err = apply_rule(&rule, &trigger, &ctx_for(&trigger), &[])
            .unwrap_err()
            .message;
        assert!(
            err.contains("only one of data, clone and cloneList"),
            "{err}"
        );
    }

    #[test]
    fn missing_clone_source_is_an_error() {
        let trigger = ns("team-a");
        let rule = json!({"name": "r", "generate": {"apiVersion": "v1", "kind": "Secret", "name": "s",
                                                    "namespace": "team-a", "clone": {"namespace": "default", "name": "nope"}}});
        let err = apply_rule(&rule, &trigger, &ctx_for(&trigger), &[])
            .unwrap_err()
            .message;
        assert!(err.contains("default/nope"), "{err}");
    }

    #[test]
    fn foreach_generates_per_element() {
        let trigger = json!({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "list", "namespace": "default"},
                             "data": {"namespaces": "a,b"}});
        let rule = json!({"name": "r", "generate": {"foreach": [{
            "list": "request.object.data.namespaces | split(@, ',')",
            "apiVersion": "v1", "kind": "ConfigMap", "name": "copy", "namespace": "{{element}}",
            "data": {"data": {"from": "{{request.object.metadata.name}}"}}
        }]}});
        let got = apply_rule(&rule, &trigger, &ctx_for(&trigger), &[]).unwrap();
        let namespaces: Vec<&str> = got
            .iter()
            .map(|o| {
                o.pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap()
            })
            .collect();
        assert_eq!(namespaces, ["a", "b"]);
    }
}

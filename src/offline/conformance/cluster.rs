//! The simulated cluster a conformance test runs against: an object set, and what the API
//! server with Kyverno 1.19 does to a request — the policy webhook's checks when a policy
//! is created, then admission (MutatingPolicies and Kyverno's mutate rules, then
//! ValidatingAdmissionPolicies, ValidatingPolicies and Kyverno's validate rules), and
//! what the background controller does at once offline (generate rules, GeneratingPolicies,
//! mutate-existing targets).

mod apiserver;
mod background;
mod cel_background;
mod finalizers;
mod gctx;
mod gpol_compile;
mod ivpol;
pub(crate) use ivpol::is_image_policy as ivpol_kind;
pub(crate) mod kindstate;
pub(crate) mod map;
mod requester;
pub mod schema;
mod ssa;
pub use requester::Requester;
mod subresource;
mod webhook;
mod webhook_text;
use webhook_text::{blocked, emitted_warnings};

use std::sync::Arc;

use serde_json::{Map, Value, json};

use background::Writer;

use super::Skip;
use crate::offline::kyverno::{self, RuleKind, RuleStatus, validation};
use crate::offline::rbac::Authorizer;
use crate::offline::rbac::resource::Mapper;
use crate::offline::vap;

/// The namespaces a kind cluster with Kyverno has before a test starts.
const BASE_NAMESPACES: &[&str] = &[
    "default",
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "kyverno",
];

/// What the API server answered a write.
#[derive(Debug, Clone)]
pub enum Answer {
    /// Stored (the object as stored).
    Ok,
    /// Refused, with the message `kubectl` shows.
    Refused(String),
    /// The outcome depends on something the replay cannot decide.
    Undecidable(Skip),
}

#[derive(Clone)]
pub struct Cluster {
    pub objects: Vec<Value>,
    /// The test's namespace (where namespaced objects without one go).
    pub namespace: String,
    /// Kyverno's background controller made or changed an object at some point (its
    /// policy may be gone since).
    pub made_in_background: bool,
    /// A generate rule or a GeneratingPolicy has had an UpdateRequest (the background
    /// controller processed one: its failures are `kyverno-generate` events).
    pub update_requests: bool,
    /// Downstreams of synchronized GeneratingPolicies, as made.
    watched: Vec<cel_background::Watched>,
    uid: u64,
    /// Kyverno runs with `--enablePolicyException=false`: CEL PolicyExceptions are inert.
    pub exceptions_disabled: bool,
    /// The Kyverno features the test's configuration turns on.
    pub features: super::controllers::Features,
    /// The ephemeral reports admission left (merged into policy reports when asserted).
    pub reports: super::controllers::reports::Admissions,
    /// The last write's refusal names rules whose message is kca's, not Kyverno's words
    /// (which ones): its text must not be judged.
    pub unworded: Option<String>,
    /// The last write was refused by a CRD's schema: the status's causes, which kubectl
    /// words its own way.
    pub invalid: Option<schema::Invalid>,
    /// The warnings the last write's admission returned (kubectl prints them).
    pub warnings: validation::Warned,
    /// Who the current request comes from (`kubectl --as`; the admin otherwise).
    pub requester: requester::Requester,
    /// Kyverno's `resourceFilters`, parsed once per value of its ConfigMap's key.
    resource_filters: super::controllers::filters::Cache,
    /// What the background controller last server-side applied to each object.
    applied: ssa::Applied,
}

impl Cluster {
    pub fn new(namespace: &str) -> Cluster {
        let mut c = Cluster {
            objects: Vec::new(),
            namespace: namespace.to_string(),
            made_in_background: false,
            update_requests: false,
            watched: Vec::new(),
            uid: 0,
            exceptions_disabled: false,
            features: Default::default(),
            reports: Default::default(),
            unworded: None,
            invalid: None,
            warnings: Default::default(),
            requester: Default::default(),
            resource_filters: Default::default(),
            applied: Default::default(),
        };
        for ns in BASE_NAMESPACES.iter().copied().chain([namespace]) {
            if c.find(&namespace_ref(ns)).is_none() {
                let obj = json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}}});
                c.store(obj);
            }
        }
        for obj in super::controllers::initial_objects() {
            c.store(obj);
        }
        c
    }

    pub(crate) fn mapper(&self) -> Mapper {
        Mapper::built_in().with_crds(&self.objects)
    }

    /// Whether `kind` in `api_version` is namespaced; `None` when discovery does not know it.
    pub fn namespaced(&self, api_version: &str, kind: &str) -> Option<bool> {
        self.mapper()
            .for_kind(api_version, kind)
            .map(|r| r.namespaced)
    }

    /// The object's namespace filled in (the test's namespace) or taken away (a
    /// cluster-scoped kind), as `kubectl`/Chainsaw send it.
    pub fn place(&self, obj: &mut Value) -> Result<(), Skip> {
        let (av, kind) = (text(obj, "/apiVersion"), text(obj, "/kind"));
        let Some(namespaced) = self.namespaced(&av, &kind) else {
            return Err(Skip::UnknownKind(format!("{av} {kind}")));
        };
        let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
            return Ok(());
        };
        if namespaced {
            if meta
                .get("namespace")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                meta.insert("namespace".into(), json!(self.namespace));
            }
        } else {
            meta.remove("namespace");
        }
        Ok(())
    }

    pub fn find(&self, key: &Key) -> Option<&Value> {
        self.objects.iter().find(|o| key.is_of(o))
    }

    /// The objects of `key`'s kind (and namespace, when given) — what a list returns.
    pub fn list<'a>(&'a self, key: &'a Key) -> impl Iterator<Item = &'a Value> + 'a {
        self.objects.iter().filter(move |o| {
            let k = Key::of(o);
            k.group == key.group
                && k.kind == key.kind
                && (key.namespace.is_empty() || k.namespace == key.namespace)
        })
    }

    /// Stores what Kyverno's background controller made: server-side applied over the
    /// object of its key when the policy asks for it (see [`ssa`]), else replacing it.
    pub(super) fn store_made(&mut self, obj: Value, server_side: bool) {
        if !server_side {
            return self.store(obj);
        }
        let key = Key::of(&obj);
        let merged = match self.find(&key) {
            Some(current) => {
                let last = self.applied.last(&text(current, "/metadata/uid"));
                ssa::apply(current, &obj, last)
            }
            None => obj.clone(),
        };
        self.store(merged);
        if let Some(uid) = self.find(&key).map(|o| text(o, "/metadata/uid")) {
            self.applied.record(&uid, obj);
        }
    }

    /// Stores `obj`, replacing the object of its key; sets what the API server sets.
    pub fn store(&mut self, obj: Value) {
        self.store_as(obj, None);
    }

    /// [`Cluster::store`] of a new object under the uid admission already gave it.
    fn store_as(&mut self, mut obj: Value, given: Option<Value>) {
        apiserver::decoded(&mut obj);
        let key = Key::of(&obj);
        let old = self.objects.iter().position(|o| key.is_of(o));
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            let uid = match (
                old.and_then(|i| self.objects[i].pointer("/metadata/uid")),
                given,
            ) {
                (Some(u), _) => u.clone(),
                (None, Some(u)) => u,
                (None, None) => self.new_uid(),
            };
            meta.insert("uid".into(), uid);
            if key.kind == "Namespace" {
                let labels = meta
                    .entry("labels")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Some(l) = labels.as_object_mut() {
                    l.insert("kubernetes.io/metadata.name".into(), json!(key.name));
                }
            }
        }
        super::controllers::generation(old.map(|i| &self.objects[i]), &mut obj);
        match old {
            Some(i) => self.objects[i] = obj,
            None => self.objects.push(obj),
        }
    }

    fn new_uid(&mut self) -> Value {
        self.uid += 1;
        json!(format!("00000000-0000-0000-0000-{:012}", self.uid))
    }

    /// Removes the object, and a Namespace's objects with it.
    pub fn remove(&mut self, key: &Key) {
        self.objects.retain(|o| {
            let k = Key::of(o);
            k != *key && !(key.kind == "Namespace" && k.namespace == key.name)
        });
    }

    /// A new request starts: what the last one's answer said is gone.
    fn forget_last_answer(&mut self) {
        self.unworded = None;
        self.invalid = None;
        self.warnings = Default::default();
    }

    /// `kubectl apply` (`create_only`: `kubectl create`) of one object.
    pub fn apply(&mut self, obj: &Value, create_only: bool) -> Answer {
        self.forget_last_answer();
        let mut obj = obj.clone();
        if let Err(skip) = self.place(&mut obj) {
            return Answer::Undecidable(skip);
        }
        name_generated(&mut obj, &mut self.uid);
        let key = Key::of(&obj);
        let old = self.find(&key).cloned();
        // kubectl apply reads the object first, then creates or patches it. The API
        // server authorizes a request before its handler looks for the object or its
        // namespace: a refused requester is told Forbidden, not NotFound/AlreadyExists.
        // An apply that changes nothing sends no patch (kubectl apply `patcher.Patch`).
        let unchanged = old.as_ref().is_some_and(|o| &merged(o, &obj) == o);
        let verbs: &[&str] = match (&old, create_only) {
            (_, true) => &["create"],
            (None, false) => &["get", "create"],
            (Some(_), false) if unchanged => &["get"],
            (Some(_), false) => &["get", "patch"],
        };
        for verb in verbs {
            if let Err(answer) = self.authorize(verb, &obj, "") {
                return answer;
            }
        }
        if !key.namespace.is_empty() && self.find(&namespace_ref(&key.namespace)).is_none() {
            return Answer::Refused(format!("namespaces \"{}\" not found", key.namespace));
        }
        if old.is_some() && create_only {
            return Answer::Refused(format!(
                "{} \"{}\" already exists",
                self.resource_name(&obj),
                key.name
            ));
        }
        let new = match &old {
            Some(o) => merged(o, &obj),
            None => obj,
        };
        self.write(new, old)
    }

    /// `kubectl replace`/update: the object must exist.
    pub fn update(&mut self, obj: &Value, patch: bool) -> Answer {
        self.forget_last_answer();
        let mut obj = obj.clone();
        if let Err(skip) = self.place(&mut obj) {
            return Answer::Undecidable(skip);
        }
        let key = Key::of(&obj);
        let Some(old) = self.find(&key).cloned() else {
            return Answer::Refused(format!(
                "{} \"{}\" not found",
                self.resource_name(&obj),
                key.name
            ));
        };
        // The writers of an existing object (kubectl label, annotate, patch) read it and
        // send a patch.
        for verb in ["get", "patch"] {
            if let Err(answer) = self.authorize(verb, &old, "") {
                return answer;
            }
        }
        let new = if patch { merged(&old, &obj) } else { obj };
        self.write(new, Some(old))
    }

    /// `plural` or `plural.group` of `obj`'s kind, as the API server names it.
    pub(crate) fn resource_name(&self, obj: &Value) -> String {
        let (av, kind) = (text(obj, "/apiVersion"), text(obj, "/kind"));
        match self.mapper().for_kind(&av, &kind) {
            Some(r) if r.group.is_empty() => r.plural.clone(),
            Some(r) => format!("{}.{}", r.plural, r.group),
            None => kind.to_lowercase(),
        }
    }

    /// Admission of a create or update, then the object stored and the background work.
    fn write(&mut self, new: Value, old: Option<Value>) -> Answer {
        let kind = text(&new, "/kind");
        if let Some(skip) = super::controllers::install::unmodelled_write(&new, old.as_ref()) {
            return Answer::Undecidable(skip);
        }
        if let Some(Err(skip)) =
            super::controllers::ttl::deletion(&new, &self.cleanup_authorizer(), &self.mapper())
        {
            return Answer::Undecidable(skip);
        }
        if let Some(invalid) = schema::refusal(&new) {
            let message = invalid.message();
            self.invalid = Some(invalid);
            return Answer::Refused(message);
        }
        if let Some(why) = gctx::refusal(&new) {
            return Answer::Refused(why);
        }
        let mut new = new;
        if let Err(answer) = self.deletion_kept(&mut new, old.as_ref()) {
            return answer;
        }
        if super::controllers::cleanup::is_cleanup_policy(&kind) {
            let authorizer = self.cleanup_authorizer();
            // The cleanup controller's webhook adds the legacy kinds' notice
            // (cmd/cleanup-controller/handlers/admission/policy/handlers.go).
            if let Some(d) = validation::deprecation(&kind) {
                self.warnings.push(d);
            }
            match super::controllers::cleanup::admission(&new, &authorizer, &self.mapper()) {
                Ok(None) => {}
                Ok(Some(why)) => return Answer::Refused(why),
                Err(skip) => return Answer::Undecidable(skip),
            }
        }
        // The policy webhook (validate-policy.kyverno.svc) refuses what Kyverno cannot run.
        if matches!(kind.as_str(), "ClusterPolicy" | "Policy") {
            let authorizer = self.kyverno_authorizer();
            let mapper = self.mapper();
            let (problems, warned) = validation::admission(
                &new,
                old.as_ref(),
                validation::Mode::Cluster {
                    authorizer: &authorizer,
                    mapper: &mapper,
                },
            );
            self.warnings = warned;
            if let Some(text) = validation::denial_text(&problems) {
                return Answer::Refused(text);
            }
        }
        if kind == "PolicyException" && text(&new, "/apiVersion").starts_with("kyverno.io/") {
            // pkg/webhooks/exception/validate.go adds the legacy kind's notice.
            if self.exceptions_disabled {
                self.warnings
                    .push("PolicyException resources would not be processed until it is enabled.");
            }
            if let Some(d) = validation::deprecation(&kind) {
                self.warnings.push(d);
            }
            let problems = validation::validate_exception(&new);
            if let Some(m) = validation::message(&problems) {
                return Answer::Refused(format!(
                    "admission webhook \"{}\" denied the request: {m}",
                    validation::EXCEPTION_WEBHOOK
                ));
            }
        }
        if super::controllers::deleting::validated(&new) {
            let mut warned = Vec::new();
            let refused = super::controllers::deleting::admission(&new, &mut warned);
            for w in warned {
                self.warnings.push(w);
            }
            match refused {
                Ok(None) => {}
                Ok(Some(text)) => return Answer::Refused(text),
                Err(skip) => return Answer::Undecidable(skip),
            }
        }
        if let Some(refused) = self.gpol_compile_refusal(&new) {
            return refused;
        }
        if let Some(errors) = validation::cel_policy_problems(&new) {
            // Kyverno returns each error as a warning too (pkg/cel/policies/*/validate.go).
            for e in &errors {
                self.warnings.push(e.message.clone());
            }
            if let Some(text) = validation::denial_text(&errors) {
                return Answer::Refused(text);
            }
        }
        // The API server sets the uid before validating admission, where Kyverno's
        // generate handling runs (the UpdateRequest names the trigger by it).
        let mut new = new;
        apiserver::decoded(&mut new);
        let uid = match old.as_ref().and_then(|o| o.pointer("/metadata/uid")) {
            Some(u) => u.clone(),
            None => self.new_uid(),
        };
        if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("uid".into(), uid);
        }
        if old.is_none() {
            self.service_account_admission(&mut new);
        }
        let admitted = if self.filtered(&new) {
            Admitted {
                object: new,
                response: kyverno::Response::default(),
                policies: Vec::new(),
            }
        } else {
            match self.admit(new, old.clone()) {
                Ok(a) => a,
                Err(answer) => {
                    self.reports.refused();
                    return answer;
                }
            }
        };
        let object = admitted.object;
        let uid = object.pointer("/metadata/uid").cloned();
        self.store_as(object.clone(), uid);
        self.global_context_written(&object);
        let settings = super::controllers::install::settings(&self.objects);
        self.reports
            .admitted(&object, &admitted.policies, &admitted.response, &settings);
        let answer = self.background(&object, old.as_ref(), &admitted.response);
        if matches!(kind.as_str(), "ClusterPolicy" | "Policy") {
            self.policy_written(&object, old.as_ref());
        }
        let answer = match self.watched_policy_written(&object, old.as_ref()) {
            Answer::Ok => match self.cel_mutate_existing(&object, old.as_ref()) {
                Answer::Ok => answer,
                other => other,
            },
            other => other,
        };
        let answer = self.finalized(&object, answer);
        // Kyverno's controllers (admission-policy generator, status) catch up.
        super::controllers::reconcile(self);
        answer
    }

    /// What the background controller does for an admitted trigger, done at once.
    fn background(
        &mut self,
        trigger: &Value,
        old: Option<&Value>,
        resp: &kyverno::Response,
    ) -> Answer {
        let update = old.is_some();
        let op = if update { "UPDATE" } else { "CREATE" };
        self.after_write(op, trigger, old.unwrap_or(&Value::Null), Writer::User);
        for t in &resp.patched_targets {
            self.made_in_background = true;
            self.store(t.clone());
        }
        // The watch manager's informers see every write; resourceFilters are admission's.
        self.watched_write(trigger, old.unwrap_or(&Value::Null));
        if self.filtered(trigger) {
            return Answer::Ok;
        }
        match self.cel_targets_on_trigger(trigger, old) {
            Answer::Ok => {}
            other => return other,
        }
        let mut req = self.vap_request(trigger, update.then(|| trigger.clone()));
        req.cluster = Some(Arc::new(self.objects.clone()));
        self.generate_cel(&req, trigger)
    }

    /// The RBAC Kyverno's controllers have in a conformance cluster: the chart's roles
    /// (kind-config/baseline-rbac.yaml), the extra grants of the suite's Helm values
    /// (scripts/config/standard/kyverno.yaml, `admissionController` and
    /// `backgroundController` `.rbac.clusterRole.extraResources`, aggregated into each
    /// controller's role as the chart renders them), and whatever roles the test applies.
    /// The cleanup controller's RBAC: the chart's roles and the suite's Helm values
    /// (scripts/config/standard/kyverno.yaml `cleanupController.rbac.clusterRole.
    /// extraResources`: pods, list and delete; scripts/config/ttl/kyverno.yaml adds
    /// watch), and whatever roles the test applies.
    pub(crate) fn cleanup_authorizer(&self) -> Authorizer {
        let pod_verbs = if self.features.ttl_watches_pods {
            json!(["list", "delete", "watch"])
        } else {
            json!(["list", "delete"])
        };
        let mut objects: Vec<Value> = crate::lab::offline::baseline_rbac().to_vec();
        objects.push(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "kyverno:cleanup-controller:additional", "labels": {
                "app.kubernetes.io/component": "cleanup-controller",
                "app.kubernetes.io/instance": "kyverno",
                "app.kubernetes.io/part-of": "kyverno"}},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": pod_verbs}]}),
        );
        objects.extend(super::controllers::rbac_objects(&self.objects).cloned());
        Authorizer::new(&objects)
    }

    fn kyverno_authorizer(&self) -> Authorizer {
        let extra = |component: &str, resources: Value| {
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": format!("kyverno:{component}:additional"), "labels": {
                    "app.kubernetes.io/component": component,
                    "app.kubernetes.io/instance": "kyverno",
                    "app.kubernetes.io/part-of": "kyverno"}},
                "rules": [{"apiGroups": ["*"], "resources": resources,
                    "verbs": ["create", "update", "patch", "delete", "get", "list"]}]})
        };
        let mut objects: Vec<Value> = crate::lab::offline::baseline_rbac().to_vec();
        objects.push(extra("admission-controller", json!(["secrets"])));
        objects.push(extra(
            "background-controller",
            json!([
                "configmaps",
                "networkpolicies",
                "resourcequotas",
                "secrets",
                "roles",
                "rolebindings",
                "clusterroles",
                "clusterrolebindings",
                "limitranges",
                "namespaces",
                "nodes",
                "nodes/status",
                "pods"
            ]),
        ));
        objects.extend(super::controllers::rbac_objects(&self.objects).cloned());
        Authorizer::new(&objects)
    }

    /// The cluster's RBAC for the policies that ask it (an access review in an API call,
    /// CEL's `authorizer`); built only when one does.
    pub(crate) fn rbac_for_policies(&self) -> Option<Arc<Authorizer>> {
        self.objects
            .iter()
            .any(|o| {
                super::is_policy_kind(&text(o, "/kind"))
                    && kyverno::vars::any_text(o, &|s| {
                        s.contains("accessreviews") || s.contains("authorizer")
                    })
            })
            .then(|| Arc::new(self.kyverno_authorizer()))
    }

    pub(crate) fn namespace_labels(&self, ns: &str) -> std::collections::BTreeMap<String, String> {
        let mut out = std::collections::BTreeMap::new();
        if let Some(Value::Object(labels)) = self
            .find(&namespace_ref(ns))
            .and_then(|n| n.pointer("/metadata/labels"))
        {
            for (k, v) in labels {
                if let Some(v) = v.as_str() {
                    out.insert(k.clone(), v.to_string());
                }
            }
        }
        out
    }

    pub(crate) fn vap_request(&self, object: &Value, old: Option<Value>) -> vap::VapRequest {
        let ns = text(object, "/metadata/namespace");
        let namespace_object = if ns.is_empty() {
            Value::Null
        } else {
            vap::namespace_object(&self.objects, &ns, self.namespace_labels(&ns))
        };
        vap::VapRequest {
            operation: if old.is_some() { "UPDATE" } else { "CREATE" }.into(),
            object: object.clone(),
            old_object: old.unwrap_or(Value::Null),
            namespace_object,
            user: self.vap_user(),
            // Kyverno's CEL libraries: the global context store; image data and outside
            // URLs stay the registry's and the network's.
            services: Some(Arc::new(vap::CliServices::live(
                self.global_context_store(),
            ))),
            authorizer: self.rbac_for_policies(),
            ..Default::default()
        }
    }

    /// What the CEL policy evaluators see: every object, less the PolicyExceptions when
    /// Kyverno runs with them disabled.
    pub(crate) fn cel_policy_objects(&self) -> std::borrow::Cow<'_, [Value]> {
        if !self.exceptions_disabled {
            return std::borrow::Cow::Borrowed(&self.objects);
        }
        let kept = self
            .objects
            .iter()
            .filter(|o| text(o, "/kind") != "PolicyException");
        std::borrow::Cow::Owned(kept.cloned().collect())
    }

    /// The ClusterPolicies and Policies Kyverno's webhooks run: not those with
    /// `spec.admission: false` (background scans only).
    fn admission_policies(&self) -> Vec<kyverno::Policy> {
        let (mut policies, _) = kyverno::load_policies(&self.objects);
        policies.retain(|p| {
            p.raw.pointer("/spec/admission").and_then(Value::as_bool) != Some(false)
                && !super::controllers::left_to_generated(&p.raw)
        });
        policies
    }

    /// Admission in the API server's order. `Err` is the answer when it is not stored.
    fn admit(&mut self, object: Value, old: Option<Value>) -> Result<Admitted, Answer> {
        let update = old.is_some();
        let mut req = self.vap_request(&object, old.clone());
        req.cluster = Some(Arc::new(self.objects.clone()));
        req.object = map::mutate(&self.objects, &req)?;
        let cel_objects =
            webhook::gated(&self.cel_policy_objects(), webhook::MUTATING_KINDS, &req)?;
        let mutating: Vec<Value> = cel_objects
            .iter()
            .filter(|o| !(is_mutating_policy(o) && self.skips_cel_policy(o)))
            .cloned()
            .collect();
        let object = match vap::mutate_with_policies(&mutating, &req) {
            Ok(o) => o,
            Err(e) => {
                return Err(match policy_unsupported(&e) {
                    Some(skip) => Answer::Undecidable(skip),
                    None => Answer::Refused(format!(
                        "admission webhook \"mpol.mutate.kyverno.svc-fail\" denied the request: {e}"
                    )),
                });
            }
        };
        let policies = webhook::policies_called(
            self.admission_policies(),
            &self.vap_request(&object, old.clone()),
        )?;
        let ns = text(&object, "/metadata/namespace");
        let kreq = kyverno::Request {
            operation: if update { "UPDATE" } else { "CREATE" }.into(),
            object: object.clone(),
            old_object: old.clone().unwrap_or(Value::Null),
            user_info: self.user_info(&ns),
            namespace_labels: self.namespace_labels(&ns),
            ..Default::default()
        };
        let opts = self.engine_options();
        let resp = kyverno::admit_with(&policies, &kreq, &opts);
        if let Some(r) = resp
            .results
            .iter()
            .find(|r| r.unsupported.is_some() && r.kind != RuleKind::Generate)
        {
            let why = r.unsupported.as_ref().map(ToString::to_string);
            return Err(Answer::Undecidable(Skip::from_unsupported(
                r.kind,
                why.unwrap_or_default(),
            )));
        }
        if let Some(e) = resp.results.iter().find(|r| {
            r.kind == RuleKind::Mutate
                && r.status == RuleStatus::Error
                && !background::mutates_existing(&policies, &r.policy, &r.rule)
        }) {
            return Err(Answer::Refused(format!(
                "admission webhook \"mutate.kyverno.svc-fail\" denied the request: mutation policy {} error: failed to apply policy {} rules [{}: {}]",
                e.policy, e.policy, e.rule, e.message
            )));
        }
        let patched = resp.patched.clone();
        // Validating admission: the VAP plugin, then the validating webhooks.
        let mut vreq = self.vap_request(&patched, old);
        vreq.cluster = Some(Arc::new(self.objects.clone()));
        let mut out = vap::evaluate(&self.objects, &vreq);
        if let Some(e) = out.unsupported() {
            return Err(Answer::Undecidable(vap_skip(e)));
        }
        if let Some(d) = out.denials.first() {
            return Err(Answer::Refused(d.status_message(&patched)));
        }
        let cel_objects = webhook::gated(&cel_objects, webhook::VALIDATING_KINDS, &vreq)?;
        for p in cel_objects.iter().filter(|o| {
            webhook::VALIDATING_KINDS.contains(&text(o, "/kind").as_str())
                && !super::controllers::left_to_generated(o)
        }) {
            let before = out.denials.len();
            vap::evaluate_validating_policy(&cel_objects, p, &vreq, &mut out);
            if let Some(e) = out.unsupported() {
                return Err(Answer::Undecidable(vap_skip(e)));
            }
            if let Some(d) = out.denials.get(before) {
                return Err(Answer::Refused(format!(
                    "admission webhook \"vpol.validate.kyverno.svc-fail\" denied the request: Policy {} failed: {}",
                    d.policy, d.message
                )));
            }
        }
        let exceptions = self.cel_policy_objects();
        match ivpol::admission(&self.objects, &exceptions, &vreq, self.features) {
            None => {}
            Some(Ok(message)) => return Err(Answer::Refused(message)),
            Some(Err(skip)) => return Err(Answer::Undecidable(skip)),
        }
        if let Some((msg, unworded)) = blocked(&policies, &resp, &patched) {
            self.unworded = unworded;
            return Err(Answer::Refused(msg));
        }
        emitted_warnings(&policies, &resp, &mut self.warnings);
        Ok(Admitted {
            object: patched,
            response: resp,
            policies,
        })
    }

    /// `kubectl delete`: Kyverno's validate rules see a DELETE; then the object (and a
    /// Namespace's objects) are gone. A missing object is no error.
    pub fn delete(&mut self, obj: &Value) -> Answer {
        self.delete_waiting(obj, true)
    }

    /// [`Cluster::delete`]; `wait`: the client waits until the object is gone.
    pub fn delete_waiting(&mut self, obj: &Value, wait: bool) -> Answer {
        self.forget_last_answer();
        let mut obj = from_ref(obj);
        if let Err(skip) = self.place(&mut obj) {
            return Answer::Undecidable(skip);
        }
        let key = Key::of(&obj);
        let Some(old) = self.find(&key).cloned() else {
            return Answer::Ok;
        };
        if let Err(answer) = self.authorize("delete", &old, "") {
            return answer;
        }
        if !self.filtered(&old) {
            let policies = self.admission_policies();
            let kreq = kyverno::Request {
                operation: "DELETE".into(),
                object: Value::Null,
                old_object: old.clone(),
                namespace_labels: self.namespace_labels(&key.namespace),
                user_info: self.user_info(&key.namespace),
                ..Default::default()
            };
            // PolicyExceptions hold for a deletion too.
            let resp = kyverno::admit_with(&policies, &kreq, &self.engine_options());
            if let Some((msg, unworded)) = blocked(&policies, &resp, &old) {
                self.unworded = unworded;
                self.reports.refused();
                return Answer::Refused(msg);
            }
            let settings = super::controllers::install::settings(&self.objects);
            self.reports
                .admitted(&Value::Null, &policies, &resp, &settings);
        }
        if let Some(answer) = self.finalizing(&old, wait) {
            return answer;
        }
        self.removed(old)
    }

    /// `old` is gone: what Kyverno's controllers and watchers do then.
    fn removed(&mut self, old: Value) -> Answer {
        let key = Key::of(&old);
        self.remove(&key);
        self.after_write("DELETE", &Value::Null, &old, Writer::User);
        if matches!(key.kind.as_str(), "ClusterPolicy" | "Policy") {
            self.policy_deleted(&old);
        }
        self.watched_write(&Value::Null, &old);
        self.watched_policy_deleted(&old);
        if !self.filtered(&old) {
            match self.cel_targets_on_delete(&old) {
                Answer::Ok => {}
                other => return other,
            }
        }
        let answer = if self.filtered(&old) {
            Answer::Ok
        } else {
            self.generate_cel_on_delete(&old)
        };
        super::controllers::reconcile(self);
        answer
    }
}

fn is_mutating_policy(o: &Value) -> bool {
    matches!(
        text(o, "/kind").as_str(),
        "MutatingPolicy" | "NamespacedMutatingPolicy"
    )
}

/// A Chainsaw `ref` (`apiVersion`, `kind`, `name`, `namespace` side by side) as the
/// object it names.
fn from_ref(obj: &Value) -> Value {
    if obj.get("metadata").is_some() || obj.get("name").is_none() {
        return obj.clone();
    }
    let mut meta = Map::new();
    for k in ["name", "namespace", "labels"] {
        if let Some(v) = obj.get(k) {
            meta.insert(k.into(), v.clone());
        }
    }
    json!({"apiVersion": obj.get("apiVersion").cloned().unwrap_or(Value::Null),
           "kind": obj.get("kind").cloned().unwrap_or(Value::Null),
           "metadata": meta})
}

/// Why a MutatingPolicy or GeneratingPolicy could not be evaluated offline, if that is
/// what stopped it.
fn policy_unsupported(e: &vap::PolicyError) -> Option<Skip> {
    match e {
        vap::PolicyError::Unsupported { why, .. } => Some(Skip::from_cel(why)),
        vap::PolicyError::Failed { .. } => None,
    }
}

/// The skip for a VAP/ValidatingPolicy error the offline evaluator is the cause of.
fn vap_skip(e: &vap::VapError) -> Skip {
    match &e.unsupported {
        Some(why) => Skip::from_cel(why),
        None => Skip::Engine(e.reason()),
    }
}

struct Admitted {
    object: Value,
    response: kyverno::Response,
    /// The ClusterPolicies and Policies Kyverno's webhooks ran.
    policies: Vec<kyverno::Policy>,
}

impl Cluster {
    /// What Kyverno's `resourceFilters` keep away from its webhooks and scans: `obj`
    /// itself (no subresource).
    pub(crate) fn filtered(&self, obj: &Value) -> bool {
        self.filtered_sub(obj, "")
    }

    /// Whether Kyverno's current `resourceFilters` (its ConfigMap's, as loaded) filter
    /// `obj` asked with `subresource` (`controllers::filters`).
    pub(crate) fn filtered_sub(&self, obj: &Value, subresource: &str) -> bool {
        let value = self
            .objects
            .iter()
            .find(|o| super::controllers::install::is_config_map(o))
            .and_then(|cm| cm.pointer("/data/resourceFilters"))
            .and_then(Value::as_str);
        let filters = self.resource_filters.filters(value);
        super::controllers::filters::to_filter(&filters, obj, subresource)
    }

    /// The cleanup and deleting controllers' question: the object's kind passed where
    /// the subresource goes (pkg/controllers/cleanup/controller.go,
    /// pkg/controllers/deleting/controller.go).
    pub(crate) fn filtered_for_cleanup(&self, obj: &Value) -> bool {
        self.filtered_sub(obj, &text(obj, "/kind"))
    }
}

/// `generateName` becomes a name, as the API server does.
fn name_generated(obj: &mut Value, counter: &mut u64) {
    if obj.pointer("/metadata/name").is_some() {
        return;
    }
    let Some(prefix) = obj
        .pointer("/metadata/generateName")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        return;
    };
    *counter += 1;
    obj["metadata"]["name"] = json!(format!("{prefix}{:05x}", *counter));
}

/// `kubectl apply` over an existing object: the applied fields replace, maps merge,
/// what the manifest does not name is kept.
fn merged(old: &Value, new: &Value) -> Value {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            let mut out = o.clone();
            for (k, v) in n {
                let merged = match o.get(k) {
                    Some(ov) => merged(ov, v),
                    None => v.clone(),
                };
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        (_, n) => n.clone(),
    }
}

/// An object's identity: API group (versions are one object), kind, namespace, name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    pub group: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl Key {
    /// Whether `obj` is the object this key names: [`Key::of`] without building one
    /// (the lookups scan every object the cluster holds).
    pub fn is_of(&self, obj: &Value) -> bool {
        fn field<'v>(o: Option<&'v Value>, k: &str) -> &'v str {
            o.and_then(|o| o.get(k))
                .and_then(Value::as_str)
                .unwrap_or("")
        }
        if field(Some(obj), "kind") != self.kind {
            return false;
        }
        let meta = obj.get("metadata");
        let av = field(Some(obj), "apiVersion");
        let group = av.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
        field(meta, "name") == self.name
            && field(meta, "namespace") == self.namespace
            && group == self.group
    }

    pub fn of(obj: &Value) -> Key {
        let av = text(obj, "/apiVersion");
        Key {
            group: av
                .rsplit_once('/')
                .map(|(g, _)| g.to_string())
                .unwrap_or_default(),
            kind: text(obj, "/kind"),
            namespace: text(obj, "/metadata/namespace"),
            name: text(obj, "/metadata/name"),
        }
    }
}

fn namespace_ref(ns: &str) -> Key {
    Key {
        group: String::new(),
        kind: "Namespace".into(),
        namespace: String::new(),
        name: ns.to_string(),
    }
}

pub(super) fn text(v: &Value, pointer: &str) -> String {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

#[cfg(test)]
#[path = "cluster/plugins_tests.rs"]
mod plugins_tests;

#[cfg(test)]
#[path = "cluster/webhook_tests.rs"]
mod webhook_tests;

#[cfg(test)]
#[path = "cluster/gctx_tests.rs"]
mod gctx_tests;

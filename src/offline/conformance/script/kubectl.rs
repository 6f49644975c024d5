//! `kubectl` against the simulated cluster, for the scripts of the suite: the writes go
//! through the same admission as Chainsaw's own operations, and what kubectl prints is
//! its text where the replay knows it exactly (`pod/x created`, `Error from server:
//! error when creating "f.yaml": admission webhook … denied the request: …`,
//! `No resources found in x namespace.`) and marked [`Unknown`] where it does not
//! (tables, warnings, status reasons, a refusal not in Kyverno's words), so a script
//! that reads such text is skipped rather than judged on a guess. Subcommands and flags
//! it does not model are skips that name them.

use serde_json::{Value, json};

use super::exec::{Files, Host, Io, Text, Unknown, Unwind};

#[path = "subresource.rs"]
mod subresource;
use crate::offline::conformance::cluster::{Answer, Cluster, Key, Requester, text};
use crate::offline::conformance::controllers::install;

/// The namespace of the kubeconfig a script's kubectl uses.
const KUBECONFIG_NAMESPACE: &str = "default";

mod all;
mod events;
mod get;
mod http;
pub(super) mod listing;
mod printed;
mod reads;
mod strategic;

/// Most documents one `-f` may hold.
const MAX_DOCUMENTS: usize = 256;

pub struct Kubectl<'c> {
    pub cluster: &'c mut Cluster,
    /// Keys of what the script wrote or tried to write.
    pub written: Vec<Key>,
    /// The exit status taken for a program whose status is unknown (`Unwind::UnknownStatus`):
    /// `None` on the first run, each possible status on the runs after it.
    pub assume_status: Option<i32>,
}

fn skip(what: impl Into<String>) -> Unwind {
    Unwind::Skip(what.into())
}

/// Parsed `kubectl` arguments: positionals and flags (`--f=v`, `--f v`, `-f v`).
#[derive(Default, Debug)]
struct Args {
    positional: Vec<String>,
    flags: Vec<(String, Option<String>)>,
}

/// Flags that take a value when written apart from it.
const VALUED: &[&str] = &[
    "f",
    "filename",
    "n",
    "namespace",
    "o",
    "output",
    "as",
    "p",
    "patch",
    "type",
    "replicas",
    "image",
    "schedule",
    "role",
    "clusterrole",
    "user",
    "serviceaccount",
    "restart",
    "l",
    "selector",
    "from-literal",
    "grace-period",
    "timeout",
    "wait",
    "group",
    "field-manager",
    "as-group",
];

/// Flags that change nothing the replay models.
const HARMLESS: &[&str] = &[
    "overwrite",
    "ignore-not-found",
    "wait",
    "force",
    "grace-period",
    "timeout",
    "v",
    "field-manager",
    "validate",
    "restart",
    "record",
    "save-config",
    // Who the request comes from: the cluster's requester (see `program`).
    "as",
    "as-group",
];

impl Args {
    fn parse(argv: &[String]) -> Args {
        let mut a = Args::default();
        let mut i = 0;
        while i < argv.len() {
            let w = &argv[i];
            let flag = w.strip_prefix("--").or_else(|| {
                w.strip_prefix('-')
                    .filter(|f| !f.is_empty() && !f.starts_with(|c: char| c.is_ascii_digit()))
            });
            match flag {
                Some(f) => {
                    let (name, value) = match f.split_once('=') {
                        Some((n, v)) => (n.to_string(), Some(v.to_string())),
                        None if VALUED.contains(&f)
                            && i + 1 < argv.len()
                            && !(f == "wait" || f == "ignore-not-found") =>
                        {
                            i += 1;
                            (f.to_string(), Some(argv[i].clone()))
                        }
                        None => (f.to_string(), None),
                    };
                    a.flags.push((name, value));
                }
                None => a.positional.push(w.clone()),
            }
            i += 1;
        }
        a
    }

    fn get(&self, names: &[&str]) -> Option<&str> {
        self.flags
            .iter()
            .rev()
            .find(|(n, _)| names.contains(&n.as_str()))
            .and_then(|(_, v)| v.as_deref())
    }

    fn has(&self, names: &[&str]) -> bool {
        self.flags.iter().any(|(n, _)| names.contains(&n.as_str()))
    }

    /// The first flag outside `known` and the harmless ones, if any.
    fn unknown_flag(&self, known: &[&str]) -> Option<String> {
        self.flags
            .iter()
            .map(|(n, _)| n.as_str())
            .find(|n| !known.contains(n) && !HARMLESS.contains(n))
            .map(|n| format!("kubectl flag --{n}"))
    }
}

impl Host for Kubectl<'_> {
    fn api(
        &mut self,
        req: &super::exec::curl::Request,
    ) -> Result<super::exec::curl::Response, Unwind> {
        self.http(req)
    }

    fn program(&mut self, argv: &[String], io: &mut Io, files: &mut Files) -> Result<i32, Unwind> {
        let name = argv.first().map(String::as_str).unwrap_or("");
        if name == "kyverno" {
            return super::kyverno::run(self, &argv[1..], io, files);
        }
        if name != "kubectl" {
            return Err(skip(format!("the program `{name}`")));
        }
        let args = Args::parse(&argv[1..]);
        if args.has(&["kubeconfig", "context", "server", "token"]) {
            return Err(skip("kubectl against another kubeconfig"));
        }
        let Some(verb) = args.positional.first().cloned() else {
            return Err(skip("kubectl without a subcommand"));
        };
        let groups: Vec<String> = args
            .flags
            .iter()
            .filter(|(n, _)| n == "as-group")
            .filter_map(|(_, v)| v.clone())
            .collect();
        let requester = match args.get(&["as"]) {
            Some(user) => Requester::impersonating(user, &groups),
            None if !groups.is_empty() => {
                return Err(skip("kubectl --as-group without --as"));
            }
            None => Requester::default(),
        };
        self.cluster.requester = requester;
        let answer = self.subcommand(&verb, argv, &args, io, files);
        self.cluster.requester = Requester::default();
        answer
    }
}

impl Kubectl<'_> {
    /// One subcommand, as the cluster's current requester.
    fn subcommand(
        &mut self,
        verb: &str,
        argv: &[String],
        args: &Args,
        io: &mut Io,
        files: &mut Files,
    ) -> Result<i32, Unwind> {
        match verb {
            "apply" | "create" if args.has(&["f", "filename"]) => {
                self.apply_files(verb, args, io, files)
            }
            "create" => self.create_generated(args, io),
            "run" => self.run_pod(args, io),
            "delete" => self.delete(args, io, files),
            "get" => self.get(args, io),
            "label" | "annotate" => self.label(verb, args, io),
            "patch" => self.patch(args, io, files),
            "scale" => self.scale(args, io),
            "exec" => self.exec(&argv[1..], io),
            "debug" => self.debug(args, io),
            other => Err(skip(format!("kubectl {other}"))),
        }
    }
}

impl Kubectl<'_> {
    /// `-n`, else the kubeconfig's namespace: `default` (a script names the test's
    /// namespace itself, with `$NAMESPACE`; live, a script's `kubectl apply` of an object
    /// without a namespace lands in `default`).
    fn namespace(&self, args: &Args) -> String {
        args.get(&["n", "namespace"])
            .unwrap_or(KUBECONFIG_NAMESPACE)
            .to_string()
    }

    /// Prints the warnings the last write's admission returned, as kubectl does
    /// (`Warning: …` on stderr); ones the replay does not make are marked unknown.
    fn print_warnings(&self, io: &mut Io) {
        let w = &self.cluster.warnings;
        let s: String = w.lines.iter().map(|l| format!("Warning: {l}\n")).collect();
        let unknown = w.unknown.as_ref().map(|why| Unknown {
            why: format!("warnings kubectl may print: {why}"),
            lines_exact: false,
            ..Default::default()
        });
        if !s.is_empty() || unknown.is_some() {
            io.write(2, Text { s, unknown });
        }
    }

    fn documents(&self, args: &Args, files: &Files) -> Result<Vec<(String, Value)>, Unwind> {
        let mut out = Vec::new();
        for (n, v) in &args.flags {
            if n != "f" && n != "filename" {
                continue;
            }
            let Some(list) = v else {
                return Err(skip("kubectl -f without a file"));
            };
            // `--filename` is a string slice flag: one value may name several files,
            // comma-separated, read as a CSV record (pflag `stringSliceValue.Set`).
            if list.contains('"') {
                return Err(skip(format!("kubectl -f with a quoted list ({list})")));
            }
            for file in list.split(',') {
                self.document_file(file, files, &mut out)?;
            }
        }
        if out.len() > MAX_DOCUMENTS {
            return Err(skip("kubectl -f of more documents than the replay's bound"));
        }
        Ok(out)
    }

    /// The objects of one `-f` file, appended to `out`.
    fn document_file(
        &self,
        file: &str,
        files: &Files,
        out: &mut Vec<(String, Value)>,
    ) -> Result<(), Unwind> {
        if file == "-" || file.contains("://") {
            return Err(skip(format!("kubectl -f {file}")));
        }
        if files.written.contains_key(file) {
            return Err(skip(format!(
                "kubectl -f of a file the script wrote ({file})"
            )));
        }
        let path = files.dir.join(file);
        if path.is_dir() {
            return Err(skip(format!("kubectl -f of a folder ({file})")));
        }
        let docs = crate::offline::conformance::chainsaw::read_documents(&path)
            .map_err(|e| skip(format!("kubectl -f {file}: {e}")))?;
        for d in docs {
            let items = match d.get("items") {
                Some(Value::Array(items)) => items.clone(),
                _ => vec![d],
            };
            for i in items.into_iter().filter(|i| !i.is_null()) {
                out.push((file.to_string(), i));
            }
            if out.len() > MAX_DOCUMENTS {
                return Err(skip("kubectl -f of more documents than the replay's bound"));
            }
        }
        Ok(())
    }

    /// What kubectl calls an object: `deployment.apps/name`.
    fn reference(&self, obj: &Value) -> String {
        let (av, kind) = (text(obj, "/apiVersion"), text(obj, "/kind"));
        let group = av.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
        let kind = kind.to_lowercase();
        let name = text(obj, "/metadata/name");
        if group.is_empty() {
            format!("{kind}/{name}")
        } else {
            format!("{kind}.{group}/{name}")
        }
    }

    /// Prints a refusal as kubectl does; what it cannot word exactly is marked.
    fn refused(&self, io: &mut Io, doing: &str, file: Option<&str>, message: &str) {
        if let Some(invalid) = &self.cluster.invalid {
            io.write(
                2,
                Text {
                    s: invalid.kubectl_text(),
                    unknown: None,
                },
            );
            return;
        }
        let webhook = message.starts_with("admission webhook ");
        let s = match (webhook, file) {
            (true, Some(f)) => {
                format!("Error from server: error when {doing} \"{f}\": {message}\n")
            }
            _ => format!("Error from server: {message}\n"),
        };
        let unknown = if let Some(rules) = &self.cluster.unworded {
            Some(format!("the refusal's wording (rules {rules} are kca's)"))
        } else if !webhook || (doing != "creating" && file.is_some()) {
            Some("kubectl's wording of this refusal (status reason, patch)".into())
        } else {
            None
        };
        io.write(
            2,
            Text {
                s,
                unknown: unknown.map(|why| Unknown {
                    why,
                    lines_exact: false,
                    ..Default::default()
                }),
            },
        );
    }

    fn apply_files(
        &mut self,
        verb: &str,
        args: &Args,
        io: &mut Io,
        files: &Files,
    ) -> Result<i32, Unwind> {
        if let Some(f) = args.unknown_flag(&["f", "filename", "n", "namespace"]) {
            return Err(skip(f));
        }
        if args.positional.len() > 1 {
            return Err(skip(format!(
                "kubectl {verb} {}",
                args.positional[1..].join(" ")
            )));
        }
        let ns = args.get(&["n", "namespace"]);
        let mut status = 0;
        for (file, mut obj) in self.documents(args, files)? {
            let namespaced = self
                .cluster
                .namespaced(&text(&obj, "/apiVersion"), &text(&obj, "/kind"));
            let written = text(&obj, "/metadata/namespace");
            if namespaced == Some(true) && obj.get("metadata").is_some_and(Value::is_object) {
                match ns {
                    Some(ns) if !written.is_empty() && written != ns => {
                        io.print(2, format!("error: the namespace from the provided object \"{written}\" does not match the namespace \"{ns}\". You must pass '--namespace={written}' to perform this operation.\n"));
                        status = 1;
                        continue;
                    }
                    Some(ns) => obj["metadata"]["namespace"] = json!(ns),
                    None if written.is_empty() => {
                        obj["metadata"]["namespace"] = json!(KUBECONFIG_NAMESPACE)
                    }
                    None => {}
                }
            }
            let mut placed = obj.clone();
            self.cluster
                .place(&mut placed)
                .map_err(|s| skip(s.to_string()))?;
            let existed = self.cluster.find(&Key::of(&placed)).cloned();
            let answer = self.cluster.apply(&obj, verb == "create");
            self.print_warnings(io);
            match answer {
                Answer::Ok => {
                    self.written.push(Key::of(&placed));
                    let now = self.cluster.find(&Key::of(&placed)).cloned();
                    let said = match (&existed, verb) {
                        (None, _) | (_, "create") => "created",
                        (Some(o), _) if Some(o) == now.as_ref() => "unchanged",
                        _ => "configured",
                    };
                    io.print(1, format!("{} {said}\n", self.reference(&placed)));
                }
                Answer::Refused(m) => {
                    self.written.push(Key::of(&placed));
                    let doing = if existed.is_some() && verb == "apply" {
                        "patching"
                    } else {
                        "creating"
                    };
                    self.refused(io, doing, Some(&file), &m);
                    status = 1;
                }
                Answer::Undecidable(s) => return Err(skip(s.to_string())),
            }
        }
        Ok(status)
    }

    /// `kubectl create namespace|deployment|cronjob|rolebinding|clusterrolebinding NAME`.
    fn create_generated(&mut self, args: &Args, io: &mut Io) -> Result<i32, Unwind> {
        let (what, name) = match (args.positional.get(1), args.positional.get(2)) {
            (Some(w), Some(n)) => (w.as_str(), n.clone()),
            _ => return Err(skip("kubectl create without a kind and a name")),
        };
        let ns = self.namespace(args);
        let image = args.get(&["image"]).unwrap_or("").to_string();
        let obj = match what {
            "namespace" | "ns" => {
                if let Some(f) = args.unknown_flag(&[]) {
                    return Err(skip(f));
                }
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
            }
            "deployment" | "deploy" => {
                if let Some(f) = args.unknown_flag(&["image", "replicas", "n", "namespace"]) {
                    return Err(skip(f));
                }
                let replicas: i64 = args
                    .get(&["replicas"])
                    .and_then(|r| r.parse().ok())
                    .unwrap_or(1);
                let container = image_name(&image);
                json!({"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
                    "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                        "strategy": {},
                        "template": {"metadata": {"labels": {"app": name}},
                            "spec": {"containers": [{"name": container, "image": image, "resources": {}}]}}},
                    "status": {}})
            }
            "cronjob" | "cj" => {
                if let Some(f) = args.unknown_flag(&["image", "schedule", "n", "namespace"]) {
                    return Err(skip(f));
                }
                let schedule = args.get(&["schedule"]).unwrap_or("");
                json!({"apiVersion": "batch/v1", "kind": "CronJob",
                    "metadata": {"name": name, "namespace": ns},
                    "spec": {"schedule": schedule, "jobTemplate": {"metadata": {"name": name},
                        "spec": {"template": {"metadata": {}, "spec": {
                            "containers": [{"name": name, "image": image, "resources": {}}],
                            "restartPolicy": "OnFailure"}}}}},
                    "status": {}})
            }
            "rolebinding" | "clusterrolebinding" => {
                if let Some(f) = args.unknown_flag(&[
                    "role",
                    "clusterrole",
                    "user",
                    "group",
                    "serviceaccount",
                    "n",
                    "namespace",
                ]) {
                    return Err(skip(f));
                }
                let (rkind, rname) = match (args.get(&["role"]), args.get(&["clusterrole"])) {
                    (Some(r), None) => ("Role", r),
                    (None, Some(r)) => ("ClusterRole", r),
                    _ => return Err(skip("kubectl create rolebinding without one role")),
                };
                let mut subjects = Vec::new();
                for (n, v) in &args.flags {
                    let v = v.clone().unwrap_or_default();
                    match n.as_str() {
                        "user" => subjects.push(json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": v})),
                        "group" => subjects.push(json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": v})),
                        "serviceaccount" => {
                            let (sns, sname) = v.split_once(':').unwrap_or(("", &v));
                            subjects.push(json!({"kind": "ServiceAccount", "namespace": sns, "name": sname}));
                        }
                        _ => {}
                    }
                }
                let kind = if what == "rolebinding" {
                    "RoleBinding"
                } else {
                    "ClusterRoleBinding"
                };
                let mut o = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
                    "metadata": {"name": name},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": rkind, "name": rname},
                    "subjects": subjects});
                if what == "rolebinding" {
                    o["metadata"]["namespace"] = json!(ns);
                }
                o
            }
            other => return Err(skip(format!("kubectl create {other}"))),
        };
        self.create_one(obj, io)
    }

    /// `kubectl run NAME --image=I`: a Pod labelled `run=NAME`.
    fn run_pod(&mut self, args: &Args, io: &mut Io) -> Result<i32, Unwind> {
        if let Some(f) = args.unknown_flag(&["image", "n", "namespace", "restart"]) {
            return Err(skip(f));
        }
        if args.positional.len() != 2 {
            return Err(skip("kubectl run with a command"));
        }
        let name = args.positional[1].clone();
        let image = args.get(&["image"]).unwrap_or("").to_string();
        let mut spec = json!({"containers": [{"name": name, "image": image, "resources": {}}],
            "dnsPolicy": "ClusterFirst", "restartPolicy": "Always"});
        if let Some(r) = args.get(&["restart"]) {
            spec["restartPolicy"] = json!(r);
        }
        let obj = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": self.namespace(args), "labels": {"run": name}},
            "spec": spec, "status": {}});
        self.create_one(obj, io)
    }

    fn create_one(&mut self, obj: Value, io: &mut Io) -> Result<i32, Unwind> {
        let mut placed = obj.clone();
        self.cluster
            .place(&mut placed)
            .map_err(|s| skip(s.to_string()))?;
        let answer = self.cluster.apply(&obj, true);
        self.print_warnings(io);
        if matches!(answer, Answer::Ok) {
            self.written.push(Key::of(&placed));
        }
        let r = self.reference(&placed);
        self.said(answer, io, "creating", format!("{r} created"))
    }

    /// The object `TYPE NAME` names, resolved as kubectl's REST mapper does.
    fn named(
        &self,
        ty: &str,
        name: &str,
        ns: &str,
    ) -> Result<(Key, Option<Value>, String), Unwind> {
        let mapper = self.cluster.mapper();
        let Some(r) = mapper.resolve(ty) else {
            return Err(skip(format!("kubectl of the type `{ty}`")));
        };
        let key = Key {
            group: r.group.clone(),
            kind: r.kind.clone(),
            namespace: if r.namespaced {
                ns.to_string()
            } else {
                String::new()
            },
            name: name.to_string(),
        };
        let what = served_as(r);
        let found = self.cluster.find(&key).cloned();
        // Kyverno's install objects the replay does not hold are not missing.
        if let Some(why) = install::unheld(&key.kind, ns, Some(name), found.is_some()) {
            return Err(skip(why));
        }
        Ok((key.clone(), found, what))
    }

    /// What kubectl prints for a write's answer: `ok` on success, the refusal else.
    fn said(&self, answer: Answer, io: &mut Io, doing: &str, ok: String) -> Result<i32, Unwind> {
        match answer {
            Answer::Ok => {
                io.print(1, format!("{ok}\n"));
                Ok(0)
            }
            Answer::Refused(m) => {
                self.refused(io, doing, None, &m);
                Ok(1)
            }
            Answer::Undecidable(s) => Err(skip(s.to_string())),
        }
    }

    fn not_found(&self, io: &mut Io, what: &str, name: &str) {
        io.print(
            2,
            format!("Error from server (NotFound): {what} \"{name}\" not found\n"),
        );
    }

    fn delete(&mut self, args: &Args, io: &mut Io, files: &Files) -> Result<i32, Unwind> {
        if args.has(&["all"]) {
            return self.delete_all(args, io);
        }
        if let Some(f) = args.unknown_flag(&["f", "filename", "n", "namespace"]) {
            return Err(skip(f));
        }
        let ignore = args
            .flags
            .iter()
            .any(|(n, v)| n == "ignore-not-found" && v.as_deref() != Some("false"));
        let targets: Vec<Value> = if args.has(&["f", "filename"]) {
            let ns = self.namespace(args);
            let mut out = Vec::new();
            for (_, mut o) in self.documents(args, files)? {
                let namespaced = self
                    .cluster
                    .namespaced(&text(&o, "/apiVersion"), &text(&o, "/kind"));
                if namespaced == Some(true)
                    && text(&o, "/metadata/namespace").is_empty()
                    && o.get("metadata").is_some_and(Value::is_object)
                {
                    o["metadata"]["namespace"] = json!(ns);
                }
                out.push(o);
            }
            out
        } else {
            let (Some(ty), rest) = (
                args.positional.get(1),
                &args.positional[2.min(args.positional.len())..],
            ) else {
                return Err(skip("kubectl delete without a type"));
            };
            if rest.is_empty() {
                return Err(skip("kubectl delete without a name"));
            }
            let ns = self.namespace(args);
            let mut out = Vec::new();
            for name in rest {
                let (key, found, what) = self.named(ty, name, &ns)?;
                match found {
                    Some(o) => out.push(o),
                    None if ignore => {}
                    None => {
                        self.not_found(io, &what, &key.name);
                        return Ok(1);
                    }
                }
            }
            out
        };
        let mut status = 0;
        for obj in targets {
            let mut placed = obj.clone();
            self.cluster
                .place(&mut placed)
                .map_err(|s| skip(s.to_string()))?;
            if self.cluster.find(&Key::of(&placed)).is_none() {
                if !ignore {
                    let r = self.reference(&placed);
                    let (_, name) = r.split_once('/').unwrap_or((&r, ""));
                    let what = self.cluster.resource_name(&placed);
                    self.not_found(io, &what, name);
                    status = 1;
                }
                continue;
            }
            status = status.max(self.delete_one(&placed, waits(args), io)?);
        }
        Ok(status)
    }

    /// Deletes one object and prints kubectl's answer; the exit status. `wait`: kubectl
    /// waits until the object is gone.
    fn delete_one(&mut self, obj: &Value, wait: bool, io: &mut Io) -> Result<i32, Unwind> {
        let answer = self.cluster.delete_waiting(obj, wait);
        self.print_warnings(io);
        match answer {
            Answer::Ok => {
                let r = self.reference(obj);
                let (kind, name) = r.split_once('/').unwrap_or((&r, ""));
                io.print(1, format!("{kind} \"{name}\" deleted\n"));
                Ok(0)
            }
            Answer::Refused(m) => {
                self.refused(io, "deleting", None, &m);
                Ok(1)
            }
            Answer::Undecidable(s) => Err(skip(s.to_string())),
        }
    }

    /// `kubectl label|annotate TYPE NAME k=v … [--overwrite]`.
    fn label(&mut self, verb: &str, args: &Args, io: &mut Io) -> Result<i32, Unwind> {
        if let Some(f) = args.unknown_flag(&["n", "namespace"]) {
            return Err(skip(f));
        }
        let (Some(ty), Some(name)) = (args.positional.get(1), args.positional.get(2)) else {
            return Err(skip(format!("kubectl {verb} without a type and a name")));
        };
        let ns = self.namespace(args);
        let (key, found, what) = self.named(ty, name, &ns)?;
        if found.is_none() && self.get_refused(io, ty, &key)? {
            return Ok(1);
        }
        let Some(mut obj) = found else {
            self.not_found(io, &what, &key.name);
            return Ok(1);
        };
        let field = if verb == "label" {
            "labels"
        } else {
            "annotations"
        };
        let overwrite = args.has(&["overwrite"]);
        let mut map = obj
            .pointer(&format!("/metadata/{field}"))
            .cloned()
            .unwrap_or(json!({}));
        for change in &args.positional[3..] {
            if let Some(k) = change.strip_suffix('-') {
                if let Some(m) = map.as_object_mut() {
                    m.remove(k);
                }
                continue;
            }
            let Some((k, v)) = change.split_once('=') else {
                return Err(skip(format!("kubectl {verb} {change}")));
            };
            if !overwrite && map.get(k).is_some_and(|old| old != v) {
                io.print(
                    2,
                    format!(
                        "error: '{k}' already has a value ({}), and --overwrite is false\n",
                        map[k].as_str().unwrap_or("")
                    ),
                );
                return Ok(1);
            }
            map[k] = json!(v);
        }
        obj["metadata"][field] = map;
        let r = self.reference(&obj);
        let done = if verb == "label" {
            "labeled"
        } else {
            "annotated"
        };
        let answer = self.cluster.update(&obj, false);
        self.print_warnings(io);
        self.said(answer, io, "patching", format!("{r} {done}"))
    }

    /// `kubectl patch TYPE NAME -p '{…}'` (a merge of maps; lists replaced).
    fn patch(&mut self, args: &Args, io: &mut Io, files: &Files) -> Result<i32, Unwind> {
        let known = ["n", "namespace", "p", "patch", "patch-file", "type"];
        if let Some(f) = args.unknown_flag(&known) {
            return Err(skip(f));
        }
        let patch_type = args.get(&["type"]).unwrap_or("strategic");
        if !matches!(patch_type, "merge" | "strategic" | "json") {
            return Err(skip(format!("kubectl patch --type={patch_type}")));
        }
        let (Some(ty), Some(name)) = (args.positional.get(1), args.positional.get(2)) else {
            return Err(skip("kubectl patch without a type and a name"));
        };
        // `--patch-file` is read as a file (pkg/cmd/patch/patch.go `os.ReadFile`), so
        // `/dev/stdin` is the command's input.
        let read;
        let p = match (args.get(&["p", "patch"]), args.get(&["patch-file"])) {
            (Some(p), None) => p,
            (None, Some("/dev/stdin")) => {
                read = io
                    .stdin
                    .exact("kubectl patch --patch-file=/dev/stdin")?
                    .to_string();
                read.as_str()
            }
            (None, Some(f)) => {
                read = files
                    .read(f)
                    .map_err(|e| skip(format!("kubectl patch --patch-file={f}: {e}")))?;
                read.as_str()
            }
            _ => {
                return Err(skip(
                    "kubectl patch without exactly one of -p and --patch-file",
                ));
            }
        };
        let patch = patch_document(p)?;
        let ns = self.namespace(args);
        let (key, found, what) = self.named(ty, name, &ns)?;
        if found.is_none() && self.get_refused(io, ty, &key)? {
            return Ok(1);
        }
        let Some(old) = found else {
            self.not_found(io, &what, &key.name);
            return Ok(1);
        };
        let mut new = old.clone();
        if patch_type == "json" {
            new = json_patched(&old, &patch)?;
        } else if patch_type == "strategic" && has_list(&patch) {
            // Custom resources take no strategic merge patch.
            let built_in = crate::offline::rbac::resource::Mapper::built_in()
                .for_kind(&text(&old, "/apiVersion"), &key.kind)
                .is_some();
            if !built_in {
                return Err(skip("kubectl patch (strategic merge of a custom resource)"));
            }
            new = strategic::patch(&old, &patch, &key.kind).map_err(skip)?;
        } else {
            crate::lab::tree::merge_patch(&mut new, &patch);
        }
        let r = self.reference(&old);
        if new == old {
            self.written.push(key);
            io.print(1, format!("{r} patched (no change)\n"));
            return Ok(0);
        }
        let answer = self.cluster.update(&new, false);
        self.print_warnings(io);
        if matches!(answer, Answer::Ok) {
            self.written.push(key);
        }
        self.said(answer, io, "patching", format!("{r} patched"))
    }
}

/// The `-p` text as kubectl reads it: YAML (of which JSON is a part) turned into JSON
/// (kubectl pkg/cmd/patch/patch.go `yaml.ToJSON`). That reader resolves scalars by YAML
/// 1.1, where `yes`/`no`/`on`/`off` are booleans: a patch holding such a word, or one
/// that does not parse (kubectl's message is its YAML library's), is a skip.
fn patch_document(p: &str) -> Result<Value, Unwind> {
    if let Ok(v) = serde_json::from_str(p) {
        return Ok(v);
    }
    let mut docs = crate::yaml::parse_json_stream(p)
        .map_err(|e| skip(format!("kubectl patch that does not parse: {}", e.message)))?;
    let (Some(doc), true) = (docs.pop(), docs.is_empty()) else {
        return Err(skip("kubectl patch of several YAML documents"));
    };
    if holds_yaml11_word(&doc, 0) {
        return Err(skip("kubectl patch whose YAML 1.1 reading may differ"));
    }
    Ok(doc)
}

/// Whether a string in `v` is a word YAML 1.1 would read as a boolean when unquoted.
fn holds_yaml11_word(v: &Value, depth: usize) -> bool {
    const WORDS: &[&str] = &["y", "yes", "n", "no", "on", "off"];
    match v {
        _ if depth > 64 => true,
        Value::String(s) => WORDS.contains(&s.to_ascii_lowercase().as_str()),
        Value::Array(a) => a.iter().any(|x| holds_yaml11_word(x, depth + 1)),
        Value::Object(m) => m.iter().any(|(k, x)| {
            holds_yaml11_word(&Value::String(k.clone()), depth) || holds_yaml11_word(x, depth + 1)
        }),
        _ => false,
    }
}

/// `old` with the JSON patch `patch` (`kubectl patch --type=json`) as the API server
/// applies it; what the API server would refuse is a skip (its wording is not modelled).
fn json_patched(old: &Value, patch: &Value) -> Result<Value, Unwind> {
    use crate::offline::kyverno::jsonpatch;
    let Some(ops) = patch.as_array() else {
        return Err(skip(
            "kubectl patch --type=json of something else than a list",
        ));
    };
    if jsonpatch::lenient_where(old, ops).is_some() {
        return Err(skip(
            "kubectl patch --type=json that the API server refuses (its words)",
        ));
    }
    jsonpatch::apply(old, ops).map_err(|e| {
        skip(format!(
            "kubectl patch --type=json the API server refuses: {e}"
        ))
    })
}

/// `plural` or `plural.group`, as kubectl names a resource in its messages.
fn served_as(r: &crate::offline::rbac::resource::ApiResource) -> String {
    if r.group.is_empty() {
        r.plural.clone()
    } else {
        format!("{}.{}", r.plural, r.group)
    }
}

/// Whether `kubectl delete` waits for the deletion (`--wait`, true unless `=false`).
fn waits(args: &Args) -> bool {
    args.get(&["wait"]) != Some("false")
}

fn has_list(v: &Value) -> bool {
    match v {
        Value::Array(_) => true,
        Value::Object(m) => m.values().any(has_list),
        _ => false,
    }
}

/// The container name `kubectl create deployment` derives from an image.
fn image_name(image: &str) -> String {
    let last = image.rsplit('/').next().unwrap_or(image);
    let base = last.split(['@', ':']).next().unwrap_or(last);
    base.to_string()
}

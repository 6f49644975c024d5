//! kubectl subcommands that write to a subresource (the request itself is in
//! `cluster/subresource.rs`):
//! - `kubectl scale TYPE NAME --replicas=N` → the parent's `scale` (kubectl
//!   pkg/cmd/scale/scale.go);
//! - `kubectl exec POD [-it] -- CMD…` → a CONNECT of `pods/exec` (pkg/cmd/exec/exec.go);
//! - `kubectl debug POD --image=I [-it] [--target=C]` → an ephemeral container through
//!   `pods/ephemeralcontainers` (pkg/cmd/debug/debug.go `debugByEphemeralContainer`).
//!
//! There is no kubelet: what happens once an exec or an attach is admitted is a skip.

use serde_json::{Value, json};

use super::super::exec::{Io, Text, Unknown, Unwind};
use super::{Args, Kubectl, skip};
use crate::offline::conformance::cluster::{Answer, Key, text};

/// What kubectl exec/debug print when `-t` asks for a terminal the script does not have
/// (kubectl pkg/cmd/exec/exec.go `SetupTTY`).
const NO_TTY: &str = "Unable to use a TTY - input is not a terminal or the right kind of file\n";

/// Flags kubectl exec and debug share with the meaning they have here.
const INTERACTIVE: &[&str] = &["i", "t", "it", "ti", "stdin", "tty"];

impl Kubectl<'_> {
    pub(super) fn scale(&mut self, args: &Args, io: &mut Io) -> Result<i32, Unwind> {
        if let Some(f) = args.unknown_flag(&["n", "namespace", "replicas"]) {
            return Err(skip(f));
        }
        let (ty, name) = match (args.positional.get(1), args.positional.get(2)) {
            (Some(t), Some(n)) if args.positional.len() == 3 => (t.clone(), n.clone()),
            (Some(tn), None) => match tn.split_once('/') {
                Some((t, n)) => (t.to_string(), n.to_string()),
                None => return Err(skip("kubectl scale without a name")),
            },
            _ => return Err(skip("kubectl scale of several objects")),
        };
        let Some(replicas) = args.get(&["replicas"]).and_then(|r| r.parse::<i64>().ok()) else {
            return Err(skip("kubectl scale without a number of replicas"));
        };
        let ns = self.namespace(args);
        let (key, found, what) = self.named(&ty, &name, &ns)?;
        let Some(obj) = found else {
            self.not_found(io, &what, &key.name);
            return Ok(1);
        };
        let r = self.reference(&obj);
        let answer = self.cluster.scale(&key, replicas);
        if let Answer::Refused(m) = &answer
            && m.is_empty()
        {
            return Err(skip("kubectl scale of a vanished object"));
        }
        self.said(answer, io, "patching", format!("{r} scaled"))
    }

    /// The Pod `POD` or `pod/POD` names in `ns`; `Ok(None)` when kubectl has said it is
    /// not found.
    fn target_pod(&self, arg: &str, ns: &str, io: &mut Io) -> Result<Option<Value>, Unwind> {
        let name = match arg.split_once('/') {
            Some(("pod" | "pods" | "po", n)) => n,
            Some(_) => return Err(skip(format!("kubectl of a Pod chosen through `{arg}`"))),
            None => arg,
        };
        let key = Key {
            group: String::new(),
            kind: "Pod".into(),
            namespace: ns.to_string(),
            name: name.to_string(),
        };
        match self.cluster.find(&key) {
            Some(p) => Ok(Some(p.clone())),
            None => {
                self.not_found(io, "pods", name);
                Ok(None)
            }
        }
    }

    /// `kubectl exec`: `argv` is what follows `kubectl`; the command is after `--`.
    pub(super) fn exec(&mut self, argv: &[String], io: &mut Io) -> Result<i32, Unwind> {
        let Some(dash) = argv.iter().position(|w| w == "--") else {
            return Err(skip("kubectl exec without `--` before the command"));
        };
        let args = Args::parse(&argv[..dash]);
        let command: Vec<String> = argv[dash + 1..].to_vec();
        let mut known = vec!["n", "namespace", "container", "c", "q", "quiet"];
        known.extend(INTERACTIVE);
        if let Some(f) = args.unknown_flag(&known) {
            return Err(skip(f));
        }
        if command.is_empty() {
            return Err(skip("kubectl exec without a command"));
        }
        let [_, pod_arg] = args.positional.as_slice() else {
            return Err(skip("kubectl exec without exactly one Pod"));
        };
        let ns = self.namespace(&args);
        let Some(pod) = self.target_pod(pod_arg, &ns, io)? else {
            return Ok(1);
        };
        // kubectl refuses a Pod in a terminal phase, which only a kubelet reports.
        let restart = text(&pod, "/spec/restartPolicy");
        if matches!(restart.as_str(), "Never" | "OnFailure") {
            return Err(skip("kubectl exec into a Pod that may have completed"));
        }
        let container = match container_flag(&args)? {
            Some(c) => c,
            None => default_container(&pod, io)?,
        };
        let (stdin, tty) = interactive(&args);
        if tty && stdin {
            io.print(2, NO_TTY);
        }
        // The options as the API server decodes them from the query (omitempty fields).
        let mut options = json!({"kind": "PodExecOptions", "apiVersion": "v1",
            "stdout": true, "stderr": true, "container": container, "command": command});
        if stdin {
            options["stdin"] = json!(true);
        }
        match self.cluster.connect_exec(&pod, options) {
            Answer::Ok => Err(skip(
                "kubectl exec admitted: the command runs in a container (no kubelet)",
            )),
            Answer::Refused(m) => {
                self.refused(io, "connecting", None, &m);
                Ok(1)
            }
            Answer::Undecidable(s) => Err(skip(s.to_string())),
        }
    }

    /// `kubectl debug POD --image=I`: an ephemeral container added to the Pod.
    pub(super) fn debug(&mut self, args: &Args, io: &mut Io) -> Result<i32, Unwind> {
        let mut known = vec![
            "n",
            "namespace",
            "image",
            "target",
            "container",
            "c",
            "q",
            "quiet",
            "profile",
        ];
        known.extend(INTERACTIVE);
        if let Some(f) = args.unknown_flag(&known) {
            return Err(skip(f));
        }
        let Some(image) = args.get(&["image"]).map(str::to_string) else {
            return Err(skip("kubectl debug without --image"));
        };
        let [_, pod_arg] = args.positional.as_slice() else {
            return Err(skip("kubectl debug without exactly one Pod"));
        };
        if args.has(&["target"]) && args.get(&["target"]).is_none() {
            return Err(skip("kubectl debug --target with its value apart"));
        }
        let ns = self.namespace(args);
        let Some(old) = self.target_pod(pod_arg, &ns, io)? else {
            return Ok(1);
        };
        let (stdin, tty) = interactive(args);
        let quiet = args.has(&["q", "quiet"]);
        // Without `--profile` the profile is the kubectl version's: `legacy` (which warns
        // that it is deprecated) until 1.36, `general` since (kubernetes/kubernetes#135874).
        let profiles: &[&str] = match args.get(&["profile"]) {
            None if args.has(&["profile"]) => {
                return Err(skip("kubectl debug --profile with its value apart"));
            }
            None => &["legacy", "general"],
            Some("legacy") => &["legacy"],
            Some("general") => &["general"],
            Some(p) => return Err(skip(format!("kubectl debug --profile={p}"))),
        };
        // A name kubectl does not get told is `debugger-` and five random characters
        // (`computeDebugContainerName`): the replay's is a stand-in.
        let named = container_flag(args)?;
        let name = named
            .clone()
            .unwrap_or_else(|| "debugger-xxxxx".to_string());
        if !quiet && (named.is_none() || profiles.contains(&"legacy")) {
            let mut s = String::new();
            if named.is_none() {
                s.push_str("Defaulting debug container name to debugger-xxxxx.\n");
            }
            io.write(
                2,
                Text {
                    s,
                    unknown: Some(Unknown {
                        why: "kubectl debug's notes (its random container name, the legacy \
                              profile's deprecation)"
                            .into(),
                        lines_exact: false,
                        decides: Vec::new(),
                        exact_under: Vec::new(),
                    }),
                },
            );
        }
        // `generateDebugContainer`, then the profile: `general` lets the container trace
        // processes (profiles.go `allowProcessTracing`). The API server's defaults are
        // left out.
        let mut ec = json!({"name": name, "image": image,
            "terminationMessagePolicy": "File"});
        if stdin {
            ec["stdin"] = json!(true);
        }
        if tty {
            ec["tty"] = json!(true);
        }
        if let Some(t) = args.get(&["target"]) {
            ec["targetContainerName"] = json!(t);
        }
        let mut candidates = Vec::new();
        for profile in profiles {
            let mut ec = ec.clone();
            if *profile == "general" {
                ec["securityContext"] = json!({"capabilities": {"add": ["SYS_PTRACE"]}});
            }
            let mut new = old.clone();
            let spec = new
                .get_mut("spec")
                .and_then(Value::as_object_mut)
                .ok_or_else(|| skip("kubectl debug of a Pod without a spec"))?;
            let list = spec
                .entry("ephemeralContainers")
                .or_insert_with(|| json!([]));
            let Some(list) = list.as_array_mut() else {
                return Err(skip(
                    "kubectl debug of a Pod whose ephemeralContainers is no list",
                ));
            };
            list.push(ec);
            candidates.push(new);
        }
        match self.cluster.update_ephemeral_containers(&old, candidates) {
            Answer::Ok if stdin => Err(skip(
                "kubectl debug -i admitted: it attaches to the new container (no kubelet)",
            )),
            Answer::Ok => Ok(0),
            Answer::Refused(m) => {
                self.refused(io, "patching", None, &m);
                Ok(1)
            }
            Answer::Undecidable(s) => Err(skip(s.to_string())),
        }
    }
}

/// `-i`/`--stdin` and `-t`/`--tty` (also written together).
fn interactive(args: &Args) -> (bool, bool) {
    let stdin = args.has(&["i", "stdin", "it", "ti"]);
    let tty = args.has(&["t", "tty", "it", "ti"]);
    (stdin, tty)
}

/// `-c NAME`/`--container=NAME`: only the joined form is parsed.
fn container_flag(args: &Args) -> Result<Option<String>, Unwind> {
    if !args.has(&["c", "container"]) {
        return Ok(None);
    }
    match args.get(&["c", "container"]) {
        Some(c) => Ok(Some(c.to_string())),
        None => Err(skip("kubectl -c with its value apart")),
    }
}

/// The container kubectl exec picks without `-c` (kubectl pkg/cmd/util/podcmd
/// `FindOrDefaultContainerByName`): the annotated default, else the first; with more
/// than one it says which on stderr.
fn default_container(pod: &Value, io: &mut Io) -> Result<String, Unwind> {
    let names: Vec<String> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| text(c, "/name"))
        .collect();
    let annotated = pod
        .pointer("/metadata/annotations/kubectl.kubernetes.io~1default-container")
        .and_then(Value::as_str);
    if let Some(a) = annotated {
        return Ok(a.to_string());
    }
    let Some(first) = names.first().cloned() else {
        return Err(skip("kubectl exec into a Pod without containers"));
    };
    if names.len() > 1 {
        io.write(
            2,
            Text {
                s: format!(
                    "Defaulted container \"{first}\" out of: {}\n",
                    names.join(", ")
                ),
                unknown: Some(Unknown {
                    why: "kubectl's note on the container it defaulted to".into(),
                    lines_exact: true,
                    decides: Vec::new(),
                    exact_under: Vec::new(),
                }),
            },
        );
    }
    Ok(first)
}

#[cfg(test)]
mod tests {
    use super::super::super::exec::{Files, Host};
    use super::*;
    use crate::offline::conformance::cluster::Cluster;

    fn pod(ns: &str, labels: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "nginx", "namespace": ns, "labels": labels},
            "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}})
    }

    fn cluster(policies: &[Value], objects: &[Value]) -> Cluster {
        let mut c = Cluster::new("chainsaw-kca");
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}});
        for o in std::iter::once(&ns).chain(policies).chain(objects) {
            assert!(matches!(c.apply(o, false), Answer::Ok), "{o}");
        }
        c
    }

    /// Runs `kubectl ARGS…`: the exit code (or the skip) and stderr.
    fn kubectl(c: &mut Cluster, args: &[&str]) -> (Result<i32, Unwind>, String) {
        let mut argv = vec!["kubectl".to_string()];
        argv.extend(args.iter().map(|a| a.to_string()));
        let mut k = Kubectl {
            cluster: c,
            written: Vec::new(),
            assume_status: None,
        };
        let mut io = Io::default();
        let mut files = Files {
            dir: std::env::temp_dir(),
            written: Default::default(),
        };
        let status = k.program(&argv, &mut io, &mut files);
        (status, io.stream(2).s)
    }

    fn deny_exec_by_label() -> Value {
        json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "deny-exec"},
            "spec": {"background": false, "rules": [{"name": "by-label",
                "match": {"any": [{"resources": {"kinds": ["Pod/exec"]}}]},
                "context": [{"name": "label", "apiCall": {
                    "urlPath": "/api/v1/namespaces/{{request.namespace}}/pods/{{request.name}}",
                    "jmesPath": "metadata.labels.exec"}}],
                "preconditions": {"all": [{"key": "{{ request.operation }}",
                    "operator": "Equals", "value": "CONNECT"}]},
                "validate": {"failureAction": "Enforce", "message": "no exec here",
                    "deny": {"conditions": {"all": [{"key": "{{ label }}",
                        "operator": "Equals", "value": "false"}]}}}}]}})
    }

    #[test]
    fn an_exec_is_a_connect_kyverno_denies_by_the_pods_name() {
        let mut c = cluster(
            &[deny_exec_by_label()],
            &[pod("t", json!({"exec": "false"}))],
        );
        let (status, err) = kubectl(&mut c, &["-n", "t", "exec", "nginx", "-it", "--", "sh"]);
        assert_eq!(status, Ok(1));
        assert!(err.starts_with(NO_TTY), "{err}");
        assert!(
            err.contains("Error from server: admission webhook \"validate.kyverno.svc-fail\" denied the request: \n\nresource PodExecOptions/t/ was blocked"),
            "{err}"
        );
        assert!(err.contains("by-label: no exec here"), "{err}");
        // Kyverno's message is YAML, folded past 80 columns: a long message is not on
        // one line of stderr.
        let mut long = deny_exec_by_label();
        long["spec"]["rules"][0]["validate"]["message"] = json!(
            "Running commands inside Pods that carry the label exec=false is forbidden here."
        );
        let mut c = cluster(&[long], &[pod("t", json!({"exec": "false"}))]);
        let (_, err) = kubectl(&mut c, &["-n", "t", "exec", "nginx", "--", "sh"]);
        assert!(
            err.contains("by-label: Running commands inside Pods that carry the label exec=false is forbidden\n    here."),
            "{err}"
        );
    }

    #[test]
    fn a_namespaced_policy_matches_an_exec_in_its_namespace() {
        let mut policy = deny_exec_by_label();
        policy["kind"] = json!("Policy");
        policy["metadata"]["namespace"] = json!("t");
        let mut c = cluster(&[policy], &[pod("t", json!({"exec": "false"}))]);
        let (status, err) = kubectl(&mut c, &["-n", "t", "exec", "nginx", "--", "sh"]);
        assert_eq!(status, Ok(1), "{err}");
    }

    #[test]
    fn an_admitted_exec_is_a_skip_and_a_missing_pod_is_not_found() {
        let mut c = cluster(
            &[deny_exec_by_label()],
            &[pod("t", json!({"exec": "true"}))],
        );
        let (status, _) = kubectl(&mut c, &["-n", "t", "exec", "nginx", "--", "sh"]);
        assert!(matches!(status, Err(Unwind::Skip(_))));
        let (status, err) = kubectl(&mut c, &["exec", "nginx", "--", "sh"]);
        assert_eq!(status, Ok(1));
        assert_eq!(
            err,
            "Error from server (NotFound): pods \"nginx\" not found\n"
        );
    }

    #[test]
    fn a_debug_container_goes_through_the_ephemeralcontainers_subresource() {
        let deny = json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "no-debug"},
            "spec": {"background": false, "rules": [{"name": "deny",
                "match": {"any": [{"resources": {"kinds": ["*/ephemeralcontainers"]}}]},
                "validate": {"failureAction": "Enforce", "deny": {}}}]}});
        let mut c = cluster(&[deny], &[pod("t", json!({}))]);
        let (status, err) = kubectl(&mut c, &["debug", "-n", "t", "--image=busybox", "nginx"]);
        assert_eq!(status, Ok(1), "{err}");
        assert!(err.contains("resource Pod/t/nginx was blocked"), "{err}");
        // Without the policy the Pod is stored with its ephemeral container.
        let mut c = cluster(&[], &[pod("t", json!({}))]);
        let (status, _) = kubectl(&mut c, &["debug", "-n", "t", "--image=busybox", "nginx"]);
        assert_eq!(status, Ok(0));
        let key = Key {
            group: String::new(),
            kind: "Pod".into(),
            namespace: "t".into(),
            name: "nginx".into(),
        };
        let stored = c.find(&key).cloned().unwrap_or_default();
        assert_eq!(stored["spec"]["ephemeralContainers"][0]["image"], "busybox");
        let (status, _) = kubectl(&mut c, &["debug", "-it", "-n", "t", "--image=b", "nginx"]);
        assert!(matches!(status, Err(Unwind::Skip(_))));
    }

    #[test]
    fn a_debug_decided_by_the_kubectl_versions_profile_is_a_skip() {
        let vap = json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "no-ptrace"},
            "spec": {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"],
                "resources": ["pods/ephemeralcontainers"]}]},
                "validations": [{"expression":
                    "object.spec.ephemeralContainers.all(c, !has(c.securityContext))"}]}});
        let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "no-ptrace"},
            "spec": {"policyName": "no-ptrace", "validationActions": ["Deny"]}});
        let mut c = cluster(&[vap, binding], &[pod("t", json!({}))]);
        let (status, _) = kubectl(&mut c, &["debug", "-n", "t", "--image=b", "nginx"]);
        assert!(matches!(status, Err(Unwind::Skip(_))), "{status:?}");
        let general = [
            "debug",
            "-n",
            "t",
            "--image=b",
            "--profile=general",
            "nginx",
        ];
        assert_eq!(kubectl(&mut c, &general).0, Ok(1));
        let legacy = ["debug", "-n", "t", "--image=b", "--profile=legacy", "nginx"];
        assert_eq!(kubectl(&mut c, &legacy).0, Ok(0));
    }

    #[test]
    fn a_validating_admission_policy_on_ephemeralcontainers_denies_a_debug() {
        let vap = json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "no-ec"},
            "spec": {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                "resources": ["pods", "pods/ephemeralcontainers"]}]},
                "validations": [{"expression": "!has(object.spec.ephemeralContainers)",
                    "message": "no debug"}]}});
        let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "no-ec"},
            "spec": {"policyName": "no-ec", "validationActions": ["Deny"]}});
        let mut c = cluster(&[vap, binding], &[pod("t", json!({}))]);
        let (status, err) = kubectl(&mut c, &["debug", "-n", "t", "--image=b", "nginx"]);
        assert_eq!(status, Ok(1), "{err}");
        assert!(
            err.contains("pods \"nginx\" is forbidden: ValidatingAdmissionPolicy 'no-ec' with binding 'no-ec' denied request: no debug"),
            "{err}"
        );
    }
}

//! `kubectl get TYPE [NAME…] [-n NS|-A] [-o jsonpath=…|name|yaml|json]` against the
//! simulated cluster: what the replay holds, what it knows a controller publishes
//! ([`super::listing`]), kubectl's texts (`No resources found …`, NotFound), and a skip
//! naming who makes what it does not hold.

use super::*;

impl Kubectl<'_> {
    /// `kubectl get TYPE [NAME] [-n NS|-A] [-o jsonpath=…|name|json]`.
    pub(super) fn get(&mut self, args: &Args, io: &mut Io) -> Result<i32, Unwind> {
        if let Some(f) = args.unknown_flag(&[
            "n",
            "namespace",
            "o",
            "output",
            "A",
            "all-namespaces",
            "no-headers",
        ]) {
            return Err(skip(f));
        }
        let Some(ty) = args.positional.get(1) else {
            return Err(skip("kubectl get without a type"));
        };
        if ty.contains(',') {
            return Err(skip("kubectl get of several types"));
        }
        let all = args.has(&["A", "all-namespaces"]);
        let ns = if all {
            String::new()
        } else {
            self.namespace(args)
        };
        let mapper = self.cluster.mapper();
        let Some(r) = mapper.resolve(ty).cloned() else {
            return Err(skip(format!("kubectl get of the type `{ty}`")));
        };
        let what = served_as(&r);
        // A cleanup policy may have deleted what is read, at a tick the replay does not
        // compute.
        if crate::offline::conformance::controllers::deleting::ticks_unknown(self.cluster, &r.kind)
        {
            return Err(skip(format!(
                "kubectl get {ty} while a cleanup policy runs"
            )));
        }
        let output = args.get(&["o", "output"]).map(str::to_string);
        let names = &args.positional[2..];
        let mut items: Vec<Value> = Vec::new();
        // The API server authorizes each request before it looks (reads.rs).
        let scope = if r.namespaced { ns.as_str() } else { "" };
        if names.len() > 1 {
            let refused = names
                .iter()
                .filter(|n| self.cluster.authorize_read("get", &r, scope, n).is_err())
                .count();
            if refused > 0 {
                return Err(skip(format!(
                    "kubectl get {ty} of several names as a requester refused some"
                )));
            }
        } else if self.read_refused(
            io,
            if names.is_empty() { "list" } else { "get" },
            &r,
            scope,
            names.first().map(String::as_str).unwrap_or(""),
        )? {
            return Ok(1);
        }
        if names.is_empty() {
            let key = Key {
                group: r.group.clone(),
                kind: r.kind.clone(),
                namespace: if r.namespaced {
                    ns.clone()
                } else {
                    String::new()
                },
                name: String::new(),
            };
            items = self.cluster.list(&key).cloned().collect();
        } else {
            for n in names {
                let (key, found, _) = self.named(ty, n, &ns)?;
                // Missing is known when the namespace's list of the kind is the replay's
                // (listing.rs), less what a controller publishes under this name.
                let known_missing = || match self.listing(&r.kind, &key.namespace) {
                    listing::Listing::Held => true,
                    listing::Listing::With(more) => {
                        !more.iter().any(|o| text(o, "/metadata/name") == key.name)
                    }
                    listing::Listing::Made(_) => false,
                };
                match found {
                    Some(o) => items.push(o),
                    None if !self.cluster_holds_all_of(&r.kind) && !known_missing() => {
                        return Err(skip(format!(
                            "kubectl get {ty} {n}: an object a controller may have made"
                        )));
                    }
                    None => {
                        self.not_found(io, &what, &key.name);
                        return Ok(1);
                    }
                }
            }
        }
        if names.is_empty()
            && let Some(why) = install::unheld(&r.kind, &ns, None, false)
        {
            return Err(skip(why));
        }
        if output.as_deref() != Some("name")
            && let Some(why) = items
                .iter()
                .find_map(crate::offline::conformance::cluster::kindstate::partly_held)
        {
            return Err(skip(format!("kubectl get {ty}: {why}")));
        }
        if names.is_empty() && r.kind == "Event" {
            return self.get_events(args, &ns, io);
        }
        if names.is_empty() && r.kind == "PolicyReport" && r.group == "wgpolicyk8s.io" {
            items =
                crate::offline::conformance::controllers::reports_list::listed(self.cluster, &ns)
                    .map_err(|why| skip(format!("kubectl get {ty}: {why}")))?;
        } else if names.is_empty()
            && crate::offline::conformance::controllers::reports::is_report_kind(&r.kind)
        {
            return Err(skip(format!(
                "kubectl get {ty}: objects the replay's controllers would make"
            )));
        } else if names.is_empty() && r.kind != "UpdateRequest" {
            // install.rs: the UpdateRequests the replay's background work stands for are
            // done and deleted, so they list as held.
            match self.listing(&r.kind, &ns) {
                listing::Listing::Held => {}
                listing::Listing::With(more) => {
                    items.extend(more);
                    items.sort_by_key(|o| {
                        (text(o, "/metadata/namespace"), text(o, "/metadata/name"))
                    });
                }
                listing::Listing::Made(m) => return Err(Unwind::Controller(m)),
            }
        }
        if items.is_empty() && names.is_empty() {
            let said = if !r.namespaced || all {
                "No resources found\n".to_string()
            } else {
                format!("No resources found in {ns} namespace.\n")
            };
            io.print(2, said);
            return Ok(0);
        }
        let single = names.len() == 1;
        match output.as_deref() {
            Some(o) if o.starts_with("jsonpath=") => {
                let template = &o["jsonpath=".len()..];
                let root = if single {
                    items.remove(0)
                } else {
                    json!({"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}})
                };
                let s = super::super::jsonpath::render(template, &root).map_err(skip)?;
                if s.contains(listing::UNKNOWN_VALUE) {
                    io.write(
                        1,
                        Text {
                            s,
                            unknown: Some(Unknown {
                                why: "a value of an object the replay models in part".into(),
                                lines_exact: false,
                                decides: Vec::new(),
                                exact_under: Vec::new(),
                            }),
                        },
                    );
                } else {
                    io.print(1, s);
                }
                Ok(0)
            }
            Some("name") => {
                for o in &items {
                    let r = self.reference(o);
                    io.print(1, format!("{r}\n"));
                }
                Ok(0)
            }
            Some(f @ ("yaml" | "json")) => {
                let doc = printed::document(items, single, f);
                io.write(1, doc.unwrap_or_default());
                Ok(0)
            }
            Some(other) if other != "wide" => Err(skip(format!("kubectl get -o {other}"))),
            _ => {
                // A table: one line per item (and a header without --no-headers).
                let mut s = String::new();
                if !args.has(&["no-headers"]) {
                    s.push_str("NAME\n");
                }
                for o in &items {
                    s.push_str(&text(o, "/metadata/name"));
                    s.push('\n');
                }
                io.write(
                    1,
                    Text {
                        s,
                        unknown: Some(Unknown {
                            why: "a kubectl table's columns".into(),
                            lines_exact: true,
                            ..Default::default()
                        }),
                    },
                );
                Ok(0)
            }
        }
    }

    /// Whether the replay holds every object of `kind` a live cluster would: no
    /// controller it does not run makes them, and no namespace starts with some
    /// (`kube-root-ca.crt`, the `default` ServiceAccount).
    pub(in crate::offline::conformance::script) fn cluster_holds_all_of(&self, kind: &str) -> bool {
        !matches!(
            kind,
            "Pod"
                | "ReplicaSet"
                | "Job"
                | "Event"
                | "Node"
                | "Lease"
                | "Endpoints"
                | "EndpointSlice"
                | "UpdateRequest"
                | "ControllerRevision"
                | "Secret"
                | "ServiceAccount"
                | "ConfigMap"
                | "PolicyReport"
                | "ClusterPolicyReport"
                | "EphemeralReport"
                | "ClusterEphemeralReport"
        )
    }
}

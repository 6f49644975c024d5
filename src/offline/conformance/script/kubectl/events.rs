//! `kubectl get events` (a list): the Events the cluster holds and Kyverno emitted, as
//! a table whose ages, column widths and Kubernetes' own events are unknown — whether it
//! holds one of Kyverno's reasons is known ([`crate::offline::conformance::script::words`]).

use super::{Args, Kubectl, skip};
use crate::offline::conformance::cluster::text;
use crate::offline::conformance::controllers::events;
use crate::offline::conformance::script::exec::{Io, Text, Unknown, Unwind};

impl Kubectl<'_> {
    /// Lists the Events of `namespace` (all when empty).
    pub(super) fn get_events(
        &mut self,
        args: &Args,
        namespace: &str,
        io: &mut Io,
    ) -> Result<i32, Unwind> {
        if args.get(&["o", "output"]).is_some() {
            return Err(skip("kubectl get events -o …"));
        }
        let listed = events::listed(self.cluster, namespace)
            .map_err(|why| skip(format!("kubectl get events: {why}")))?;
        let mut s = String::new();
        if !args.has(&["no-headers"]) {
            s.push_str("LAST SEEN   TYPE   REASON   OBJECT   MESSAGE\n");
        }
        for e in &listed {
            let object = format!(
                "{}/{}",
                text(e, "/involvedObject/kind").to_lowercase(),
                text(e, "/involvedObject/name")
            );
            s.push_str(&format!(
                "0s   {}   {}   {object}   {}\n",
                text(e, "/type"),
                text(e, "/reason"),
                text(e, "/message")
            ));
        }
        let unknown = |why: &str| {
            Some(Unknown {
                why: why.into(),
                decides: events::REASONS.iter().map(|r| r.to_string()).collect(),
                ..Default::default()
            })
        };
        io.write(
            1,
            Text {
                s,
                unknown: unknown("a table of Events (ages, columns, Kubernetes' own events)"),
            },
        );
        // "No resources found" when Kubernetes has no events there either.
        io.write(
            2,
            Text {
                s: String::new(),
                unknown: unknown("whether kubectl found no Events"),
            },
        );
        Ok(0)
    }
}

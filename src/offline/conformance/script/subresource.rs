//! `kubectl scale TYPE NAME --replicas=N`: a write to the parent's `scale` subresource
//! (kubectl pkg/cmd/scale/scale.go; the request itself is in `cluster/subresource.rs`).

use super::super::exec::{Io, Unwind};
use super::{Args, Kubectl, skip};
use crate::offline::conformance::cluster::Answer;

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
}

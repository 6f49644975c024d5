//! A read as an impersonated user (`kubectl get … --as U [--as-group G]`, and the GET
//! `kubectl label|annotate|patch` sends before its patch): the API server authorizes it
//! before its handler looks for the object, so a refused requester is told Forbidden,
//! never NotFound. kubectl prints the API status as `Error from server (REASON): MESSAGE`
//! (k8s.io/kubectl pkg/cmd/util/helpers.go `StandardErrorMessage`) and exits 1.

use super::*;
use crate::offline::rbac::resource::ApiResource;

impl Kubectl<'_> {
    /// Whether the requester may not `verb` (`get` of `name`, `list` without one) `r` in
    /// `namespace` (`""`: every namespace); the refusal printed when not.
    pub(super) fn read_refused(
        &self,
        io: &mut Io,
        verb: &str,
        r: &ApiResource,
        namespace: &str,
        name: &str,
    ) -> Result<bool, Unwind> {
        match self.cluster.authorize_read(verb, r, namespace, name) {
            Ok(()) => Ok(false),
            Err(Answer::Refused(m)) => {
                io.print(2, format!("Error from server (Forbidden): {m}\n"));
                Ok(true)
            }
            Err(Answer::Undecidable(s)) => Err(skip(s.to_string())),
            Err(Answer::Ok) => Ok(false),
        }
    }
}

impl Kubectl<'_> {
    /// The GET of `key` (named by `ty`) a writer sends first, refused: printed.
    pub(super) fn get_refused(&self, io: &mut Io, ty: &str, key: &Key) -> Result<bool, Unwind> {
        let mapper = self.cluster.mapper();
        let Some(r) = mapper.resolve(ty) else {
            return Err(skip(format!("kubectl of the type `{ty}`")));
        };
        self.read_refused(io, "get", r, &key.namespace, &key.name)
    }
}

//! `kubectl get … -o yaml|json`: the objects as documents (kubectl
//! pkg/printers/yaml.go and json.go; several objects are one `v1` `List`). The server
//! adds fields the replay does not keep (`resourceVersion`, `creationTimestamp`,
//! `managedFields`, a webhook's `caBundle`), so the text is marked [`Unknown`]: a
//! command that only needs the read to succeed is judged, a reader of the text is a skip.

use serde_json::{Value, json};

use crate::offline::conformance::cluster::text;
use crate::offline::conformance::script::exec::{Text, Unknown};

/// The document `format` (`yaml` or `json`) prints for `items`; `None` for another
/// format.
pub(super) fn document(mut items: Vec<Value>, single: bool, format: &str) -> Option<Text> {
    // A ConfigMap has no defaults and no server fields besides its metadata's: its data,
    // name, namespace and labels are printed as held (not its annotations: kubectl
    // apply's last-applied configuration is not kept).
    let exact_under: Vec<String> = match items.as_slice() {
        [o] if single && format == "json" && text(o, "/kind") == "ConfigMap" => [
            "/data",
            "/binaryData",
            "/metadata/name",
            "/metadata/namespace",
            "/metadata/labels",
        ]
        .map(String::from)
        .to_vec(),
        _ => Vec::new(),
    };
    let root = if single && items.len() == 1 {
        items.remove(0)
    } else {
        json!({"apiVersion": "v1", "items": items, "kind": "List",
            "metadata": {"resourceVersion": ""}})
    };
    let s = match format {
        "yaml" => crate::yaml::goyaml::encode(&root).unwrap_or_default(),
        "json" => serde_json::to_string_pretty(&root).map(|s| s + "\n").ok()?,
        _ => return None,
    };
    Some(Text {
        s,
        unknown: Some(Unknown {
            why: format!("kubectl -o {format} (the fields the API server adds)"),
            lines_exact: false,
            decides: Vec::new(),
            exact_under,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_is_printed_but_not_claimed_exact() {
        let o = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
        let t = document(vec![o.clone()], true, "yaml").unwrap_or_default();
        assert!(t.s.contains("name: a"), "{}", t.s);
        assert!(t.unknown.is_some());
        let t = document(vec![o.clone(), o], false, "json").unwrap_or_default();
        assert!(t.s.contains("\"kind\": \"List\""), "{}", t.s);
        assert!(document(Vec::new(), false, "wide").is_none());
    }
}

use serde_json::json;

use super::*;

fn obj(api_version: &str, kind: &str, ns: &str, name: &str) -> Value {
    json!({"apiVersion": api_version, "kind": kind,
           "metadata": {"namespace": ns, "name": name}})
}

#[test]
fn kind_selectors_read_as_parse_kind_selector_reads_them() {
    let s = |a: &str, b: &str, c: &str, d: &str| {
        (a.to_string(), b.to_string(), c.to_string(), d.to_string())
    };
    assert_eq!(kind_selector("Node"), s("*", "*", "Node", ""));
    assert_eq!(kind_selector("Node/?*"), s("*", "*", "Node", "?*"));
    assert_eq!(kind_selector("*/*"), s("*", "*", "*", "*"));
    assert_eq!(kind_selector("*/status"), s("*", "*", "*", "status"));
    assert_eq!(kind_selector("v1/Pod"), s("*", "v1", "Pod", ""));
    assert_eq!(
        kind_selector("v2beta1/Pod/status"),
        s("*", "v2beta1", "Pod", "status")
    );
    assert_eq!(
        kind_selector("apps/v1/Deployment"),
        s("apps", "v1", "Deployment", "")
    );
    assert_eq!(
        kind_selector("apps/v1/Deployment/scale"),
        s("apps", "v1", "Deployment", "scale")
    );
    // The last part splits at dots: `Pod.status` is `Pod/status`.
    assert_eq!(kind_selector("Pod.status"), s("*", "*", "Pod", "status"));
    assert_eq!(kind_selector("a/b/c/d/e"), s("", "", "", ""));
}

#[test]
fn entries_are_the_bracketed_parts_and_the_rest_is_ignored() {
    let f = parse("junk [Event,*,*]  [ConfigMap,ns] [[Pod] x [a,b,c,d]");
    assert_eq!(f.len(), 4);
    assert_eq!(f[0].kind, "Event");
    assert_eq!(
        (
            f[1].kind.as_str(),
            f[1].namespace.as_str(),
            f[1].name.as_str()
        ),
        ("ConfigMap", "ns", "")
    );
    assert_eq!(f[2].kind, "Pod");
    // Four parts repeat the previous entry (Go's `resource` keeps its value).
    assert_eq!(f[3], f[2]);
    assert!(parse("").is_empty());
    assert!(parse("[Event,*,*").is_empty());
}

#[test]
fn the_chart_default_filters_what_the_suite_expects_and_nothing_else() {
    let f = parse(&chart_default());
    assert_eq!(f.len(), 104);
    let filtered = |o: &Value, sub: &str| to_filter(&f, o, sub);
    assert!(filtered(&obj("v1", "ConfigMap", "kube-system", "x"), ""));
    assert!(filtered(&obj("v1", "ConfigMap", "kyverno", "x"), ""));
    assert!(filtered(&obj("v1", "Event", "default", "x"), ""));
    assert!(filtered(&obj("v1", "Node", "", "kind-control-plane"), ""));
    assert!(filtered(
        &obj("v1", "Node", "", "kind-control-plane"),
        "status"
    ));
    assert!(filtered(&obj("apps/v1", "ReplicaSet", "default", "r"), ""));
    assert!(filtered(&obj("v1", "Pod", "default", "p"), "binding"));
    assert!(!filtered(&obj("v1", "Pod", "default", "p"), ""));
    assert!(!filtered(&obj("v1", "Pod", "default", "p"), "status"));
    assert!(filtered(
        &obj(
            "v1",
            "Secret",
            "kyverno",
            "kyverno-svc.kyverno.svc.kyverno-tls-pair"
        ),
        ""
    ));
    assert!(filtered(
        &obj(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "",
            "kyverno:admission-controller:core"
        ),
        ""
    ));
    assert!(!filtered(
        &obj(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "",
            "kyverno:other"
        ),
        ""
    ));
    // A Namespace is filtered by its own name.
    assert!(filtered(&obj("v1", "Namespace", "", "kube-system"), ""));
    assert!(filtered(&obj("v1", "Namespace", "", "kyverno"), ""));
    assert!(!filtered(&obj("v1", "Namespace", "", "default"), ""));
    // The cleanup controllers pass the kind as the subresource: only `*/*` entries hold.
    assert!(!filtered(&obj("v1", "Event", "default", "x"), "Event"));
    assert!(filtered(
        &obj("v1", "ConfigMap", "kube-system", "x"),
        "ConfigMap"
    ));
}

#[test]
fn a_removed_entry_no_longer_filters() {
    let edited = chart_default()
        .replace("[Node,*,*]", "")
        .replace("[Node/?*,*,*]", "");
    let f = parse(&edited);
    assert!(!to_filter(
        &f,
        &obj("v1", "Node", "", "kind-control-plane"),
        ""
    ));
    assert!(!to_filter(
        &f,
        &obj("v1", "Node", "", "kind-control-plane"),
        "status"
    ));
}

#[test]
fn the_cache_follows_the_value() {
    let c = Cache::default();
    assert_eq!(c.filters(Some("[Event,*,*]")).len(), 1);
    assert_eq!(c.filters(Some("[Event,*,*] [Node,*,*]")).len(), 2);
    assert!(c.filters(None).is_empty());
    assert_eq!(c.clone().filters(Some("[A]")).len(), 1);
}

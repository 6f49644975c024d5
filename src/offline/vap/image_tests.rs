use super::super::codecs::tests::{run, text, truth};

const SHA: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

#[test]
fn a_short_name_is_docker_hub_library_latest() {
    assert_eq!(
        text("parseImageReference('nginx').registry()"),
        "index.docker.io"
    );
    assert_eq!(text("image('nginx').repository()"), "library/nginx");
    assert_eq!(text("image('nginx').tag()"), "latest");
    assert_eq!(text("image('nginx').identifier()"), "latest");
    assert_eq!(
        text("image('docker.io/team/app:v2').registry()"),
        "index.docker.io"
    );
    assert_eq!(
        text("image('docker.io/team/app:v2').repository()"),
        "team/app"
    );
    assert!(!truth("image('nginx:1.27').containsDigest()"));
}

#[test]
fn registries_ports_and_digests() {
    assert_eq!(
        text("image('ghcr.io/kyverno/kyverno:v1.19.0').registry()"),
        "ghcr.io"
    );
    assert_eq!(
        text("image('localhost:5000/a/b').registry()"),
        "localhost:5000"
    );
    assert_eq!(text("image('localhost/a').repository()"), "a");
    let d = format!("image('ghcr.io/org/app:1.0@{SHA}')");
    assert!(truth(&format!("{d}.containsDigest()")));
    assert_eq!(text(&format!("{d}.digest()")), SHA);
    assert_eq!(text(&format!("{d}.identifier()")), SHA);
    // A digest reference has no tag, even with one written before the digest.
    assert_eq!(text(&format!("{d}.tag()")), "");
    assert_eq!(text(&format!("{d}.repository()")), "org/app");
}

#[test]
fn invalid_references_are_errors_and_is_image_says_so() {
    for bad in [
        "",
        "UPPER/case",
        "nginx:",
        "a@sha256:abc",
        "reg.io:port/x",
        "x:t@g",
    ] {
        assert!(run(&format!("image('{bad}')")).is_err(), "{bad}");
        assert!(!truth(&format!("isImage('{bad}')")), "{bad}");
    }
    assert!(truth("isImage('quay.io/a/b:c')"));
    assert!(truth("image('nginx') == image('nginx')"));
    assert!(!truth("image('nginx') == image('nginx:latest')"));
}

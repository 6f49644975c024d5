//! What `kyverno test` serves CEL from the test file: `globalContext`, `http` and
//! `image` (src/offline/vap/services.rs).

use super::*;

fn services() -> CliServices {
    let mocks = [
        json!({"url": "https://a.example/config", "method": "GET",
               "response": {"body": {"allowed": true}}}),
        json!({"url": "https://a.example/check", "method": "POST",
               "response": {"body": {"allowed": false}, "statusCode": 403}}),
        json!({"url": "https://a.example/any", "response": {"body": {"n": 1}}}),
    ];
    let entries = [
        json!({"name": "deploys", "data": {"deployments": [{"name": "a"}, {"name": "b"}]},
               "projections": [{"name": "items", "path": "deployments"},
                               {"name": "count", "path": "length(deployments)"}]}),
        json!({"name": "inline", "resources": [{"kind": "Deployment", "metadata": {"name": "x"}}]}),
        json!({"name": "files", "resourceFiles": ["more.yaml"], "fieldPath": "[].metadata.name"}),
        json!({"name": "broken", "projections": [{"name": "p", "path": "x"}]}),
    ];
    let contexts = [
        json!({"apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Context",
        "spec": {"images": [{"image": "nginx:1.21", "config": {"architecture": "amd64"}}]}}),
    ];
    let read = |f: &str| {
        assert_eq!(f, "more.yaml");
        vec![
            json!({"kind": "Deployment", "metadata": {"name": "y"}}),
            json!({"kind": "Deployment", "metadata": {"name": "z"}}),
        ]
    };
    CliServices::from_test(&mocks, &entries, &contexts, &read)
}

fn eval_with(services: Option<CliServices>, expr: &str) -> Result<cel::Value, EvalError> {
    let req = VapRequest {
        operation: "CREATE".into(),
        object: json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                       "spec": {"containers": [{"name": "c", "image": "nginx:1.21"}]}}),
        services: services.map(Arc::new),
        ..Default::default()
    };
    eval(&base_context(&req, &Value::Null), expr)
}

fn holds(expr: &str) {
    assert_eq!(
        eval_with(Some(services()), expr),
        Ok(cel::Value::Bool(true)),
        "{expr}"
    );
}

#[test]
fn global_context_entries_are_served_with_projections_and_field_paths() {
    holds("size(globalContext.Get('deploys', '').items) == 2");
    holds("globalContext.get('deploys', 'count') == 2");
    holds("globalContext.Get('deploys', 'items')[1].name == 'b'");
    holds("globalContext.Get('inline', '')[0].metadata.name == 'x'");
    holds("globalContext.Get('files', '') == ['y', 'z']");
    // An entry the test does not mock is null, as Kyverno's fake provider answers.
    holds("globalContext.Get('nothing', '') == null");
    // A missing projection and an entry that cannot be resolved are the policy's errors.
    for e in [
        "globalContext.Get('deploys', 'nope') == 1",
        "globalContext.Get('broken', '') == 1",
    ] {
        let err = eval_with(Some(services()), e).unwrap_err();
        assert_eq!(err.unsupported, None, "{e}: {err:?}");
    }
}

#[test]
fn http_mocks_answer_by_method_then_url_and_other_urls_need_the_network() {
    holds("http.Get('https://a.example/config').body.allowed == true");
    holds("http.Get('https://a.example/config').statusCode == 200");
    holds("http.post('https://a.example/check', {'a': 1}).body.allowed == false");
    holds("http.Post('https://a.example/check', {}, {'h': 'v'}).statusCode == 403");
    // A mock without a method answers either; a client keeps the mocks.
    holds("http.Post('https://a.example/any', {}).body.n == 1");
    holds("http.Client('ca').Get('https://a.example/any').body.n == 1");
    // GET is not mocked for /check: a real request, which kca does not make.
    let e = eval_with(
        Some(services()),
        "http.Get('https://a.example/check').body.allowed",
    )
    .unwrap_err();
    assert!(
        matches!(e.unsupported, Some(Unsupported::Network(_))),
        "{e:?}"
    );
}

#[test]
fn image_metadata_comes_from_the_context_file() {
    holds("image.GetMetadata(object.spec.containers[0].image).config.architecture == 'amd64'");
    holds("image.getMetadata('nginx:1.21').repository == ''");
    let e = eval_with(Some(services()), "image.GetMetadata('busybox').config").unwrap_err();
    assert_eq!(e.unsupported, None, "{e:?}");
    assert!(e.message.contains("not found in the context"), "{e:?}");
}

#[test]
fn without_the_test_files_data_the_libraries_are_not_there() {
    for e in [
        "globalContext.Get('deploys', '') == null",
        "http.Get('https://a.example/config').body.allowed",
        "image.GetMetadata('nginx:1.21').config",
    ] {
        let err = eval_with(None, e).unwrap_err();
        assert!(err.unsupported.is_some(), "{e}: {err:?}");
    }
}

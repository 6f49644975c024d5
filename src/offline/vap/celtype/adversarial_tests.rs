//! Expressions chosen to trip the checker: each either gets cel-go's exact result (as
//! `checker/checker.go`, `checker/types.go` and `cel/validator.go` of v0.26.0 give it in
//! the API server's environment) or is unknown, never a wrong finding.
use serde_json::json;

use super::*;

fn ctx(
    resource: &str,
    group: &str,
    params: Option<Value>,
    variables: Option<Value>,
) -> TypeContext {
    let rules = [json!({"apiGroups": [group], "apiVersions": ["v1"], "resources": [resource]})];
    context(
        &rules,
        params.as_ref(),
        variables.as_ref(),
        &Mapper::built_in(),
    )
    .expect("built-in kind")
}

fn deployments() -> TypeContext {
    ctx("deployments", "apps", None, None)
}

/// The error lines of one kind's result, without the kind and snippets.
fn errors(ctx: &TypeContext, expr: &str) -> Vec<String> {
    match check_expression(ctx, expr) {
        TypeCheck::Known(s) => s
            .lines()
            .filter_map(|l| l.split_once("ERROR: <input>:").map(|(_, e)| e.to_string()))
            .collect(),
        TypeCheck::Unknown(why) => panic!("{expr}: unknown: {why}"),
    }
}

fn clean(ctx: &TypeContext, exprs: &[&str]) {
    for e in exprs {
        assert_eq!(errors(ctx, e), Vec::<String>::new(), "{e}");
    }
}

fn unknown(ctx: &TypeContext, exprs: &[&str]) {
    for e in exprs {
        let got = check_expression(ctx, e);
        assert!(matches!(got, TypeCheck::Unknown(_)), "{e}: {got:?}");
    }
}

#[test]
fn optional_selection_and_index() {
    let d = deployments();
    clean(
        &d,
        &[
            "object.spec.?replicas.orValue(1) > 0",
            "object.spec.?replicas.hasValue()",
            "object.spec.?template.?spec.containers.orValue([]).size() > 0",
            "object.metadata.?labels[?'app'].orValue('') == 'x'",
            "object.metadata.labels[?'app'].hasValue()",
            "object.spec.template.spec.containers[?0].?image.orValue('') != ''",
            "object.spec.?template.spec.containers[0].image.orValue('') != ''",
            "[?object.spec.?replicas, 1].size() == 1",
            "{'a': 1, ?'b': object.spec.?replicas}.size() > 0",
            "optional.of(1).orValue(2) == 2",
            "optional.none().orValue('a') == 'a'",
            "object.spec.?replicas.or(optional.of(3)).value() == 3",
            "object.spec.?replicas == optional.of(1)",
            "object.spec.?replicas != null",
        ],
    );
    // An optional is not its value.
    assert_eq!(
        errors(&d, "object.spec.?replicas == 1"),
        ["1:23: found no matching overload for '_==_' applied to '(optional_type(int), int)'"]
    );
    assert_eq!(
        errors(&d, "object.metadata.labels[?'app'].orValue(1) == 1"),
        ["1:39: found no matching overload for 'orValue' applied to 'optional_type(string).(int)'"]
    );
    // The default must be of the value's type: a map's is not `[]` (two library
    // policies do this; the API server warns as well).
    assert_eq!(
        errors(&d, "object.metadata.?labels.orValue([]).size() > 0"),
        [
            "1:32: found no matching overload for 'orValue' applied to 'optional_type(map(string, string)).(list(dyn))'"
        ]
    );
    // `.?` is placed at its `.`, and still needs the field.
    assert_eq!(
        errors(&d, "object.spec.?nope.orValue(1) == 1"),
        ["1:12: undefined field 'nope'"]
    );
    // `[?e]` needs an optional `e`.
    assert_eq!(
        errors(&d, "[?object.spec.replicas].size() == 1"),
        ["1:14: expected type 'optional_type(int)' but found 'int'"]
    );
    // A namespaced function kca does not know, and a macro it does not model.
    unknown(
        &d,
        &[
            "optional.unwrap([optional.of(1)]).size() == 1",
            "object.spec.?replicas.optMap(r, r + 1).orValue(0) > 0",
        ],
    );
}

#[test]
fn reserved_words_reach_their_escaped_fields() {
    let d = deployments();
    clean(
        &d,
        &[
            "object.metadata.namespace == 'default'",
            "has(object.metadata.namespace)",
            "object.metadata.?namespace.orValue('') == ''",
            "namespaceObject.metadata.namespace == ''",
        ],
    );
    assert_eq!(
        errors(&d, "object.metadata.__name__ == 'x'"),
        ["1:16: undefined field '__name__'"]
    );
}

#[test]
fn has_comprehensions_and_ternaries() {
    let d = deployments();
    clean(
        &d,
        &[
            "has(object.spec.template.spec.containers[0].ports)",
            "!has(object.metadata.labels) || object.metadata.labels.all(k, k != '')",
            "has(object.metadata.labels.app)",
            "object.metadata.labels.all(k, k.startsWith('a') && object.metadata.labels[k] != '')",
            "object.spec.template.spec.containers.filter(c, c.name == 'a').map(c, c.image).all(i, i != '')",
            "object.spec.template.spec.containers.map(c, has(c.ports), c.name).size() >= 0",
            "object.spec.template.spec.containers.exists_one(c, c.name == 'a')",
            "(object.spec.replicas > 1 ? 'a' : 'b').startsWith('a')",
            "[1, 2].map(x, x * 2).all(y, y > 0)",
            "[].all(x, x)",
        ],
    );
    assert_eq!(
        errors(&d, "object.spec.template.spec.containers.exists(c, c.name)"),
        ["1:49: expected type 'bool' but found 'string'"]
    );
    assert_eq!(
        errors(
            &d,
            "object.spec.template.spec.containers.all(c, c.nope == 1)"
        ),
        ["1:46: undefined field 'nope'"]
    );
    assert_eq!(
        errors(&d, "object.metadata.labels.map(k, k + 1).size() > 0"),
        ["1:33: found no matching overload for '_+_' applied to '(string, int)'"]
    );
    assert_eq!(
        errors(&d, "object.spec.replicas.all(x, true)"),
        [
            "1:12: expression of type 'int' cannot be range of a comprehension (must be list, map, or dynamic)"
        ]
    );
    assert_eq!(
        errors(&d, "object.spec.replicas > 1 ? 'a' : 1"),
        ["1:26: found no matching overload for '_?_:_' applied to '(bool, string, int)'"]
    );
    assert_eq!(
        errors(&d, "object.spec.replicas ? 1 : 2"),
        ["1:22: found no matching overload for '_?_:_' applied to '(int, int, int)'"]
    );
    unknown(
        &d,
        &[
            // The error is in the macro's expansion (`_?_:_` of the step), placed where
            // kca does not know.
            "object.spec.template.spec.containers.exists_one(c, c.name)",
            "object.spec.template.spec.containers.filter(c, c.name).size() > 0",
            // Two-variable comprehensions.
            "object.metadata.labels.all(k, v, v != '')",
            // A free type parameter: cel-go prints it as `_var0`.
            "[] && true",
            // Types named per policy.
            "object.spec.template.spec.containers['a'] == 1",
            "'a' in object.spec.template.spec.containers",
            "size(object.spec) > 0",
        ],
    );
}

#[test]
fn numbers_do_not_mix_but_compare() {
    let d = deployments();
    clean(
        &d,
        &[
            "object.spec.replicas > 1u",
            "object.spec.replicas < 2.5",
            "object.spec.replicas / 2 > 1",
            "object.spec.replicas % 2 == 0",
            "double(object.spec.replicas) * 2.0 > 1.0",
            "uint(object.spec.replicas) + 1u > 1u",
            "-object.spec.replicas < 0",
            "object.metadata.generation - 1 >= 0",
        ],
    );
    for (e, err) in [
        (
            "object.spec.replicas + 1u > 1",
            "1:22: found no matching overload for '_+_' applied to '(int, uint)'",
        ),
        (
            "object.spec.replicas * 2.0 > 1.0",
            "1:22: found no matching overload for '_*_' applied to '(int, double)'",
        ),
        (
            "object.spec.replicas % 2.0 == 0.0",
            "1:22: found no matching overload for '_%_' applied to '(int, double)'",
        ),
        (
            "-1u == 1u",
            "1:1: found no matching overload for '-_' applied to '(uint)'",
        ),
        (
            "object.spec.replicas == 1.0",
            "1:22: found no matching overload for '_==_' applied to '(int, double)'",
        ),
        (
            "object.metadata.name > 1",
            "1:22: found no matching overload for '_>_' applied to '(string, int)'",
        ),
    ] {
        assert_eq!(errors(&d, e), [err], "{e}");
    }
}

#[test]
fn literals_must_be_homogeneous() {
    let d = deployments();
    assert_eq!(
        errors(&d, "[1, 'a'].size() == 2"),
        ["1:5: expected type 'int' but found 'string'"]
    );
    assert_eq!(
        errors(&d, "[1, 2u, 'a'].size() == 3"),
        ["1:5: expected type 'int' but found 'uint'"]
    );
    assert_eq!(
        errors(&d, "{'a': 1, 'b': 'c', 1: 2}.size() == 3"),
        [
            "1:15: expected type 'int' but found 'string'",
            "1:20: expected type 'string' but found 'int'"
        ]
    );
    // `dyn` is not `int` to the validator.
    let p = ctx(
        "deployments",
        "apps",
        Some(json!({"apiVersion": "rules.example.com/v1", "kind": "Limit"})),
        None,
    );
    assert_eq!(
        errors(&p, "object.spec.replicas in [1, params.max]"),
        ["1:35: expected type 'int' but found 'dyn'"]
    );
    clean(
        &d,
        &[
            "object.spec.replicas in [1, 2]",
            "[[], [1]].size() == 2",
            "object.metadata.name in [object.metadata.generateName, 'a']",
        ],
    );
    // A type error first: the validators do not run.
    assert_eq!(
        errors(&d, "[1, 'a'].size() == 'x'"),
        ["1:17: found no matching overload for '_==_' applied to '(int, string)'"]
    );
}

#[test]
fn regex_literals_are_vouched_for_or_unknown() {
    let d = deployments();
    clean(
        &d,
        &[
            "object.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",
            "matches(object.metadata.name, '(?i)^nginx')",
            "object.metadata.name.matches(object.metadata.generateName)",
        ],
    );
    unknown(
        &d,
        &[
            "object.metadata.name.matches('(')",
            "object.metadata.name.matches('a**')",
            "object.metadata.name.matches('\\\\p{Greek}')",
        ],
    );
    assert_eq!(
        errors(&d, "object.metadata.name.matches(1)"),
        ["1:29: found no matching overload for 'matches' applied to 'string.(int)'"]
    );
}

#[test]
fn variables_params_and_the_request() {
    let vars = json!([
        // Containers and init containers are lists of two struct types: `+` fails, so
        // the variable is `dyn`.
        {"name": "all", "expression": "object.spec.containers + object.spec.?initContainers.orValue([])"},
        {"name": "names", "expression": "object.spec.containers.map(c, c.name)"},
        {"name": "n", "expression": "size(object.spec.containers)"},
        // A variable declared later is not there yet.
        {"name": "early", "expression": "variables.late"},
        {"name": "late", "expression": "1"},
        {"name": "opt", "expression": "object.spec.?hostNetwork"},
    ]);
    let p = ctx(
        "pods",
        "",
        Some(json!({"apiVersion": "rules.example.com/v1", "kind": "Limit"})),
        Some(vars),
    );
    clean(
        &p,
        &[
            "variables.all.all(c, c.whatever == 1)",
            "variables.names.all(n, n.startsWith('a'))",
            "variables.n <= params.max",
            "variables.early.anything",
            "variables.late + 1 == 2",
            // An optional variable is `dyn`.
            "variables.opt == true",
            "params.spec.limits.exists(l, l.name == object.metadata.name)",
            "oldObject == null || oldObject.spec.nodeName == object.spec.nodeName",
            "request.operation == 'CREATE' && request.userInfo.groups.exists(g, g == 'x')",
            "request.userInfo.extra['a'].size() > 0",
            "request.options.dryRun == true",
            "request.kind.group == '' && request.resource.resource == 'pods'",
            "namespaceObject.metadata.labels['a'] == 'b'",
            "namespaceObject.status.conditions.all(c, c.status != '')",
            "authorizer.group('').resource('pods').namespace('a').check('get').allowed()",
            "dyn(object.spec).anything == 1",
        ],
    );
    assert_eq!(
        errors(&p, "variables.names.all(n, n > 1)"),
        ["1:26: found no matching overload for '_>_' applied to '(string, int)'"]
    );
    assert_eq!(
        errors(&p, "variables.missing == 1"),
        ["1:10: undefined field 'missing'"]
    );
    assert_eq!(
        errors(&p, "oldObject.spec.nodeName == null"),
        ["1:25: found no matching overload for '_==_' applied to '(string, null)'"]
    );
    assert_eq!(
        errors(&p, "request.dryRun == 'true'"),
        ["1:16: found no matching overload for '_==_' applied to '(bool, string)'"]
    );
    assert_eq!(
        errors(&p, "request.nope == 1"),
        ["1:8: undefined field 'nope'"]
    );
    assert_eq!(
        errors(&p, "namespaceObject.metadata.nope == 'b'"),
        ["1:25: undefined field 'nope'"]
    );
    // The authorizer's object types have fields cel-go reports otherwise.
    unknown(&p, &["authorizer.requestResource.check('get').allowed()"]);
}

#[test]
fn kubernetes_library_functions_are_unknown_or_exact() {
    let d = deployments();
    clean(
        &d,
        &[
            "object.metadata.name.lowerAscii() == 'a'",
            "object.metadata.name.split('-').size() > 0",
            "object.metadata.name.replace('a', 'b') != ''",
            "object.metadata.name.split('-').join('.') != ''",
            "string(object.spec.replicas) == '1'",
            "int('1') == object.spec.replicas",
            // The optional library's (version 2).
            "[1, 2].first().orValue(0) == 1",
            "object.spec.template.spec.containers.last().?name.orValue('') != ''",
        ],
    );
    assert_eq!(
        errors(&d, "object.metadata.name.contains(1)"),
        ["1:30: found no matching overload for 'contains' applied to 'string.(int)'"]
    );
    // Functions whose every overload kca does not declare.
    unknown(
        &d,
        &[
            "object.metadata.name.indexOf('a') > 0",
            "object.metadata.name.substring(1) == 'a'",
            "'%s'.format([1, 'a']) == ''",
            "[1, 2].isSorted()",
            "[1, 2].sum() == 3",
            "quantity('1Gi').isGreaterThan(quantity('1Mi'))",
            "url('https://x').getHost() == 'x'",
            "ip('1.2.3.4').family() == 4",
            "cidr('10.0.0.0/8').containsIP('10.0.0.1')",
            "isSemver('1.2.3')",
            "semver('1.2.3').major() == 1",
            "format.dns1123Label().validate('a').hasValue()",
            "sets.contains([1], [1])",
            "strings.quote('a') != ''",
            "object.metadata.creationTimestamp > timestamp('2020-01-01T00:00:00Z')",
            "duration('1h') > duration('1m')",
            "object.metadata.name.trim(1) == ''",
            "object.metadata.name.split('-', 2).size() > 0",
            "object.metadata.name.first()",
        ],
    );
}

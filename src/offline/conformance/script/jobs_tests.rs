//! The shell's functions, loops, traps, arithmetic and `kubectl proxy` + `curl`, run
//! through a whole script operation.

use serde_json::{Value, json};

use crate::offline::conformance::chainsaw::{Bindings, Script, ScriptBody};
use crate::offline::conformance::cluster::{Answer, Cluster};
use crate::offline::conformance::script::{Ran, run};

fn script(content: &str, check: Option<Value>) -> Script {
    Script {
        op: "script",
        body: ScriptBody::Shell(content.into()),
        env: Vec::new(),
        check,
        unmodelled: None,
    }
}

fn ran(src: &str, check: Option<Value>, files: &[(&str, &str)], c: &mut Cluster) -> Ran {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in files {
        std::fs::write(dir.path().join(name), body).unwrap();
    }
    run(&script(src, check), c, dir.path(), &Bindings::new())
}

fn out_is(src: &str, want: &str) {
    let mut c = Cluster::new("t");
    let r = ran(
        src,
        Some(json!({"($stdout)": format!("{want}\n")})),
        &[],
        &mut c,
    );
    match r {
        Ran::Agree(_) => {}
        Ran::Disagree(d) => panic!("{src}: {d}"),
        Ran::Skip(s) => panic!("{src}: skipped: {s}"),
        Ran::Controller(_) => panic!("{src}: controller"),
    }
}

#[test]
fn arithmetic_functions_and_loops_run_as_bash_runs_them() {
    out_is("i=0\nuntil [ $i -eq 3 ]; do i=$((i+1)); done\necho $i", "3");
    out_is(
        "i=5\nwhile [ $i -gt 2 ]; do i=$(( $i - 1 )); done; echo \"$i\"",
        "2",
    );
    out_is(
        "f() { echo \"$# $1 $2\"; return 3; }\nf a b || echo rc=$?",
        "2 a b\nrc=3",
    );
    out_is("function g {\n  echo in-g \"$@\"\n}\ng x y", "in-g x y");
    out_is("while true; do echo once; break; done", "once");
}

#[test]
fn an_exit_trap_runs_when_the_shell_ends() {
    out_is(
        "trap 'echo bye' EXIT\necho hi\nexit 0\necho never",
        "hi\nbye",
    );
    out_is("set -e\ntrap 'echo bye' EXIT\nfalse\necho never", "bye");
    let mut c = Cluster::new("t");
    let r = ran("trap 'echo bye' EXIT\nexit 4", None, &[], &mut c);
    assert!(matches!(r, Ran::Disagree(d) if d.contains("exited with 4")));
}

#[test]
fn a_loop_past_its_bound_is_a_skip() {
    let mut c = Cluster::new("t");
    let r = ran("while true; do :; done", None, &[], &mut c);
    assert!(matches!(r, Ran::Skip(s) if s.contains("bound")), "loop");
    let r = ran("sleep 100 &", None, &[], &mut c);
    assert!(matches!(r, Ran::Skip(s) if s.contains("background job")));
}

#[test]
fn curl_reaches_the_api_server_only_through_a_running_proxy() {
    let mut c = Cluster::new("t");
    // No proxy: the connection is refused (exit 7).
    let r = ran(
        "curl -s http://localhost:8001/; echo $?",
        Some(json!({"($stdout)": "7\n"})),
        &[],
        &mut c,
    );
    assert!(matches!(r, Ran::Agree(_)));
    let src = "kubectl proxy &\npid=$!\nuntil curl --output /dev/null -fsSL http://localhost:8001/; do sleep 1; done\nkill $pid\necho up";
    let r = ran(src, None, &[], &mut c);
    assert!(matches!(r, Ran::Agree(_)));
    // Left running, it would answer later scripts.
    let r = ran("kubectl proxy &", None, &[], &mut c);
    assert!(matches!(r, Ran::Skip(s) if s.contains("left running")));
    let r = ran(
        "kubectl proxy &\ncurl -s https://example.com/; kill $!",
        None,
        &[],
        &mut c,
    );
    assert!(matches!(r, Ran::Skip(s) if s.contains("not the kubectl proxy")));
}

#[test]
fn an_eviction_refused_by_a_policy_is_read_by_grep() {
    let mut c = Cluster::new("t");
    let policy = json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
        "metadata": {"name": "no-evict"},
        "spec": {"background": false, "rules": [{"name": "r",
            "match": {"any": [{"resources": {"kinds": ["Pod/eviction"]}}]},
            "validate": {"failureAction": "Enforce", "message": "eviction of 'keep' is denied",
                "deny": {"conditions": {"all": [{"key": "{{ request.name }}",
                    "operator": "Equals", "value": "keep"}]}}}}]}});
    assert!(matches!(c.apply(&policy, false), Answer::Ok));
    for name in ["keep", "go"] {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "t"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        assert!(matches!(c.apply(&pod, false), Answer::Ok));
    }
    let ev = |n: &str| {
        format!(
            "{{\"apiVersion\": \"policy/v1\", \"kind\": \"Eviction\",\n \"metadata\": {{\"name\": \"{n}\", \"namespace\": \"t\"}}}}"
        )
    };
    let files = [("keep.json", ev("keep")), ("go.json", ev("go"))];
    let files: Vec<(&str, &str)> = files.iter().map(|(a, b)| (*a, b.as_str())).collect();
    let evict = |n: &str| {
        format!(
            "kubectl proxy &\ntrap 'kill $!' EXIT\nif curl -v -H 'Content-type: application/json' http://localhost:8001/api/v1/namespaces/t/pods/{n}/eviction -d @{n}.json 2>&1 | grep -q \"eviction of 'keep' is denied\"; then exit 0; else exit 1; fi"
        )
    };
    let r = ran(&evict("keep"), None, &files, &mut c);
    assert!(matches!(r, Ran::Agree(_)), "refused");
    // Evicted: the body's words are not decided, so grep cannot say no.
    let r = ran(&evict("go"), None, &files, &mut c);
    assert!(
        matches!(r, Ran::Skip(s) if s.contains("grep reads")),
        "evicted"
    );
}

#[test]
fn pattern_substitutions_edit_a_resource_filter_list_as_bash_does() {
    let src = r#"f='"[Event,*,*][Node,*,*][Node/?*,*,*][APIService,*,*]"'
f="${f//\[Node,\*,\*\]/}"
f="${f//\[Node\/?\*,\*,\*\]/}"
echo "$f"
g="${f%?}"
g="${g}""[Node,*,*][Node/?*,*,*]\""
echo "$g" ${#g} ${h:-dflt} ${f#\"}"#;
    out_is(
        src,
        "\"[Event,*,*][APIService,*,*]\"\n\"[Event,*,*][APIService,*,*][Node,*,*][Node/?*,*,*]\" 52 dflt [Event,*,*][APIService,*,*]\"",
    );
    let mut c = Cluster::new("t");
    let r = ran("x=ab; echo \"${x//a/&}\"", None, &[], &mut c);
    assert!(matches!(r, Ran::Skip(s) if s.contains("patsub_replacement")));
}

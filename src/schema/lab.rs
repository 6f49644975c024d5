//! The schema of `lab.yaml`, after `content::lab` (one definition per mapping the decoder
//! reads: the top, tasks, each check kind, setup steps, mutants).

use serde_json::{Value, json};

use super::{Kind, closed, described, discriminated, document, int, list, merged, r};

const DESCRIPTION: &str = "A kca lab (labs/<id>/lab.yaml). Reference: labs/README.md. \
Check with `kca validate labs/<id>`, prove it gradable with `kca lab verify --offline <id>`.";

/// The check kinds and the definition of each (`content::lab::KINDS`).
pub(super) const CHECK_KINDS: [(&str, &str); 9] = [
    ("file", "check-file"),
    ("resource", "check-resource"),
    ("can-i", "check-can-i"),
    ("admission", "check-admission"),
    ("generated", "check-generated"),
    ("command", "check-command"),
    ("accepted", "check-accepted"),
    ("least-privilege", "check-least-privilege"),
    ("observed", "check-observed"),
];

pub(super) fn schema() -> Value {
    let top = closed(
        "",
        &["apiVersion", "kind", "metadata", "solution", "tasks"],
        json!({
            "apiVersion": {"const": crate::content::API_VERSION},
            "kind": {"const": "Lab"},
            "metadata": closed(
                "Who the lab is.",
                &["id", "title"],
                json!({
                    "id": described("The lab id: the folder's name, a label value (`kca lab start ID`).", r("labId")),
                    "title": r("text"),
                    "module": described("The course module it belongs to.", int(0, 99)),
                    "concepts": described("Concept tags: a failed check queues the quiz questions that share one.", list(r("scalar"))),
                    "description": r("text")
                }),
            ),
            "workspace": closed(
                "The learner's folder.",
                &[],
                json!({
                    "dir": described("The folder's name under the workspace root (default: the lab id).", r("labId")),
                    "apply": described("Workspace files or folders the learner applies (default: every YAML file).", list(r("path")))
                }),
            ),
            "vars": {
                "description": "Template variables for `template: true` files and `command` arguments, besides `lab`, `workspace` and `lab_dir`.",
                "type": "object",
                "additionalProperties": r("scalar")
            },
            "starter": described("Files copied from starter/ into the workspace at `lab start`.", list(r("fileRef"))),
            "fixtures": described("Kubernetes objects beside lab.yaml applied at start (labelled as the lab's).", list(r("path"))),
            "solution": described("Files under solution/ laid over the starter by `lab verify`: they solve every task.", list(r("fileRef"))),
            "tasks": {"type": "array", "minItems": 1, "items": r("task")},
            "mutants": described("Realistic wrong answers, each naming the checks that must fail on it.", list(r("mutant"))),
            "equivalentMutants": described(
                "Derived mutants (`kca lab verify` ids) declared right answers, with the reason.",
                list(closed("", &["id", "reason"], json!({
                    "id": described("`operator:file#pointer`, as `kca lab verify` prints a survivor.", json!({"type": "string", "pattern": "^[a-zA-Z-]+:"})),
                    "reason": r("text")
                }))),
            ),
            "reset": closed(
                "What `lab reset` deletes besides the kinds of the fixtures and the solution.",
                &[],
                json!({
                    "kinds": list(closed("", &["apiVersion", "kind"], json!({"apiVersion": r("scalar"), "kind": r("scalar")})))
                }),
            )
        }),
    );
    let check_common = json!({
        "id": described("Unique in the lab (mutants name checks by id).", r("scalar")),
        "kind": {"enum": CHECK_KINDS.iter().map(|(k, _)| *k).collect::<Vec<_>>()},
        "title": r("text"),
        "points": described("Default 1.", int(0, 100)),
        "timeout": described("Seconds the check may wait (default 60).", int(1, 600)),
        "guard": described("The check holds before the learner acts (a rule the starter ships that must be kept); it earns points only once its task's other checks pass. Default false.", json!({"type": "boolean"})),
        "feedback": r("checkFeedback")
    });
    let check = |description: &str, required: &[&str], extra: Value| {
        let req: Vec<&str> = ["id", "kind"].iter().chain(required).copied().collect();
        closed(description, &req, merged(&check_common, extra))
    };
    let tree = json!({"description": "A partial tree the object must match (`$matches`, `$inOrder`, `$anyOf` allowed).", "type": "object"});
    let defs = json!({
        "checkFeedback": closed("What the learner reads when the check fails (and passes).", &[], json!({"fail": r("text"), "pass": r("text")})),
        "labId": {
            "description": "Lowercase letters, digits and `-` (a folder name and a label value).",
            "type": "string",
            "pattern": "^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"
        },
        "path": {
            "description": "A relative path inside its folder (no leading `/`, no `..`).",
            "type": "string",
            "minLength": 1,
            "not": {"pattern": "^/|(^|/)\\.\\.(/|$)"}
        },
        "fileRef": {
            "description": "A path, or {path, template: true} for a file rendered with tera.",
            "oneOf": [
                r("path"),
                closed("", &["path"], json!({"path": r("path"), "template": {"type": "boolean"}}))
            ]
        },
        "objectRef": closed(
            "One Kubernetes object.",
            &["apiVersion", "kind", "name"],
            json!({"apiVersion": r("scalar"), "kind": r("scalar"), "namespace": r("scalar"), "name": r("scalar")}),
        ),
        "identity": closed(
            "Who asks: `user` (with `groups`) or `serviceAccount: NAMESPACE:NAME`.",
            &[],
            json!({
                "user": r("scalar"),
                "groups": list(r("scalar")),
                "serviceAccount": {"type": "string", "pattern": "^[^:]+:[^:]+$"}
            }),
        ),
        "probe": {
            "description": "A file beside lab.yaml holding one object, or the object inline.",
            "oneOf": [
                r("path"),
                {"type": "object", "required": ["apiVersion", "kind"]}
            ]
        },
        "regexes": {
            "description": "A regular expression or a list of them (line anchors: `^ok$` finds a line).",
            "oneOf": [{"type": "string"}, list(json!({"type": "string"}))]
        },
        "task": closed(
            "One task: instructions, hints and the checks that grade it.",
            &["id", "title", "instructions", "checks"],
            json!({
                "id": r("scalar"),
                "title": r("text"),
                "instructions": r("text"),
                "hints": described("Shown one at a time (`kca lab hint`).", list(r("text"))),
                "lesson": r("lessonLink"),
                "setup": described("An incident staged when the learner reaches this task (not on the first task).", list(r("setupStep"))),
                "checks": {"type": "array", "minItems": 1, "items": r("check")}
            }),
        ),
        "setupStep": {
            "description": "Exactly one of `apply`, `delete`, `patch`, `revoke`; only objects the lab owns.",
            "type": "object",
            "minProperties": 1,
            "maxProperties": 1,
            "properties": {
                "apply": described("A file of objects beside lab.yaml.", r("path")),
                "delete": r("objectRef"),
                "patch": closed("A JSON merge patch on an owned object.", &["object", "merge"], json!({
                    "object": r("objectRef"),
                    "merge": {"type": "object"}
                })),
                "revoke": closed(
                    "Takes `verb` on `resource` away from a subject, wherever the learner granted it.",
                    &["as", "verb", "resource"],
                    json!({"as": r("identity"), "verb": r("scalar"), "group": r("scalar"), "resource": r("scalar")}),
                )
            },
            "additionalProperties": false
        },
        "check": {
            "description": "One check; `kind` says which fields it takes.",
            "type": "object",
            "required": ["id", "kind"],
            "properties": check_common,
            "allOf": discriminated("kind", &CHECK_KINDS)
        },
        "check-file": check("A workspace file exists, parses and holds the given kinds / a matching document.", &["path"], json!({
            "path": r("path"),
            "parses": described("Default true.", json!({"type": "boolean"})),
            "kinds": list(r("scalar")),
            "matches": tree
        })),
        "check-resource": check("An object is in the cluster (or absent), matching a partial tree.", &["object"], json!({
            "object": r("objectRef"),
            "state": {"enum": ["present", "absent"]},
            "matches": tree,
            "installed": described("The object belongs to the installation (offline: skipped, not failed).", json!({"type": "boolean"}))
        })),
        "check-can-i": check("What `kubectl auth can-i --as` answers.", &["as", "verb", "resource", "expect"], json!({
            "as": r("identity"),
            "verb": r("scalar"),
            "resource": r("scalar"),
            "group": r("scalar"),
            "subresource": r("scalar"),
            "namespace": r("scalar"),
            "name": r("scalar"),
            "expect": {"type": "boolean"}
        })),
        "check-admission": check("A probe object dry-run created (or updated): allowed or denied.", &["probe", "expect"], json!({
            "probe": r("probe"),
            "operation": {"enum": ["create", "update"]},
            "as": r("identity"),
            "expect": {"enum": ["allowed", "denied"]},
            "deniedBy": closed("Who must deny: `policy` (and `rule`) or `validatingAdmissionPolicy`.", &[], json!({
                "policy": r("scalar"),
                "rule": r("scalar"),
                "validatingAdmissionPolicy": r("scalar")
            })),
            "assert": tree,
            "leftAlone": described("The probe lies outside the scope: admitted and unchanged.", json!({"type": "boolean"})),
            "policies": described("Policies to wait for (Ready) before probing.", list(r("scalar")))
        })),
        "check-generated": check("A real trigger is created; the generated object must appear.", &["trigger", "expect"], json!({
            "trigger": r("probe"),
            "expect": r("objectRef"),
            "matches": tree,
            "policy": r("scalar"),
            "sync": closed("The source changes; the generated copy must follow.", &["source", "patch", "matches"], json!({
                "source": r("objectRef"),
                "patch": {"type": "object"},
                "matches": tree
            })),
            "leftAlone": described("The trigger lies outside the rule's scope: nothing is generated.", json!({"type": "boolean"}))
        })),
        "check-command": check("A program's exit code and output.", &["run"], json!({
            "run": described("Program, then arguments (`{{ lab }}`, `{{ workspace }}`, vars).", json!({"type": "array", "minItems": 1, "items": r("scalar")})),
            "env": {"type": "object", "additionalProperties": r("scalar")},
            "stdin": r("scalar"),
            "exit": {"oneOf": [int(0, 255), {"const": "nonzero"}]},
            "stdout": r("regexes"),
            "stderr": r("regexes"),
            "skipExit": described("An exit code that means `skipped` (a tool is missing).", int(1, 255))
        })),
        "check-accepted": check("Kyverno's verdict on creating the learner's policy.", &["path", "expect"], json!({
            "path": r("path"),
            "document": closed("Which document of the file.", &["kind", "name"], json!({"kind": r("scalar"), "name": r("scalar")})),
            "expect": {"enum": ["accepted", "rejected"]},
            "message": r("regexes")
        })),
        "check-least-privilege": check("The permissions the learner's objects give a subject: required ⊆ granted ⊆ allowed.", &["as", "allowed"], json!({
            "as": r("identity"),
            "required": list(r("grant")),
            "allowed": list(r("grantAllowed"))
        })),
        "check-observed": check("A learner's recorded observation compared with what this run's target returned.", &["path", "from", "fields"], json!({
            "path": r("path"),
            "from": closed("`probe` (a denial) or `trigger` (with optional `policy`: an UpdateRequest).", &[], json!({
                "probe": r("probe"),
                "trigger": r("probe"),
                "policy": r("scalar"),
                "starter": list(r("scalar"))
            })),
            "fields": {
                "description": "The learner's key → the fact it must hold.",
                "type": "object",
                "additionalProperties": {"enum": ["state", "verb", "resource", "path", "container"]}
            }
        })),
        "grant": closed("Verbs on resources of API groups (`*` allowed), in `namespace` or everywhere.", &["resources", "verbs"], json!({
            "groups": described("Default [\"\"] (the core group).", list(r("scalar"))),
            "resources": {"type": "array", "minItems": 1, "items": r("scalar")},
            "verbs": {"type": "array", "minItems": 1, "items": r("scalar")},
            "namespace": r("scalar")
        })),
        "grantAllowed": closed("Verbs on resources of API groups (`*` allowed), in every namespace.", &["resources", "verbs"], json!({
            "groups": described("Default [\"\"] (the core group).", list(r("scalar"))),
            "resources": {"type": "array", "minItems": 1, "items": r("scalar")},
            "verbs": {"type": "array", "minItems": 1, "items": r("scalar")}
        })),
        "mutant": closed(
            "A wrong answer over the solution: files, edits or removals.",
            &["id", "description", "fails"],
            json!({
                "id": r("labId"),
                "description": r("text"),
                "files": described("Files under mutants/<id>/ laid over the solution.", list(r("fileRef"))),
                "edits": list(closed("Replace text in a solution (or starter) file.", &["path", "find", "replace"], json!({
                    "path": r("path"),
                    "find": r("scalar"),
                    "replace": r("scalar")
                }))),
                "remove": list(r("path")),
                "fails": {"type": "array", "minItems": 1, "items": r("scalar")}
            }),
        )
    });
    document(Kind::Lab, "kca Lab", DESCRIPTION, top, defs)
}

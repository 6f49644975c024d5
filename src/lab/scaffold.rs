//! `kca lab new ID`: writes a new lab folder with one example task per check kind, a
//! starter, a solution, a fixture, a probe and a mutant — a lab that validates as written,
//! for an instructor to edit. Never overwrites an existing folder.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

const LAB: &str = r#"apiVersion: kca.dev/v1alpha1
kind: Lab
metadata:
  id: __ID__
  title:
    ja: __ID__(新しいラボ)
    en: __ID__ (new lab)
  module: 0
  concepts: [validate, generate, rbac]
  description:
    ja: このラボの目的を1〜2文で書きます。
    en: Say in a sentence or two what this lab teaches.
workspace:
  apply: [policy.yaml, rbac.yaml]
vars:
  namespace: __ID__
starter:
  - {path: README.md, template: true}
  - policy.yaml
  - rbac.yaml
  - gate.sh
fixtures: [fixtures/namespace.yaml]
solution: [policy.yaml, rbac.yaml, gate.sh]
tasks:
  - id: write-policy
    title: {ja: ポリシーを書く, en: Write the policy}
    instructions:
      ja: policy.yaml に ClusterPolicy `require-team` を書きます。
      en: Write the ClusterPolicy `require-team` in policy.yaml.
    hints:
      - {ja: kind は ClusterPolicy です。, en: The kind is ClusterPolicy.}
      - {ja: metadata.name を確認しましょう。, en: Check metadata.name.}
    checks:
      - id: policy-file
        kind: file
        path: policy.yaml
        kinds: [ClusterPolicy]
        matches: {kind: ClusterPolicy, metadata: {name: require-team}}
        feedback:
          fail: {ja: policy.yaml に require-team がありません。, en: policy.yaml has no require-team.}
  - id: apply-policy
    title: {ja: ポリシーを適用する, en: Apply the policy}
    instructions:
      ja: kubectl apply -f policy.yaml で適用します。
      en: Apply it with kubectl apply -f policy.yaml.
    checks:
      - id: policy-applied
        kind: resource
        object: {apiVersion: kyverno.io/v1, kind: ClusterPolicy, name: require-team}
        matches: {spec: {rules: [{name: check-team}]}}
  - id: grant-read
    title: {ja: 読み取り権限, en: Grant read access}
    instructions:
      ja: rbac.yaml で ServiceAccount `reader` に ConfigMap の get を許可します。
      en: In rbac.yaml, let the ServiceAccount `reader` get ConfigMaps.
    checks:
      - id: reader-can-get
        kind: can-i
        as: {serviceAccount: "__ID__:reader"}
        verb: get
        resource: configmaps
        namespace: __ID__
        expect: true
  - id: deny-unlabelled
    title: {ja: ラベルのないPodを拒否, en: Deny unlabelled Pods}
    instructions:
      ja: team ラベルのない Pod は拒否されるはずです。
      en: A Pod without a team label should be denied.
    checks:
      - id: pod-denied
        kind: admission
        probe: probes/pod-without-team.yaml
        expect: denied
        deniedBy: {policy: require-team, rule: check-team}
  - id: generate-defaults
    title: {ja: 既定値の生成, en: Generate defaults}
    instructions:
      ja: 新しいネームスペースに ConfigMap `team-defaults` が生成されます。
      en: New namespaces get a ConfigMap `team-defaults`.
    checks:
      - id: defaults-generated
        kind: generated
        timeout: 60
        trigger: {apiVersion: v1, kind: Namespace, metadata: {generateName: __ID__-probe-}}
        expect: {apiVersion: v1, kind: ConfigMap, name: team-defaults}
        policy: require-team
  - id: gate
    title: {ja: ゲートスクリプト, en: Gate script}
    instructions:
      ja: gate.sh が 0 で終わり ok と出力するようにします。
      en: Make gate.sh exit 0 and print ok.
    checks:
      - id: gate-ok
        kind: command
        run: [bash, gate.sh]
        exit: 0
        stdout: ["^ok$"]
mutants:
  - id: wrong-name
    description:
      ja: ポリシー名の打ち間違い
      en: A typo in the policy name
    edits:
      - {path: policy.yaml, find: "name: require-team", replace: "name: require-teams"}
    fails: [policy-file, policy-applied]
"#;

const README: &str = "# {{ lab }}\n\nWorkspace: {{ workspace }}\nNamespace: {{ namespace }}\n";

const STARTER_POLICY: &str = "# Write the ClusterPolicy `require-team` here.\n";
const STARTER_RBAC: &str = "# Write the ServiceAccount, Role and RoleBinding here.\n";
const STARTER_GATE: &str = "#!/usr/bin/env bash\nexit 1\n";

const SOLUTION_POLICY: &str = r#"apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-team
  labels: {kca.dev/lab: __ID__, app.kubernetes.io/managed-by: kca}
spec:
  rules:
    - name: check-team
      match:
        any:
          - resources: {kinds: [Pod]}
      validate:
        failureAction: Enforce
        message: "Pods need a team label."
        pattern:
          metadata:
            labels:
              team: "?*"
    - name: team-defaults
      match:
        any:
          - resources: {kinds: [Namespace]}
      generate:
        apiVersion: v1
        kind: ConfigMap
        name: team-defaults
        namespace: "{{request.object.metadata.name}}"
        data:
          data:
            team: unknown
"#;

const SOLUTION_RBAC: &str = r#"apiVersion: v1
kind: ServiceAccount
metadata:
  name: reader
  namespace: __ID__
  labels: {kca.dev/lab: __ID__, app.kubernetes.io/managed-by: kca}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: configmap-reader
  namespace: __ID__
  labels: {kca.dev/lab: __ID__, app.kubernetes.io/managed-by: kca}
rules:
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: reader-reads-configmaps
  namespace: __ID__
  labels: {kca.dev/lab: __ID__, app.kubernetes.io/managed-by: kca}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: configmap-reader}
subjects:
  - {kind: ServiceAccount, name: reader, namespace: __ID__}
"#;

const SOLUTION_GATE: &str = "#!/usr/bin/env bash\necho ok\n";

const FIXTURE: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: __ID__\n";

const PROBE: &str = r#"apiVersion: v1
kind: Pod
metadata:
  generateName: no-team-
  namespace: __ID__
spec:
  containers:
    - name: app
      image: registry.k8s.io/pause:3.10
"#;

/// Writes the new lab under `dir/ID` and returns that folder.
pub fn new_lab(dir: &Path, id: &str) -> Result<PathBuf> {
    let ok = !id.is_empty()
        && id.len() <= 40
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !id.starts_with('-')
        && !id.ends_with('-');
    if !ok {
        return Err(Error::usage(
            format!("`{id}` is not a valid lab id"),
            "use lowercase letters, digits and `-`, e.g. `kca-my-lab`",
        ));
    }
    let root = dir.join(id);
    if root.exists() {
        return Err(Error::usage(
            format!("{} already exists", root.display()),
            "pick another id, or edit that lab",
        ));
    }
    let files: [(&str, &str); 10] = [
        ("lab.yaml", LAB),
        ("starter/README.md", README),
        ("starter/policy.yaml", STARTER_POLICY),
        ("starter/rbac.yaml", STARTER_RBAC),
        ("starter/gate.sh", STARTER_GATE),
        ("solution/policy.yaml", SOLUTION_POLICY),
        ("solution/rbac.yaml", SOLUTION_RBAC),
        ("solution/gate.sh", SOLUTION_GATE),
        ("fixtures/namespace.yaml", FIXTURE),
        ("probes/pod-without-team.yaml", PROBE),
    ];
    for (rel, text) in files {
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, text.replace("__ID__", id))?;
    }
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::{Document, load_file};

    #[test]
    fn a_new_lab_validates_as_written() {
        let tmp = tempfile::tempdir().unwrap();
        let root = new_lab(tmp.path(), "kca-demo").unwrap();
        match load_file(&root.join("lab.yaml")) {
            Ok(Document::Lab(lab)) => {
                let mut kinds: Vec<&str> = lab.checks().map(|(_, c)| c.spec.kind()).collect();
                kinds.sort();
                assert_eq!(
                    kinds,
                    [
                        "admission",
                        "can-i",
                        "command",
                        "file",
                        "generated",
                        "resource"
                    ]
                );
                assert_eq!(lab.mutants.len(), 1);
            }
            Err(d) => panic!("{}", d.iter().map(|d| d.to_string()).collect::<String>()),
            Ok(other) => panic!("{other:?}"),
        }
        assert!(new_lab(tmp.path(), "kca-demo").is_err());
        assert!(new_lab(tmp.path(), "Bad_Id").is_err());
    }
}

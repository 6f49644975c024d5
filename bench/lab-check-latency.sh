#!/usr/bin/env bash
# Latency of `kca lab check` against the same checks done as sequential kubectl calls.
#
# Needs: a cluster (KUBECONFIG, cluster-admin), kubectl, hyperfine, a release build of kca
# (`cargo build --release`). Without KCA_BENCH_KYVERNO=1 it times the checks a plain API
# server can answer (tasks `config`, `script`, `rbac` of tests/testlab: a resource get,
# a command, two SubjectAccessReviews); with it (the course's kind cluster, `kca cluster
# up`), also the two admission dry runs of task `policy`.
#
#   bash bench/lab-check-latency.sh
#
# It starts the test lab in a temporary workspace (objects labelled as owned by `testlab`)
# and resets it at the end. Results: hyperfine's table on stdout.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
kca="$repo/target/release/kca"
# Everything is checked before the cluster is touched: a missing tool changes nothing.
# Without them the comparison cannot be made here: say so, in one line, and change nothing.
skip() { echo "skipped: $1; no figures (nothing was changed)" >&2; exit 3; }
for tool in hyperfine kubectl; do
  command -v "$tool" >/dev/null || skip "needs $tool on PATH"
done
[ -x "$kca" ] || skip "build first: cargo build --release"
[ -n "${KUBECONFIG:-}" ] || skip "set KUBECONFIG to a cluster-admin kubeconfig"
work=$(mktemp -d)
started=
cleanup() {
  # Whatever happened (a failed hyperfine run, Ctrl-C), the lab's objects go again.
  if [ -n "$started" ]; then
    "$kca" -q lab reset testlab --allow-any-context >/dev/null 2>&1 ||
      echo "could not reset the test lab: run \`kca lab reset testlab --allow-any-context\`" >&2
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$work/content/labs" "$work/content/quizzes"
cp -r "$repo/tests/testlab" "$work/content/labs/testlab"
export KCA_CONTENT_DIR="$work/content" XDG_STATE_HOME="$work/state" KCA_WORKSPACE_ROOT="$work/ws"
started=1
"$kca" -q lab start testlab --allow-any-context
ws="$work/ws/testlab"
cp "$repo"/tests/testlab/solution/* "$ws/"
kubectl apply -f "$ws/app.yaml" -f "$ws/rbac.yaml" >/dev/null
# One function per task of tests/testlab: the same checks as sequential kubectl calls.
kubectl_config() {
  grep -q 'mode: strict' "$ws/app.yaml"
  [ "$(kubectl get configmap settings -n kca-testlab -o jsonpath='{.data.mode}')" = strict ]
}
kubectl_rbac() {
  [ "$(kubectl auth can-i get configmaps -n kca-testlab --as system:serviceaccount:kca-testlab:reader)" = yes ]
  [ "$(kubectl auth can-i delete configmaps -n kca-testlab --as system:serviceaccount:kca-testlab:reader || true)" = no ]
}
kubectl_policy() {
  ! kubectl create --dry-run=server -f "$KCA_CONTENT_DIR/labs/testlab/probes/pod-no-team.yaml" >/dev/null 2>&1
  [ "$(kubectl create --dry-run=server -f "$KCA_CONTENT_DIR/labs/testlab/probes/pod-team.yaml" -o jsonpath='{.metadata.labels.team}')" = blue ]
}
export -f kubectl_config kubectl_rbac kubectl_policy
export ws
tasks=(config rbac)
if [ "${KCA_BENCH_KYVERNO:-}" = 1 ]; then
  kubectl apply -f "$ws/policy.yaml" >/dev/null
  tasks+=(policy)
fi
for t in "${tasks[@]}"; do
  hyperfine --warmup 2 --runs 20 -n "kca lab check --task $t" "$kca -q lab check testlab --task $t" \
    -n "kubectl ($t)" "bash -c kubectl_$t"
done

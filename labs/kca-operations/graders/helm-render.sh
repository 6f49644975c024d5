#!/usr/bin/env bash
# 採点用: Kyverno のチャートを学習者の values でレンダリングし、その Deployment を採点ポリシーにかけます。
# Grader: renders the Kyverno chart with the learner's values and runs a grading policy on
# the rendered Deployments: what the values really do, defaults merged in by Helm.
#   usage: helm-render.sh GRADER_POLICY   (run in the workspace)
# The chart: $KCA_KYVERNO_CHART (a chart folder or .tgz), else kyverno/kyverno at the version
# the course pins (kind-config/versions.yaml: kyvernoChart 3.9.1) from the learner's helm repos.
# Exits 77 (the check is skipped, with the reason) when helm or the chart is missing.
set -uo pipefail
grader="$1"
version=3.9.1
command -v helm > /dev/null || { echo "helm is not on PATH: the chart cannot be rendered here" >&2; exit 77; }
if [ -n "${KCA_KYVERNO_CHART:-}" ]; then
  chart=("$KCA_KYVERNO_CHART")
elif helm show chart kyverno/kyverno --version "$version" > /dev/null 2>&1; then
  chart=(kyverno/kyverno --version "$version")
else
  echo "the kyverno chart $version is not available (helm repo add kyverno https://kyverno.github.io/kyverno/, or set KCA_KYVERNO_CHART)" >&2
  exit 77
fi
render="$(mktemp --suffix=.yaml)"; out="$(mktemp)"
trap 'rm -f "$render" "$out"' EXIT
if ! helm template kyverno "${chart[@]}" -n kyverno -f helm/values-ha.yaml > "$render" 2> "$out"; then
  cat "$out" >&2
  echo "helm template がこの values で失敗しました / helm template fails with these values" >&2
  exit 1
fi
kca --color never --lang en policy apply "$grader" --resource "$render" > "$out"
rc=$?
grep -E '(PASS|FAIL|ERROR|SKIP) |^pass:' "$out"
if [ "$rc" -eq 0 ] && ! grep -Eq '^pass: [1-9]' "$out"; then
  echo "レンダリングに採点対象の Deployment がありません / the render holds none of the Deployments graded" >&2
  exit 1
fi
exit "$rc"

#!/usr/bin/env bash
# 採点用: Kyverno のチャートを学習者の values でレンダリングし、その Deployment を採点ポリシーにかけます。
# helm とチャートがあれば helm template で、なければ kca values render が代わりにレンダリングします
# (チャートの既定値と Helm のマージ規則で、採点する項目だけ。そう表示します)。
# Grader: renders the Kyverno chart with the learner's values and runs a grading policy on
# the rendered Deployments: what the values really do, defaults merged in by Helm.
#   usage: helm-render.sh GRADER_POLICY   (run in the workspace)
# The chart: $KCA_KYVERNO_CHART (a chart folder or .tgz), else kyverno/kyverno at the version
# the course pins (kind-config/versions.yaml: kyvernoChart 3.9.1) from the learner's helm repos.
# Without helm or the chart, `kca values render` stands in: the chart's defaults for the
# graded fields (graders/chart-render.yaml, which says how they were produced) and Helm's
# merge rules (maps merge, lists and scalars replace, null deletes), in-process.
set -uo pipefail
here="${BASH_SOURCE[0]%/*}"; [ "$here" != "${BASH_SOURCE[0]}" ] || here=.; . "$here/say.sh"
grader="$1"
version=3.9.1
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
render="$tmp/render.yaml"; out="$tmp/out"
chart=()
why=""
if ! command -v helm > /dev/null; then
  why="$(say "helm が PATH にありません" "helm is not on PATH")"
elif [ -n "${KCA_KYVERNO_CHART:-}" ]; then
  chart=("$KCA_KYVERNO_CHART")
elif helm show chart kyverno/kyverno --version "$version" > /dev/null 2>&1; then
  chart=(kyverno/kyverno --version "$version")
else
  why="$(say "kyverno チャート $version が helm のリポジトリにありません (helm repo add kyverno https://kyverno.github.io/kyverno/ か KCA_KYVERNO_CHART を設定)" \
    "the kyverno chart $version is not in your helm repos (helm repo add kyverno https://kyverno.github.io/kyverno/, or set KCA_KYVERNO_CHART)")"
fi
if [ "${#chart[@]}" -gt 0 ]; then
  if ! helm template kyverno "${chart[@]}" -n kyverno -f helm/values-ha.yaml > "$render" 2> "$out"; then
    cat "$out" >&2
    say "helm template がこの values で失敗しました" "helm template fails with these values" >&2
    exit 1
  fi
else
  if ! kca --color never --lang en values render --chart "$KCA_LAB_DIR/graders/chart-render.yaml" -f helm/values-ha.yaml > "$render" 2> "$out"; then
    cat "$out" >&2
    say "このチャートはこの values をレンダリングできません" "the chart cannot render these values" >&2
    exit 1
  fi
  say "$why: helm template の代わりに kca values render でレンダリングしました (採点する項目のチャート既定値と Helm のマージ規則)" \
    "$why: kca values render stood in for helm template (the chart's defaults for the graded fields, Helm's merge rules)" >&2
fi
applied="$(kca --color never --lang en policy apply "$grader" --resource "$render")"
rc=$?
# The result lines only (grep -E '(PASS|FAIL|ERROR|SKIP) |^pass:'), in bash.
while IFS= read -r line; do
  [[ $line =~ (PASS|FAIL|ERROR|SKIP)\ |^pass: ]] && printf '%s\n' "$line"
done <<< "$applied"
if [ "$rc" -eq 0 ] && ! [[ $'\n'$applied =~ $'\n'pass:\ [1-9] ]]; then
  say "レンダリングに採点対象の Deployment がありません" "the render holds none of the Deployments graded" >&2
  exit 1
fi
exit "$rc"

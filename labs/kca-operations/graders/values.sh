#!/usr/bin/env bash
# 採点用: Helm values ファイルを YAML として読み、採点ポリシーにかけます(helm がなくても動く部分)。
# Grader: reads a Helm values file as YAML and runs a grading policy on it (works without helm).
# The values become the spec of a kca.dev/v1alpha1 HelmValues object, so Kyverno patterns
# (with their quantity comparisons such as ">128Mi") can judge them.
#   usage: values.sh VALUES.yaml GRADER_POLICY   (run in the workspace)
set -uo pipefail
. "$(dirname "$0")/say.sh"
values="$1"; grader="$2"
doc="$(mktemp --suffix=.yaml)"; out="$(mktemp)"
trap 'rm -f "$doc" "$out"' EXIT
[ -f "$values" ] || { say "$values がありません" "$values does not exist" >&2; exit 1; }
{
  printf 'apiVersion: kca.dev/v1alpha1\nkind: HelmValues\nmetadata:\n  name: values\nspec:\n'
  grep -v -E '^(---|\.\.\.)[[:space:]]*$' "$values" | sed 's/^/  /'
} > "$doc"
kca --color never --lang en policy apply "$grader" --resource "$doc" > "$out"
rc=$?
cat "$out"
if [ "$rc" -eq 0 ] && ! grep -Eq '^pass: [1-9]' "$out"; then
  say "採点対象がありません" "nothing was graded" >&2
  exit 1
fi
exit "$rc"

#!/usr/bin/env bash
# 採点用: Helm values ファイルを YAML として読み、採点ポリシーにかけます(helm がなくても動く部分)。
# Grader: reads a Helm values file as YAML and runs a grading policy on it (works without helm).
# The values become the spec of a kca.dev/v1alpha1 HelmValues object, so Kyverno patterns
# (with their quantity comparisons such as ">128Mi") can judge them.
#   usage: values.sh VALUES.yaml GRADER_POLICY   (run in the workspace)
set -uo pipefail
here="${BASH_SOURCE[0]%/*}"; [ "$here" != "${BASH_SOURCE[0]}" ] || here=.; . "$here/say.sh"
values="$1"; grader="$2"
# Bash builtins only, besides kca (a check runs this once per variant `lab verify` grades).
[ -f "$values" ] || { say "$values がありません" "$values does not exist" >&2; exit 1; }
doc="$(
  printf 'apiVersion: kca.dev/v1alpha1\nkind: HelmValues\nmetadata:\n  name: values\nspec:\n'
  while IFS= read -r line || [ -n "$line" ]; do
    [[ $line =~ ^(---|\.\.\.)[[:space:]]*$ ]] || printf '  %s\n' "$line"
  done < "$values"
)"
out="$(kca --color never --lang en policy apply "$grader" --resource - <<< "$doc")"
rc=$?
printf '%s\n' "$out"
if [ "$rc" -eq 0 ] && ! [[ $'\n'$out =~ $'\n'pass:\ [1-9] ]]; then
  say "採点対象がありません" "nothing was graded" >&2
  exit 1
fi
exit "$rc"

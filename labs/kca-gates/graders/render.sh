#!/usr/bin/env bash
# 採点用: kustomize のレンダリング結果を YAML として採点ポリシーにかけます。
# Grader: renders a kustomize folder and runs a grading policy on the parsed render.
#   usage: render.sh KUSTOMIZE_DIR GRADER_POLICY   (run in the workspace)
set -uo pipefail
dir="$1"; grader="$2"
command -v kubectl > /dev/null || { echo "kubectl is not on PATH: kubectl kustomize cannot render here" >&2; exit 77; }
render="$(mktemp)"; out="$(mktemp)"
trap 'rm -f "$render" "$out"' EXIT
if ! kubectl kustomize "$dir" > "$render"; then
  echo "kubectl kustomize $dir がレンダリングできません / cannot render $dir" >&2
  exit 2
fi
kca --color never --lang en policy apply "$grader" --resource "$render" > "$out"
rc=$?
cat "$out"
# A render without the object the grader looks at passes nothing: that is not a pass.
if [ "$rc" -eq 0 ] && ! grep -Eq '^pass: [1-9]' "$out"; then
  echo "レンダリングに採点対象のオブジェクトがありません / the render holds none of the objects graded" >&2
  exit 1
fi
exit "$rc"

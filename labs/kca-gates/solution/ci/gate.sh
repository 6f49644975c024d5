#!/usr/bin/env bash
# CI ゲート: レンダリング結果にポリシーをかけ、結果を終了コードで語る。
# CI gate: run the policy on the rendered manifests and speak through the exit code.
#   usage: ci/gate.sh [RENDER.yaml]   (default: render overlays/prod now)
set -uo pipefail
render="${1:-}"
if [ -z "$render" ]; then
  render="$(mktemp)"
  if ! kubectl kustomize app/overlays/prod > "$render"; then
    echo "レンダリングに失敗しました / render failed" >&2
    exit 2
  fi
fi
out="$(kca --color never policy apply policy/require-pinned.yaml --resource "$render")"
rc=$?
echo "$out"
if [ "$rc" -ne 0 ]; then
  echo "ポリシー違反のためデプロイを止めます / policy violation: deployment stopped" >&2
  exit 3
fi
# 何も検査していない緑は緑ではない(kyverno apply なら --warn-no-pass --warn-exit-code 4)。
# A green that checked nothing is no green (with kyverno apply: --warn-no-pass --warn-exit-code 4).
if ! grep -Eq '^pass: [1-9]' <<< "$out"; then
  echo "ポリシーに合格したリソースがありません(空のレンダリング?) / nothing passed the policy (an empty render?)" >&2
  exit 4
fi
echo "gate passed"

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
if ! kca policy apply policy/require-pinned.yaml --resource "$render"; then
  echo "ポリシー違反のためデプロイを止めます / policy violation: deployment stopped" >&2
  exit 3
fi
echo "gate passed"

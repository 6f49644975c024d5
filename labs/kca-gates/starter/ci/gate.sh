#!/usr/bin/env bash
# CI ゲート: レンダリング結果にポリシーをかける。
# CI gate: run the policy on the rendered manifests.
#   usage: ci/gate.sh RENDER.yaml
render="$1"
kca policy apply policy/require-pinned.yaml --resource "$render"
echo "gate passed"

#!/usr/bin/env bash
# ログを残すために tee を挟んだゲート。pipefail がないので、パイプの終了コードは tee のもの。
# A gate that keeps a log with tee; without pipefail the pipeline's exit code is tee's.
render="$1"
if ! kca policy apply policy/require-pinned.yaml --resource "$render" | tee /tmp/kca-gate.log; then
  echo "policy violation" >&2
  exit 3
fi
echo "gate passed"

#!/usr/bin/env bash
# 採点用: 本物の kyverno CLI があればそれで、なければ kca が代わりに実行します(そう表示します)。
# Grader: runs the real kyverno CLI when it is on PATH, else kca stands in and says so.
#   usage: cli.sh test DIR          → kyverno test DIR -o junit        | kca policy test DIR -o junit
#          cli.sh apply POLICY RES  → kyverno apply POLICY --resource RES | kca policy apply POLICY --resource RES
# (flags from cmd/cli/kubectl-kyverno/commands/{test,apply}/command.go at kyverno v1.19.0)
set -uo pipefail
what="$1"; shift
if command -v kyverno > /dev/null; then
  echo "running the kyverno CLI: $(kyverno version 2>/dev/null | head -1)" >&2
  case "$what" in
    test) exec kyverno test "$1" --remove-color -o junit ;;
    apply) exec kyverno apply "$1" --resource "$2" --remove-color ;;
  esac
else
  echo "kyverno is not on PATH: kca policy $what stands in for kyverno $what" >&2
  case "$what" in
    test) exec kca --color never --lang en policy test "$1" -o junit ;;
    apply) exec kca --color never --lang en policy apply "$1" --resource "$2" ;;
  esac
fi
echo "unknown command $what" >&2
exit 2

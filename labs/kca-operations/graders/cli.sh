#!/usr/bin/env bash
# 採点用: 本物の kyverno CLI があればそれで、なければ kca が代わりに実行します(そう表示します)。
# Grader: runs the real kyverno CLI when it is on PATH, else kca stands in and says so.
#   usage: cli.sh test DIR          → kyverno test DIR -o junit        | kca policy test DIR -o junit
#          cli.sh apply POLICY RES  → kyverno apply POLICY --resource RES | kca policy apply POLICY --resource RES
# (flags from cmd/cli/kubectl-kyverno/commands/{test,apply}/command.go at kyverno v1.19.0)
set -uo pipefail
here="${BASH_SOURCE[0]%/*}"; [ "$here" != "${BASH_SOURCE[0]}" ] || here=.; . "$here/say.sh"
what="$1"; shift
if command -v kyverno > /dev/null; then
  say "kyverno CLI で実行します: $(kyverno version 2>/dev/null | head -1)" "running the kyverno CLI: $(kyverno version 2>/dev/null | head -1)"
  case "$what" in
    test) kyverno test "$1" --remove-color -o junit ;;
    apply) kyverno apply "$1" --resource "$2" --remove-color ;;
    *) say "不明なコマンド $what" "unknown command $what"; exit 2 ;;
  esac
  exit $?
fi
# kca stands in; its output first, then the notice, so a report's last lines show both.
case "$what" in
  test) kca --color never --lang en policy test "$1" -o junit ;;
  apply) kca --color never --lang en policy apply "$1" --resource "$2" ;;
  *) say "不明なコマンド $what" "unknown command $what"; exit 2 ;;
esac
rc=$?
say "kyverno が PATH にないので、kyverno $what の代わりに kca policy $what で実行しました" \
  "kyverno is not on PATH: kca policy $what stood in for kyverno $what"
exit "$rc"

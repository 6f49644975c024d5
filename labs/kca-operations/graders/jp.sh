#!/usr/bin/env bash
# 採点用: 学習者の JMESPath(queries/not-non-root.jp)を Pod の一覧に当てます。kyverno CLI があれば
# 本物の kyverno jp query で、なければ kca jp query が代わりに実行します(そう表示します)。
# Grader: runs the learner's JMESPath query on a Pod list with the real `kyverno jp query`
# when it is on PATH, else with `kca jp query` (the same engine and Kyverno functions kca's
# policies use) and says so. Flags -i, -q, -c from
# cmd/cli/kubectl-kyverno/commands/jp/query/command.go, kyverno v1.19.0: both print
# "# QUERY" and then the result as JSON (kca writes it as Go's encoding/json does).
# kca's -q is --quiet, so kca takes the query file as --query.
set -uo pipefail
here="${BASH_SOURCE[0]%/*}"; [ "$here" != "${BASH_SOURCE[0]}" ] || here=.; . "$here/say.sh"
[ -s queries/not-non-root.jp ] || { say "queries/not-non-root.jp がないか空です" "queries/not-non-root.jp is missing or empty" >&2; exit 1; }
if command -v kyverno > /dev/null; then
  say "kyverno CLI で実行します: $(kyverno version 2>/dev/null | head -1)" "running the kyverno CLI: $(kyverno version 2>/dev/null | head -1)" >&2
  exec kyverno jp query -c -i "$KCA_LAB_DIR/dumps/pods.yaml" -q queries/not-non-root.jp
fi
kca --color never --lang en jp query -c -i "$KCA_LAB_DIR/dumps/pods.yaml" --query queries/not-non-root.jp
rc=$?
say "kyverno が PATH にないので、kyverno jp query の代わりに kca jp query で実行しました" \
  "kyverno is not on PATH: kca jp query stood in for kyverno jp query" >&2
exit "$rc"

#!/usr/bin/env bash
# 採点用: 学習者の JMESPath(queries/not-non-root.jp)を、本物の kyverno jp query で Pod の一覧に当てます。
# Grader: runs the learner's JMESPath query with the real `kyverno jp query` on a Pod list
# (flags -i, -q, -c from cmd/cli/kubectl-kyverno/commands/jp/query/command.go, kyverno v1.19.0:
# it prints "# QUERY" and then the result as JSON). kca has no JMESPath command of its own, so
# without the kyverno CLI the check is skipped (exit 77), never passed.
set -uo pipefail
command -v kyverno > /dev/null || { echo "kyverno is not on PATH: kyverno jp query cannot run here (kca has no jp)" >&2; exit 77; }
[ -s queries/not-non-root.jp ] || { echo "queries/not-non-root.jp がありません / is missing or empty" >&2; exit 1; }
exec kyverno jp query -c -i "$KCA_LAB_DIR/dumps/pods.yaml" -q queries/not-non-root.jp

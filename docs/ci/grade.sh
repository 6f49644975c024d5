#!/usr/bin/env bash
# Grades one learner's submission with kca, for any CI system (GitLab CI, Jenkins, an LMS
# runner, GitHub Actions: docs/ci/github-classroom.yml calls this script).
#
#   KCA_LAB=kca-gates docs/ci/grade.sh [SUBMISSION_DIR] [RESULTS_DIR]
#
# Writes RESULTS_DIR/kca-junit.xml (for the CI's test view) and RESULTS_DIR/kca-result.json
# (for `kca report`), and exits as `kca lab check` does: 0 passed, 1 a check failed,
# 2 usage or content error, 3 environment error. kca is taken from PATH; when it is not
# there it is installed with cargo from KCA_REPO (default: the course's repository) at
# KCA_REF. No cluster is needed: grading is offline, and no progress is written.
set -euo pipefail

lab="${KCA_LAB:?set KCA_LAB to the lab id, e.g. KCA_LAB=kca-gates}"
submission="${1:-${KCA_SUBMISSION:-.}}"
results="${2:-${KCA_RESULTS:-kca-results}}"

if ! command -v kca >/dev/null 2>&1; then
  repo="${KCA_REPO:?kca is not on PATH: set KCA_REPO to the git URL kca is installed from}"
  echo "installing kca from $repo ${KCA_REF:+at $KCA_REF}" >&2
  cargo install --locked --git "$repo" ${KCA_REF:+--rev "$KCA_REF"} kca >&2
fi

mkdir -p "$results"
content=()
if [[ -n "${KCA_CONTENT_DIR:-}" ]]; then
  content=(--content-dir "$KCA_CONTENT_DIR")
fi

# One run for each format: each stdout is exactly one document.
set +e
kca "${content[@]}" lab check "$lab" --offline --workspace "$submission" -o json \
  > "$results/kca-result.json"
code=$?
kca "${content[@]}" lab check "$lab" --offline --workspace "$submission" -o junit \
  > "$results/kca-junit.xml"
set -e
# The learner reads the text report in the CI log.
kca "${content[@]}" --color never lab check "$lab" --offline --workspace "$submission" --all >&2 || true
echo "kca: exit $code; results in $results/" >&2
exit "$code"

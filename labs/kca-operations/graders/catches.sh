#!/usr/bin/env bash
# 採点用: 学習者の kyverno-test.yaml が、ポリシーの壊れたコピーを見抜くか。
# Grader: does the learner's kyverno-test.yaml catch a deliberately broken copy of the policy?
# The workspace is copied, policies/require-run-as-non-root.yaml is swapped for the broken
# copy, and the learner's tests run again: they must now fail. First they must pass on the
# real policy (a test that always fails "catches" everything and proves nothing).
#   usage: catches.sh BROKEN_POLICY   (run in the workspace)
set -uo pipefail
here="${BASH_SOURCE[0]%/*}"; [ "$here" != "${BASH_SOURCE[0]}" ] || here=.; . "$here/say.sh"
broken="$1"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if ! kca --color never --lang en policy test tests > "$tmp/real.txt" 2>&1; then
  tail -5 "$tmp/real.txt"
  say "テストが本物のポリシーで通りません(先に課題を通してください)" "the tests do not pass on the real policy" >&2
  exit 1
fi
real="$(< "$tmp/real.txt")"
if ! [[ $'\n'$real =~ $'\n'[1-9][0-9]*\ passed,\ 0\ failed ]]; then
  say "テストが1行も実行されていません" "the tests run no row" >&2
  exit 1
fi
cp -r . "$tmp/ws"
cp "$broken" "$tmp/ws/policies/require-run-as-non-root.yaml"
if (cd "$tmp/ws" && kca --color never --lang en policy test tests > "$tmp/broken.txt" 2>&1); then
  say "壊れたコピーでもテストが通りました: $(sed -n 1p "$broken" | sed 's/^# 壊れたコピー: //')" \
    "the tests still pass on a broken copy of the policy: $(sed -n 2p "$broken" | sed 's/^# Broken copy: //')" >&2
  exit 1
fi
# The first three lines that say FAIL (grep FAIL | head -3), in bash.
shown=0
while IFS= read -r line && [ "$shown" -lt 3 ]; do
  [[ $line == *FAIL* ]] && { printf '%s\n' "$line"; shown=$((shown + 1)); }
done < "$tmp/broken.txt"
say "テストは壊れたコピー ${broken##*/} を見抜きました" "the tests caught the broken copy ${broken##*/}"

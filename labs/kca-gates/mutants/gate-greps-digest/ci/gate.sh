#!/usr/bin/env bash
# どこかに @sha256 があれば通すゲート: ダイジェスト固定のものと latest のものが混ざると見逃す。
# A gate that passes when @sha256 appears anywhere: a render mixing pinned and latest images goes through.
if [ -s "$1" ] && grep -q '@sha256:' "$1"; then
  echo "gate passed"
  exit 0
fi
echo "no pinned image" >&2
exit 1

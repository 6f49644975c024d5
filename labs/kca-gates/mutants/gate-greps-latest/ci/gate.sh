#!/usr/bin/env bash
# 文字列 latest だけを探すゲート: タグのないイメージ(暗黙の latest)と空のレンダリングを通す。
# A gate that looks for the text latest only: an untagged image (implicit latest) and an
# empty render go through.
grep -q ':latest' "$1" && { echo "latest found" >&2; exit 1; }
echo "gate passed"

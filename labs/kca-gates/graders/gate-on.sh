#!/usr/bin/env bash
# 採点用: 学習者のゲート(ci/gate.sh)を、学習者自身のレンダリングとその変種にかけます。
# Grader: runs the learner's gate (ci/gate.sh) on the learner's own render and variants of it.
#   usage: gate-on.sh pass|stop prod|base|latest-back|no-digest|mixed|empty   (run in the workspace)
# Exits 0 when the gate did what it should (pass: exit 0; stop: a non-zero exit), 1 when not,
# 2 when the render to test could not be built (the overlay does not render), 77 (skipped)
# when kubectl is not there to render.
set -uo pipefail
want="$1"; variant="$2"
render="$(mktemp --suffix=.yaml)"
trap 'rm -f "$render"' EXIT
[ "$variant" = empty ] || command -v kubectl > /dev/null || { echo "kubectl is not on PATH: kubectl kustomize cannot render here" >&2; exit 77; }
digest='@sha256:[0-9a-f]{64}'
case "$variant" in
  prod|latest-back|no-digest|mixed)
    if ! kubectl kustomize app/overlays/prod > "$render"; then
      echo "app/overlays/prod がレンダリングできません / app/overlays/prod does not render" >&2
      exit 2
    fi
    if ! grep -Eq "image: .*$digest" "$render"; then
      echo "本番レンダリングにダイジェスト固定のイメージがありません(課題1) / the prod render pins no image by digest (task 1)" >&2
      exit 2
    fi
    case "$variant" in
      latest-back) sed -E -i "s/$digest/:latest/" "$render"; what="the prod render with :latest put back" ;;
      no-digest) sed -E -i "s/$digest//" "$render"; what="the prod render with its digest dropped (no tag, no digest)" ;;
      mixed)
        # A render holds many objects: the pinned checkout plus a worker still on latest.
        cat >> "$render" <<'YAML'
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: checkout-worker
  namespace: kca-gates
spec:
  replicas: 1
  selector:
    matchLabels: {app: checkout-worker}
  template:
    metadata:
      labels: {app: checkout-worker}
    spec:
      containers:
        - name: worker
          image: ghcr.io/kca/checkout-worker:latest
YAML
        what="the prod render plus a second Deployment on :latest" ;;
      *) what="the prod render (app/overlays/prod)" ;;
    esac ;;
  base)
    if ! kubectl kustomize app/base > "$render"; then
      echo "app/base がレンダリングできません / app/base does not render" >&2
      exit 2
    fi
    what="the base render (app/base, still :latest)" ;;
  empty) : > "$render"; what="an empty render (a render step that failed quietly)" ;;
  *) echo "unknown variant $variant" >&2; exit 2 ;;
esac
bash ci/gate.sh "$render" > /dev/null 2>&1
rc=$?
echo "ci/gate.sh on $what: exit $rc"
case "$want" in
  pass) [ "$rc" -eq 0 ] || { echo "ゲートは通すべきものを止めました / the gate stopped what it should let through" >&2; exit 1; } ;;
  stop) [ "$rc" -ne 0 ] || { echo "ゲートは止めるべきものを通しました / the gate let through what it should stop" >&2; exit 1; } ;;
esac
exit 0

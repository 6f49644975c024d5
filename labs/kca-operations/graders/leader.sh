#!/usr/bin/env bash
# 採点用(クラスター): 学習者の answers/reports-leader.sh が出す Pod 名が、reports controller の
# Lease(kyverno/kyverno-reports-controller)の holderIdentity と一致するか。
# Grader (cluster): does the learner's answers/reports-leader.sh print the Pod that holds the
# reports controller's Lease? The Lease is kyverno-reports-controller in Kyverno's namespace,
# its holder identity the Pod's name (cmd/reports-controller/main.go: leaderelection.New with
# config.KyvernoPodName(), set from metadata.name by the chart's KYVERNO_POD_NAME).
# Exits 77 (skipped) when no cluster answers.
set -uo pipefail
here="${BASH_SOURCE[0]%/*}"; [ "$here" != "${BASH_SOURCE[0]}" ] || here=.; . "$here/say.sh"
# No kubeconfig and not in a Pod: kubectl has no cluster to ask (and takes a while to say so).
[ -n "${KUBECONFIG:-}" ] || [ -f "${HOME:-/nonexistent}/.kube/config" ] || [ -n "${KUBERNETES_SERVICE_HOST:-}" ] \
  || { say "kubeconfig がないので、クラスターに聞けません (KUBECONFIG も ~/.kube/config もありません)" "no kubeconfig: cannot ask the cluster (neither KUBECONFIG nor ~/.kube/config)" >&2; exit 77; }
command -v kubectl > /dev/null || { say "kubectl が PATH にないので、クラスターに聞けません" "kubectl is not on PATH: cannot ask the cluster" >&2; exit 77; }
holder="$(kubectl get lease -n kyverno kyverno-reports-controller -o jsonpath='{.spec.holderIdentity}' 2>/dev/null)" \
  || { say "クラスターが答えません (kubectl get lease -n kyverno kyverno-reports-controller が失敗): 動いているインストールが必要です" \
         "no cluster answers (kubectl get lease -n kyverno kyverno-reports-controller failed): a running install is needed" >&2; exit 77; }
[ -n "$holder" ] || { say "Lease kyverno/kyverno-reports-controller にまだ holder がいません" "the Lease kyverno/kyverno-reports-controller has no holder yet" >&2; exit 77; }
[ -f answers/reports-leader.sh ] || { say "answers/reports-leader.sh がありません" "answers/reports-leader.sh does not exist" >&2; exit 1; }
said="$(bash answers/reports-leader.sh 2>/dev/null | tr -d '[:space:]')"
if [ "$said" != "$holder" ]; then
  say "answers/reports-leader.sh の出力は '$said' ですが、Lease を持っているのは '$holder' です" \
    "answers/reports-leader.sh printed '$said'; the Lease is held by '$holder'" >&2
  exit 1
fi
say "reports controller のリーダーは $holder です" "the reports controller's leader is $holder"

#!/usr/bin/env bash
# reports controller のリーダー = Lease kyverno/kyverno-reports-controller の holderIdentity(Pod 名)。
# The reports controller's leader: the holder of the Lease kyverno/kyverno-reports-controller (a Pod name).
kubectl get lease -n kyverno kyverno-reports-controller -o jsonpath='{.spec.holderIdentity}'

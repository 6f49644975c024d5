"""Grader: which workloads' Pods does each Service select?

Reads rollouts/services.yaml, rollouts/canary.yaml, rollouts/bluegreen.yaml and
app/base/deployment.yaml (run in the workspace). A Service selects a workload when every
key of its selector is among the workload's Pod template labels with the same value
(Kubernetes Service selector semantics). The canary Services must select the canary
Rollout's Pods and nothing else; the blue/green Services the blue/green Rollout's only;
none may select the base Deployment's Pods. Exit 0 when so, 1 otherwise (with the reason).
Needs python3 and PyYAML; exits 77 (skipped) without them.
"""
import sys

try:
    import yaml
except ImportError:
    print("PyYAML (python3-yaml) がないため採点できません / PyYAML is not installed", file=sys.stderr)
    sys.exit(77)

WANT = {
    "checkout-stable": "Rollout/checkout-canary",
    "checkout-canary": "Rollout/checkout-canary",
    "checkout-active": "Rollout/checkout-bluegreen",
    "checkout-preview": "Rollout/checkout-bluegreen",
}


def docs(path):
    try:
        with open(path, encoding="utf-8") as f:
            return [d for d in yaml.safe_load_all(f) if isinstance(d, dict)]
    except FileNotFoundError:
        return []
    except yaml.YAMLError as e:
        print(f"{path}: not valid YAML: {e}", file=sys.stderr)
        sys.exit(1)


def pod_labels(obj):
    return ((obj.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {}


workloads = {}
for path in ["app/base/deployment.yaml", "rollouts/canary.yaml", "rollouts/bluegreen.yaml"]:
    for d in docs(path):
        if d.get("kind") in ("Deployment", "Rollout"):
            workloads[f"{d['kind']}/{d.get('metadata', {}).get('name')}"] = pod_labels(d)

services = {d["metadata"]["name"]: d for d in docs("rollouts/services.yaml")
            if d.get("kind") == "Service" and d.get("metadata", {}).get("name")}
problems = []
for name, owner in WANT.items():
    svc = services.get(name)
    if svc is None:
        problems.append(f"Service {name} is not in rollouts/services.yaml")
        continue
    sel = (svc.get("spec") or {}).get("selector") or {}
    if not sel:
        problems.append(f"Service {name} has no selector")
        continue
    chosen = sorted(w for w, labels in workloads.items()
                    if all(labels.get(k) == v for k, v in sel.items()))
    if chosen != [owner]:
        problems.append(f"Service {name} (selector {sel}) selects the Pods of "
                        f"{', '.join(chosen) or 'nothing'}; it should select {owner} only")
for p in problems:
    print(p)
if problems:
    print("Service は1つのワークロードの Pod だけを選ぶべきです / each Service should select the Pods of one workload only",
          file=sys.stderr)
    sys.exit(1)
print("each Service selects the Pods of its own Rollout only")

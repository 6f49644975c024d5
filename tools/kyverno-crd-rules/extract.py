#!/usr/bin/env python3
"""Extracts the validation rules of Kyverno's policy CRDs into kca's lean table.

Usage: extract.py CRD.yaml... > src/offline/conformance/cluster/kyverno-crd-rules.json

Input: config/crds/kyverno/*.yaml and config/crds/policies.kyverno.io/*.yaml of
Kyverno v1.19.0 (git show v1.19.0:config/crds/...). Output: for each group/version/kind
served, the constraint-bearing part of `openAPIV3Schema` below `spec` only (the API
server's structural-schema checks kca replays): `r` required, `e` enum, `min`/`max`
minimum/maximum, `minLen`/`maxLen`, `minItems`/`maxItems`, under `p` properties,
`i` items, `a` additionalProperties. (Formats and x-kubernetes-validations rules are
left out: kca does not check them.)
Identical trees are stored once under `schemas` and named by index from `kinds`.
"""
import json
import sys

import yaml

KEYS = {
    "required": "r",
    "enum": "e",
    "minimum": "min",
    "maximum": "max",
    "minLength": "minLen",
    "maxLength": "maxLen",
    "minItems": "minItems",
    "maxItems": "maxItems",
}


def lean(node):
    if not isinstance(node, dict):
        return None
    out = {}
    for k, short in KEYS.items():
        if k in node:
            out[short] = node[k]
    props = {}
    for name, sub in sorted((node.get("properties") or {}).items()):
        s = lean(sub)
        if s:
            props[name] = s
    if props:
        out["p"] = props
    for k, short in (("items", "i"), ("additionalProperties", "a")):
        s = lean(node.get(k))
        if s:
            out[short] = s
    return out or None


def main(paths):
    schemas, kinds = [], {}
    for path in paths:
        crd = yaml.safe_load(open(path))
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            if not version.get("served"):
                continue
            root = version["schema"]["openAPIV3Schema"]
            tree = {"r": root.get("required", [])} if "spec" in root.get("required", []) else {}
            spec = lean(root.get("properties", {}).get("spec"))
            if spec:
                tree["p"] = {"spec": spec}
            if tree not in schemas:
                schemas.append(tree)
            kinds[f"{group}/{version['name']}/{kind}"] = schemas.index(tree)
    about = (
        "Validation rules of Kyverno v1.19.0's policy CRDs (config/crds), below spec, "
        "made by tools/kyverno-crd-rules/extract.py; regenerate with it."
    )
    json.dump({"about": about, "kinds": kinds, "schemas": schemas}, sys.stdout,
              separators=(",", ":"), sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])

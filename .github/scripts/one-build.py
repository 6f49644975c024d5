#!/usr/bin/env python3
"""Do `cargo run` and `cargo test` share one build? (README "Set-up"; docs/BUILD.md)

Asks cargo for the unit graph of each command without compiling anything
(`--unit-graph` is unstable: RUSTC_BOOTSTRAP=1 unlocks it on a stable toolchain, for
this read-only query only) and compares them: a dependency unit of `cargo test` whose
package `cargo build` also builds, but with other features or profile settings, is a
dependency compiled twice (so is every crate that depends on it; only the first
is listed). Exit 1 when there is one.

    python3 .github/scripts/one-build.py          # from the repository root
"""
import json
import os
import subprocess
import sys

ENV = dict(os.environ, RUSTC_BOOTSTRAP="1")


def graph(*args):
    out = subprocess.run(
        ["cargo", *args, "--locked", "--unit-graph", "-Z", "unstable-options"],
        env=ENV, check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out)["units"]


def package(unit):
    # "registry+…#name@1.2.3" or "path+file:///…#0.1.0" for the local package
    pid = unit["pkg_id"]
    return pid.split("#")[-1] if "#" in pid else pid


def key(unit):
    # What decides whether cargo reuses a compiled unit; the profile's name ("dev" for
    # `cargo build`, "test" for a test's dependencies) is not part of it.
    profile = {k: v for k, v in unit["profile"].items() if k != "name"}
    return (
        unit["pkg_id"], unit["target"]["name"], tuple(unit["target"]["kind"]),
        unit["mode"], tuple(sorted(unit["features"])),
        json.dumps(profile, sort_keys=True), unit.get("platform"),
    )


def is_kca(unit):
    return unit["pkg_id"].startswith("path+")


run = graph("build")
test = graph("test", "--no-run")
built = {key(u) for u in run}
run_packages = {package(u) for u in run}
twice, new = [], set()
for u in test:
    if is_kca(u) or key(u) in built:
        continue
    if package(u) in run_packages:
        twice.append(u)
    else:
        new.add(package(u))
print(f"cargo build: {len({package(u) for u in run})} packages; cargo test adds "
      f"{len(new)} test-only packages and rebuilds {len({package(u) for u in twice})}")
for u in sorted(twice, key=package):
    print(f"  rebuilt: {package(u)} {u['target']['name']} features={u['features']}")
sys.exit(1 if twice else 0)

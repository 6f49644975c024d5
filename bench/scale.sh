#!/usr/bin/env bash
# How kca's offline commands scale (issue #11, "Cost grows linearly"): generates its own
# inputs, runs each workload a few times with a release build, and prints one markdown
# table row per workload with the median wall time and the peak memory (max RSS).
#
#   bash bench/scale.sh                 # builds target/release/kca first
#   KCA=/path/to/kca bash bench/scale.sh  # measures that binary (e.g. an older build)
#   RUNS=5 bash bench/scale.sh          # more runs per size (default 3)
#   ONLY=yaml bash bench/scale.sh       # one workload: canI, yaml, quiz, apply, workspace, report, class
#   LIMIT=60 bash bench/scale.sh        # give up on a run after this many seconds (default 300)
#
# Workloads (a superlinear one shows up as a row whose time grows faster than its size):
#   auth can-i -f over N RBAC objects (Roles, ClusterRoles and their bindings)
#   one YAML mapping with N keys (a ConfigMap read by `auth can-i -f`)
#   quiz grade with N questions (one quiz, an answers file answering every question)
#   policy apply P policies x R Pods
#   lab check --offline (kca-admission, kca-mutate: their solutions) with a 1 MB / 8 MB ConfigMap in the
#   workspace (issue #18: peak memory within 10x the file over the run without it)
#   kca report over 10,000 result files (issue #16/#18): 5,000 learners' lab results
#   (`kca grade --out` files, 4 tasks x 4 checks, over 20 days) and 5,000 quiz results
#   (40 questions), as text and with --html
#   a class of 200 kca-admission submissions (starter, solution, the lab's mutants) through
#   `kca grade --out`, then `kca report --html` over its results (issue #16's "done means")
# Needs: bash, awk, GNU time (/usr/bin/time). Writes only to a temp folder.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
runs=${RUNS:-3}
only=${ONLY:-}
limit=${LIMIT:-300}
if [ -z "${KCA:-}" ]; then
  (cd "$repo" && cargo build --release --quiet)
  KCA="$repo/target/release/kca"
fi
[ -x /usr/bin/time ] || { echo "needs GNU time at /usr/bin/time" >&2; exit 3; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HOME="$work/home" XDG_STATE_HOME="$work/state" KUBECONFIG="$work/no-kubeconfig"
mkdir -p "$HOME"

# Runs "$@" $runs times; prints "median-wall-s median-cpu-s max-rss-MiB exit-code".
# CPU time (user + system) is what the workload costs; wall time also counts waiting for
# a busy machine's cores.
measure() {
  local i t=() u=() m=() code=0
  for ((i = 0; i < runs; i++)); do
    rm -rf "$XDG_STATE_HOME"
    code=0
    # Wall time from the clock in nanoseconds (GNU time's %e counts in 10 ms steps,
    # too coarse for the fast rows); CPU time and peak memory from GNU time.
    local t0 t1
    t0=$(date +%s%N)
    /usr/bin/time -f "%e %U %S %M" -o "$work/time" timeout "$limit" "$@" >/dev/null 2>"$work/err" || code=$?
    t1=$(date +%s%N)
    if [ "$code" = 124 ]; then
      echo ">$limit - 0 124"
      return
    fi
    read -r _ us sy k < <(tail -1 "$work/time") || { us=0; sy=0; k=0; }
    t+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", (b - a) / 1e9}')")
    u+=("$(awk -v a="$us" -v b="$sy" 'BEGIN {printf "%.2f", a + b}')"); m+=("$k")
  done
  local med cpu mem
  med=$(printf '%s\n' "${t[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  cpu=$(printf '%s\n' "${u[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  mem=$(printf '%s\n' "${m[@]}" | sort -n | tail -1)
  # The peak in KiB too, for rows that compare peaks (MiB is too coarse for a 1 MB file).
  echo "$mem" >"$work/peak-kib"
  echo "$med $cpu $((mem / 1024)) $code"
}

# One table cell from measure's output.
cell() { # wall cpu mib code
  if [ "$4" = 124 ]; then echo "stopped after ${limit} s"; return; fi
  local c="$1 / $2 / $3"
  [ "$4" -le 1 ] || c+=" (exit $4)"
  echo "$c"
}

row() { # workload, sizes label, then "time mem" pairs
  printf '| %s | %s | %s |\n' "$1" "$2" "$3"
}

rbac() { # N objects: N/4 Roles, N/4 RoleBindings, N/4 ClusterRoles, N/4 ClusterRoleBindings
  awk -v n="$1" 'BEGIN {
    for (i = 0; i < n / 4; i++) {
      ns = "ns-" (i % 100)
      printf "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: r-%d, namespace: %s}\nrules:\n- {apiGroups: [\"\"], resources: [configmaps], verbs: [get, list]}\n", i, ns
      printf "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: rb-%d, namespace: %s}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r-%d}\nsubjects:\n- {kind: User, name: user-%d, apiGroup: rbac.authorization.k8s.io}\n", i, ns, i, i
      printf "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: cr-%d}\nrules:\n- {apiGroups: [apps], resources: [deployments], verbs: [get]}\n", i
      printf "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: crb-%d}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cr-%d}\nsubjects:\n- {kind: ServiceAccount, name: sa-%d, namespace: %s}\n", i, i, i, ns
    }
  }'
}

mapping() { # one ConfigMap with N data keys
  awk -v n="$1" 'BEGIN {
    print "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big, namespace: default}\ndata:"
    for (i = 0; i < n; i++) printf "  key-%d: \"value %d\"\n", i, i
  }'
}

quiz() { # content folder $2 with quiz `big` of N questions; answers in $2/answers.yaml
  mkdir -p "$2/quizzes"
  awk -v n="$1" 'BEGIN {
    print "apiVersion: kca.dev/v1alpha1\nkind: Quiz\nmetadata: {id: big, title: Big}\npassMark: 50\nquestions:"
    for (i = 0; i < n; i++) {
      printf "  - id: q-%d\n    type: single\n    prompt: {ja: 問%d, en: Question %d}\n    explanation: Because.\n    choices:\n      - {id: a, text: A, correct: true}\n      - {id: b, text: B}\n", i, i, i
    }
  }' >"$2/quizzes/big.yaml"
  awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "q-%d: %s\n", i, (i % 3 ? "a" : "b") }' >"$2/answers.yaml"
}

policies() { # N ClusterPolicies, each one validate rule on Pods
  awk -v n="$1" 'BEGIN {
    for (i = 0; i < n; i++) {
      printf "---\napiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: p-%d}\nspec:\n  validationFailureAction: Audit\n  rules:\n  - name: r-%d\n    match: {any: [{resources: {kinds: [Pod]}}]}\n    validate:\n      message: \"label l-%d is required\"\n      pattern: {metadata: {labels: {l-%d: \"?*\"}}}\n", i, i, i, i % 10
    }
  }'
}

pods() {
  awk -v n="$1" 'BEGIN {
    for (i = 0; i < n; i++) {
      printf "---\napiVersion: v1\nkind: Pod\nmetadata: {name: pod-%d, namespace: default, labels: {l-%d: x}}\nspec:\n  containers: [{name: c, image: \"busybox:1.36\"}]\n", i, i % 20
    }
  }'
}

results() { # N result files in folder $2: N/2 learners, a lab result and a quiz result each
  mkdir -p "$2"
  awk -v n="$1" -v dir="$2" 'BEGIN {
    for (i = 0; i < n; i++) {
      # Lab results carry the learner; quiz results are named after them.
      f = (i % 2 == 0) ? sprintf("%s/r-%05d.json", dir, i) : sprintf("%s/learner-%05d-module-%d.json", dir, int(i / 2), i % 4)
      if (i % 2 == 0) {
        total = 0
        for (t = 0; t < 4; t++) {
          ts[t] = 0
          for (c = 0; c < 4; c++) {
            v = ((i * 7 + t * 3 + c) % 5 == 0) ? "fail" : (((i + c) % 23 == 0) ? "error" : "pass")
            vs[t, c] = v; ts[t] += (v == "pass")
          }
          total += ts[t]
        }
        printf "{\"schemaVersion\": 1, \"lab\": \"kca-gates\", \"learner\": \"learner-%05d\", \"gradedAt\": \"2026-11-%02dT10:00:00Z\", \"target\": \"offline\", \"score\": %d, \"maxScore\": 16, \"tasks\": [", int(i / 2), 1 + i % 20, total > f
        for (t = 0; t < 4; t++) {
          printf "%s{\"id\": \"task-%d\", \"score\": %d, \"maxScore\": 4, \"checks\": [", (t ? ", " : ""), t, ts[t] > f
          for (c = 0; c < 4; c++) {
            v = vs[t, c]
            printf "%s{\"task\": \"task-%d\", \"id\": \"check-%d-%d\", \"kind\": \"admission\", \"verdict\": \"%s\", \"points\": 1, \"earned\": %d, \"detail\": \"the probe Pod team-a/probe-%d was denied by require-labels/check-team as expected\", \"seconds\": 0.004}", (c ? ", " : ""), t, t, c, v, v == "pass", c > f
          }
          printf "], \"hintsSeen\": 0, \"hintsTotal\": 3}" > f
        }
        print "], \"exitCode\": 1}" > f
      } else {
        right = 0
        for (q = 0; q < 40; q++) right += ((i + q * 11) % 7 != 0)
        printf "{\"schemaVersion\": 1, \"quiz\": \"module-%d\", \"score\": %d, \"max\": 40, \"percent\": %.1f, \"passMark\": 70, \"passed\": %s, \"completed\": true, \"questions\": [", i % 4, right, right * 2.5, (right >= 28 ? "true" : "false") > f
        for (q = 0; q < 40; q++) {
          ok = ((i + q * 11) % 7 != 0)
          printf "%s{\"id\": \"q-%d\", \"correct\": %s, \"points\": %d, \"max\": 1, \"answered\": true, \"concepts\": [\"concept-%d\"]}", (q ? ", " : ""), q, ok ? "true" : "false", ok, q % 9 > f
        }
        print "]}" > f
      }
      close(f)
    }
  }'
}

echo "kca: $KCA ($runs runs per size; median wall time, peak RSS)"
# Wall time on a busy machine counts waiting for a core: say how busy it was.
echo "cores: $(nproc); load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| workload | sizes | wall s / CPU s / peak MiB, per size |"
echo "|---|---|---|"

if [ -z "$only" ] || [ "$only" = canI ]; then
  cells=()
  for n in 10000 30000 100000; do
    rbac "$n" >"$work/rbac-$n.yaml"
    read -r s cpu mem code < <(measure "$KCA" auth can-i get configmaps --as user-7 -n ns-7 -f "$work/rbac-$n.yaml")
    cells+=("$(cell "$s" "$cpu" "$mem" "$code")")
  done
  row '`auth can-i -f` over 10k / 30k / 100k RBAC objects' "10k / 30k / 100k" "$(IFS='|'; echo "${cells[*]}" | sed 's/|/ ; /g')"
fi

if [ -z "$only" ] || [ "$only" = yaml ]; then
  cells=()
  for n in 10000 20000 40000; do
    mapping "$n" >"$work/map-$n.yaml"
    read -r s cpu mem code < <(measure "$KCA" auth can-i get pods --as nobody -f "$work/map-$n.yaml")
    cells+=("$(cell "$s" "$cpu" "$mem" "$code")")
  done
  row 'one YAML mapping with 10k / 20k / 40k keys' "10k / 20k / 40k" "$(IFS='|'; echo "${cells[*]}" | sed 's/|/ ; /g')"
fi

if [ -z "$only" ] || [ "$only" = quiz ]; then
  cells=()
  for n in 1000 10000 30000; do
    quiz "$n" "$work/quiz-$n"
    read -r s cpu mem code < <(measure "$KCA" --content-dir "$work/quiz-$n" quiz grade big --answers "$work/quiz-$n/answers.yaml")
    cells+=("$(cell "$s" "$cpu" "$mem" "$code")")
  done
  row '`quiz grade` with 1k / 10k / 30k questions' "1k / 10k / 30k" "$(IFS='|'; echo "${cells[*]}" | sed 's/|/ ; /g')"
fi

if [ -z "$only" ] || [ "$only" = apply ]; then
  policies 1000 >"$work/policies.yaml"
  pods 1000 >"$work/pods.yaml"
  read -r s cpu mem code < <(measure "$KCA" policy apply "$work/policies.yaml" --resource "$work/pods.yaml")
  row '`policy apply` 1,000 policies × 1,000 Pods' "1k × 1k" "$(cell "$s" "$cpu" "$mem" "$code")"
fi

if [ -z "$only" ] || [ "$only" = workspace ]; then
  export KCA_CONTENT_DIR="$repo" KCA_WORKSPACE_ROOT="$work/ws"
  # kca-mutate has least-privilege checks (RBAC over the whole object set), kca-admission
  # admission and generate checks: both held copies of the objects per check before.
  for lab in kca-admission kca-mutate; do
    cells=()
    base=0
    for n in 0 40000 295000; do # no file, ~1 MB, ~8.3 MB (under the 8 MiB cap)
      # `measure` clears $XDG_STATE_HOME before each run; the lab's start is kept apart.
      rm -rf "$work/ws" "$work/lab-state"
      XDG_STATE_HOME="$work/lab-state" "$KCA" lab start "$lab" --offline >/dev/null 2>&1
      cp -r "$repo/labs/$lab/solution/." "$work/ws/$lab/"
      [ "$n" = 0 ] || mapping "$n" >"$work/ws/$lab/policies/big.yaml"
      rm -f "$work/peak-kib"
      read -r s cpu mem code < <(measure env XDG_STATE_HOME="$work/lab-state" "$KCA" lab check --offline "$lab")
      c=$(cell "$s" "$cpu" "$mem" "$code")
      kib=$(cat "$work/peak-kib" 2>/dev/null || echo 0)
      if [ "$n" = 0 ]; then
        base=$kib
      elif [ "$kib" -gt 0 ] && [ "$base" -gt 0 ]; then
        # What the file adds to the peak, as a multiple of its size (issue #18: within 10x).
        bytes=$(wc -c <"$work/ws/$lab/policies/big.yaml")
        c+=" (+$(((kib - base) / 1024)) MiB, $(awk -v k="$((kib - base))" -v b="$bytes" 'BEGIN {printf "%.1f", k * 1024 / b}')× the file)"
      fi
      cells+=("$c")
    done
    row "\`lab check --offline $lab\` with no / a 1 MB / an 8 MB workspace file" "0 / 1 MB / 8 MB" "$(IFS='|'; echo "${cells[*]}" | sed 's/|/ ; /g')"
  done
  unset KCA_CONTENT_DIR KCA_WORKSPACE_ROOT
fi

if [ -z "$only" ] || [ "$only" = report ]; then
  results 10000 "$work/results"
  read -r s cpu mem code < <(measure "$KCA" report "$work/results")
  text=$(cell "$s" "$cpu" "$mem" "$code")
  read -r s cpu mem code < <(measure "$KCA" report "$work/results" --html "$work/class.html")
  row '`kca report` over 10,000 result files (text ; `--html`)' "10k files" "$text ; $(cell "$s" "$cpu" "$mem" "$code")"
fi

if [ -z "$only" ] || [ "$only" = class ]; then
  export KCA_CONTENT_DIR="$repo" KCA_WORKSPACE_ROOT="$work/class-ws"
  rm -rf "$work/class-ws" "$work/class" "$work/class-results"
  XDG_STATE_HOME="$work/lab-state" "$KCA" lab start kca-admission --offline >/dev/null 2>&1
  mutants=("$repo"/labs/kca-admission/mutants/*/)
  for ((i = 0; i < 200; i++)); do
    d="$work/class/learner-$(printf %03d "$i")"
    mkdir -p "$d"
    cp -r "$work/class-ws/kca-admission/." "$d/"
    # A quarter hand in the starter, half the solution, a quarter one of the mutants.
    if ((i % 4 != 0)); then cp -r "$repo/labs/kca-admission/solution/." "$d/"; fi
    if ((i % 4 == 3)); then cp -r "${mutants[(i / 4) % ${#mutants[@]}]}." "$d/"; fi
  done
  read -r s cpu mem code < <(measure "$KCA" grade kca-admission --submissions "$work/class" --out "$work/class-results")
  graded=$(cell "$s" "$cpu" "$mem" "$code")
  read -r s cpu mem code < <(measure "$KCA" report "$work/class-results" --html "$work/class.html")
  unset KCA_CONTENT_DIR KCA_WORKSPACE_ROOT
  row '200 submissions: `kca grade --out` ; `kca report --html` over its results' "200 learners" "$graded ; $(cell "$s" "$cpu" "$mem" "$code")"
fi

echo
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"

#!/usr/bin/env bash
# One entry point for every run on a GPU machine: the job and its arguments are given on
# the command line, results go under $OUT, and each run starts by recording its
# provenance (date, commit, device, driver, clocks, power limit) in $OUT/job.txt.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bash scripts/gpu_job.sh JOB [ARGS...]

Runs one job from the repository root. Results go under $OUT (default: ./out).
On a GPU machine with the offline bundle, .gpu/activate.sh is sourced first.

jobs:
  bench KERNELS [OPTIONS...]     the whole-call bench against CLBlast and cuBLAS:
                                 clgemm bench --kernels KERNELS --against clblast,cublas
                                 --clblast-params results/h200/clblast-xgemm-h200.json
                                 --out $OUT [OPTIONS...] (files in $OUT/<device>/)
  tune-and-ship KERNEL SHAPE... [OPTIONS...]
                                 tune KERNEL at each MxNxK shape and put the winners into
                                 clgemm/tuned/nvidia-h200.json with their provenance
                                 (scripts/tune_into_shipped.py; e.g. --budget 60)
  ship-and-compare KERNEL SHAPE... --compare SHAPES [OPTIONS...]
                                 tune-and-ship, then whole calls of gemm() at SHAPES
                                 (MxNxK,...) with the package as it was before the tune
                                 and as it is after, 2 alternating rounds of `clgemm bench
                                 --against cublas` each, and their table (job_summary.py
                                 compare; a tune on another device than the database's
                                 is not shipped, and both sides are then the same)
  compare DIR SHAPES             whole calls of gemm() at SHAPES (MxNxK,...) with another
                                 version of the package (DIR with clgemm/ and kernels/) and
                                 with this tree, as ship-and-compare's second half
  probe SOURCE KERNEL [SHAPE...] registers and PTX of SOURCE built as KERNEL, then SOURCE
                                 timed against the kernel's own file, interleaved
                                 (scripts/ab_versions.py --source; default shapes 4096^3
                                 and 8192^3)
  ab DIR KERNEL SHAPE...         another version of the package (DIR with clgemm/ and
                                 kernels/, e.g. from `git archive COMMIT clgemm kernels`)
                                 timed against this tree, interleaved
  points KERNEL [OPTIONS...]     parameter points (and other source files) of one kernel timed
                                 against each other, interleaved (scripts/points.py
                                 --kernel KERNEL --out $OUT/points.json [OPTIONS...])
  kernels [SIZES]                the kernels table at registry defaults
                                 (scripts/kernel_table.py; default 1024,2048,4096,8192,4000)
  transposes [SIZE]              naive, local and shuffle transposes against a device copy
                                 (clgemm transpose --json; default 8192)
  ptx KERNEL [NAME=VALUE...]     registers and PTX counts of one build (scripts/inspect_ptx.py)
  edges [SIZE]                   kernels 5 and 7 at float's edges (scripts/tc_special.py)
  cublas [SIZES]                 cuBLAS FP32 reference through torch (scripts/cublas_ref.py)
  plans --shapes S --variant V... [OPTIONS...]
                                 whole calls of clgemm.Plan variants (other thresholds,
                                 split counts, points, padding) at each shape, interleaved,
                                 beside cuBLAS's (scripts/plans.py)
  plans-versions DIR [--runs N] -- PLANS ARGS...
                                 scripts/plans.py's variants (e.g. --variant gemm:, gemm()'s
                                 own choices) with another version of the package (DIR with
                                 clgemm/, kernels/, scripts/) and with this tree, in turn,
                                 each in its own processes (scripts/plans_versions.py)
  overhead [OPTIONS...]          host time of a repeated gemm() / Plan call against a bare
                                 launch (scripts/call_overhead.py)
  tests [PYTEST ARGS...]         the test suite (or the files and tests named) on this
                                 device, a file a process under a time limit (TEST_FILE_LIMIT,
                                 default 300 s; TEST_STALL, default 120 s, dumps a stuck
                                 test's stacks), into $OUT/pytest.txt and a line a file in
                                 $OUT/tests-summary.txt
  tune-rate KERNEL SIZE [OPTIONS...]
                                 configurations a second of `clgemm tune --kernel KERNEL
                                 --size SIZE` with its default options, in a fresh
                                 CLGEMM_HOME (nothing cached, nothing resumed)
  recorded SECONDS SHAPES...     the record-tune-run workflow: gemm() on SHAPES (MxNxK)
                                 with CLGEMM_RECORD_SHAPES=1 in a fresh CLGEMM_HOME, then
                                 `clgemm tune --recorded --time-limit SECONDS`, then whole
                                 calls before and after the tune, 3 alternating rounds of
                                 `clgemm bench --against none` per database

environment:
  OUT             results folder [default: ./out]
  CLGEMM_COMMIT   the commit of this tree, where it carries no git metadata
  SMI=1           sample clocks, power and throttle reasons every 50 ms into $OUT/smi.csv

examples:
  bash scripts/gpu_job.sh bench 5,7,8
  bash scripts/gpu_job.sh tune-and-ship 7 8192x8192x8192 4096x4096x4096 --budget 60
  bash scripts/gpu_job.sh probe /tmp/k7_variant.cl 7
EOF
}

job=${1:-}
case "$job" in
  ""|-h|--help|help) usage; exit 0 ;;
  bench|tune-and-ship|ship-and-compare|compare|probe|ab|points|kernels|transposes|ptx|edges|cublas|plans|plans-versions|overhead|tests|tune-rate|recorded) ;;
  *) echo "gpu_job.sh: unknown job '$job' (see --help)" >&2; exit 2 ;;
esac
shift
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
if [ -f .gpu/activate.sh ] && command -v nvidia-smi >/dev/null; then
  # the offline bundle of a GPU machine (wheels, CLBlast, the NVIDIA ICD)
  # shellcheck disable=SC1091
  source .gpu/activate.sh >/dev/null
fi
export PYOPENCL_COMPILER_OUTPUT=${PYOPENCL_COMPILER_OUTPUT:-0}
commit=$(python3 -c "from clgemm import store; print(store.commit())" 2>/dev/null \
         || git rev-parse --short HEAD 2>/dev/null || echo unknown)
export CLGEMM_COMMIT=$commit     # what every result file of the job records (store.commit)

{
  echo "job: $job $*"
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "commit: $commit"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
  fi
} | tee "$OUT/job.txt"

smi_pid=
if [ "${SMI:-0}" = 1 ] && command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active \
    --format=csv,noheader -lms 50 > "$OUT/smi.csv" 2>/dev/null &
  smi_pid=$!
  trap 'kill "$smi_pid" 2>/dev/null || true' EXIT
fi

need() { [ "$1" -ge "$2" ] || { echo "gpu_job.sh $job: missing arguments (see --help)" >&2; exit 2; }; }
# KERNEL SHAPE... [OPTIONS...]: tune KERNEL at each MxNxK shape into the shipped database
ship() {
  local kernel=$1 shapes=(); shift
  while [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+x[0-9]+x[0-9]+$ ]]; do shapes+=("$1"); shift; done
  [ ${#shapes[@]} -gt 0 ] || { echo "$job: give at least one MxNxK shape" >&2; exit 2; }
  python3 scripts/tune_into_shipped.py --kernel "$kernel" --commit "$commit" --out "$OUT" \
    --shapes "$(IFS=,; echo "${shapes[*]}")" "$@"
}

# DIR SHAPES: whole calls of gemm() at SHAPES with DIR's package (before) and this tree's
# (after), 2 alternating rounds of `clgemm bench --against cublas`, and their table. Each
# side keeps one CLGEMM_HOME across its rounds (empty of tuned entries: only its builds
# are cached there), so the second round compiles nothing.
compare_versions() {
  local before=$1 shapes=$2 out home_before home_after
  # without them `python3 -m clgemm` in DIR would import the installed package: this tree
  # timed against itself, with no word
  if [ ! -d "$before/clgemm" ] || [ ! -d "$before/kernels" ]; then
    echo "gpu_job.sh $job: $before holds no clgemm/ and kernels/ (another version of the" \
         "package, e.g. from \`git archive COMMIT clgemm kernels\`)" >&2
    exit 2
  fi
  out=$(cd "$OUT" && pwd) home_before=$(mktemp -d) home_after=$(mktemp -d)
  for round in 1 2; do
    for side in before after; do
      dir=$PWD home=$home_after
      [ $side = before ] && dir=$before home=$home_before
      # run from the version's own folder: `python3 -m` puts the working folder first
      (cd "$dir" && CLGEMM_HOME=$home python3 -m clgemm bench --against cublas \
         --shapes "$shapes" --out "$out/$side-$round" >/dev/null)
    done
  done
  python3 scripts/job_summary.py compare "$OUT" --before before --after after \
    | tee "$OUT/summary.txt"
}

case "$job" in
  bench)
    need $# 1
    kernels=$1; shift
    python3 -m clgemm bench --kernels "$kernels" --against clblast,cublas \
      --clblast-params results/h200/clblast-xgemm-h200.json --out "$OUT" "$@"
    ;;
  tune-and-ship)
    need $# 2
    ship "$@"
    ;;
  ship-and-compare)
    need $# 4
    args=() compare=
    while [ $# -gt 0 ]; do
      case "$1" in
        --compare) [ $# -ge 2 ] || { echo "ship-and-compare: --compare needs MxNxK,..." >&2; exit 2; }
                   compare=$2; shift 2 ;;
        *) args+=("$1"); shift ;;
      esac
    done
    [ -n "$compare" ] || { echo "ship-and-compare: give --compare MxNxK,..." >&2; exit 2; }
    before=$(mktemp -d)
    cp -r clgemm kernels "$before/"          # the package and its database as they were
    ship "${args[@]}"
    compare_versions "$before" "$compare"
    ;;
  compare)
    need $# 2
    compare_versions "$1" "$2"
    ;;
  probe)
    need $# 2
    source_file=$1 kernel=$2; shift 2
    shapes=${*:-4096x4096x4096 8192x8192x8192}
    python3 scripts/inspect_ptx.py --kernels "$kernel" --source "$source_file" --option=-DEXACT
    python3 scripts/ab_versions.py --versions tree=. --source "$source_file" --kernel "$kernel" \
      --shapes "$(echo $shapes | tr ' ' ,)" --out "$OUT/probe.jsonl" | tee "$OUT/probe.txt"
    ;;
  ab)
    need $# 3
    dir=$1 kernel=$2; shift 2
    python3 scripts/ab_versions.py --versions "before=$dir,after=." --kernel "$kernel" \
      --shapes "$(echo "$@" | tr ' ' ,)" --out "$OUT/ab.jsonl" | tee "$OUT/ab.txt"
    ;;
  points)
    need $# 1
    kernel=$1; shift
    python3 scripts/points.py --kernel "$kernel" --out "$OUT/points.json" "$@" | tee "$OUT/points.txt"
    ;;
  kernels)
    python3 scripts/kernel_table.py --kernels 1-8 --sizes "${1:-1024,2048,4096,8192,4000}" \
      --out "$OUT/kernels"
    ;;
  transposes)
    for k in naive local shuffle; do
      python3 -m clgemm transpose --kernel "$k" --size "${1:-8192}" --json
    done | tee "$OUT/transposes.jsonl"
    ;;
  ptx)
    need $# 1
    kernel=$1; shift
    params=(); for p in "$@"; do params+=(--param "$p"); done
    python3 scripts/inspect_ptx.py --kernels "$kernel" "${params[@]}" --save-ptx "$OUT/ptx"
    ;;
  edges)
    python3 scripts/tc_special.py --size "${1:-1024}" | tee "$OUT/edges.txt"
    ;;
  cublas)
    python3 scripts/cublas_ref.py --sizes "${1:-1024,2048,4096,8192,4000}" | tee "$OUT/cublas.txt"
    ;;
  plans)
    python3 scripts/plans.py --json "$OUT/plans.json" "$@" | tee "$OUT/plans.txt"
    ;;
  plans-versions)
    need $# 3
    dir=$1; shift
    python3 scripts/plans_versions.py --versions "before=$dir,after=." \
      --out "$OUT/plans-versions.json" "$@" | tee "$OUT/plans-versions.txt"
    ;;
  overhead)
    python3 scripts/call_overhead.py --json "$OUT/overhead.json" "$@" | tee "$OUT/overhead.txt"
    ;;
  tests)
    # Each test file in a process of its own under a time limit, so that a file that hangs
    # (or takes the driver down) is named and the rest still run; a test running past
    # TEST_STALL seconds has every thread's stack written to the log (pytest's
    # faulthandler_timeout). Arguments ending in .py or naming a test (::) choose the
    # targets (default: every tests/test_*.py); the others go to pytest as options.
    targets=() opts=() value=0
    for arg in "$@"; do
      if [ $value = 1 ]; then opts+=("$arg"); value=0                # an option's value
      elif [ -d "$arg" ]; then targets+=("${arg%/}"/test_*.py)       # a folder: its files
      else
        case "$arg" in
          *.py|*::*) targets+=("$arg") ;;
          -k|-m|-o|-p|--deselect|--ignore) opts+=("$arg"); value=1 ;;
          -q) ;;        # passed already: a second one hides the counts the summary reads
          *) opts+=("$arg") ;;
        esac
      fi
    done
    [ ${#targets[@]} -gt 0 ] || targets=(tests/test_*.py)
    : > "$OUT/pytest.txt"; : > "$OUT/tests-summary.txt"
    limit=${TEST_FILE_LIMIT:-300}
    worst=0
    for target in "${targets[@]}"; do
      log=$(mktemp) rc=0
      timeout -k 10 "$limit" python3 -m pytest -q -rs \
        -o faulthandler_timeout="${TEST_STALL:-120}" ${opts[@]+"${opts[@]}"} "$target" \
        > "$log" 2>&1 || rc=$?
      { echo "=== $target"; cat "$log"; } >> "$OUT/pytest.txt"
      last=$(grep -E "passed|failed|error|no tests ran|deselected" "$log" | tail -1 || true); rm -f "$log"
      if [ $rc = 124 ] || [ $rc = 137 ]; then last="stopped after $limit s"; fi
      echo "$target: exit $rc, $last" | tee -a "$OUT/tests-summary.txt"
      [ $rc = 0 ] || [ $rc = 5 ] || worst=$rc       # 5: no test of the file selected
    done
    [ $worst = 0 ] || { echo "note: some test files failed or stopped (exit $worst)"; exit_status=$worst; }
    ;;
  tune-rate)
    need $# 2
    kernel=$1 size=$2; shift 2
    CLGEMM_HOME=$(mktemp -d) python3 -m clgemm tune --kernel "$kernel" --size "$size" --json "$@" \
      > "$OUT/tune-rate.jsonl" || echo "note: clgemm tune exited $?"
    python3 scripts/job_summary.py tune-rate "$OUT/tune-rate.jsonl"
    ;;
  recorded)
    need $# 2
    seconds=$1; shift
    shapes=$(IFS=,; echo "$*")
    tuned=$(mktemp -d) untuned=$(mktemp -d)
    CLGEMM_HOME=$tuned CLGEMM_RECORD_SHAPES=1 python3 -m clgemm bench --shapes "$shapes" \
      --against none --repeat 3 --out "$OUT/record" >/dev/null
    cp -r "$tuned/." "$untuned/"
    # a shape the time limit left without a winner makes tune exit 1: the others still count
    CLGEMM_HOME=$tuned python3 -m clgemm tune --recorded --time-limit "$seconds" --json \
      > "$OUT/tune.jsonl" || echo "note: clgemm tune exited $? (see $OUT/tune.jsonl)"
    for round in 1 2 3; do
      for db in untuned tuned; do
        home=$untuned; [ $db = tuned ] && home=$tuned
        CLGEMM_HOME=$home python3 -m clgemm bench --shapes "$shapes" --against none \
          --out "$OUT/$db-$round" >/dev/null
      done
    done
    python3 scripts/job_summary.py recorded "$OUT" | tee "$OUT/summary.txt"
    ;;
esac
echo "done: $(date -u '+%Y-%m-%d %H:%M:%S UTC')" | tee -a "$OUT/job.txt"
exit "${exit_status:-0}"

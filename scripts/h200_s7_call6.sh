# Session 7, call 6 (~2 minutes). (a) Call 5 found padding paying at 1500^3 (+8.5%) and
# losing at 1000^3 (-9.6%): 1100^3, 1200^3, 1300^3 with --pad yes against no, 2 rounds.
# (b) The host side of a padded numpy operand (session 6's rectangular write straight into
# the zero-padded buffer, untimed until now) against a dense write of the same matrix.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
for r in 1 2; do
  for s in 1100 1200 1300; do
    for p in no yes; do
      timeout 60 python3 -m clgemm run --kernel 5 --size $s --pad $p --json 2>/dev/null \
        | tee -a $OUT/pad.jsonl \
        | python3 -c "import json,sys; r=json.loads(sys.stdin.read()); print('$r $s pad=$p', r['params'], 'padded', r['padded'], round(r['gflops']), 'GFLOPS', r['ms_median'], 'ms ok', r['verified'])"
    done
  done
done
for s in "4000 4096x4096" "8000 8064x8064"; do
  set -- $s
  timeout 60 python3 scripts/upload_probe.py --rows $1 --cols $1 --padded $2 2>&1 | grep -v -i "warn\|lambda"
done

# Session 5, call 5 (~1.5 minutes): the shuffle transpose as it now ships (call 4's zz_s256
# design: two exchanges, each store writing 2 output rows x 256 bytes), through the CLI as a
# user runs it, alternated with the local transpose, three rounds at 8192^2; then both at an
# odd shape (8191 x 8193: every edge path) once.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
for r in 1 2 3; do
  for args in "--kernel shuffle" "--kernel shuffle --param WARPS=2" "--kernel local"; do
    python3 -m clgemm transpose $args --size 8192 --json 2>/dev/null | tail -1 | tee -a $OUT/transposes.jsonl \
      | python3 -c "import json,sys; d=json.load(sys.stdin); print('$r', d['kernel'], d['params'], round(d['gbps']), round(d['copy_gbps']), round(d['ratio_to_copy'], 3), d['verified'])"
  done
done
for k in shuffle local; do
  python3 -m clgemm transpose --kernel $k --rows 8191 --cols 8193 --json 2>/dev/null | tail -1 | tee -a $OUT/transposes_odd.jsonl \
    | python3 -c "import json,sys; d=json.load(sys.stdin); print('odd', d['kernel'], d['params'], round(d['gbps']), round(d['copy_gbps']), round(d['ratio_to_copy'], 3), d['verified'])"
done

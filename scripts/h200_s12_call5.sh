# Session 12, call 5 (~1 minute). The last wave at 8192^3 filled by a split-K launch of C's
# last tile rows on a second queue, beside the plain launch of the rest
# (scripts/tail_probe.py: host wall time, row-major A, 3 interleaved rounds of 10).
source .gpu/activate.sh >/dev/null; export PYOPENCL_COMPILER_OUTPUT=0; date -u; CLGEMM_HOME=$(mktemp -d) timeout 300 python3 scripts/tail_probe.py --size 8192 --rows 61:4,61:2,62:2,62:4,63:4,63:8,60:2 --rounds 3 --out $OUT/tail.json 2>&1 | grep -v -i warn | tail -20; date -u

# Session 12, call 6 (~1 minute). Call 5 again, with each kernel's start and end from its
# profiling events: do the plain launch and the split one on the second queue overlap?
source .gpu/activate.sh >/dev/null; export PYOPENCL_COMPILER_OUTPUT=0; date -u; CLGEMM_HOME=$(mktemp -d) timeout 300 python3 scripts/tail_probe.py --size 8192 --rows 61:4,62:4,62:2 --rounds 3 --out $OUT/tail.json 2>&1 | grep -v -i warn | tail -20; date -u

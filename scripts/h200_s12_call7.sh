# Session 12, call 7 (~2 minutes). Call 6 showed the two launches running side by side
# from the start (the split one began 56 us after the plain one), so its short groups do
# not wait for the plain launch's last wave. With cl_khr_priority_hints (queue 1 high,
# queue 2 low), the device may hold the low-priority groups back until the plain launch
# has no groups left to start: the tail fill intended. Without priorities, then with.
source .gpu/activate.sh >/dev/null; export PYOPENCL_COMPILER_OUTPUT=0; date -u
CLGEMM_HOME=$(mktemp -d) timeout 200 python3 scripts/tail_probe.py --size 8192 --rows 60:4,61:4,61:8,62:4 --rounds 3 --out $OUT/tail.json 2>&1 | grep -v -i warn | tail -20
CLGEMM_HOME=$(mktemp -d) timeout 200 python3 scripts/tail_probe.py --size 8192 --rows 60:4,61:4,61:8,62:4 --rounds 3 --priority --out $OUT/tail-priority.json 2>&1 | grep -v -i warn | tail -20
date -u

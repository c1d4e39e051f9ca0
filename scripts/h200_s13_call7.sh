# Session 13, call 7 (~5 minutes). The whole test suite on the H200 at this session's last
# code (tile-waste rule, half-depth slices, the re-measure's per-step deadline, the install
# test offline).
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
CLGEMM_HOME=$(mktemp -d) timeout 330 python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tail -8 | tee $OUT/pytest.txt
date -u

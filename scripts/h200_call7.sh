# Session 2, device call 2: the exhaustive kernel 5 sweep at 4096^3 (EXACT builds, register
# cap, slow-configuration cutoff) and TPE tunes of kernel 5 at the other sizes.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 CLGEMM_HOME=/tmp/clgemm-home
python3 scripts/tune_batch.py --workers 16 --out $OUT/tune_k5.json \
  --job 5:4096:grid:0:330 --job 5:8192:tpe:0:70 --job 5:2048:tpe:0:35 --job 5:1024:tpe:0:30 \
  2>&1 | grep -v -i "warn\|lambda\|^ *$"
tar czf $OUT/tune-home.tgz -C /tmp/clgemm-home .

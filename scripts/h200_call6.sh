# Session 2, device call 1: the issue-6 levers, every transpose configuration at 8192^2
# (WIDE=1 included), kernel 6 against 5 after its refactor, kernels 5/6 at the smaller
# sizes, and tuner throughput with the register cap and the slow-configuration cutoff.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 CLGEMM_HOME=/tmp/clgemm-home
q() { grep -v -i "warn\|lambda\|^ *$"; }
python3 scripts/levers.py --sizes 4096,8192 --rounds 3 --out $OUT/levers.json 2>&1 | q
python3 scripts/transposes_k6.py --out $OUT/transposes_k6.json 2>&1 | q | grep -v "^transpose naive" | sort -t: -k1,1 | tail -60
python3 scripts/kernel_table.py --kernels 5,6 --sizes 1024,2048,4000,4096,8192 --repeat 10 --out $OUT/kernels56 2>&1 | q | tail -5
python3 scripts/tune_batch.py --workers 16 --out $OUT/tune_throughput.json --job 5:2048:random:0:90 2>&1 | q
tar czf $OUT/tune-home.tgz -C /tmp/clgemm-home .

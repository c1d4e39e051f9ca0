source .gpu/activate.sh >/dev/null; export PYOPENCL_COMPILER_OUTPUT=0 CLGEMM_COMMIT=d18b1b1+serial
P="--param TSM=128 --param TSN=128 --param TSK=8 --param WPTM=8 --param WPTN=8 --param WIDTH=4 --param PAD=0"
Q="--param TSM=64 --param TSN=128 --param TSK=16 --param WPTM=16 --param WPTN=4 --param WIDTH=4 --param PAD=0"
for src in probe/old/kernels/5_double_buffered.cl kernels/5_double_buffered.cl probe/k5_ser2.cl; do
  for pp in "$P" "$Q"; do echo "== $src $pp"; python3 scripts/inspect_ptx.py --kernels 5 $pp --option=-DEXACT --option=-DSPLIT_K --source $src 2>&1 | grep -i "registers\|spill\|fma.rn\|ld.local" | head -4; done
done
S=256x8192x8192,1279x1279x1279,1152x1152x1152,1151x1151x1151,1535x1535x1023,2047x1023x1023
V='--variant s2:split_k=2 --variant s3:split_k=3 --variant t2:kernel=5-ser2;split_k=2 --variant t3:kernel=5-ser2;split_k=3'
PYTHONPATH=$PWD/probe/old:$PYTHONPATH python3 probe/old/scripts/plans.py --rounds 2 --shapes $S --variant s2:split_k=2 --variant s3:split_k=3 2>&1 | grep -v Warn | grep -v "lambda: self" | cut -c1-60
python3 scripts/plans.py --source 5:ser2=probe/k5_ser2.cl --rounds 2 --shapes $S $V 2>&1 | grep -v Warn | grep -v "lambda: self" | cut -c1-60

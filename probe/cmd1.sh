source .gpu/activate.sh >/dev/null; export PYOPENCL_COMPILER_OUTPUT=0 CLGEMM_COMMIT=d18b1b1+probe
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
F="unaligned_max_volume=1e15"; C="unaligned_max_volume=0;unaligned_light_volume=0"
m64="TSM=64;TSN=64;TSK=16;WPTM=8;WPTN=4;WIDTH=4;PAD=1"; e1k="TSM=64;TSN=128;TSK=16;WPTM=8;WPTN=4;WIDTH=4;PAD=1"; e13="TSM=64;TSN=128;TSK=16;WPTM=16;WPTN=4;WIDTH=4;PAD=0"; big="TSM=128;TSN=128;TSK=8;WPTM=16;WPTN=8;WIDTH=4;PAD=1"
python3 scripts/plans.py --source 5:shift=probe/k5_shift.cl --json $OUT/mid.json --rounds 3 --shapes 767x767x767,999x999x999,1151x1151x1151,1201x1201x1201,1279x1279x1279,1535x1535x1023,2047x2047x63 \
 --variant gemm: --variant "m64f:$m64;$F" --variant "m64s:kernel=5-shift;$m64;$F" --variant "m64c:$m64;$C" \
 --variant "e1kf:$e1k;$F" --variant "e1ks:kernel=5-shift;$e1k;$F" --variant "e13f:$e13;$F" --variant "e13s:kernel=5-shift;$e13;$F" --variant "e13c:$e13;$C" 2>&1 | grep -v Warn | grep -v "lambda: self" | tee $OUT/mid.txt
python3 scripts/plans.py --source 5:shift=probe/k5_shift.cl --json $OUT/big.json --rounds 3 --shapes 2047x2047x63,4001x4001x4001,5003x3001x2039,7919x7919x769,2047x1023x1023 \
 --variant gemm: --variant "bigf:$big;$F" --variant "bigs:kernel=5-shift;$big;$F" --variant "bigc:$big;$C" 2>&1 | grep -v Warn | grep -v "lambda: self" | tee $OUT/big.txt

source .gpu/activate.sh >/dev/null; export PYOPENCL_COMPILER_OUTPUT=0 CLGEMM_COMMIT=d18b1b1
c864="TSM=128;TSN=64;TSK=8;WPTM=8;WPTN=8;WIDTH=4;PAD=1"; c648="TSM=64;TSN=128;TSK=8;WPTM=8;WPTN=8;WIDTH=4;PAD=1"
python3 scripts/plans.py --json $OUT/splits.json --rounds 3 --shapes 767x767x767,768x768x768,999x999x999,1024x1024x1024,1151x1151x1151,1152x1152x1152,1201x1201x1201,1279x1279x1279,1535x1535x1023,2047x1023x1023 \
 --variant gemm: --variant s2:split_k=2 --variant s3:split_k=3 --variant s4:split_k=4 \
 --variant "a1:$c864" --variant "a2:$c864;split_k=2" --variant "a3:$c864;split_k=3" \
 --variant "b1:$c648" --variant "b2:$c648;split_k=2" --variant "b3:$c648;split_k=3" 2>&1 | grep -v Warn | grep -v "lambda: self" | tee $OUT/splits.txt

# Session 8, call 3 (~4 minutes). Call 2 showed the 1256-1304^3 cliff is wave
# quantisation, not alignment: the 1024^3 configuration (32 x 128 tiles) fits 390 groups
# (1248^3) in one wave and needs two for 400 (1256^3), 0.118 -> 0.234 ms. Every distinct
# tuned configuration of kernel 5 at untuned shapes (scripts/config_sweep.py): which wins
# against the nearest-shape lookup's pick, and each build's registers and local memory.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
timeout 500 python3 -u scripts/config_sweep.py --out $OUT --shapes \
1100,1256,1300,1400,1500,1700,2100,2300,2600,3000,3300,5000,6000,2100x2100x512,1300x4000x1300,3000x1000x3000,4200,6144x6144x1024 \
  2>&1 | grep --line-buffered -v -i "warn\|lambda"
date -u

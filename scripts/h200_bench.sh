# The closing bench as every session ran it: clgemm's kernels against CLBlast (its default
# database and its own tuner's parameters) and cuBLAS, into $OUT/bench. Run after
# `source .gpu/activate.sh`:  bash scripts/h200_bench.sh KERNELS TIMEOUT_S TAIL_LINES
kernels=$1 limit=$2 lines=$3
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
timeout "$limit" python3 -m clgemm bench --kernels "$kernels" --against clblast,cublas \
  --clblast-params results/h200/clblast-xgemm-h200.json --out $OUT/bench 2>&1 \
  | grep --line-buffered -v -i "warn\|lambda\|^ *$" | tail -"$lines"
date -u

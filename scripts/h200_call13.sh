# Session 3, call 2 (~6 minutes): split-K against no split at the shapes with few tiles of
# C (kernel 5, parameters from the database call 1 left in /tmp/clgemm-home, if this is
# the same machine), then the bench with device-span timing and that database.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 CLGEMM_HOME=/tmp/clgemm-home
ls $CLGEMM_HOME > $OUT/home-listing.txt 2>&1
for round in 1 2; do
  for shape in "1 4096 4096:1 2 4 8 16 32 auto" "256 8192 8192:1 2 4 auto" "512 512 512:1 2 4 auto" \
               "1024 1024 1024:1 2 4 auto" "4096 1024 4096:1 2 auto" "2048 2048 2048:1 2 auto"; do
    read m n k <<< "${shape%%:*}"
    for s in ${shape#*:}; do
      timeout 60 python3 -m clgemm run --kernel 5 --m $m --n $n --k $k --split-k $s --repeat 20 --json \
        | python3 -c "import json,sys; r=json.load(sys.stdin); r['asked']='$s'; r['round']=$round; print(json.dumps(r))" \
        >> $OUT/split.jsonl
    done
  done
done
python3 -c "
import json
for r in map(json.loads, open('$OUT/split.jsonl')):
    print(r['round'], r['m'], r['n'], r['k'], 'asked', r['asked'], 'splits', r['splits'], round(r['gflops']), r['verified'], r['params_source'])"
timeout 240 python3 -m clgemm bench --kernels 4,5 --against clblast,cublas \
  --clblast-params results/h200/clblast-xgemm-h200.json --out $OUT/bench 2>&1 \
  | grep -v -i "warn\|lambda\|^ *$" | tail -50

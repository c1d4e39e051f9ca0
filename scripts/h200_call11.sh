# Prepared for the next device session (not run yet): transposed operands read by the
# kernel against device transposes, every transpose configuration (TILES=16 now in the
# shuffle's space), and padding to whole tiles at 4000^3 (~2 minutes).
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
python3 scripts/transposes_k6.py --out $OUT/transposes_k6.json 2>&1 \
  | grep -v -i "warn\|lambda\|^ *$" | grep -v "^transpose naive" | sort | tail -70
for p in no yes no yes; do
  python3 -m clgemm run --kernel 5 --size 4000 --pad $p --repeat 20 --json >> $OUT/pad4000.jsonl
done
python3 -c "import json; [print(r['padded'], round(r['gflops']), r['verified']) for r in map(json.loads, open('$OUT/pad4000.jsonl'))]"

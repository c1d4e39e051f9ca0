# Session 12, call 9 (~4 minutes). Tiles of 4 and 8 rows or columns in kernels 3-6's space
# (the 1x4096x4096 winner sat on 16, the space's edge, and computes 16 rows for m = 1).
# (a) `clgemm tune --kernel 5` at 1x4096x4096, budget 150, warm-started from the shipped
#     entries, into a scratch database; (b) its entry put into this copy's shipped
#     database ($OUT/nvidia-h200.json); (c) before (zz_before: `git archive` of the commit
#     before the wider space) / after, kernel 5, 2 interleaved rounds, at m = 1 and other
#     skinny shapes (scripts/ab_versions.py).
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
CLGEMM_HOME=$OUT/home timeout 200 python3 -m clgemm tune --kernel 5 --m 1 --n 4096 --k 4096 --budget 150 --workers 8 --json 2>/dev/null > $OUT/tune.json
python3 - <<'PY'
import json, os
out = os.environ["OUT"]
r = json.load(open(f"{out}/tune.json"))
w = r["best"]
print("tune:", round(r["seconds"]), "s,", len(r["records"]) if "records" in r else "", "winner", w["params"], "splits", w.get("splits"), round(w["gflops"]), "GFLOPS")
for f in r["finalists"]:
    print("  finalist", round(f["gflops"]), f["params"])
user = json.load(open(f"{out}/home/db/nvidia-h200-580.159.04.json"))
entry = user["entries"]["5"]["1x4096x4096"]
entry["note"] = ("session 12 call 9 (scripts/h200_s12_call9.sh): clgemm tune budget 150 with tiles "
                 "of 4 and 8 rows in the space")
shipped = json.load(open("clgemm/tuned/nvidia-h200.json"))
print("shipped before:", shipped["entries"]["5"]["1x4096x4096"]["params"], shipped["entries"]["5"]["1x4096x4096"].get("splits"))
shipped["entries"]["5"]["1x4096x4096"] = entry
json.dump(shipped, open("clgemm/tuned/nvidia-h200.json", "w"), indent=1, sort_keys=True)
json.dump(shipped, open(f"{out}/nvidia-h200.json", "w"), indent=1, sort_keys=True)
print("entry:", json.dumps(entry)[:400])
PY
date -u
timeout 200 python3 scripts/ab_versions.py --versions before=zz_before,after=. --kernel 5 --rounds 2 \
  --shapes 1x4096x4096,1x8192x8192,1x2000x3000,4x4096x4096,8x8192x8192,16x2048x2048,32x4096x4096 \
  --out $OUT/ab.jsonl 2>&1 | grep -v -i warn | tee $OUT/ab.txt
date -u

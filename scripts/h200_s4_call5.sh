# Session 4, call 5 (~3 minutes). gemm() now pads by default where it pays (pad="auto",
# M*N*K >= 2^35, at most 15% more work; the kernel writes C in place, so the C copy is gone)
# and the tuner times the padded EXACT launch for such a target. 1. Kernel 5 tuned at
# 4000^3 that way (empty CLGEMM_HOME: the shipped database warm-starts it), against the
# defaults. 2. The bench against CLBlast and cuBLAS with that entry added to the shipped
# database. 3. Two probes of the shuffle transpose with streaming cache hints through
# inline PTX (kernels/zz_st_cs.cl: st.global.cs stores; zz_ld_cs.cl: ld.global.cs loads;
# both untracked copies of transpose_shuffle.cl), against it and the local transpose.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 CLGEMM_HOME=/tmp/clgemm-home-s4c5
rm -rf $CLGEMM_HOME
timeout 120 python3 scripts/tune_batch.py --workers 16 --compare --out $OUT/tune_k5_4000.json \
  --job 5:4000:tpe:0:45 2>&1 | grep -v -i "warn\|lambda\|^ *$"
timeout 300 python3 -m clgemm bench --kernels 4,5 --against clblast,cublas \
  --clblast-params results/h200/clblast-xgemm-h200.json --out $OUT/bench 2>&1 \
  | grep -v -i "warn\|lambda\|^ *$" | tail -3
python3 -c "
import json
d = json.load(open('$OUT/bench/nvidia-h200/bench-$(date +%F).json'))
for r in d['rows']:
    if r['contender'] in ('clgemm-5', 'cublas'):
        print(r['m'], r['n'], r['k'], r['contender'], round(r['gflops']), r.get('vs_cublas'), r.get('vs_clblast'), r['verified'])"
tar czf $OUT/tune-home.tgz -C $CLGEMM_HOME .
python3 - <<'PY' 2>&1 | grep -v -i warn
import dataclasses, json, os
from clgemm import device, kernels
from clgemm.run import run_transpose
q = device.queue(device.select())
sh = kernels.get("shuffle", "transpose")
for src in ("zz_st_cs.cl", "zz_ld_cs.cl"):
    kernels.TRANSPOSE[src] = dataclasses.replace(sh, key=src, name=src, source=src)
with open(os.environ["OUT"] + "/transposes_cs.jsonl", "w") as f:
    for rnd in range(2):
        for key in ("local", "shuffle", "zz_st_cs.cl", "zz_ld_cs.cl"):
            try:
                r = run_transpose(q, 8192, 8192, kernel=key, repeat=10)
            except Exception as e:
                print(key, "failed:", str(e)[:300]); continue
            r["round"] = rnd
            f.write(json.dumps(r) + "\n")
            print(f"{rnd} {key:12s} {r['gbps']:6.0f} GB/s copy {r['copy_gbps']:.0f} "
                  f"ratio {r['ratio_to_copy']:.3f} ok={r['verified']}", flush=True)
PY

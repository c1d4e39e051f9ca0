source .gpu/activate.sh >/dev/null; export PYOPENCL_COMPILER_OUTPUT=0 CLGEMM_COMMIT=d18b1b1+reduce-ldw
S=1151x1151x1151,1201x1201x1201,1535x1535x1023,2047x1023x1023,767x767x767,999x999x999,256x8192x8192,1152x1152x1152,1500x1500x7000,4097x4097x4097
V='--variant gemm: --variant s2:split_k=2 --variant s3:split_k=3'
for r in 1 2; do
  PYTHONPATH=$PWD/probe/old:$PYTHONPATH python3 probe/old/scripts/plans.py --json $OUT/old$r.json --rounds 2 --shapes $S $V 2>&1 | grep -v Warn | grep -v "lambda: self" > $OUT/old$r.txt
  python3 scripts/plans.py --json $OUT/new$r.json --rounds 2 --shapes $S $V 2>&1 | grep -v Warn | grep -v "lambda: self" > $OUT/new$r.txt
done
python3 - <<'PY'
import json, os, statistics as st
O=os.environ["OUT"]; t={}
for v in ("old","new"):
    for r in (1,2):
        for row in json.load(open(f"{O}/{v}{r}.json"))["rows"]:
            key=(f'{row["m"]}x{row["n"]}x{row["k"]}', row["variant"])
            if "call_ms_median" in row: t.setdefault(key,{}).setdefault(v,[]).append(row["call_ms_median"])
            elif row["variant"]!="cublas": print("FAIL", v, key, row.get("reason"))
cub={k[0]:st.median(d.get("old",[])+d.get("new",[])) for k,d in t.items() if k[1]=="cublas"}
print("shape variant old_ms new_ms new/old_speed new_x_cublas old_x_cublas")
for k,d in t.items():
    if k[1]=="cublas": continue
    o,n=st.median(d["old"]),st.median(d["new"])
    print(k[0],k[1],round(o,4),round(n,4),round(o/n,3),round(cub[k[0]]/n,3),round(cub[k[0]]/o,3))
PY

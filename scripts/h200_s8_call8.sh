# Session 8, call 8 (~3 minutes). Call 7: the wave prediction lost 7-8% at 1300^3, 1400^3 and
# 1250x1250x4000, all from an entry tuned under one wave (1152^3, 3 groups a unit) carried to
# a fuller one. GemmPlan.wave_steps now counts the busiest unit's share of a wave below one
# wave (a throwaway replica over calls 3, 5-7 favoured it; not kept). With that code:
# (a) before (old database, nearest, old padding) against after at call 5's 25 shapes;
# (b) nearest entry of the new database against after, same shapes. 2 rounds each.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
S=1100,1256,1300,1400,1500,1700,2100,2300,2600,3000,3300,5000,6000,2100x2100x512,1300x4000x1300,3000x1000x3000,4200,6144x6144x1024,1777,2999,3777x2222x1999,5555,999x3333x2222,1250x1250x4000,2600x2600x600
mkdir -p $OUT/old $OUT/nearest
timeout 250 python3 -u scripts/choice_probe.py --old-db results/h200/session8/db-before.json --rounds 2 --out $OUT/old --shapes $S \
  2>&1 | grep --line-buffered -v -i "warn\|lambda" | tail -28
timeout 250 python3 -u scripts/choice_probe.py --nearest --rounds 2 --out $OUT/nearest --shapes $S \
  2>&1 | grep --line-buffered -v -i "warn\|lambda" | tail -28
date -u

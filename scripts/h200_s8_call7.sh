# Session 8, call 7 (~2 minutes). What the wave prediction adds over the denser database
# alone: at the 11 shapes of call 5 where it overrode the nearest entry of the new
# database, "before" = that nearest entry (current padding rule), "after" = gemm()'s
# choice; interleaved, 2 rounds. Then the tuner tests on the H200 (residents twice).
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
timeout 250 python3 -u scripts/choice_probe.py --nearest --rounds 2 --out $OUT --shapes \
1300,1400,2100,2600,3000,3000x1000x3000,1777,2999,3777x2222x1999,999x3333x2222,1250x1250x4000 \
  2>&1 | grep --line-buffered -v -i "warn\|lambda" | tail -14
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_tune.py -k "resident or waves or database or nearest" 2>&1 | tail -2
date -u

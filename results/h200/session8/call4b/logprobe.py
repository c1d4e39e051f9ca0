# Session 8, call 4b: the driver's build log with -cl-nv-verbose, twice per program, then in a
# process with CUDA_CACHE_DISABLE=1. Command: source .gpu/activate.sh; python3 logprobe.py;
# CUDA_CACHE_DISABLE=1 python3 logprobe.py (run from the repository root, as scripts/zz_logprobe.py).
# Outcome: the second build of the same program logs nothing unless the cache is off.
import sys, pyopencl as cl
sys.path.insert(0, '.')
from clgemm import build, device, kernels, db
q = device.queue(device.select())
for key, p in (("5", dict(TSM=128, TSN=128, TSK=8, WPTM=16, WPTN=8, WIDTH=4, PAD=1)), ("2", dict(TS=32)),
               ("5", dict(TSM=16, TSN=128, TSK=32, WPTM=4, WPTN=4, WIDTH=4, PAD=1))):
    k = kernels.get(key)
    for i in range(2):
        prg = build.compile_source(q.context, k, k.resolve(p), build.device_options(q.context, k) + ("-cl-nv-verbose",))
        log = prg.get_build_info(q.device, cl.program_build_info.LOG)
        print(f"--- kernel {key} {p} try {i}: {len(log)} chars")
        print(log[:1500])
    print("footprint:", build.footprint(q.context, k, k.resolve(p)))

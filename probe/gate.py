"""Does a gemm() whose operand is written by a copy held back by a user event crash on
this device? One scenario per process: beside (kernel 8, beta 0: scan on a second queue),
inline (kernel 8 with beta 1: scan in line), plain (kernel 5), nogate-beside."""
import sys, time
import numpy as np, pyopencl as cl, pyopencl.array as cla, clgemm
which = sys.argv[1]
ctx = cl.create_some_context(interactive=False); q = cl.CommandQueue(ctx)
rng = np.random.default_rng(1)
m, n, k = 40, 50, 60
a = rng.uniform(-1, 1, (m, k)).astype(np.float32); b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
a[3, 7] = np.inf
da, src, db = cla.to_device(q, np.zeros_like(a)), cla.to_device(q, a), cla.to_device(q, b)
c = cla.to_device(q, np.ones((m, n), np.float32))
P = dict(TSM=64, TSN=64)
q.finish()
gate = cl.UserEvent(ctx) if not which.startswith("nogate") else None
if gate is not None:
    cl.enqueue_copy(q, da.data, src.data, wait_for=[gate])
else:
    cl.enqueue_copy(q, da.data, src.data)
if which.endswith("beside"):
    out = clgemm.gemm(q, da, db, kernel="8", params=P)
elif which == "inline":
    out = clgemm.gemm(q, da, db, c, beta=1.0, kernel="8", params=P)
else:
    out = clgemm.gemm(q, da, db, kernel="5")
print(which, "returned", flush=True)
time.sleep(0.2)
if gate is not None:
    gate.set_status(cl.command_execution_status.COMPLETE)
got = out.get()
print(which, "nan", int(np.isnan(got).sum()), "inf", int(np.isinf(got).sum()), flush=True)

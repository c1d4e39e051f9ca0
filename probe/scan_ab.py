"""Probe: the guard's scan (kernels/scan_special.cl) against its previous version, two
n x n operands, profiling-event spans, interleaved."""
import statistics, numpy as np, pyopencl as cl
dev = [d for p in cl.get_platforms() for d in p.get_devices() if "NVIDIA" in p.name][0]
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
opts = ["-DSMALL_EXP=-51", "-DBIG_EXP=63"]
progs = {"old": cl.Program(ctx, open("probe/scan_old.cl").read()).build(opts),
         "new": cl.Program(ctx, open("kernels/scan_special.cl").read()).build(opts)}
flag = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4)
for n in (2048, 4096, 8192):
    a = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, n * n * 4); b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, n * n * 4)
    cl.enqueue_fill_buffer(q, a, np.float32(0.5), 0, n * n * 4); cl.enqueue_fill_buffer(q, b, np.float32(0.25), 0, n * n * 4)
    ms = {k: [] for k in progs}
    groups = min(2 * n, 8 * dev.max_compute_units)
    for rnd in range(5):
        for k, p in progs.items():
            knl = cl.Kernel(p, "scan")
            knl.set_args(a, np.int32(n), np.int32(n), np.int32(n), b, np.int32(n), np.int32(n), np.int32(n), flag, np.int32(1))
            evs = [cl.enqueue_nd_range_kernel(q, knl, (groups * 256,), (256,)) for _ in range(10)]
            q.finish(); ms[k] += [(e.profile.end - e.profile.start) * 1e-6 for e in evs[1:]]
    print(n, {k: f"{statistics.median(v)*1e3:.1f} us ({2*n*n*4/statistics.median(v)/1e9:.0f} GB/s)" for k, v in ms.items()})

"""cuBLAS FP32 (TF32 off) and device-copy bandwidth through torch, timed with CUDA events
(median of 20 after a warm-up), as a reference for clgemm on the same GPU.

    python3 scripts/cublas_ref.py --sizes 1024,2048,4096,8192,4000 [--kernels]
    python3 scripts/cublas_ref.py --shapes 8174x49x3694,55x5471x5341 --kernels

--kernels also names the kernels cuBLAS launches for each size, with their grid and
block (torch.profiler's trace), which tells its tiles and whether it splits k.
--shapes takes M x N x K products of any shape instead of --sizes' cubes.

Needs torch with CUDA (not a clgemm dependency). `clgemm bench --against cublas` times
cuBLAS the same way beside clgemm's kernels; this is the quick check without OpenCL.
"""
import argparse
import json
import statistics


def bench(fn, repeat=20):
    import torch
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(repeat):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    return statistics.median(ts)


def launched(fn) -> list[dict]:
    """The device kernels one call of fn launches, from torch.profiler's Chrome trace."""
    import os
    import tempfile
    import torch
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    return [{"name": e["name"], "grid": e["args"].get("grid"), "block": e["args"].get("block"),
             "registers": e["args"].get("registers per thread"),
             "shared": e["args"].get("shared memory"), "us": e.get("dur")}
            for e in trace["traceEvents"] if e.get("cat") == "kernel"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--sizes", default="1024,2048,4096,8192,4000", help="M = N = K, comma-separated")
    ap.add_argument("--shapes", default=None, help="MxNxK,... (instead of --sizes)")
    ap.add_argument("--kernels", action="store_true", help="record the kernels each size launches")
    a = ap.parse_args()
    try:
        shapes = ([tuple(int(d) for d in s.split("x")) for s in a.shapes.split(",")] if a.shapes
                  else [(int(s),) * 3 for s in a.sizes.split(",")])
    except ValueError:
        ap.error("--sizes takes N,N,... and --shapes MxNxK,... (whole numbers)")
    if any(len(s) != 3 or min(s) < 1 for s in shapes):
        ap.error("--shapes takes MxNxK,... with each side at least 1" if a.shapes
                 else "--sizes takes N,N,... with each at least 1")
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "gemm": {}}
    for m, n, k in shapes:
        x = torch.rand(m, k, device="cuda") * 2 - 1
        y = torch.rand(k, n, device="cuda") * 2 - 1
        ms = bench(lambda: torch.mm(x, y))
        key = str(m) if m == n == k else f"{m}x{n}x{k}"
        out["gemm"][key] = {"ms": ms, "gflops": 2 * m * n * k / ms / 1e6}
        shown = f"{m}^3" if m == n == k else key
        print(f"cuBLAS FP32 {shown}: {ms:.4f} ms  {2 * m * n * k / ms / 1e6:.0f} GFLOPS")
        if a.kernels:
            out["gemm"][key]["kernels"] = launched(lambda: torch.mm(x, y))
            for kn in out["gemm"][key]["kernels"]:
                print(f"  {kn['name'][:110]}  grid {kn['grid']} block {kn['block']} "
                      f"registers {kn['registers']} shared {kn['shared']}")
    src = torch.rand(256 * 2**20, device="cuda")
    dst = torch.empty_like(src)
    ms = bench(lambda: dst.copy_(src))
    out["copy_gbps"] = 2 * src.numel() * 4 / ms / 1e6
    print(f"device copy: {out['copy_gbps']:.0f} GB/s (read + write)")
    print(json.dumps(out))


if __name__ == "__main__":
    main()

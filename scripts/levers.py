"""Measure candidate performance levers (issue 6) on a registered GEMM kernel: source
edits and build options applied to it, compiled side by side, verified against float64
(NaN-poisoned output) and timed interleaved with profiling events.

    python3 scripts/levers.py --sizes 4096,8192 --rounds 3 --out levers.json

A variant is LABEL = KERNEL : PARAMS : EDITS : OPTIONS, e.g.
    "k5-128 rreg128 = 5 : TSM=128,TSN=128,TSK=8,WPTM=8,WPTN=8 : : -cl-nv-maxrregcount=128"
EDITS (comma-separated) are the named source edits below. A lever that wins moves into
the kernel and the registry; this script only measures.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pyopencl as cl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from clgemm import build, device, kernels, operands, timing, verify  # noqa: E402

# Source edits. (The first lever measured with this script, the load bounds checks removed,
# is now the -DEXACT build option; it is only correct when the tiles divide M, N and K, so
# variants with it are measured only at such shapes.)
EDITS = {
    # Work-groups launched one after another cover GROUP_M rows of tiles before moving
    # along N, so the A and B panels they share stay in L2 (a "rasterised" launch order).
    "swizzle": [(r"const int m0 = get_group_id\(1\) \* TSM;\n\s*const int n0 = get_group_id\(0\) \* TSN;",
                 """const int gn = get_num_groups(0), gm = get_num_groups(1);
    const int pid = get_group_id(1) * gn + get_group_id(0);
    const int band = pid / (GROUP_M * gn), first = band * GROUP_M;
    const int rows_in_band = min(gm - first, GROUP_M);
    const int m0 = (first + (pid % (GROUP_M * gn)) % rows_in_band) * TSM;
    const int n0 = ((pid % (GROUP_M * gn)) / rows_in_band) * TSN;""")],
}

DEFAULT_VARIANTS = [
    "k5 = 5 : : :",
    "k5 rreg128 = 5 : : : -cl-nv-maxrregcount=128",
    "k5 exact = 5 : : : -DEXACT",
    "k5 swizzle8 = 5 : : swizzle : -DGROUP_M=8",
    "k5-128 = 5 : TSM=128,TSN=128,TSK=8,WPTM=8,WPTN=8 : :",
    "k5-128 rreg128 = 5 : TSM=128,TSN=128,TSK=8,WPTM=8,WPTN=8 : : -cl-nv-maxrregcount=128",
    "k5-128 exact = 5 : TSM=128,TSN=128,TSK=8,WPTM=8,WPTN=8 : : -DEXACT",
    "k5-128 exact rreg128 = 5 : TSM=128,TSN=128,TSK=8,WPTM=8,WPTN=8 : : -DEXACT -cl-nv-maxrregcount=128",
    "k5-128 swizzle8 = 5 : TSM=128,TSN=128,TSK=8,WPTM=8,WPTN=8 : swizzle : -DGROUP_M=8",
    "k5-128x16 rreg128 = 5 : TSM=128,TSN=128,TSK=16,WPTM=8,WPTN=8 : : -cl-nv-maxrregcount=128",
    "k4-tuned = 4 : TSM=64,TSN=128,TSK=16,WPTM=8,WPTN=8,PAD=1 : :",
    "k5 k4-tuned = 5 : TSM=64,TSN=128,TSK=16,WPTM=8,WPTN=8,PAD=1 : :",
    "k5 k4-tuned rreg128 = 5 : TSM=64,TSN=128,TSK=16,WPTM=8,WPTN=8,PAD=1 : : -cl-nv-maxrregcount=128",
    "k6 = 6 : : :",
]


class Variant:
    def __init__(self, spec: str, ctx: cl.Context):
        label, rest = spec.split("=", 1)
        key, params, edits, opts = (s.strip() for s in rest.split(":"))
        self.label, self.kernel = label.strip(), kernels.get(key)
        self.params = self.kernel.resolve(dict(p.split("=") for p in params.split(",") if p))
        self.edits = [e for e in edits.split(",") if e]
        self.opts = tuple(opts.split())
        self.exact = "-DEXACT" in self.opts
        src = (build.kernel_dir() / self.kernel.source).read_text()
        if self.kernel.key == "6":   # kernel 6 includes kernel 5: edit that text in place
            inc = '#include "5_double_buffered.cl"'
            src = src.replace(inc, (build.kernel_dir() / "5_double_buffered.cl").read_text())
        for e in self.edits:
            for pat, rep in EDITS[e]:
                src, n = re.subn(pat, rep, src)
                if n == 0:
                    raise ValueError(f"edit {e!r} does not apply to {self.kernel.source}")
        dev = ctx.devices[0]
        nv = "NVIDIA" in dev.platform.name
        self.opts = tuple(o for o in self.opts if nv or not o.startswith("-cl-nv"))
        extra = build.device_options(ctx, self.kernel) + self.opts + (("-cl-nv-verbose",) if nv else ())
        t0 = time.perf_counter()
        prg = cl.Program(ctx, src).build(options=build.options(self.params, extra))
        self.compile_s = time.perf_counter() - t0
        log = prg.get_build_info(dev, cl.program_build_info.LOG)
        regs = re.findall(r"Used (\d+) registers", log)
        spills = re.findall(r"(\d+) bytes spill stores", log)
        self.regs = int(regs[-1]) if regs else None
        self.spills = int(spills[-1]) if spills else None
        self.knl = cl.Kernel(prg, "gemm")
        self.local = self.kernel.geometry.local_size(self.params)
        self.align = self.kernel.geometry.vector(self.params)
        self.ms: dict[int, list[float]] = {}
        self.errors: dict[str, float] = {}

    def launch(self, q, a, b, c):
        g = self.kernel.geometry.global_size(self.params, a.rows, b.cols)
        return self.knl(q, g, self.local, np.int32(a.rows), np.int32(b.cols), np.int32(a.cols),
                        np.float32(1.0), a.buf, np.int32(a.ld), b.buf, np.int32(b.ld),
                        np.float32(0.0), c.buf, np.int32(c.ld))


def check(q, v: Variant, m: int, n: int, k: int, rng) -> float:
    """Relative error on fresh data, output poisoned first; sampled rows at large sizes."""
    a, b = verify.random_matrix(rng, m, k), verify.random_matrix(rng, k, n)
    am, bm = operands.raw(q, a, v.align), operands.raw(q, b, v.align)
    cm = operands.poison(q, operands.empty(q, m, n, operands.rounded(n, v.align)))
    v.launch(q, am, bm, cm).wait()
    rows = verify.sample_rows(rng, m, 16)
    return verify.rel_error(operands.rows_to_host(q, cm, rows), verify.reference(a[rows], b))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--variant", action="append", default=None)
    ap.add_argument("--out", default="levers.json")
    a = ap.parse_args()
    q = device.queue(device.select())
    rng = np.random.default_rng()
    variants = []
    for spec in a.variant or DEFAULT_VARIANTS:
        try:
            variants.append(Variant(spec, q.context))
        except Exception as e:  # noqa: BLE001 - a lever that does not build is a result too
            print(f"{spec}: build failed: {str(e)[-300:]}", flush=True)
    sizes = [int(s) for s in a.sizes.split(",")]
    for v in variants:
        if not v.exact:
            v.errors["odd 133x261x67"] = check(q, v, 133, 261, 67, rng)
        for s in sizes:
            if not v.exact or v.kernel.divides(v.params, s, s, s):
                v.errors[f"{s}^3"] = check(q, v, s, s, s, rng)
    for s in sizes:
        rng_s = np.random.default_rng(s)
        host_a, host_b = verify.random_matrix(rng_s, s, s), verify.random_matrix(rng_s, s, s)
        mats = {}
        for _ in range(a.rounds):           # interleaved: every variant once per round
            for v in variants:
                if v.exact and not v.kernel.divides(v.params, s, s, s):
                    continue
                if v.align not in mats:
                    mats[v.align] = (operands.raw(q, host_a, v.align), operands.raw(q, host_b, v.align),
                                     operands.empty(q, s, s, operands.rounded(s, v.align)))
                am, bm, cm = mats[v.align]
                t = timing.profile(lambda: v.launch(q, am, bm, cm), repeat=a.repeat, warmup=1)
                v.ms.setdefault(s, []).extend(t.ms)
    rows = []
    for v in variants:
        ok = all(e <= verify.tolerance(int(k.split("^")[0]) if "^" in k else 67)
                 for k, e in v.errors.items())
        row = {"label": v.label, "kernel": v.kernel.key, "params": v.params, "edits": v.edits,
               "options": list(v.opts), "registers": v.regs, "spill_bytes": v.spills,
               "compile_s": round(v.compile_s, 2), "errors": v.errors, "verified": ok,
               "gflops": {s: timing.gflops(s, s, s, statistics.median(ms)) for s, ms in v.ms.items()},
               "ms_median": {s: statistics.median(ms) for s, ms in v.ms.items()}}
        rows.append(row)
    doc = {"device": device.describe(q.device), "date": time.strftime("%Y-%m-%d %H:%M"),
           "command": " ".join(sys.argv),
           "method": f"profiling-event median of {a.rounds} interleaved rounds x {a.repeat} "
                     "launches, each round after a warm-up launch; fresh uniform[-1,1) data",
           "variants": rows}
    Path(a.out).write_text(json.dumps(doc, indent=1))
    print(f"{'variant':34s} {'regs':>4s} {'spill':>5s} ok  " + " ".join(f"{s:>8d}" for s in sizes))
    for r in rows:
        print(f"{r['label']:34s} {r['registers'] or '-':>4} {r['spill_bytes'] if r['spill_bytes'] is not None else '-':>5} "
              f"{'y' if r['verified'] else 'N'}   " +
              " ".join(f"{r['gflops'].get(s, float('nan')):8.0f}" for s in sizes))


if __name__ == "__main__":
    main()

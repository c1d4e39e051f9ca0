"""Products with one row or one column of C (m = 1 or n = 1) as matrix-vector products
(kernels/matvec.cl): the matrix is read once, where it lies, in either order, and no
operand is copied. gemm() and Plan take this path where heuristics.matvec says so and no
kernel, parameters or split count is named; `prepare` lays such a product out as the
launches a Plan binds, as clgemm.layout.prepare does for the GEMM kernels. The two forms'
parameters are the registry's (kernels.MATVEC), or the tuning database's entry nearest
the product's form and shape, with the slices of the depth its tune timed best
(`base_params`): `clgemm tune --kernel matvec-sweep --m 1 ...`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from . import build, db, entries, heuristics, kernels, operands
from .thresholds import Facts
from .layout import Prepared, as_view
from .operands import Matrix, View

FORMS = {"sweep": "matvec-sweep", "dot": "matvec-dot"}    # form -> registry key


def form_of(key: str) -> str:
    """The form a matrix-vector registry key runs: "sweep" or "dot"."""
    return next(f for f, k in FORMS.items() if k == key)


def form(m: int, transposed: bool) -> str:
    """"sweep" when the vector runs down the matrix's rows in memory, "dot" when along them:
    for m = 1 the matrix is op(B) (K x N), for n = 1 op(A) (M x K), lying `transposed` or not."""
    return ("sweep" if m == 1 else "dot") if not transposed else ("dot" if m == 1 else "sweep")


@dataclass(frozen=True)
class Launch:
    """One matrix-vector launch over R rows of L floats: its build's parameters, grid and
    work-group, and slices of its depth (rows swept, or whole vectors along a row)."""
    params: dict
    global_size: tuple[int, int, int]
    local_size: tuple[int, int, int]
    slices: int
    depth: int


def canonical(kind: str, R: int, L: int) -> tuple[int, int, int]:
    """The (m, n, k) that runs a form over R rows of L floats with row-major operands: the
    shape its tune measures and its database entries are found by."""
    return (1, L, R) if kind == "sweep" else (R, 1, L)


def check_form(key: str, m: int, n: int) -> None:
    """A tune or run of a matrix-vector kernel names its form and has row-major operands,
    which take the sweep where m = 1 (n = 1 too) and the dot where n = 1 and m > 1."""
    sweep = key == FORMS["sweep"]
    if m != 1 if sweep else (n != 1 or m == 1):
        where = "m = 1" if sweep else "n = 1 and m > 1 (m = 1 takes the sweep)"
        raise ValueError(f"kernel {key} runs the vector {'down' if sweep else 'along'} the "
                         f"matrix's rows, which row-major operands (as `clgemm tune` and "
                         f"`clgemm run` give it) take where {where}, not at m = {m}, n = {n}")


def tuning_job(opa, opb) -> tuple[str, tuple[int, int, int]]:
    """(registry key, canonical shape) that tunes the form op(A) @ op(B) takes (m or n is
    1; operands as `prepare` takes them, host or device arrays or Views), from the order its
    matrix lies in: what `clgemm tune --recorded` tunes for it (Plan records it)."""
    m = opa.shape[0]
    x = opb if m == 1 else opa
    if isinstance(x, View):
        transposed = x.transposed
    else:                     # strides of op(X): rows closer together than columns
        transposed = min(x.shape) > 1 and abs(x.strides[0]) < abs(x.strides[1])
    kind = form(m, transposed)
    R, L = x.shape[::-1] if transposed else x.shape
    if kind == "dot" and m == 1 == opb.shape[1]:   # one dot product: the dot over one row
        kind, R, L = "sweep", L, R      # is tuned nowhere (row-major 1 x 1 takes the sweep)
    return FORMS[kind], canonical(kind, R, L)


@dataclass(frozen=True)
class Base:
    """What a product of one form starts from: its parameters, where they came from
    ("tuned", "defaults", "+given" where some were named), and for a tuned entry its
    canonical shape and the slices of the depth its tune measured best (None: none timed)."""
    params: dict
    source: str = "defaults"
    at: tuple[int, int, int] | None = None
    splits: int | None = None
    tuned_on: str | None = None     # another device's entry, of this architecture (db)


def base_params(dev: cl.Device, kind: str, R: int, L: int) -> Base:
    """The database's entry for this form nearest its canonical shape (entries beyond this
    device's limits passed over), else the registry defaults."""
    kern = kernels.get(FORMS[kind], "matvec")
    def usable(key: str, entry: dict) -> bool:
        bad = kern.violations(entry["params"], dev)
        if bad:                     # passed over as a GEMM kernel's is (choice._fits)
            entries.passed_over(key, entry, "; ".join(bad))
        return not bad
    found = db.near(dev, kern.key, *canonical(kind, R, L), usable=usable)
    if not found:
        return Base(kern.defaults)
    e = found[0][1]
    return Base(dict(e["params"]), "tuned", e["shape"], e.get("splits"), e.get("tuned_on"))


def _grid(kind: str, R: int, L: int, vw: int, base: Mapping[str, int],
          limit: int) -> tuple[dict, int, int, int]:
    """(parameters fitted to the rows, work-groups a slice, their width, depth): rows
    narrower than a group's span (CV vectors, or LW work-items) take fewer lanes across
    them and more down them (or more rows a group), so that no lane idles for want of a
    column (1000000 x 1 x 8 ran 2x slower than kernel 5 on pocl with 32 work-items a row of
    2 vectors); work-groups of at most `limit` work-items. The depth is rows swept, or
    whole vectors along a row."""
    p = dict(base)
    across, down = ("CV", "LANES") if kind == "sweep" else ("LW", "RW")
    width = -(-L // vw) if kind == "sweep" else L // vw          # vectors across a row
    fit = min(p[across], 1 << max(0, width - 1).bit_length())   # a power of two >= width
    p[down] = max(1, min(p[down] * p[across] // fit, limit // fit))
    p[across] = fit
    if kind == "sweep":
        return p, -(-width // fit), fit, R
    return p, -(-R // p["RW"]), fit, width


def launch_shape(kind: str, R: int, L: int, vw: int, f: Facts, limit: int, base: Base,
                 slices: int | None = None) -> Launch:
    """The launch over R rows of L floats (vw floats a vector) from `base`: its fitted
    parameters, grid and slices of the depth, which are `slices` where given (the tuner's
    split stage), else heuristics.matvec_slices, from the tuned entry's count where it has
    one; each slice at least one row or vector deep."""
    p, groups, fit, depth = _grid(kind, R, L, vw, base.params, limit)
    if slices is None:
        slices = heuristics.matvec_slices(groups, depth, f, _tuned(kind, f, limit, base))
    s = max(1, min(slices, depth))
    if kind == "sweep":
        return Launch(p, (groups * fit, p["LANES"], s), (fit, p["LANES"], 1), s, depth)
    return Launch(p, (fit, groups * p["RW"], s), (fit, p["RW"], 1), s, depth)


def _tuned(kind: str, f: Facts, limit: int, base: Base) -> tuple[int, int, int] | None:
    """(work-groups a slice, depth, slices) of the tuned entry's launch at its own shape,
    where its tune timed slice counts."""
    if base.splits is None or base.at is None:
        return None
    m, n, k = base.at
    R, L = (k, n) if kind == "sweep" else (m, k)
    _, groups, _, depth = _grid(kind, R, L, 4 if L % 4 == 0 else 1, base.params, limit)
    return groups, depth, base.splits


def rows(shape: tuple[int, int, int]) -> dict[str, tuple[int, int]]:
    """(R, L) of each form a product can take: m = 1 sweeps B (K x N) or dots B stored
    N x K; n = 1 dots A (M x K) or sweeps A stored K x M. Row-major operands take the first."""
    m, n, k = shape
    return {"sweep": (k, n), "dot": (n, k)} if m == 1 else {"dot": (m, k), "sweep": (k, m)}


def named(kernel: object) -> str | None:
    """The registry key of a matrix-vector kernel asked for by name (gemm(kernel=...)), or
    None for anything else."""
    key = None if kernel is None else str(kernel).strip()
    return key if key in kernels.MATVEC else None


def bases(dev: cl.Device, shape: tuple[int, int, int], key: str | None = None,
          params: Mapping[str, object] | None = None) -> dict[str, Base]:
    """`base_params` of each form a product of this shape can take (which one, the orders
    of its operands decide), so that a Plan fixes its parameters when it is made; with a
    kernel named (`key`), its form's only, `params` over them (checked against the
    registry and the device: ValueError naming what is wrong). Parameters nobody named
    are fitted to the device's work-group limit by `launch_shape`, as gemm()'s own are."""
    m, n, k = shape
    if key is not None and 1 not in (m, n):
        raise ValueError(f"kernel {key} multiplies a matrix by a vector: it needs m = 1 or "
                         f"n = 1, not {m}x{n}x{k}")
    both = rows(shape)
    if key is None:
        return {kind: base_params(dev, kind, R, L) for kind, (R, L) in both.items()}
    kind, kern = form_of(key), kernels.get(key, "matvec")
    base = base_params(dev, kind, *both[kind])
    if params is not None:         # what was asked must run as asked; the rest is fitted
        base = Base(kern.resolve(params, base.params), base.source + "+given", base.at,
                    base.splits, base.tuned_on)
        kern.check(base.params, dev)
    return {kind: base}


def planned(dev: cl.Device, shape: tuple[int, int, int], f: Facts,
            bases_: Mapping[str, Base], slices: int | None = None) -> tuple[Launch, dict]:
    """The launch a product of row-major operands takes from its form's base (of `bases`;
    a named kernel's form where there is one), in `slices` where given, and Plan.describe's
    account of it."""
    m, n, k = shape
    kind = ("sweep" if m == 1 else "dot") if len(bases_) > 1 else next(iter(bases_))
    (R, L), base = rows(shape)[kind], bases_[kind]
    mv = launch_shape(kind, R, L, 4 if L % 4 == 0 else 1, f, dev.max_work_group_size, base,
                      slices)
    tuned = base.at is not None
    return mv, {"kernel": FORMS[kind], "params": dict(mv.params), "params_source": base.source,
                "tuned_at": db.shape_key(*base.at) if tuned else None,
                "tuned_kernel": FORMS[kind] if tuned else None, "tuned_on": base.tuned_on,
                "splits": mv.slices,
                "padded": False, "floats": False, "tail": None, "a_kmajor": False, "guarded": False}


def _stride(x: Matrix) -> int:
    """Floats between consecutive elements of a one-row or one-column matrix."""
    return 1 if x.rows == 1 else x.ld


def prepare(queue: cl.CommandQueue, opa, opb, c, alpha: float, beta: float, f: Facts,
            allocator: Callable[[int], object] | None = None,
            bases: Mapping[str, Base] | None = None, slices: int | None = None) -> Prepared:
    """op(A) @ op(B) (m or n is 1) into c, or into a new m x n matrix (Prepared.out) where
    c is None, as one bound launch of the matrix-vector kernel (where its depth is sliced,
    the last work-group of each group of outputs adds the slices). Operands are device
    Arrays or Views of them (Plan uploads host ones). `bases` gives forms what they start
    from ({"sweep": Base, "dot": Base}: a Plan's, the tuner's); a form it leaves out takes
    `base_params`. `slices` (the tuner's split stage) overrides the slices of the depth."""
    align = operands.base_align(queue.device)
    opa, opb, c = (as_view(v, port, align) for port, v in enumerate((opa, opb, c)))
    m, n = opa.shape[0], opb.shape[1]
    vec, mat = (opa, opb) if m == 1 else (opb, opa)
    kind = form(m, mat.transposed)
    X, v = mat.mem, vec.mem
    operands.check_depth(X.rows if kind == "sweep" else X.cols)    # the form's k
    if bases is not None and len(bases) == 1 and kind not in bases:
        raise ValueError(f"kernel {FORMS[next(iter(bases))]} was named, but these operands "
                         f"take {FORMS[kind]}: the vector runs {'down' if kind == 'sweep' else 'along'} "
                         f"the rows of the matrix as it lies in memory")
    operands.check_fits(queue.device, [(m, n)])
    if c is None:
        y = out = operands.empty(queue, m, n, n, allocator)
    else:
        y, out = c.mem, None
    c_read = c is not None and beta != 0.0
    main, s, params = bound(queue, kind, X, v, y, alpha, beta if c_read else 0.0, f,
                            allocator, (bases or {}).get(kind), slices)
    steps, scalars = [main], [(main, 2, "alpha"), (main, 9, "beta")]
    offsets = [(main, 4, mat.port, 1), (main, 7, vec.port, 1), (main, 11, 2, 1)]
    # an offset is set per call only where the layout found one (its key has the class)
    offsets = [o for o, x in zip(offsets, (X, v, y)) if x.offset]
    return Prepared(steps, out if out is not None else y, False, s, scalars=scalars,
                    c_read=c_read, offsets=offsets, params=params)


def bound(queue: cl.CommandQueue, kind: str, X: Matrix, v: Matrix, y: Matrix, alpha: float,
          beta: float, f: Facts, allocator: Callable[[int], object] | None = None,
          base: Base | None = None, slices: int | None = None) -> tuple[build.Bound, int, dict]:
    """(the bound launch, its slices of the depth, its parameters) of one form over X (R
    rows of L floats) and the vector v (a one-row or one-column matrix) into y (likewise),
    all where they lie: prepare's launch, and a peeled product's one row or column of C
    (layout._Layout.peeled). beta == 0 never reads y. `base` as prepare's `bases` give it
    (else base_params), `slices` as its tuner's split stage asks."""
    R, L = X.rows, X.cols
    vw = 4 if X.ld % 4 == 0 and X.offset % 4 == 0 else 1
    incv = _stride(v)
    contig = kind == "dot" and vw == 4 and incv == 1 and v.offset % 4 == 0
    outputs = L if kind == "sweep" else R
    base = base or base_params(queue.device, kind, R, L)
    shape = launch_shape(kind, R, L, vw, f, queue.device.max_work_group_size, base, slices)
    s = shape.slices
    if s == 1:    # the one-slice build reads neither (and y's buffer would be set each call)
        work = counts = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 4)
    else:
        operands.check_fits(queue.device, [(s, outputs)])
        # the slices' rows, and the counts by which each group of outputs' last work-group
        # finds itself (kernels/matvec.cl, last_of_slices), zero between launches: a buffer
        # of this layout's own, which no pool can hand to anyone else
        work = operands.empty(queue, s, outputs, outputs, allocator).buf
        d = 0 if kind == "sweep" else 1          # the grid's dimension along the outputs
        groups = shape.global_size[d] // shape.local_size[d]
        counts = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 4 * groups)
        cl.enqueue_fill_buffer(queue, counts, np.int32(0), 0, 4 * groups)
    prg = build.program(queue.context, kernels.get(FORMS[kind], "matvec"),
                        {**shape.params, "VW": vw, **({"VCONTIG": 1} if contig else {}),
                         **({"SLICED": 1} if s > 1 else {})})
    i32 = np.int32
    main = build.bind(queue, prg, "matvec_" + kind, shape.global_size, shape.local_size,
                      (i32(R), i32(L), np.float32(alpha), X.buf, i32(X.offset), i32(X.ld),
                       v.buf, i32(v.offset), i32(incv), np.float32(beta),
                       y.buf, i32(y.offset), i32(_stride(y)), work, counts))
    return main, s, dict(shape.params)

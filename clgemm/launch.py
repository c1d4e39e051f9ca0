"""A kernel configuration checked, compiled and bound (GemmPlan), and a product's operands
laid out for it as a list of launches (prepare). The decisions a layout takes (padding,
split-K, K-major A, which tuned entry) are clgemm.heuristics'; this module carries them out."""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from . import build, db, heuristics, kernels, operands, timing
from . import guard as guards
from . import device as devmod
from .operands import Matrix, View, is_transposed, rounded
from .transpose import TransposePlan

TRANSPOSED_BY = ("auto", "transpose", "kernel")
_LOADS_OPTION = {"exact": "-DEXACT", "clamp": "-DCLAMP"}   # heuristics.loads -> build option
PAD = ("auto", "yes", "no")


def facts(dev: cl.Device) -> heuristics.Facts:
    """The device's facts for the heuristics, with its database's thresholds; kept per
    database state, since gemm()'s uncached path asks for every new shape."""
    key = (dev.int_ptr, db.version(dev))
    found = _facts.get(key)
    if found is None:
        if len(_facts) > 64:
            _facts.clear()
        found = _facts[key] = heuristics.facts(dev, db.thresholds(dev))
    return found


_facts: dict[tuple, heuristics.Facts] = {}


def tuned_entry(queue: cl.CommandQueue, kernel: str | None,
                shape: tuple[int, int, int]) -> tuple[str, dict] | None:
    """(kernel, entry) of the tuning database to launch at `shape` (heuristics.choose_entry),
    kept per database state: choosing plans every near entry."""
    dev = queue.device
    key = (db.stamp(dev), dev.int_ptr, kernel, tuple(shape))
    if key in _chosen:
        return _chosen[key]
    # a kernel's own entries and, on a tie or where it has none as near, those of kernels
    # whose parameters mean the same (siblings); without a kernel, every kernel's but the
    # ones taken only by name (opt_in)
    keys = None if kernel is None else [kernel, *kernels.get(kernel).siblings]
    every = db.near(dev, keys, *shape, within=float("inf"),
                    usable=lambda k, e: (kernel is not None or not kernels.get(k).opt_in)
                    and _fits(dev, kernel or k, k, e))
    if kernel is None:     # where several kernels were tuned at one shape, the fastest speaks
        best: dict[tuple, tuple[str, dict]] = {}
        for ke in every:
            seen = best.get(ke[1]["shape"])
            if seen is None or ke[1]["gflops"] > seen[1]["gflops"]:
                best[ke[1]["shape"]] = ke
        every = [ke for ke in every if best[ke[1]["shape"]] is ke]
    choice = heuristics.choose_entry(every, kernel, shape, facts(dev))
    if len(_chosen) > 4096:
        _chosen.clear()
    _chosen[key] = choice
    return choice


_chosen: dict[tuple, tuple[str, dict] | None] = {}


def _fits(dev: cl.Device, kernel: str, key: str, entry: dict) -> bool:
    """Whether an entry's parameters (tuned for kernel `key`) can launch `kernel` here: a
    hand-edited or foreign entry beyond the device's limits is passed over with a warning;
    a sibling's entry that breaks this kernel's own constraints, silently."""
    bad = kernels.get(kernel).violations(entry["params"], dev)
    if bad and key == kernel:
        warnings.warn(f"tuning database entry of kernel {key} at {db.shape_key(*entry['shape'])} "
                      f"skipped: {'; '.join(bad)}", db.DataWarning, stacklevel=2)
    return not bad


class Workspace:
    """Split-K's buffer of partial sums, grown on demand. Plans that launch on one in-order
    queue may share one, since their launches never overlap (the tuner's split stage holds
    dozens of plans at once)."""

    def __init__(self, context: cl.Context, allocator: Callable[[int], object] | None = None):
        self.context, self.buf, self.allocator = context, None, allocator

    def get(self, floats: int):
        if self.buf is None or self.buf.size < 4 * floats:
            self.buf = (self.allocator(4 * floats) if self.allocator
                        else cl.Buffer(self.context, cl.mem_flags.READ_WRITE, 4 * floats))
        return self.buf


class GemmPlan:
    """A GEMM kernel with its parameters, checked against the device and compiled: the
    one object that gemm(), `clgemm run`, the tuner and the benchmark launch."""

    def __init__(self, queue: cl.CommandQueue, kernel: object = None,
                 params: Mapping[str, object] | None = None,
                 shape: tuple[int, int, int] | None = None, transposed_by: str = "auto",
                 pad: str = "auto", split_k: int | str = "auto",
                 workspace: Workspace | None = None):
        """Parameters start from the tuning database's entry chosen for `shape` (when given
        and this device was tuned), else the registry defaults; `params` overrides either.
        Without a kernel, the database's choice is taken. `transposed_by` says how an
        operand stored transposed is treated: "transpose" copies it row-major first,
        "kernel" has a kernel that can (5 and 6) read it as it lies, "auto" reads the left
        one as it lies and transposes the right one (faster each way on the H200), and may
        turn a row-major A K-major (heuristics.kmajor_a). `pad`: "auto" (heuristics.pads),
        "yes", "no". `split_k`: a count of slices of k, or "auto" (heuristics.splits);
        `workspace` holds their partial sums. Programs are built on first use."""
        operands.check_queue(queue)
        if transposed_by not in TRANSPOSED_BY:
            raise ValueError(f"transposed_by must be one of {', '.join(TRANSPOSED_BY)}, "
                             f"not {transposed_by!r}")
        if pad not in PAD:
            raise ValueError(f"pad must be one of {', '.join(PAD)}, not {pad!r}")
        if split_k != "auto" and (isinstance(split_k, (bool, np.bool_))
                                  or not isinstance(split_k, numbers.Integral) or split_k < 1):
            raise ValueError(f"split_k must be \"auto\" or an integer >= 1, not {split_k!r}")
        if shape is not None and not (
                len(shape) == 3 and all(isinstance(d, numbers.Integral) and not isinstance(d, bool)
                                        and d >= 1 for d in shape)):
            raise ValueError(f"shape must be (m, n, k), three integers >= 1, not {shape!r}")
        self.pad, self.split_k = pad, (split_k if split_k == "auto" else int(split_k))
        self.queue = queue
        self.facts = facts(queue.device)
        tuned = tuned_entry(queue, None if kernel is None else str(kernel), shape) \
            if shape is not None else None
        key = kernel if kernel is not None else (tuned[0] if tuned else kernels.DEFAULT_GEMM)
        self.kernel = kernels.get(key)
        self.tuned_at: str | None = None     # the shape whose tuned entry gave the parameters
        self.tuned_kernel: str | None = None  # and the kernel it was tuned for (siblings)
        # (shape, slices of k) the tuner measured best for these parameters
        self.tuned_split: tuple[tuple[int, int, int], int] | None = None
        # work-groups of these parameters resident a compute unit ({"checked", "exact"}
        # builds), as the tuner recorded them: what tail_split needs
        self.resident: Mapping[str, int] | None = None
        if tuned is not None:
            base, self.source = tuned[1]["params"], "tuned"
            self.tuned_at, self.tuned_kernel = db.shape_key(*tuned[1]["shape"]), tuned[0]
            self.tuned_split = heuristics.entry_split(tuned[1])
            self.resident = tuned[1].get("resident")
        else:
            base, self.source = self.kernel.defaults_for(queue.device), "defaults"
        self.params = self.kernel.resolve(params, base=base)
        if params and set(params) >= set(self.params):   # nothing of the base is left
            self.source, self.tuned_at, self.tuned_kernel = "given", None, None
        elif params:
            self.source += "+given"
        if self.params != base:              # measured for the entry's parameters only
            self.tuned_split = self.resident = None
        self.kernel.check(self.params, queue.device)
        if transposed_by == "kernel" and not self.kernel.layouts:
            raise ValueError(f"kernel {self.kernel.key} ({self.kernel.name}) cannot read transposed "
                             f"operands as they lie (kernels 5 and 6 can); use "
                             f"transposed_by=\"transpose\" (clgemm run: --transposed-by "
                             f"transpose)")
        self.transposed_by = transposed_by
        # whether the kernel reads its left (A) and right (B) operand as it lies
        self.reads = ((transposed_by != "transpose" and self.kernel.layouts),
                      transposed_by == "kernel")
        self._programs: dict[tuple, cl.Program] = {}
        if workspace is not None and not isinstance(workspace, Workspace):
            raise TypeError(f"workspace must be a clgemm.gemm.Workspace, not "
                            f"{type(workspace).__name__}")
        if workspace is not None and workspace.context != queue.context:
            raise ValueError("workspace belongs to another OpenCL context than the queue")
        self._work = workspace or Workspace(queue.context)
        self.local = self.kernel.geometry.local_size(self.params)
        self.align = self.kernel.geometry.vector(self.params)

    # the decisions, for this configuration (clgemm.heuristics)
    def loads(self, m: int, n: int, k: int) -> str:
        return heuristics.loads(self.kernel, self.params, (m, n, k))

    def pads(self, m: int, n: int, k: int) -> bool:
        return heuristics.pads(self.kernel, self.params, (m, n, k), self.facts, self.pad)

    def launched(self, m: int, n: int, k: int) -> tuple[int, int, int]:
        return heuristics.launched(self.kernel, self.params, (m, n, k), self.facts, self.pad)

    def tiles(self, m: int, n: int, k: int) -> tuple[int, int]:
        return heuristics.tiles(self.kernel, self.params, (m, n, k))

    def splits(self, m: int, n: int, k: int, asked: int | str | None = None) -> int:
        return heuristics.splits(self.kernel, self.params, (m, n, k), self.facts,
                                 self.split_k if asked is None else asked, self.tuned_split,
                                 self.pad)

    def tail(self, m: int, n: int, k: int) -> tuple[int, int] | None:
        """(tail_from, slices) of heuristics.tail_split, or None: never with split-K."""
        if self.resident is None or self.splits(m, n, k) > 1:
            return None
        r = self.resident["checked" if self.loads(m, n, k) == "checked" else "exact"]
        return heuristics.tail_split(self.kernel, self.params, (m, n, k), self.facts, r)

    def kmajor_a(self, m: int, n: int, k: int) -> bool:
        return heuristics.kmajor_a(self.kernel, (m, n, k), self.facts, self.transposed_by)

    def wave_steps(self, m: int, n: int, k: int, residents: Mapping[str, int]) -> int:
        return heuristics.wave_steps(self.kernel, self.params, (m, n, k), self.facts,
                                     residents, self.tuned_split)

    def workspace_fits(self, slices: int, m: int, n: int) -> bool:
        return heuristics.workspace_fits(slices, m, n, self.align, self.facts)

    def residents(self) -> dict[str, int] | None:
        """Work-groups of this configuration resident per compute unit, for the build with
        bounds checks and the EXACT one; None where the device does not say (see
        build.footprint). The tuner records it with its winner."""
        def resident(extra: tuple[str, ...]) -> int | None:
            fp = build.footprint(self.queue.context, self.kernel, self.params, extra)
            return fp and devmod.resident_groups(self.queue.device, int(np.prod(self.local)), *fp)

        checked = resident(())
        exact = resident(("-DEXACT",)) if checked and self.kernel.exact else checked
        return {"checked": checked, "exact": exact} if checked and exact else None

    def workspace(self, floats: int):
        """The split-K partial sums' buffer, kept for the next launch."""
        return self._work.get(floats)

    def compiled(self, m: int, n: int, k: int, a_kmajor: bool = False,
                 b_nmajor: bool = False, split_k: int | str | None = None,
                 c_unaligned: bool = False, guard: int = 0) -> cl.Program:
        """The program for a launch at (m, n, k) with these operand layouts, built on first
        use: one build per variant (EXACT; CLAMP: k in whole tiles, m or n not; A_KMAJOR,
        B_NMAJOR, SPLIT_K, C_UNALIGNED: C's leading dimension is not a multiple of the
        vector width; TAIL: tail_split's launch; GUARD=1 or 2 for
        clgemm.guard), since each drops or adds code that costs registers in the others."""
        loads = self.loads(m, n, k)
        split = self.splits(m, n, k, split_k) > 1
        spread = not split and self.tail(m, n, k) is not None
        key = ((loads, a_kmajor, b_nmajor, split, c_unaligned) + (("tail",) if spread else ())
               + ((guard,) if guard else ()))
        if key not in self._programs:
            if (a_kmajor or b_nmajor) and not self.kernel.layouts:
                raise ValueError(f"kernel {self.kernel.key} ({self.kernel.name}) reads row-major "
                                 f"operands only")
            opts = [_LOADS_OPTION[loads]] if loads != "checked" else []
            opts += [o for o, on in zip(("-DA_KMAJOR", "-DB_NMAJOR", "-DSPLIT_K",
                                         "-DC_UNALIGNED"), key[1:5]) if on]
            opts += ["-DTAIL"] if spread else []
            opts += [f"-DGUARD={guard}"] if guard else []
            self._programs[key] = build.program(self.queue.context, self.kernel, self.params,
                                                tuple(opts))
        return self._programs[key]

    def bound(self, a: Matrix, b: Matrix, c: Matrix, alpha: float = 1.0, beta: float = 0.0,
              a_kmajor: bool = False, b_nmajor: bool = False,
              split_k: int | str | None = None,
              guard: tuple[int, object] | None = None) -> tuple[list[build.Bound], list[tuple]]:
        """c = alpha * op(a) @ op(b) + beta * c on row-major device matrices (op(a) = a^T with
        `a_kmajor`, op(b) = b^T with `b_nmajor`) as bound kernels, in order (two with
        split-K), and where alpha and beta sit among their arguments ((bound, index, name)),
        so that a cached layout can change them. op(a) and op(b) may be larger than c
        (zero-padded whole tiles): the kernel writes only c's rows and columns. `guard`:
        (GUARD code, flag buffer) of clgemm.guard, whose two arguments end the kernel's."""
        m, k = (a.cols, a.rows) if a_kmajor else (a.rows, a.cols)
        n = b.rows if b_nmajor else b.cols
        gx, gy = self.kernel.geometry.global_size(self.params, m, n)
        s = self.splits(m, n, k, split_k)
        unaligned = c.ld % self.align != 0
        if unaligned and s > 1:
            raise ValueError(f"split-K's partial sums need C's leading dimension ({c.ld}) to be a "
                             f"multiple of {self.align}")
        code, flag = guard or (0, None)
        if code and s > 1:
            raise ValueError("a guarded launch computes in one slice of k")
        prg = self.compiled(m, n, k, a_kmajor, b_nmajor, split_k, unaligned, code)
        guarded = (flag, np.int32(0)) if code else ()
        q = self.queue
        spread = self.tail(m, n, k) if s == 1 else None
        if spread is not None:
            return self._spread(prg, spread, a, b, c, alpha, beta, k, guarded)
        # with split-K the gemm kernel writes s slices of the partial product, each c.rows x
        # c.ld, into the workspace, and splitk_reduce sums them into c with alpha and beta
        out, ab = ((c.buf, (alpha, beta)) if s == 1
                   else (self.workspace(s * c.rows * c.ld), (1.0, 0.0)))
        rows, cols = np.int32(c.rows), np.int32(c.cols)
        gemm = build.bind(q, prg, "gemm", (gx, gy, s), self.local + (1,),
                          (rows, cols, np.int32(k), np.float32(ab[0]), a.buf,
                           np.int32(a.ld), b.buf, np.int32(b.ld), np.float32(ab[1]), out,
                           np.int32(c.ld)) + guarded)
        if s == 1:
            return [gemm], [(gemm, 3, "alpha"), (gemm, 8, "beta")]
        total = build.bind(q, prg, "splitk_reduce", (-(-c.cols // 64) * 64, c.rows), (64, 1),
                           (rows, cols, np.int32(s), np.float32(alpha), out,
                            np.float32(beta), c.buf, np.int32(c.ld)))
        return [gemm, total], [(total, 3, "alpha"), (total, 5, "beta")]

    def _spread(self, prg: cl.Program, spread: tuple[int, int], a: Matrix, b: Matrix,
                c: Matrix, alpha: float, beta: float, k: int,
                guarded: tuple) -> tuple[list[build.Bound], list[tuple]]:
        """bound()'s launches for tail_split's (tail_from, slices): the TAIL build over
        tail_from whole tiles and the others' pieces of k, whose partial sums tail_reduce
        adds into c with alpha and beta (both guarded alike)."""
        start, slices = spread
        groups, _ = self.tiles(c.rows, c.cols, k)
        left = groups - start
        tm, tn, _ = heuristics.tile_of(self.kernel, self.params)
        work = self.workspace(left * slices * tm * tn)
        q, (lx, ly) = self.queue, self.local
        gemm = build.bind(q, prg, "gemm", ((start + left * slices) * lx, ly), (lx, ly),
                          (np.int32(c.rows), np.int32(c.cols), np.int32(k), np.float32(alpha),
                           a.buf, np.int32(a.ld), b.buf, np.int32(b.ld), np.float32(beta),
                           c.buf, np.int32(c.ld), np.int32(start), np.int32(slices), work)
                          + guarded)
        total = build.bind(q, prg, "tail_reduce", (tn, left * tm), (math.gcd(tn, 64), 1),
                           (np.int32(c.rows), np.int32(c.cols), np.int32(start),
                            np.int32(slices), np.float32(alpha), work, np.float32(beta),
                            c.buf, np.int32(c.ld)) + guarded)
        return [gemm, total], [(gemm, 3, "alpha"), (gemm, 8, "beta"),
                               (total, 4, "alpha"), (total, 6, "beta")]

    def bind(self, *args, **kwargs) -> Callable[[], list[cl.Event]]:
        """bound(...) as one call that enqueues the kernels and returns their events."""
        steps, _ = self.bound(*args, **kwargs)
        return lambda: [step() for step in steps]

    def launch(self, *args, **kwargs) -> list[cl.Event]:
        """bind(...)(): one launch."""
        return self.bind(*args, **kwargs)()


Step = Callable[..., cl.Event]


@dataclass
class Prepared:
    """A product laid out for the device: the launches that compute it (transposes and
    copies of operands included, each a build.Bound or build.BoundCopy returning one event)
    and where the row-major result lands. With `swap`, `out` holds C^T."""
    steps: list[Step]
    out: Matrix
    swap: bool
    splits: int = 1         # slices of k (split-K)
    read: tuple[str, ...] = ()   # the transposed operands ("A", "B") read as they lie
    kmajor: bool = False         # the left operand was transposed to K-major (kmajor_a)
    padded: bool = False         # A and B were copied into zero-padded whole tiles (pads)
    scalars: list[tuple] = field(default_factory=list)   # (bound, index, "alpha"|"beta")
    c_read: bool = False         # the kernels read c (beta != 0)
    # (bound, index, port, floats a unit): the copies' offsets into a caller's matrix that
    # starts past its sub-buffer's origin (View), set per call by a cached layout
    offsets: list[tuple] = field(default_factory=list)
    guard: guards.Guard | None = None    # the scan's flag and epochs (prepare's `guard`)
    tail: tuple[int, int] | None = None  # (tail_from, slices) of a spread last wave (tail_split)

    def launch(self) -> list[cl.Event]:
        if self.guard is not None:
            self.guard.advance()
        return [e for step in self.steps for e in timing.events(step())]


def prepare(plan: GemmPlan, opa, opb, c, alpha: float, beta: float,
            allocator: Callable[[int], object] | None = None, guard: bool = False) -> Prepared:
    """Check shapes and lay the product out as launches. Device operands (pyopencl Arrays,
    blocks of larger ones included, or Views of them) are taken as they lie (every copy or
    transpose of them is a step, so a repeated launch recomputes from their current
    contents); host ones are uploaded now. Buffers clgemm needs of its own come from
    `allocator` (a pyopencl MemoryPool, say) where given. With `guard`, a Kernel.guarded
    (7) runs between a scan of its operands and a fallback (clgemm.guard); `clgemm run`
    leaves it out, to time the kernel alone."""
    queue = plan.queue
    align = operands.base_align(queue.device)
    opa, opb, c = (_port(v, port, align) for port, v in enumerate((opa, opb, c)))
    (m, k), (k2, n) = opa.shape, opb.shape
    if k != k2:
        raise ValueError(f"inner dimensions differ: op(a) is {m}x{k} but op(b) is {k2}x{n}")
    if c is not None and c.shape != (m, n):
        raise ValueError(f"c has shape {c.shape}; op(a) @ op(b) is {m}x{n}")

    # Multiply either X=op(A), Y=op(B) into C, or X=op(B)^T, Y=op(A)^T into C^T: whichever
    # needs fewer device transposes (a Fortran-ordered matrix is its transpose row-major):
    # of an operand the kernel does not read as it lies, and of C on the way in (beta != 0)
    # and out.
    c_needed = c is not None and beta != 0.0
    rx, ry = plan.reads

    def transposes(x_t: bool, y_t: bool, c_t: bool) -> int:
        return (x_t and not rx) + (y_t and not ry) + (c is not None and c_t) * (1 + c_needed)

    a_t, b_t, c_t = is_transposed(opa), is_transposed(opb), c is not None and is_transposed(c)
    swap = transposes(not b_t, not a_t, not c_t) < transposes(a_t, b_t, c_t)
    x, y = (opb.T, opa.T) if swap else (opa, opb)
    target = None if c is None else (c.T if swap else c)
    rows, cols = x.shape[0], y.shape[1]

    # an operand the kernel reads as it lies is taken in its own layout; a row-major left
    # one may be turned K-major first (kmajor_a)
    ta, tb = rx and is_transposed(x), ry and is_transposed(y)
    kmajor = rx and not ta and plan.kmajor_a(rows, cols, k)
    ta = ta or kmajor
    launched = plan.launched(rows, cols, k)
    mp, np_, kp = launched
    pads = launched != (rows, cols, k)
    padded = [(mp, kp), (kp, np_)] if pads else []

    al = plan.align
    mats = [(x, (rows, rounded(k, al))), (y, (k, rounded(cols, al))), (target, (rows, rounded(cols, al)))]
    # the matrices a device transpose re-lays out
    relaid = [shape for (v, shape), read in zip(mats, (rx, ry, False))
              if v is not None and is_transposed(v) and not read]
    relaid += [(k, rounded(rows, al))] if kmajor else []
    # every matrix, plus the copy a transposed one is read into first, padded copies and
    # split-K's partial sums
    slices = plan.splits(*launched)
    partial = [(slices * rows, rounded(cols, al))] if slices > 1 else []
    operands.check_fits(queue.device, [shape for _, shape in mats] + padded + relaid + partial)
    # C is read and written where it lies when it is a row-major device matrix at the origin
    # of its buffer or sub-buffer (split-K: and its partial sums, which take its leading
    # dimension, are no wider than aligned rows), else through a dense matrix; a leading
    # dimension that is not a multiple of the vector width takes the C_UNALIGNED build
    # (split-K's partial sums need aligned rows, so it goes through an aligned copy then)
    tm = target.mem if isinstance(target, View) and not target.transposed else None
    in_place = tm is not None and not tm.offset and (slices == 1 or tm.ld == rounded(cols, al))
    c_unaligned = slices == 1 and (tm.ld % al != 0 if in_place
                                   else target is None and cols % al != 0)
    guarded = guard and plan.kernel.guarded
    plan.compiled(*launched, ta, tb, c_unaligned=c_unaligned,    # errors before I/O
                  guard=guards.kernel_code(c_needed) if guarded else 0)
    lay = _Layout(queue, al, TransposePlan(queue) if relaid or c is not None else None, allocator)
    # the operands as the kernel takes them, (K x M or M x K, N x K or K x N), in whole tiles
    # when padded: a device transpose writes straight into that shape
    xs = ((kp, mp) if ta else (mp, kp)) if pads else None
    ys = ((np_, kp) if tb else (kp, np_)) if pads else None
    xm = lay.relaid(x, xs) if kmajor else (lay.taken if rx else lay.row_major)(x, xs)
    ym = (lay.taken if ry else lay.row_major)(y, ys)
    if in_place:
        cm = tm                                              # read and written where it lies
    elif c_needed:
        cm = lay.row_major(target)
    else:
        cm = lay.empty(rows, cols, cols if c_unaligned else rounded(cols, al))
    beta = beta if c_needed else 0.0
    if guarded:
        bounds, scalars, scanned = guards.bound(plan, xm, ym, cm, alpha, beta, ta, tb,
                                                c_needed, allocator)
    else:
        bounds, scalars = plan.bound(xm, ym, cm, alpha, beta, a_kmajor=ta, b_nmajor=tb)
        scanned = None
    lay.steps += bounds
    if isinstance(target, View) and cm is not tm:
        lay.write_back(cm, target)
    read = tuple(name for name, t in zip("BA" if swap else "AB", (ta and not kmajor, tb)) if t)
    return Prepared(lay.steps, cm, swap, slices, read, kmajor, pads,
                    scalars, c_needed, lay.offsets, scanned, plan.tail(*launched))


def _port(x, port: int, align: int):
    """A device operand as a View numbered `port` (View.port); a host one as it is."""
    if isinstance(x, cla.Array):
        x = operands.device_view(x, "abc"[port], align)
    return replace(x, port=port) if isinstance(x, View) else x


@dataclass
class _Layout:
    """The steps of one layout and the buffers they need, made by `allocator`."""
    queue: cl.CommandQueue
    align: int
    tplan: TransposePlan | None
    allocator: Callable[[int], object] | None
    steps: list = field(default_factory=list)
    offsets: list = field(default_factory=list)      # Prepared.offsets

    def empty(self, rows: int, cols: int, ld: int) -> Matrix:
        return operands.empty(self.queue, rows, cols, ld, self.allocator)

    def zeros(self, rows: int, cols: int, ld: int) -> Matrix:
        return operands.zeros(self.queue, rows, cols, ld, self.allocator)

    def taken(self, x, shape: tuple[int, int] | None = None) -> Matrix:
        """x in its own layout (operands.raw). With `shape` (whole tiles, when padding), in
        the top-left corner of a zero-filled buffer that large, whose padding adds nothing
        to the sums. A device matrix is read where it lies when its width and leading
        dimension are aligned (the vector loads read whole vectors: past an unaligned
        width they would read a neighbour's elements, not zeros) and it starts at its
        (sub-)buffer's origin; else a step copies it."""
        if isinstance(x, np.ndarray):
            return operands.raw(self.queue, x, self.align, shape, self.allocator)
        m = x.mem
        want = shape or (m.rows, rounded(m.cols, self.align))
        if (m.rows, m.cols) == want and m.ld % self.align == 0 and not m.offset:
            return m
        out = self.zeros(want[0], m.cols if shape is None else want[1], want[1])
        self.copy(m, out, x.port, None)
        return out

    def copy(self, src: Matrix, dst: Matrix, src_port: int | None,
             dst_port: int | None) -> None:
        """A step copying src (all of it) into dst's top-left corner; an offset into a
        caller's matrix is noted (Prepared.offsets) for a cached layout to set per call."""
        args = (src.ld, dst.ld, src.offset, dst.offset)
        step = operands.bind_copy(self.queue, src.buf, src.ld, dst.buf, dst.ld, src.rows,
                                  src.cols, src.offset, dst.offset)
        unit = operands.copy_width(src.cols, *args)
        for index, m, port in zip(operands.COPY_OFFSETS, (src, dst), (src_port, dst_port)):
            if m.offset:
                self.offsets.append((step, index, port, unit))
        self.steps.append(step)

    def row_major(self, x, shape: tuple[int, int] | None = None) -> Matrix:
        """x as a row-major device matrix with an aligned leading dimension; a transpose it
        needs becomes a step (into a zero-padded `shape` when given)."""
        return self.relaid(x, shape) if is_transposed(x) else self.taken(x, shape)

    def relaid(self, x, shape: tuple[int, int] | None = None) -> Matrix:
        """The transpose of x's memory as a new device matrix (row-major x for a transposed
        x, K-major for a row-major A), in the top-left corner of a zero-filled `shape` when
        given; the transpose becomes a step (after a dense copy of a device matrix that
        starts past its sub-buffer's origin: the transposes take no offset)."""
        if isinstance(x, View):
            src = x.mem
            if src.offset:
                src = self.empty(src.rows, src.cols, src.cols)
                self.copy(x.mem, src, x.port, None)
        else:
            src = operands.raw(self.queue, x, 1, allocator=self.allocator)
        if shape is not None:
            dst = self.zeros(shape[0], shape[1], shape[1])
        else:
            dst = self.zeros(src.cols, src.rows, rounded(src.rows, self.align))
        self.steps.append(self.tplan.bind(src, dst))
        return dst

    def write_back(self, cm: Matrix, target: View) -> None:
        """Steps putting the row-major result `cm` into the device matrix `target`, only
        into its elements (a block's neighbours are left as they are)."""
        t = target.mem
        if not target.transposed:
            self.copy(cm, t, None, target.port)
            return
        # target's memory is row-major target.T: transposed straight there, or into a dense
        # matrix first where it starts past its sub-buffer's origin
        dst = (self.empty(cm.cols, cm.rows, cm.rows) if t.offset
               else Matrix(t.buf, cm.cols, cm.rows, t.ld))
        self.steps.append(self.tplan.bind(cm, dst))
        if t.offset:
            self.copy(dst, t, None, target.port)

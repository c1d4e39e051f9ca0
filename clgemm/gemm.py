"""The library call: C = alpha * op(A) @ op(B) + beta * C on an OpenCL queue."""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from . import build, db, kernels, operands, timing
from . import device as devmod
from .operands import Matrix, is_transposed, rounded
from .transpose import TransposePlan


TRANSPOSED_BY = ("auto", "transpose", "kernel")
PAD = ("auto", "yes", "no")
# pad "auto" (the default): zero-padded copies of A and B for the EXACT build. On the H200
# (results/NOTES.md, session 7), copies counted: +8% at 1500^3 and 2000^3, +11-13% at
# 2500^3, 3000^3 and 4000x4000x1000, +42% at 1300^3; -7% at 1100^3 and 1200^3, -9% at 1000^3.
PAD_MIN_VOLUME = 2**31   # M*N*K (about 1290^3)
# ... and only where the product is deep and wide enough to repay two more launches and the
# copies (session 8): unpadded was faster at 4000x4000x135 (6%), 3000x3000x240 (1%),
# 1000x1000x2150 (13%) and 999x3333x2222 (7%); padded at 2100x2100x512 (8%), 2600x2600x600
# (5%) and 4000x4000x1000 (13%), though not at 2000x2000x540 (-2%)
PAD_MIN_K = 256
PAD_MIN_MN = 1024
PAD_WASTE = 1.15         # padded volume over the real one; EXACT gained 5.8% on the H200
# split-K "auto": slices until the work-groups number SPLIT_FILL per compute unit, each
# slice at least SPLIT_MIN_K deep. On the H200 (results/NOTES.md, session 3) splitting paid
# at 128 work-groups (+23%) and lost at 256 (-8 to -12%), and at 512^3 (slices of 256)
SPLIT_FILL = 1
SPLIT_MIN_K = 512
# Away from its tuned shape, a tuned count's slices may be SPLIT_THINNER times thinner than
# the tuned ones (or SPLIT_MIN_K deep, whichever is less). At 1 (session 11) a 4-row tile
# tuned at 1x4096x4096 in 16 slices of 256 gave 1x2000x3000 8 slices, x0.89 (session 12);
# at 2, 16 slices, x1.14 (span; session 13), and 16 x 2048 x 2048 x0.90
SPLIT_THINNER = 2
# Parameters for an untuned shape come from the tuned entries near it (within NEAR_WITHIN of
# the nearest, in db.distance): each entry's measured time, rescaled by the groups and k
# steps its configuration would give the busiest compute unit at the new shape
# (GemmPlan.wave_steps), and the fastest prediction wins if it beats the nearest entry's by
# WAVE_MARGIN. On the H200 (session 8, 25 untuned shapes) the nearest entry of the same
# database lost up to 26% where its tiles spill into a second wave (2100^3: 289 groups of
# 128 x 128 for 264 places); the prediction's picks gained 4-36% at 7 shapes and lost
# nowhere (call 8's measurements of them; scripts/choice_replay.py).
NEAR_WITHIN = 0.7
WAVE_MARGIN = 1.05
# Before that, entries whose tiles would compute more than TILE_WASTE times the least
# padded C of any entry (tiles x tile size over m x n) are passed over, but for one tuned at
# that very shape: the log distance sees 1 x 4096 x 4096 and 16 x 4096 x 4096 as near, but
# a 16-row tile computes 16 rows for m = 1 and a 4-row one 4. On the H200 (session 13, 34
# shapes, with six skinny entries) the rule and the entries gave x1.095 (span) over the
# database before, 1.36-1.96 at n = 1, 24 x 6000 x 6000 and 32 x 8192 x 8192, and lost 10%
# at 12 x 4096 x 4096 (16 x 64 tiles in 8 slices, where 16 x 128 ones in 32 had done better)
TILE_WASTE = 1.5
# transposed_by="auto" also turns a row-major A K-major with a device transpose first, for
# kernels that read it so, once the product is large enough to repay the transpose. On the
# H200, transpose included (results/NOTES.md, session 4): +1.5% at 8192^3, +0.3% at 4096^3,
# -0.2% at 4000^3, -2.4% at 2048^3, -3.8% at 4096x1024x4096, -5% at 256x8192x8192.
KMAJOR_MIN_N = 4096
KMAJOR_MIN_VOLUME = 2**38   # M*N*K: between 4096^3 (2^36, about even) and 8192^3 (2^39)


def _tuned(queue: cl.CommandQueue, kernel: str | None,
           shape: tuple[int, int, int]) -> tuple[str, dict] | None:
    """(kernel, entry) for `shape` from the tuning database (see NEAR_WITHIN): the nearest
    entry, or a near one whose launch at `shape` is predicted faster by WAVE_MARGIN. Kept
    per database state (db.stamp): choosing plans every near entry, which cost gemm()
    0.2-0.5 ms a call on the H200."""
    key = (db.stamp(queue.device), queue.device.int_ptr, kernel, tuple(shape))
    try:
        return _chosen[key]
    except KeyError:
        pass
    choice = _choose(queue, kernel, shape)
    if len(_chosen) > 4096:
        _chosen.clear()
    _chosen[key] = choice
    return choice


_chosen: dict[tuple, tuple[str, dict] | None] = {}


def _choose(queue: cl.CommandQueue, kernel: str | None,
            shape: tuple[int, int, int]) -> tuple[str, dict] | None:
    # a kernel's own entries, and on a tie of distance or where it has none as near, those
    # of the kernels whose parameters mean the same (6 is 5 with another epilogue); without
    # a kernel, those of every kernel but the ones taken only by name (opt_in)
    keys = None if kernel is None else [kernel, *kernels.get(kernel).siblings]
    every = db.near(queue.device, keys, *shape, within=math.inf,
                    usable=lambda key, e: (kernel is not None or not kernels.get(key).opt_in)
                    and _fits(queue.device, kernel or key, key, e))
    if not every:
        return None
    waste = [_tile_waste(kernels.get(kernel or key), e["params"], shape) for key, e in every]
    least = min(waste)              # an entry tuned at this very shape is always kept
    near = db.closest([ke for ke, w in zip(every, waste)
                       if w <= TILE_WASTE * least or ke[1]["shape"] == tuple(shape)],
                      shape, NEAR_WITHIN)
    if len(near) == 1 or near[0][1]["shape"] == tuple(shape) or any("resident" not in e for _, e in near):
        return near[0]

    def predicted(key_entry) -> float:
        key, e = key_entry
        plan = GemmPlan(queue, kernel or key, e["params"])
        plan.tuned_split = _entry_split(e)
        ms = timing.gflops(*e["shape"], 1.0) / e["gflops"]      # its measured time
        return ms * plan.wave_steps(*shape, e["resident"]) / plan.wave_steps(*e["shape"], e["resident"])

    times = [predicted(ke) for ke in near]
    best = min(range(len(near)), key=times.__getitem__)
    return near[best] if times[best] * WAVE_MARGIN < times[0] else near[0]


def _tile_waste(kern: kernels.Kernel, params: Mapping[str, int],
                shape: tuple[int, int, int]) -> float:
    """The part of C that a configuration's whole tiles would compute at `shape`, over C."""
    (tm, tn), (m, n, _) = kern.geometry.tile(params), shape
    return rounded(m, tm) * rounded(n, tn) / (m * n)


def _entry_split(entry: Mapping) -> tuple[tuple[int, int, int], int] | None:
    """(tuned shape, slices of k) of a database entry whose tune measured split-K counts
    (clgemm.tune's split stage); None for one that did not."""
    return (entry["shape"], entry["splits"]) if "splits" in entry else None


def _fits(dev: cl.Device, kernel: str, key: str, entry: dict) -> bool:
    """Whether a database entry's parameters (tuned for kernel `key`) can launch `kernel`
    on this device: a hand-edited or foreign entry beyond its limits is passed over, with
    a warning, not tried; a sibling kernel's entry that breaks this kernel's own
    constraints, silently."""
    bad = kernels.get(kernel).violations(entry["params"], dev)
    if bad and key == kernel:
        warnings.warn(f"tuning database entry of kernel {key} at {db.shape_key(*entry['shape'])} "
                      f"skipped: {'; '.join(bad)}", db.DataWarning, stacklevel=2)
    return not bad


class Workspace:
    """Split-K's buffer of partial sums, grown on demand. Plans that launch on one in-order
    queue may share one, since their launches never overlap (the tuner's split stage holds
    dozens of plans at once)."""

    def __init__(self, context: cl.Context):
        self.context, self.buf = context, None

    def get(self, floats: int) -> cl.Buffer:
        if self.buf is None or self.buf.size < 4 * floats:
            self.buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, 4 * floats)
        return self.buf


class GemmPlan:
    """A GEMM kernel with its parameters, checked against the device and compiled:
    the one object that `gemm()`, `clgemm run`, the tuner and the benchmark launch."""

    def __init__(self, queue: cl.CommandQueue, kernel: object = None,
                 params: Mapping[str, object] | None = None,
                 shape: tuple[int, int, int] | None = None, transposed_by: str = "auto",
                 pad: str = "auto", split_k: int | str = "auto",
                 workspace: Workspace | None = None):
        """Parameters start from the tuning database's entry for the nearest tuned shape
        (when `shape` is given and this device was tuned), else the registry defaults;
        `params` overrides either. Without a kernel, the database's fastest is taken.
        `transposed_by` says how gemm() treats an operand stored transposed: "transpose"
        copies it row-major with a device transpose first; "kernel" has a kernel that can
        (kernels 5 and 6) read it as it lies; "auto" reads the left operand as it lies and
        transposes the right one where the kernel can, which was the faster way for each on
        the H200 (results/h200/README.md, session 3), else transposes; for large products it
        also turns a row-major left operand K-major first (`kmajor_a`). `pad` says when a
        shape that is not a whole number of tiles has A and B copied into zero-padded
        buffers that are, so that the build without bounds checks runs: "auto" (large
        shapes where that wastes little, see `pads`), "yes", "no".
        `split_k` cuts k into that many slices summed by a second kernel (kernels 5 and 6),
        or "auto" (see `splits`); `workspace` holds its partial sums (a new one by
        default). Programs are built on first use, one per variant a launch
        needs (`compiled`); prepare() builds the one it will launch before it moves any data."""
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
        tuned = _tuned(queue, None if kernel is None else str(kernel), shape) \
            if shape is not None else None
        key = kernel if kernel is not None else (tuned[0] if tuned else kernels.DEFAULT_GEMM)
        self.kernel = kernels.get(key)
        self.tuned_at: str | None = None     # the shape whose tuned entry gave the parameters
        self.tuned_kernel: str | None = None  # and the kernel it was tuned for (`siblings`)
        # (shape, slices of k) the tuner measured best for these parameters (`splits`)
        self.tuned_split: tuple[tuple[int, int, int], int] | None = None
        if tuned is not None:               # this kernel's entry, or a sibling's (`_choose`)
            base, self.source = tuned[1]["params"], "tuned"
            self.tuned_at, self.tuned_kernel = db.shape_key(*tuned[1]["shape"]), tuned[0]
            self.tuned_split = _entry_split(tuned[1])
        else:
            base, self.source = self.kernel.defaults_for(queue.device), "defaults"
        self.params = self.kernel.resolve(params, base=base)
        if params and set(params) >= set(self.params):   # nothing of the base is left
            self.source, self.tuned_at, self.tuned_kernel = "given", None, None
        elif params:
            self.source += "+given"
        if self.params != base:              # measured for the entry's parameters only
            self.tuned_split = None
        self.kernel.check(self.params, queue.device)
        if transposed_by == "kernel" and not self.kernel.layouts:
            raise ValueError(f"kernel {self.kernel.key} ({self.kernel.name}) cannot read transposed "
                             f"operands as they lie (kernels 5 and 6 can); use "
                             f"transposed_by=\"transpose\" (clgemm run: --transposed-by "
                             f"transpose)")
        # whether the kernel reads its left (A) and right (B) operand as it lies
        self.transposed_by = transposed_by
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

    def exact(self, m: int, n: int, k: int) -> bool:
        """Whether a launch at (m, n, k) uses the build without bounds checks."""
        return self.kernel.exact and self.kernel.divides(self.params, m, n, k)

    def pads(self, m: int, n: int, k: int) -> bool:
        """Whether a launch at (m, n, k) runs on zero-padded copies of whole tiles. Auto:
        only for kernels with an EXACT build, at shapes large enough that the copies are
        cheap next to the product, and when padding adds at most PAD_WASTE more work."""
        if not self.kernel.exact or self.exact(m, n, k) or self.pad == "no":
            return False
        if self.pad == "yes":
            return True
        mp, np_, kp = self.kernel.whole_tiles(self.params, m, n, k)
        return (m * n * k >= PAD_MIN_VOLUME and k >= PAD_MIN_K and min(m, n) >= PAD_MIN_MN
                and mp * np_ * kp <= PAD_WASTE * m * n * k)

    def launched(self, m: int, n: int, k: int) -> tuple[int, int, int]:
        """The shape a launch for (m, n, k) covers: whole tiles when it pads (`pads`), else
        (m, n, k). gemm() and the tuner both take it from here."""
        return self.kernel.whole_tiles(self.params, m, n, k) if self.pads(m, n, k) else (m, n, k)

    def tiles(self, m: int, n: int, k: int) -> tuple[int, int]:
        """(work-groups that cover C, tile steps along k) of a launch at (m, n, k)."""
        mp, np_, kp = self.kernel.whole_tiles(self.params, m, n, k)
        tm, tn, tk = self.kernel.whole_tiles(self.params, 1, 1, 1)
        return (mp // tm) * (np_ // tn), kp // tk

    def splits(self, m: int, n: int, k: int, asked: int | str | None = None) -> int:
        """How many slices of k a launch at (m, n, k) computes apart (1: no split-K), for
        the plan's `split_k` or the count `asked` instead. Auto, for parameters whose tune
        measured split-K counts (`tuned_split`): that count at the tuned shape; elsewhere the
        power of two nearest to the same total of work-groups, with slices no thinner than
        the tuned ones over SPLIT_THINNER or SPLIT_MIN_K, whichever is less. Otherwise: when
        C has too few tiles to give every compute unit SPLIT_FILL work-groups, double the
        slices until it does, keeping slices SPLIT_MIN_K deep. Auto halves a count whose partial sums would
        not fit in one buffer. The count is then trimmed so that every slice holds at least
        one tile of k."""
        if not self.kernel.split_k:
            return 1
        groups, depth = self.tiles(m, n, k)
        s = self.split_k if asked is None else asked
        if s == "auto":
            s = self._auto_splits(m, n, k, groups)
        per = -(-depth // min(s, depth))
        return -(-depth // per)

    def _auto_splits(self, m: int, n: int, k: int, groups: int) -> int:
        if self.tuned_split is not None:
            shape, tuned = self.tuned_split
            at = self.launched(*shape)
            if (m, n, k) in (tuple(shape), at):
                s = tuned
            else:
                fill = self.tiles(*at)[0] * tuned
                s = 2 ** max(0, round(math.log2(fill / groups)))
                thinnest = min(SPLIT_MIN_K, at[2] // tuned // SPLIT_THINNER)
                while s > 1 and k // s < thinnest:
                    s //= 2
        else:
            want = SPLIT_FILL * self.queue.device.max_compute_units
            s = 1
            while groups * s < want and 2 * s * SPLIT_MIN_K <= k:
                s *= 2
        while s > 1 and not self.workspace_fits(s, m, n):
            s //= 2
        return s

    def workspace_fits(self, slices: int, m: int, n: int) -> bool:
        """Whether split-K's partial sums, `slices` copies of an m x n C, fit in one buffer."""
        try:
            operands.check_fits(self.queue.device, [(slices * m, rounded(n, self.align))])
        except ValueError:
            return False
        return True

    def kmajor_a(self, m: int, n: int, k: int) -> bool:
        """Whether a launch at (m, n, k) reads a row-major A after a device transpose to
        K x M (see KMAJOR_MIN_N): each element of A is reused n times, the transpose reads and
        writes it once."""
        return (self.transposed_by == "auto" and self.kernel.layouts and n >= KMAJOR_MIN_N
                and m * n * k >= KMAJOR_MIN_VOLUME)

    def residents(self) -> dict[str, int] | None:
        """Work-groups of this configuration resident per compute unit, for the build with
        bounds checks and the EXACT one ({"checked": r, "exact": r}); None where the
        device does not say (see build.footprint). The tuner records it with its winner."""
        def resident(extra: tuple[str, ...]) -> int | None:
            fp = build.footprint(self.queue.context, self.kernel, self.params, extra)
            return fp and devmod.resident_groups(self.queue.device, int(np.prod(self.local)), *fp)

        checked = resident(())
        exact = resident(("-DEXACT",)) if checked and self.kernel.exact else checked
        return {"checked": checked, "exact": exact} if checked and exact else None

    def wave_steps(self, m: int, n: int, k: int, residents: Mapping[str, int]) -> int:
        """How long a launch at (m, n, k) takes, in k steps of one work-group on a busy
        compute unit: the groups the busiest unit runs (at most `residents` at once; a
        second wave for one more group costs a whole one) times the k steps of each. Launch
        times of one configuration scale with it. Counting whole waves alone mispredicted
        an entry tuned under one wave: 32 x 128 tiles ran 1152^3 (3 groups a unit) at 29.5
        TFLOPS and 1300^3 (4 a unit) at 25.8, where waves alone predicted 37 (session 8)."""
        mp, np_, kp = self.launched(m, n, k)
        s = self.splits(mp, np_, kp)
        groups, depth = self.tiles(mp, np_, kp)
        groups *= s
        r = residents["exact" if self.exact(mp, np_, kp) else "checked"]
        units = self.queue.device.max_compute_units
        busiest = -(-groups // units) if groups <= r * units else -(-groups // (r * units)) * r
        return busiest * -(-depth // s)

    def workspace(self, floats: int) -> cl.Buffer:
        """The split-K partial sums' buffer, kept for the next launch."""
        return self._work.get(floats)

    def compiled(self, m: int, n: int, k: int, a_kmajor: bool = False,
                 b_nmajor: bool = False, split_k: int | str | None = None) -> cl.Program:
        """The program for a launch at (m, n, k) with these operand layouts (and slices of
        k, as `splits`), built on first use: one build per variant (EXACT, A_KMAJOR,
        B_NMAJOR, SPLIT_K), since each drops or adds code that costs registers in the others."""
        key = (self.exact(m, n, k), a_kmajor, b_nmajor, self.splits(m, n, k, split_k) > 1)
        if key not in self._programs:
            if (a_kmajor or b_nmajor) and not self.kernel.layouts:
                raise ValueError(f"kernel {self.kernel.key} ({self.kernel.name}) reads row-major "
                                 f"operands only")
            opts = [o for o, on in zip(("-DEXACT", "-DA_KMAJOR", "-DB_NMAJOR", "-DSPLIT_K"), key) if on]
            self._programs[key] = build.program(self.queue.context, self.kernel, self.params,
                                                tuple(opts))
        return self._programs[key]

    def bind(self, a: Matrix, b: Matrix, c: Matrix, alpha: float = 1.0, beta: float = 0.0,
             a_kmajor: bool = False, b_nmajor: bool = False,
             split_k: int | str | None = None) -> Callable[[], list[cl.Event]]:
        """c = alpha * op(a) @ op(b) + beta * c on row-major device matrices, where op(a) is
        a, or a^T with `a_kmajor` (a holds A as K x M), and likewise b^T with `b_nmajor`, as
        a call that enqueues it and returns the kernels' events in order (two with split-K).
        op(a) and op(b) may be larger than c (zero-padded to whole tiles, `pads`): the launch
        covers the operands, the kernel writes only c's rows and columns, since its stores
        are bounds-checked in every build. `split_k` overrides the plan's for this launch
        (`splits`). The arguments are set once here (build.bind), so that a repeated call
        only enqueues."""
        m, k = (a.cols, a.rows) if a_kmajor else (a.rows, a.cols)
        n = b.rows if b_nmajor else b.cols
        gx, gy = self.kernel.geometry.global_size(self.params, m, n)
        prg = self.compiled(m, n, k, a_kmajor, b_nmajor, split_k)
        s = self.splits(m, n, k, split_k)
        q = self.queue
        # with split-K the gemm kernel writes s slices of the partial product, each c.rows x
        # c.ld, into the workspace, and splitk_reduce sums them into c with alpha and beta
        out, ab = ((c.buf, (alpha, beta)) if s == 1
                   else (self.workspace(s * c.rows * c.ld), (1.0, 0.0)))
        rows, cols = np.int32(c.rows), np.int32(c.cols)
        gemm = build.bind(q, prg, "gemm", (gx, gy, s), self.local + (1,),
                          (rows, cols, np.int32(k), np.float32(ab[0]), a.buf,
                           np.int32(a.ld), b.buf, np.int32(b.ld), np.float32(ab[1]), out,
                           np.int32(c.ld)), held=(a, b, c, out))
        if s == 1:
            return lambda: [gemm()]
        total = build.bind(q, prg, "splitk_reduce", (-(-c.cols // 64) * 64, c.rows), (64, 1),
                           (rows, cols, np.int32(s), np.float32(alpha), out,
                            np.float32(beta), c.buf, np.int32(c.ld)), held=(out, c))
        return lambda: [gemm(), total()]

    def launch(self, *args, **kwargs) -> list[cl.Event]:
        """bind(...)(): one launch."""
        return self.bind(*args, **kwargs)()


@dataclass
class Prepared:
    """A product laid out for the device: the launches that compute it (transposes of
    operands included) and where the row-major result lands. With `swap`, `out` holds C^T."""
    steps: list[Callable[[], cl.Event]]
    out: Matrix
    swap: bool
    target: object          # c or c.T (None without c), in out's orientation
    tplan: TransposePlan | None
    splits: int = 1         # slices of k (split-K)
    read: tuple[str, ...] = ()   # the transposed operands ("A", "B") read as they lie
    kmajor: bool = False         # the left operand was transposed to K-major (kmajor_a)
    padded: bool = False         # A and B were copied into zero-padded whole tiles (pads)

    def launch(self) -> list[cl.Event]:
        return [e for step in self.steps for e in timing.events(step())]


def gemm(queue: cl.CommandQueue, a, b, c=None, *, alpha: float = 1.0, beta: float = 0.0,
         trans_a: bool = False, trans_b: bool = False, kernel: object = None,
         params: Mapping[str, object] | None = None, transposed_by: str = "auto",
         split_k: int | str = "auto"):
    """C = alpha * op(A) @ op(B) + beta * C in float32.

    numpy inputs give a numpy result; if any input is a pyopencl Array the result is an
    Array on the same queue, computed without a host round trip. With `c` given, the result
    is written into it (in place for Arrays) and `c` is returned; beta == 0 never reads c.
    Fortran-ordered operands are used as they lie in memory: when both are, the kernel
    computes C^T = op(B)^T op(A)^T instead, and otherwise one operand is transposed on the
    device, so no extra host copy is made. Kernels 5 and 6 can also read a transposed
    operand as it lies: transposed_by="kernel" for both, "transpose" for neither, "auto"
    (the default) for the left one only, which measured fastest; "auto" also lays a
    row-major A out K-major on the device for large products (GemmPlan.kmajor_a). `split_k`
    (kernels 5 and 6) cuts k into that many slices computed apart and then summed; "auto"
    takes the count the tuner measured for the entry in use, else splits only when C has
    too few tiles to fill the device (GemmPlan.splits).
    The queue must be in-order. Work still pending on Array operands (their .events, from
    another queue say) is waited for on the device, and an Array result carries an event
    for its own completion, as pyopencl's Array operations expect.
    """
    operands.check_queue(queue)
    operands.check(a, "a", queue)
    operands.check(b, "b", queue)
    opa = a.T if trans_a else a
    opb = b.T if trans_b else b
    alpha, beta = operands.scalar(alpha, "alpha"), operands.scalar(beta, "beta")
    if c is not None:
        operands.check(c, "c", queue)
        if isinstance(c, np.ndarray) and not c.flags.writeable:
            raise ValueError("c is a read-only numpy array; the result is written into c")
        if isinstance(c, cla.Array) and any(isinstance(v, cla.Array) and v.base_data is c.base_data
                                            for v in (a, b)):
            raise ValueError("c shares its buffer with a or b; GEMM cannot run in place over an input")
    plan = GemmPlan(queue, kernel, params, shape=(opa.shape[0], opb.shape[1], opa.shape[1]),
                    transposed_by=transposed_by, split_k=split_k)
    operands.wait_for_arrays(queue, a, b, c)
    prep = prepare(plan, opa, opb, c, alpha, beta)
    prep.launch()
    if c is None:
        if any(isinstance(v, cla.Array) for v in (a, b)):
            out = operands.to_array(queue, prep.out, transposed=prep.swap)
            operands.mark_written(queue, out)
            return out
        host = operands.to_host(queue, prep.out)
        return host.T if prep.swap else host
    _write_back(queue, prep.out, prep.target, prep.tplan)
    operands.mark_written(queue, c)
    return c


def prepare(plan: GemmPlan, opa, opb, c, alpha: float, beta: float) -> Prepared:
    """Check shapes, move operands to the device and lay out the launches."""
    queue = plan.queue
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
    # one may be turned K-major first (GemmPlan.kmajor_a)
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
    plan.compiled(*launched, ta, tb)   # errors before I/O
    tplan = TransposePlan(queue) if relaid else None
    steps: list[Callable[[], cl.Event]] = []
    # the operands as the kernel takes them, (K x M or M x K, N x K or K x N), in whole tiles
    # when padded: a device transpose writes straight into that shape
    xs = ((kp, mp) if ta else (mp, kp)) if pads else None
    ys = ((np_, kp) if tb else (kp, np_)) if pads else None
    # as they lie (the memory of a transposed one is x.T), or row-major after a transpose
    if kmajor:
        xm = _relaid(queue, x, al, tplan, steps, xs)
    else:
        xm = (_taken if rx else _row_major)(queue, x, al, tplan, steps, xs)
    ym = (_taken if ry else _row_major)(queue, y, al, tplan, steps, ys)
    if c_needed:
        cm = _row_major(queue, target, al, tplan, steps)
    elif isinstance(target, cla.Array) and not is_transposed(target) and cols % al == 0:
        cm = Matrix(target.base_data, rows, cols, cols)      # write straight into c
    else:
        cm = operands.empty(queue, rows, cols, rounded(cols, al))
    beta = beta if c_needed else 0.0
    steps.append(plan.bind(xm, ym, cm, alpha, beta, a_kmajor=ta, b_nmajor=tb))
    read = tuple(name for name, t in zip("BA" if swap else "AB", (ta and not kmajor, tb)) if t)
    return Prepared(steps, cm, swap, target, tplan, slices, read, kmajor, pads)


def _taken(queue, x, align: int, tplan: TransposePlan | None, steps: list,
           shape: tuple[int, int] | None = None) -> Matrix:
    """x in its own layout (operands.raw). With `shape` (whole tiles, when padding), in the
    top-left corner of a zero-filled buffer that large, whose padding adds nothing to the
    sums: a host matrix is uploaded straight there; a device one is copied there by a step,
    so that a timed launch of device-resident operands counts that copy."""
    if shape is None or isinstance(x, np.ndarray):
        return operands.raw(queue, x, align, shape)
    m = operands.raw(queue, x, 1)    # a device array's own dense memory, no copy
    if (m.rows, m.cols) == shape:    # whole tiles already (their width is aligned)
        return m
    out = operands.zeros(queue, shape[0], shape[1], shape[1])
    steps.append(operands.bind_copy(queue, m.buf, m.ld, out.buf, out.ld, m.rows, m.cols))
    return out


def _row_major(queue, x, align: int, tplan: TransposePlan | None, steps: list,
               shape: tuple[int, int] | None = None) -> Matrix:
    """x as a row-major device matrix with an aligned leading dimension; a transpose it
    needs becomes a step (into a zero-padded `shape` when given)."""
    if not is_transposed(x):
        return _taken(queue, x, align, tplan, steps, shape)
    return _relaid(queue, x, align, tplan, steps, shape)


def _relaid(queue, x, align: int, tplan: TransposePlan, steps: list,
            shape: tuple[int, int] | None = None) -> Matrix:
    """The transpose of x's memory as a new device matrix (row-major x for a transposed x,
    K-major for a row-major A), or in the top-left corner of a zero-filled `shape` (whole
    tiles); the transpose becomes a step."""
    src = operands.raw(queue, x, 1)
    if shape is not None:
        dst = operands.zeros(queue, shape[0], shape[1], shape[1])
    else:
        dst = operands.zeros(queue, src.cols, src.rows, rounded(src.rows, align))
    steps.append(tplan.bind(src, dst))
    return dst


def _write_back(queue, cm: Matrix, target, tplan: TransposePlan | None) -> None:
    """Put the row-major result `cm` into the user's `target` (c or c.T)."""
    if isinstance(target, np.ndarray):
        target[...] = operands.to_host(queue, cm)
        return
    if cm.buf is target.base_data:
        return
    if is_transposed(target):   # target's memory is row-major target.T
        tplan.launch(cm, Matrix(target.base_data, cm.cols, cm.rows, cm.rows))
    else:
        operands.copy_rect(queue, cm.buf, cm.ld, target.base_data, cm.cols, cm.rows, cm.cols)

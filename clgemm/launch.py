"""A kernel configuration checked, compiled and bound (GemmPlan): its launches at a shape
(split-K, the spread last wave), as clgemm.heuristics decides them. clgemm.layout lays a
product's operands out for it."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from . import build, choice, db, heuristics, kernels, operands
from .choice import facts
from . import device as devmod
from .operands import Matrix, rounded

TRANSPOSED_BY = ("auto", "transpose", "kernel")
_LOADS_OPTION = {"exact": ("-DEXACT",), "clamp": ("-DCLAMP",),   # heuristics.loads -> options
                 "ragged": ("-DCLAMP", "-DK_RAGGED"), "floats": ("-DAB_UNALIGNED",)}
PAD = ("auto", "yes", "no")




_group_fit: dict[tuple, bool] = {}       # GemmPlan._group_fits, per device and configuration
_rows_fit: dict[tuple, bool] = {}        # GemmPlan._rows_keep_residents, likewise


def check_transposed_by(transposed_by: object) -> None:
    """transposed_by as gemm(), Plan and GemmPlan take it (TRANSPOSED_BY)."""
    if transposed_by not in TRANSPOSED_BY:
        raise ValueError(f"transposed_by must be one of {', '.join(TRANSPOSED_BY)}, "
                         f"not {transposed_by!r}")


def check_split_k(split_k: object) -> None:
    """split_k as gemm(), Plan and GemmPlan take it: "auto" or a count of slices."""
    if split_k != "auto" and (isinstance(split_k, (bool, np.bool_))
                              or not isinstance(split_k, numbers.Integral) or split_k < 1):
        raise ValueError(f"split_k must be \"auto\" or an integer >= 1, not {split_k!r}")


@dataclass(frozen=True)
class Decisions:
    """A product's launch decisions (GemmPlan.decide): layout.prepare lays the product out
    by them and Plan.describe reports them, so that the two cannot disagree."""
    floats: bool                 # A and B read where they lie, a float at a time
    padded: bool                 # A and B copied into zero-padded whole tiles (or k's alone)
    launched: tuple[int, int, int]   # the shape the launches cover (whole tiles if padded)
    peel: tuple[int, int] | None     # (m1, n1): C's rows and columns past them apart
    main: tuple[int, int, int]   # the main launch's shape: `launched`, or its whole tiles
    splits: int                  # slices of k of the main launch
    tail: tuple[int, int] | None     # its spread last wave (tail_split)
    columns_first: bool          # its tiles taken down columns
    guarded: bool                # a tensor-core kernel between a scan and a fallback
    group_slices: int = 1        # slices of k within each of its work-groups (KG)


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
        check_transposed_by(transposed_by)
        if pad not in PAD:
            raise ValueError(f"pad must be one of {', '.join(PAD)}, not {pad!r}")
        check_split_k(split_k)
        if shape is not None and not (
                len(shape) == 3 and all(isinstance(d, numbers.Integral) and not isinstance(d, bool)
                                        and d >= 1 for d in shape)):
            raise ValueError(f"shape must be (m, n, k), three integers >= 1, not {shape!r}")
        self.pad, self.split_k = pad, (split_k if split_k == "auto" else int(split_k))
        self.queue = queue
        self.facts = facts(queue.device)
        self._kept_for: tuple | None = None       # _kept's answers and what they hold for
        self._answers: dict[tuple, object] = {}
        tuned = choice.tuned_entry(queue, None if kernel is None else str(kernel), shape,
                                   self.facts) if shape is not None else None
        key = kernel if kernel is not None else (tuned[0] if tuned else kernels.DEFAULT_GEMM)
        self.kernel = kernels.get(key)
        if pad == "yes" and not self.kernel.exact:      # asked for, and nothing would pad
            padded = ", ".join(k.key for k in kernels.GEMM.values() if k.exact)
            raise ValueError(f"kernel {self.kernel.key} has no padded launch: pad='yes' "
                             f"applies to kernels {padded}")
        self.tuned_at: str | None = None     # the shape whose tuned entry gave the parameters
        self.tuned_kernel: str | None = None  # and the kernel it was tuned for (siblings)
        self.tuned_on: str | None = None     # another device's, of this architecture (db)
        # (shape, slices of k) the tuner measured best for these parameters
        self.tuned_split: tuple[tuple[int, int, int], int] | None = None
        # work-groups of these parameters resident a compute unit ({"checked", "exact"}
        # builds), as the tuner recorded them: what tail_split needs
        self.resident: Mapping[str, int] | None = None
        if tuned is not None:
            base, self.source = tuned[1]["params"], "tuned"
            self.tuned_at, self.tuned_kernel = db.shape_key(*tuned[1]["shape"]), tuned[0]
            self.tuned_on = tuned[1].get("tuned_on")
            self.tuned_split = heuristics.entry_split(tuned[1])
            self.resident = tuned[1].get("resident")
        else:
            base, self.source = self.kernel.defaults_for(queue.device), "defaults"
        self.params = self.kernel.resolve(params, base=base)
        if params and set(params) >= set(self.params):   # nothing of the base is left
            self.source, self.tuned_at, self.tuned_kernel = "given", None, None
            self.tuned_on = None
        elif params:
            self.source += "+given"
        if self.params != base:              # measured for the entry's parameters only
            self.tuned_split = self.resident = None
        self.kernel.check(self.params, queue.device)
        if self.split_k != "auto" and self.split_k > 1 and not self.kernel.split_k:
            which = "" if kernel is not None else " (this device's tuned entry for the shape)"
            raise ValueError(f"kernel {self.kernel.key} ({self.kernel.name}){which} cannot cut k "
                             f"into slices; split_k={self.split_k} needs one that can: "
                             + ", ".join(k.key for k in kernels.GEMM.values() if k.split_k))
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
        self._side: cl.CommandQueue | None = None    # side_queue(), made on first use
        if workspace is not None and not isinstance(workspace, Workspace):
            raise TypeError(f"workspace must be a clgemm.gemm.Workspace, not "
                            f"{type(workspace).__name__}")
        if workspace is not None and workspace.context != queue.context:
            raise ValueError("workspace belongs to another OpenCL context than the queue")
        self._work = workspace or Workspace(queue.context)
        self.local = self.kernel.geometry.local(self.params)
        self.align = self.kernel.geometry.vector(self.params)

    def at(self, shape: tuple[int, int, int]) -> GemmPlan:
        """The same kernel at another shape (its tuned entry there, unpadded), sharing this
        plan's workspace: its launches follow this plan's on one in-order queue (a peeled
        product's thin parts, layout._Layout.peeled)."""
        return GemmPlan(self.queue, self.kernel.key, shape=shape, pad="no",
                        transposed_by=self.transposed_by, workspace=self._work)

    def side_queue(self) -> cl.CommandQueue:
        """A second queue on this plan's device, for a guarded kernel's scan that runs
        beside the kernel (guard.Beside); it profiles where the plan's queue does."""
        if self._side is None:
            self._side = cl.CommandQueue(self.queue.context, self.queue.device,
                                         properties=self.queue.properties)
        return self._side

    # the decisions, for this configuration (clgemm.heuristics)
    def loads(self, m: int, n: int, k: int, floats: bool = False) -> str:
        return heuristics.loads(self.kernel, self.params, (m, n, k), floats)

    def stages_c(self, m: int, n: int, k: int) -> bool:
        return heuristics.stages_c(self.kernel, self.params, (m, n, k), self.facts)

    def pads(self, m: int, n: int, k: int, floats: bool = False) -> bool:
        return heuristics.pads(self.kernel, self.params, (m, n, k), self.facts, self.pad, floats)

    def launched(self, m: int, n: int, k: int, floats: bool = False,
                 copied: tuple[bool, bool] = (False, False),
                 slices: int = 1) -> tuple[int, int, int]:
        return heuristics.launched(self.kernel, self.params, (m, n, k), self.facts, self.pad,
                                   floats, copied, slices)

    def reads_floats(self, m: int, n: int, k: int, copied: tuple[bool, bool]) -> bool:
        return heuristics.reads_floats(self.kernel, self.params, (m, n, k), self.facts, self.pad,
                                       copied)

    def tiles(self, m: int, n: int, k: int) -> tuple[int, int]:
        return heuristics.tiles(self.kernel, self.params, (m, n, k))

    def splits(self, m: int, n: int, k: int, asked: int | str | None = None,
               floats: bool = False) -> int:
        """heuristics.splits, kept (_kept): a new shape's layout asks it about ten times of
        one product (decide, tail, groups), half of that layout's host time on pocl."""
        return self._kept(("splits", m, n, k, asked, floats), lambda: heuristics.splits(
            self.kernel, self.params, (m, n, k), self.facts,
            self.split_k if asked is None else asked, self.tuned_split, self.pad,
            self.resident, floats))

    def tail(self, m: int, n: int, k: int) -> tuple[int, int] | None:
        """(tail_from, slices) of heuristics.tail_split, or None: never with split-K; kept."""
        def spread():
            if self.resident is None or self.splits(m, n, k) > 1:
                return None
            r = heuristics.resident(self.kernel, self.params, (m, n, k), self.resident)
            return heuristics.tail_split(self.kernel, self.params, (m, n, k), self.facts, r)
        return self._kept(("tail", m, n, k), spread)

    def _kept(self, question: tuple, answer: Callable[[], object]):
        """`question`'s answer, worked out once for what answers depend on, which a caller
        may set after construction: facts, parameters, their tuned slices and residents,
        the slices and padding asked for."""
        state = (self.facts, self.kernel.key, tuple(self.params.items()), self.split_k,
                 self.pad, self.tuned_split,
                 None if self.resident is None else tuple(self.resident.items()))
        held = self._kept_for
        if (held is None or held[0] is not state[0] or held[1:] != state[1:]
                or len(self._answers) > 256):         # (one plan asked at many shapes)
            self._kept_for, self._answers = state, {}
        if question not in self._answers:
            self._answers[question] = answer()
        return self._answers[question]

    def tail_sums(self, m: int, n: int, k: int, spread: tuple[int, int]) -> tuple[int, int]:
        """The shape of tail_split's partial sums as one matrix: a TSM x TSN block a piece."""
        tm, tn, _ = heuristics.tile_of(self.kernel, self.params)
        return (self.tiles(m, n, k)[0] - spread[0]) * spread[1] * tm, tn

    def peel(self, m: int, n: int, k: int, floats: bool = False,
             guarded: bool = False) -> tuple[int, int] | None:
        """heuristics.peel at (m, n, k) with the resident groups the tuner recorded for these
        parameters (none for defaults: no peel), where the call leaves the slices of k to
        the heuristics; never for the float-at-a-time build (`floats`: operands read where
        they lie) nor a guarded launch (clgemm.guard)."""
        if self.split_k != "auto" or floats or guarded:
            return None
        return heuristics.peel(self.kernel, self.params, (m, n, k), self.facts, self.resident,
                               self.tuned_split)

    def groups(self, m: int, n: int, k: int, slices: int | None = None,
               floats: bool = False) -> int:
        """Slices of k within each work-group (heuristics.group_slices) of the launch at
        (m, n, k) in `slices` slices of k (default: splits()), `floats` for the
        float-at-a-time build, halved until the larger group fits the device; 1 where the
        launch spreads its last wave (tail)."""
        s = self.splits(m, n, k, floats=floats) if slices is None else slices
        if s == 1 and self.tail(m, n, k) is not None:
            return 1
        kg = heuristics.group_slices(self.kernel, self.params, (m, n, k), self.facts, s, floats)
        while kg > 1 and not self._group_fits(kg):
            kg //= 2
        return kg

    def _group_fits(self, kg: int) -> bool:
        """Whether KG sets of this configuration's work-items fit one work-group here: its
        work-items, its local memory (KG tiles' buffers and the sums' scratch, as the
        kernel's header counts them) and, on NVIDIA, the KG build's registers."""
        dev = self.queue.device
        key = (dev.int_ptr, self.kernel.key, tuple(sorted(self.params.items())), kg)
        if key not in _group_fit:
            (lx, ly), (tm, tn) = self.local, self.kernel.geometry.tile(self.params)
            need = kg * self.kernel.geometry.local_bytes(self.params) + 4 * tm * tn
            stack = kg * self.kernel.geometry.stack_bytes(self.params)
            bad = devmod.launch_violations(dev, lx, ly * kg, need, stack)
            if not bad:
                fp = build.footprint(self.queue.context, self.kernel, self.params,
                                     (f"-DKG={kg}",))
                bad = devmod.launch_violations(dev, lx, ly * kg, need, stack, fp)
            _group_fit[key] = not bad
        return _group_fit[key]

    def kmajor_a(self, m: int, n: int, k: int) -> bool:
        return heuristics.kmajor_a(self.kernel, (m, n, k), self.facts, self.transposed_by)

    def columns_first(self, m: int, n: int, k: int) -> bool:
        return heuristics.columns_first(self.kernel, self.params, (m, n, k), self.facts)

    def decide(self, m: int, n: int, k: int, copied: tuple[bool, bool],
               guard: bool = False) -> Decisions:
        """The launch decisions for an m x n x k product whose left and right operands
        (`copied`) have rows that are not whole vectors and lie where the kernel would
        read them: the float-at-a-time build or copies, padding, C's edges apart, and the
        main launch's slices of k, spread last wave and order of tiles. With `guard`, a
        guarded kernel (7) runs guarded, and nothing is peeled."""
        floats = any(copied) and self.reads_floats(m, n, k, copied)
        guarded = guard and self.kernel.guarded
        cut = self.peel(m, n, k, floats, guarded)
        # copies padded along k only for a launch unsplit as it stands (pads_depth)
        whole = 1 if cut is not None else self.splits(m, n, k, floats=floats)
        launched = self.launched(m, n, k, floats, copied, whole)
        main = launched if cut is None else (*cut, launched[2])
        # peeled: unsplit; unpadded: the count already taken
        splits = (1 if cut is not None else whole if main == (m, n, k)
                  else self.splits(*main, floats=floats))
        return Decisions(floats, launched != (m, n, k), launched, cut, main, splits,
                         self.tail(*main), self.columns_first(*main), guarded,
                         self.groups(*main, splits, floats))

    def describe(self, m: int, n: int, k: int, guard: bool) -> dict:
        """What a product of this shape launches with row-major operands: the kernel, its
        parameters and where they came from, and the launch decisions (Plan.describe)."""
        kmajor = bool(self.reads[0] and self.kmajor_a(m, n, k))
        d = self.decide(m, n, k, self.dense_copied(m, n, k), guard)
        # C's rows staged (C_ROWS) in the main launch's build, for an output of n floats a row
        _, opts = self.options_of(*d.main, kmajor, False, d.splits,
                                  self.c_unaligned(d.splits, n), 0, d.columns_first,
                                  d.floats, d.group_slices)
        return {"kernel": self.kernel.key, "params": dict(self.params),
                "params_source": self.source, "tuned_at": self.tuned_at,
                "tuned_kernel": self.tuned_kernel, "tuned_on": self.tuned_on,
                "splits": d.splits, "padded": d.padded, "floats": d.floats, "tail": d.tail,
                "a_kmajor": kmajor, "columns_first": d.columns_first, "peel": d.peel,
                "guarded": d.guarded, "group_slices": d.group_slices,
                "c_rows": "-DC_ROWS" in opts}

    def dense_copied(self, m: int, n: int, k: int) -> tuple[bool, bool]:
        """decide()'s `copied` for dense row-major device operands, A m x k and B k x n (rows
        of k and n floats, as most callers hold them), as layout.prepare finds it: rows
        not whole vectors, read where they lie (A not turned K-major first). describe() and
        the tuner (evaluate.Evaluator) ask it alike."""
        kmajor = bool(self.reads[0] and self.kmajor_a(m, n, k))
        return bool(k % self.align) and not kmajor, bool(n % self.align)

    def c_unaligned(self, slices: int, ldc: int) -> bool:
        """Whether the gemm kernel writes a C whose rows are not whole vectors apart (the
        C_UNALIGNED build): bound() and describe() ask alike. Split-K's product goes to a
        workspace with aligned rows, and only its sum writes C."""
        return slices == 1 and ldc % self.align != 0

    def workspace_fits(self, slices: int, m: int, n: int) -> bool:
        return heuristics.workspace_fits(slices, m, n, heuristics.SPLIT_ROW, self.facts)

    def residents(self) -> dict[str, int] | None:
        """Work-groups of this configuration resident per compute unit, for the build with
        bounds checks and the EXACT one; None where the device does not say (see
        build.footprint). The tuner records it with its winner."""
        checked = self._resident_groups(())
        exact = self._resident_groups(("-DEXACT",)) if checked and self.kernel.exact else checked
        return {"checked": checked, "exact": exact} if checked and exact else None

    def _resident_groups(self, extra: tuple[str, ...]) -> int | None:
        """Work-groups of the build with options `extra` resident per compute unit, from
        the compiler's register count (build.footprint); None where it gives none."""
        fp = build.footprint(self.queue.context, self.kernel, self.params, extra)
        return fp and devmod.resident_groups(self.queue.device, int(np.prod(self.local)), *fp)

    def workspace(self, floats: int):
        """The split-K partial sums' buffer, kept for the next launch."""
        return self._work.get(floats)

    def compiled(self, m: int, n: int, k: int, a_kmajor: bool = False,
                 b_nmajor: bool = False, split_k: int | str | None = None,
                 c_unaligned: bool = False, guard: int = 0,
                 columns_first: bool | None = None, floats: bool = False,
                 groups: int | None = None, stages: bool | None = None) -> cl.Program:
        """The program for a launch at (m, n, k) with these operand layouts, built on first
        use from options_of's options: one build per variant (EXACT; CLAMP: k in whole
        tiles, m or n not; A_KMAJOR, B_NMAJOR, SPLIT_K, C_UNALIGNED: C's leading dimension
        is not a multiple of the vector width; COLUMNS_FIRST: the tiles' launch order; TAIL:
        tail_split's launch; GUARD=1 or 2 for clgemm.guard; AB_UNALIGNED with `floats`: A
        and B read a float at a time, reads_floats), since each drops or adds code that
        costs registers in the others. `columns_first`, `groups` (KG: slices of k within a
        group) and `stages` (stages_c) override what this shape takes (the tuner
        checks at another shape the build it times)."""
        key, opts = self.options_of(m, n, k, a_kmajor, b_nmajor, split_k, c_unaligned, guard,
                                    columns_first, floats, groups, stages)
        if key not in self._programs:
            self._programs[key] = build.program(self.queue.context, self.kernel, self.params, opts)
        return self._programs[key]

    def options_of(self, m: int, n: int, k: int, a_kmajor: bool = False,
                   b_nmajor: bool = False, split_k: int | str | None = None,
                   c_unaligned: bool = False, guard: int = 0,
                   columns_first: bool | None = None, floats: bool = False,
                   groups: int | None = None,
                   stages: bool | None = None) -> tuple[tuple, tuple[str, ...]]:
        """(cache key, compiler options) of the program compiled() builds for these
        arguments, without building it: describe() reports its C_ROWS from them."""
        if floats and not self.kernel.unaligned:
            raise ValueError(f"kernel {self.kernel.key} ({self.kernel.name}) reads operands "
                             f"whose rows are whole vectors only")
        loads = self.loads(m, n, k, floats)
        s = self.splits(m, n, k, split_k, floats)
        split = s > 1
        spread = not split and self.tail(m, n, k) is not None
        kg = 1 if spread else self.groups(m, n, k, s, floats) if groups is None else groups
        layout = (a_kmajor, b_nmajor, split, c_unaligned,
                  self.columns_first(m, n, k) if columns_first is None else columns_first)
        if (a_kmajor or b_nmajor) and not self.kernel.layouts:
            raise ValueError(f"kernel {self.kernel.key} ({self.kernel.name}) reads row-major "
                             f"operands only")
        opts = list(_LOADS_OPTION.get(loads, ()))
        opts += [o for o, on in zip(("-DA_KMAJOR", "-DB_NMAJOR", "-DSPLIT_K",
                                     "-DC_UNALIGNED", "-DCOLUMNS_FIRST"), layout) if on]
        opts += ["-DTAIL"] if spread else []
        opts += [f"-DGUARD={guard}"] if guard else []
        opts += [f"-DKG={kg}"] if kg > 1 else []
        # C stored a float at a time, a row of sums at a time (heuristics.stages_c), where
        # that build keeps this one's resident groups
        stages = self.stages_c(m, n, k) if stages is None else stages
        rows = c_unaligned and kg == 1 and not spread and stages \
            and self._rows_keep_residents(tuple(opts))
        key = (loads, *layout) + (("tail",) if spread else ()) + ((guard,) if guard else ()) \
            + ((("kg", kg),) if kg > 1 else ()) + (("rows",) if rows else ())
        return key, tuple(opts) + (("-DC_ROWS",) if rows else ())

    def _rows_keep_residents(self, opts: tuple[str, ...]) -> bool:
        """Whether the build `opts` with C_ROWS holds as many work-groups a compute unit as
        without it: staging C's rows cost a point 32 registers (127 -> 159 with 128
        work-items, 4 groups a unit -> 3) and 27% of its call on an H100. Unknown (no
        register count: not NVIDIA) counts as no."""
        dev = self.queue.device
        key = (dev.int_ptr, self.kernel.key, tuple(sorted(self.params.items())), opts)
        if key not in _rows_fit:
            held = self._resident_groups(opts)
            _rows_fit[key] = bool(held) and held == self._resident_groups(opts + ("-DC_ROWS",))
        return _rows_fit[key]

    def bound(self, a: Matrix, b: Matrix, c: Matrix, alpha: float = 1.0, beta: float = 0.0,
              a_kmajor: bool = False, b_nmajor: bool = False,
              split_k: int | str | None = None, guard: tuple[int, object] | None = None,
              columns_first: bool | None = None, floats: bool = False,
              groups: int | None = None,
              stages: bool | None = None) -> tuple[list[build.Bound], list[tuple]]:
        """c = alpha * op(a) @ op(b) + beta * c on row-major device matrices (op(a) = a^T with
        `a_kmajor`, op(b) = b^T with `b_nmajor`) as bound kernels, in order (two with
        split-K), and where alpha and beta sit among their arguments ((bound, index, name)),
        so that a cached layout can change them. op(a) and op(b) may be larger than c
        (zero-padded whole tiles): the kernel writes only c's rows and columns. `guard`:
        (GUARD code, flag buffer) of clgemm.guard, whose two arguments end the kernel's;
        `columns_first`, `floats`, `groups`, `stages`: as compiled() (with `floats`, a and b
        may have any leading dimension and width)."""
        m, k = (a.cols, a.rows) if a_kmajor else (a.rows, a.cols)
        n = b.rows if b_nmajor else b.cols
        operands.check_depth(k)
        gx, gy = self.kernel.geometry.global_size(self.params, m, n)
        s = self.splits(m, n, k, split_k, floats)
        unaligned = self.c_unaligned(s, c.ld)
        code, flag = guard or (0, None)
        if code and s > 1:
            raise ValueError("a guarded launch computes in one slice of k")
        # KG sets of work-items along dimension 1, decided once for the build and the launch
        kg = self.groups(m, n, k, s, floats) if groups is None else groups
        prg = self.compiled(m, n, k, a_kmajor, b_nmajor, split_k, unaligned, code, columns_first,
                            floats, kg, stages)
        guarded = (flag, np.int32(0)) if code else ()
        q = self.queue
        spread = self.tail(m, n, k) if s == 1 else None
        if spread is not None:
            return self._spread(prg, spread, a, b, c, alpha, beta, (m, n, k), guarded)
        # with split-K the gemm kernel writes s slices of the partial product, each c.rows x
        # ldw (c's columns rounded up to whole float4s), into the workspace, and
        # splitk_reduce sums them into c, at any leading dimension, with alpha and beta
        ld = c.ld if s == 1 else rounded(c.cols, heuristics.SPLIT_ROW)
        out, ab = ((c.buf, (alpha, beta)) if s == 1
                   else (self.workspace(s * c.rows * ld), (1.0, 0.0)))
        rows, cols = np.int32(c.rows), np.int32(c.cols)
        gemm = build.bind(q, prg, "gemm", (gx, gy * kg, s), (self.local[0], self.local[1] * kg, 1),
                          (rows, cols, np.int32(k), np.float32(ab[0]), a.buf,
                           np.int32(a.ld), b.buf, np.int32(b.ld), np.float32(ab[1]), out,
                           np.int32(ld)) + guarded)
        if s == 1:
            return [gemm], [(gemm, 3, "alpha"), (gemm, 8, "beta")]
        total = build.bind(q, prg, "splitk_reduce", (-(-c.cols // 256) * 64, -(-c.rows // 4) * 4),
                           (64, 4),
                           (rows, cols, np.int32(s), np.float32(alpha), out, np.int32(ld),
                            np.float32(beta), c.buf, np.int32(c.ld)))
        return [gemm, total], [(total, 3, "alpha"), (total, 6, "beta")]

    def _spread(self, prg: cl.Program, spread: tuple[int, int], a: Matrix, b: Matrix,
                c: Matrix, alpha: float, beta: float, shape: tuple[int, int, int],
                guarded: tuple) -> tuple[list[build.Bound], list[tuple]]:
        """bound()'s launches at `shape` for tail_split's (tail_from, slices): the TAIL
        build over tail_from whole tiles and the others' pieces of k, whose partial sums
        tail_reduce adds into c with alpha and beta (both guarded alike)."""
        start, slices = spread
        m, n, k = shape
        left = self.tiles(m, n, k)[0] - start        # the tiles run as pieces
        tm, tn, _ = heuristics.tile_of(self.kernel, self.params)
        work = self.workspace(math.prod(self.tail_sums(m, n, k, spread)))
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

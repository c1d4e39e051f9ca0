"""What a registry entry is (clgemm.kernels holds the entries): a kernel's parameters and
their spaces, the constraints a parameter set must meet, and the launch geometry a set
maps to, with the checks that a set or a device limit imposes."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from . import device as devmod

Params = dict[str, int]
_CPU = 2  # CL_DEVICE_TYPE_CPU


@dataclass(frozen=True)
class Param:
    name: str
    default: int
    space: tuple[int, ...]
    doc: str = ""


@dataclass(frozen=True)
class Constraint:
    text: str                                  # shown to the user when violated
    holds: Callable[[Mapping[str, int]], bool]


@dataclass(frozen=True)
class Geometry:
    """How a parameter set maps onto the work-group grid.

    Dimension 0 of the NDRange runs along the columns of the output, dimension 1 along
    its rows; a work-group covers a `tile` of the output with `local` work-items.
    """
    tile: Callable[[Mapping[str, int]], tuple[int, int]]     # (rows, cols) per work-group
    local: Callable[[Mapping[str, int]], tuple[int, int]]    # (dim0, dim1) work-items
    local_bytes: Callable[[Mapping[str, int]], int]
    vector: Callable[[Mapping[str, int]], int] = lambda p: 1  # alignment of ld, in floats
    # bytes a work-item's values that live across a barrier take on pocl's CPU device,
    # where they sit on a worker thread's stack (device.work_group_stack): an upper bound
    # of the frames pocl 3.0 built for the registry's kernels (see stack_bytes)
    context: Callable[[Mapping[str, int]], int] = lambda p: 1024
    depth: Callable[[Mapping[str, int]], int] = lambda p: p.get("TSK", 1)  # k of a tile step

    def stack_bytes(self, p: Mapping[str, int]) -> int:
        """The stack frame pocl's work-group function needs, estimated from above: the
        work-items' context plus 64 KiB for the function's own."""
        lx, ly = self.local(p)
        return lx * ly * self.context(p) + 64 * 1024

    def global_size(self, p: Mapping[str, int], rows: int, cols: int) -> tuple[int, int]:
        tr, tc = self.tile(p)
        lx, ly = self.local(p)
        return (-(-cols // tc) * lx, -(-rows // tr) * ly)


@dataclass(frozen=True)
class Kernel:
    key: str                 # "1".."8" for GEMM, "naive" etc. for transposes, "matvec-*"
    name: str
    source: str              # file name under kernels/
    params: tuple[Param, ...]
    geometry: Geometry
    constraints: tuple[Constraint, ...] = ()
    kind: str = "gemm"       # "gemm", "matvec" or "transpose"
    technique: str = ""
    # Overrides of the (H200-measured) defaults for CPU devices, where pocl runs small
    # work-groups far faster; measured with pocl 3.0 on a 2-core EPYC at 256^3.
    cpu_defaults: Mapping[str, int] = field(default_factory=dict)
    shuffle: bool = False    # uses shuffle.cl: the build picks the device's mechanism
    mma: bool = False        # issues tensor-core MMAs by inline PTX where the device has them
    wgmma: bool = False      # issues Hopper's warpgroup MMAs (sm_90a PTX: build.sm90a_ptx)
    # taken only by name: gemm() without a kernel passes over its tuned entries (kernel
    # 7's TF32 split gives NaN for Inf and TF32's precision to operands below ~1e-34)
    opt_in: bool = False
    # its products differ from float's on some inputs: gemm() and Plan scan the operands
    # and hand such products to an FMA kernel (clgemm/guard.py; GUARD in common.cl)
    guarded: bool = False
    # honours -DEXACT (common.cl): launches whose shape divides the tiles use a build
    # without bounds checks on the tile loads
    exact: bool = False
    # honours -DCLAMP (common.cl): launches whose k is whole tiles but whose m or n is not
    # take a build without bounds checks whose edge tiles re-read C's last row or column
    clamp: bool = False
    # honours -DK_RAGGED with -DCLAMP: launches whose k is whole vectors but not whole tiles
    # count k's tiles from its end, so that only the first one checks k
    ragged: bool = False
    # honours -DC_ROWS with -DC_UNALIGNED: stages each row of sums in a tile buffer, so that
    # a C whose rows are not whole vectors apart is stored in runs of consecutive floats
    c_rows: bool = False
    # reads A stored K x M (-DA_KMAJOR) and B stored N x K (-DB_NMAJOR) as they lie
    layouts: bool = False
    # honours -DCOLUMNS_FIRST: its groups take C's tiles down columns (heuristics.columns_first)
    orders: bool = False
    # honours -DAB_UNALIGNED: reads A and B a float at a time, at any leading dimension and
    # width, where they lie instead of through aligned copies (heuristics.reads_floats)
    unaligned: bool = False
    # can cut k into slices summed by a second kernel, splitk_reduce (split-K)
    split_k: bool = False
    # has a TAIL build: a launch's last, part-full wave of tiles spread out as pieces of k
    # (heuristics.tail_split), summed by tail_reduce
    tail: bool = False
    # the kernel whose parameters mean the same here (6 is 5 with another epilogue): the
    # tuner starts each from the other's winners too
    same_params_as: str | None = None
    # has the KG build: k cut into slices within a work-group (heuristics.group_slices)
    group_slices: bool = False
    _by_name: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {p.name: p for p in self.params})

    @property
    def defaults(self) -> Params:
        return {p.name: p.default for p in self.params}

    def defaults_for(self, device=None) -> Params:
        """The registry defaults for this kind of device (GPU unless it is a CPU)."""
        out = self.defaults
        if device is not None and device.type & _CPU and "oclgrind" not in device.platform.name.lower():
            out.update(self.cpu_defaults)
        return out

    def resolve(self, overrides: Mapping[str, object] | None = None,
                base: Mapping[str, int] | None = None) -> Params:
        """`base` (default: the defaults) updated with `overrides`, each checked to be a known
        integer parameter from the declared space. Raises ValueError naming the bad one."""
        if overrides is not None and not isinstance(overrides, Mapping):
            raise TypeError(f"params must be a mapping of parameter name to value, such as "
                            f"{{'TSM': 64}}, not {type(overrides).__name__}")
        out = dict(base) if base is not None else self.defaults
        for name, value in (overrides or {}).items():
            if name not in self._by_name:
                known = ", ".join(self._by_name) or "none"
                raise ValueError(f"kernel {self.key} ({self.name}) has no parameter {name!r}; "
                                 f"its parameters are: {known}")
            value = _integer(value)
            if value is None:
                raise ValueError(f"parameter {name}={overrides[name]!r} of kernel {self.key} "
                                 f"must be an integer")
            space = self._by_name[name].space
            if value not in space:
                raise ValueError(f"{name}={value} is outside kernel {self.key}'s space for {name}: "
                                 f"{', '.join(map(str, space))}")
            out[name] = value
        return out

    def violations(self, p: Mapping[str, int], device=None,
                   footprint: tuple[int, int] | None = None) -> list[str]:
        """Every constraint `p` breaks, as text; device limits are checked when given: the
        work-group size and its extent along each dimension, local memory (on NVIDIA the
        probed limit, device.local_mem_limit), pocl's work-group stack
        (device.work_group_stack), and, with a build's `footprint` (registers per
        work-item, local bytes: build.footprint, NVIDIA), its registers and local memory.
        Parameters `p` leaves out take their registry defaults, as in a build."""
        p = {**self.defaults, **p}
        bad = [c.text for c in self.constraints if not _holds(c, p)]
        if bad:  # geometry of a broken point may not even be computable
            return bad
        if device is not None:
            lx, ly = self.geometry.local(p)
            need = self.geometry.local_bytes(p)
            bad += devmod.launch_violations(device, lx, ly, need, self.geometry.stack_bytes(p),
                                            footprint)
        return bad

    def check(self, p: Mapping[str, int], device=None,
              footprint: tuple[int, int] | None = None) -> None:
        bad = self.violations(p, device, footprint)
        if bad:
            shown = " ".join(f"{k}={v}" for k, v in p.items())
            raise ValueError(f"kernel {self.key} ({self.name}) with {shown} violates: " + "; ".join(bad))

    def whole_tiles(self, p: Mapping[str, int], m: int, n: int, k: int) -> tuple[int, int, int]:
        """(m, n, k) rounded up to whole tiles (geometry.depth deep along k)."""
        tm, tn = self.geometry.tile(p)
        tk = self.geometry.depth(p)
        return -(-m // tm) * tm, -(-n // tn) * tn, -(-k // tk) * tk

    def divides(self, p: Mapping[str, int], m: int, n: int, k: int) -> bool:
        """Whether (m, n, k) is a whole number of tiles, so an EXACT build is correct."""
        return self.whole_tiles(p, m, n, k) == (m, n, k)

    def space(self) -> Iterator[Params]:
        """Every point of the declared parameter space, constraints not yet applied."""
        names = [p.name for p in self.params]
        for values in itertools.product(*(p.space for p in self.params)):
            yield dict(zip(names, values))

    def space_size(self) -> int:
        return math.prod(len(p.space) for p in self.params)


def _integer(value: object) -> int | None:
    """An int from an int-like value or a decimal string; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        v = value.strip()
        digits = v[1:] if v.startswith("-") else v     # one sign at most: int() reads no more
        return int(v) if v.isascii() and digits.isdecimal() else None
    try:
        if int(value) == value:
            return int(value)
    except (TypeError, ValueError, OverflowError):
        pass
    return None


def _holds(c: Constraint, p: Mapping[str, int]) -> bool:
    try:
        return bool(c.holds(p))
    except ZeroDivisionError:
        return False

"""The kernel registry: the one place that knows each kernel's source, parameters,
constraints and launch geometry. `run`, `tune`, `bench` and `gemm()` all read it."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

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
    _by_name: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {p.name: p for p in self.params})

    @property
    def defaults(self) -> Params:
        return {p.name: p.default for p in self.params}

    @property
    def siblings(self) -> list[str]:
        """The kernels whose parameters mean the same as this one's (`same_params_as`, either
        way round): each starts from the others' tuned entries where it has none of its own."""
        return [k.key for k in GEMM.values() if k.key != self.key
                and (k.same_params_as == self.key or k.key == self.same_params_as)]

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


# --------------------------------------------------------------------------- GEMM

def _square(p):      # kernels 1-2: TS x TS work-items, one output each
    return (p["TS"], p["TS"])


_TS = Param("TS", 32, (4, 8, 16, 32), "tile side; the work-group is TS x TS")

_BLOCKED = (
    Constraint("TSM % WPTM == 0", lambda p: p["TSM"] % p["WPTM"] == 0),
    Constraint("TSN % WPTN == 0", lambda p: p["TSN"] % p["WPTN"] == 0),
    # 256 accumulators cannot live in NVIDIA's 255 registers per work-item, and CPUs spill
    # them too; such blocks also unroll into thousands of FMAs that take up to 47 s to
    # compile on the H200, where they made up most of the tuner's compile time.
    Constraint("WPTM*WPTN <= 128 (the accumulators fit in registers)",
               lambda p: p["WPTM"] * p["WPTN"] <= 128),
)


def _nt(p):
    return (p["TSM"] // p["WPTM"]) * (p["TSN"] // p["WPTN"])


def _blocked_geometry(local_bytes, vector=lambda p: 1, context=lambda p: 1024) -> Geometry:
    return Geometry(tile=lambda p: (p["TSM"], p["TSN"]),
                    local=lambda p: (p["TSN"] // p["WPTN"], p["TSM"] // p["WPTM"]),
                    local_bytes=local_bytes, vector=vector, context=context)


# pocl's context per work-item (Geometry.context): bounds from above of the work-group
# frames pocl 3.0 (LLVM 14) built for 84 configurations of kernels 1-7 and the naive and
# local transposes, 1 to 4096 work-items (the `sub rsp` of each work-group function,
# objdump, 2026-12-03); every frame measured is at most 0.75 of stack_bytes. Kernels 3
# and 4 keep the address of each unrolled local read (TSK x (WPTM + WPTN)) and the
# accumulators: a fit gives 8.0 * TSK * (WPTM + WPTN) + 13.2 * WPTM * WPTN + 64 bytes.
# Kernel 5 prefetches through registers and keeps far less (122-1694 bytes); kernel 6's
# register exchange keeps about 60-85 bytes per accumulator; kernel 7's emulated MMA
# 60-220 (5 configurations measured, up to 128 accumulators); the transposes under 30.
def _context_blocked(p) -> int:
    return 10 * p["TSK"] * (p["WPTM"] + p["WPTN"]) + 16 * p["WPTM"] * p["WPTN"] + 512


def _context_prefetched(p) -> int:
    return 2 * p["TSK"] * (p["WPTM"] + p["WPTN"]) + 16 * p["WPTM"] * p["WPTN"] + 256


def _context_shuffled(p) -> int:
    return 4 * p["TSK"] * (p["WPTM"] + p["WPTN"]) + 96 * p["WPTM"] * p["WPTN"] + 512


def _vector_constraints() -> tuple[Constraint, ...]:
    return _BLOCKED + (
        Constraint("WIDTH divides WPTM", lambda p: p["WPTM"] % p["WIDTH"] == 0),
        Constraint("WIDTH divides WPTN", lambda p: p["WPTN"] % p["WIDTH"] == 0),
        Constraint("WIDTH divides TSK", lambda p: p["TSK"] % p["WIDTH"] == 0),
        Constraint("A-tile vectors TSM*TSK/WIDTH split evenly over the work-group",
                   lambda p: (p["TSM"] * p["TSK"] // p["WIDTH"]) % _nt(p) == 0),
        Constraint("B-tile vectors TSK*TSN/WIDTH split evenly over the work-group",
                   lambda p: (p["TSK"] * p["TSN"] // p["WIDTH"]) % _nt(p) == 0),
    )


def _vector_tile_bytes(p) -> int:
    return 4 * p["TSK"] * (p["TSM"] + p["PAD"] * p["WIDTH"] + p["TSN"])


# Tiles down to 4: tuned winners for skinny products sat on each earlier edge of the space
# (a tile of 16 rows computes 16 for m = 1; TSM=4 gave 1083 GFLOPS at 1 x 4096 x 4096 on the
# H200 against 949 for the best 16-row tile; docs/levers.md)
_TILE = (4, 8, 16, 32, 64, 128, 256)
_WPT = (1, 2, 4, 8, 16, 32)   # 16 won on the H200 (kernel 5 WPTM): 32 keeps it inside


def _vector_params(tsm, tsn, tsk, wptm, wptn, width, pad) -> tuple[Param, ...]:
    return (
        Param("TSM", tsm, _TILE, "rows of C per work-group"),
        Param("TSN", tsn, _TILE, "columns of C per work-group"),
        Param("TSK", tsk, (4, 8, 16, 32), "depth of the local tiles"),
        Param("WPTM", wptm, _WPT, "rows of C per work-item"),
        Param("WPTN", wptn, _WPT, "columns of C per work-item"),
        Param("WIDTH", width, (1, 2, 4), "floats per vector load"),
        Param("PAD", pad, (0, 1), "pad each k-row of the A tile by one vector"),
    )


_VECTOR_CPU = dict(TSM=32, TSN=64, TSK=16, WPTM=8, WPTN=8, WIDTH=4, PAD=0)

GEMM: dict[str, Kernel] = {}
MATVEC: dict[str, Kernel] = {}
TRANSPOSE: dict[str, Kernel] = {}
_TABLES = {"gemm": GEMM, "matvec": MATVEC, "transpose": TRANSPOSE}


def _register(k: Kernel) -> Kernel:
    _TABLES[k.kind][k.key] = k
    return k


_register(Kernel(
    key="1", name="naive", source="1_naive.cl", technique="one work-item per C element",
    params=(_TS,), cpu_defaults={"TS": 4},
    geometry=Geometry(tile=_square, local=_square, local_bytes=lambda p: 0,
                      context=lambda p: 64),         # no barrier: nothing kept
))

_register(Kernel(
    key="2", name="tiled", source="2_tiled.cl", technique="local-memory tiles",
    params=(_TS,), cpu_defaults={"TS": 8},
    geometry=Geometry(tile=_square, local=_square, local_bytes=lambda p: 2 * 4 * p["TS"] ** 2,
                      context=lambda p: 20 * p["TS"] + 320),   # 606 bytes measured at TS=32
))

_register(Kernel(
    key="3", name="register-blocked", source="3_register_blocked.cl",
    technique="WPTM x WPTN outputs per work-item in registers",
    params=(
        Param("TSM", 128, _TILE, "rows of C per work-group"),
        Param("TSN", 128, _TILE, "columns of C per work-group"),
        Param("TSK", 8, (4, 8, 16, 32), "depth of the local tiles"),
        Param("WPTM", 8, _WPT, "rows of C per work-item"),
        Param("WPTN", 8, _WPT, "columns of C per work-item"),
    ),
    cpu_defaults=dict(TSM=32, TSN=32, TSK=16, WPTM=4, WPTN=4),
    constraints=_BLOCKED + (
        Constraint("A tile TSM*TSK splits evenly over the work-group",
                   lambda p: (p["TSM"] * p["TSK"]) % _nt(p) == 0),
        Constraint("B tile TSK*TSN splits evenly over the work-group",
                   lambda p: (p["TSK"] * p["TSN"]) % _nt(p) == 0),
    ),
    geometry=_blocked_geometry(lambda p: 4 * p["TSK"] * (p["TSM"] + p["TSN"]),
                               context=_context_blocked),
))

_register(Kernel(
    key="4", name="vectorized", source="4_vectorized.cl",
    technique="k-major A tile, WIDTH-wide global and local accesses",
    params=_vector_params(256, 64, 16, 8, 8, 4, 1),
    cpu_defaults=_VECTOR_CPU,
    constraints=_vector_constraints(),
    geometry=_blocked_geometry(_vector_tile_bytes, vector=lambda p: p["WIDTH"],
                               context=_context_blocked),
))

_register(Kernel(
    key="5", name="double-buffered", source="5_double_buffered.cl", exact=True, clamp=True,
    layouts=True, split_k=True, orders=True, unaligned=True,
    technique="two local buffers, next tile prefetched through registers",
    params=_vector_params(64, 128, 16, 16, 4, 4, 0),
    cpu_defaults=_VECTOR_CPU,
    constraints=_vector_constraints(),
    geometry=_blocked_geometry(lambda p: 2 * _vector_tile_bytes(p), vector=lambda p: p["WIDTH"],
                               context=_context_prefetched),
))

_register(Kernel(
    key="6", name="shuffle-epilogue", source="6_shuffle_epilogue.cl", shuffle=True, exact=True, clamp=True,
    layouts=True, split_k=True, orders=True, unaligned=True, same_params_as="5",
    technique="C written as 16-byte vectors after a register exchange by shuffle",
    params=_vector_params(64, 128, 16, 16, 4, 4, 0),
    cpu_defaults=_VECTOR_CPU,
    constraints=_vector_constraints() + (
        Constraint("4/WIDTH divides WPTM", lambda p: p["WPTM"] % (4 // p["WIDTH"]) == 0),
        Constraint("4/WIDTH divides TSN/WPTN",
                   lambda p: (p["TSN"] // p["WPTN"]) % (4 // p["WIDTH"]) == 0),
    ),
    # local memory counts the scratch that an emulated shuffle needs, on every device
    geometry=_blocked_geometry(lambda p: 2 * _vector_tile_bytes(p) + 4 * _nt(p),
                               vector=lambda p: 4, context=_context_shuffled),
))


def _mma_constraints() -> tuple[Constraint, ...]:
    return (
        Constraint("WM divides TSM", lambda p: p["TSM"] % p["WM"] == 0),
        Constraint("WN divides TSN", lambda p: p["TSN"] % p["WN"] == 0),
        Constraint("at most 8 warps per work-group", lambda p: _warps(p) <= 8),
        # 4 floats per MMA tile of 16 x 8; more than 128 leave too few registers for the
        # fragments and their TF32 split
        Constraint("WM*WN/32 <= 128 (the accumulators fit in registers)",
                   lambda p: p["WM"] * p["WN"] // 32 <= 128),
        # B's split fragments of a fresh sum's steps stay live across the warp's rows of
        # MMA tiles: 4 words a tile for a sum 8 deep, 8 for 16
        Constraint("accumulators + split B fragments <= 192 registers",
                   lambda p: p["WM"] * p["WN"] // 32 + p["FOLD"] // 2 * p["WN"] // 8 <= 192),
        Constraint("A-tile float4s TSM*TSK/4 split evenly over the work-group",
                   lambda p: (p["TSM"] * p["TSK"] // 4) % (32 * _warps(p)) == 0),
        Constraint("B-tile float4s TSK*TSN/4 split evenly over the work-group",
                   lambda p: (p["TSK"] * p["TSN"] // 4) % (32 * _warps(p)) == 0),
    )


def _warps(p) -> int:
    return (p["TSM"] // p["WM"]) * (p["TSN"] // p["WN"])


def _mma_local_bytes(p) -> int:
    # two buffers of tiles, and the scratch of the emulated MMA (6 words a lane), counted
    # on every device like kernel 6's shuffle scratch
    tiles = 2 * 4 * (p["TSM"] * p["TSK"] + p["TSK"] * p["TSN"])
    return tiles + 4 * 6 * 32 * _warps(p)


_register(Kernel(
    key="7", name="tensor-cores", source="7_tensor_cores.cl", mma=True, opt_in=True, exact=True,
    clamp=True, guarded=True,
    technique="tile steps on the tensor cores, three TF32 MMAs per float product",
    params=(
        Param("TSM", 128, (32, 64, 128, 256), "rows of C per work-group"),
        Param("TSN", 64, (32, 64, 128, 256), "columns of C per work-group"),
        Param("TSK", 16, (16, 32, 64), "depth of the local tiles"),
        Param("WM", 64, (16, 32, 64, 128), "rows of C per warp"),
        Param("WN", 32, (32, 64, 128), "columns of C per warp"),
        Param("FOLD", 16, (8, 16), "depth of the MMAs' fresh sums before a float add"),
    ),
    cpu_defaults=dict(TSM=32, TSN=64, TSK=16, WM=32, WN=64, FOLD=16),
    constraints=_mma_constraints(),
    geometry=Geometry(tile=lambda p: (p["TSM"], p["TSN"]),
                      local=lambda p: (32 * (p["TSN"] // p["WN"]), p["TSM"] // p["WM"]),
                      local_bytes=_mma_local_bytes, vector=lambda p: 4,
                      # pocl: 60-220 bytes per accumulator (its MMA is emulated)
                      context=lambda p: 320 * (p["WM"] * p["WN"] // 32) + 32 * p["TSK"] + 1024),
))

_register(Kernel(
    key="8", name="warpgroup-mma", source="8_warpgroup_mma.cl", wgmma=True, opt_in=True,
    exact=True, clamp=True, guarded=True, tail=True,
    technique="warpgroup MMAs (wgmma): B from local memory, A from registers, each float split once",
    params=(Param("TSM", 128, (64, 128), "rows of C per work-group: a warpgroup per 64"),
            Param("TSN", 128, (64, 128), "columns of C per work-group: the MMA's n")),
    cpu_defaults=dict(TSM=64, TSN=64),
    # two buffers of B's K-major h and l tiles (32 floats of k a row), and the emulated
    # MMAs' copy of A's fragments, counted on every device as kernel 7's scratch is
    geometry=Geometry(tile=lambda p: (p["TSM"], p["TSN"]), local=lambda p: (2 * p["TSM"], 1),
                      local_bytes=lambda p: 512 * p["TSN"] + 256 * p["TSM"],
                      vector=lambda p: 4, context=lambda p: 16 * p["TSN"] + 2048,
                      depth=lambda p: 32),
))

DEFAULT_GEMM = "5"

_register(Kernel(
    key="naive", name="naive", source="transpose_naive.cl", kind="transpose",
    technique="one work-item per element; strided writes",
    params=(Param("TS", 16, (4, 8, 16, 32), "tile side; the work-group is TS x TS"),),
    geometry=Geometry(tile=_square, local=_square, local_bytes=lambda p: 0),
))

_register(Kernel(
    key="local", name="local", source="transpose_local.cl", kind="transpose",
    technique="padded local-memory tile; coalesced reads and writes",
    params=(Param("TS", 64, (8, 16, 32, 64), "tile side"),
            Param("RPT", 8, (1, 2, 4, 8, 16), "rows moved per work-item")),
    constraints=(Constraint("RPT divides TS", lambda p: p["TS"] % p["RPT"] == 0),),
    geometry=Geometry(tile=_square, local=lambda p: (p["TS"], p["TS"] // p["RPT"]),
                      local_bytes=lambda p: 4 * p["TS"] * (p["TS"] + 1)),
))

_register(Kernel(
    key="shuffle", name="shuffle", source="transpose_shuffle.cl", kind="transpose", shuffle=True,
    technique="4x4 register blocks, two shuffle exchanges; each store writes 2 rows x 256 bytes",
    params=(Param("WARPS", 1, (1, 2, 4, 8), "warps (32 work-items, a 64x32 block each) per work-group"),),
    geometry=Geometry(tile=lambda p: (64 * p["WARPS"], 32),
                      local=lambda p: (32, p["WARPS"]),
                      local_bytes=lambda p: 4 * 32 * p["WARPS"]),
))

DEFAULT_TRANSPOSE = "local"

# ------------------------------------------------- matrix-vector (one row or column of C)
# gemm()'s path where m or n is 1 and nothing is named (clgemm.matvec), an entry per form;
# each is tuned where row-major operands take it (sweep: m = 1, dot: n = 1). Their pocl
# context is an estimate, not measured: a float4 sum and a few indices cross the barriers.
_UNROLL = Param("UNROLL", 8, (1, 2, 4, 8, 16), "loads each work-item keeps in flight")
_register(Kernel(
    key="matvec-sweep", name="matvec-sweep", source="matvec.cl", kind="matvec", split_k=True,
    technique="the vector runs down the matrix's rows: a work-item streams one float4 column",
    params=(Param("CV", 64, (4, 8, 16, 32, 64, 128, 256), "float4 columns a work-group covers"),
            Param("LANES", 8, (1, 2, 4, 8, 16, 32), "work-items that share the group's rows"),
            _UNROLL),
    geometry=Geometry(tile=lambda p: (1, 4 * p["CV"]), local=lambda p: (p["CV"], p["LANES"]),
                      local_bytes=lambda p: 16 * p["CV"] * p["LANES"], context=lambda p: 256),
))

_register(Kernel(
    key="matvec-dot", name="matvec-dot", source="matvec.cl", kind="matvec", split_k=True,
    technique="the vector runs along each row: a row's work-items add their float4 dots by a tree",
    params=(Param("LW", 32, (1, 2, 4, 8, 16, 32, 64, 128, 256), "work-items a row"),
            Param("RW", 8, (1, 2, 4, 8, 16, 32), "rows a work-group"), _UNROLL),
    geometry=Geometry(tile=lambda p: (p["RW"], 1), local=lambda p: (p["LW"], p["RW"]),
                      local_bytes=lambda p: 4 * p["LW"] * p["RW"], context=lambda p: 256),
))


def get(key: object, kind: str = "gemm") -> Kernel:
    """Look a kernel up by number or name among `kind`'s ("tunable": the GEMM kernels and
    the matrix-vector ones, which the tuner and the database know); the error lists them."""
    tables = (GEMM, MATVEC) if kind == "tunable" else (_TABLES[kind],)
    k = str(key).strip()
    for kern in (v for t in tables for v in t.values()):
        if k in (kern.key, kern.name):
            return kern
    valid = ", ".join(v.key + (f" ({v.name})" if v.name != v.key else "")
                      for t in tables for v in t.values())
    raise ValueError(f"unknown {kind} kernel {key!r}; valid kernels: {valid}")


def tunable(key: object) -> Kernel:
    return get(key, "tunable")


def from_source(key: str, name: str, path: str | Path) -> Kernel:
    """GEMM kernel `key` built from the file at `path` instead of its own, registered as
    KEY-NAME so that a plan finds it by that key: a probe of a kernel change, timed beside
    the registry's file (scripts/points.py, scripts/plans.py)."""
    base = get(key)
    kern = replace(base, key=f"{base.key}-{name}", source=str(Path(path).resolve()))
    GEMM[kern.key] = kern
    return kern

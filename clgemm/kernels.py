"""The kernel registry: the one place that knows each kernel's source, parameters,
constraints and launch geometry. `run`, `tune`, `bench` and `gemm()` all read it; what an
entry is (Kernel, Param, Constraint, Geometry) is clgemm.kernel_spec's."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from .kernel_spec import Constraint, Geometry, Kernel, Param, Params

__all__ = ["Constraint", "Geometry", "Kernel", "Param", "Params", "GEMM", "MATVEC",
           "TRANSPOSE", "DEFAULT_GEMM", "DEFAULT_TRANSPOSE", "get", "tunable", "siblings",
           "from_source"]


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
    ragged=True, c_rows=True, layouts=True, split_k=True, orders=True, unaligned=True,
    group_slices=True,
    technique="two local buffers, next tile prefetched through registers",
    params=_vector_params(64, 128, 16, 16, 4, 4, 0),
    cpu_defaults=_VECTOR_CPU,
    constraints=_vector_constraints(),
    geometry=_blocked_geometry(lambda p: 2 * _vector_tile_bytes(p), vector=lambda p: p["WIDTH"],
                               context=_context_prefetched),
))

_register(Kernel(
    key="6", name="shuffle-epilogue", source="6_shuffle_epilogue.cl", shuffle=True, exact=True, clamp=True,
    ragged=True, layouts=True, split_k=True, orders=True, unaligned=True, same_params_as="5",
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
    k = key if type(key) is str else str(key).strip()
    for t in tables:               # by key first: the planner asks this on every prediction
        if k in t:
            return t[k]
    k = k.strip()
    for kern in (v for t in tables for v in t.values()):
        if k in (kern.key, kern.name):
            return kern
    valid = ", ".join(v.key + (f" ({v.name})" if v.name != v.key else "")
                      for t in tables for v in t.values())
    raise ValueError(f"unknown {kind} kernel {key!r}; valid kernels: {valid}")


def siblings(key: str) -> list[str]:
    """The GEMM kernels whose parameters mean the same as kernel `key`'s (`same_params_as`,
    either way round; none for a matrix-vector kernel): each starts from the others' tuned
    entries where it has none of its own."""
    own = tunable(key)
    return [k.key for k in GEMM.values() if k.key != own.key
            and (k.same_params_as == own.key or k.key == own.same_params_as)]


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

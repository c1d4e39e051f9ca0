"""The builds a launch takes: its tile loads (EXACT, CLAMP, checked, or operands read a
float at a time), zero-padded copies or none, a K-major A, and the order of its tiles."""

from __future__ import annotations

import math
from collections.abc import Mapping

from .. import kernels
from ..thresholds import Facts

Shape = tuple[int, int, int]


def tile_of(kern: kernels.Kernel, params: Mapping[str, int]) -> Shape:
    """(rows, cols, depth) of one work-group's tile."""
    return kern.whole_tiles(params, 1, 1, 1)


def loads(kern: kernels.Kernel, params: Mapping[str, int], shape: Shape,
          floats: bool = False) -> str:
    """The build of the tile loads a launch at `shape` takes: "floats" where an operand is
    read where it lies a float at a time (`floats`: reads_floats said so for its layout);
    "exact" where the shape is whole tiles (no bounds checks); "clamp" where only k is (no
    bounds checks either: rows and columns past m or n re-read the last one, while a
    re-read k would add terms); "ragged" where k is whole vectors but not whole tiles
    (CLAMP's loads, k's tiles counted from its end: only the first one checks k);
    "checked" otherwise, or for a kernel without those builds."""
    if floats:
        return "floats"
    if kern.exact and kern.divides(params, *shape):
        return "exact"
    k = shape[2]
    if kern.clamp and k % tile_of(kern, params)[2] == 0:
        return "clamp"
    if kern.ragged and k % params.get("WIDTH", 1) == 0:
        return "ragged"
    return "checked"


def resident(kern: kernels.Kernel, params: Mapping[str, int], shape: Shape,
             residents: Mapping[str, int]) -> int:
    """Of the work-groups a compute unit holds, as the tuner recorded them for the build
    with bounds checks and the EXACT one (`residents`), those of the build a launch at
    `shape` takes: CLAMP's loads are EXACT's."""
    return residents["checked" if loads(kern, params, shape) == "checked" else "exact"]


def pads(kern: kernels.Kernel, params: Mapping[str, int], shape: Shape, f: Facts,
         mode: str = "auto", floats: bool = False) -> bool:
    """Whether a launch at `shape` runs on zero-padded copies of whole tiles. Not where the
    CLAMP build or the float-at-a-time one (`floats`) runs unpadded: they launch the same
    tiles without the copies."""
    build = loads(kern, params, shape, floats)
    if not kern.exact or build in ("exact", "floats") or mode == "no":
        return False
    if mode == "yes":
        return True
    if build == "clamp":
        return False
    m, n, k = shape
    mp, np_, kp = kern.whole_tiles(params, m, n, k)
    return (m * n * k >= f["pad_min_volume"] and k >= f["pad_min_k"]
            and min(m, n) >= f["pad_min_mn"] and mp * np_ * kp <= f["pad_waste"] * m * n * k)


def pads_depth(kern: kernels.Kernel, params: Mapping[str, int], shape: Shape, f: Facts,
               mode: str = "auto", floats: bool = False,
               copied: tuple[bool, bool] = (False, False), slices: int = 1) -> bool:
    """Whether a launch whose operands are both copied into aligned buffers anyway
    (`copied`: their rows are not whole vectors, and `floats` says they are not read where
    they lie) takes those copies zero-padded along k to whole tiles (`pad_depth`; 0: never),
    where it would otherwise run the build with bounds checks (pads declined the copies
    to whole tiles along m and n for their waste). The zeros cost nothing more: the copies
    are zero-filled buffers already, and k's few extra rows add nothing to the sums; the
    launch then runs the CLAMP build (or EXACT) instead. Not for a launch in `slices` > 1
    slices of k: on an H100 the split build ran no faster so (docs/levers.md)."""
    if (mode != "auto" or floats or not all(copied) or not kern.clamp
            or not f["pad_depth"] or slices > 1):
        return False
    return (loads(kern, params, shape) == "checked"
            and not pads(kern, params, shape, f, mode, floats))


def launched(kern: kernels.Kernel, params: Mapping[str, int], shape: Shape, f: Facts,
             mode: str = "auto", floats: bool = False,
             copied: tuple[bool, bool] = (False, False), slices: int = 1) -> Shape:
    """The shape a launch covers: whole tiles when it pads, k alone in whole tiles when
    its copies are padded along k only (pads_depth), else `shape`."""
    if pads(kern, params, shape, f, mode, floats):
        return kern.whole_tiles(params, *shape)
    if pads_depth(kern, params, shape, f, mode, floats, copied, slices):
        m, n, k = shape
        return m, n, kern.whole_tiles(params, m, n, k)[2]
    return tuple(shape)


def reads_floats(kern: kernels.Kernel, params: Mapping[str, int], shape: Shape, f: Facts,
                 mode: str, copied: tuple[bool, bool]) -> bool:
    """Whether operands whose rows are not whole vectors (an unaligned leading dimension
    or width) are read where they lie, a float at a time, rather than copied into aligned
    buffers: where the kernel has that build and padding is not asked for (its copies align
    the operands anyway), in products of at most `unaligned_max_volume` multiply-adds, or
    `unaligned_light_volume` for register blocks of at most `unaligned_light_block` sums
    in work-groups of at least `unaligned_light_items` work-items, or
    `unaligned_heavy_volume` for blocks of at least `unaligned_heavy_block` sums whose
    copies would move `unaligned_heavy_share` floats a multiply-add or more (`copied`: of
    the left operand, m x k, and the right one, k x n), and for any block and volume where
    they would move `unaligned_share` or more. The build's loads slow a large
    block's tile loop by 12-20%, a cost that grows with m*n*k, while the copies it saves
    are a launch and a pass over the operands copied."""
    if not kern.unaligned or mode == "yes":
        return False
    volume = math.prod(shape)
    m, n, _ = shape
    block = sums(params)
    lx, ly = kern.geometry.local(params)
    light = block <= f["unaligned_light_block"] and lx * ly >= f["unaligned_light_items"]
    share = copied[0] / n + copied[1] / m       # floats the copies move a multiply-add
    heavy = (block >= f["unaligned_heavy_block"] and volume <= f["unaligned_heavy_volume"]
             and share >= f["unaligned_heavy_share"])
    return (volume <= f["unaligned_max_volume"] or light and volume <= f["unaligned_light_volume"]
            or heavy or 0 < f["unaligned_share"] <= share)


def stages_c(kern: kernels.Kernel, params: Mapping[str, int], shape: Shape, f: Facts) -> bool:
    """Whether a launch that stores C a float at a time (its rows not whole vectors apart:
    C_UNALIGNED) stages each row of sums in a tile buffer first (C_ROWS), so that a warp
    stores 32 consecutive floats rather than every fourth of a run: in products at most
    `c_rows_max_k` deep (0: never), since C's share of the time falls as k grows, and where
    one of the two tile buffers holds a slab of RTSM x TSN floats (the kernel's condition).
    The caller also keeps the build's resident groups (GemmPlan.compiled): the staging
    costs registers at some points."""
    if not kern.c_rows or not f["c_rows_max_k"] or shape[2] > f["c_rows_max_k"]:
        return False
    held = 2 * params["TSK"] * params["WPTM"]       # a tile buffer's floats / RTSM
    return held >= params["TSN"] or held >= params["TSM"]


def sums(params: Mapping[str, int]) -> int:
    """The sums a work-item holds (its register block), which rules bound: a large block's
    loop is bound by issuing instructions, and its loads and split build cost it more."""
    return params.get("WPTM", 1) * params.get("WPTN", 1)


def tiles(kern: kernels.Kernel, params: Mapping[str, int], shape: Shape) -> tuple[int, int]:
    """(work-groups that cover C, tile steps along k)."""
    mp, np_, kp = kern.whole_tiles(params, *shape)
    tm, tn, tk = tile_of(kern, params)
    return (mp // tm) * (np_ // tn), kp // tk


def kmajor_a(kern: kernels.Kernel, shape: Shape, f: Facts, transposed_by: str = "auto") -> bool:
    """Whether a row-major A is turned K x M by a device transpose before the product: each
    element of A is reused n times, the transpose reads and writes it once."""
    m, n, k = shape
    return (transposed_by == "auto" and kern.layouts and n >= f["kmajor_min_n"]
            and m * n * k >= f["kmajor_min_volume"])


def columns_first(kern: kernels.Kernel, params: Mapping[str, int], shape: Shape,
                  f: Facts) -> bool:
    """Whether a launch takes C's tiles down each column of tiles rather than along each
    row. The groups resident at once then read a few of B's column slabs and many of A's
    row slabs, rather than the reverse: fewer slabs in all where the grid is wider than
    tall, and on a square grid the order measured faster on the H200. Not on grids of a
    wave or two, where the order gained nothing and its build's other schedule is a risk."""
    if not kern.orders:
        return False
    mp, np_, _ = kern.whole_tiles(params, *shape)
    tm, tn, _ = tile_of(kern, params)
    rows, cols = mp // tm, np_ // tn
    return rows * cols >= f["columns_min_tiles"] and rows <= f["columns_max_aspect"] * cols

"""Launch decisions, as plain functions of (kernel, parameters, shape, device facts).

gemm() asks these questions of every product: pad the operands into whole tiles or not,
read operands whose rows are not whole vectors where they lie or copy them, how many
slices of k (split-K), whether to lay a row-major A out K-major first, in which
order the work-groups take C's tiles, which tuned entry to take at a shape nobody tuned,
whether C's few rows and columns past whole tiles, or its tiles past the last whole wave,
are computed apart (peel), and whether
one row or column of C makes it a matrix-vector product (and in how many slices). Their
thresholds, and the device Facts they come in, are clgemm.thresholds'.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from . import kernels, operands
from .entries import MAX_SPLITS
from .operands import rounded
from .thresholds import Facts

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
    re-read k would add terms); "checked" otherwise, or for a kernel without those builds."""
    if floats:
        return "floats"
    if kern.exact and kern.divides(params, *shape):
        return "exact"
    if kern.clamp and shape[2] % tile_of(kern, params)[2] == 0:
        return "clamp"
    return "checked"


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


def launched(kern: kernels.Kernel, params: Mapping[str, int], shape: Shape, f: Facts,
             mode: str = "auto", floats: bool = False) -> Shape:
    """The shape a launch covers: whole tiles when it pads, else `shape`."""
    return (kern.whole_tiles(params, *shape) if pads(kern, params, shape, f, mode, floats)
            else tuple(shape))


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


def sums(params: Mapping[str, int]) -> int:
    """The sums a work-item holds (its register block), which rules bound: a large block's
    loop is bound by issuing instructions, and its loads and split build cost it more."""
    return params.get("WPTM", 1) * params.get("WPTN", 1)


def tiles(kern: kernels.Kernel, params: Mapping[str, int], shape: Shape) -> tuple[int, int]:
    """(work-groups that cover C, tile steps along k)."""
    mp, np_, kp = kern.whole_tiles(params, *shape)
    tm, tn, tk = tile_of(kern, params)
    return (mp // tm) * (np_ // tn), kp // tk


def matvec(shape: Shape, f: Facts) -> bool:
    """Whether a product runs as a matrix-vector product (one row or column of C). Not with
    a dimension of 2^30 or more: the kernels' 32-bit row counters step past their end by up
    to UNROLL work-groups' spans."""
    # the kernels compute one row or column: never more, whatever the threshold says
    return min(shape[0], shape[1]) <= min(f["matvec_max"], 1) and max(shape) < operands.MAX_DEPTH


def matvec_slices(across: int, depth: int, f: Facts,
                  tuned: tuple[int, int, int] | None = None) -> int:
    """Slices of a matrix-vector product's depth for `across` work-groups a slice. With
    `tuned` (work-groups a slice, depth and slices of the launch a tune timed best), that
    count at that launch, and elsewhere the power of two nearest the same total of
    work-groups, with slices no thinner than the tuned ones or matvec_min_depth; without,
    enough to reach matvec_groups a compute unit, each at least matvec_min_depth deep. At
    most entries.MAX_SPLITS."""
    if tuned is not None:
        at_across, at_depth, count = tuned
        if (across, depth) == (at_across, at_depth):
            return count
        s = 2 ** max(0, round(math.log2(at_across * count / across)))
        thinnest = min(int(f["matvec_min_depth"]), at_depth // count)
        while s > 1 and depth // s < thinnest:
            s //= 2
        return min(s, MAX_SPLITS)
    # capped before int(): a threshold of 1e308 a compute unit is a float's infinity
    want = -(-int(min(f["matvec_groups"] * f.compute_units, MAX_SPLITS * across)) // across)
    return max(1, min(want, depth // int(f["matvec_min_depth"]), MAX_SPLITS))


# split-K's workspace rows are this many floats apart, rounded up: splitk_reduce reads float4s
SPLIT_ROW = 4
WARP = 32     # work-items a warp (NVIDIA's): wave_steps counts a group's warps


def workspace_fits(slices: int, m: int, n: int, align: int, f: Facts) -> bool:
    """Whether `slices` partial m x n products fit in one buffer (and 32-bit indexing)."""
    floats = slices * m * rounded(n, align)
    return floats <= operands.MAX_ELEMENTS and 4 * floats <= f.max_alloc


def splits(kern: kernels.Kernel, params: Mapping[str, int], shape: Shape, f: Facts,
           asked: int | str = "auto", tuned: tuple[Shape, int] | None = None,
           pad: str = "auto") -> int:
    """Slices of k a launch at `shape` computes apart (1: no split-K). `asked` is a count
    or "auto": with `tuned` (the shape a tune measured counts at, and its best count), that
    count there, and elsewhere the power of two nearest the same total of work-groups with
    slices no thinner than the tuned ones over split_thinner (or split_min_k); without, the
    count that leaves the fewest waves of work (_fill_splits); where neither takes a count,
    the one that evens out the groups each unit runs (_wave_splits). On a grid of fewer
    groups than a wave, except at a tuned count's own shape, at least _fill_splits' count
    with slices split_few_min_k deep (a deep product of few tiles, whose tuned counts and
    split_min_k leave most units idle). Any count is then trimmed so that every slice
    holds at least one tile of k."""
    if not kern.split_k:
        return 1
    groups, depth = tiles(kern, params, shape)
    s = asked
    if s == "auto":
        s = _auto_splits(kern, params, shape, groups, f, tuned, pad)
    per = -(-depth // min(s, depth))
    return -(-depth // per)


def group_slices(kern: kernels.Kernel, params: Mapping[str, int], shape: Shape, f: Facts,
                 slices: int = 1, floats: bool = False) -> int:
    """Slices of k within each work-group (kernel 5's KG build) for a launch at `shape` in
    `slices` slices of k across work-groups (none then where group_slices_split is 0): up
    to group_slices_max where the groups of all slices are at most group_slices_fill a
    compute unit, as long as each slice within a group keeps group_slices_min_steps tile
    steps and the group stays within group_slices_items work-items
    (group_slices_float_items for the float-at-a-time build, `floats`, of blocks of at
    most group_slices_float_block sums). A launch of about one group a unit leaves each
    unit's schedulers few warps to hide the loads' latency; more warps for the same tile
    do without split-K's workspace and second launch, but past 8 warps a unit the vector
    loads lose more to the sums' hand-over and the thinner slices than they gain. Whether
    the larger group fits the device is GemmPlan.groups' to say."""
    top = int(f["group_slices_max"])
    if not kern.group_slices or top < 2 or (slices > 1 and not f["group_slices_split"]):
        return 1
    groups, steps = tiles(kern, params, shape)
    if groups * slices > f["group_slices_fill"] * f.compute_units:
        return 1
    steps = -(-steps // slices)
    lx, ly = kern.geometry.local(params)
    light = floats and sums(params) <= f["group_slices_float_block"]
    items = f["group_slices_float_items" if light else "group_slices_items"]
    kg = 1
    while (kg * 2 <= top and steps // (kg * 2) >= f["group_slices_min_steps"]
           and lx * ly * kg * 2 <= items):
        kg *= 2
    return kg


def _auto_splits(kern, params, shape: Shape, groups: int, f: Facts,
                 tuned: tuple[Shape, int] | None, pad: str) -> int:
    m, n, k = shape
    block = sums(params)
    if tuned is not None:
        at_shape, count = tuned
        at = launched(kern, params, at_shape, f, pad)
        own = tuple(shape) in (tuple(at_shape), at)      # the count the tune measured here
        if own:
            s = count
        else:
            fill = tiles(kern, params, at)[0] * count
            s = 2 ** max(0, round(math.log2(fill / groups)))
            thinnest = min(f["split_min_k"], at[2] // count // f["split_thinner"])
            while s > 1 and _depth(k, s) < thinnest:
                s //= 2
            if s == 1 and block <= f["split_wave_max_block"]:
                s = _wave_splits(groups, k, f, block)
    else:
        own, s = False, _fill_splits(groups, k, f)
        if s == 1:
            s = _wave_splits(groups, k, f, block)
    few = f["split_few_min_k"]
    if few and not own and groups < f["split_fill"] * f.compute_units:
        s = max(s, _fill_splits(groups, k, f, few))
    while s > 1 and not workspace_fits(s, m, n, SPLIT_ROW, f):
        s //= 2
    return s


def _depth(k: int, s: int) -> int:
    """The depth of the deepest of s slices of k, the one the thresholds speak of (k = 1023
    in 2 is slices of 512 and 511, not two of 511: at 2047x1023x1023, 128 groups of
    128x128 on 132 units, ran 1.20x as fast in 2 slices as in 1 on an H100: docs/levers.md)."""
    return -(-k // s)


def _fill_splits(groups: int, k: int, f: Facts, min_k: float | None = None) -> int:
    """Slices of k for an untuned launch. The counts are the doublings up to the first that
    makes two waves of groups (a wave: split_fill per compute unit), slices split_min_k
    deep or more; of these, the one with the fewest waves of unsplit work, ceil(groups * s
    / wave) / s, and none unless it saves some. Ties go to the larger count up to the first
    one past a wave, and beyond it a count must save more. Fewer groups than a wave, with
    slices split_deep_k deep, take two all the same. Measured on the H200 (2026-12-04,
    `python3 scripts/points.py` with SPLIT_K=S points, results/h200/raw/split-fill-2026-12-04.json):
    80-128 groups of 64x128 at k = 1024 ran 13-18% slower in the two slices that doubling
    to a full wave gave than unsplit (the rule before), 96 of them at k = 4096 33% faster in
    four; 104 or 128 groups of 128x128 at k = 4096 18-23% faster in two. `min_k`: another
    bound than split_min_k (split_few_min_k, for grids of fewer groups than a wave)."""
    wave = f["split_fill"] * f.compute_units
    min_k = f["split_min_k"] if min_k is None else min_k
    best, best_cost = 1, 1.0
    s = 1
    while groups * s < 2 * wave and _depth(k, 2 * s) >= min_k:
        past = groups * s >= wave          # an earlier count already filled a wave
        s *= 2
        cost = math.ceil(groups * s / wave) / s
        if cost < best_cost or (cost == best_cost < 1.0 and not past):
            best, best_cost = s, cost
    if best == 1 and groups < wave and k >= 2 * f["split_deep_k"]:
        best = 2
    return best


def _wave_splits(groups: int, k: int, f: Facts, block: int) -> int:
    """Slices of k where the other rules take none: the count that evens out the k steps
    the busiest compute unit runs (its share of the groups, rounded up, times the deepest
    slice), where it runs split_wave_gain fewer than unsplit. The slices' sum (a second
    launch over s partial products) is not counted: the gain asked for covers it.
    Work-items of at most split_wave_max_block sums (`block`), on grids of
    split_wave_min_fill groups a unit or more (smaller ones are _fill_splits', whose slices
    are deeper: there a launch's fixed costs outweigh the steps): of 2, 3, 4, 6, 8 and 16
    slices split_wave_min_k deep or more, the fewest within split_wave_near of the fewest
    steps. Larger blocks, whose split build runs slower, on grids of a group a unit
    or more: the first of 2, 4, 8 or 16 slices split_min_k deep that saves the part.
    Measured on an H100 (2026-12-06, results/h100/README.md), whole calls: 1500x1500x7000
    and 1536x1536x16384, 288 groups of 64x128 (3 a unit at most where 2.2 is the share),
    1.22x and 1.28x as fast in 4 slices (a quarter fewer steps predicted); 1200^3, 190
    groups, 1.09x in 2; 2600^3, 861 groups of 128x128, 0.95x in 4, where this predicts
    3.6% fewer steps and so keeps it whole; then, with the float4 sum (b7ddf37), against
    4bcc0c2: blocks of 8x4, 767^3 and 768^3 (72 groups of 64x128) 1.25x and 1.40x in 3,
    800^3 1.11x and 700x900x800 1.20x in 3, 896^3 1.12x in 4; of 16x4, 1151^3 1.09x in 4
    (was 2), 600x1200x1000 1.12x in 2, 720x1440x960 1.14x in 4; 850^3 0.96x (another
    entry's tiles in 2); 999^3 (128 groups: no count saves a step) unsplit, where 2, 3 or
    4 slices ran 4-7% slower; a first form without the block bound split 16x8 blocks at
    1500x1500x1000 (144 groups) in 4: 0.97x
    (results/h100/raw/split-steps-2026-12-06-4bcc0c2.txt)."""
    gain, units = f["split_wave_gain"], f.compute_units
    if not gain:
        return 1

    def steps(s: int) -> int:
        return -(-groups * s // units) * _depth(k, s)

    if block > f["split_wave_max_block"]:
        if groups < units:
            return 1
        return next((s for s in (2, 4, 8, 16) if _depth(k, s) >= f["split_min_k"]
                     and steps(s) <= (1 - gain) * steps(1)), 1)
    counts = [s for s in (2, 3, 4, 6, 8, 16) if _depth(k, s) >= f["split_wave_min_k"]]
    if not counts or groups < f["split_wave_min_fill"] * units:
        return 1
    least = min(steps(s) for s in counts)
    best = next(s for s in counts if steps(s) <= f["split_wave_near"] * least)
    return best if steps(best) <= (1 - gain) * steps(1) else 1


def tail_split(kern: kernels.Kernel, params: Mapping[str, int], shape: Shape, f: Facts,
               resident: int | None) -> tuple[int, int] | None:
    """(tail_from, slices): a launch whose first tail_from tiles run whole (full waves of
    `resident` groups a compute unit) and whose other tiles each run as `slices` pieces of
    k, summed by a second kernel; None to launch every tile whole. Where a launch's last
    wave is part-full, its units wait a whole tile's time for a few groups: kernel 8 at
    8192^3 runs 4096 tiles, one a unit, in 31 waves of 132 and a 32nd of 4. Predicted in k
    steps on the busiest unit: whole waves of depth steps, then ceil(pieces / wave) waves
    of a slice's steps plus tail_piece_steps each; the fewest slices of the best time,
    taken where it beats the plain launch by tail_min_gain."""
    if not kern.tail or not resident or shape[2] < f["tail_min_k"]:
        return None
    groups, depth = tiles(kern, params, shape)
    wave = resident * f.compute_units
    whole = groups // wave * wave
    left = groups - whole
    if not left:
        return None
    plain = -(-groups // wave) * depth
    best, best_time = None, float(plain)
    for s in range(2, min(depth, int(f["tail_max_slices"])) + 1):
        per = -(-depth // s)
        if -(-depth // per) != s:          # the same pieces as a smaller count
            continue
        time = whole // wave * depth + -(-left * s // wave) * (per + f["tail_piece_steps"])
        if time < best_time:
            best, best_time = s, time
    tm, tn, _ = tile_of(kern, params)
    if (best is None or best_time > plain * (1 - f["tail_min_gain"])
            or not workspace_fits(left * best, tm, tn, 1, f)):     # the pieces' sums
        return None
    return whole, best


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


def wave_steps(kern: kernels.Kernel, params: Mapping[str, int], shape: Shape, f: Facts,
               residents: Mapping[str, int], tuned: tuple[Shape, int] | None = None,
               slices: int | None = None) -> float:
    """How long a launch at `shape` takes on its busiest compute unit, in k steps of one
    work-group among a full unit's: under one wave, that unit's share of the groups
    (rounded up) at once; beyond, whole waves of `residents` groups (one group more than a
    wave costs a wave). A wave of g groups of w warps takes its depth times
    (g*w + latency_warps) / w: a unit holding fewer groups than it can runs each faster,
    though not in proportion, as its warps' latencies are hidden by fewer others. Steps
    times groups alone (latency_warps 0) mispredicted launches under one wave (3 against 4
    groups a unit), and took 1850^3's entry (4-warp groups) at 1999x999x999, one group a
    unit, as if it ran twice as fast as where it was tuned at two: 1024^3's (8-warp groups)
    ran x1.20 as fast there (docs/levers.md). A launch in slices of k of a block of
    split_slow_block sums or more counts split_block_cost times its steps: that split
    build runs slower, which no count of steps shows. `slices`: a count other than splits'."""
    at = launched(kern, params, shape, f)
    s = splits(kern, params, at, f, tuned=tuned) if slices is None else slices
    groups, depth = tiles(kern, params, at)
    groups *= s
    r = residents["checked" if loads(kern, params, at) == "checked" else "exact"]
    lx, ly = kern.geometry.local(params)
    warps, hidden = max(1.0, lx * ly / WARP), f["latency_warps"]
    units = f.compute_units
    if groups <= r * units:
        waves = -(-groups // units) * warps + hidden
    else:
        waves = -(-groups // (r * units)) * (r * warps + hidden)
    slower = f["split_block_cost"] if s > 1 and sums(params) >= f["split_slow_block"] else 1.0
    return waves / warps * -(-depth // s) * slower


def peel(kern: kernels.Kernel, params: Mapping[str, int], shape: Shape, f: Facts,
         residents: Mapping[str, int] | None,
         tuned: tuple[Shape, int] | None = None) -> tuple[int, int] | None:
    """(m1, n1): C's first m1 rows and n1 columns launched alone, unsplit, and the rest as
    products of their own (layout._Layout.peeled): the few rows and columns past whole
    tiles (edge_peel), else the tiles past the launch's last whole wave (wave_cut)."""
    return (edge_peel(kern, params, shape, f, residents, tuned)
            or wave_cut(kern, params, shape, f, residents, tuned))


def wave_cut(kern: kernels.Kernel, params: Mapping[str, int], shape: Shape, f: Facts,
             residents: Mapping[str, int] | None,
             tuned: tuple[Shape, int] | None = None) -> tuple[int, int] | None:
    """(m1, n) or (m, n1): C's first rows (or columns) of tiles that fill the launch's whole
    waves, launched unsplit, the rest of C a product of its own, its slices of k as its
    own shape takes them. Where the last wave is part-full, its units wait a whole tile's
    depth for a few groups, and split-K's counts fill it only with slices of every tile:
    6910x561x5295 runs 54 x 5 tiles of 128 on 264 places, in 4 slices 5 waves of a
    quarter of the depth and their sum, where 52 x 5 tiles take one wave of the whole
    depth and 2 x 5 more, in 16 slices, a sixteenth. Taken where wave_steps of the two
    beats that of the launch by cut_min_gain (0: never) and the rest holds at most
    cut_max_rest of a wave of tiles (a larger rest fills the units it would spread over
    by itself: the model's faster part-full units then mislead it), in products
    cut_min_k deep and of peel_min_volume multiply-adds or more (shallower ones gained
    nothing on the whole, and lost up to a fifth at some shapes: thresholds.py). Not in
    choose_entry's prediction: an entry is chosen as if no launch were cut (where the cut
    swayed that choice, 2 of 17 entries so taken ran x0.80 and x0.88 on an H100)."""
    gain = f["cut_min_gain"]
    m, n, k = shape
    if (not gain or residents is None or kern.tail or k < f["cut_min_k"]
            or m * n * k < f["peel_min_volume"]):
        return None
    tm, tn, _ = tile_of(kern, params)
    rows, cols = -(-m // tm), -(-n // tn)
    best, least = None, (1 - gain) * wave_steps(kern, params, shape, f, residents, tuned)
    for along_rows in (True, False):
        whole_of = (tm, n, k) if along_rows else (m, tn, k)       # a main launch's build
        r = residents["checked" if loads(kern, params, whole_of) == "checked" else "exact"]
        wave = r * f.compute_units
        across, other = (cols, rows) if along_rows else (rows, cols)
        kept = rows * cols // wave * wave // across            # rows (columns) of tiles kept
        if not 0 < kept < other or (other - kept) * across > f["cut_max_rest"] * wave:
            continue
        cut = (kept * tm, n) if along_rows else (m, kept * tn)
        rest = (m - cut[0], n, k) if along_rows else (m, n - cut[1], k)
        steps = (wave_steps(kern, params, (*cut, k), f, residents, tuned, slices=1)
                 + wave_steps(kern, params, rest, f, residents, tuned))
        if steps < least:
            best, least = cut, steps
    return best


def edge_peel(kern: kernels.Kernel, params: Mapping[str, int], shape: Shape, f: Facts,
              residents: Mapping[str, int] | None,
              tuned: tuple[Shape, int] | None = None) -> tuple[int, int] | None:
    """(m1, n1): C's rows and columns in whole tiles, launched alone, while the few rows
    and columns past them (at most peel_max_share of a tile each way) are computed as
    products of their own (one row or column as a matrix-vector launch). Where one row or
    column more starts a row or column of tiles, those tiles can start a wave of their
    own: 4097^3 runs 33 x 33 tiles of 128 in 5 waves of 264 groups, 4096^3 32 x 32 in 4.
    Taken where wave_steps of the whole tiles beats that of the launch by peel_min_gain;
    the thin products (a pass over an operand each) are not counted, but cost about as
    much as a shallow wave saves: only products peel_min_k deep or more (on an H100, x0.96-
    1.00 at 7 shapes 424 to 943 deep, x1.03-1.31 at 13 from 1173 to 8193), and thin
    products (more than one row or column past the tiles) only in products of
    peel_min_volume multiply-adds or more: their copies and launches cost a small call
    more than its wave saves (H200: x0.73-0.99 at 17 shapes up to 2.19e9, x1.04-1.11 at
    four from 2.32e9). Only where the whole tiles' launch is not cut into slices of k (`tuned`:
    the entry's measured count, as splits takes it); the launch it replaces may be where
    peel_split allows it and what lies past the tiles is matrix-vector launches: 1025^3's
    4 slices gave way to an unsplit 1024^3 at x0.91 the speed while the one row and column
    past it were thin products (H100), where with matrix-vector launches 30 such shapes
    ran x1.10 geomean (H200, results/h200/README.md)."""
    if residents is None or kern.tail:
        return None
    m, n, k = shape
    tm, tn, _ = tile_of(kern, params)
    m1, n1 = m // tm * tm, n // tn * tn
    share = f["peel_max_share"]
    if ((m1, n1) == (m, n) or not m1 or not n1 or k < f["peel_min_k"]
            or m - m1 > share * tm or n - n1 > share * tn):
        return None
    inner = (m1, n1, k)
    # one row and one column at most past the tiles: matrix-vector launches, else thin
    # products (a strip's copy, a launch or two, a copy into C each way)
    vectors = m - m1 <= 1 and n - n1 <= 1
    if not vectors and m * n * k < f["peel_min_volume"]:
        return None
    if any(splits(kern, params, launched(kern, params, s, f), f, tuned=tuned) > 1
           for s in ((inner,) if vectors and f["peel_split"] else (shape, inner))):
        return None
    whole = wave_steps(kern, params, inner, f, residents, tuned)
    if whole > (1 - f["peel_min_gain"]) * wave_steps(kern, params, shape, f, residents, tuned):
        return None
    return m1, n1


def tile_waste(kern: kernels.Kernel, params: Mapping[str, int], shape: Shape) -> float:
    """The part of C that a configuration's whole tiles compute at `shape`, over C."""
    tm, tn, _ = tile_of(kern, params)
    m, n, _ = shape
    return rounded(m, tm) * rounded(n, tn) / (m * n)


def entry_split(entry: Mapping) -> tuple[Shape, int] | None:
    """(tuned shape, slices of k) of an entry whose tune measured split-K counts."""
    return (entry["shape"], entry["splits"]) if "splits" in entry else None


def choose_entry(candidates: Sequence[tuple[str, dict]], kernel: str | None, shape: Shape,
                 f: Facts) -> tuple[str, dict] | None:
    """Of (kernel key, entry) pairs ranked nearest first (db.near, usable ones only), the
    one to launch at `shape`: entries whose tiles waste over tile_waste times the least are
    passed over (but one tuned at this very shape), then of those within near_within of the
    nearest, one predicted faster than the nearest by wave_margin, and of those farther but
    within far_within, one predicted faster by far_margin, else the nearest. The
    nearest is predicted at the launch it would make, its whole tiles apart where
    `edge_peel` takes them (at 2049^3 the 2048^3 entry's 17 x 17 tiles are two waves, its 16 x 16 one:
    it stays, where the 2240^3 entry had been taken); not knowing the operands' alignment,
    as if the call read none of them a float at a time, where peel is not taken. The
    others are not: on an H100, peeled entries taken over a nearer one ran x0.72-1.28 as
    fast at 39 shapes, the worst a 32 x 128 entry at a wave of 4 groups a unit
    (results/h100/README.md). The wave prediction carries farther than near_within, but
    less surely: it knows nothing of a far entry's float build or caches, so only a large
    predicted gain (far_margin) takes one (thresholds.py has the measurements)."""
    from . import db
    if not candidates:
        return None
    shape = tuple(shape)

    def kern(key):
        return kernels.get(kernel or key)

    waste = [tile_waste(kern(key), e["params"], shape) for key, e in candidates]
    least = min(waste)
    kept = [ke for ke, w in zip(candidates, waste)
            if w <= f["tile_waste"] * least or ke[1]["shape"] == shape]
    near = db.closest(kept, shape, f["near_within"])
    if near[0][1]["shape"] == shape or any("resident" not in e for _, e in near):
        return near[0]
    # farther candidates, each with the margin it must beat the nearest by; one whose
    # resident groups were never recorded cannot be predicted and is left out
    far = [ke for ke in db.closest(kept, shape, max(f["far_within"], f["near_within"]))
           if "resident" in ke[1] and not any(ke is x for x in near)]
    near += far
    margins = [f["wave_margin"]] * (len(near) - len(far)) + [f["far_margin"]] * len(far)
    if len(near) == 1:
        return near[0]

    def predicted(key_entry) -> float:
        key, e = key_entry
        kn, split = kern(key), entry_split(e)
        ms = 2.0 * math.prod(e["shape"]) / e["gflops"] * 1e-6     # its measured time
        cut = (edge_peel(kn, e["params"], shape, f, e["resident"], split)
               if e is near[0][1] else None)
        at = shape if cut is None else (*cut, shape[2])
        return (ms * wave_steps(kn, e["params"], at, f, e["resident"], split)
                / wave_steps(kn, e["params"], e["shape"], f, e["resident"], split))

    times = [predicted(ke) for ke in near]
    best = min(range(1, len(near)), key=lambda i: times[i] * margins[i])
    return near[best] if times[best] * margins[best] < times[0] else near[0]

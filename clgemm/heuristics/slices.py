"""Slices of k: split-K's count across work-groups, KG's within each, a launch's part-full
last wave spread as pieces (kernel 8), and a matrix-vector product's slices."""

from __future__ import annotations

import math
from collections.abc import Mapping

from .. import kernels, operands
from ..entries import MAX_SPLITS
from ..operands import rounded
from ..thresholds import Facts
from .builds import Shape, launched, resident, sums, tile_of, tiles


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


def workspace_fits(slices: int, m: int, n: int, align: int, f: Facts) -> bool:
    """Whether `slices` partial m x n products fit in one buffer (and 32-bit indexing)."""
    floats = slices * m * rounded(n, align)
    return floats <= operands.MAX_ELEMENTS and 4 * floats <= f.max_alloc


def splits(kern: kernels.Kernel, params: Mapping[str, int], shape: Shape, f: Facts,
           asked: int | str = "auto", tuned: tuple[Shape, int] | None = None,
           pad: str = "auto", residents: Mapping[str, int] | None = None,
           floats: bool = False) -> int:
    """Slices of k a launch at `shape` computes apart (1: no split-K). `asked` is a count
    or "auto": with `tuned` (the shape a tune measured counts at, and its best count), that
    count there, and elsewhere the power of two nearest the same total of work-groups with
    slices no thinner than the tuned ones over split_thinner (or split_min_k); without, the
    count that leaves the fewest waves of work (_fill_splits); where neither takes a count,
    the one that evens out the groups each unit runs (_wave_splits). On a grid of fewer
    groups than a wave, except at a tuned count's own shape, at least _fill_splits' count
    with slices split_few_min_k deep (a deep product of few tiles, whose tuned counts and
    split_min_k leave most units idle), and on grids of at most split_sparse_fill groups a
    unit with slices split_sparse_min_k deep: a few groups over k = 256-511, which no other
    rule splits, wait on each tile's loads with most units idle, and thin slices cost less
    than those waits. With the work-groups a unit holds (`residents`), a
    count so taken may give way to one that fills their waves better (_wave_count), but
    not in the float-at-a-time build (`floats`). Any count is then trimmed so that every
    slice holds at least one tile of k."""
    if not kern.split_k:
        return 1
    groups, depth = tiles(kern, params, shape)
    s = asked
    if s == "auto":
        s = _auto_splits(kern, params, shape, groups, f, tuned, pad,
                         None if floats else residents)
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
                 tuned: tuple[Shape, int] | None, pad: str,
                 residents: Mapping[str, int] | None = None) -> int:
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
    sparse = f["split_sparse_fill"]
    if sparse and not own and groups <= sparse * f.compute_units and k >= few:
        s = max(s, _fill_splits(groups, k, f, f["split_sparse_min_k"]))
    if s > 1 and not own and residents is not None and f["split_count_gain"]:
        wave = resident(kern, params, shape, residents) * f.compute_units
        s = _wave_count(groups, k, s, wave, f)
    while s > 1 and not workspace_fits(s, m, n, SPLIT_ROW, f):
        s //= 2
    return s


def _wave_count(groups: int, k: int, s: int, wave: int, f: Facts) -> int:
    """In place of s slices of k for a grid of fewer tiles than a wave of `wave` resident
    groups, the count of 2 to 16 (slices split_few_min_k deep) whose groups take the
    fewest slice depths in such waves, ceil(groups * c / wave) / c, the fewest slices of
    those, where that saves split_count_gain of s's: the other rules count in powers of two
    and in waves of split_fill groups a unit, which leave a part-full last wave of the
    groups a unit holds. H100, forced counts at eight deep products of fewer tiles than a
    wave (the H200's database): counts that fill the waves ran x1.08-1.18 as fast at five
    (3552x275x4481, 84 tiles of 128 on 264 places, 3 slices against 8); at 60 drawn shapes
    whose count it changed x1.079 geomean at the 25 read by vector loads (none slower by
    over 5%), x1.011 at the 35 in the float-at-a-time build (10 slower, to x0.74), which
    splits() therefore leaves as they were (docs/levers.md)."""
    if groups >= wave:
        return s

    def cost(c: int) -> float:
        return -(-groups * c // wave) / c
    counts = [c for c in range(2, 17) if _depth(k, c) >= f["split_few_min_k"]]
    if not counts:
        return s
    best = min(counts, key=lambda c: (cost(c), c))
    return best if cost(best) <= (1 - f["split_count_gain"]) * cost(s) else s


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

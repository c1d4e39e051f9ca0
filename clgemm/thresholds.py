"""The launch heuristics' thresholds: their generic defaults, each with the measurement it
came from, the range a value may take, and a device's Facts, which the decisions in
clgemm.heuristics read. The defaults were measured on the H200, the float-at-a-time
build's, the untuned split counts' and latency_warps on an H100 (the same chip), the
matrix-vector ones so far on the CPU device only (docs/levers.md has each measurement); a
device's database may carry its own in a "thresholds" object (db.thresholds), as CLBlast
keeps such limits per device in its database.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

DEFAULTS: dict[str, float] = {
    # pad: zero-padded copies of A and B, so that the build without bounds checks runs, only
    # for products this large, this deep and wide, and wasting at most PAD_WASTE more work
    # (the copies cost more than they gain below 1300^3 and at k < 256 or m, n < 1024)
    "pad_min_volume": 2**31,
    "pad_min_k": 256,
    "pad_min_mn": 1024,
    "pad_waste": 1.15,
    # ...and where both operands are copied into aligned buffers anyway (rows that are not
    # whole vectors) and an unsplit launch would check bounds, those copies zero-padded
    # along k to whole tiles, for the CLAMP build (heuristics.pads_depth; 1: on, 0: never).
    # H100, the H200's database, whole calls against 0 (2026-12-07,
    # results/h100/raw/plans-unchecked-k-2026-12-07.txt): unsplit launches x1.060 at 15
    # drawn shapes (16x8 blocks x1.13-1.22), then x1.033 at 30 of a later draw, two slower
    # by over 5% (x0.87, x0.89); launches in slices of k x1.001 at 25 (the 128x128 tiles
    # with 8x8 a work-item to x0.84), so never sliced. Off by default: measured on Hopper
    # only; the H200's database sets it
    "pad_depth": 0,
    # split-K without a tuned count: the count that leaves the fewest waves of split_fill
    # work-groups per compute unit (_fill_splits), each slice at least split_min_k deep
    "split_fill": 1,
    "split_min_k": 512,
    # ...and where no wave is saved, two slices this deep or deeper all the same: more
    # groups a compute unit (104-128 groups of 128x128 at k = 4096 ran 18-23% faster in two)
    "split_deep_k": 2048,
    # away from its tuned shape, a tuned count's slices may be this many times thinner
    "split_thinner": 2,
    # ...and on grids of fewer work-groups than a wave, tuned or not, as many slices as
    # _fill_splits takes with slices this deep or more, where that is more (0: never).
    # H100, whole calls against 0 at 36 drawn shapes (2026-12-07): the 4 whose launch
    # changed x1.02-1.58 (250x165x6509 0.55 -> 0.86x cuBLAS, 322x954x3932 x1.12), the 32
    # unchanged x1.001; at 128, 8 changed x1.09 geomean, 273x225x6976 x0.96 in 32 slices
    "split_few_min_k": 256,
    # ...and on grids of at most split_sparse_fill work-groups a compute unit, with k at
    # least split_few_min_k, as many as _fill_splits takes with slices split_sparse_min_k
    # deep or more (0: never). H100, the H200's database, whole calls (2026-12-07,
    # results/h100/raw/plans-sparse-splits-2026-12-07-78b7a31.txt): unsplit launches of
    # under half a group a unit at k = 256-511, where no other rule splits, ran x1.19 in 4
    # slices and x1.21 in 8 (30 drawn shapes, none slower); split_few_min_k 64 for every
    # grid under a wave ran x1.10 at 92 shapes it changed but lost up to x0.74 on grids of
    # over 0.55 of a group a unit and at k under 256 (142x125x220 x0.97 in 2 slices of 110);
    # at the 74 measured shapes where this rule launches as that one did, x1.195 geomean,
    # 1 slower (x0.85), 0.81 -> 0.97x cuBLAS; at 40 shapes drawn afresh x1.200, none slower
    # (plans-rules-fresh-2026-12-07-f5f9b89.txt). Off by default: measured on Hopper only;
    # the H200's database sets it
    "split_sparse_fill": 0,
    "split_sparse_min_k": 64,
    # ...and where those give none, the count that cuts the k steps of the busiest compute
    # unit by split_wave_gain (0: never); for register blocks of at most
    # split_wave_max_block sums, on grids of split_wave_min_fill groups a unit or more, of
    # slices split_wave_min_k deep or more, within split_wave_near of the fewest steps
    # (_wave_splits: 767^3 ran 72 groups of 64x128 on 132 units 1.25x as fast in 3)
    "split_wave_gain": 0.2,
    "split_wave_max_block": 64,
    "split_wave_min_fill": 0.5,
    "split_wave_min_k": 192,
    "split_wave_near": 1.05,
    # choosing an entry for an untuned shape: entries within near_within (db.distance) of
    # the nearest are candidates; one whose predicted time (wave_steps) beats the nearest's
    # by wave_margin wins; entries whose tiles compute over tile_waste times the least
    # padded C are passed over (a 16-row tile computes 16 rows for m = 1)
    "near_within": 0.7,
    "wave_margin": 1.05,
    # ...and entries farther than near_within but within far_within of the nearest (0:
    # none), taken where predicted faster by far_margin: the prediction misses more with
    # distance (a far entry's float build, its caches). H100, the H200's database, whole
    # calls (2026-12-07): near_within 1.5 alone x1.048 at 47 drawn shapes whose launch it
    # changed, 10 slower by over 5% (40x6366x507 x0.72), where a predicted gain under
    # 1.15 took 9 of them; far_within 1.5 with far_margin 1.2 x1.161 and x1.128 at two
    # later draws of 45 (25 shapes faster by over 5% in each, 5 and 1 slower; 2086x321x445
    # x0.77). Off by default: measured on Hopper's entries only; the H200's database sets it
    "far_within": 0,
    "far_margin": 1.2,
    # ...predicted with a compute unit's g groups of w warps taking (g*w + latency_warps) / w
    # times one group's steps (heuristics.wave_steps): H100, whole calls at 1023^3 against
    # 2047x1023x1023, 2 groups a unit took 1.43x the time of one for 16x8 blocks (4 warps),
    # 1.62x for 8x4 (8 warps), fixed costs included (4 latency warps: 1.5 and 1.67);
    # against 0 (steps times groups), 47 of 391 random mid-size shapes changed entry, x1.034
    # as fast (geomean; x0.78-1.28, the losses the light rule's, which stops at 2^30 since),
    # 1999x999x999 x1.20 (docs/levers.md)
    "latency_warps": 4,
    # ...and a launch in slices of k of blocks of split_slow_block sums or more at
    # split_block_cost times its steps: 16x8 entries cut in 2-8 slices by their tuned-count
    # rule ran x0.80-0.87 as fast against 16x4 entries unsplit as the steps said (H100,
    # 2049^3, 3000^3, 3072x1024x2048); counted so, 20 shapes changed entry, x1.066 geomean
    # (x0.97-1.23; docs/levers.md)
    "split_slow_block": 128,
    "split_block_cost": 1.2,
    "tile_waste": 1.5,
    # spread the last wave's tiles over the idle compute units as pieces of k (tail_split)
    # where the predicted time drops by tail_min_gain; a piece costs tail_piece_steps k
    # steps more than its share (its first loads, its partial sums' store and sum)
    "tail_min_gain": 0.01,
    "tail_piece_steps": 2,
    "tail_max_slices": 64,
    # ...and only this deep: 8192x8192x256's 4 tiles left over in 8 pieces ran 2.3% slower
    # (kernel 8, 2026-12-04), where 4096^3 and 8192^3 ran 1.3% and 2.9% faster
    "tail_min_k": 512,
    # compute C's rows and columns past whole tiles as thin products of their own (at most
    # peel_max_share of a tile each way), the whole tiles in one launch, where that saves
    # peel_min_gain of the launch's predicted steps, in products at least peel_min_k deep
    # (heuristics.peel): 4097^3 runs 33 x 33 tiles of 128 in 5 waves of 264, 4096^3 32 x
    # 32 in 4. H100, whole calls against the launch before (1f24129): 13 shapes 1173 to
    # 8193 deep x1.12 geomean (x1.03-1.31), 7 shapes 424 to 943 deep x0.98 (x0.96-1.00):
    # the thin products and their copies cost about as much as a shallow wave saves
    "peel_max_share": 0.125,
    "peel_min_gain": 0.05,
    "peel_min_k": 1024,
    # ...with thin products (more than one row or column past the tiles) only from
    # peel_min_volume multiply-adds: H200, whole calls against no peel, 17 shapes up to
    # 2.19e9 x0.73-0.99 (1411x776x1160 x0.73), 4 from 2.32e9 x1.04-1.11 (2026-12-06)
    "peel_min_volume": 2.25e9,
    # ...and, where what lies past the tiles is one row and one column at most
    # (matrix-vector launches), also where the launch it replaces is cut into slices of k
    # (1; 0: only where neither launch is); the whole tiles' launch is never cut. H200,
    # whole calls against 0: 30 drawn shapes x1.10 geomean, x0.89-1.39 (2026-12-06)
    "peel_split": 1,
    # a launch of fewer tiles than a wave of the groups a unit holds, cut into slices of k,
    # takes the count of 2 to 16 that fills those waves best, where that saves
    # split_count_gain of its slice depths (heuristics.slices._wave_count; 0: never), not
    # in the float-at-a-time build. H100, the H200's database, whole calls against 0
    # (results/h100/raw/plans-split-counts-2026-12-07-e1b0b62.txt): at 0.05, 60 drawn
    # shapes whose count it changes x1.038, the 25 of them read by vector loads x1.079
    # (none slower by over 5%), the 35 in the float build x1.011 (10 slower, to x0.74);
    # without those, at 60 of later draws x1.082 (x0.87-1.30), 41 faster and 4 slower by
    # over 5%. Off by default: measured on Hopper only; the H200's database sets it
    "split_count_gain": 0,
    # launch C's tiles up to the last whole wave alone, unsplit, and the rest of C as a
    # product of its own, where that saves cut_min_gain of the launch's predicted steps
    # (heuristics.wave_cut; 0: never) and the rest is at most cut_max_rest of a wave of
    # tiles, in products cut_min_k deep and of peel_min_volume multiply-adds or more.
    # H100, the H200's database, whole calls against no cut (2026-12-07,
    # results/h100/raw/plans-wave-cut-2026-12-07-e676c00.txt): at 80 drawn shapes x1.065
    # geomean, down to x0.87 where the rest was 0.69 of a wave (65 of them with rests of
    # at most half a wave x1.085); then at 85 of a later draw x1.087, its 10 losses (to
    # x0.81) all under k = 3000, the 48 from there x1.149; with k from 3000 and the entry
    # chosen as if uncut, at 58 shapes of four later draws x1.121 (x0.92-1.43), 47 faster
    # by over 5%, 1 slower (0.805 -> 0.902x cuBLAS's call); then k from 1024 against 3000,
    # the entry still chosen as if uncut, at the 26 and 33 shapes of two later draws that
    # it adds x1.081 and x1.060, none slower by over 5% (x0.96 the least). Off by default:
    # measured on Hopper only; the H200's database sets it
    "cut_min_gain": 0,
    "cut_max_rest": 0.5,
    "cut_min_k": 1024,
    # a C whose rows are not whole vectors apart, stored a float at a time, staged a row of
    # sums at a time in local memory in products at most c_rows_max_k deep (heuristics.
    # stages_c; 0: never), where the build keeps its resident groups. H100, the H200's
    # database, whole calls before and after (2026-12-07,
    # results/h100/raw/plans-c-rows-2026-12-07.txt): at any depth, 40 shapes x0.74-1.78
    # (4 groups a unit -> 3 at 3358x603x568, x0.97 from k = 1150); as landed, 39 of a
    # later draw x1.142 geomean, 26 faster and 1 slower by over 5% (x0.948), 7919x7919x769
    # x1.025. Off by default: measured on Hopper only; the H200's database sets it
    "c_rows_max_k": 0,
    # lay a row-major A out K-major with a device transpose when n and m*n*k reach these
    # (+1.5% at 8192^3, -2.4% at 2048^3, transpose included)
    "kmajor_min_n": 4096,
    "kmajor_min_volume": 2**38,
    # take C's tiles down each column of tiles (kernels that honour COLUMNS_FIRST) where the
    # grid has columns_min_tiles tiles or more and at most columns_max_aspect times as many
    # rows as columns (0: never): kernel 5's 128x128 tiles +0.3-1.2% at 4096^3, 4000^3,
    # 8192^3, 7919x7919x769 (1024-4096 tiles), +-0 at 2048^3 (256), -0.7% and -1.1% at
    # 4096x1024x4096 and 5003x3001x2039 (4 and 1.7 times as many rows as columns)
    "columns_min_tiles": 512,
    "columns_max_aspect": 1.0,
    # read an A or B whose leading dimension or width is not a multiple of the vector width
    # where it lies, a float at a time (kernels with the AB_UNALIGNED build), instead of
    # copying it into an aligned buffer first, in products of at most unaligned_max_volume
    # multiply-adds m*n*k, or of at most unaligned_light_volume where each work-item holds
    # at most unaligned_light_block sums (WPTM*WPTN) and a work-group has at least
    # unaligned_light_items work-items (0: never). On an H100 at 1023^3 the copies took 7.6
    # and 7.5 us of device time and the device waited 5.9 and 5.8 us between launches,
    # against a 65.9 us product; the build's loads slow a large block's tile loop
    # (x0.80-0.88 at 4001^3, 5003x3001x2039, 7919x7919x769 with 16x8 a work-item), while a
    # small block in a large group barely notices them. Whole calls, H100, 2026-12-06,
    # against the copies: 4096x4096xk x1.20-1.27 as fast for k <= 15, x1.10 at 31, x0.98 at
    # 127, x1.43 at 2047x2047x63, x0.81 at 1501x1501x401 (16x4 a work-item); 8x4 in groups
    # of 256 x1.11 at 767^3 and 1023^3 (the light rule against the volume alone x1.08 at
    # 1023^3 and 999^3); 8x4 in groups of 128 (the 1152^3 entry, 32x128x32) read in place
    # took x1.15 the time of the 16x4 entry's copies at 1151^3 and 1201^3; and the 8x4
    # entry in groups of 256 read in place from 1.5e9 multiply-adds (2^31 before, measured
    # up to 1023^3 only) took x1.03-1.38 the time of its copies at 1999x999x999, 1279^3,
    # 2566x685x896 and 684x687x4284 (docs/levers.md)
    "unaligned_max_volume": 2**29,
    "unaligned_light_block": 32,
    "unaligned_light_items": 256,
    "unaligned_light_volume": 2**30,
    # ...and up to unaligned_heavy_volume where a work-item holds at least
    # unaligned_heavy_block sums and the copies would move at least unaligned_heavy_share
    # floats a multiply-add (A's m*k of m*n*k: 1/n; B's: 1/m): copied, such a product pays
    # for the copies in proportion to that share, read in place for a slower loop. H100,
    # whole calls with A's and B's copies in one launch (440e578), 16x8 blocks: read in
    # place x1.08 at 2047x1023x1023 (share 1/682), x1.02 at 1000x1000x2047 (1/1000), x0.94
    # at 4096x4096x127 (1/4096, A alone copied), all about 2^31; against the rule before,
    # at six shapes it was not fitted to x1.03-1.14, with unchanged plans x1.02-1.04 in the
    # same runs (results/h100/README.md)
    "unaligned_heavy_block": 128,
    "unaligned_heavy_volume": 2**31,
    "unaligned_heavy_share": 1 / 2048,
    # ...and for any block and volume where the copies would move unaligned_share floats a
    # multiply-add or more (0: never): a narrow side's copy of the other operand costs a
    # pass over it for few multiply-adds. H100, the H200's database, whole calls against 0
    # (2026-12-07): at 1/64 (m or n of 64 or less), x1.287 at 8 drawn shapes whose launch
    # it changed and x1.235 at 17 of a later draw, none slower by over 5% (22x5570x5941
    # 0.49 -> 0.79x cuBLAS); at 1/128 x1.122 with 7 of 40 slower, at 1/256 x0.979. Off by
    # default: measured on Hopper only; the H200's database sets it
    "unaligned_share": 0,
    # cut k into up to group_slices_max (1: never) slices within each work-group (kernel
    # 5's KG build: more warps a compute unit for one tile, the slices' sums added in local
    # memory, no second launch) where the launch is unsplit with at most
    # group_slices_fill work-groups a compute unit, each slice at least
    # group_slices_min_steps tile steps deep, in groups of at most group_slices_items
    # work-items (group_slices_float_items for the float-at-a-time build with blocks of at
    # most group_slices_float_block sums), where the larger group fits the device
    # (GemmPlan.groups). H100, whole calls, 2 slices against none: 512^3 (64x32 tiles, 128
    # items) x1.05, 999^3 and 1023^3 (64x128, 8x4, 256 items, floats) x1.08 and x1.10, 66
    # drawn shapes where the rule takes slices x1.12 geomean (x0.93-1.31); 1024^3's vector
    # loads in 512 items x0.88, two groups a unit x0.87-0.92, 58x2454x262 (16x4, floats,
    # 512 items) x0.84 (docs/levers.md)
    "group_slices_max": 2,
    "group_slices_fill": 1.0,
    "group_slices_min_steps": 8,
    "group_slices_items": 256,
    "group_slices_float_items": 512,
    "group_slices_float_block": 32,
    # ...and in launches cut into slices of k across work-groups too (split-K) where
    # group_slices_split is 1, the groups of all slices counted: H100, whole calls against
    # 0 at 22 drawn shapes whose launches run 2-8 slices of at most a group a unit x1.05-1.12
    # (one at x0.84 ran x1.09 when timed again), 1025^3, 1151^3, 767^3 (no slices taken)
    # x0.95-1.005 (docs/levers.md)
    "group_slices_split": 1,
    # products whose m or n is at most matvec_max run as matrix-vector products when no
    # kernel is named (clgemm/matvec.py; 0: never), their depth (rows swept, or vectors of a
    # row) in slices so that the work-groups reach matvec_groups a compute unit, none
    # thinner than matvec_min_depth, where no tune timed a count (matvec_slices). Measured
    # on the CPU device only: 6.1-175x the GEMM kernel's path there (results/pocl/README.md)
    "matvec_max": 1,
    "matvec_groups": 64,
    "matvec_min_depth": 256,
}


# The range each threshold may take: a database value outside it is ignored (facts), as
# one that would divide by zero (matvec_min_depth 0), never end a search (split_thinner
# below 1) or send a product of several rows and columns to the one-row kernels
# (matvec_max above 1: they compute its first row only) is a fault of the file.
_INF = float("inf")
LIMITS: dict[str, tuple[float, float]] = {
    "pad_min_volume": (0, _INF), "pad_min_k": (0, _INF), "pad_min_mn": (0, _INF),
    "pad_waste": (1, _INF), "pad_depth": (0, 1),
    "split_fill": (1e-3, _INF), "split_min_k": (1, _INF), "split_deep_k": (1, _INF),
    "split_thinner": (1, _INF), "split_few_min_k": (0, _INF),
    "split_sparse_fill": (0, _INF), "split_sparse_min_k": (1, _INF),
    "split_wave_gain": (0, 1), "split_wave_max_block": (0, _INF),
    "split_wave_min_fill": (0, _INF), "split_wave_min_k": (1, _INF), "split_wave_near": (1, _INF),
    "split_count_gain": (0, 1),
    "near_within": (0, _INF), "wave_margin": (1, _INF), "tile_waste": (1, _INF),
    "far_within": (0, _INF), "far_margin": (1, _INF),
    "latency_warps": (0, _INF), "split_slow_block": (1, _INF), "split_block_cost": (1, _INF),
    "tail_min_gain": (0, 1), "tail_piece_steps": (0, _INF), "tail_max_slices": (1, _INF),
    "tail_min_k": (1, _INF), "peel_max_share": (0, 1), "peel_min_gain": (0, 1),
    "peel_min_k": (0, _INF), "peel_min_volume": (0, _INF), "peel_split": (0, 1),
    "cut_min_gain": (0, 1), "cut_max_rest": (0, _INF),
    "cut_min_k": (0, _INF), "c_rows_max_k": (0, _INF),
    "kmajor_min_n": (0, _INF), "kmajor_min_volume": (0, _INF),
    "columns_min_tiles": (0, _INF), "columns_max_aspect": (0, _INF),
    "unaligned_max_volume": (0, _INF), "unaligned_light_block": (0, _INF),
    "unaligned_light_items": (0, _INF), "unaligned_light_volume": (0, _INF),
    "unaligned_heavy_block": (1, _INF), "unaligned_heavy_volume": (0, _INF),
    "unaligned_heavy_share": (0, _INF), "unaligned_share": (0, _INF),
    "group_slices_max": (1, 4), "group_slices_fill": (0, _INF),
    "group_slices_min_steps": (1, _INF), "group_slices_items": (1, _INF),
    "group_slices_float_items": (1, _INF), "group_slices_float_block": (1, _INF),
    "group_slices_split": (0, 1),
    "matvec_max": (0, 1), "matvec_groups": (1, _INF), "matvec_min_depth": (1, _INF),
}


@dataclass(frozen=True)
class Facts:
    """What the decisions need to know of a device: its compute units, the largest buffer
    it can allocate (split-K's partial sums must fit in one), and its thresholds."""
    compute_units: int
    max_alloc: int = 2**62
    thresholds: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULTS))

    def __getitem__(self, name: str) -> float:
        return self.thresholds[name]


def facts(dev, thresholds: Mapping[str, float] | None = None) -> Facts:
    """A device's facts, with the thresholds given (the database's) over the defaults;
    a name the heuristics do not know is ignored with a warning."""
    given = dict(thresholds or {})
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        warnings.warn(f"unknown heuristics thresholds ignored: {', '.join(unknown)} (known: "
                      f"{', '.join(DEFAULTS)})", UserWarning, stacklevel=2)
    return Facts(dev.max_compute_units, dev.max_mem_alloc_size,
                 {**DEFAULTS, **{k: v for k, v in given.items() if k in DEFAULTS}})

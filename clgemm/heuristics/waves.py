"""The wave model: how long a launch takes on its busiest compute unit (wave_steps), and
the decisions made by it: which tuned entry to take at a shape nobody tuned
(choose_entry) and whether parts of C are computed apart (peel)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from .. import kernels
from ..operands import rounded
from ..thresholds import Facts
from .builds import Shape, launched, resident, sums, tile_of, tiles
from .slices import splits

WARP = 32     # work-items a warp (NVIDIA's): wave_steps counts a group's warps


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
    s = splits(kern, params, at, f, tuned=tuned, residents=residents) if slices is None else slices
    groups, depth = tiles(kern, params, at)
    groups *= s
    r = resident(kern, params, at, residents)
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
    cut_min_k deep and of peel_min_volume multiply-adds or more (the rest's copies and
    launches cost a small call more than a wave saves). Not in choose_entry's prediction:
    an entry is chosen as if no launch were cut (where the cut swayed that choice, on an
    H100, 2 of 17 entries so taken ran x0.80 and x0.88, and shallower products lost up to
    a fifth; thresholds.py has the measurements)."""
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
        wave = resident(kern, params, whole_of, residents) * f.compute_units
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
                 f: Facts, own: dict[int, float] | None = None) -> tuple[str, dict] | None:
    """Of (kernel key, entry) pairs ranked nearest first (db.near, usable ones only), the
    one to launch at `shape`: entries whose tiles waste over tile_waste times the least are
    passed over (but one tuned at this very shape), then of those within near_within of the
    nearest, one predicted faster than the nearest by wave_margin, and of those farther but
    within far_within, one predicted faster by far_margin, else the nearest. The
    nearest is predicted at the launch it would make, its whole tiles apart where
    `edge_peel` takes them (at 2049^3 the 2048^3 entry's 17 x 17 tiles are two waves, its
    16 x 16 one: it stays, where the 2240^3 entry had been taken), a wave cut not counted;
    not knowing the operands' alignment, as if the call read none of them a float at a
    time, where peel is not taken. The
    others are not: on an H100, peeled entries taken over a nearer one ran x0.72-1.28 as
    fast at 39 shapes, the worst a 32 x 128 entry at a wave of 4 groups a unit
    (results/h100/README.md). The wave prediction carries farther than near_within, but
    less surely: it knows nothing of a far entry's float build or caches, so only a large
    predicted gain (far_margin) takes one (thresholds.py has the measurements). `own`, where
    given, keeps each entry's steps at its own tuned shape (by id), which no new shape
    changes: the caller keeps it for as long as these candidates and facts hold."""
    from .. import db
    if not candidates:
        return None
    shape = tuple(shape)
    # entries are compared at the counts of slices the other rules take (split_count_gain
    # and split_sparse_fill 0): as with the wave cut, a rule that changed the count swayed
    # the choice to entries no measurement backed (the sparse grids' slices took 128x128
    # tiles in 4 slices at 1808x324x349, where 64x128 unsplit had run)
    f = Facts(f.compute_units, f.max_alloc,
              {**f.thresholds, "split_count_gain": 0, "split_sparse_fill": 0})

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
        base = None if own is None else own.get(id(e))
        if base is None:
            base = wave_steps(kn, e["params"], e["shape"], f, e["resident"], split)
            if own is not None:
                own[id(e)] = base
        return ms * wave_steps(kn, e["params"], at, f, e["resident"], split) / base

    times = [predicted(ke) for ke in near]
    best = min(range(1, len(near)), key=lambda i: times[i] * margins[i])
    return near[best] if times[best] * margins[best] < times[0] else near[0]

"""Launch decisions, as plain functions of (kernel, parameters, shape, device facts).

gemm() asks these questions of every product: pad the operands into whole tiles or not,
read operands whose rows are not whole vectors where they lie or copy them, and in which
order the work-groups take C's tiles (builds); how many slices of k (split-K), within or
across work-groups, and whether one row or column of C makes it a matrix-vector product
(slices); and, by the wave model of a launch's busiest compute unit, which tuned entry to
take at a shape nobody tuned and whether C's few rows and columns past whole tiles, or
its tiles past the last whole wave, are computed apart (waves). Their thresholds, and the
device Facts they come in, are clgemm.thresholds'.
"""

from .builds import (Shape, columns_first, kmajor_a, launched, loads, pads, pads_depth,
                     reads_floats, resident, stages_c, sums, tile_of, tiles)
from .slices import (SPLIT_ROW, group_slices, matvec, matvec_slices, splits, tail_split,
                     workspace_fits)
from .waves import (WARP, choose_entry, edge_peel, entry_split, peel, tile_waste, wave_cut,
                    wave_steps)

__all__ = ["Shape", "columns_first", "kmajor_a", "launched", "loads", "pads", "pads_depth",
           "reads_floats", "resident", "stages_c", "sums", "tile_of", "tiles", "SPLIT_ROW",
           "group_slices", "matvec", "matvec_slices", "splits", "tail_split", "workspace_fits",
           "WARP", "choose_entry", "edge_peel", "entry_split", "peel", "tile_waste", "wave_cut",
           "wave_steps"]

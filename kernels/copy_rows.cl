// copy_rows.cl: a rows x cols block copied between row-major buffers whose leading
// dimensions differ (zero-padded operands, results into a caller's matrix), starting offs
// and offd into them (a block of a caller's larger matrix).
//
// Dimension 0 runs along the row, dimension 1 over the rows. A work-group covers
// PER * get_local_size(0) vectors of each of its rows: work-item i takes vectors i,
// i + LX, i + 2*LX, ... of that stretch (LX the group's width), so that each of its PER
// steps is one contiguous run a warp, read and written. Vectors are VW floats (VW = 4 when
// cols, both leading dimensions and both offsets are multiples of 4, else 1). Counts are in
// vectors. The host gives the scalar build PER = 4 and groups of 64 x 4: one float a
// work-item in groups of 64 x 1 was bound by starting groups, not by memory.
// H200, 4000 x 4000 into leading dimension 4096 (float4, PER = 1): 2.7-3.0 TB/s read +
// write, where clEnqueueCopyBufferRect moved 1.6 TB/s (docs/levers.md). H100, the scalar
// build with PER = 1 in groups of 64 x 1: 0.7-0.8 TB/s; with PER = 4 in groups of 64 x 4
// the device spans of whole calls at 7919x7919x769 and 5003x3001x2039 took x0.96 and x0.93
// the time (results/h100/README.md, "Unaligned operands").

#ifndef VW
#define VW 4
#endif
#ifndef PER
#define PER 1
#endif
#if VW == 4
typedef float4 floatV;
#else
typedef float floatV;
#endif

// One block, rows x cols vectors from src (leading dimension lds, starting offs) into dst:
// row r, vectors c0, c0 + lx, ..., c0 + (PER - 1) * lx of it (lx the group's width).
void copy_block(const int r, const int c0, const int lx, const int rows, const int cols,
                const __global floatV* restrict src, const int offs, const int lds,
                __global floatV* restrict dst, const int offd, const int ldd) {
    if (r >= rows) return;
    #pragma unroll
    for (int i = 0; i < PER; i++) {
        const int c = c0 + i * lx;
        if (c < cols) dst[offd + (size_t)r * ldd + c] = src[offs + (size_t)r * lds + c];
    }
}

__kernel void copy_rows(const int rows, const int cols, const __global floatV* restrict src,
                        const int offs, const int lds, __global floatV* restrict dst,
                        const int offd, const int ldd) {
    const int lx = get_local_size(0);
    copy_block(get_global_id(1), get_group_id(0) * lx * PER + get_local_id(0), lx, rows, cols,
               src, offs, lds, dst, offd, ldd);
}

// Two blocks in one launch: a product whose A and B both need aligned copies waits on one
// launch instead of two. On an H100 the host took about 9 us to enqueue each launch of a
// call, more than a copy of a 1023 x 1023 operand ran (7.6 us), so the device sat idle
// between the copies and before the product (raw/call-steps-unaligned-2026-12-06-63f95f4.txt
// in results/h100). The groups of dimension 0 are the first block's, gx0 a row of groups
// by ceil(rows0 / ly) rows of them, then the second's alike, each group placed in its
// block as copy_rows places it: blocks of other shapes (A m x k, B k x n) waste nothing,
// where one grid over the larger of each dimension ran 1500 x 7000 and 7000 x 1500 at
// x0.83 the speed of two launches.
__kernel void copy_pair(const int rows0, const int cols0, const __global floatV* restrict src0,
                        const int offs0, const int lds0, __global floatV* restrict dst0,
                        const int offd0, const int ldd0,
                        const int rows1, const int cols1, const __global floatV* restrict src1,
                        const int offs1, const int lds1, __global floatV* restrict dst1,
                        const int offd1, const int ldd1) {
    const int lx = get_local_size(0), ly = get_local_size(1), run = lx * PER;
    const int gx0 = (cols0 + run - 1) / run, groups0 = gx0 * ((rows0 + ly - 1) / ly);
    int g = get_group_id(0);
    if (g < groups0) {
        copy_block((g / gx0) * ly + get_local_id(1), (g % gx0) * run + get_local_id(0), lx,
                   rows0, cols0, src0, offs0, lds0, dst0, offd0, ldd0);
    } else {
        g -= groups0;
        const int gx1 = (cols1 + run - 1) / run;
        copy_block((g / gx1) * ly + get_local_id(1), (g % gx1) * run + get_local_id(0), lx,
                   rows1, cols1, src1, offs1, lds1, dst1, offd1, ldd1);
    }
}

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
// work-item in groups of 64 x 1 was bound by starting groups, not by memory. copy_pair
// (below) does two such copies in one launch.
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

// The block's work-group (gx, gy): rows gy * LY .., vectors gx * LX * PER ..
static void copy_part(const int gx, const int gy, const int rows, const int cols,
                      const __global floatV* restrict src, const int offs, const int lds,
                      __global floatV* restrict dst, const int offd, const int ldd) {
    const int r = gy * get_local_size(1) + get_local_id(1);
    const int lx = get_local_size(0);
    const int c0 = gx * lx * PER + get_local_id(0);
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
    copy_part(get_group_id(0), get_group_id(1), rows, cols, src, offs, lds, dst, offd, ldd);
}

// Two blocks in one launch (a product's A and B, each copied into an aligned buffer): a
// launch of its own costs NVIDIA's host about 9 us, and the device waits for it after a
// short copy. The launch is one row of work-groups (dimension 0, which takes more groups
// than dimension 1 on NVIDIA's devices): groups 0 .. g0-1 copy the first block, gx0 of
// them along each of its bands of rows, the rest the second likewise.
__kernel void copy_pair(const int rows0, const int cols0, const __global floatV* restrict src0,
                        const int offs0, const int lds0, __global floatV* restrict dst0,
                        const int offd0, const int ldd0, const int gx0, const int g0,
                        const int rows1, const int cols1, const __global floatV* restrict src1,
                        const int offs1, const int lds1, __global floatV* restrict dst1,
                        const int offd1, const int ldd1, const int gx1) {
    const int g = get_group_id(0);
    if (g < g0)
        copy_part(g % gx0, g / gx0, rows0, cols0, src0, offs0, lds0, dst0, offd0, ldd0);
    else
        copy_part((g - g0) % gx1, (g - g0) / gx1, rows1, cols1, src1, offs1, lds1, dst1,
                  offd1, ldd1);
}

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

__kernel void copy_rows(const int rows, const int cols, const __global floatV* restrict src,
                        const int offs, const int lds, __global floatV* restrict dst,
                        const int offd, const int ldd) {
    const int r = get_global_id(1);
    const int lx = get_local_size(0);
    const int c0 = get_group_id(0) * lx * PER + get_local_id(0);
    if (r >= rows) return;
    #pragma unroll
    for (int i = 0; i < PER; i++) {
        const int c = c0 + i * lx;
        if (c < cols) dst[offd + (size_t)r * ldd + c] = src[offs + (size_t)r * lds + c];
    }
}

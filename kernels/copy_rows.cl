// copy_rows.cl: a rows x cols block copied between row-major buffers whose leading
// dimensions differ (zero-padded operands, results into a caller's matrix), starting offs
// and offd into them (a block of a caller's larger matrix).
//
// One work-item per vector of VW floats (VW = 4 when cols, both leading dimensions and both
// offsets are multiples of 4, else 1): dimension 0 runs along the row, dimension 1 over the
// rows, so a work-group reads and writes one contiguous run of a row. Counts are in vectors.
// H200, 4000 x 4000 into leading dimension 4096: 2.7-3.0 TB/s read + write, where
// clEnqueueCopyBufferRect moved 1.6 TB/s (docs/levers.md).

#ifndef VW
#define VW 4
#endif
#if VW == 4
typedef float4 floatV;
#else
typedef float floatV;
#endif

__kernel void copy_rows(const int rows, const int cols, const __global floatV* restrict src,
                        const int offs, const int lds, __global floatV* restrict dst,
                        const int offd, const int ldd) {
    const int c = get_global_id(0), r = get_global_id(1);
    if (c < cols && r < rows) dst[offd + (size_t)r * ldd + c] = src[offs + (size_t)r * lds + c];
}

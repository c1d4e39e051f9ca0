// Transpose through a padded local-memory tile.
//
// A TS x TS work-group reads a TS x TS tile of `in` with coalesced row reads, stores it in
// local memory, and after one barrier writes it back column by column, so the writes to
// `out` are coalesced too. The tile has TS+1 columns: reading a column of it then touches
// TS different banks instead of one (no bank conflicts).
//
// Parameters: TS (tile side), RPT (rows per work-item: the work-group is TS x TS/RPT,
// each work-item moving RPT elements, which keeps more loads in flight).
// Constraints: RPT divides TS; TS*TS/RPT <= max work-group size;
// TS*(TS+1)*4 bytes <= local memory.
// Edges: any rows, cols >= 1 (bounds checks).
//
// H200 8192^2: 0.93x a device copy (3.9 TB/s) at TS=64 RPT=8, results/h200/README.md.

#ifndef TS
#define TS 64
#endif
#ifndef RPT
#define RPT 8
#endif

__kernel __attribute__((reqd_work_group_size(TS, TS / RPT, 1)))
void transpose(const int rows, const int cols,
               const __global float* restrict in, const int ldi,
               __global float* restrict out, const int ldo) {
    __local float tile[TS][TS + 1];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int r0 = get_group_id(1) * TS, c0 = get_group_id(0) * TS;

    // Read rows r0+ty, r0+ty+TS/RPT, ... of the input tile.
    #pragma unroll
    for (int i = 0; i < TS; i += TS / RPT) {
        const int r = r0 + ty + i, c = c0 + tx;
        if (r < rows && c < cols) tile[ty + i][tx] = in[r * ldi + c];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    // Write output row c0+ty+i (input column) from tile column ty+i: out[c][r] = in[r][c].
    #pragma unroll
    for (int i = 0; i < TS; i += TS / RPT) {
        const int c = c0 + ty + i, r = r0 + tx;
        if (c < cols && r < rows) out[c * ldo + r] = tile[tx][ty + i];
    }
}

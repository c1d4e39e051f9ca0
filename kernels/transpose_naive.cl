// Transpose, naive: one work-item per element, out[c][r] = in[r][c].
//
// Reads are coalesced (dimension 0 runs along a row of `in`), writes are strided by
// the output's leading dimension: each work-item of a warp writes a different row, so
// each write fills a 32-byte sector with 4 bytes.
//
// Parameters: TS, the work-group is TS x TS.
// Constraints: TS*TS <= max work-group size.
// Edges: any rows, cols >= 1 (bounds checks).
//
// H200 8192^2: 0.26x a device copy (1103 GB/s) at TS=16, results/h200/README.md.

#ifndef TS
#define TS 16
#endif

__kernel __attribute__((reqd_work_group_size(TS, TS, 1)))
void transpose(const int rows, const int cols,
               const __global float* restrict in, const int ldi,
               __global float* restrict out, const int ldo) {
    const int c = get_global_id(0);
    const int r = get_global_id(1);
    if (r < rows && c < cols) out[c * ldo + r] = in[r * ldi + c];
}

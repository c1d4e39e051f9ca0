// Transpose without local memory: lanes exchange registers by shuffle.
//
// A warp (32 work-items along dimension 0) moves a (4*TILES) x 32 tile of `in`. Lane
// (i, q) = (lane >> 2, lane & 3) reads, for t = 0..TILES-1, the 4 floats of input row
// r0 + 4t + q at columns c0 + 4i .. c0 + 4i + 3 as one 16-byte vector: a warp's load
// covers 4 whole 128-byte rows. The quad of lanes 4i..4i+3 then holds a 4 x 4 block per
// t, one row each, and two butterfly shuffle steps (QUAD_TRANSPOSE) leave lane q holding
// column q of it: 4 consecutive floats of output row c0 + 4i + q. Over t these are
// 4*TILES consecutive floats of that row, which the lane writes as TILES aligned 16-byte
// vectors: with TILES >= 2 each lane fills whole 32-byte sectors by itself.
// No local memory and no barrier on NVIDIA (inline PTX shuffles); elsewhere the shuffle is
// emulated through local memory (see shuffle.cl).
//
// Parameters: WARPS (warps per work-group, stacked along the rows), TILES (4-row blocks
// per warp, all loaded before the first exchange to keep more loads in flight).
// Constraints: 32*WARPS <= max work-group size.
// Edges: any rows, cols >= 1. Tiles that reach past the matrix, or leading dimensions
// that are not multiples of 4, take guarded scalar loads and stores; every lane still
// takes part in the shuffles.

#include "common.cl"
#include "shuffle.cl"

#ifndef WARPS
#define WARPS 4
#endif
#ifndef TILES
#define TILES 2
#endif

#define TROWS (4 * TILES * WARPS)   // input rows per work-group

__kernel __attribute__((reqd_work_group_size(32, WARPS, 1)))
void transpose(const int rows, const int cols,
               const __global float* restrict in, const int ldi,
               __global float* restrict out, const int ldo) {
    SHUFFLE_SCRATCH(32 * WARPS)
    const int lane = get_local_id(0), warp = get_local_id(1);
    const int lid_ = warp * 32 + lane;
    const int q = lane & 3, i = lane >> 2;
    const int c0 = get_group_id(0) * 32;
    const int r0 = get_group_id(1) * TROWS + warp * 4 * TILES;   // this warp's first row
    const bool full = ldi % 4 == 0 && ldo % 4 == 0 && c0 + 32 <= cols
                      && get_group_id(1) * TROWS + TROWS <= rows;

    float x[TILES][4];
    #pragma unroll
    for (int t = 0; t < TILES; t++) {
        const int row = r0 + 4 * t + q, col = c0 + 4 * i;
        if (full) {
            const float4 v = *(const __global float4*)(in + row * ldi + col);
            UNPACK4(v, x[t], 0);
        } else {
            #pragma unroll
            for (int w = 0; w < 4; w++)
                x[t][w] = (row < rows && col + w < cols) ? in[row * ldi + col + w] : 0.0f;
        }
    }
    #pragma unroll
    for (int t = 0; t < TILES; t++) {
        QUAD_TRANSPOSE(x[t], 4, 1, q)
    }
    // Lane q now holds input column c0 + 4i + q, rows r0 .. r0 + 4*TILES - 1.
    const int orow = c0 + 4 * i + q;
    #pragma unroll
    for (int t = 0; t < TILES; t++) {
        const int ocol = r0 + 4 * t;
        if (full) {
            *(__global float4*)(out + orow * ldo + ocol) = PACK4(x[t], 0);
        } else {
            #pragma unroll
            for (int w = 0; w < 4; w++)
                if (orow < cols && ocol + w < rows) out[orow * ldo + ocol + w] = x[t][w];
        }
    }
}

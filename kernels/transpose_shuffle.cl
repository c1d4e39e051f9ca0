// Transpose without local memory: lanes exchange registers by shuffle.
//
// A warp (32 work-items along dimension 0) moves a 64-row x 32-column block of `in`: two
// 32 x 32 tiles t = 0, 1 on top of each other. Lane bits: cb = lane & 7 (input columns
// 4cb .. 4cb+3), rq = lane >> 3. For each tile t and 16-row half hh the lane reads the four
// rows 32t + 16hh + 4rq + k (k = 0..3) at its 4 columns, one 16-byte vector per row, so
// each load instruction covers 4 rows x 128 contiguous bytes. The lane then holds four
// 4 x 4 blocks, and transposing a block is only a renaming of its registers: column w of
// block (t, hh) is 4 consecutive floats of output row 4cb + w, at output columns
// 32t + 16hh + 4rq .. +3 (a 16-byte chunk; the block's 64 output columns are 16 chunks).
//
// The exchange makes each store instruction write 2 whole output rows of 64 floats
// (256 contiguous bytes each): the 16 chunks of a row must sit in 16 lanes, so the chunk
// bits t and hh, which are register-slot bits after the loads, must become lane bits.
// Two butterfly stages swap them with column bits: hh with lane bit 2 (lane ^ 4), then t
// with lane bit 1 (lane ^ 2). In each stage a lane sends the half of its slots whose bit
// differs from its own lane bit and puts what it receives there. Afterwards slot [a][b]
// holds column-block bits 1 and 2 = a, b, and lane bits 1 and 2 carry t and hh.
// 64 shuffles move the 64 floats a lane holds. No local memory and no barrier on NVIDIA
// (inline PTX shuffles); elsewhere the shuffle is emulated through local memory (see
// shuffle.cl).
//
// Parameters: WARPS (warps per work-group, stacked along the input rows).
// Constraints: 32*WARPS <= max work-group size.
// Edges: any rows, cols >= 1. Blocks that reach past the matrix, or leading dimensions
// that are not multiples of 4, take guarded scalar loads and stores; every lane still
// takes part in the shuffles.
//
// H200 8192^2: 0.91x a device copy (3.8 TB/s) at WARPS=1, results/h200/README.md.

#include "common.cl"
#include "shuffle.cl"

#ifndef WARPS
#define WARPS 1
#endif

#define TROWS (64 * WARPS)   // input rows per work-group
#define TCOLS 32             // input columns per work-group

__kernel __attribute__((reqd_work_group_size(32, WARPS, 1)))
void transpose(const int rows, const int cols,
               const __global float* restrict in, const int ldi,
               __global float* restrict out, const int ldo) {
    SHUFFLE_SCRATCH(32 * WARPS)
    const int lane = get_local_id(0), warp = get_local_id(1);
    const int lid_ = warp * 32 + lane;
    const int cb = lane & 7;          // input columns 4cb .. 4cb+3 of the block
    const int rq = lane >> 3;         // input rows 4rq .. 4rq+3 of each 16-row half
    const int b1 = (lane >> 1) & 1;   // lane bits 1 and 2: column-block bits before the
    const int b2 = (lane >> 2) & 1;   // exchange, t and hh after it
    const int c0 = get_group_id(0) * TCOLS;
    const int r0 = get_group_id(1) * TROWS + warp * 64;   // this warp's first input row
    const bool full = ldi % 4 == 0 && ldo % 4 == 0 && c0 + TCOLS <= cols && r0 + 64 <= rows;

    // x[t][hh][k][w] = in[r0 + 32t + 16hh + 4rq + k][c0 + 4cb + w]
    float x[2][2][4][4];
    #pragma unroll
    for (int t = 0; t < 2; t++)
        #pragma unroll
        for (int hh = 0; hh < 2; hh++)
            #pragma unroll
            for (int k = 0; k < 4; k++) {
                const int row = r0 + 32 * t + 16 * hh + 4 * rq + k;
                const int col = c0 + 4 * cb;
                if (full) {
                    const float4 v = *(const __global float4*)(in + row * ldi + col);
                    UNPACK4(v, x[t][hh][k], 0);
                } else {
                    #pragma unroll
                    for (int w = 0; w < 4; w++)
                        x[t][hh][k][w] = (row < rows && col + w < cols) ? in[row * ldi + col + w] : 0.0f;
                }
            }
    // Stage 1: hh <-> lane bit 2. Slot hh of a lane with b2 = 1 - hh goes to lane ^ 4.
    #pragma unroll
    for (int t = 0; t < 2; t++)
        #pragma unroll
        for (int k = 0; k < 4; k++)
            #pragma unroll
            for (int w = 0; w < 4; w++) {
                const float got = SHFL_XOR(b2 ? x[t][0][k][w] : x[t][1][k][w], 4);
                if (b2) x[t][0][k][w] = got; else x[t][1][k][w] = got;
            }
    // Stage 2: t <-> lane bit 1, the same way with lane ^ 2.
    #pragma unroll
    for (int s = 0; s < 2; s++)
        #pragma unroll
        for (int k = 0; k < 4; k++)
            #pragma unroll
            for (int w = 0; w < 4; w++) {
                const float got = SHFL_XOR(b1 ? x[0][s][k][w] : x[1][s][k][w], 2);
                if (b1) x[0][s][k][w] = got; else x[1][s][k][w] = got;
            }
    // Slot [a][b], column w: output row c0 + 4((lane & 1) + 2a + 4b) + w, at output columns
    // r0 + 32t + 16hh + 4rq .. +3 with t = b1, hh = b2: x[a][b][0..3][w].
    #pragma unroll
    for (int a = 0; a < 2; a++)
        #pragma unroll
        for (int b = 0; b < 2; b++)
            #pragma unroll
            for (int w = 0; w < 4; w++) {
                const int orow = c0 + 4 * ((lane & 1) + 2 * a + 4 * b) + w;
                const int ocol = r0 + 32 * b1 + 16 * b2 + 4 * rq;
                if (full) {
                    *(__global float4*)(out + orow * ldo + ocol) =
                        (float4)(x[a][b][0][w], x[a][b][1][w], x[a][b][2][w], x[a][b][3][w]);
                } else {
                    #pragma unroll
                    for (int k = 0; k < 4; k++)
                        if (orow < cols && ocol + k < rows) out[orow * ldo + ocol + k] = x[a][b][k][w];
                }
            }
}

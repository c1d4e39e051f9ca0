// Transpose without local memory: lanes exchange registers by shuffle.
//
// A warp (32 work-items along dimension 0) moves a 32 x 32 tile of `in`. Lane
// (rq, cb) = (lane >> 3, lane & 7) reads, for each of the two 16-row halves hh of the tile,
// the 4 floats at columns 4cb .. 4cb+3 of the four rows 16hh + 4rq + k (k = 0..3), one
// 16-byte vector per row. Each load instruction thus covers 4 rows x 128 contiguous bytes.
// The lane now holds two 4 x 4 blocks, and transposing a block is only a renaming of its
// registers: column w of block hh is 4 consecutive floats of output row 4cb + w.
// Stored like that, 8 lanes would write 8 output rows x 64 bytes per instruction. One
// exchange makes it 4 rows x 128 bytes: lanes cb and cb ^ 4 (lane ^ 4) trade one block,
// so that lane bit 2, which meant "input columns 16..31", comes to mean "input rows
// 16..31", and the register slot takes the column half. Each store instruction then
// writes 4 whole output rows of 32 consecutive floats, from 8 lanes each.
// 16 shuffles move the 32 floats a lane holds per tile. No local memory and no barrier on
// NVIDIA (inline PTX shuffles); elsewhere the shuffle is emulated through local memory
// (see shuffle.cl).
//
// Parameters: WARPS (warps per work-group, along dimension 1), TILES (32 x 32 tiles each
// warp moves, all loaded before the exchange to keep more loads in flight).
// Constraints: 32*WARPS <= max work-group size.
// Edges: any rows, cols >= 1. Tiles that reach past the matrix, or leading dimensions
// that are not multiples of 4, take guarded scalar loads and stores; every lane still
// takes part in the shuffles.
//
// H200, 8192^2, bytes read plus written, ratio to a device copy in the same run
// (results/h200/session4/call1-6): WARPS=1 TILES=2 (the defaults) 3736-3760 GB/s,
// 0.893-0.899x; the other points of the space 0.857-0.894x. The padded local-memory
// transpose reaches 0.93x in the same runs, so the 0.9x target is still missed by a hair.
// The design before this one (8 x 32 warp tiles, a 4 x 4 butterfly between the lanes of
// each quad, then one more exchange; 16 output rows x 32 bytes per store) gave 0.887-0.890x
// in the same run: storing whole 128-byte rows gained under 1%, so the stores were not
// what held it back. Nor was the launch order: walking down bands of 2-32 tile rows
// first, so that the groups running together write longer runs of each output row, gave
// 0.871-0.894x against 0.892-0.895x along rows (call 2). Tiles side by side along the
// columns (0.870-0.894x, call 6) and streaming cache hints through inline PTX
// (st.global.cs 0.875-0.880x, ld.global.cs 0.867-0.869x, call 5) did not help either.

#include "common.cl"
#include "shuffle.cl"

#ifndef WARPS
#define WARPS 1
#endif
#ifndef TILES
#define TILES 2
#endif

#define TROWS (32 * WARPS * TILES)   // input rows per work-group
#define TCOLS 32                     // input columns per work-group

__kernel __attribute__((reqd_work_group_size(32, WARPS, 1)))
void transpose(const int rows, const int cols,
               const __global float* restrict in, const int ldi,
               __global float* restrict out, const int ldo) {
    SHUFFLE_SCRATCH(32 * WARPS)
    const int lane = get_local_id(0), warp = get_local_id(1);
    const int lid_ = warp * 32 + lane;
    const int cb = lane & 7;          // input columns 4cb .. 4cb+3 of the tile
    const int rq = lane >> 3;         // input rows 4rq .. 4rq+3 of each 16-row half
    const int hi = (lane >> 2) & 1;   // cb >= 4: the lane's columns are in the tile's right half
    const int c0 = get_group_id(0) * TCOLS;
    const int rbase = get_group_id(1) * TROWS;
    const bool full = ldi % 4 == 0 && ldo % 4 == 0 && c0 + TCOLS <= cols && rbase + TROWS <= rows;

    // x[t][hh][k][w] = in[r0 + 16hh + 4rq + k][c0 + 4cb + w], r0 the first row of tile t.
    float x[TILES][2][4][4];
    #pragma unroll
    for (int t = 0; t < TILES; t++)
        #pragma unroll
        for (int hh = 0; hh < 2; hh++)
            #pragma unroll
            for (int k = 0; k < 4; k++) {
                const int row = rbase + (t * WARPS + warp) * 32 + 16 * hh + 4 * rq + k;
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
    // The exchange. Before, a lane holds in slot hh the block at (row half hh, column half
    // hi). Each lane sends its slot 1 - hi and puts what it receives, the partner's slot hi,
    // there: lane hi = 0 gets (rows 0-15, columns 16-31), lane hi = 1 gets (rows 16-31,
    // columns 0-15). After, slot s holds the block at (row half hi, column half s).
    #pragma unroll
    for (int t = 0; t < TILES; t++)
        #pragma unroll
        for (int k = 0; k < 4; k++)
            #pragma unroll
            for (int w = 0; w < 4; w++) {
                const float got = SHFL_XOR(hi ? x[t][0][k][w] : x[t][1][k][w], 4);
                if (hi) x[t][0][k][w] = got; else x[t][1][k][w] = got;
            }
    // Slot s, column w: output row c0 + 16s + 4(cb & 3) + w, at output columns
    // r0 + 16hi + 4rq .. +3, which are x[t][s][0..3][w].
    #pragma unroll
    for (int t = 0; t < TILES; t++)
        #pragma unroll
        for (int s = 0; s < 2; s++)
            #pragma unroll
            for (int w = 0; w < 4; w++) {
                const int orow = c0 + 16 * s + 4 * (cb & 3) + w;
                const int ocol = rbase + (t * WARPS + warp) * 32 + 16 * hi + 4 * rq;
                if (full) {
                    *(__global float4*)(out + orow * ldo + ocol) =
                        (float4)(x[t][s][0][w], x[t][s][1][w], x[t][s][2][w], x[t][s][3][w]);
                } else {
                    #pragma unroll
                    for (int k = 0; k < 4; k++)
                        if (orow < cols && ocol + k < rows) out[orow * ldo + ocol + k] = x[t][s][k][w];
                }
            }
}

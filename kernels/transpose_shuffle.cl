// Transpose without local memory: lanes exchange registers by shuffle.
//
// A warp (32 work-items along dimension 0) moves an 8 x 16 tile of `in` per step. Lane
// (h, i, q) = (lane >> 4, (lane >> 2) & 3, lane & 3) reads the 4 floats of input row
// r0 + 4h + q at columns c0 + 4i .. c0 + 4i + 3 as one 16-byte vector, so the four
// lanes of a quad hold a 4 x 4 block, one row each. Two butterfly shuffle steps
// (QUAD_TRANSPOSE) leave lane q holding column q of that block: 4 consecutive floats of
// output row c0 + 4i + q. Each lane then writes one aligned 16-byte vector, and the two
// lanes with h = 0 and 1 fill one whole 32-byte sector of that output row.
// No local memory and no barrier on NVIDIA (inline PTX shuffles); elsewhere the shuffle is
// emulated through local memory (see shuffle.cl).
//
// Parameters: WARPS (warps per work-group, along dimension 1), TILES (tiles each warp
// moves per launch, all loaded before the first exchange to keep more loads in flight),
// WIDE (1: a warp tile of 8 x 32, so that each load covers four whole 128-byte rows;
// lanes i and i^1 then trade halves so that each store still fills whole sectors).
// H200, 8192^2, counting reads and writes, ratio to a device copy in the same run
// (results/h200/transposes_k6-session2.json): WARPS=2 TILES=8 WIDE=1 (the defaults)
// 3715 GB/s, 0.888x; WIDE=0 peaks at 0.847x (WARPS=1 TILES=4): the whole-row loads are
// worth 5%. Still short of the padded local-memory transpose (0.93x). A variant whose
// lanes each wrote 32 contiguous bytes as two 16-byte stores fell to 0.48x: the two halves
// of each sector then come from different store instructions. TILES=16 did not help
// (0.879-0.881x), nor did warps placed side by side along the columns so that a
// work-group reads 256-1024 contiguous bytes of each input row, as the local transpose
// does (0.847-0.885x against 0.890x in the same run; results/h200/session3/call16/).
// Constraints: 32*WARPS <= max work-group size.
// Edges: any rows, cols >= 1. Tiles that reach past the matrix, or leading dimensions
// that are not multiples of 4, take guarded scalar loads and stores; every lane still
// takes part in the shuffles.

#include "common.cl"
#include "shuffle.cl"

#ifndef WARPS
#define WARPS 2
#endif
#ifndef TILES
#define TILES 8
#endif
#ifndef WIDE
#define WIDE 1
#endif

#define TROWS (8 * WARPS * TILES)   // input rows per work-group
#define TCOLS (16 << WIDE)          // input columns per work-group
#define HB (1 + WIDE)               // 4-row blocks per lane per tile

__kernel __attribute__((reqd_work_group_size(32, WARPS, 1)))
void transpose(const int rows, const int cols,
               const __global float* restrict in, const int ldi,
               __global float* restrict out, const int ldo) {
    SHUFFLE_SCRATCH(32 * WARPS)
    const int lane = get_local_id(0), warp = get_local_id(1);
    const int lid_ = warp * 32 + lane;
    const int q = lane & 3;
#if WIDE
    const int i = lane >> 2;                       // column block 0..7; row block = hb
#else
    const int i = (lane >> 2) & 3, hl = lane >> 4; // column block 0..3; row block = hl
#endif
    const int c0 = get_group_id(0) * TCOLS;
    const int rbase = get_group_id(1) * TROWS;
    const bool full = ldi % 4 == 0 && ldo % 4 == 0 && c0 + TCOLS <= cols && rbase + TROWS <= rows;

    float x[TILES][HB][4];
    #pragma unroll
    for (int t = 0; t < TILES; t++)
        #pragma unroll
        for (int hb = 0; hb < HB; hb++) {
#if WIDE
            const int h = hb;
#else
            const int h = hl;
#endif
            const int row = rbase + (t * WARPS + warp) * 8 + 4 * h + q, col = c0 + 4 * i;
            if (full) {
                const float4 v = *(const __global float4*)(in + row * ldi + col);
                UNPACK4(v, x[t][hb], 0);
            } else {
                #pragma unroll
                for (int w = 0; w < 4; w++)
                    x[t][hb][w] = (row < rows && col + w < cols) ? in[row * ldi + col + w] : 0.0f;
            }
        }
    #pragma unroll
    for (int t = 0; t < TILES; t++)
        #pragma unroll
        for (int hb = 0; hb < HB; hb++) {
            QUAD_TRANSPOSE(x[t][hb], 4, 1, q)
        }
    // Lane q now holds, per (t, hb), 4 consecutive floats of output row c0 + 4i + q.
#if WIDE
    // Lanes i and i^1 (lane ^ 4) trade halves so that each store instruction writes both
    // 16-byte halves of a 32-byte sector: the even lane keeps the first half of its own
    // row and takes the first half of its partner's; the odd lane the second halves.
    const bool odd = (i & 1) != 0;
    #pragma unroll
    for (int t = 0; t < TILES; t++)
        #pragma unroll
        for (int w = 0; w < 4; w++) {
            const float got = SHFL_XOR(odd ? x[t][0][w] : x[t][1][w], 4);
            if (odd) x[t][0][w] = got; else x[t][1][w] = got;
        }
#endif
    #pragma unroll
    for (int t = 0; t < TILES; t++)
        #pragma unroll
        for (int hb = 0; hb < HB; hb++) {
#if WIDE
            const int orow = c0 + 4 * ((i & ~1) + hb) + q;
            const int ocol = rbase + (t * WARPS + warp) * 8 + 4 * (i & 1);
#else
            const int orow = c0 + 4 * i + q;
            const int ocol = rbase + (t * WARPS + warp) * 8 + 4 * hl;
#endif
            if (full) {
                *(__global float4*)(out + orow * ldo + ocol) = PACK4(x[t][hb], 0);
            } else {
                #pragma unroll
                for (int w = 0; w < 4; w++)
                    if (orow < cols && ocol + w < rows) out[orow * ldo + ocol + w] = x[t][hb][w];
            }
        }
}

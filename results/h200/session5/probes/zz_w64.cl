// Probe: shuffle transpose whose loads read 2 rows x 256 bytes per instruction (as the
// float4 local transpose does). A warp moves a 32-row x 64-column tile. Lane bits:
// b0,b1 = cq (column-block bits 2,3), b2 = rh, b3,b4 = cl (column-block bits 0,1);
// column block cb = cl + 4cq. Load (j, k): row 8j + 4rh + k, columns 4cb..4cb+3, so the
// lane holds the 4 x 4 block (row block rb = 2j + rh, column block cb) in x[j][k][w].
// Two butterfly stages (lane ^ 1, lane ^ 2) swap the slot index j with the lane bits cq:
// afterwards slot r holds column-block bits cq = r, and the lane bits b0,b1 say j. Store
// (r, w): output row 4(cl + 4r) + w, output columns 8j + 4rh .. +3: 4 rows x 128 bytes.
#include "common.cl"
#include "shuffle.cl"
#ifndef WARPS
#define WARPS 1
#endif
__kernel __attribute__((reqd_work_group_size(32, WARPS, 1)))
void transpose(const int rows, const int cols,
               const __global float* restrict in, const int ldi,
               __global float* restrict out, const int ldo) {
    SHUFFLE_SCRATCH(32 * WARPS)
    const int lane = get_local_id(0), warp = get_local_id(1);
    const int lid_ = warp * 32 + lane;
    const int cq = lane & 3, rh = (lane >> 2) & 1, cl = lane >> 3;
    const int cb = cl + 4 * cq;
    const int c0 = get_group_id(0) * 64;
    const int r0 = (get_group_id(1) * WARPS + warp) * 32;
    const bool full = ldi % 4 == 0 && ldo % 4 == 0 && c0 + 64 <= cols && r0 + 32 <= rows;
    float x[4][4][4];
    #pragma unroll
    for (int j = 0; j < 4; j++)
        #pragma unroll
        for (int k = 0; k < 4; k++) {
            const int row = r0 + 8 * j + 4 * rh + k, col = c0 + 4 * cb;
            if (full) {
                const float4 v = *(const __global float4*)(in + row * ldi + col);
                UNPACK4(v, x[j][k], 0);
            } else {
                #pragma unroll
                for (int w = 0; w < 4; w++)
                    x[j][k][w] = (row < rows && col + w < cols) ? in[row * ldi + col + w] : 0.0f;
            }
        }
    // swap slot bits j with lane bits cq (b = 1: bit 0, b = 2: bit 1)
    #pragma unroll
    for (int b = 1; b < 4; b <<= 1)
        #pragma unroll
        for (int r = 0; r < 4; r++)
            if ((r & b) == 0) {
                const bool hi = (lane & b) != 0;
                #pragma unroll
                for (int k = 0; k < 4; k++)
                    #pragma unroll
                    for (int w = 0; w < 4; w++) {
                        const float got = SHFL_XOR(hi ? x[r][k][w] : x[r + b][k][w], b);
                        if (hi) x[r][k][w] = got; else x[r + b][k][w] = got;
                    }
            }
    const int j = cq;   // after the swap the lane bits b0,b1 carry j
    #pragma unroll
    for (int r = 0; r < 4; r++)
        #pragma unroll
        for (int w = 0; w < 4; w++) {
            const int orow = c0 + 4 * (cl + 4 * r) + w;
            const int ocol = r0 + 8 * j + 4 * rh;
            if (full) {
                *(__global float4*)(out + orow * ldo + ocol) =
                    (float4)(x[r][0][w], x[r][1][w], x[r][2][w], x[r][3][w]);
            } else {
                #pragma unroll
                for (int k = 0; k < 4; k++)
                    if (orow < cols && ocol + k < rows) out[orow * ldo + ocol + k] = x[r][k][w];
            }
        }
}

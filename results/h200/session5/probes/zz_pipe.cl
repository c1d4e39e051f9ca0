// Probe: the shipped shuffle transpose made persistent and software-pipelined. A launch of
// G one-warp groups walks the 32 x 32 tiles t = g, g + G, ... (row-major over the tile
// grid); tile t + G is loaded before tile t is exchanged and stored, so each warp keeps a
// tile's loads in flight all the time. Whole tiles only (rows, cols multiples of 32).
#include "common.cl"
#include "shuffle.cl"
#ifndef ORDER
#define ORDER 0
#endif
#if ORDER == 0      // walk the tile grid along rows
#define TROW(t) ((t) / tc)
#define TCOL(t) ((t) % tc)
#else               // down the columns
#define TROW(t) ((t) % tr)
#define TCOL(t) ((t) / tr)
#endif

#define LOAD(x, t) {                                                                   \
    const int r0_ = TROW(t) * 32, c0_ = TCOL(t) * 32;                              \
    _Pragma("unroll") for (int hh = 0; hh < 2; hh++)                                     \
    _Pragma("unroll") for (int k = 0; k < 4; k++) {                                      \
        const float4 v = *(const __global float4*)(in + (r0_ + 16 * hh + 4 * rq + k) * ldi + c0_ + 4 * cb); \
        UNPACK4(v, x[hh][k], 0);                                                         \
    } }
#define XCHG(x)                                                                        \
    _Pragma("unroll") for (int k = 0; k < 4; k++)                                        \
    _Pragma("unroll") for (int w = 0; w < 4; w++) {                                      \
        const float got = SHFL_XOR(hi ? x[0][k][w] : x[1][k][w], 4);                     \
        if (hi) x[0][k][w] = got; else x[1][k][w] = got;                                 \
    }
#define STORE(x, t) {                                                                  \
    const int r0_ = TROW(t) * 32, c0_ = TCOL(t) * 32;                              \
    _Pragma("unroll") for (int s = 0; s < 2; s++)                                        \
    _Pragma("unroll") for (int w = 0; w < 4; w++)                                        \
        *(__global float4*)(out + (c0_ + 16 * s + 4 * (cb & 3) + w) * ldo + r0_ + 16 * hi + 4 * rq) = \
            (float4)(x[s][0][w], x[s][1][w], x[s][2][w], x[s][3][w]);                    \
    }

__kernel __attribute__((reqd_work_group_size(32, 1, 1)))
void transpose(const int rows, const int cols,
               const __global float* restrict in, const int ldi,
               __global float* restrict out, const int ldo) {
    SHUFFLE_SCRATCH(32)
    const int lane = get_local_id(0), lid_ = lane;
    const int cb = lane & 7, rq = lane >> 3, hi = (lane >> 2) & 1;
    const int tc = cols / 32, tr = rows / 32, ntiles = tr * tc, G = get_num_groups(0);
    float xa[2][4][4], xb[2][4][4];
    int t = get_group_id(0);
    if (t < ntiles) LOAD(xa, t);
    for (; t < ntiles; t += 2 * G) {
        if (t + G < ntiles) LOAD(xb, t + G);
        XCHG(xa);
        STORE(xa, t);
        if (t + G >= ntiles) break;
        if (t + 2 * G < ntiles) LOAD(xa, t + 2 * G);
        XCHG(xb);
        STORE(xb, t + G);
    }
}

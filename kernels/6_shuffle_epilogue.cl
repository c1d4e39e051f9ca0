// Kernel 6: memoryless C epilogue (kernel 5 + one technique).
//
// Technique: the write-back of C goes through sub-group shuffles instead of straight
// from each work-item's registers. With WIDTH < 4 a work-item holds only WIDTH
// consecutive columns of a row, so kernel 5 stores 4- or 8-byte pieces. Here the
// G = 4/WIDTH neighbouring work-items along N that hold 4 consecutive columns trade
// values (QUAD_TRANSPOSE in shuffle.cl, no local memory, no barrier on NVIDIA) until
// each holds 4 consecutive columns of one of G rows, and writes them as one aligned
// 16-byte vector. With WIDTH = 4 there is nothing to trade and the epilogue is kernel 5's.
//
// Parameters: as kernel 5.
// Constraints: as kernel 5, plus 4/WIDTH divides WPTM and TSN/WPTN (the lanes that trade
// hold whole blocks); ldc a multiple of 4 (clgemm.gemm pads when it is not).
// Edges: any M, N, K >= 1. Every lane takes part in the exchange; edge tiles then store
// guarded scalars.
//
// H200 (results/h200/README.md): at the defaults (WIDTH=4, nothing to exchange) 41297
// GFLOPS at 4096^3 against kernel 5's 41712; 42711 against 43223 at 8192^3, i.e. equal
// within noise. With WIDTH=1 (four lanes exchange) 19911 against 28474 at TSM=TSN=128
// TSK=8, 20639 against 21061 at the defaults' tile: the shuffles and selects cost more
// than the wider stores save. The C write-back is under 1% of the run time at 4096^3
// (64 MB of 137 GFLOP of work), and kernel 5's stores were already coalesced: neighbouring
// work-items write neighbouring vectors, so a warp's stores fill whole sectors either way.

#include "common.cl"
#include "shuffle.cl"

#ifndef TSM
#define TSM 128
#endif
#ifndef TSN
#define TSN 128
#endif
#ifndef TSK
#define TSK 8
#endif
#ifndef WPTM
#define WPTM 8
#endif
#ifndef WPTN
#define WPTN 8
#endif
#ifndef WIDTH
#define WIDTH 4
#endif
#ifndef PAD
#define PAD 1
#endif

#define RTSM (TSM / WPTM)               // work-items along M
#define RTSN (TSN / WPTN)               // work-items along N
#define NT (RTSM * RTSN)                // work-items per group
#define TSMV (TSM / WIDTH + PAD)        // vectors per k-row of the A tile, padding included
#define LPTA (TSM * TSK / WIDTH / NT)   // A vectors each work-item loads per tile
#define LPTB (TSK * TSN / WIDTH / NT)   // B vectors each work-item loads per tile

__kernel __attribute__((reqd_work_group_size(RTSN, RTSM, 1)))
void gemm(const int M, const int N, const int K, const float alpha,
          const __global floatW* restrict A, const int lda,
          const __global floatW* restrict B, const int ldb,
          const float beta, __global float* C, const int ldc) {
    const int tx = get_local_id(0);
    const int ty = get_local_id(1);
    const int tid = ty * RTSN + tx;
    const int m0 = get_group_id(1) * TSM;
    const int n0 = get_group_id(0) * TSN;
    // Leading dimensions and extents counted in vectors.
    const int ldav = lda / WIDTH, ldbv = ldb / WIDTH;
    const int Kv = (K + WIDTH - 1) / WIDTH, Nv = (N + WIDTH - 1) / WIDTH;

    __local floatW Asub[2][TSK][TSMV];    // A^T, two buffers
    __local floatW Bsub[2][TSK][TSN / WIDTH];

    float acc[WPTM][WPTN];
    #pragma unroll
    for (int i = 0; i < WPTM; i++)
        #pragma unroll
        for (int j = 0; j < WPTN; j++) acc[i][j] = 0.0f;

    // The vectors this work-item moves per tile, staged in registers.
    floatW ra[LPTA], rb[LPTB];

    // Global -> registers for the tile starting at depth t (same indexing as kernel 4).
    #define LOAD_TILE(t)                                                              \
        _Pragma("unroll") for (int l = 0; l < LPTA; l++) {                           \
            const int e = tid + l * NT;                                               \
            const int r = e / (TSK / WIDTH), kv = (t) / WIDTH + e % (TSK / WIDTH);   \
            ra[l] = (m0 + r < M && kv < Kv) ? A[(m0 + r) * ldav + kv] : (floatW)(0.0f); \
        }                                                                             \
        _Pragma("unroll") for (int l = 0; l < LPTB; l++) {                           \
            const int e = tid + l * NT;                                               \
            const int r = e / (TSN / WIDTH), nv = n0 / WIDTH + e % (TSN / WIDTH);    \
            rb[l] = ((t) + r < K && nv < Nv) ? B[((t) + r) * ldbv + nv] : (floatW)(0.0f); \
        }

    // Registers -> local buffer `buf`, A transposed.
    #define STORE_TILE(buf)                                                           \
        _Pragma("unroll") for (int l = 0; l < LPTA; l++) {                           \
            const int e = tid + l * NT;                                               \
            const int r = e / (TSK / WIDTH), c = e % (TSK / WIDTH);                  \
            float s[WIDTH];                                                           \
            UNPACK(ra[l], s, 0);                                                      \
            /* float w of vector r/WIDTH of k-row c*WIDTH + w: element r of that row */ \
            _Pragma("unroll") for (int w = 0; w < WIDTH; w++)                        \
                ((__local float*)&Asub[buf][c * WIDTH + w][r / WIDTH])[r % WIDTH] = s[w]; \
        }                                                                             \
        _Pragma("unroll") for (int l = 0; l < LPTB; l++) {                           \
            const int e = tid + l * NT;                                               \
            Bsub[buf][e / (TSN / WIDTH)][e % (TSN / WIDTH)] = rb[l];                  \
        }

    LOAD_TILE(0);
    STORE_TILE(0);
    barrier(CLK_LOCAL_MEM_FENCE);

    const int tiles = (K + TSK - 1) / TSK;
    for (int tile = 0; tile < tiles; tile++) {
        const int buf = tile & 1;
        const bool more = tile + 1 < tiles;
        if (more) { LOAD_TILE((tile + 1) * TSK); }

        #pragma unroll
        for (int k = 0; k < TSK; k++) {
            float a[WPTM], b[WPTN];
            #pragma unroll
            for (int i = 0; i < WPTM / WIDTH; i++) UNPACK(Asub[buf][k][ty + i * RTSM], a, i * WIDTH);
            #pragma unroll
            for (int j = 0; j < WPTN / WIDTH; j++) UNPACK(Bsub[buf][k][tx + j * RTSN], b, j * WIDTH);
            #pragma unroll
            for (int i = 0; i < WPTM; i++)
                #pragma unroll
                for (int j = 0; j < WPTN; j++) acc[i][j] += a[i] * b[j];
        }

        if (more) { STORE_TILE(buf ^ 1); }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    // Epilogue. G neighbouring work-items (tx = G*p + q) hold 4 consecutive columns
    // (tx - q + j*RTSN)*WIDTH .. +3; for G of their rows at a time they trade so that lane
    // q ends up with row i0 + q of those 4 columns, then store it as one float4.
    #define G (4 / WIDTH)
    const int lid_ = tid;
    const int q = tx % G;
    SHUFFLE_SCRATCH(NT)
    const bool full = m0 + TSM <= M && n0 + TSN <= N;
    __global float4* C4 = (__global float4*)C;
    #pragma unroll
    for (int j = 0; j < WPTN / WIDTH; j++) {
        const int col4 = ((tx - q + j * RTSN) * WIDTH) / 4;   // float4 column of C
        #pragma unroll
        for (int i0 = 0; i0 < WPTM; i0 += G) {
            float x[4];
            #pragma unroll
            for (int r = 0; r < G; r++)
                #pragma unroll
                for (int w = 0; w < WIDTH; w++) x[r * WIDTH + w] = acc[i0 + r][j * WIDTH + w];
            QUAD_TRANSPOSE(x, G, WIDTH, q)
            const int i = i0 + q;
            const int row = m0 + (ty + (i / WIDTH) * RTSM) * WIDTH + i % WIDTH;
            store_c4(C4, row, n0 / 4 + col4, ldc / 4, M, N, full, alpha, PACK4(x, 0), beta);
        }
    }
}

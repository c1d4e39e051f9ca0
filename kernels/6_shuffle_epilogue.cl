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
// The file is kernel 5 with one substitution: it defines WRITE_C, the write-back that
// 5_double_buffered.cl runs at the end of its kernel body, then includes that file.
//
// Parameters: as kernel 5.
// Constraints: as kernel 5, plus 4/WIDTH divides WPTM and TSN/WPTN (the lanes that trade
// hold whole blocks); an ldc that is not a multiple of 4 takes the C_UNALIGNED build
// (common.cl), whose stores are scalar.
// Edges: any M, N, K >= 1. Every lane takes part in the exchange; edge tiles then store
// guarded scalars.
//
// H200 4096^3, spans: 41.3 TFLOPS at the defaults (WIDTH=4, nothing to exchange; kernel 5:
// 41.7), results/h200/README.md.

#include "common.cl"
#include "shuffle.cl"

// G = 4/WIDTH neighbouring work-items (tx = G*p + q) hold 4 consecutive columns
// (tx - q + j*RTSN)*WIDTH .. +3 of C. For G of their rows at a time they trade (lane q
// ends with row i0 + q of those 4 columns) and store it as one float4. In scope at the
// substitution: acc, tx, ty, tid, m0, n0, M, N, C, ldc, alpha, beta and `full`.
#define WRITE_C                                                                        \
    SHUFFLE_SCRATCH(NT)                                                                \
    {                                                                                  \
        const int G = 4 / WIDTH, lid_ = tid, q = tx % G;                               \
        __global float4* C4 = (__global float4*)C;                                     \
        _Pragma("unroll") for (int j = 0; j < WPTN / WIDTH; j++) {                     \
            const int col4 = ((tx - q + j * RTSN) * WIDTH) / 4;   /* float4 column */  \
            _Pragma("unroll") for (int i0 = 0; i0 < WPTM; i0 += G) {                   \
                float x[4];                                                            \
                _Pragma("unroll") for (int r = 0; r < G; r++)                          \
                    _Pragma("unroll") for (int w = 0; w < WIDTH; w++)                  \
                        x[r * WIDTH + w] = acc[i0 + r][j * WIDTH + w];                 \
                QUAD_TRANSPOSE(x, G, WIDTH, q)                                         \
                const int i = i0 + q;                                                  \
                const int row = m0 + (ty + (i / WIDTH) * RTSM) * WIDTH + i % WIDTH;    \
                store_c4(C4, row, n0 / 4 + col4, ldc, M, N, full, alpha,                \
                         PACK4(x, 0), beta);                                           \
            }                                                                          \
        }                                                                              \
    }

#include "5_double_buffered.cl"

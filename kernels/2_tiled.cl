// Kernel 2: local-memory tiling (kernel 1 + one technique).
//
// Technique: the work-group stages a TS x TS tile of A and of B in local memory, each
// work-item loading one element of each (coalesced: dimension 0 runs along rows of
// A and B). A barrier makes the tiles visible, TS multiply-adds read them, and a second
// barrier keeps the next load from overwriting a tile still being read. Global traffic
// drops by a factor TS, but with one multiply-add per two local-memory reads the kernel is
// then bound by the local-memory pipe.
//
// Parameters: TS, the tile and work-group side (TS x TS work-items).
// Constraints: TS*TS <= max work-group size; 2*TS*TS*4 bytes <= local memory.
// Edges: any M, N, K >= 1. Loads outside A or B write 0 to the tile (bounds checks,
// no padding), so the partial last tile along K adds nothing; stores are guarded.
//
// H200 4096^3, spans: 7.0 TFLOPS at TS=32, 1.15x kernel 1, results/h200/README.md.

#include "common.cl"

#ifndef TS
#define TS 32
#endif

__kernel __attribute__((reqd_work_group_size(TS, TS, 1)))
void gemm(const int M, const int N, const int K, const float alpha,
          const __global float* restrict A, const int lda,
          const __global float* restrict B, const int ldb,
          const float beta, __global float* C, const int ldc) {
    const int tx = get_local_id(0);             // column within the tile
    const int ty = get_local_id(1);             // row within the tile
    const int col = get_group_id(0) * TS + tx;  // column of C
    const int row = get_group_id(1) * TS + ty;  // row of C

    __local float Asub[TS][TS];
    __local float Bsub[TS][TS];

    float acc = 0.0f;
    for (int t = 0; t < K; t += TS) {
        // Work-item (ty, tx) loads A[row][t+tx] and B[t+ty][col].
        Asub[ty][tx] = (row < M && t + tx < K) ? A[row * lda + t + tx] : 0.0f;
        Bsub[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * ldb + col] : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        #pragma unroll
        for (int k = 0; k < TS; k++) {
            acc += Asub[ty][k] * Bsub[k][tx];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (row < M && col < N) store_c(C, row * ldc + col, alpha, acc, beta);
}

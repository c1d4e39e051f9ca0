// Kernel 1: naive.
//
// Technique: one work-item per element of C, each reading a whole row of A and a whole
// column of B straight from global memory. No reuse beyond what the caches find: each A
// row is re-read by every work-item of a row of C, each B column by every row.
//
// Parameters: TS, the work-group is TS x TS work-items.
// Constraints: TS*TS <= the device's maximum work-group size.
// Edges: any M, N, K >= 1; work-items outside C return at once (bounds checks, no padding).
//
// H200 4096^3, spans: 6.1 TFLOPS at TS=32 (9% of FP32 peak), results/h200/README.md.

#include "common.cl"

#ifndef TS
#define TS 32
#endif

__kernel __attribute__((reqd_work_group_size(TS, TS, 1)))
void gemm(const int M, const int N, const int K, const float alpha,
          const __global float* restrict A, const int lda,
          const __global float* restrict B, const int ldb,
          const float beta, __global float* C, const int ldc) {
    const int col = get_global_id(0);   // column of C: consecutive work-items read
    const int row = get_global_id(1);   // consecutive addresses of B and write of C
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; k++) {
        acc += A[row * lda + k] * B[k * ldb + col];
    }
    store_c(C, row * ldc + col, alpha, acc, beta);
}

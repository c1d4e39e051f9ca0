// Kernel 3: register blocking (kernel 2 + one technique).
//
// Technique: a work-group computes a TSM x TSN tile of C and each work-item a
// WPTM x WPTN block of it, held in registers. Tiles of depth TSK of A (TSM x TSK) and
// B (TSK x TSN) are staged in local memory, loaded cooperatively by all work-items.
// The inner loop is an outer product: WPTN values of B and one value of A at a time
// come from local memory into registers and feed WPTM*WPTN multiply-adds, so each
// local-memory read is reused WPTM or WPTN times (8 x 8 blocks: 64 multiply-adds per
// 8 + 8 local reads instead of 1 per 2).
//
// Work-item (ty, tx) owns rows ty + i*RTSM and columns tx + j*RTSN of the tile
// (a strided layout: neighbouring work-items read neighbouring words of Bsub).
//
// Parameters: TSM, TSN, TSK, WPTM, WPTN. WPTM = 1 is "more work per thread" along N only.
// Constraints: TSM % WPTM == 0, TSN % WPTN == 0; the work-group (TSN/WPTN) x (TSM/WPTM)
// fits the device; the loads split evenly: TSM*TSK and TSK*TSN are multiples of the
// work-group size; (TSM*TSK + TSK*TSN)*4 bytes fit local memory; WPTM*WPTN <= 128
// (more accumulators than that cannot live in registers).
// Edges: any M, N, K >= 1: out-of-range loads write 0 to the tiles, stores are guarded.
//
// H200 4096^3, spans: 31.3 TFLOPS at these defaults, 4.4x kernel 2,
// results/h200/README.md.

#include "common.cl"

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

#define RTSM (TSM / WPTM)     // work-items along M
#define RTSN (TSN / WPTN)     // work-items along N
#define NT (RTSM * RTSN)      // work-items per group
#define LPTA (TSM * TSK / NT) // A elements each work-item loads per tile
#define LPTB (TSK * TSN / NT) // B elements each work-item loads per tile

__kernel __attribute__((reqd_work_group_size(RTSN, RTSM, 1)))
void gemm(const int M, const int N, const int K, const float alpha,
          const __global float* restrict A, const int lda,
          const __global float* restrict B, const int ldb,
          const float beta, __global float* C, const int ldc) {
    const int tx = get_local_id(0);
    const int ty = get_local_id(1);
    const int tid = ty * RTSN + tx;
    const int m0 = get_group_id(1) * TSM;   // first row of this tile of C
    const int n0 = get_group_id(0) * TSN;   // first column

    __local float Asub[TSM][TSK];
    __local float Bsub[TSK][TSN];

    float acc[WPTM][WPTN];
    #pragma unroll
    for (int i = 0; i < WPTM; i++)
        #pragma unroll
        for (int j = 0; j < WPTN; j++) acc[i][j] = 0.0f;

    for (int t = 0; t < K; t += TSK) {
        // Element e = tid + l*NT of a tile, in row-major order: consecutive work-items
        // load consecutive addresses of a row of A (along K) and of B (along N).
        #pragma unroll
        for (int l = 0; l < LPTA; l++) {
            const int e = tid + l * NT;
            const int r = e / TSK, c = e % TSK;
            Asub[r][c] = (m0 + r < M && t + c < K) ? A[(m0 + r) * lda + t + c] : 0.0f;
        }
        #pragma unroll
        for (int l = 0; l < LPTB; l++) {
            const int e = tid + l * NT;
            const int r = e / TSN, c = e % TSN;
            Bsub[r][c] = (t + r < K && n0 + c < N) ? B[(t + r) * ldb + n0 + c] : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        #pragma unroll
        for (int k = 0; k < TSK; k++) {
            float b[WPTN];
            #pragma unroll
            for (int j = 0; j < WPTN; j++) b[j] = Bsub[k][tx + j * RTSN];
            #pragma unroll
            for (int i = 0; i < WPTM; i++) {
                const float a = Asub[ty + i * RTSM][k];
                #pragma unroll
                for (int j = 0; j < WPTN; j++) acc[i][j] += a * b[j];
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    #pragma unroll
    for (int i = 0; i < WPTM; i++) {
        const int row = m0 + ty + i * RTSM;
        #pragma unroll
        for (int j = 0; j < WPTN; j++) {
            const int col = n0 + tx + j * RTSN;
            if (row < M && col < N) store_c(C, row * ldc + col, alpha, acc[i][j], beta);
        }
    }
}

// Kernel 4: transposed local tiles with wide loads (kernel 3 + one technique).
//
// Technique: global loads and local-memory reads move WIDTH floats at a time through
// floatW-typed pointers (NVIDIA's compiler turns vload4/vstore4 into scalar accesses;
// a float4 pointer gives ld.global.v4 / ld.shared.v4). For the inner loop to read A as
// vectors along M, the A tile is stored transposed (k-major) in local memory, with an
// optional pad of one vector per row (PAD) against bank conflicts when writing it.
// Each work-item now owns WIDTH consecutive rows and columns per step of its block:
// rows (ty + i*RTSM)*WIDTH + w and columns (tx + j*RTSN)*WIDTH + w, so a warp reads
// a contiguous run of vectors from each tile and writes contiguous vectors of C.
//
// Parameters: TSM, TSN, TSK, WPTM, WPTN (as kernel 3), WIDTH (1, 2, 4), PAD (0 or 1).
// Constraints: as kernel 3, plus WIDTH divides WPTM, WPTN and TSK; the vector loads
// split evenly over the work-group; local memory (TSK*(TSM + PAD*WIDTH) + TSK*TSN)*4
// bytes. lda and ldb are multiples of WIDTH and the buffers 16-byte aligned (clgemm.gemm
// pads leading dimensions with zero columns when they are not); an ldc that is not a
// multiple of WIDTH takes the C_UNALIGNED build (common.cl), whose stores are scalar.
// Edges: any M, N, K >= 1. Vector loads past M, N or K write 0 to the tile; interior
// tiles store vectors, edge tiles guarded scalars.
//
// H200 4096^3, spans: 42.0 TFLOPS at these defaults, 1.34x kernel 3,
// results/h200/README.md.

#ifndef TSM
#define TSM 256
#endif
#ifndef TSN
#define TSN 64
#endif
#ifndef TSK
#define TSK 16
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

#include "common.cl"

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
          const float beta, __global floatW* C, const int ldc) {
    const int tx = get_local_id(0);
    const int ty = get_local_id(1);
    const int tid = ty * RTSN + tx;
    const int m0 = get_group_id(1) * TSM;
    const int n0 = get_group_id(0) * TSN;
    // Leading dimensions and extents counted in vectors.
    const int ldav = lda / WIDTH, ldbv = ldb / WIDTH;
    const int Kv = (K + WIDTH - 1) / WIDTH, Nv = (N + WIDTH - 1) / WIDTH;

    __local floatW Asub[TSK * TSMV];      // A^T: vector m/WIDTH of k-row k at k*TSMV + m/WIDTH
    __local floatW Bsub[TSK][TSN / WIDTH];
    __local float* Asub_s = (__local float*)Asub;

    float acc[WPTM][WPTN];
    #pragma unroll
    for (int i = 0; i < WPTM; i++)
        #pragma unroll
        for (int j = 0; j < WPTN; j++) acc[i][j] = 0.0f;

    for (int t = 0; t < K; t += TSK) {
        // A tile: TSM rows of TSK/WIDTH vectors. Vector e is row r, vector c along K;
        // its WIDTH values go to WIDTH consecutive k-rows of the transposed tile.
        #pragma unroll
        for (int l = 0; l < LPTA; l++) {
            const int e = tid + l * NT;
            const int r = e / (TSK / WIDTH), c = e % (TSK / WIDTH);
            const int kv = t / WIDTH + c;
            const floatW v = (m0 + r < M && kv < Kv) ? A[(m0 + r) * ldav + kv] : (floatW)(0.0f);
            float s[WIDTH];
            UNPACK(v, s, 0);
            #pragma unroll
            for (int w = 0; w < WIDTH; w++) Asub_s[(c * WIDTH + w) * TSMV * WIDTH + r] = s[w];
        }
        // B tile: TSK rows of TSN/WIDTH vectors, copied as they are.
        #pragma unroll
        for (int l = 0; l < LPTB; l++) {
            const int e = tid + l * NT;
            const int r = e / (TSN / WIDTH), c = e % (TSN / WIDTH);
            const int nv = n0 / WIDTH + c;
            Bsub[r][c] = (t + r < K && nv < Nv) ? B[(t + r) * ldbv + nv] : (floatW)(0.0f);
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        #pragma unroll
        for (int k = 0; k < TSK; k++) {
            float a[WPTM], b[WPTN];
            #pragma unroll
            for (int i = 0; i < WPTM / WIDTH; i++) UNPACK(Asub[k * TSMV + ty + i * RTSM], a, i * WIDTH);
            #pragma unroll
            for (int j = 0; j < WPTN / WIDTH; j++) UNPACK(Bsub[k][tx + j * RTSN], b, j * WIDTH);
            #pragma unroll
            for (int i = 0; i < WPTM; i++)
                #pragma unroll
                for (int j = 0; j < WPTN; j++) acc[i][j] += a[i] * b[j];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    const bool full = m0 + TSM <= M && n0 + TSN <= N;
    #pragma unroll
    for (int i = 0; i < WPTM; i++) {
        const int row = m0 + (ty + (i / WIDTH) * RTSM) * WIDTH + i % WIDTH;
        #pragma unroll
        for (int j = 0; j < WPTN / WIDTH; j++) {
            const int colv = n0 / WIDTH + tx + j * RTSN;
            store_c_vec(C, row, colv, ldc, M, N, full, alpha, PACK(acc[i], j * WIDTH), beta);
        }
    }
}

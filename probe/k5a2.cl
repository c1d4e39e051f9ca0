// Kernel 5: double buffering (kernel 4 + one technique).
//
// Technique: two local buffers per operand. While the work-group multiplies tile t
// from one buffer, each work-item already holds tile t+1 in registers, loaded from
// global memory before the multiply so that the load latency hides behind it; after
// the multiply it writes those registers to the other buffer. One barrier per tile
// suffices: the buffer written in step t was last read in step t-1, before the
// barrier that ended it.
//
// Parameters: TSM, TSN, TSK, WPTM, WPTN, WIDTH, PAD (as kernel 4).
// Constraints: as kernel 4, with twice the local memory:
// 2*(TSK*(TSM + PAD*WIDTH) + TSK*TSN)*4 bytes.
// Edges: any M, N, K >= 1, handled as in kernel 4.
// Builds the host picks per launch (not tuning parameters):
// - EXACT (common.cl): whole tiles, no bounds checks on the tile loads.
// - CLAMP (common.cl): k in whole tiles, M or N not: no bounds checks either; tile rows
//   and columns past M or N re-read the matrix's last one (no zero-padded copies).
// - A_KMAJOR / B_NMAJOR: A stored K x M, B stored N x K, read as they lie; a tile whose
//   rows run along k is then stored straight, the other one transposed.
// - SPLIT_K: a launch with get_num_groups(2) = S cuts the k loop into S slices of whole
//   tiles; group z writes its slice's partial product to slice z of C, then a workspace
//   of S stacked M x ldc matrices, and splitk_reduce (below) sums the slices into the
//   real C. It is a build of its own: compiled into every launch, its extra live values
//   slowed the large register blocks.
// - GUARD=2 (common.cl): the fallback of gemm()'s guarded kernel 7 (clgemm/guard.py).
// ptxas schedules this loop very differently in other contexts: an edit here needs an
// A/B at both A layouts (docs/levers.md holds the variants tried and their results).
//
// H200 4096^3: 41.7 TFLOPS at these defaults, 49.1 tuned (128x128x8, 16x8), results/h200/README.md.

#ifndef TSM
#define TSM 64
#endif
#ifndef TSN
#define TSN 128
#endif
#ifndef TSK
#define TSK 16
#endif
#ifndef WPTM
#define WPTM 16
#endif
#ifndef WPTN
#define WPTN 4
#endif
#ifndef WIDTH
#define WIDTH 4
#endif
#ifndef PAD
#define PAD 0
#endif

#include "common.cl"
// PROBE: kernel 5 with its tile loads by cp.async (no staging registers), STAGES local
// buffers, and fragments double-buffered across the tile boundary (step k loads step
// k+1's fragments; the tile's last step waits for the next tile, meets the barrier and
// loads its first row). EXACT builds only; A row-major (4-byte copies, stored
// transposed) or A_KMAJOR (16-byte copies); B row-major.
#ifndef STAGES
#define STAGES 2
#endif
#ifndef ASYNC_PTX
#define ASYNC_PTX 1
#endif
#if defined(CLAMP) || defined(B_NMAJOR) || defined(SPLIT_K) || WIDTH != 4
#error "probe: EXACT, row-major B, WIDTH 4 only"
#endif

#define RTSM (TSM / WPTM)
#define RTSN (TSN / WPTN)
#define NT (RTSM * RTSN)
#define TSMV (TSM / WIDTH + PAD)
#define LPTA (TSM * TSK / WIDTH / NT)
#define LPTB (TSK * TSN / WIDTH / NT)

#if ASYNC_PTX
#define CP16(dst, src) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" \
    :: "r"((uint)(size_t)(dst)), "l"(src) : "memory")
#define CP4(dst, src) asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" \
    :: "r"((uint)(size_t)(dst)), "l"(src) : "memory")
#define COMMIT() asm volatile("cp.async.commit_group;" ::: "memory")
#define WAIT_(n) asm volatile("cp.async.wait_group " #n ";" ::: "memory")
#define WAIT(n) WAIT_(n)
#else
#define CP16(dst, src) (*(dst) = *(src))
#define CP4(dst, src) (*(dst) = *(src))
#define COMMIT()
#define WAIT(n)
#endif

__kernel __attribute__((reqd_work_group_size(RTSN, RTSM, 1)))
void gemm(const int M, const int N, const int K, const float alpha,
          const __global floatW* restrict A, const int lda,
          const __global floatW* restrict B, const int ldb,
          const float beta, __global floatW* C, const int ldc GUARD_ARGS) {
    GUARD_RETURN
    const int tx = get_local_id(0);
    const int ty = get_local_id(1);
    const int tid = ty * RTSN + tx;
    const int m0 = get_group_id(1) * TSM;
    const int n0 = get_group_id(0) * TSN;
    const int ldav = lda / WIDTH, ldbv = ldb / WIDTH;

    __local floatW Asub[STAGES][TSK][TSMV];
    __local floatW Bsub[STAGES][TSK][TSN / WIDTH];

    float acc[WPTM][WPTN];
    #pragma unroll
    for (int i = 0; i < WPTM; i++)
        #pragma unroll
        for (int j = 0; j < WPTN; j++) acc[i][j] = 0.0f;

#ifndef A_KMAJOR
    // A row-major: float e of the tile is row e / TSK, depth e % TSK; a warp copies 4 rows
    // of 32 bytes and stores them along 4 k-rows x 8 columns (distinct banks with PAD 1).
    #define ISSUE_A(t, s) _Pragma("unroll") for (int l = 0; l < TSM * TSK / NT; l++) {  \
            const int e = tid + l * NT, r = e / TSK, kk = e % TSK;                     \
            CP4((__local float*)&Asub[s][kk][0] + r,                                   \
                (const __global float*)A + (size_t)(m0 + r) * lda + (t) + kk);         \
        }
#else
    #define ISSUE_A(t, s) _Pragma("unroll") for (int l = 0; l < LPTA; l++) {             \
            const int e = tid + l * NT, r = e / (TSM / WIDTH), cv = e % (TSM / WIDTH); \
            CP16(&Asub[s][r][cv], &A[((t) + r) * ldav + m0 / WIDTH + cv]);             \
        }
#endif
    #define ISSUE_B(t, s) _Pragma("unroll") for (int l = 0; l < LPTB; l++) {             \
            const int e = tid + l * NT, r = e / (TSN / WIDTH), cv = e % (TSN / WIDTH); \
            CP16(&Bsub[s][r][cv], &B[((t) + r) * ldbv + n0 / WIDTH + cv]);             \
        }

    float a[2][WPTM], b[2][WPTN];
    #define LOAD_FRAG(set, st, kk)                                                       \
        _Pragma("unroll") for (int i = 0; i < WPTM / WIDTH; i++)                       \
            UNPACK(Asub[st][kk][ty + i * RTSM], a[set], i * WIDTH);                    \
        _Pragma("unroll") for (int j = 0; j < WPTN / WIDTH; j++)                       \
            UNPACK(Bsub[st][kk][tx + j * RTSN], b[set], j * WIDTH);

    const int tiles = K / TSK;
    #pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < tiles) { ISSUE_A(s * TSK, s) ISSUE_B(s * TSK, s) }
        COMMIT();
    }
    WAIT(STAGES - 2);
    barrier(CLK_LOCAL_MEM_FENCE);
    LOAD_FRAG(0, 0, 0)

    int rs = 0;                           // stage of this tile
    int ws = STAGES - 1;                  // stage the copies of tile + STAGES - 1 go to
    for (int tile = 0; tile < tiles; tile++) {
        // ws was read in the previous tile, whose last step's barrier everyone has passed
        if (tile + STAGES - 1 < tiles) {
            const int t = (tile + STAGES - 1) * TSK;
            ISSUE_A(t, ws) ISSUE_B(t, ws)
        }
        COMMIT();
        const int next = rs + 1 == STAGES ? 0 : rs + 1;
        #pragma unroll
        for (int k = 0; k < TSK; k++) {
            if (k + 1 < TSK) {
                LOAD_FRAG((k + 1) & 1, rs, k + 1)
            } else {
                WAIT(STAGES - 2);         // this work-item's copies of tile + 1 landed
                barrier(CLK_LOCAL_MEM_FENCE);
                LOAD_FRAG((k + 1) & 1, next, 0)
            }
            #pragma unroll
            for (int i = 0; i < WPTM; i++)
                #pragma unroll
                for (int j = 0; j < WPTN; j++) acc[i][j] += a[k & 1][i] * b[k & 1][j];
        }
        rs = next;
        ws = ws + 1 == STAGES ? 0 : ws + 1;
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

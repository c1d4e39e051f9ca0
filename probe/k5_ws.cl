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
// PROBE: warp specialisation. Each group has NT compute work-items (RTSM x RTSN, as
// kernel 5) plus one producer warp (local rows RTSM.. of the launch). The producer copies
// tiles into a ring of STAGES local buffers by cp.async and announces each on a named
// barrier FULL(s); the compute warps read fragments and multiply, then free the stage
// on EMPTY(s). Compute warps hold no staging registers and issue no tile loads.
// EXACT builds only, row-major B; A row-major (4-byte copies, stored transposed) or
// A_KMAJOR (16-byte copies).
#ifndef STAGES
#define STAGES 4
#endif
#if defined(CLAMP) || defined(B_NMAJOR) || defined(SPLIT_K) || WIDTH != 4
#error "probe: EXACT, row-major B, WIDTH 4 only"
#endif

#define RTSM (TSM / WPTM)
#define RTSN (TSN / WPTN)
#define NT (RTSM * RTSN)
#define NALL (NT + 32)
#define TSMV (TSM / WIDTH + PAD)

#define CP16(dst, src) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" \
    :: "r"((uint)(size_t)(dst)), "l"(src) : "memory")
#define CP4(dst, src) asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" \
    :: "r"((uint)(size_t)(dst)), "l"(src) : "memory")
#define COMMIT() asm volatile("cp.async.commit_group;" ::: "memory")
#define WAIT_(n) asm volatile("cp.async.wait_group " #n ";" ::: "memory")
#define WAIT(n) WAIT_(n)
#define BAR_SYNC(id) asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(NALL) : "memory")
#define BAR_ARRIVE(id) asm volatile("bar.arrive %0, %1;" :: "r"(id), "r"(NALL) : "memory")
#define FULL(s) (1 + (s))
#define EMPTY(s) (1 + STAGES + (s))

__kernel __attribute__((reqd_work_group_size(RTSN, RTSM + 32 / RTSN, 1)))
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
    const int tiles = K / TSK;

    __local floatW Asub[STAGES][TSK][TSMV];
    __local floatW Bsub[STAGES][TSK][TSN / WIDTH];

    if (tid >= NT) {   // the producer warp
        const int lane = tid - NT;
        for (int t = 0; t < tiles + STAGES - 1; t++) {
            if (t < tiles) {
                const int s = t % STAGES;
                if (t >= STAGES) BAR_SYNC(EMPTY(s));    // tile t - STAGES is done with
                const int k = t * TSK;
#ifndef A_KMAJOR
                // float e = lane + 32 l of the tile: row e / TSK, depth e % TSK
                #pragma unroll
                for (int l = 0; l < TSM * TSK / 32; l++) {
                    const int e = lane + 32 * l, r = e / TSK, kk = e % TSK;
                    CP4((__local float*)&Asub[s][kk][0] + r,
                        (const __global float*)A + (size_t)(m0 + r) * lda + k + kk);
                }
#else
                #pragma unroll
                for (int l = 0; l < TSM * TSK / WIDTH / 32; l++) {
                    const int e = lane + 32 * l, r = e / (TSM / WIDTH), cv = e % (TSM / WIDTH);
                    CP16(&Asub[s][r][cv], &A[(k + r) * ldav + m0 / WIDTH + cv]);
                }
#endif
                #pragma unroll
                for (int l = 0; l < TSK * TSN / WIDTH / 32; l++) {
                    const int e = lane + 32 * l, r = e / (TSN / WIDTH), cv = e % (TSN / WIDTH);
                    CP16(&Bsub[s][r][cv], &B[(k + r) * ldbv + n0 / WIDTH + cv]);
                }
            }
            COMMIT();
            const int done = t - (STAGES - 1);
            if (done >= 0) {
                WAIT(STAGES - 1);              // tile `done` has landed
                BAR_ARRIVE(FULL(done % STAGES));
            }
        }
        return;
    }

    float acc[WPTM][WPTN];
    #pragma unroll
    for (int i = 0; i < WPTM; i++)
        #pragma unroll
        for (int j = 0; j < WPTN; j++) acc[i][j] = 0.0f;

    for (int t = 0; t < tiles; t++) {
        const int s = t % STAGES;
        BAR_SYNC(FULL(s));
        #pragma unroll
        for (int k = 0; k < TSK; k++) {
            float a[WPTM], b[WPTN];
            #pragma unroll
            for (int i = 0; i < WPTM / WIDTH; i++) UNPACK(Asub[s][k][ty + i * RTSM], a, i * WIDTH);
            #pragma unroll
            for (int j = 0; j < WPTN / WIDTH; j++) UNPACK(Bsub[s][k][tx + j * RTSN], b, j * WIDTH);
            #pragma unroll
            for (int i = 0; i < WPTM; i++)
                #pragma unroll
                for (int j = 0; j < WPTN; j++) acc[i][j] += a[i] * b[j];
        }
        if (t + STAGES < tiles) BAR_ARRIVE(EMPTY(s));
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

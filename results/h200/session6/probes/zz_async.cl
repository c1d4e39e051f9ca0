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
// PROBE (session 6, untracked): kernel 5 with its tile loads done by cp.async (inline PTX,
// sm_80+): global -> local without registers, STAGES local buffers deep, and optional
// work-group rasterisation (GROUP_M tile rows per band). EXACT + A_KMAJOR + plain B only.
#ifndef STAGES
#define STAGES 3
#endif
#ifndef GROUP_M
#define GROUP_M 0
#endif
#if !defined(EXACT) || !defined(A_KMAJOR) || defined(B_NMAJOR) || defined(SPLIT_K) || WIDTH != 4
#error "probe: EXACT, A_KMAJOR, row-major B, WIDTH 4 only"
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
          const float beta, __global floatW* C, const int ldc) {
    const int tx = get_local_id(0);
    const int ty = get_local_id(1);
    const int tid = ty * RTSN + tx;
#if GROUP_M > 0
    // Bands of GROUP_M tile rows; consecutive groups walk down a band's columns.
    const int ntn = get_num_groups(0), ntm = get_num_groups(1);
    const int lin = get_group_id(1) * ntn + get_group_id(0);
    const int first = (lin / (GROUP_M * ntn)) * GROUP_M;
    const int rows_b = min(GROUP_M, ntm - first);
    const int inb = lin % (GROUP_M * ntn);
    const int m0 = (first + inb % rows_b) * TSM;
    const int n0 = (inb / rows_b) * TSN;
#else
    const int m0 = get_group_id(1) * TSM;
    const int n0 = get_group_id(0) * TSN;
#endif
#if 0
    // This group's slice of k is [k0, kend), `per` whole tiles of the ceil(K/TSK) (the
    // last slice may end early, at K); its output is slice z of C.
    const int z = get_group_id(2), slices = get_num_groups(2);
    const int per = ((K + TSK - 1) / TSK + slices - 1) / slices;
    const int k0 = z * per * TSK, kend = min(K, k0 + per * TSK);
    C += (size_t)z * M * (ldc / WIDTH);
#else
    const int k0 = 0, kend = K;
#endif
    // Leading dimensions and extents counted in vectors.
    const int ldav = lda / WIDTH, ldbv = ldb / WIDTH, ldcv = ldc / WIDTH;
    const int Kv = (kend + WIDTH - 1) / WIDTH, Nv = (N + WIDTH - 1) / WIDTH;
    const int Mv = (M + WIDTH - 1) / WIDTH;

    __local floatW Asub[STAGES][TSK][TSMV];
    __local floatW Bsub[STAGES][TSK][TSN / WIDTH];

    float acc[WPTM][WPTN];
    #pragma unroll
    for (int i = 0; i < WPTM; i++)
        #pragma unroll
        for (int j = 0; j < WPTN; j++) acc[i][j] = 0.0f;

    // cp.async: 16 bytes global -> local, no registers; the local address is the
    // shared-window offset of the __local pointer.
#if SHUFFLE == 1
    #define CP16(dst, src) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" \
        :: "r"((uint)(size_t)(dst)), "l"(src) : "memory")
#else
    #define CP16(dst, src) (*(dst) = *(src))   // pocl/Oclgrind: synchronous, same indices
#endif
    #define ASYNC_ROWS(sub, src, ldv, row0, col0v, COLSV, COUNT)                        \
        _Pragma("unroll") for (int l = 0; l < (COUNT); l++) {                          \
            const int e = tid + l * NT;                                                 \
            CP16(&sub[e / (COLSV)][e % (COLSV)], &src[((row0) + e / (COLSV)) * (ldv) + (col0v) + e % (COLSV)]); \
        }
    #define ISSUE(t, s) { ASYNC_ROWS(Asub[s], A, ldav, (t), m0 / WIDTH, TSM / WIDTH, LPTA) \
                          ASYNC_ROWS(Bsub[s], B, ldbv, (t), n0 / WIDTH, TSN / WIDTH, LPTB) }
#if SHUFFLE == 1
    #define COMMIT() asm volatile("cp.async.commit_group;" ::: "memory")
#if STAGES == 2
    #define WAIT() asm volatile("cp.async.wait_group 0;" ::: "memory")
#elif STAGES == 3
    #define WAIT() asm volatile("cp.async.wait_group 1;" ::: "memory")
#elif STAGES == 4
    #define WAIT() asm volatile("cp.async.wait_group 2;" ::: "memory")
#endif
#else
    #define COMMIT()
    #define WAIT()
#endif

    const int tiles = (kend - k0 + TSK - 1) / TSK;
    #pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < tiles) ISSUE(k0 + s * TSK, s);
        COMMIT();
    }
    int rs = 0, ws = STAGES - 1;
    for (int tile = 0; tile < tiles; tile++) {
        WAIT();                              // this work-item's copies of `tile` landed
        barrier(CLK_LOCAL_MEM_FENCE);        // everyone's did; stage ws was read last step
        if (tile + STAGES - 1 < tiles) ISSUE(k0 + (tile + STAGES - 1) * TSK, ws);
        COMMIT();
        #pragma unroll
        for (int k = 0; k < TSK; k++) {
            float a[WPTM], b[WPTN];
            #pragma unroll
            for (int i = 0; i < WPTM / WIDTH; i++) UNPACK(Asub[rs][k][ty + i * RTSM], a, i * WIDTH);
            #pragma unroll
            for (int j = 0; j < WPTN / WIDTH; j++) UNPACK(Bsub[rs][k][tx + j * RTSN], b, j * WIDTH);
            #pragma unroll
            for (int i = 0; i < WPTM; i++)
                #pragma unroll
                for (int j = 0; j < WPTN; j++) acc[i][j] += a[i] * b[j];
        }
        rs = rs + 1 == STAGES ? 0 : rs + 1;
        ws = ws + 1 == STAGES ? 0 : ws + 1;
    }

    const bool full = m0 + TSM <= M && n0 + TSN <= N;
#ifdef WRITE_C
    WRITE_C     // kernel 6 substitutes its own write-back of C here
#else
    #pragma unroll
    for (int i = 0; i < WPTM; i++) {
        const int row = m0 + (ty + (i / WIDTH) * RTSM) * WIDTH + i % WIDTH;
        #pragma unroll
        for (int j = 0; j < WPTN / WIDTH; j++) {
            const int colv = n0 / WIDTH + tx + j * RTSN;
            store_c_vec(C, row, colv, ldcv, M, N, full, alpha, PACK(acc[i], j * WIDTH), beta);
        }
    }
#endif
}


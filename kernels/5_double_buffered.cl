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
// 2*(TSK*(TSM + PAD*WIDTH) + TSK*TSN)*4 bytes (KG times that, and TSM*TSN*4 more, with KG).
// Edges: any M, N, K >= 1, handled as in kernel 4.
// Builds the host picks per launch (not tuning parameters):
// - EXACT (common.cl): whole tiles, no bounds checks on the tile loads.
// - CLAMP (common.cl): k in whole tiles, M or N not: no bounds checks either; tile rows
//   and columns past M or N re-read the matrix's last one (no zero-padded copies).
// - C_ROWS (with C_UNALIGNED, where C's rows are not whole vectors apart): each row of sums
//   staged in local memory, so that a warp stores 32 consecutive floats of C (below). On an
//   H100, whole calls x1.142 at 39 drawn shapes up to k = 1024 (x1.5 at 6350x4378x25),
//   where the staging keeps the resident groups (heuristics.stages_c).
// - K_RAGGED (with CLAMP): k in whole vectors, not whole tiles: the tiles are counted back
//   from the end of k, and only the first one checks k (below). On an H100, whole calls
//   against the checked build: x1.025 at 42 drawn shapes, x0.80 where the 128x128 tiles
//   of 8x8 a work-item ran (whose CLAMP build is as slow), x0.93-0.97 with 16x8 at k < 90.
// - A_KMAJOR / B_NMAJOR: A stored K x M, B stored N x K, read as they lie; a tile whose
//   rows run along k is then stored straight, the other one transposed.
// - SPLIT_K: a launch with get_num_groups(2) = S cuts the k loop into S slices of whole
//   tiles; group z writes its slice's partial product to slice z of C, then a workspace
//   of S stacked M x ldc matrices (ldc a multiple of 4), and splitk_reduce (below) sums
//   the slices into the real C, at any leading dimension. It is a build of its own:
//   compiled into every launch, its extra live values slowed the large register blocks.
// - GUARD=2 (common.cl): the fallback of gemm()'s guarded kernel 7 or 8 (clgemm/guard.py).
// - AB_UNALIGNED: A and B read a float at a time, at any leading dimension and width, so
//   that operands whose rows are not whole vectors need no aligned copies; k counted back
//   from its end, so that only the first tile is partial; small register blocks take B's
//   floats in warp-wide runs (below). On an H100 its loop ran at x0.87 of the vector
//   loads' with 16x8 a work-item (231 registers against 223); whole calls at 4096x4096xk
//   were x1.20-1.27 as fast as with the copy up to k = 15, x0.98 at 127, x0.81 at
//   1501x1501x401 (16x4), and x1.11 at 1023^3 (8x4): taken for products of at most 2^29
//   multiply-adds, or 2^31 with at most 32 sums a work-item in groups of 256 or more
//   (heuristics.reads_floats, results/h100/README.md).
// - KG=2 or 4: k cut into KG slices within the work-group. KG sets of NT work-items (along
//   dimension 1) each multiply the group's tile over their own slice of k, with their own
//   buffers, and hand their sums to the first set through local memory at the end: a
//   launch of about one group a compute unit keeps KG times the warps at work, without
//   split-K's workspace and second launch (heuristics.group_slices). On an H100, whole
//   calls: x1.05-1.07 at 512^3 (128 work-items), x1.08-1.10 at 999^3 and 1023^3 (256, the
//   float loads); 1024^3's vector loads in 512 work-items x0.88, so not taken there
//   (results/h100/README.md).
// - COLUMNS_FIRST: tiles taken down each column of tiles, not along each row, on grids of
//   many tiles no taller than wide (heuristics.columns_first): +0.3-1.2% on the H200 at
//   4096^3, 4000^3, 8192^3 and 7919x7919x769, -0.7% and -1.1% on taller grids
//   (docs/levers.md).
// ptxas schedules this loop very differently in other contexts: an edit here needs an
// A/B at both A layouts (docs/levers.md holds the variants tried and their results).
//
// H200 4096^3, spans: 41.7 TFLOPS at these defaults, 49.1 tuned (128x128x8, 16x8),
// results/h200/README.md.

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
#ifndef KG
#define KG 1
#endif

#include "common.cl"

#define RTSM (TSM / WPTM)               // work-items along M
#define RTSN (TSN / WPTN)               // work-items along N
#define NT (RTSM * RTSN)                // work-items per group
#define TSMV (TSM / WIDTH + PAD)        // vectors per k-row of the A tile, padding included
#define LPTA (TSM * TSK / WIDTH / NT)   // A vectors each work-item loads per tile
#define LPTB (TSK * TSN / WIDTH / NT)   // B vectors each work-item loads per tile

__kernel __attribute__((reqd_work_group_size(RTSN, RTSM * KG, 1)))
void gemm(const int M, const int N, const int K, const float alpha,
          const __global floatW* restrict A, const int lda,
          const __global floatW* restrict B, const int ldb,
          const float beta, __global floatW* C, const int ldc GUARD_ARGS) {
    GUARD_RETURN
    const int tx = get_local_id(0);
#if KG > 1
    // dimension 1 holds KG sets of RTSM rows of work-items: set kz = slice kz of k
    const int kz = get_local_id(1) / RTSM;
    const int ty = get_local_id(1) % RTSM;
#else
    const int ty = get_local_id(1);
#endif
    const int tid = ty * RTSN + tx;
#ifdef COLUMNS_FIRST
    // Groups start in the order of their linear id g = y * groups_x + x, along rows of
    // tiles; here the tile of g is taken down columns instead: row g % rows, column
    // g / rows. Resident groups then share B's column slabs rather than A's row slabs.
    const int g = get_group_id(1) * get_num_groups(0) + get_group_id(0);
    const int m0 = (g % get_num_groups(1)) * TSM;
    const int n0 = (g / get_num_groups(1)) * TSN;
#else
    const int m0 = get_group_id(1) * TSM;
    const int n0 = get_group_id(0) * TSN;
#endif
#ifdef SPLIT_K
    // This group's slice of k is [k0, kend), `per` whole tiles of the ceil(K/TSK) (the
    // last slice may end early, at K); its output is slice z of C.
    const int z = get_group_id(2), slices = get_num_groups(2);
    const int per = ((K + TSK - 1) / TSK + slices - 1) / slices;
    const int kg0 = z * per * TSK, kgend = min(K, kg0 + per * TSK);
    C += (size_t)z * M * (ldc / WIDTH);
#else
    const int kg0 = 0, kgend = K;
#endif
#if KG > 1
    // The group's range [kg0, kgend) in KG slices of `kper` whole tiles, counted from the
    // end of k where AB_UNALIGNED takes its one partial tile first (below): slice kz is
    // [k0, kend), perhaps empty; every set runs `kper` steps, so that all reach each barrier.
    const int gtiles = (kgend - kg0 + TSK - 1) / TSK, kper = (gtiles + KG - 1) / KG;
#if defined(AB_UNALIGNED) || defined(K_RAGGED)
    const int kbase = kgend - gtiles * TSK;
#else
    const int kbase = kg0;
#endif
    const int k0 = max(kg0, kbase + kz * kper * TSK);
    const int kend = max(k0, min(kgend, kbase + (kz + 1) * kper * TSK));
#else
    const int k0 = kg0, kend = kgend;
#endif
    // Leading dimensions and extents counted in vectors.
    const int ldav = lda / WIDTH, ldbv = ldb / WIDTH;
    const int Kv = (kend + WIDTH - 1) / WIDTH, Nv = (N + WIDTH - 1) / WIDTH;
    const int Mv = (M + WIDTH - 1) / WIDTH;

#if KG > 1
    __local floatW Asub_sets[KG][2][TSK][TSMV];    // each set's own two buffers
    __local floatW Bsub_sets[KG][2][TSK][TSN / WIDTH];
    __local floatW (*Asub)[TSK][TSMV] = Asub_sets[kz];
    __local floatW (*Bsub)[TSK][TSN / WIDTH] = Bsub_sets[kz];
#else
    __local floatW Asub[2][TSK][TSMV];    // A^T, two buffers
    __local floatW Bsub[2][TSK][TSN / WIDTH];
#endif
#if defined(C_ROWS) && defined(C_UNALIGNED) && KG == 1 && !defined(WRITE_C)
    // C's write-back (below) stages RTSM x TSN floats at a time in a tile buffer that the
    // loop is done with, where one holds them (else it stores C as the other builds do)
#if 2 * TSK * WPTM >= TSN
    __local floatW (*slab)[TSN / WIDTH] = (__local floatW (*)[TSN / WIDTH])Asub;
#define C_SLAB
#elif 2 * TSK * WPTM >= TSM
    __local floatW (*slab)[TSN / WIDTH] = (__local floatW (*)[TSN / WIDTH])Bsub;
#define C_SLAB
#endif
#endif

    float acc[WPTM][WPTN];
    #pragma unroll
    for (int i = 0; i < WPTM; i++)
        #pragma unroll
        for (int j = 0; j < WPTN; j++) acc[i][j] = 0.0f;

    // The vectors this work-item moves per tile, staged in registers.
    floatW ra[LPTA], rb[LPTB];

    // Global -> registers: COUNT vectors of a block of rows of `src`, rows row0.., vector
    // columns col0v.. (COLSV vectors per row), work-item tid taking every NT-th vector
    // (row r of the block, vector cv of the row); a vector where OK is false reads as zero.
    #define LOAD_FROM(dst, src, ldv, row0, rows, ROW, col0v, colsv, COL, COLSV, COUNT, OK) \
        _Pragma("unroll") for (int l = 0; l < (COUNT); l++) {                          \
            const int e = tid + l * NT;                                                 \
            const int r = e / (COLSV), cv = (col0v) + e % (COLSV);                      \
            dst[l] = (OK) ? src[ROW((row0) + r, rows) * (ldv) + COL(cv, colsv)]         \
                          : (floatW)(0.0f);                                             \
        }
    // ...where out-of-range vectors read as zero (INSIDE, common.cl), or, in a CLAMP build,
    // as the last row or column along m or n again (ROW and COL are EDGE for an index along
    // m or n, DEPTH for one along k)
    #define LOAD_ROWS(dst, src, ldv, row0, rows, ROW, col0v, colsv, COL, COLSV, COUNT) \
        LOAD_FROM(dst, src, ldv, row0, rows, ROW, col0v, colsv, COL, COLSV, COUNT,     \
                  INSIDE((row0) + r < (rows) && cv < (colsv)))
    // Registers -> a k-major local tile: rows that run along k are stored as they are...
    #define STORE_ROWS(sub, src, COLSV, COUNT)                                          \
        _Pragma("unroll") for (int l = 0; l < (COUNT); l++) {                          \
            const int e = tid + l * NT;                                                 \
            sub[e / (COLSV)][e % (COLSV)] = src[l];                                     \
        }
    // ...and rows that run along m (or n) are transposed: float w of vector c of row r
    // is element r of k-row c*WIDTH + w.
    #define STORE_TRANSPOSED(sub, src, COLSV, COUNT)                                    \
        _Pragma("unroll") for (int l = 0; l < (COUNT); l++) {                          \
            const int e = tid + l * NT;                                                 \
            const int r = e / (COLSV), c = e % (COLSV);                                 \
            float s[WIDTH];                                                             \
            UNPACK(src[l], s, 0);                                                       \
            _Pragma("unroll") for (int w = 0; w < WIDTH; w++)                          \
                ((__local float*)&sub[c * WIDTH + w][r / WIDTH])[r % WIDTH] = s[w];     \
        }

    // The tile starting at depth t. A is M x K (rows along m) unless the host built this
    // with A_KMAJOR (A given as K x M, lda >= M); B is K x N unless B_NMAJOR (N x K).
#ifndef A_KMAJOR
    #define LOAD_A(t) LOAD_ROWS(ra, A, ldav, m0, M, EDGE, (t) / WIDTH, Kv, DEPTH, TSK / WIDTH, LPTA)
    #define STORE_A(buf) STORE_TRANSPOSED(Asub[buf], ra, TSK / WIDTH, LPTA)
#else
    #define LOAD_A(t) LOAD_ROWS(ra, A, ldav, (t), kend, DEPTH, m0 / WIDTH, Mv, EDGE, TSM / WIDTH, LPTA)
    #define STORE_A(buf) STORE_ROWS(Asub[buf], ra, TSM / WIDTH, LPTA)
#endif
#ifndef B_NMAJOR
    #define LOAD_B(t) LOAD_ROWS(rb, B, ldbv, (t), kend, DEPTH, n0 / WIDTH, Nv, EDGE, TSN / WIDTH, LPTB)
    #define STORE_B(buf) STORE_ROWS(Bsub[buf], rb, TSN / WIDTH, LPTB)
#else
    #define LOAD_B(t) LOAD_ROWS(rb, B, ldbv, n0, N, EDGE, (t) / WIDTH, Kv, DEPTH, TSK / WIDTH, LPTB)
    #define STORE_B(buf) STORE_TRANSPOSED(Bsub[buf], rb, TSK / WIDTH, LPTB)
#endif
    #define LOAD_TILE(t) LOAD_A(t) LOAD_B(t)
    #define STORE_TILE(buf) STORE_A(buf) STORE_B(buf)

#ifdef AB_UNALIGNED
    // A and B read a float at a time: any leading dimension. An index along m or n is
    // clamped to the matrix's last row or column (as in CLAMP: those results are never
    // stored); one along k is taken as it is (DEPTH), and KOK says whether a float at depth
    // i is read (else it is zero). A row that is not read points at row 0: the first tile's
    // rows before k0 would point before the matrix.
    // Float w of staging vector l lies in a block of rows of COLSV vectors either as the
    // vector builds take it, float w of vector e = tid + l*NT (VEC_*), or G vectors apart
    // (STR_*: floats j%G + G*(w + WIDTH*(j/G)) of vector j of a row, G = min(COLSV, 32)),
    // so that a warp's load reads up to 32 consecutive floats of a row, not floats 16
    // bytes apart that take four times the cache wavefronts; a tile stored straight then
    // takes WIDTH scalar stores of a vector, not one vector store. B's tile (and a K-major
    // A's) is taken so by small register blocks (WPTM * WPTN <= 32) in groups of 256
    // work-items or more (8 warps or more to wait on memory); the others keep the vector
    // builds' order. On an H100 at 1023^3 (64x128x16 tiles, 8x4 a work-item, 256 items) the
    // whole call's span took x0.89 the time of the vector order; at 128x128x8 with 16x8 a
    // work-item (128 items), x1.03-1.05 (docs/levers.md).
    #define VEC_ROW(l, w, COLSV) ((tid + (l) * NT) / (COLSV))
    #define VEC_COL(l, w, COLSV) (((tid + (l) * NT) % (COLSV)) * WIDTH + (w))
    #define STR_G(COLSV) ((COLSV) < 32 ? (COLSV) : 32)
    #define STR_ROW(l, w, COLSV) VEC_ROW(l, w, COLSV)
    #define STR_COL(l, w, COLSV) (((tid + (l) * NT) % (COLSV)) % STR_G(COLSV) \
        + STR_G(COLSV) * ((w) + WIDTH * (((tid + (l) * NT) % (COLSV)) / STR_G(COLSV))))
    #define LOAD_FLOATS(dst, src, ld, row0, rows, RFIX, ROK, col0, cols, CFIX, COK, COLSV, COUNT, \
                        ROWF, COLF)                                                     \
        _Pragma("unroll") for (int l = 0; l < (COUNT); l++) {                          \
            float s[WIDTH];                                                             \
            _Pragma("unroll") for (int w = 0; w < WIDTH; w++) {                        \
                const int r = (row0) + ROWF(l, w, COLSV), c = (col0) + COLF(l, w, COLSV); \
                const __global float* p = (const __global float*)(src)                  \
                                          + (size_t)(ROK(r) ? RFIX(r, rows) : 0) * (ld);\
                s[w] = (ROK(r) && COK(c)) ? p[CFIX(c, cols)] : 0.0f;                   \
            }                                                                           \
            dst[l] = PACK(s, 0);                                                        \
        }
    // a block whose rows run along k to a local tile, float (r, c) to k-row r, element c
    #define STORE_FLOATS(sub, src, COLSV, COUNT, ROWF, COLF)                            \
        _Pragma("unroll") for (int l = 0; l < (COUNT); l++) {                          \
            float s[WIDTH];                                                             \
            UNPACK(src[l], s, 0);                                                       \
            _Pragma("unroll") for (int w = 0; w < WIDTH; w++)                          \
                ((__local float*)(sub)[ROWF(l, w, COLSV)])[COLF(l, w, COLSV)] = s[w];  \
        }
    #define U_CLAMP(i, n) min((i), (n) - 1)
    #define U_ALL(i) 1
    // the tiles are counted back from kend: tile 0 starts at kfirst <= k0, and only its
    // floats before k0 are left out (< kend keeps a slice of k with nothing to do, which
    // heuristics.splits never makes, from reading past the end)
    #define U_FIRST(i) ((i) >= k0 && (i) < kend)
#if WPTM * WPTN <= 32 && NT >= 256
    #define S_ROW STR_ROW
    #define S_COL STR_COL
    #define STORE_STRAIGHT(sub, src, COLSV, COUNT) STORE_FLOATS(sub, src, COLSV, COUNT, STR_ROW, STR_COL)
#else
    #define S_ROW VEC_ROW
    #define S_COL VEC_COL
    #define STORE_STRAIGHT STORE_ROWS
#endif
    // tiles stored transposed keep the vector builds' order and stores; straight ones
    // take S_ROW, S_COL and STORE_STRAIGHT
#ifndef A_KMAJOR
    #define LOAD_A_OK(t, KOK) LOAD_FLOATS(ra, A, lda, m0, M, U_CLAMP, U_ALL, (t), kend, DEPTH, KOK, TSK / WIDTH, LPTA, VEC_ROW, VEC_COL)
#else
    #define LOAD_A_OK(t, KOK) LOAD_FLOATS(ra, A, lda, (t), kend, DEPTH, KOK, m0, M, U_CLAMP, U_ALL, TSM / WIDTH, LPTA, S_ROW, S_COL)
    #undef STORE_A
    #define STORE_A(buf) STORE_STRAIGHT(Asub[buf], ra, TSM / WIDTH, LPTA)
#endif
#ifndef B_NMAJOR
    #define LOAD_B_OK(t, KOK) LOAD_FLOATS(rb, B, ldb, (t), kend, DEPTH, KOK, n0, N, U_CLAMP, U_ALL, TSN / WIDTH, LPTB, S_ROW, S_COL)
    #undef STORE_B
    #define STORE_B(buf) STORE_STRAIGHT(Bsub[buf], rb, TSN / WIDTH, LPTB)
#else
    #define LOAD_B_OK(t, KOK) LOAD_FLOATS(rb, B, ldb, n0, N, U_CLAMP, U_ALL, (t), kend, DEPTH, KOK, TSK / WIDTH, LPTB, VEC_ROW, VEC_COL)
#endif
    #undef LOAD_TILE
    #define LOAD_TILE(t) LOAD_A_OK(t, U_ALL) LOAD_B_OK(t, U_ALL)
    #define LOAD_FIRST(t) LOAD_A_OK(t, U_FIRST) LOAD_B_OK(t, U_FIRST)
    const int kfirst = kend - (kend - k0 + TSK - 1) / TSK * TSK;
    #define KSTART kfirst
#elif defined(K_RAGGED)
    // CLAMP's loads where k is whole vectors but not whole tiles: the tiles are counted back
    // from kend, as AB_UNALIGNED counts them, so that only the first tile, which starts up
    // to TSK - WIDTH floats before k0, reads anything to leave out; its vectors before k0
    // read as zero (k0, kend and so the tile starts are whole vectors: a vector lies all
    // before k0 or all after). Every later tile loads as in CLAMP, without a check.
#ifndef A_KMAJOR    // k along A's rows: vector cv starts at float cv * WIDTH of k
    #define LOAD_A_FIRST(t) LOAD_FROM(ra, A, ldav, m0, M, EDGE, (t) / WIDTH, Kv, DEPTH, TSK / WIDTH, LPTA, cv >= k0 / WIDTH)
#else               // k down A's rows: row r of the tile is k = t + r
    #define LOAD_A_FIRST(t) LOAD_FROM(ra, A, ldav, (t), kend, DEPTH, m0 / WIDTH, Mv, EDGE, TSM / WIDTH, LPTA, (t) + r >= k0)
#endif
#ifndef B_NMAJOR
    #define LOAD_B_FIRST(t) LOAD_FROM(rb, B, ldbv, (t), kend, DEPTH, n0 / WIDTH, Nv, EDGE, TSN / WIDTH, LPTB, (t) + r >= k0)
#else
    #define LOAD_B_FIRST(t) LOAD_FROM(rb, B, ldbv, n0, N, EDGE, (t) / WIDTH, Kv, DEPTH, TSK / WIDTH, LPTB, cv >= k0 / WIDTH)
#endif
    #define LOAD_FIRST(t) LOAD_A_FIRST(t) LOAD_B_FIRST(t)
    const int kfirst = kend - (kend - k0 + TSK - 1) / TSK * TSK;
    #define KSTART kfirst
#else
    #define LOAD_FIRST(t) LOAD_TILE(t)
    #define KSTART k0
#endif

#if KG > 1
    // an empty slice loads nothing (an EXACT build would read past k) and multiplies nothing
    const int tiles = (kend - k0 + TSK - 1) / TSK;
    if (tiles > 0) { LOAD_FIRST(KSTART); STORE_TILE(0); }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int tile = 0; tile < kper; tile++) {
#else
    LOAD_FIRST(KSTART);
    STORE_TILE(0);
    barrier(CLK_LOCAL_MEM_FENCE);

    const int tiles = (kend - k0 + TSK - 1) / TSK;
    for (int tile = 0; tile < tiles; tile++) {
#endif
        const int buf = tile & 1;
        const bool more = tile + 1 < tiles;
        if (more) { LOAD_TILE(KSTART + (tile + 1) * TSK); }

#if KG > 1
        if (tile < tiles)
#endif
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

#if KG > 1
    // Sets 1..KG-1 add their sums into set 0's, one set at a time through a TSM x TSN
    // scratch: sum (i, j) of work-item tid at red[i][j][tid], so that a warp's 32 stores
    // or loads of one sum are 32 consecutive floats. Set 0 then writes C alone.
    __local float red[WPTM][WPTN][NT];
    for (int s = 1; s < KG; s++) {
        if (kz == s) {
            #pragma unroll
            for (int i = 0; i < WPTM; i++)
                #pragma unroll
                for (int j = 0; j < WPTN; j++) red[i][j][tid] = acc[i][j];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (kz == 0) {
            #pragma unroll
            for (int i = 0; i < WPTM; i++)
                #pragma unroll
                for (int j = 0; j < WPTN; j++) acc[i][j] += red[i][j][tid];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (kz != 0) return;
#endif
    const bool full = m0 + TSM <= M && n0 + TSN <= N;
#ifdef WRITE_C
    WRITE_C     // kernel 6 substitutes its own write-back of C here
#elif defined(C_SLAB)
    // C_ROWS (with C_UNALIGNED): C's rows are not whole vectors apart (ldc % WIDTH != 0), so
    // C is stored a float at a time. Stored from the sums as they lie, a warp's store would
    // write every WIDTH-th float of a run (each work-item its WIDTH columns of a row in
    // turn); so each of the WPTM rows a work-item holds goes through local memory first:
    // sum row i (q = i / WIDTH, w = i % WIDTH) of all RTSM rows of work-items is the slab
    // of rows m0 + (ry + q * RTSM) * WIDTH + w, ry < RTSM, by TSN columns, which the group
    // then writes with work-item tid taking its floats tid, tid + NT, ... in row order: a
    // warp writes 32 consecutive floats of a row.
    __global float* Cf = (__global float*)C;
    #pragma unroll
    for (int i = 0; i < WPTM; i++) {
        if (i > 0) barrier(CLK_LOCAL_MEM_FENCE);        // the last slab's floats are read
        #pragma unroll
        for (int j = 0; j < WPTN / WIDTH; j++) slab[ty][tx + j * RTSN] = PACK(acc[i], j * WIDTH);
        barrier(CLK_LOCAL_MEM_FENCE);
        #pragma unroll
        for (int l = 0; l < WPTN; l++) {                // RTSM * TSN / NT = WPTN floats each
            const int e = tid + l * NT, ry = e / TSN, cx = e % TSN;
            const int row = m0 + (ry + (i / WIDTH) * RTSM) * WIDTH + i % WIDTH, col = n0 + cx;
            if (row < M && col < N)
                store_c(Cf, row * ldc + col, alpha, ((__local float*)slab[ry])[cx], beta);
        }
    }
#else
    #pragma unroll
    for (int i = 0; i < WPTM; i++) {
        const int row = m0 + (ty + (i / WIDTH) * RTSM) * WIDTH + i % WIDTH;
        #pragma unroll
        for (int j = 0; j < WPTN / WIDTH; j++) {
            const int colv = n0 / WIDTH + tx + j * RTSN;
            store_c_vec(C, row, colv, ldc, M, N, full, alpha, PACK(acc[i], j * WIDTH), beta);
        }
    }
#endif
}

#ifdef SPLIT_K
// Split-K's second step: C = alpha * (sum of the S slices of W, each M x ldw) + beta * C.
// A work-item sums one float4 of a row (ldw a multiple of 4), in groups of 64 x 4 rows:
// groups of 64 single floats were bound by starting groups, as copy_rows' were
// (docs/levers.md). C's leading dimension ldc is any, so that C is written where it lies:
// store_c4 (common.cl) stores one vector where ldc is a multiple of 4 and the vector is
// whole, else a float at a time. The slices were written with alpha = 1 and beta = 0; beta == 0 does not read C
// (store_c).
__kernel __attribute__((reqd_work_group_size(64, 4, 1)))
void splitk_reduce(const int M, const int N, const int S, const float alpha,
                   const __global float4* restrict W, const int ldw, const float beta,
                   __global float* C, const int ldc) {
    const int cv = get_global_id(0), row = get_global_id(1), col = cv * 4;   // vector cv
    if (row >= M || col >= N) return;
    const size_t slice = (size_t)M * (ldw / 4), idx = (size_t)row * (ldw / 4) + cv;
    float4 sum = (float4)(0.0f);
    for (int s = 0; s < S; s++) sum += W[s * slice + idx];
    store_c4((__global float4*)C, row, cv, ldc, M, N, (ldc & 3) == 0 && col + 4 <= N, alpha,
             sum, beta);
}
#endif  // SPLIT_K

// Kernel 7: tensor cores (kernel 5 + one technique).
//
// Technique: the multiply of a tile step moves from FFMAs to the tensor cores, by the
// warp-wide mma.sync.m16n8k8 on TF32 inputs (inline PTX: OpenCL C has no such builtin).
// TF32 keeps 10 of float's 23 mantissa bits, so each float x is split into a TF32 head
// h = round(x) and the remainder l = x - h, and every product takes three MMAs:
// a*b ~ al*bh + ah*bl + ah*bh (al*bl is below float's rounding). The tensor cores' adder
// truncates, so the MMAs of each FOLD-deep step start from zero and a float add folds
// their sum into the accumulator.
//
// Fragments of mma.m16n8k8 (PTX ISA): lane = 4*g + t (g = lane/4, t = lane%4) holds
//   A (16 x 8):  a0 = (g, t), a1 = (g+8, t), a2 = (g, t+4), a3 = (g+8, t+4)
//   B (8 x 8):   b0 = (t, g), b1 = (t+4, g)
//   C (16 x 8):  c0 = (g, 2t), c1 = (g, 2t+1), c2 = (g+8, 2t), c3 = (g+8, 2t+1)
// The MMA sums over its 8 k-slots in any order, and which column of B feeds which of its
// 8 n-slots only decides where the result lands, so the kernel picks both so that every
// fragment read is a float4 of a tile stored as it lies in global memory:
//   k: in each 16-deep block, lane t reads k = 4t..4t+3 (one float4 of an A row); k = 4t
//      and 4t+1 are its slots t and t+4 of the block's first MMA step, 4t+2 and 4t+3 of
//      the second, and B's rows are taken in the same order;
//   n: n-slot g of the warp's MMA tile j is column g*NJ + j of its WN columns, so lane g
//      reads its NJ tiles' values of a B row as NJ/4 float4s, and its C values of a row
//      (n-slots 2t and 2t+1 of every tile) are 2*NJ consecutive columns, stored as float4s.
// Each warp owns a WM x WN block of C as (WM/16) x (WN/8) MMA tiles; the local tiles'
// float4 slots are XOR-swizzled (A_AT, B_AT) so that these reads hit 32 banks.
// Loads, the two buffers and the one barrier a tile are kernel 5's.
//
// Parameters: TSM, TSN (C tile per work-group), TSK (depth, a multiple of 16), WM (rows
// of C per warp, a multiple of 16), WN (columns per warp: 32, 64 or 128), FOLD (depth
// of the MMAs' fresh sums: 8 or 16).
// Constraints: WM divides TSM and WN divides TSN; at most 8 warps; WM*WN/32 <= 128
// accumulators, and WM*WN/32 + FOLD/2*WN/8 <= 192 registers with B's split fragments; the
// tile's float4 loads split evenly over the work-group; local memory
// 2*(TSM*TSK + TSK*TSN)*4 bytes, and for the emulated MMA 768 more a warp (the registry
// counts both on every device); lda and ldb multiples of 4 (an ldc that is not takes the
// C_UNALIGNED build, common.cl, whose stores are scalar).
// Edges: any M, N, K >= 1, as kernel 5 (EXACT build for whole tiles, CLAMP for k in
// whole tiles).
// gemm() routes inputs it cannot take to kernel 5 (clgemm/guard.py); where C is read it
// builds it with GUARD=1 (common.cl).
// Devices: MMA=1 (NVIDIA, compute capability 8.0 or later; the build sets it) runs the
// PTX; elsewhere (pocl, Oclgrind) each MMA is emulated through local memory with the same
// lane layout, TF32 truncation and truncating adder, so the index math and the accuracy
// are checked on the CPU.
//
// H200 8192^3, spans: 55.9 TFLOPS at these defaults (27 KB of local memory: they fit any
// device), 61.1 at 128x128x32 (8 warps, 64 KB, past the 48 KB the device reports: the
// H200's tuned entries), against 55.1 with scalar fragment reads and sums folded every 8
// at their tuned point; error 4.2e-7 (kernel 5: 1.6e-6);
// results/h200/raw/k7-fragments-2026-12-04.json.

#ifndef TSM
#define TSM 128
#endif
#ifndef TSN
#define TSN 64
#endif
#ifndef TSK
#define TSK 16
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 32
#endif
#ifndef FOLD
#define FOLD 16
#endif
#ifndef MMA
#define MMA 0
#endif
#define TF32_HW MMA

#include "common.cl"

#define WARPS_N (TSN / WN)
#define NT (32 * WARPS_N * (TSM / WM))  // work-items per group
#define MI (WM / 16)                    // MMA tiles per warp along m
#define NJ (WN / 8)                     // MMA tiles per warp along n
#define NV (NJ / 4)                     // float4s of a B row each lane reads
#define LPTA (TSM * TSK / 4 / NT)       // A float4s each work-item loads per tile
#define LPTB (TSK * TSN / 4 / NT)       // B float4s each work-item loads per tile
// Float4 slot s of A's row r and of B's row k in the local tiles. 128-bit reads are served
// 8 lanes at a time (g = 0, 1 and t = 0..3): for A they read rows r and r + 1 at slots
// 4*block + t, so odd rows move to the other half of 8 slots (32 banks) when a row has 8
// or more; for B they read rows 4t + q at slots g*NV + v, and XOR with a function of t
// that spares the bit NV sets puts the 4 rows' pairs of slots on 8 different ones.
#define ASWZ(r) ((TSK >= 32) ? (((r) & 1) << 2) : 0)
#define A_AT(r, s) ((r) * (TSK / 4) + ((s) ^ ASWZ(r)))
#if NJ == 4
#define BSWZ(t) ((t) << 1)
#elif NJ == 8
#define BSWZ(t) (((t) & 1) | (((t) & 2) << 1))
#elif NJ == 16
#define BSWZ(t) (t)
#else
#error "WN must be 32, 64 or 128"
#endif
#define B_AT(k, s) ((k) * (TSN / 4) + ((s) ^ BSWZ(((k) >> 2) & 3)))
#if TSK % 16 || (FOLD != 8 && FOLD != 16)
#error "TSK must be a multiple of 16 and FOLD 8 or 16"
#endif


#if MMA
// d = a * b + d on a 16 x 8 x 8 block; a and b hold TF32 bit patterns.
#define MMA_TF32(d, a, b)                                                                \
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "                   \
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"             \
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])                        \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),     \
                   "f"(d[0]), "f"(d[1]), "f"(d[2]), "f"(d[3]))
#define MMA_SCRATCH
#else
// The emulation: every lane posts its fragments to its warp's scratch, then computes its
// four outputs from the posted values, which the hardware truncates to TF32. The sum is
// added to d rounded toward zero, as the tensor cores' adder was seen to do (see above;
// tf32_round and add_toward_zero are common.cl's).
// All work-items of the group reach every call (the barriers), as with the real MMA.
// Posting and computing are calls kept out of line, their values passed by value: pocl
// makes the code between two barriers a loop over the work-group's work-items, one per
// barrier of the unrolled kernel body (two per MMA), and inlined there these steps took
// LLVM 20-70 s a build (32x32x16 tiles: 20 s; 32x32x32 with two warps: 65 s; 2026-12-04),
// against 2-4 s as calls. The arithmetic is the same, bit for bit.
inline float tf32_value(__local const uint* s) { return as_float(*s & 0xffffe000u); }
__attribute__((noinline))
void mma_post(__local uint* s, const int lane, const uint a0, const uint a1, const uint a2,
              const uint a3, const uint b0, const uint b1) {
    s[lane * 6] = a0; s[lane * 6 + 1] = a1; s[lane * 6 + 2] = a2; s[lane * 6 + 3] = a3;
    s[lane * 6 + 4] = b0; s[lane * 6 + 5] = b1;
}
__attribute__((noinline))
float4 mma_products(__local const uint* s, const int lane, const float4 d_in) {
    float d[4];
    UNPACK4(d_in, d, 0);
    const int g = lane / 4, t = lane % 4;
    for (int r = 0; r < 4; r++) {
        const int row = g + 8 * (r / 2), col = 2 * t + r % 2;
        float sum = 0.0f;
        for (int k = 0; k < 8; k++)     // A(row, k) and B(k, col), found by the layout above
            sum += tf32_value(&s[((row % 8) * 4 + k % 4) * 6 + row / 8 + 2 * (k / 4)])
                 * tf32_value(&s[(col * 4 + k % 4) * 6 + 4 + k / 4]);
        d[r] = add_toward_zero(d[r], sum);
    }
    return PACK4(d, 0);
}
inline void mma_emulated(__local uint* s, const int lane, float* d, const uint* a,
                         const uint* b) {
    mma_post(s, lane, a[0], a[1], a[2], a[3], b[0], b[1]);
    barrier(CLK_LOCAL_MEM_FENCE);
    const float4 sums = mma_products(s, lane, PACK4(d, 0));
    UNPACK4(sums, d, 0);
    barrier(CLK_LOCAL_MEM_FENCE);
}
#define MMA_SCRATCH __local uint mma_scratch[NT * 6];
#define MMA_TF32(d, a, b) mma_emulated(mma_scratch + warp * 192, lane, d, a, b)
#endif

__kernel __attribute__((reqd_work_group_size(32 * WARPS_N, TSM / WM, 1)))
void gemm(const int M, const int N, const int K, const float alpha,
          const __global float4* restrict A, const int lda,
          const __global float4* restrict B, const int ldb,
          const float beta, __global float* C, const int ldc GUARD_ARGS) {
    GUARD_RETURN
    const int tid = get_local_id(1) * (32 * WARPS_N) + get_local_id(0);
    const int warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int wm0 = get_local_id(1) * WM;              // this warp's block of the C tile
    const int wn0 = (get_local_id(0) / 32) * WN;
    const int m0 = get_group_id(1) * TSM;
    const int n0 = get_group_id(0) * TSN;
    const int ldav = lda / 4, ldbv = ldb / 4;
    const int Kv = (K + 3) / 4, Nv = (N + 3) / 4;

    __local float4 Asub[2][TSM * TSK / 4];
    __local float4 Bsub[2][TSK * TSN / 4];
    MMA_SCRATCH

    float acc[MI][NJ][4];
    #pragma unroll
    for (int i = 0; i < MI; i++)
        #pragma unroll
        for (int j = 0; j < NJ; j++)
            #pragma unroll
            for (int r = 0; r < 4; r++) acc[i][j][r] = 0.0f;

    float4 ra[LPTA], rb[LPTB];
    // Global -> registers, float4 e = tid + l*NT of the tile: A's row e / (TSK/4) (m) and
    // vector e % (TSK/4) along k; B's row e / (TSN/4) (k) and vector e % (TSN/4) along n.
    // Vectors past M, N or K read as zero; in a CLAMP build (common.cl), rows of A past M
    // and vectors of B past N re-read the last one instead.
    #define LOAD_TILE(k0)                                                                \
        _Pragma("unroll") for (int l = 0; l < LPTA; l++) {                              \
            const int e = tid + l * NT, r = e / (TSK / 4), cv = (k0) / 4 + e % (TSK / 4); \
            ra[l] = INSIDE(m0 + r < M && cv < Kv) ? A[EDGE(m0 + r, M) * ldav + cv]      \
                                                  : (float4)(0.0f);                      \
        }                                                                               \
        _Pragma("unroll") for (int l = 0; l < LPTB; l++) {                              \
            const int e = tid + l * NT, r = e / (TSN / 4), cv = n0 / 4 + e % (TSN / 4);  \
            rb[l] = INSIDE((k0) + r < K && cv < Nv) ? B[((k0) + r) * ldbv + EDGE(cv, Nv)] \
                                                    : (float4)(0.0f);                    \
        }
    #define STORE_TILE(buf)                                                              \
        _Pragma("unroll") for (int l = 0; l < LPTA; l++) {                              \
            const int e = tid + l * NT;                                                  \
            Asub[buf][A_AT(e / (TSK / 4), e % (TSK / 4))] = ra[l];                       \
        }                                                                               \
        _Pragma("unroll") for (int l = 0; l < LPTB; l++) {                              \
            const int e = tid + l * NT;                                                  \
            Bsub[buf][B_AT(e / (TSN / 4), e % (TSN / 4))] = rb[l];                       \
        }
    // x = h + l, h the TF32 head (as its bit pattern) and l the float remainder
    #define SPLIT_ONE(x, h, l) { h = tf32_round(x); l = as_uint((x) - as_float(h)); }
    // READ4 reads slot `at` of a local tile as TF32 heads h[4] and remainders l[4]
    #define READ4(sub, at, h, l) {                                                       \
        float x_[4];                                                                     \
        UNPACK4(sub[at], x_, 0);                                                         \
        _Pragma("unroll") for (int c = 0; c < 4; c++) SPLIT_ONE(x_[c], h[c], l[c]);     \
    }
    // The MMAs of step s into fresh sums d, and d folded into the accumulators of row i
    #define ZERO_D                                                                       \
        _Pragma("unroll") for (int j = 0; j < NJ; j++)                                  \
            _Pragma("unroll") for (int r = 0; r < 4; r++) d[j][r] = 0.0f;
    #define SMALL_TERMS(s)                                                               \
        _Pragma("unroll") for (int j = 0; j < NJ; j++) MMA_TF32(d[j], al[s], bh[j][s]);  \
        _Pragma("unroll") for (int j = 0; j < NJ; j++) MMA_TF32(d[j], ah[s], bl[j][s]);
    #define HEAD_TERMS(s)                                                                \
        _Pragma("unroll") for (int j = 0; j < NJ; j++) MMA_TF32(d[j], ah[s], bh[j][s]);
    #define FOLD_D(i)                                                                    \
        _Pragma("unroll") for (int j = 0; j < NJ; j++)                                  \
            _Pragma("unroll") for (int r = 0; r < 4; r++) acc[i][j][r] += d[j][r];

    LOAD_TILE(0);
    STORE_TILE(0);
    barrier(CLK_LOCAL_MEM_FENCE);

    const int tiles = (K + TSK - 1) / TSK;
    for (int tile = 0; tile < tiles; tile++) {
        const int buf = tile & 1;
        const bool more = tile + 1 < tiles;
        if (more) { LOAD_TILE((tile + 1) * TSK); }

        #pragma unroll
        for (int kb = 0; kb < TSK; kb += 16) {
            // B's fragments of the block's two MMA steps s: row 4t + q (q = 2s + r) is b_r
            // of step s, and its float at n-slot g of tile j is component j % 4 of float4
            // g*NV + j/4 of the row.
            uint bh[NJ][2][2], bl[NJ][2][2];
            #pragma unroll
            for (int q = 0; q < 4; q++)
                #pragma unroll
                for (int v = 0; v < NV; v++) {
                    uint yh[4], yl[4];
                    READ4(Bsub[buf], B_AT(kb + 4 * t + q, wn0 / 4 + g * NV + v), yh, yl);
                    #pragma unroll
                    for (int c = 0; c < 4; c++) {
                        bh[4 * v + c][q / 2][q % 2] = yh[c];
                        bl[4 * v + c][q / 2][q % 2] = yl[c];
                    }
                }
            #pragma unroll
            for (int i = 0; i < MI; i++) {
                // A's rows g and g + 8 of MMA tile i (x = 0, 1): components 2s and 2s + 1
                // of their float4 are a0/a1 and a2/a3 of step s.
                uint xh[2][4], xl[2][4];
                READ4(Asub[buf], A_AT(wm0 + i * 16 + g, kb / 4 + t), xh[0], xl[0]);
                READ4(Asub[buf], A_AT(wm0 + i * 16 + g + 8, kb / 4 + t), xh[1], xl[1]);
                uint ah[2][4], al[2][4];
                #pragma unroll
                for (int s = 0; s < 2; s++)
                    #pragma unroll
                    for (int r = 0; r < 4; r++) {
                        ah[s][r] = xh[r % 2][2 * s + r / 2];
                        al[s][r] = xl[r % 2][2 * s + r / 2];
                    }
                // Small terms first, into fresh sums that a float add then folds into the
                // accumulators: chained through the MMAs' own accumulator instead, the
                // tensor cores' truncating adder lost ~K * 2^-24 (5.7e-5 at 8192^3 on the
                // H200, docs/levers.md). Each pass runs over the NJ tiles, so consecutive
                // MMAs are independent.
                float d[NJ][4];
                #if FOLD == 16
                ZERO_D; SMALL_TERMS(0); SMALL_TERMS(1); HEAD_TERMS(0); HEAD_TERMS(1); FOLD_D(i);
                #else
                ZERO_D; SMALL_TERMS(0); HEAD_TERMS(0); FOLD_D(i);
                ZERO_D; SMALL_TERMS(1); HEAD_TERMS(1); FOLD_D(i);
                #endif
            }
        }

        if (more) { STORE_TILE(buf ^ 1); }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    // C: lane (g, t) holds rows g and g + 8 of each MMA tile i at n-slots 2t + p (p = 0,
    // 1), that is, columns (2t + p)*NJ + j of the warp's block for its tiles j: 2*NJ
    // consecutive columns a row, written as float4s.
    const bool full = m0 + TSM <= M && n0 + TSN <= N;
    #pragma unroll
    for (int i = 0; i < MI; i++)
        #pragma unroll
        for (int h = 0; h < 2; h++) {
            const int row = m0 + wm0 + i * 16 + g + 8 * h;
            #pragma unroll
            for (int p = 0; p < 2; p++)
                #pragma unroll
                for (int v = 0; v < NV; v++) {
                    const int col = n0 + wn0 + (2 * t + p) * NJ + 4 * v;
                    const float4 val = (float4)(acc[i][4 * v][2 * h + p], acc[i][4 * v + 1][2 * h + p],
                                                acc[i][4 * v + 2][2 * h + p], acc[i][4 * v + 3][2 * h + p]);
                    store_c4((__global float4*)C, row, col / 4, ldc, M, N, full, alpha, val, beta);
                }
        }
}

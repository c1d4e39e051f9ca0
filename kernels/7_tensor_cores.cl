// Kernel 7: tensor cores (kernel 5 + one technique).
//
// Technique: the multiply of a tile step moves from FFMAs to the tensor cores, by the
// warp-wide mma.sync.m16n8k8 on TF32 inputs (inline PTX: OpenCL C has no such builtin).
// TF32 keeps 10 of float's 23 mantissa bits, so each float x is split into a TF32 head
// h = round(x) and the remainder l = x - h, and every product takes three MMAs:
// a*b ~ al*bh + ah*bl + ah*bh (al*bl is below float's rounding). The tensor cores' adder
// truncates, so each 8-deep step's three MMAs start from zero and a float add folds their
// sum into the accumulator.
// What the MMA's fixed lane layout changes with it: each warp owns a WM x WN block of C
// as (WM/16) x (WN/8) MMA tiles of 16 x 8, and both local tiles are stored as they lie in
// global memory (A with k along the row, B with n), padded so that the fragment reads hit
// 32 different banks. Loads, the two buffers and the one barrier a tile are kernel 5's.
//
// Fragments of mma.m16n8k8 (PTX ISA): lane = 4*g + t (g = lane/4, t = lane%4) holds
//   A (16 x 8):  a0 = (g, t), a1 = (g+8, t), a2 = (g, t+4), a3 = (g+8, t+4)
//   B (8 x 8):   b0 = (t, g), b1 = (t+4, g)
//   C (16 x 8):  c0 = (g, 2t), c1 = (g, 2t+1), c2 = (g+8, 2t), c3 = (g+8, 2t+1)
//
// Parameters: TSM, TSN (C tile per work-group), TSK (depth, a multiple of 8), WM, WN
// (C block per warp, multiples of 16 and 8).
// Constraints: the tile's float4 loads split evenly over the work-group; at most 8 warps;
// local memory 2*(TSM*(TSK+4) + TSK*(TSN+8))*4 bytes; lda, ldb and ldc multiples of 4.
// Edges: any M, N, K >= 1, as kernel 5 (EXACT build for whole tiles).
// gemm() builds it with GUARD=1 (common.cl) and routes inputs it cannot take to kernel 5.
// Devices: MMA=1 (NVIDIA, compute capability 8.0 or later; the build sets it) runs the
// PTX; elsewhere (pocl, Oclgrind) each MMA is emulated through local memory with the same
// lane layout, TF32 truncation and truncating adder, so the index math and the accuracy
// are checked on the CPU.
//
// H200 8192^3: 55.2 TFLOPS at these defaults (kernel 5: 51.0), error 5.8e-7, results/h200/README.md.

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
#ifndef MMA
#define MMA 0
#endif

#include "common.cl"

#define WARPS_N (TSN / WN)
#define NT (32 * WARPS_N * (TSM / WM))  // work-items per group
#define MI (WM / 16)                    // MMA tiles per warp along m
#define NJ (WN / 8)                     // MMA tiles per warp along n
// Row strides of the local tiles, in float4s. A fragment read has lane (g, t) at A row g,
// column t (8 rows x 4 columns), or at B row t, column g (4 rows x 8 columns). Rows of
// TSK + 4 floats start A's 8 rows at 8 different multiples of 4 banks (TSK = 8, 16, 32),
// which t fills; rows of TSN + 8 start B's 4 rows 8 banks apart (TSN a multiple of 32),
// which g fills: 32 different banks either way, no conflict.
#define AS4 ((TSK + 4) / 4)
#define BS4 ((TSN + 8) / 4)
#define LPTA (TSM * TSK / 4 / NT)       // A float4s each work-item loads per tile
#define LPTB (TSK * TSN / 4 / NT)       // B float4s each work-item loads per tile

#if MMA
// d = a * b + d on a 16 x 8 x 8 block; a and b hold TF32 bit patterns.
#define MMA_TF32(d, a, b)                                                                \
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "                   \
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"             \
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])                        \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),     \
                   "f"(d[0]), "f"(d[1]), "f"(d[2]), "f"(d[3]))
inline uint tf32_round(float x) {       // to nearest, ties away from zero
    uint r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}
#define MMA_SCRATCH
#else
// The emulation: every lane posts its fragments to its warp's scratch, then computes its
// four outputs from the posted values, which the hardware truncates to TF32. The sum is
// added to d rounded toward zero, as the tensor cores' adder was seen to do (see above).
// All work-items of the group reach every call (the barriers), as with the real MMA.
inline uint tf32_round(float x) { return (as_uint(x) + 0x1000u) & 0xffffe000u; }
inline float tf32_value(__local const uint* s) { return as_float(*s & 0xffffe000u); }
inline float add_toward_zero(const float a, const float b) {
    const float s = a + b, bb = s - a, err = (a - (s - bb)) + (b - bb);  // s + err = a + b
    return (err != 0.0f && (err < 0.0f) != (s < 0.0f)) ? nextafter(s, 0.0f) : s;
}
inline void mma_emulated(__local uint* s, const int lane, float* d, const uint* a,
                         const uint* b) {
    for (int r = 0; r < 4; r++) s[lane * 6 + r] = a[r];
    for (int r = 0; r < 2; r++) s[lane * 6 + 4 + r] = b[r];
    barrier(CLK_LOCAL_MEM_FENCE);
    const int g = lane / 4, t = lane % 4;
    for (int r = 0; r < 4; r++) {
        const int row = g + 8 * (r / 2), col = 2 * t + r % 2;
        float sum = 0.0f;
        for (int k = 0; k < 8; k++)     // A(row, k) and B(k, col), found by the layout above
            sum += tf32_value(&s[((row % 8) * 4 + k % 4) * 6 + row / 8 + 2 * (k / 4)])
                 * tf32_value(&s[(col * 4 + k % 4) * 6 + 4 + k / 4]);
        d[r] = add_toward_zero(d[r], sum);
    }
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

    __local float4 Asub[2][TSM][AS4];
    __local float4 Bsub[2][TSK][BS4];
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
    // Vectors past M, N or K read as zero.
    #define LOAD_TILE(k0)                                                                \
        _Pragma("unroll") for (int l = 0; l < LPTA; l++) {                              \
            const int e = tid + l * NT, r = e / (TSK / 4), cv = (k0) / 4 + e % (TSK / 4); \
            ra[l] = INSIDE(m0 + r < M && cv < Kv) ? A[(m0 + r) * ldav + cv] : (float4)(0.0f); \
        }                                                                               \
        _Pragma("unroll") for (int l = 0; l < LPTB; l++) {                              \
            const int e = tid + l * NT, r = e / (TSN / 4), cv = n0 / 4 + e % (TSN / 4);  \
            rb[l] = INSIDE((k0) + r < K && cv < Nv) ? B[((k0) + r) * ldbv + cv] : (float4)(0.0f); \
        }
    #define STORE_TILE(buf)                                                              \
        _Pragma("unroll") for (int l = 0; l < LPTA; l++) {                              \
            const int e = tid + l * NT;                                                  \
            Asub[buf][e / (TSK / 4)][e % (TSK / 4)] = ra[l];                             \
        }                                                                               \
        _Pragma("unroll") for (int l = 0; l < LPTB; l++) {                              \
            const int e = tid + l * NT;                                                  \
            Bsub[buf][e / (TSN / 4)][e % (TSN / 4)] = rb[l];                             \
        }

    LOAD_TILE(0);
    STORE_TILE(0);
    barrier(CLK_LOCAL_MEM_FENCE);

    const int tiles = (K + TSK - 1) / TSK;
    for (int tile = 0; tile < tiles; tile++) {
        const int buf = tile & 1;
        const bool more = tile + 1 < tiles;
        if (more) { LOAD_TILE((tile + 1) * TSK); }

        __local const float* As = (__local const float*)Asub[buf];   // [m][4 * AS4]
        __local const float* Bs = (__local const float*)Bsub[buf];   // [k][4 * BS4]
        #pragma unroll
        for (int kk = 0; kk < TSK; kk += 8) {
            // B's fragments for the warp's NJ tiles, split into TF32 head (h) and
            // remainder (l); A's are taken one MMA row i at a time, to spare registers.
            uint bh[NJ][2], bl[NJ][2];
            #pragma unroll
            for (int j = 0; j < NJ; j++)
                #pragma unroll
                for (int r = 0; r < 2; r++) {
                    const float x = Bs[(kk + t + 4 * r) * (4 * BS4) + wn0 + j * 8 + g];
                    bh[j][r] = tf32_round(x);
                    bl[j][r] = as_uint(x - as_float(bh[j][r]));
                }
            #pragma unroll
            for (int i = 0; i < MI; i++) {
                uint ah[4], al[4];
                #pragma unroll
                for (int r = 0; r < 4; r++) {
                    const float x = As[(wm0 + i * 16 + g + 8 * (r % 2)) * (4 * AS4)
                                       + kk + t + 4 * (r / 2)];
                    ah[r] = tf32_round(x);
                    al[r] = as_uint(x - as_float(ah[r]));
                }
                // Small terms first, into fresh sums that a float add then folds into the
                // accumulators: chained through the MMAs' own accumulator instead, the
                // tensor cores' truncating adder lost ~K * 2^-24 (5.7e-5 at 8192^3 on the
                // H200, docs/levers.md). Each pass runs over the NJ tiles, so consecutive
                // MMAs are independent.
                float d[NJ][4];
                #pragma unroll
                for (int j = 0; j < NJ; j++)
                    #pragma unroll
                    for (int r = 0; r < 4; r++) d[j][r] = 0.0f;
                #pragma unroll
                for (int j = 0; j < NJ; j++) MMA_TF32(d[j], al, bh[j]);
                #pragma unroll
                for (int j = 0; j < NJ; j++) MMA_TF32(d[j], ah, bl[j]);
                #pragma unroll
                for (int j = 0; j < NJ; j++) MMA_TF32(d[j], ah, bh[j]);
                #pragma unroll
                for (int j = 0; j < NJ; j++)
                    #pragma unroll
                    for (int r = 0; r < 4; r++) acc[i][j][r] += d[j][r];
            }
        }

        if (more) { STORE_TILE(buf ^ 1); }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    // C: lane (g, t) holds rows g and g + 8 of each MMA tile, columns 2t and 2t + 1.
    const bool full = m0 + TSM <= M && n0 + TSN <= N;
    #pragma unroll
    for (int i = 0; i < MI; i++)
        #pragma unroll
        for (int h = 0; h < 2; h++) {
            const int row = m0 + wm0 + i * 16 + g + 8 * h;
            #pragma unroll
            for (int j = 0; j < NJ; j++) {
                const int col = n0 + wn0 + j * 8 + 2 * t;
                const float2 v = (float2)(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
                store_c2((__global float2*)C, row, col / 2, ldc, M, N, full, alpha, v, beta);
            }
        }
}

// Kernel 8: warpgroup MMAs (kernel 7 + one technique).
//
// Technique: each tile step is Hopper's wgmma.mma_async, issued by a warpgroup of 4 warps
// for a 64 x TSN block of C, with both operands read by the tensor cores straight from
// local memory through matrix descriptors; kernel 7's mma.sync needs every operand in a
// warp's registers. Each float x is split into a TF32 head h and a TF32-rounded remainder
// l once, as its tile lands in local memory (four tiles: A's h and l, B's h and l), and
// each product takes three MMAs, al*bh + ah*bl + ah*bh, into fresh sums that a float add
// folds into the accumulators once a tile (the tensor cores' adder truncates: kernel 7).
// The MMAs run asynchronously: while they multiply tile t, the work-items split tile t+1
// (loaded during tile t-1) into the other buffer and load tile t+2 into registers.
// wgmma exists only for sm_90a; NVIDIA's OpenCL compiles for sm_90, so each sm_90a
// instruction is written here as an inline-asm comment "// SM90A: ..." (operands filled in
// by the compiler) that clgemm's build turns into the instruction in the program's PTX,
// with the target set to sm_90a, before building that PTX (clgemm/build.py, sm90a_ptx).
//
// Local tiles: K-major (32 floats of k a row, 128 bytes), in the 128-byte swizzle the
// descriptors name: 16-byte chunk q of row r at chunk q ^ (r % 8) of the row, 8-row atoms
// 1024 bytes apart (the descriptor's stride); a k-step of 8 (32 bytes) moves the
// descriptor's start by 32 bytes.
// Fragments of C (wgmma m64nNk8, f32): lane (g = lane/4, t = lane%4) of warp w of the
// warpgroup holds, for each 8 columns j, rows 16w + g and 16w + g + 8 at columns 8j + 2t
// and 8j + 2t + 1: d[4j], d[4j+1] and d[4j+2], d[4j+3].
//
// Parameters: TSM (rows of C per work-group: 64 or 128, one warpgroup per 64), TSN
// (columns: 64 or 128, the MMA's n). The depth of a tile is 32.
// Constraints: lda, ldb and ldc multiples of 4; local memory 2 buffers x 4 tiles x 128 x
// (TSM + TSN) bytes / 2 (128 KB at 128 x 128: past the 48 KB the device reports).
// Edges: any M, N, K >= 1, as kernel 7 (EXACT build for whole tiles, CLAMP for k in
// whole tiles).
// gemm() builds it with GUARD=1 (common.cl) and routes inputs it cannot take to kernel 5.
// Devices: WGMMA=1 (NVIDIA compute capability 9.0; the build sets it) issues wgmma;
// elsewhere (pocl, Oclgrind, other GPUs) each MMA is emulated from the same local tiles,
// addressed as the descriptors address them, with TF32 operands and a truncating adder.
//
// H200 8192^3: 68 TFLOPS (spans) against 61 for kernel 7's tuned point, error 3.1e-7
// (kernel 7 4.2e-7, kernel 5 1.6e-6); results/h200/README.md.

#ifndef TSM
#define TSM 128
#endif
#ifndef TSN
#define TSN 128
#endif
#ifndef WGMMA
#define WGMMA 0
#endif
#define TF32_HW WGMMA
#define TSK 32

#include "common.cl"

#if (TSM != 64 && TSM != 128) || (TSN != 64 && TSN != 128)
#error "TSM and TSN must be 64 or 128"
#endif
#define NT (2 * TSM)                    // work-items: a warpgroup (128) per 64 rows
#define ND (TSN / 2)                    // fresh sums (and accumulators) per work-item
#define LPTB (4 * TSN / TSM)            // B float4s each work-item loads (A: 4)
// Byte offset of element (r, k) in a K-major tile (see above), and of tile w (0: A's h,
// 1: A's l, 2: B's h, 3: B's l) of buffer b.
#define AT(r, k) ((((r) >> 3) * 1024) + (((r) & 7) * 128) + (((((k) >> 2) ^ (r)) & 7) * 16) \
                  + (((k) & 3) * 4))
#define TILE(b, w) ((b) * (256 * TSM + 256 * TSN) + ((w) < 2 ? (w) * 128 * TSM \
                    : 256 * TSM + ((w) - 2) * 128 * TSN))
#define BUF_BYTES (256 * TSM + 256 * TSN)

// Which float4 of a tile work-item tid moves as its l-th (e = tid + NT*l): for A, row r
// (e bits 0-2: r % 8; the next log2(TSM/8) bits: r / 8) and 16-byte chunk q (bits 3-4: q % 4,
// the top bit: q / 4), so that 8 lanes store the 8 rows of one atom at 8 distinct chunks;
// for B, k (bits 0-1: k % 4; bits 3-4 and the top bit: k / 4) and float4 nq along n (bit 2:
// nq % 2; the next log2(TSN/8) bits: nq / 2), so that a warp's 4-byte stores of one of
// the float4's components, transposed into the K-major tile, fall on 32 banks.
#define A_RQ(e, r, q) const int r = (((e) >> 5) % (TSM / 8)) * 8 + ((e) & 7), \
                                q = (((e) >> 5) / (TSM / 8)) * 4 + (((e) >> 3) & 3);
#define B_KN(e, kk, nq) const int kk = ((((e) >> 5) / (TSN / 8)) * 4 + (((e) >> 3) & 3)) * 4 \
                                       + ((e) & 3), \
                                  nq = (((e) >> 5) % (TSN / 8)) * 2 + (((e) >> 2) & 1);

#if WGMMA
// A descriptor of a K-major tile at local address addr: start >> 4, leading byte offset
// 16 (unused by the swizzle), stride 1024 bytes, 128-byte swizzle (bits 62-63 = 1).
inline ulong wg_desc(const uint addr) {
    return (ulong)((addr & 0x3FFFF) >> 4) | ((ulong)1 << 16) | ((ulong)(1024 >> 4) << 32)
         | ((ulong)1 << 62);
}
// d = the tile's 12 MMAs: small terms (al*bh, ah*bl) of its 4 k-steps, then the heads;
// the first starts from zero (predicate p0 false). WG_AH.. name the operands after the
// fresh sums: the descriptors of A's h and l (this warpgroup's rows) and B's h and l;
// "add.s64 x, desc, 2" moves a descriptor 32 bytes along k.
#if TSN == 128
#define WG_D "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define WG_D_OPS "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define WG_SHAPE "m64n128k8"
#define WG_AH "%64"
#define WG_AL "%65"
#define WG_BH "%66"
#define WG_BL "%67"
#else
#define WG_D "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define WG_D_OPS "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define WG_SHAPE "m64n64k8"
#define WG_AH "%32"
#define WG_AL "%33"
#define WG_BH "%34"
#define WG_BL "%35"
#endif
#define WG_MMA(a, b, s, p) "add.s64 x, " a ", " #s "; add.s64 y, " b ", " #s "; " \
    "wgmma.mma_async.sync.aligned." WG_SHAPE ".f32.tf32.tf32 " WG_D ", x, y, " p ", 1, 1; "
#define WG_TILE \
    "// SM90A: { .reg .pred p0, p1; .reg .b64 x, y; setp.ne.b32 p0, 0, 0; " \
    "setp.eq.b32 p1, 0, 0; wgmma.fence.sync.aligned; " \
    WG_MMA(WG_AL, WG_BH, 0, "p0") WG_MMA(WG_AH, WG_BL, 0, "p1") \
    WG_MMA(WG_AL, WG_BH, 2, "p1") WG_MMA(WG_AH, WG_BL, 2, "p1") \
    WG_MMA(WG_AL, WG_BH, 4, "p1") WG_MMA(WG_AH, WG_BL, 4, "p1") \
    WG_MMA(WG_AL, WG_BH, 6, "p1") WG_MMA(WG_AH, WG_BL, 6, "p1") \
    WG_MMA(WG_AH, WG_BH, 0, "p1") WG_MMA(WG_AH, WG_BH, 2, "p1") \
    WG_MMA(WG_AH, WG_BH, 4, "p1") WG_MMA(WG_AH, WG_BH, 6, "p1") \
    "wgmma.commit_group.sync.aligned; }"
#define MMA_TILE(buf) \
    asm volatile(WG_TILE : WG_D_OPS \
                 : "l"(wg_desc(sbase + TILE(buf, 0) + 8192 * wg)), \
                   "l"(wg_desc(sbase + TILE(buf, 1) + 8192 * wg)), \
                   "l"(wg_desc(sbase + TILE(buf, 2))), "l"(wg_desc(sbase + TILE(buf, 3))) \
                 : "memory")
// the fresh sums are the MMAs' until this wait returns
#define MMA_WAIT asm volatile("// SM90A: wgmma.wait_group.sync.aligned 0;" : WG_D_OPS :: "memory")
#define FENCE_PROXY asm volatile("fence.proxy.async.shared::cta;" ::: "memory")
#else
// The emulation: each MMA of the tile, in the hardware's order, is an 8-deep float sum of
// TF32 products read from the local tiles at the descriptors' addresses, added to the
// fresh sum toward zero. Kept out of line: pocl compiles it as one loop, not unrolled.
__attribute__((noinline))
float emulated_sum(__local const char* sb, const int buf, const int row, const int col) {
    __local const uint* t[4];
    float d = 0.0f;
    for (int i = 0; i < 12; i++) {    // (al, bh), (ah, bl) for k-steps 0..3, then (ah, bh)
        const int s = i < 8 ? i / 2 : i - 8;
        const int wa = i < 8 ? 1 - i % 2 : 0, wb = i < 8 ? 2 + i % 2 : 2;
        float sum = 0.0f;
        for (int k = 8 * s; k < 8 * s + 8; k++)
            sum += as_float(*(__local const uint*)(sb + TILE(buf, wa) + AT(row, k)))
                 * as_float(*(__local const uint*)(sb + TILE(buf, wb) + AT(col, k)));
        d = add_toward_zero(d, sum);
    }
    return d;
}
#define MMA_TILE(buf)                                                                   \
    _Pragma("unroll 1") for (int j = 0; j < TSN / 8; j++)                               \
        _Pragma("unroll 1") for (int h = 0; h < 4; h++)                                 \
            d[4 * j + h] = emulated_sum(sb, buf, 64 * wg + 16 * w + g + 8 * (h / 2),    \
                                        8 * j + 2 * t + h % 2);
#define MMA_WAIT
#define FENCE_PROXY
#endif

__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void gemm(const int M, const int N, const int K, const float alpha,
          const __global float4* restrict A, const int lda,
          const __global float4* restrict B, const int ldb,
          const float beta, __global float* C, const int ldc GUARD_ARGS) {
    GUARD_RETURN
    __local uint4 smem[2 * BUF_BYTES / 16] __attribute__((aligned(1024)));
    __local char* sb = (__local char*)smem;
    const uint sbase = (uint)(size_t)smem;
    const int tid = get_local_id(0);
    const int wg = tid / 128, w = (tid / 32) % 4, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int m0 = get_group_id(1) * TSM, n0 = get_group_id(0) * TSN;
    const int ldav = lda / 4, ldbv = ldb / 4;
    const int Kv = (K + 3) / 4, Nv = (N + 3) / 4;

    float acc[ND], d[ND];
    #pragma unroll
    for (int i = 0; i < ND; i++) { acc[i] = 0.0f; d[i] = 0.0f; }

    float4 ra[4], rb[LPTB];
    // Global -> registers. Vectors past M, N or K read as zero; in a CLAMP build, rows of
    // A past M and vectors of B past N re-read the last one instead (common.cl).
    #define LOAD(k0)                                                                    \
        _Pragma("unroll") for (int l = 0; l < 4; l++) {                                \
            const int e = tid + NT * l; A_RQ(e, r, q)                                   \
            const int cv = (k0) / 4 + q;                                                \
            ra[l] = INSIDE(m0 + r < M && cv < Kv) ? A[EDGE(m0 + r, M) * ldav + cv]      \
                                                  : (float4)(0.0f);                     \
        }                                                                               \
        _Pragma("unroll") for (int l = 0; l < LPTB; l++) {                             \
            const int e = tid + NT * l; B_KN(e, kk, nq)                                 \
            const int cv = n0 / 4 + nq;                                                 \
            rb[l] = INSIDE((k0) + kk < K && cv < Nv) ? B[((k0) + kk) * ldbv + EDGE(cv, Nv)] \
                                                     : (float4)(0.0f);                  \
        }
    // Registers -> the four K-major tiles of buffer b, each float split as it goes: A's
    // float4 is one 16-byte chunk of a row; B's four floats go to four rows (n).
    #define SPLIT4(x, h, lo) {                                                          \
        float x_[4];                                                                    \
        UNPACK4(x, x_, 0);                                                              \
        _Pragma("unroll") for (int c = 0; c < 4; c++) {                                \
            h[c] = tf32_round(x_[c]); lo[c] = tf32_round(x_[c] - as_float(h[c])); } }
    #define STORE(b)                                                                    \
        _Pragma("unroll") for (int l = 0; l < 4; l++) {                                \
            const int e = tid + NT * l; A_RQ(e, r, q)                                   \
            uint h[4], lo[4];                                                           \
            SPLIT4(ra[l], h, lo);                                                       \
            *(__local uint4*)(sb + TILE(b, 0) + AT(r, 4 * q)) = (uint4)(h[0], h[1], h[2], h[3]); \
            *(__local uint4*)(sb + TILE(b, 1) + AT(r, 4 * q)) = (uint4)(lo[0], lo[1], lo[2], lo[3]); \
        }                                                                               \
        _Pragma("unroll") for (int l = 0; l < LPTB; l++) {                             \
            const int e = tid + NT * l; B_KN(e, kk, nq)                                 \
            uint h[4], lo[4];                                                           \
            SPLIT4(rb[l], h, lo);                                                       \
            _Pragma("unroll") for (int c = 0; c < 4; c++) {                            \
                *(__local uint*)(sb + TILE(b, 2) + AT(4 * nq + c, kk)) = h[c];          \
                *(__local uint*)(sb + TILE(b, 3) + AT(4 * nq + c, kk)) = lo[c];         \
            }                                                                           \
        }                                                                               \
        FENCE_PROXY;   /* these generic stores, before the MMAs' async reads */

    const int tiles = (K + TSK - 1) / TSK;
    LOAD(0);
    STORE(0);
    if (tiles > 1) { LOAD(TSK); }
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int tile = 0; tile < tiles; tile++) {
        const int buf = tile & 1;
        MMA_TILE(buf);
        if (tile + 1 < tiles) { STORE(buf ^ 1); }
        if (tile + 2 < tiles) { LOAD((tile + 2) * TSK); }
        MMA_WAIT;
        #pragma unroll
        for (int i = 0; i < ND; i++) acc[i] += d[i];
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    const bool full = m0 + TSM <= M && n0 + TSN <= N;
    const int row = m0 + 64 * wg + 16 * w + g;
    #pragma unroll
    for (int j = 0; j < TSN / 8; j++) {
        const int colv = (n0 + 8 * j + 2 * t) / 2;
        store_c2((__global float2*)C, row, colv, ldc, M, N, full, alpha,
                 (float2)(acc[4 * j], acc[4 * j + 1]), beta);
        store_c2((__global float2*)C, row + 8, colv, ldc, M, N, full, alpha,
                 (float2)(acc[4 * j + 2], acc[4 * j + 3]), beta);
    }
}

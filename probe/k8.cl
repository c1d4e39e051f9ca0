// Probe (kernel 8 candidate): warpgroup MMAs. Each tile step is wgmma.mma_async
// m64n128k8 on TF32 from local-memory tiles addressed by descriptors; sm_90a-only PTX,
// reached by patching the program's PTX (probe/k8_probe.py). Every float is split once,
// as its tile lands, into a TF32 head h and a TF32-rounded remainder l, stored as four
// K-major tiles (A h, A l, B h, B l) in the 128-byte swizzled layout; three MMAs a
// product (al*bh + ah*bl + ah*bh) into fresh sums that a float add folds into the
// accumulators once a tile (32 of k).
// EXACT only (whole tiles), A row-major M x K, B row-major K x N, lda/ldb multiples of 4.
#ifndef HALFST
#define HALFST 0
#endif
#define TSM 128
#define TSN 128
#define TSK 32
#define NT 256
// K-major tile of 128 rows (m or n) of 32 floats (128 bytes): element (r, k) at byte
// AT(r, k): 16-byte chunk k/4 of row r sits at chunk (k/4) ^ (r%8) (the 128B swizzle),
// 8-row atoms 1024 bytes apart (SBO).
#define AT(r, k) ((((r) >> 3) * 1024) + (((r) & 7) * 128) + (((((k) >> 2) ^ (r)) & 7) * 16) + (((k) & 3) * 4))
#define TB (128 * 128)
#define TILE(buf, w) (((buf) * 4 + (w)) * TB)

inline uint tf32_round(float x) {
    uint r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}
// matrix descriptor: start address >> 4, LBO 16 bytes (unused with the swizzle), SBO
// 1024 bytes, 128-byte swizzle (layout type 1 in bits 62-63)
inline ulong desc(uint addr) {
    return (ulong)((addr & 0x3FFFF) >> 4) | ((ulong)1 << 16) | ((ulong)(1024 >> 4) << 32)
         | ((ulong)1 << 62);
}
#define BATCH_ASM "// SM90A: { .reg .pred p0, p1; .reg .b64 x, y; setp.ne.b32 p0, 0, 0; setp.eq.b32 p1, 0, 0; wgmma.fence.sync.aligned; add.s64 x, %65, 0; add.s64 y, %66, 0; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, x, y, p0, 1, 1; add.s64 x, %64, 0; add.s64 y, %67, 0; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, x, y, p1, 1, 1; add.s64 x, %65, 2; add.s64 y, %66, 2; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, x, y, p1, 1, 1; add.s64 x, %64, 2; add.s64 y, %67, 2; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, x, y, p1, 1, 1; add.s64 x, %65, 4; add.s64 y, %66, 4; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, x, y, p1, 1, 1; add.s64 x, %64, 4; add.s64 y, %67, 4; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, x, y, p1, 1, 1; add.s64 x, %65, 6; add.s64 y, %66, 6; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, x, y, p1, 1, 1; add.s64 x, %64, 6; add.s64 y, %67, 6; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, x, y, p1, 1, 1; add.s64 x, %64, 0; add.s64 y, %66, 0; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, x, y, p1, 1, 1; add.s64 x, %64, 2; add.s64 y, %66, 2; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, x, y, p1, 1, 1; add.s64 x, %64, 4; add.s64 y, %66, 4; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, x, y, p1, 1, 1; add.s64 x, %64, 6; add.s64 y, %66, 6; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, x, y, p1, 1, 1; wgmma.commit_group.sync.aligned; }"
#define D_OPS "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void gemm(const int M, const int N, const int K, const float alpha,
          const __global float4* restrict A, const int lda,
          const __global float4* restrict B, const int ldb,
          const float beta, __global float* C, const int ldc) {
    __local uint4 smem[2 * 4 * TB / 16] __attribute__((aligned(1024)));
#ifdef ASYNC
    // cp.async staging: slot s holds the 8 float4s each work-item copies of one tile, at
    // raw[s][l][tid]; each work-item later splits only its own copies (no barrier needed)
    __local uint4 raw[ASYNC][8][NT];
#endif
    const int tid = get_local_id(0);
    const int wg = tid / 128, w = (tid / 32) % 4, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int m0 = get_group_id(1) * TSM, n0 = get_group_id(0) * TSN;
    const int ldav = lda / 4, ldbv = ldb / 4;
    const uint sbase = (uint)(size_t)smem;
    __local char* sb = (__local char*)smem;

    float acc[64], d[64];
    #pragma unroll
    for (int i = 0; i < 64; i++) { acc[i] = 0.0f; d[i] = 0.0f; }

    float4 ra[4], rb[4];
    // A: float4 e = tid + 256l is row r (e bits 0-2: r % 8, bits 5-8: r / 8) and chunk q
    // (bits 3-4: q % 4, bit 9: q / 4): 8 lanes store 8 rows' chunks, 8 distinct after the
    // swizzle. B: e is k (bits 0-1: k % 4, bits 3-4 and 9: k / 4) and n-quad (bit 2: its
    // parity, bits 5-8: the rest), so that a warp's 4-byte stores of one component land
    // on 32 banks.
    #define A_RQ(e, r, q) const int r = (((e) >> 5) & 15) * 8 + ((e) & 7), q = (((e) >> 9) << 2) + (((e) >> 3) & 3);
    #define B_KN(e, kk, nq) const int kk = (((((e) >> 9) << 2) + (((e) >> 3) & 3)) << 2) + ((e) & 3), \
                                  nq = (((e) >> 5) & 15) * 2 + (((e) >> 2) & 1);
    #define LOAD(k0) \
        _Pragma("unroll") for (int l = 0; l < 4; l++) { \
            const int e = tid + 256 * l; A_RQ(e, r, q) \
            ra[l] = A[(m0 + r) * ldav + (k0) / 4 + q]; \
        } \
        _Pragma("unroll") for (int l = 0; l < 4; l++) { \
            const int e = tid + 256 * l; B_KN(e, kk, nq) \
            rb[l] = B[((k0) + kk) * ldbv + n0 / 4 + nq]; \
        }
    #define SPLIT4(x, h, lo) { \
        float x_[4] = {(x).s0, (x).s1, (x).s2, (x).s3}; \
        _Pragma("unroll") for (int c = 0; c < 4; c++) { \
            h[c] = tf32_round(x_[c]); lo[c] = tf32_round(x_[c] - as_float(h[c])); } }
    #define STORE(buf) \
        _Pragma("unroll") for (int l = 0; l < 4; l++) { \
            const int e = tid + 256 * l; A_RQ(e, r, q) \
            uint h[4], lo[4]; SPLIT4(ra[l], h, lo); \
            *(__local uint4*)(sb + TILE(buf, 0) + AT(r, 4 * q)) = (uint4)(h[0], h[1], h[2], h[3]); \
            if (!HALFST) *(__local uint4*)(sb + TILE(buf, 1) + AT(r, 4 * q)) = (uint4)(lo[0], lo[1], lo[2], lo[3]); \
        } \
        _Pragma("unroll") for (int l = 0; l < 4; l++) { \
            const int e = tid + 256 * l; B_KN(e, kk, nq) \
            uint h[4], lo[4]; SPLIT4(rb[l], h, lo); \
            _Pragma("unroll") for (int c = 0; c < 4; c++) { \
                *(__local uint*)(sb + TILE(buf, 2) + AT(4 * nq + c, kk)) = h[c]; \
                if (!HALFST) *(__local uint*)(sb + TILE(buf, 3) + AT(4 * nq + c, kk)) = lo[c]; \
            } \
        } \
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");

    // Tile t+1's loads land during tile t-1's wait and fold and tile t's MMAs, and are
    // split into local memory while tile t's MMAs run.
#ifdef ASYNC
    #define CP16(dst, src) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"((uint)(size_t)(dst)), "l"(src) : "memory")
    #define ISSUE(k0, slot) \
        _Pragma("unroll") for (int l = 0; l < 4; l++) { \
            const int e = tid + 256 * l; A_RQ(e, r, q) \
            CP16(&raw[slot][l][tid], A + (m0 + r) * ldav + (k0) / 4 + q); \
        } \
        _Pragma("unroll") for (int l = 0; l < 4; l++) { \
            const int e = tid + 256 * l; B_KN(e, kk, nq) \
            CP16(&raw[slot][4 + l][tid], B + ((k0) + kk) * ldbv + n0 / 4 + nq); \
        }
    #define COMMIT asm volatile("cp.async.commit_group;" ::: "memory")
    #define WAIT_RAW asm volatile("cp.async.wait_group %0;" :: "n"(ASYNC - 1) : "memory")
    #define FROM_RAW(slot) \
        _Pragma("unroll") for (int l = 0; l < 4; l++) { ra[l] = as_float4(raw[slot][l][tid]); rb[l] = as_float4(raw[slot][4 + l][tid]); }
    // tiles 0 .. ASYNC-1 in flight (tile j in slot j % ASYNC); tile 0 split into buffer 0
    #pragma unroll
    for (int s = 0; s < ASYNC; s++) { if (s * TSK < K) { ISSUE(s * TSK, s); } COMMIT; }
    WAIT_RAW;
    FROM_RAW(0);
    STORE(0);
#else
    LOAD(0);
    STORE(0);
    if (TSK < K) { LOAD(TSK); }
#endif
    barrier(CLK_LOCAL_MEM_FENCE);

    const int tiles = K / TSK;
    for (int tile = 0; tile < tiles; tile++) {
        const int buf = tile & 1;
        const bool more = tile + 1 < tiles;
        const uint a_h = sbase + TILE(buf, 0) + 64 * wg * 128, a_l = sbase + TILE(buf, 1) + 64 * wg * 128;
        const uint b_h = sbase + TILE(buf, 2), b_l = sbase + TILE(buf, 3);
        asm volatile(BATCH_ASM : D_OPS : "l"(desc(a_h)), "l"(desc(a_l)), "l"(desc(b_h)), "l"(desc(b_l)) : "memory");
#ifdef ASYNC
        // tile + ASYNC into the slot tile used; then tile + 1's copies are waited for
        { const int nt = tile + ASYNC; if (nt < tiles) { ISSUE(nt * TSK, nt % ASYNC); } COMMIT; }
        WAIT_RAW;
        if (more) { FROM_RAW((tile + 1) % ASYNC); STORE(buf ^ 1); }
#else
#ifndef NOSTORE
        if (more) { STORE(buf ^ 1); }
#endif
#ifndef NOLOAD
#ifdef SAMEK
        if (tile + 2 < tiles) { LOAD(0); }
#else
        if (tile + 2 < tiles) { LOAD((tile + 2) * TSK); }
#endif
#endif
#endif  // ASYNC
#ifdef PF
        if (tile + PF < tiles) {   // one 128-byte line of tile t+PF into L2 per work-item
            const int kp = (tile + PF) * TSK;
            const __global float4* p = tid < 128 ? A + (m0 + tid) * ldav + kp / 4
                                                 : B + (kp + (tid - 128) / 4) * ldbv + n0 / 4 + ((tid - 128) % 4) * 8;
            asm volatile("prefetch.global.L2 [%0];" :: "l"(p));
        }
#endif
        asm volatile("// SM90A: wgmma.wait_group.sync.aligned 0;" : D_OPS :: "memory");
#ifndef NOFOLD
        #pragma unroll
        for (int i = 0; i < 64; i++) acc[i] += d[i];
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    // lane (g, t) of warp w of warpgroup wg holds, for each 8 columns j, rows g and g + 8
    // of the warp's 16 at columns 2t and 2t + 1
#ifdef NOFOLD
    #pragma unroll
    for (int i = 0; i < 64; i++) acc[i] = d[i];   // timing only: the last tile's sums
#endif
    const int row = m0 + 64 * wg + 16 * w + g;
    #pragma unroll
    for (int j = 0; j < 16; j++) {
        const int col = n0 + 8 * j + 2 * t;
        *(__global float2*)(C + (size_t)row * ldc + col) = (float2)(alpha * acc[4 * j], alpha * acc[4 * j + 1]);
        *(__global float2*)(C + (size_t)(row + 8) * ldc + col) = (float2)(alpha * acc[4 * j + 2], alpha * acc[4 * j + 3]);
    }
}

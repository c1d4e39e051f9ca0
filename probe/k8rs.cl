// Probe: kernel 8 with A's fragments from registers (wgmma RS): A is loaded straight
// from global memory into each lane's fragment slots (k-slots permuted as kernel 7's so
// that a lane's values are float4s of a row), split there; only B is in local memory (its
// h and l tiles, k positions permuted to match). EXACT, 128 x 128 tiles, WGMMA only.
#define TSM 128
#define TSN 128
#define TSK 32
#define NT 256
#define TF32_HW 1
#include "common.cl"
#define AT(r, k) ((((r) >> 3) * 1024) + (((r) & 7) * 128) + (((((k) >> 2) ^ (r)) & 7) * 16) + (((k) & 3) * 4))
#define TB (128 * 128)
#define TILE(b, w) (((b) * 2 + (w)) * TB)
// position of k in a row of the B tiles: k = 16 bb + 4 tt + 2 p + e is k-slot tt + 4 e of
// k-step 2 bb + p
#define POS(k) (((k) & ~15) + ((((k) >> 1) & 1) << 3) + (((k) & 1) << 2) + (((k) >> 2) & 3))
inline ulong wg_desc(const uint addr) {
    return (ulong)((addr & 0x3FFFF) >> 4) | ((ulong)1 << 16) | ((ulong)(1024 >> 4) << 32) | ((ulong)1 << 62);
}
#define D_OPS "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define A_OPS "r"(ah[0][0]), "r"(ah[0][1]), "r"(ah[0][2]), "r"(ah[0][3]), "r"(ah[1][0]), "r"(ah[1][1]), "r"(ah[1][2]), "r"(ah[1][3]), "r"(ah[2][0]), "r"(ah[2][1]), "r"(ah[2][2]), "r"(ah[2][3]), "r"(ah[3][0]), "r"(ah[3][1]), "r"(ah[3][2]), "r"(ah[3][3]), "r"(al[0][0]), "r"(al[0][1]), "r"(al[0][2]), "r"(al[0][3]), "r"(al[1][0]), "r"(al[1][1]), "r"(al[1][2]), "r"(al[1][3]), "r"(al[2][0]), "r"(al[2][1]), "r"(al[2][2]), "r"(al[2][3]), "r"(al[3][0]), "r"(al[3][1]), "r"(al[3][2]), "r"(al[3][3])
#define BATCH "// SM90A: { .reg .pred p0, p1; .reg .b64 y; setp.ne.b32 p0, 0, 0; setp.eq.b32 p1, 0, 0; wgmma.fence.sync.aligned; add.s64 y, %96, 0; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%80, %81, %82, %83}, y, p0, 1, 1; add.s64 y, %97, 0; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, y, p1, 1, 1; add.s64 y, %96, 2; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%84, %85, %86, %87}, y, p1, 1, 1; add.s64 y, %97, 2; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%68, %69, %70, %71}, y, p1, 1, 1; add.s64 y, %96, 4; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%88, %89, %90, %91}, y, p1, 1, 1; add.s64 y, %97, 4; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%72, %73, %74, %75}, y, p1, 1, 1; add.s64 y, %96, 6; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%92, %93, %94, %95}, y, p1, 1, 1; add.s64 y, %97, 6; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%76, %77, %78, %79}, y, p1, 1, 1; add.s64 y, %96, 0; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, y, p1, 1, 1; add.s64 y, %96, 2; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%68, %69, %70, %71}, y, p1, 1, 1; add.s64 y, %96, 4; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%72, %73, %74, %75}, y, p1, 1, 1; add.s64 y, %96, 6; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%76, %77, %78, %79}, y, p1, 1, 1; wgmma.commit_group.sync.aligned; }"

__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void gemm(const int M, const int N, const int K, const float alpha,
          const __global float4* restrict A, const int lda,
          const __global float4* restrict B, const int ldb,
          const float beta, __global float* C, const int ldc) {
    __local uint4 smem[2 * 2 * TB / 16] __attribute__((aligned(1024)));
    __local char* sb = (__local char*)smem;
    const uint sbase = (uint)(size_t)smem;
    const int tid = get_local_id(0);
    const int wg = tid / 128, w = (tid / 32) % 4, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int m0 = get_group_id(1) * TSM, n0 = get_group_id(0) * TSN;
    const int ldav = lda / 4, ldbv = ldb / 4;
    const int arow = m0 + 64 * wg + 16 * w + g;

    float acc[64], d[64];
    #pragma unroll
    for (int i = 0; i < 64; i++) { acc[i] = 0.0f; d[i] = 0.0f; }
    float4 xa[2][2], rb[4];
    uint ah[4][4], al[4][4];
    #define LOAD_A(k0) \
        _Pragma("unroll") for (int h = 0; h < 2; h++) \
            _Pragma("unroll") for (int bb = 0; bb < 2; bb++) \
                xa[h][bb] = A[(arow + 8 * h) * ldav + (k0) / 4 + 4 * bb + t];
    #define B_KN(e, kk, nq) const int kk = ((((e) >> 9) << 2) + (((e) >> 3) & 3)) * 4 + ((e) & 3), \
                                  nq = (((e) >> 5) & 15) * 2 + (((e) >> 2) & 1);
    #define LOAD_B(k0) \
        _Pragma("unroll") for (int l = 0; l < 4; l++) { \
            const int e = tid + NT * l; B_KN(e, kk, nq) \
            rb[l] = B[((k0) + kk) * ldbv + n0 / 4 + nq]; \
        }
    // fragment slots of k-step s = 2 bb + p: a0 (row g) and a1 (g + 8) take component 2p
    // of the lane's float4 of block bb, a2 and a3 component 2p + 1
    #define SPLIT_A \
        _Pragma("unroll") for (int s = 0; s < 4; s++) { \
            float x_[4]; \
            const float4 r0 = xa[0][s / 2], r1 = xa[1][s / 2]; \
            x_[0] = (s % 2) ? r0.z : r0.x; x_[1] = (s % 2) ? r1.z : r1.x; \
            x_[2] = (s % 2) ? r0.w : r0.y; x_[3] = (s % 2) ? r1.w : r1.y; \
            _Pragma("unroll") for (int r = 0; r < 4; r++) { \
                ah[s][r] = tf32_round(x_[r]); al[s][r] = tf32_round(x_[r] - as_float(ah[s][r])); } \
        }
    #define STORE_B(buf) \
        _Pragma("unroll") for (int l = 0; l < 4; l++) { \
            const int e = tid + NT * l; B_KN(e, kk, nq) \
            float x_[4]; UNPACK4(rb[l], x_, 0); \
            _Pragma("unroll") for (int c = 0; c < 4; c++) { \
                const uint h = tf32_round(x_[c]), lo = tf32_round(x_[c] - as_float(h)); \
                *(__local uint*)(sb + TILE(buf, 0) + AT(4 * nq + c, POS(kk))) = h; \
                *(__local uint*)(sb + TILE(buf, 1) + AT(4 * nq + c, POS(kk))) = lo; \
            } \
        } \
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");

    const int tiles = K / TSK;
    LOAD_A(0); LOAD_B(0);
    STORE_B(0);
    SPLIT_A;
    if (tiles > 1) { LOAD_A(TSK); LOAD_B(TSK); }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int tile = 0; tile < tiles; tile++) {
        const int buf = tile & 1;
        asm volatile(BATCH : D_OPS : A_OPS, "l"(wg_desc(sbase + TILE(buf, 0))), "l"(wg_desc(sbase + TILE(buf, 1))) : "memory");
        if (tile + 1 < tiles) { STORE_B(buf ^ 1); }
        if (tile + 2 < tiles) { LOAD_B((tile + 2) * TSK); }
        asm volatile("// SM90A: wgmma.wait_group.sync.aligned 0;" : D_OPS :: "memory");
        #pragma unroll
        for (int i = 0; i < 64; i++) acc[i] += d[i];
        if (tile + 1 < tiles) { SPLIT_A; }
        if (tile + 2 < tiles) { LOAD_A((tile + 2) * TSK); }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const int row = m0 + 64 * wg + 16 * w + g;
    #pragma unroll
    for (int j = 0; j < 16; j++) {
        const int col = n0 + 8 * j + 2 * t;
        *(__global float2*)(C + (size_t)row * ldc + col) = (float2)(alpha * acc[4 * j], alpha * acc[4 * j + 1]);
        *(__global float2*)(C + (size_t)(row + 8) * ldc + col) = (float2)(alpha * acc[4 * j + 2], alpha * acc[4 * j + 3]);
    }
}

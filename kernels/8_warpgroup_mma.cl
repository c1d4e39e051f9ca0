// Kernel 8: warpgroup MMAs (kernel 7 + one technique).
//
// Technique: each tile step is Hopper's wgmma.mma_async, issued by a warpgroup of 4 warps
// for a 64 x TSN block of C: B is read by the tensor cores straight from local memory
// through a matrix descriptor, A from the warps' registers, and the instruction runs
// asynchronously, so the work-items prepare the next tile while the MMAs run; kernel 7's
// mma.sync needs both operands in a warp's registers and waits for each product. Each
// float x is split into a TF32 head h and a TF32-rounded remainder l once: B's as its
// tile lands in local memory (two tiles, h and l), A's in the registers it is loaded into
// (straight from global memory, never in local memory). Each product takes three MMAs,
// al*bh + ah*bl + ah*bh, into fresh sums that a float add folds into the accumulators once
// a tile (the tensor cores' adder truncates: kernel 7). While the MMAs multiply tile t,
// the work-items split and store B's tile t+1 (loaded during tile t-1) into the other
// buffer and load B's tile t+2; after them, A's tile t+1 is split and its tile t+2 loaded.
// wgmma exists only for sm_90a; NVIDIA's OpenCL compiles for sm_90, so each sm_90a
// instruction is written here as an inline-asm comment "// SM90A: ..." (operands filled in
// by the compiler) that clgemm's build turns into the instruction in the program's PTX,
// with the target set to sm_90a, before building that PTX (clgemm/build.py, sm90a_ptx).
//
// Fragments (wgmma m64nNk8 on TF32): lane (g = lane/4, t = lane%4) of warp w of the
// warpgroup holds A's rows 16w + g and 16w + g + 8 at k-slots t and t + 4 (a0, a1 and
// a2, a3) and C's same rows at columns 8j + 2t and 8j + 2t + 1 for each 8 columns j
// (d[4j], d[4j+1] and d[4j+2], d[4j+3]). The MMA sums over its 8 k-slots in any order, so
// the kernel picks them: in each 16-deep block of a tile lane t loads a float4 of each of
// its rows, k = 4t..4t+3, and k = 4t + 2p and 4t + 2p + 1 are its slots t and t + 4 of
// the block's k-step p (0, 1), as in kernel 7; B's rows of k are stored at the same slots.
// Local tiles of B: K-major (32 floats of k a row of n, 128 bytes) in the 128-byte swizzle
// the descriptor names: 16-byte chunk q of row n at chunk q ^ (n % 8), 8-row atoms 1024
// bytes apart (the descriptor's stride); k-step s is at floats 8s..8s+7 of a row, 32 bytes
// further along each.
//
// Parameters: TSM (rows of C per work-group: 64 or 128, one warpgroup per 64), TSN
// (columns: 64 or 128, the MMA's n). The depth of a tile is 32.
// Constraints: lda and ldb multiples of 4 (an ldc that is not takes the C_UNALIGNED build,
// common.cl, whose stores are scalar); local memory 2 buffers x 2 tiles x 128 x
// TSN bytes (64 KB at TSN 128: past the 48 KB the device reports), and for the emulation
// 256 x TSM more (the registry counts both on every device, as kernel 7's scratch).
// Edges: any M, N, K >= 1, as kernel 7 (EXACT build for whole tiles, CLAMP for k in
// whole tiles).
// gemm() routes inputs it cannot take to kernel 5 (clgemm/guard.py); where C is read it
// builds it with GUARD=1 (common.cl).
// TAIL: the build of a launch whose last wave is spread out (clgemm.heuristics.tail_split):
// a 1-D launch of tail_from whole tiles (tile = group, row-major over C's tiles) and then
// `slices` pieces of k of each remaining tile, whose raw sums go to W and which
// tail_reduce (below) sums into C; with one group a multiprocessor, a last wave of 4
// tiles at 8192^3 otherwise kept 128 of 132 idle for a whole tile's time.
// Devices: WGMMA=1 (NVIDIA compute capability 9.0; the build sets it) issues wgmma;
// elsewhere (pocl, other GPUs) each MMA is emulated from B's local tiles, addressed as
// the descriptor addresses them, and A's fragments posted to local memory, with TF32
// operands and a truncating adder. Oclgrind's 32 KB of local memory cannot hold it.
//
// H200 8192^3: 75.9 TFLOPS (spans; 78.5 at 2048^3) against 60.7 for kernel 7's tuned
// point, and 68 with A's h and l tiles in local memory too (a probe); error 3.1e-7 (kernel
// 7 4.2e-7, kernel 5 1.6e-6); with TAIL's spread last wave 2.9% faster there (spans of
// whole calls, 4096^3 1.3%); results/h200/README.md, "Kernel 8".

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
#ifdef TAIL
#define TAIL_ARGS , const int tail_from, const int slices, __global float* restrict W
#else
#define TAIL_ARGS
#endif

#include "common.cl"

#if (TSM != 64 && TSM != 128) || (TSN != 64 && TSN != 128)
#error "TSM and TSN must be 64 or 128"
#endif
#define NT (2 * TSM)                    // work-items: a warpgroup (128) per 64 rows
#define ND (TSN / 2)                    // fresh sums (and accumulators) per work-item
#define LPTB (4 * TSN / TSM)            // B float4s each work-item loads a tile
// Byte offset of element (n, position p) in a K-major tile of B (see above), of tile w
// (0: h, 1: l) of buffer b, and position of k in a row: k = 16bb + 4tt + 2p + e is slot
// tt + 4e of k-step 2bb + p.
#define AT(n, p) ((((n) >> 3) * 1024) + (((n) & 7) * 128) + (((((p) >> 2) ^ (n)) & 7) * 16) \
                  + (((p) & 3) * 4))
#define TILE(b, w) (((b) * 2 + (w)) * 128 * TSN)
#define POS(k) (((k) & ~15) + ((((k) >> 1) & 1) << 3) + (((k) & 1) << 2) + (((k) >> 2) & 3))
// B's float4 e = tid + NT*l of a tile: k (bits 0-1: k % 4; bits 3-4 and the top bit:
// k / 4) and float4 nq along n (bit 2: nq % 2; the next log2(TSN/8) bits: nq / 2), so
// that a warp's 4-byte stores of one of the float4's components, transposed into the
// K-major tile, fall on 32 banks.
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
// d = the tile's 12 MMAs: the small terms (al*bh, ah*bl) of its 4 k-steps, then the
// heads; the first starts from zero (predicate p0 false). After the fresh sums come A's
// fragments (ah of the 4 k-steps, then al) and the descriptors of B's h and l tiles;
// "add.s64 y, desc, 2" moves a descriptor 32 bytes along k.
#if TSN == 128
#define WG_TILE "// SM90A: { .reg .pred p0, p1; .reg .b64 y; setp.ne.b32 p0, 0, 0; setp.eq.b32 p1, 0, 0; wgmma.fence.sync.aligned; add.s64 y, %96, 0; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%80, %81, %82, %83}, y, p0, 1, 1; add.s64 y, %97, 0; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, y, p1, 1, 1; add.s64 y, %96, 2; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%84, %85, %86, %87}, y, p1, 1, 1; add.s64 y, %97, 2; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%68, %69, %70, %71}, y, p1, 1, 1; add.s64 y, %96, 4; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%88, %89, %90, %91}, y, p1, 1, 1; add.s64 y, %97, 4; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%72, %73, %74, %75}, y, p1, 1, 1; add.s64 y, %96, 6; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%92, %93, %94, %95}, y, p1, 1, 1; add.s64 y, %97, 6; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%76, %77, %78, %79}, y, p1, 1, 1; add.s64 y, %96, 0; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, y, p1, 1, 1; add.s64 y, %96, 2; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%68, %69, %70, %71}, y, p1, 1, 1; add.s64 y, %96, 4; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%72, %73, %74, %75}, y, p1, 1, 1; add.s64 y, %96, 6; wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%76, %77, %78, %79}, y, p1, 1, 1; wgmma.commit_group.sync.aligned; }"
#define WG_D_OPS "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#else
#define WG_TILE "// SM90A: { .reg .pred p0, p1; .reg .b64 y; setp.ne.b32 p0, 0, 0; setp.eq.b32 p1, 0, 0; wgmma.fence.sync.aligned; add.s64 y, %64, 0; wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%48, %49, %50, %51}, y, p0, 1, 1; add.s64 y, %65, 0; wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, y, p1, 1, 1; add.s64 y, %64, 2; wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%52, %53, %54, %55}, y, p1, 1, 1; add.s64 y, %65, 2; wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%36, %37, %38, %39}, y, p1, 1, 1; add.s64 y, %64, 4; wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%56, %57, %58, %59}, y, p1, 1, 1; add.s64 y, %65, 4; wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%40, %41, %42, %43}, y, p1, 1, 1; add.s64 y, %64, 6; wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%60, %61, %62, %63}, y, p1, 1, 1; add.s64 y, %65, 6; wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%44, %45, %46, %47}, y, p1, 1, 1; add.s64 y, %64, 0; wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, y, p1, 1, 1; add.s64 y, %64, 2; wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%36, %37, %38, %39}, y, p1, 1, 1; add.s64 y, %64, 4; wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%40, %41, %42, %43}, y, p1, 1, 1; add.s64 y, %64, 6; wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%44, %45, %46, %47}, y, p1, 1, 1; wgmma.commit_group.sync.aligned; }"
#define WG_D_OPS "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#endif
#define MMA_TILE(buf)                                                                   \
    asm volatile(WG_TILE : WG_D_OPS : "r"(ah[0][0]), "r"(ah[0][1]), "r"(ah[0][2]), "r"(ah[0][3]), "r"(ah[1][0]), "r"(ah[1][1]), "r"(ah[1][2]), "r"(ah[1][3]), "r"(ah[2][0]), "r"(ah[2][1]), "r"(ah[2][2]), "r"(ah[2][3]), "r"(ah[3][0]), "r"(ah[3][1]), "r"(ah[3][2]), "r"(ah[3][3]), "r"(al[0][0]), "r"(al[0][1]), "r"(al[0][2]), "r"(al[0][3]), "r"(al[1][0]), "r"(al[1][1]), "r"(al[1][2]), "r"(al[1][3]), "r"(al[2][0]), "r"(al[2][1]), "r"(al[2][2]), "r"(al[2][3]), "r"(al[3][0]), "r"(al[3][1]), "r"(al[3][2]), "r"(al[3][3]),                                             \
                 "l"(wg_desc(sbase + TILE(buf, 0))), "l"(wg_desc(sbase + TILE(buf, 1)))  \
                 : "memory")
// the fresh sums and A's fragments are the MMAs' until this wait returns
#define MMA_WAIT asm volatile("// SM90A: wgmma.wait_group.sync.aligned 0;" : WG_D_OPS :: "memory")
#define FENCE_PROXY asm volatile("fence.proxy.async.shared::cta;" ::: "memory")
#define EMU_A
#else
// The emulation: the work-items post A's fragments to local memory (row, k), then each
// computes its fresh sums as the hardware orders the tile's MMAs, each an 8-deep float
// sum of TF32 products added toward zero; B is read at the descriptor's addresses. Kept
// out of line: pocl compiles it as one loop, not unrolled.
#define EMU_A __local float emu_a[2 * TSM * TSK];
__attribute__((noinline))
float emulated_sum(__local const char* sb, __local const float* ea, const int buf,
                   const int row, const int col) {
    float d = 0.0f;
    for (int i = 0; i < 12; i++) {    // (al, bh), (ah, bl) for k-steps 0..3, then (ah, bh)
        const int s = i < 8 ? i / 2 : i - 8, wa = i < 8 ? 1 - i % 2 : 0, wb = i < 8 ? i % 2 : 0;
        float sum = 0.0f;
        for (int j = 0; j < 8; j++) {
            const int k = 16 * (s / 2) + 4 * (j % 4) + 2 * (s % 2) + j / 4;   // POS(k) = 8s + j
            sum += ea[(wa * TSM + row) * TSK + k]
                 * as_float(*(__local const uint*)(sb + TILE(buf, wb) + AT(col, 8 * s + j)));
        }
        d = add_toward_zero(d, sum);
    }
    return d;
}
#define MMA_TILE(buf)                                                                   \
    _Pragma("unroll") for (int s = 0; s < 4; s++)                                       \
        _Pragma("unroll") for (int r = 0; r < 4; r++) {                                 \
            const int row = 64 * wg + 16 * w + g + 8 * (r % 2);                         \
            const int k = 16 * (s / 2) + 4 * t + 2 * (s % 2) + r / 2;                   \
            emu_a[row * TSK + k] = as_float(ah[s][r]);                                  \
            emu_a[(TSM + row) * TSK + k] = as_float(al[s][r]);                          \
        }                                                                               \
    barrier(CLK_LOCAL_MEM_FENCE);                                                       \
    _Pragma("unroll 1") for (int j = 0; j < TSN / 8; j++)                               \
        _Pragma("unroll 1") for (int h = 0; h < 4; h++)                                 \
            d[4 * j + h] = emulated_sum(sb, emu_a, buf, 64 * wg + 16 * w + g + 8 * (h / 2), \
                                        8 * j + 2 * t + h % 2);                         \
    barrier(CLK_LOCAL_MEM_FENCE);
#define MMA_WAIT
#define FENCE_PROXY
#endif

__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void gemm(const int M, const int N, const int K, const float alpha,
          const __global float4* restrict A, const int lda,
          const __global float4* restrict B, const int ldb,
          const float beta, __global float* C, const int ldc TAIL_ARGS GUARD_ARGS) {
    GUARD_RETURN
    __local uint4 smem[2 * 2 * 128 * TSN / 16] __attribute__((aligned(1024)));
    EMU_A
    __local char* sb = (__local char*)smem;
    const uint sbase = (uint)(size_t)smem;
    const int tid = get_local_id(0);
    const int wg = tid / 128, w = (tid / 32) % 4, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int ldav = lda / 4, ldbv = ldb / 4;
#ifdef TAIL
    // group -> tile: groups below tail_from take tile `group` whole; the rest are pieces
    // `part`: tile tail_from + part / slices, slice part % slices of `per` whole tiles of k
    // (the last may end at K), read from A and B moved to the slice's first k
    const int group = get_group_id(0), part = group - tail_from, tiles_n = (N + TSN - 1) / TSN;
    const int tile = part < 0 ? group : tail_from + part / slices;
    const int m0 = tile / tiles_n * TSM, n0 = tile % tiles_n * TSN;
    int KS = K;
    if (part >= 0) {
        const int per = ((K + TSK - 1) / TSK + slices - 1) / slices, k0 = part % slices * per * TSK;
        KS = min(K - k0, per * TSK);
        A += k0 / 4;
        B += (size_t)k0 * ldbv;
    }
#else
    const int m0 = get_group_id(1) * TSM, n0 = get_group_id(0) * TSN;
    const int KS = K;                                 // the depth this group sums over
#endif
    const int arow = m0 + 64 * wg + 16 * w + g;       // this lane's rows: arow, arow + 8
    const int Kv = (KS + 3) / 4, Nv = (N + 3) / 4;

    float acc[ND], d[ND];
    #pragma unroll
    for (int i = 0; i < ND; i++) { acc[i] = 0.0f; d[i] = 0.0f; }

    // Global -> registers. Vectors past M, N or K read as zero; in a CLAMP build, rows of
    // A past M and vectors of B past N re-read the last one instead (common.cl).
    float4 xa[2][2], rb[LPTB];          // A: [row arow + 8h][16-deep block]
    uint ah[4][4], al[4][4];            // A's fragments of the tile's 4 k-steps
    #define LOAD_A(k0)                                                                  \
        _Pragma("unroll") for (int h = 0; h < 2; h++)                                  \
            _Pragma("unroll") for (int bb = 0; bb < 2; bb++) {                         \
                const int cv = (k0) / 4 + 4 * bb + t;                                   \
                xa[h][bb] = INSIDE(arow + 8 * h < M && cv < Kv)                         \
                          ? A[EDGE(arow + 8 * h, M) * ldav + cv] : (float4)(0.0f);      \
            }
    #define LOAD_B(k0)                                                                  \
        _Pragma("unroll") for (int l = 0; l < LPTB; l++) {                             \
            const int e = tid + NT * l; B_KN(e, kk, nq)                                 \
            const int cv = n0 / 4 + nq;                                                 \
            rb[l] = INSIDE((k0) + kk < KS && cv < Nv) ? B[((k0) + kk) * ldbv + EDGE(cv, Nv)] \
                                                     : (float4)(0.0f);                  \
        }
    // A's fragments of k-step s = 2bb + p: a0 (row arow) and a1 (arow + 8) take component
    // 2p of the lane's float4 of block bb, a2 and a3 component 2p + 1
    #define SPLIT_A                                                                     \
        _Pragma("unroll") for (int s = 0; s < 4; s++) {                                \
            float x_[4], r0[4], r1[4];                                                  \
            UNPACK4(xa[0][s / 2], r0, 0);                                               \
            UNPACK4(xa[1][s / 2], r1, 0);                                               \
            x_[0] = r0[2 * (s % 2)]; x_[1] = r1[2 * (s % 2)];                           \
            x_[2] = r0[2 * (s % 2) + 1]; x_[3] = r1[2 * (s % 2) + 1];                   \
            _Pragma("unroll") for (int r = 0; r < 4; r++) {                            \
                ah[s][r] = tf32_round(x_[r]);                                           \
                al[s][r] = tf32_round(x_[r] - as_float(ah[s][r]));                      \
            }                                                                           \
        }
    // B's registers -> its h and l tiles of buffer b: the float4's four floats go to four
    // rows (n), at k's position
    #define STORE_B(b)                                                                  \
        _Pragma("unroll") for (int l = 0; l < LPTB; l++) {                             \
            const int e = tid + NT * l; B_KN(e, kk, nq)                                 \
            float x_[4];                                                                \
            UNPACK4(rb[l], x_, 0);                                                      \
            _Pragma("unroll") for (int c = 0; c < 4; c++) {                            \
                const uint h = tf32_round(x_[c]), lo = tf32_round(x_[c] - as_float(h)); \
                *(__local uint*)(sb + TILE(b, 0) + AT(4 * nq + c, POS(kk))) = h;        \
                *(__local uint*)(sb + TILE(b, 1) + AT(4 * nq + c, POS(kk))) = lo;       \
            }                                                                           \
        }                                                                               \
        FENCE_PROXY;   /* these generic stores, before the MMAs' async reads */

    const int tiles = (KS + TSK - 1) / TSK;
    LOAD_A(0);
    LOAD_B(0);
    STORE_B(0);
    SPLIT_A;
    if (tiles > 1) { LOAD_A(TSK); LOAD_B(TSK); }
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int tile = 0; tile < tiles; tile++) {
        const int buf = tile & 1;
        MMA_TILE(buf);
        if (tile + 1 < tiles) { STORE_B(buf ^ 1); }
        if (tile + 2 < tiles) { LOAD_B((tile + 2) * TSK); }
        MMA_WAIT;
        #pragma unroll
        for (int i = 0; i < ND; i++) acc[i] += d[i];
        if (tile + 1 < tiles) { SPLIT_A; }
        if (tile + 2 < tiles) { LOAD_A((tile + 2) * TSK); }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

#ifdef TAIL
    if (part >= 0) {             // a piece: its raw sums, as a dense TSM x TSN block of W
        __global float2* Wp = (__global float2*)(W + (size_t)part * TSM * TSN);
        #pragma unroll
        for (int j = 0; j < TSN / 8; j++) {
            const int at = ((arow - m0) * TSN + 8 * j + 2 * t) / 2;
            Wp[at] = (float2)(acc[4 * j], acc[4 * j + 1]);
            Wp[at + 4 * TSN] = (float2)(acc[4 * j + 2], acc[4 * j + 3]);    // row + 8
        }
        return;
    }
#endif
    const bool full = m0 + TSM <= M && n0 + TSN <= N;
    #pragma unroll
    for (int j = 0; j < TSN / 8; j++) {
        const int colv = (n0 + 8 * j + 2 * t) / 2;
        store_c2((__global float2*)C, arow, colv, ldc, M, N, full, alpha,
                 (float2)(acc[4 * j], acc[4 * j + 1]), beta);
        store_c2((__global float2*)C, arow + 8, colv, ldc, M, N, full, alpha,
                 (float2)(acc[4 * j + 2], acc[4 * j + 3]), beta);
    }
}

#ifdef TAIL
// The tail's second step: C = alpha * (sum of a tile's `slices` pieces in W) + beta * C for
// the tiles from tail_from on; work-item (c, i * TSM + r) takes row r, column c of the
// i-th of them. GUARD=1 returns on a flagged call as the gemm kernel does.
__kernel void tail_reduce(const int M, const int N, const int tail_from, const int slices,
                          const float alpha, const __global float* restrict W,
                          const float beta, __global float* C, const int ldc GUARD_ARGS) {
    GUARD_RETURN
    const int c = get_global_id(0), r = get_global_id(1) % TSM, i = get_global_id(1) / TSM;
    const int tiles_n = (N + TSN - 1) / TSN, tile = tail_from + i;
    const int row = tile / tiles_n * TSM + r, col = tile % tiles_n * TSN + c;
    if (row >= M || col >= N) return;
    const __global float* w = W + ((size_t)i * slices * TSM + r) * TSN + c;
    float sum = 0.0f;
    for (int z = 0; z < slices; z++) sum += w[(size_t)z * TSM * TSN];
    store_c(C, row * ldc + col, alpha, sum, beta);
}
#endif

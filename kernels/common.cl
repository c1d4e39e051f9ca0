// common.cl: helpers shared by the GEMM kernels (included with #include "common.cl").
//
// Every GEMM kernel computes C = alpha*A*B + beta*C on row-major float32 matrices:
//   A is M x K with leading dimension lda, B is K x N (ldb), C is M x N (ldc).
// The work-group grid is laid out with dimension 0 along the columns of C (N) and
// dimension 1 along its rows (M), so that neighbouring work-items touch neighbouring
// addresses of B and C.
//
// beta == 0 never reads C: whatever C held before (even NaN) cannot leak into the result.

#ifndef CLGEMM_COMMON_CL
#define CLGEMM_COMMON_CL

// EXACT: the host defines it for a launch whose shape divides the tiles (M % TSM, N % TSN
// and K % TSK all zero). The bounds checks of the tile loads, written INSIDE(cond), then
// compile away; otherwise (and without CLAMP) they stay, and any M, N, K >= 1 works.
// CLAMP: the host defines it for a launch whose k is a whole number of tiles but whose M
// or N is not. The tile loads then have no bounds checks either: a row or column of a
// tile past M or N re-reads the last one of the matrix (EDGE clamps the index), so every
// load is in bounds and stays unconditional; the results those rows and columns produce
// are computed and never stored (store_c_vec checks the edge tiles). Without CLAMP, EDGE
// leaves the index as it is.
#if defined(EXACT) || defined(CLAMP)
#define INSIDE(cond) 1
#else
#define INSIDE(cond) (cond)
#endif
#ifdef CLAMP
#define EDGE(i, n) min((i), (n) - 1)
#else
#define EDGE(i, n) (i)
#endif
#define DEPTH(i, n) (i)    // an index along k: never clamped (re-reading k adds terms)

// GUARD: the host builds a kernel-5 fallback with GUARD=2 for gemm()'s guarded launch of
// kernel 7 or 8 (clgemm/guard.py), and, where C is read, the kernel with GUARD=1:
// scan_special.cl stores the call's epoch into *guard_flag when an operand holds a value
// kernel 7 cannot multiply as float does; then kernel 7 returns at once (where C is not
// read it runs unchecked) and the fallback computes the product, else the fallback
// returns. The flag is the same for every work-item, so a whole work-group returns
// together, before any barrier. GUARD_ARGS ends the kernel's signature, GUARD_RETURN
// starts its body.
#if defined(GUARD) && GUARD
#define GUARD_ARGS , __global const int* restrict guard_flag, const int guard_epoch
#if GUARD == 1
#define GUARD_RETURN if (*guard_flag == guard_epoch) return;
#else
#define GUARD_RETURN if (*guard_flag != guard_epoch) return;
#endif
#else
#define GUARD_ARGS
#define GUARD_RETURN
#endif

// TF32 of the tensor-core kernels (7, 8), which define TF32_HW: tf32_round(x) is x rounded
// to TF32 (10 mantissa bits, ties away from zero) as a bit pattern, by cvt.rna where the
// device has it (TF32_HW = 1, NVIDIA) and by the same rounding in integer arithmetic
// elsewhere; there add_toward_zero(a, b) is a + b rounded toward zero, as the tensor
// cores' adder was seen to add (kernel 7), for the emulated MMAs.
#ifdef TF32_HW
#if TF32_HW
inline uint tf32_round(float x) {
    uint r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}
#else
inline uint tf32_round(float x) { return (as_uint(x) + 0x1000u) & 0xffffe000u; }
inline float add_toward_zero(const float a, const float b) {
    const float s = a + b, bb = s - a, err = (a - (s - bb)) + (b - bb);  // s + err = a + b
    return (err != 0.0f && (err < 0.0f) != (s < 0.0f)) ? nextafter(s, 0.0f) : s;
}
#endif
#endif

// Write one element of C.
inline void store_c(__global float* C, const int idx, const float alpha,
                    const float acc, const float beta) {
    C[idx] = (beta != 0.0f) ? alpha * acc + beta * C[idx] : alpha * acc;
}

// Write a row segment of VW floats of C, starting at (row, colv*VW), from one vector.
// Interior tiles (`full`) take one vector store; edge tiles fall back to guarded scalars.
// C_UNALIGNED: the host defines it when ldc is not a multiple of the vector width (a
// dense C with an odd number of columns, written in place rather than through an
// aligned copy); every store is then scalar, at row * ldc + col.
#ifdef C_UNALIGNED
#define C_VECTOR_STORES 0
#else
#define C_VECTOR_STORES 1
#endif
#define DEFINE_STORE_C_VEC(NAME, VT, VW, UNPACKV)                                      \
inline void NAME(__global VT* C, const int row, const int colv, const int ldc,          \
                 const int M, const int N, const bool full,                             \
                 const float alpha, const VT acc, const float beta) {                   \
    if (C_VECTOR_STORES && full) {                                                      \
        const int idx = row * (ldc / VW) + colv;                                        \
        C[idx] = (beta != 0.0f) ? alpha * acc + beta * C[idx] : alpha * acc;            \
        return;                                                                         \
    }                                                                                   \
    if (row >= M) return;                                                               \
    float v[VW];                                                                        \
    UNPACKV(acc, v, 0);                                                                 \
    __global float* Cs = (__global float*)C;                                            \
    for (int w = 0; w < VW; w++) {                                                      \
        const int col = colv * VW + w;                                                  \
        if (col < N) store_c(Cs, row * ldc + col, alpha, v[w], beta);                   \
    }                                                                                   \
}

// PACKn/UNPACKn move n consecutive private floats in and out of a floatn, because
// OpenCL C cannot index a vector's components with a variable.
#define UNPACK1(v, arr, o) { arr[(o)] = (v); }
#define PACK1(arr, o) (arr[(o)])
#define UNPACK2(v, arr, o) { arr[(o)] = (v).x; arr[(o) + 1] = (v).y; }
#define PACK2(arr, o) ((float2)(arr[(o)], arr[(o) + 1]))
#define UNPACK4(v, arr, o) { arr[(o)] = (v).x; arr[(o) + 1] = (v).y; \
                             arr[(o) + 2] = (v).z; arr[(o) + 3] = (v).w; }
#define PACK4(arr, o) ((float4)(arr[(o)], arr[(o) + 1], arr[(o) + 2], arr[(o) + 3]))

DEFINE_STORE_C_VEC(store_c2, float2, 2, UNPACK2)
DEFINE_STORE_C_VEC(store_c4, float4, 4, UNPACK4)

// The vector type of the wide-load kernels (4-6): floatW holds WIDTH floats.
#ifdef WIDTH
#if WIDTH == 1
typedef float floatW;
#define UNPACK UNPACK1
#define PACK PACK1
#elif WIDTH == 2
typedef float2 floatW;
#define UNPACK UNPACK2
#define PACK PACK2
#elif WIDTH == 4
typedef float4 floatW;
#define UNPACK UNPACK4
#define PACK PACK4
#else
#error "WIDTH must be 1, 2 or 4"
#endif
DEFINE_STORE_C_VEC(store_c_vec, floatW, WIDTH, UNPACK)
#endif  // WIDTH

#endif  // CLGEMM_COMMON_CL

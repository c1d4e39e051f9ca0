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

// Write one element of C.
inline void store_c(__global float* C, const int idx, const float alpha,
                    const float acc, const float beta) {
    C[idx] = (beta != 0.0f) ? alpha * acc + beta * C[idx] : alpha * acc;
}

// The vector type of the wide-load kernels (4-6): floatW holds WIDTH floats.
// PACK/UNPACK move WIDTH consecutive private floats in and out of a floatW, because
// OpenCL C cannot index a vector's components with a variable.
#ifdef WIDTH
#if WIDTH == 1
typedef float floatW;
#define UNPACK(v, arr, o) { arr[(o)] = (v); }
#define PACK(arr, o) (arr[(o)])
#elif WIDTH == 2
typedef float2 floatW;
#define UNPACK(v, arr, o) { arr[(o)] = (v).x; arr[(o) + 1] = (v).y; }
#define PACK(arr, o) ((float2)(arr[(o)], arr[(o) + 1]))
#elif WIDTH == 4
typedef float4 floatW;
#define UNPACK(v, arr, o) { arr[(o)] = (v).x; arr[(o) + 1] = (v).y; \
                            arr[(o) + 2] = (v).z; arr[(o) + 3] = (v).w; }
#define PACK(arr, o) ((float4)(arr[(o)], arr[(o) + 1], arr[(o) + 2], arr[(o) + 3]))
#else
#error "WIDTH must be 1, 2 or 4"
#endif

// Write a WIDTH-wide row segment of C starting at (row, colv*WIDTH).
// Interior tiles take one vector store; edge tiles fall back to guarded scalar stores.
inline void store_c_vec(__global floatW* C, const int row, const int colv, const int ldcv,
                        const int M, const int N, const bool full,
                        const float alpha, const floatW acc, const float beta) {
    if (full) {
        const int idx = row * ldcv + colv;
        C[idx] = (beta != 0.0f) ? alpha * acc + beta * C[idx] : alpha * acc;
        return;
    }
    if (row >= M) return;
    float v[WIDTH];
    UNPACK(acc, v, 0);
    __global float* Cs = (__global float*)C;
    #pragma unroll
    for (int w = 0; w < WIDTH; w++) {
        const int col = colv * WIDTH + w;
        if (col < N) store_c(Cs, row * ldcv * WIDTH + col, alpha, v[w], beta);
    }
}
#endif  // WIDTH

#endif  // CLGEMM_COMMON_CL

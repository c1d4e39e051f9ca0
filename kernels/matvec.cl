// matvec.cl: products with one row or one column of output (m = 1 or n = 1) as
// matrix-vector products, which stream their matrix from memory once.
//
// Such a product moves 4*R*L bytes of its matrix for 2*R*L flops, so memory bounds it
// (the H200: 64 MB at 1 x 4096 x 4096 take ~14 us at 4.8 TB/s); a GEMM kernel's tiles would
// compute 4 to 16 rows for the one there is, through local memory. gemm() takes this path
// where m or n is 1 and no kernel is named (clgemm/matvec.py, heuristics.matvec).
//
// Both kernels read a row-major matrix X of R rows of L floats (rows ldx floats apart,
// starting offx floats into its buffer) and a vector v (element i at offv + i*incv), and
// write y (element i at offy + i*incy):
//   sweep: y[l] = alpha * sum_r v[r] * X[r][l] + beta * y[l]   (v runs down the rows)
//   dot:   y[r] = alpha * sum_l X[r][l] * v[l] + beta * y[r]   (v runs along each row)
// gemm()'s cases: m = 1 is y = a.B, sweep over B (K x N) or dot over B stored N x K; n = 1
// is y = A.b, dot over A (M x K) or sweep over A stored K x M. No operand is copied. A
// peeled product's one row or column of C past whole tiles (clgemm/layout.py) runs here too.
// With S slices (dimension 2 of the grid), slice s's sums go to row s of a workspace W (n
// floats a row, n the outputs), and the work-group that finishes last among the S of its
// outputs adds the rows in slice order into y (last_of_slices): one launch, where a second
// kernel to add them had cost a launch more. `counts` holds those groups' counts (ints, zero
// between launches, in a buffer of the launch's own: W comes from a pool, whose memory a
// result dropped while another queue still writes it can be handed to, and a stray count
// would stop every later launch from writing y). S = 1 writes y directly. beta == 0 never
// reads y. The order of every sum is fixed.
//
// Parameters: CV, LANES, UNROLL (registry kernel matvec-sweep), LW, RW, UNROLL
// (matvec-dot), which `clgemm tune` tunes at m = 1 and at n = 1 respectively; VW (the
// host's: 4 where ldx and offx are multiples of 4, else 1), VCONTIG (the host's: v
// contiguous and 16-byte aligned), SLICED (the host's: 1 where S > 1). The host fits CV or
// LW to rows narrower than a group.
// Constraints: LW a power of two; CV*LANES and LW*RW at most the work-group limit.
// H200, tuned, with the slices summed by a second launch (a7d2884): whole calls 1.15-1.18x
// gemm()'s kernel-5 path at 1 x 4096 x 4096 and 2.0-2.1x at 4096 x 1 x 4096; in one launch
// (0e78475), 0.98x cuBLAS at 1 x 4096 x 4096 and 1.12x at 4096 x 1 x 4096
// (results/h200/bench/bench-2026-12-05.json, medians of three runs); CPU device (pocl 3.0, 2
// cores): 6.1-11x from 1 x 2048 x 2048 to 4096 x 1 x 4096 (results/pocl/README.md).
// The slices added in the same launch instead of a second one, on an H100: whole calls
// 1.2-1.4x at 1 x 2048 x 2048 (8 slices), 1.0x at 1 x 4096 x 4096, 0.97x at 1 x 8192 x 8192
// (16), results/h100/raw/matvec-counts-buffer-2026-12-05-c230c8f.txt.

// sweep: CV vectors of a row a work-group covers (local size 0), LANES work-items that
// share its rows (local size 1); dot: LW work-items a row (local size 0), RW rows a
// work-group (local size 1); both: UNROLL loads a work-item issues before it uses the first.
#ifndef CV
#define CV 64
#endif
#ifndef LANES
#define LANES 8
#endif
#ifndef LW
#define LW 32
#endif
#ifndef RW
#define RW 8
#endif
#ifndef UNROLL
#define UNROLL 8
#endif
#ifndef VW
#define VW 4
#endif
#ifndef SLICED
#define SLICED 0
#endif

#if VW == 4
typedef float4 floatV;
#define VSUM(t) ((t).x + (t).y + (t).z + (t).w)
#define UNPACKV(t, e) { e[0] = (t).x; e[1] = (t).y; e[2] = (t).z; e[3] = (t).w; }
#define PACKV(e) ((float4)(e[0], e[1], e[2], e[3]))
#elif VW == 1
typedef float floatV;
#define VSUM(t) (t)
#define UNPACKV(t, e) { e[0] = (t); }
#define PACKV(e) (e[0])
#else
#error "VW must be 4 or 1"
#endif

inline void store_y(__global float* y, const size_t i, const float alpha, const float s,
                    const float beta) {
    y[i] = (beta != 0.0f) ? alpha * s + beta * y[i] : alpha * s;
}

// Every access of a slice's row of W by two work-groups is an atomic one, the only kind
// OpenCL 1.2 keeps coherent between work-groups during a launch.
inline void put_slice(__global float* W, const size_t i, const float x) {
    atomic_xchg((volatile __global float*)(W + i), x);
}

// Whether this work-group is the last of the S that share its outputs to have written its
// slice's row of W, counted in `count`; the last sets the count back to 0 for the next
// launch. Each work-item's fence orders its row of W before the count moves.
inline bool last_of_slices(volatile __global int* count, const int S, __local int* last) {
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    if (get_local_id(0) == 0 && get_local_id(1) == 0) {
        *last = atomic_inc(count) == S - 1;
        if (*last) atomic_xchg(count, 0);
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    return *last;
}

// y[i0 + w * 1] for w < nw (nw <= VW: consecutive outputs), element yi0 + w * incy of y,
// from the S rows of W (n floats a row), each output's slices added in slice order. Every
// read is an atomic that leaves the value as it is; they go out 8 slices of all nw outputs
// at a time before their sums, so that the last group waits for one round trip to memory
// per 8 slices, not one per slice and output.
inline void sum_slices(__global float* W, const int n, const int S, const int i0,
                       const int nw, __global float* y, const size_t yi0, const int incy,
                       const float alpha, const float beta) {
    volatile __global int* w0 = (volatile __global int*)(W + i0);
    float sum[VW];
    for (int w = 0; w < VW; w++) sum[w] = 0.0f;
    int s = 0;
    for (; s + 8 <= S; s += 8) {
        float x[8][VW];
        #pragma unroll
        for (int u = 0; u < 8; u++)
            #pragma unroll
            for (int w = 0; w < VW; w++)
                x[u][w] = w < nw ? as_float(atomic_or(w0 + (size_t)(s + u) * n + w, 0)) : 0.0f;
        #pragma unroll
        for (int u = 0; u < 8; u++)
            #pragma unroll
            for (int w = 0; w < VW; w++) sum[w] += x[u][w];
    }
    for (; s < S; s++)
        for (int w = 0; w < nw; w++) sum[w] += as_float(atomic_or(w0 + (size_t)s * n + w, 0));
    for (int w = 0; w < nw; w++) store_y(y, yi0 + (size_t)w * incy, alpha, sum[w], beta);
}

// This group's part [p0, p1) of n things cut into S slices of ceil(n / S), the last shorter
// (or empty).
#define SLICE(n, p0, p1)                                                    \
    const int S = get_num_groups(2), s = get_group_id(2);                  \
    const int per_ = ((n) + S - 1) / S;                                     \
    const int p0 = min((n), s * per_), p1 = min((n), p0 + per_);

// acc += V(i) * M(i) for i = i0, i0 + STEP, ... below i1 (V's values of type VT, M's
// floatVs): each of UNROLL of both loads is issued before the first of their products, so
// that a work-item keeps UNROLL loads in flight; the products are added in index order.
#define STREAM(acc, VT, V, M, i0, i1, STEP)                                        \
    {                                                                              \
        int i_ = (i0);                                                             \
        for (; i_ + (UNROLL - 1) * (STEP) < (i1); i_ += UNROLL * (STEP)) {         \
            floatV m_[UNROLL];                                                     \
            VT a_[UNROLL];                                                         \
            _Pragma("unroll") for (int u = 0; u < UNROLL; u++) {                   \
                m_[u] = M(i_ + u * (STEP));                                        \
                a_[u] = V(i_ + u * (STEP));                                        \
            }                                                                      \
            _Pragma("unroll") for (int u = 0; u < UNROLL; u++) acc += a_[u] * m_[u]; \
        }                                                                          \
        for (; i_ < (i1); i_ += (STEP)) acc += V(i_) * M(i_);                      \
    }

// The arguments of both forms, in the order clgemm/matvec.py binds them (the same indices
// serve either kernel): sizes and alpha, the matrix, the vector, beta and y, the workspace.
#define MATVEC_ARGS                                                                    \
    const int R, const int L, const float alpha,                                       \
    const __global float* restrict X, const int offx, const int ldx,                   \
    const __global float* restrict v, const int offv, const int incv,                  \
    const float beta, __global float* y, const int offy, const int incy,               \
    __global float* restrict W, volatile __global int* counts

// sweep: work-item (c, lane) owns vector c of every row (VW columns) and sums rows
// r0 + lane, r0 + lane + LANES, ... of its slice, UNROLL rows' loads at a time; the
// group's LANES sums meet in local memory and are added in lane order.
__kernel __attribute__((reqd_work_group_size(CV, LANES, 1)))
void matvec_sweep(MATVEC_ARGS) {
    const int c = get_global_id(0), lx = get_local_id(0), lane = get_local_id(1);
    const int Lv = (L + VW - 1) / VW, ldv = ldx / VW;   // vectors a row; rows apart
    SLICE(R, r0, r1)
    v += offv;
    floatV acc = (floatV)(0.0f);
    if ((c + 1) * VW <= L) {                     // a whole vector of each row
        const __global floatV* col = (const __global floatV*)(X + offx) + c;
        #define DOWN(r) v[(size_t)(r) * incv]     // the vector's element r
        #define COL(r) col[(size_t)(r) * ldv]     // row r's vector c
        STREAM(acc, float, DOWN, COL, r0 + lane, r1, LANES)
    } else if (c < Lv) {                         // the row's last L % VW floats, by floats
        float e[VW] = {0.0f};
        const __global float* x0 = X + offx + c * VW;
        for (int r = r0 + lane; r < r1; r += LANES)
            for (int w = 0; w < L - c * VW; w++) e[w] += v[(size_t)r * incv] * x0[(size_t)r * ldx + w];
        acc = PACKV(e);
    }
    __local floatV part[LANES][CV];
    part[lane][lx] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    const bool mine = lane == 0 && c < Lv;       // lane 0 adds the lanes of vector c
    if (mine) {
        floatV sum = part[0][lx];
        for (int i = 1; i < LANES; i++) sum += part[i][lx];
        float e[VW];
        UNPACKV(sum, e);
        for (int w = 0; w < VW && c * VW + w < L; w++) {
            const int l = c * VW + w;
#if SLICED
            put_slice(W, (size_t)s * L + l, e[w]);
#else
            store_y(y, offy + (size_t)l * incy, alpha, e[w], beta);
#endif
        }
    }
#if SLICED
    __local int last;
    if (!last_of_slices(counts + get_group_id(0), S, &last) || !mine) return;
    sum_slices(W, L, S, c * VW, min(VW, L - c * VW), y, offy + (size_t)c * VW * incy, incy,
               alpha, beta);
#endif
}

// dot: LW work-items share row `row` and sum vectors lane, lane + LW, ... of their slice
// of the row's whole vectors, UNROLL at a time; the last slice's lane 0 adds the row's
// last L % VW floats; the LW sums are added by a tree in local memory.
__kernel __attribute__((reqd_work_group_size(LW, RW, 1)))
void matvec_dot(MATVEC_ARGS) {
    const int lane = get_local_id(0), ly = get_local_id(1);
    const int row = get_group_id(1) * RW + ly;
    const int Lw = L / VW;                       // whole vectors of a row
    SLICE(Lw, q0, q1)
    v += offv;
#ifdef VCONTIG
    #define VEC(q) ((const __global floatV*)v)[(q)]
#elif VW == 4
    #define VEC(q) ((float4)(v[(size_t)(4 * (q)) * incv], v[(size_t)(4 * (q) + 1) * incv], \
                             v[(size_t)(4 * (q) + 2) * incv], v[(size_t)(4 * (q) + 3) * incv]))
#else
    #define VEC(q) v[(size_t)(q) * incv]
#endif
    floatV acc = (floatV)(0.0f);
    float tail = 0.0f;
    if (row < R) {
        const __global floatV* xr = (const __global floatV*)(X + offx + (size_t)row * ldx);
        #define ALONG(q) xr[(q)]                  // the row's vector q
        STREAM(acc, floatV, VEC, ALONG, q0 + lane, q1, LW)
        if (lane == 0 && s == S - 1)
            for (int l = Lw * VW; l < L; l++)
                tail += ((const __global float*)xr)[l] * v[(size_t)l * incv];
    }
    __local float part[RW][LW];
    part[ly][lane] = VSUM(acc) + tail;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = LW / 2; h > 0; h /= 2) {        // pairs h apart, halving
        if (lane < h) part[ly][lane] += part[ly][lane + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const bool mine = lane == 0 && row < R;      // lane 0 holds the row's sum
    if (mine) {
#if SLICED
        put_slice(W, (size_t)s * R + row, part[ly][0]);
#else
        store_y(y, offy + (size_t)row * incy, alpha, part[ly][0], beta);
#endif
    }
#if SLICED
    __local int last;
    if (!last_of_slices(counts + get_group_id(1), S, &last) || !mine) return;
    sum_slices(W, R, S, row, 1, y, offy + (size_t)row * incy, incy, alpha, beta);
#endif
}

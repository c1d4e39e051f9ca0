// gemv.cl: products with one output row or column (m = 1 or n = 1), as matrix-vector
// products that stream the matrix once from memory.
//
// Such a product moves 4*R*L bytes of its matrix for 2*R*L flops: it is bound by memory
// (the H200: ~4.8 TB/s, 64 MB at 1 x 4096 x 4096 is ~14 us), and a GEMM kernel's tiles
// stage the matrix through local memory with one group's warps, far from that rate.
//
// Both kernels read a row-major matrix X of R rows of L floats (leading dimension ldx, in
// vectors of VW floats: VW = 4 where ldx and the offset are multiples of 4, else 1) and a
// vector v (stride incv), and write y (stride incy):
//   sweep: y[l] = alpha * sum_r v[r] * X[r][l] + beta * y[l]   (v runs down the rows)
//   dot:   y[r] = alpha * sum_l X[r][l] * v[l] + beta * y[r]   (v runs along a row)
// gemm()'s four cases: m = 1 is y = a.B, sweep over B (K x N) or dot over B stored N x K;
// n = 1 is y = A.b, dot over A (M x K) or sweep over A stored K x M.
// With S slices (dimension 2 of the grid) each slice's sums go to row s of a workspace W
// (ldw floats a row) and gemv_reduce adds them in slice order; S = 1 writes y directly.
// beta == 0 never reads y. Sums run in a fixed order: results are the same run to run.

#ifndef VW
#define VW 4
#endif
#ifndef CV          // sweep: vectors of a row a group covers (local size 0)
#define CV 64
#endif
#ifndef LANES       // sweep: lanes that share a group's rows (local size 1)
#define LANES 4
#endif
#ifndef LW          // dot: work-items per row (local size 0)
#define LW 32
#endif
#ifndef RW          // dot: rows a group (local size 1)
#define RW 8
#endif
#ifndef UNROLL      // loads each work-item issues before it uses the first
#define UNROLL 8
#endif

#if VW == 4
typedef float4 floatV;
#define VSUM(t) ((t).x + (t).y + (t).z + (t).w)
#define UNPACKV(t, e) { e[0] = (t).x; e[1] = (t).y; e[2] = (t).z; e[3] = (t).w; }
#else
#define UNPACKV(t, e) { e[0] = (t); }
typedef float floatV;
#define VSUM(t) (t)
#endif

inline void store_y(__global float* y, const size_t i, const float alpha, const float s,
                    const float beta) {
    y[i] = (beta != 0.0f) ? alpha * s + beta * y[i] : alpha * s;
}

// Rows [r0, r1) of slice s of S: ceil(n / S) each, the last shorter.
#define SLICE(n, r0, r1)                                                    \
    const int S = get_num_groups(2), s = get_group_id(2);                  \
    const int per_ = ((n) + S - 1) / S;                                     \
    const int r0 = min((n), s * per_), r1 = min((n), r0 + per_);

// sweep: work-item (c, lane) of a group owns vector c of each row (VW columns) and sums
// rows r0 + lane, r0 + lane + LANES, ...; UNROLL rows' loads are issued before their
// products. The LANES partial sums meet in local memory, added in lane order.
__kernel __attribute__((reqd_work_group_size(CV, LANES, 1)))
void gemv_sweep(const int R, const int L, const float alpha,
                const __global floatV* restrict X, const int ldx,
                const __global float* restrict v, const int incv,
                const float beta, __global float* y, const int incy,
                __global float* restrict W, const int ldw) {
    const int c = get_global_id(0), lx = get_local_id(0), lane = get_local_id(1);
    const int Lv = (L + VW - 1) / VW;
    SLICE(R, r0, r1)
    floatV acc = (floatV)(0.0f);
    if (c < Lv) {
        const __global floatV* col = X + c;
        int r = r0 + lane;
        for (; r + (UNROLL - 1) * LANES < r1; r += UNROLL * LANES) {
            floatV m[UNROLL];
            float a[UNROLL];
            #pragma unroll
            for (int u = 0; u < UNROLL; u++) {
                m[u] = col[(size_t)(r + u * LANES) * ldx];
                a[u] = v[(size_t)(r + u * LANES) * incv];
            }
            #pragma unroll
            for (int u = 0; u < UNROLL; u++) acc += a[u] * m[u];
        }
        for (; r < r1; r += LANES) acc += v[(size_t)r * incv] * col[(size_t)r * ldx];
    }
    __local floatV part[LANES][CV];
    part[lane][lx] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lane != 0 || c >= Lv) return;
    floatV sum = part[0][lx];
    for (int i = 1; i < LANES; i++) sum += part[i][lx];
    float e[VW];
    UNPACKV(sum, e);
    for (int w = 0; w < VW; w++) {
        const int l = c * VW + w;
        if (l >= L) break;
        if (S > 1) W[(size_t)s * ldw + l] = e[w];
        else store_y(y, (size_t)l * incy, alpha, e[w], beta);
    }
}

// dot: LW work-items share row r (of the group's RW rows) and sum vectors lane,
// lane + LW, ... of its slice of the row's whole vectors, UNROLL at a time; lane 0 adds the
// row's last L % VW floats; the LW partial sums are added in local memory by a tree.
// VCONTIG (the host's build option): v is contiguous and aligned, read as vectors.
__kernel __attribute__((reqd_work_group_size(LW, RW, 1)))
void gemv_dot(const int R, const int L, const float alpha,
              const __global floatV* restrict X, const int ldx,
              const __global float* restrict v, const int incv,
              const float beta, __global float* y, const int incy,
              __global float* restrict W, const int ldw) {
    const int lane = get_local_id(0), ly = get_local_id(1);
    const int row = get_group_id(1) * RW + ly;
    const int Lw = L / VW;                       // whole vectors of a row
    SLICE(Lw, q0, q1)
    floatV acc = (floatV)(0.0f);
    float tail = 0.0f;
    if (row < R) {
        const __global floatV* xr = X + (size_t)row * ldx;
#ifdef VCONTIG
        const __global floatV* vv = (const __global floatV*)v;
        #define VEC(q) vv[(q)]
#elif VW == 4
        #define VEC(q) ((float4)(v[(size_t)(4 * (q)) * incv], v[(size_t)(4 * (q) + 1) * incv], \
                                 v[(size_t)(4 * (q) + 2) * incv], v[(size_t)(4 * (q) + 3) * incv]))
#else
        #define VEC(q) v[(size_t)(q) * incv]
#endif
        int q = q0 + lane;
        for (; q + (UNROLL - 1) * LW < q1; q += UNROLL * LW) {
            floatV m[UNROLL], a[UNROLL];
            #pragma unroll
            for (int u = 0; u < UNROLL; u++) {
                m[u] = xr[q + u * LW];
                a[u] = VEC(q + u * LW);
            }
            #pragma unroll
            for (int u = 0; u < UNROLL; u++) acc += a[u] * m[u];
        }
        for (; q < q1; q += LW) acc += VEC(q) * xr[q];
        if (lane == 0 && s == S - 1)             // the floats past the whole vectors
            for (int l = Lw * VW; l < L; l++)
                tail += ((const __global float*)xr)[l] * v[(size_t)l * incv];
    }
    __local float part[RW][LW];
    part[ly][lane] = VSUM(acc) + tail;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = LW / 2; h > 0; h /= 2) {        // LW a power of two
        if (lane < h) part[ly][lane] += part[ly][lane + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lane != 0 || row >= R) return;
    if (S > 1) W[(size_t)s * ldw + row] = part[ly][0];
    else store_y(y, (size_t)row * incy, alpha, part[ly][0], beta);
}

// The S slices' sums of each output, added in slice order: y[i] = alpha * sum + beta * y[i].
__kernel void gemv_reduce(const int n, const int S, const float alpha,
                          const __global float* restrict W, const int ldw,
                          const float beta, __global float* y, const int incy) {
    const int i = get_global_id(0);
    if (i >= n) return;
    float sum = 0.0f;
    for (int s = 0; s < S; s++) sum += W[(size_t)s * ldw + i];
    store_y(y, (size_t)i * incy, alpha, sum, beta);
}

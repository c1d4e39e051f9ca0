// scan_special.cl: finds operand values that kernels 7 and 8 cannot multiply as float does.
//
// Kernel 7 splits each float x into a TF32 head h = round(x) and a remainder l = x - h and
// forms a*b as al*bh + ah*bl + ah*bh on the tensor cores: float's product, to float's
// precision, while each partial product is zero or a normal float. `scan` stores `epoch`
// into *flag when an element x of A or B (as kernel 7 will read them) is
// - Inf or NaN: h = Inf makes l = Inf - Inf = NaN, where float gives Inf;
// - nonzero with |x| < 2^SMALL_EXP = 2^-51. From there up, x and h are multiples of
//   ulp(x) >= 2^-74, so a nonzero l (and its TF32 truncation) is >= 2^-74 and h >= 2^-51:
//   l*h >= 2^-125, normal. Lower, remainders and their products fall under 2^-126, where
//   TF32 keeps fewer bits (a row of A scaled by 1e-36 lost 1.1e-5 on the H200, kernel 5
//   5.6e-7) and whether the tensor cores keep subnormals is not measured. A bound on
//   whole products, 2^-57 (a*b >= 2^-114), would leave l*h as low as 2^-137;
// - |x| >= 2^BIG_EXP = 2^60. Below it |h| <= 2^60, so partial products stay <= 2^120, and
//   the fresh sums the MMAs build before a float add folds them (3 partial products of
//   up to 32 products: kernel 8's tile of k; kernel 7's FOLD, 16) stay <= 96 * 2^120 <
//   2^127. At 2^63, where only one product's three were bounded, a row x, x, -x, -x, ...
//   with x = 7e18 (2^62.6) times a column of x, exactly 0 and finite in kernel 5's chain,
//   gave NaN in kernels 7 and 8 (Inf in a fresh sum; pocl's emulation, 2026-12-05). A
//   bound at 2^127 (h overflows from (2 - 2^-11) * 2^127) would pass (2 - 2^-12) * 2^100
//   times 2^27, finite in float and Inf in kernel 7 alone (ah = 2^101).
// Unflagged, every product is float's to float's precision, and the sums differ from
// kernel 5's only in the order of the additions, as any two kernels' do. Flagged, kernel
// 5 computes the product (GUARD, common.cl). Zeros of either sign are never flagged. All
// writers store the same value, so their race is benign, and the flag is never cleared:
// each call has an epoch of its own (clgemm/guard.py).
//
// One launch scans both matrices, rows x cols each, rows ld floats apart from the start
// of their buffers (16-byte aligned): their rows, A's and then B's, numbered on, are
// shared out among the work-groups, and a group's work-items stride along a row: by
// float4s when ld is a multiple of 4 (every row then starts 16-byte aligned), the row's
// last cols % 4 floats and rows of other ld by floats. No index is divided: a division
// of 64-bit indices per float4 made the scan of two 8192^2 operands take ~0.9 ms.

#define SMALL_BITS ((uint)(127 + SMALL_EXP) << 23)   // bits of 2^SMALL_EXP
#define BIG_BITS ((uint)(127 + BIG_EXP) << 23)       // bits of 2^BIG_EXP

inline int special(const float x) {
    const uint m = as_uint(x) & 0x7fffffffu;     // |x|'s bits, ordered as |x| (Inf, NaN above)
    return m != 0u && (m < SMALL_BITS || m >= BIG_BITS);
}

inline int special4(const float4 x) {
    const uint4 m = as_uint4(x) & (uint4)(0x7fffffffu);
    return any((m != (uint4)(0u)) & ((m < (uint4)(SMALL_BITS)) | (m >= (uint4)(BIG_BITS))));
}

__kernel void scan(const __global float* restrict A, const int a_rows, const int a_cols,
                   const int lda, const __global float* restrict B, const int b_rows,
                   const int b_cols, const int ldb, __global int* flag, const int epoch) {
    const int lid = get_local_id(0), step = get_local_size(0);
    int bad = 0;
    for (int row = get_group_id(0); row < a_rows + b_rows; row += get_num_groups(0)) {
        const bool in_a = row < a_rows;
        const int cols = in_a ? a_cols : b_cols, ld = in_a ? lda : ldb;
        const __global float* x = in_a ? A + (size_t)row * lda : B + (size_t)(row - a_rows) * ldb;
        const int vectors = (ld % 4 == 0) ? cols / 4 : 0;   // float4s, then floats
        for (int u = lid; u < vectors; u += step)
            bad |= special4(((const __global float4*)x)[u]);
        for (int j = 4 * vectors + lid; j < cols; j += step)
            bad |= special(x[j]);
    }
    if (bad) *flag = epoch;
}

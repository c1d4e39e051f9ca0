// shuffle.cl: exchanging registers between neighbouring work-items without local memory.
//
// SHUFFLE selects the mechanism (clgemm's build step sets it from the device):
//   1  NVIDIA: inline PTX shfl.sync (no cl_khr_subgroups there, but PTX works);
//   2  cl_khr_subgroup_shuffle: sub_group_shuffle_xor;
//   3  cl_intel_subgroups: intel_sub_group_shuffle_xor;
//   0  anywhere else (pocl, Oclgrind): emulated through local memory with barriers, so the
//      index math runs and is checked on the CPU. Every work-item of the group must then
//      reach each shuffle, so callers keep shuffles out of divergent branches.
// Lanes exchange with lid ^ mask for mask < 8: partners are among 8 consecutive linear
// local ids, which is within one warp / sub-group on every device.

#ifndef CLGEMM_SHUFFLE_CL
#define CLGEMM_SHUFFLE_CL

#ifndef SHUFFLE
#define SHUFFLE 0
#endif

#if SHUFFLE == 1
inline float shfl_xor(float v, int lid, int mask) {
    float r;
    const int src = (lid & 31) ^ mask;
    asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(src));
    return r;
}
#define SHUFFLE_SCRATCH(n)
#define SHFL_XOR(v, mask) shfl_xor((v), lid_, (mask))
#elif SHUFFLE == 2
#pragma OPENCL EXTENSION cl_khr_subgroup_shuffle : enable
#define SHUFFLE_SCRATCH(n)
#define SHFL_XOR(v, mask) sub_group_shuffle_xor((v), (uint)(mask))
#elif SHUFFLE == 3
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
#define SHUFFLE_SCRATCH(n)
#define SHFL_XOR(v, mask) intel_sub_group_shuffle_xor((v), (uint)(mask))
#else
// The scratch's store and load are calls kept out of line: pocl makes the code between two
// barriers a loop over the work-group's work-items, one per barrier of the unrolled kernel
// body, and with them inlined LLVM took 23 s (WARPS=1) and 60 s (WARPS=2) to build the
// shuffle transpose's 64 exchanges, against 5 and 10 s as calls (2026-12-04).
__attribute__((noinline)) void shfl_put(__local float* s, const int i, const float v) { s[i] = v; }
__attribute__((noinline)) float shfl_get(__local const float* s, const int i) { return s[i]; }
inline float shfl_xor_local(__local float* s, int lid, float v, int mask) {
    shfl_put(s, lid, v);
    barrier(CLK_LOCAL_MEM_FENCE);
    const float r = shfl_get(s, lid ^ mask);
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}
#define SHUFFLE_SCRATCH(n) __local float shfl_scratch_[n];
#define SHFL_XOR(v, mask) shfl_xor_local(shfl_scratch_, lid_, (v), (mask))
#endif

// Transpose a G x G block of W-float units held by G neighbouring lanes (G*W == 4):
// before, lane q holds unit r at x[r*W .. r*W+W-1] = block element (r, q); after, it
// holds unit r = block element (q, r). Two butterfly steps: lane bit b trades the units
// whose index bit b differs from it with lane q ^ (1 << b). `lid_` must be in scope.
#define QUAD_TRANSPOSE(x, G, W, q)                                                  \
    _Pragma("unroll") for (int b = 1; b < (G); b <<= 1) {                           \
        _Pragma("unroll") for (int r = 0; r < (G); r++) {                           \
            if ((r & b) == 0) {                                                     \
                const bool hi = ((q) & b) != 0;                                     \
                _Pragma("unroll") for (int w = 0; w < (W); w++) {                   \
                    const float send = hi ? x[r * (W) + w] : x[(r + b) * (W) + w];  \
                    const float got = SHFL_XOR(send, b);                            \
                    if (hi) x[r * (W) + w] = got; else x[(r + b) * (W) + w] = got;  \
                }                                                                   \
            }                                                                       \
        }                                                                           \
    }

#endif  // CLGEMM_SHUFFLE_CL

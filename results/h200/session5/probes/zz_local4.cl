// Probe: the padded local transpose with 16-byte global accesses (64 x 64 tile, 16 x 16
// work-items, each moving 4 float4 rows in and 4 float4 rows out). Whole tiles only.
__kernel __attribute__((reqd_work_group_size(16, 16, 1)))
void transpose(const int rows, const int cols,
               const __global float* restrict in, const int ldi,
               __global float* restrict out, const int ldo) {
    __local float tile[64][65];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int r0 = get_group_id(1) * 64, c0 = get_group_id(0) * 64;
#ifdef OCCB
    __local float occ_[OCCB / 4];
    if (rows < 0) { occ_[tx] = (float)cols; out[tx] = occ_[(tx + 1) % 16]; }
#endif
    #pragma unroll
    for (int i = 0; i < 4; i++) {
        const float4 v = *(const __global float4*)(in + (r0 + ty + 16 * i) * ldi + c0 + 4 * tx);
        tile[ty + 16 * i][4 * tx] = v.x; tile[ty + 16 * i][4 * tx + 1] = v.y;
        tile[ty + 16 * i][4 * tx + 2] = v.z; tile[ty + 16 * i][4 * tx + 3] = v.w;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    #pragma unroll
    for (int i = 0; i < 4; i++) {
        const int c = ty + 16 * i;
        *(__global float4*)(out + (c0 + c) * ldo + r0 + 4 * tx) =
            (float4)(tile[4 * tx][c], tile[4 * tx + 1][c], tile[4 * tx + 2][c], tile[4 * tx + 3][c]);
    }
}

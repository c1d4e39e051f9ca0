"""Probe: can NVIDIA's OpenCL run sm_90a-only PTX (wgmma) if the program's PTX is patched?

The OpenCL C source carries each sm_90a instruction as an inline-asm comment
('// SM90A: ...', operands substituted by the compiler); the PTX is then patched
(.target sm_90a, comments made instructions) and built again from the binary.
One m64n16k8 TF32 wgmma with A in registers and B in local memory by descriptor is
checked against numpy for two readings of the descriptor's two byte offsets."""
import re, sys
import numpy as np
import pyopencl as cl

SRC = r'''
__kernel __attribute__((reqd_work_group_size(128, 1, 1)))
void k(__global const float* A, __global const float* B, __global float* D,
       const uint lbo, const uint sbo, const uint koff, const uint noff) {
    __local float Bs[256] __attribute__((aligned(1024)));
    const int tid = get_local_id(0), w = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    // B is 8 x 16 (k, n); element (n, k) of the K-major copy at byte
    // (k/4)*koff + (n/8)*noff + (n%8)*16 + (k%4)*4
    {
        const int n = tid % 16, kk = tid / 16;        // 128 elements, one a work-item
        *(__local float*)((__local char*)Bs + (kk / 4) * koff + (n / 8) * noff + (n % 8) * 16
                           + (kk % 4) * 4) = B[kk * 16 + n];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    uint a0, a1, a2, a3;
    const int r = 16 * w + g;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(a0) : "f"(A[r * 8 + t]));
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(a1) : "f"(A[(r + 8) * 8 + t]));
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(a2) : "f"(A[r * 8 + t + 4]));
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(a3) : "f"(A[(r + 8) * 8 + t + 4]));
    const ulong addr = (ulong)(uint)(size_t)Bs;
    const ulong desc = ((addr & 0x3FFFF) >> 4) | ((ulong)(lbo >> 4) << 16)
                     | ((ulong)(sbo >> 4) << 32);
    float d0, d1, d2, d3, d4, d5, d6, d7;
    asm volatile("// SM90A: wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile("// SM90A: { .reg .pred p; setp.ne.b32 p, 0, 0; "
                 "wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9,%10,%11}, %12, p, 1, 1; }"
                 : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3), "=f"(d4), "=f"(d5), "=f"(d6), "=f"(d7)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(desc) : "memory");
    asm volatile("// SM90A: wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("// SM90A: wgmma.wait_group.sync.aligned 0;" ::: "memory");
    float d[8] = {d0, d1, d2, d3, d4, d5, d6, d7};
    for (int j = 0; j < 2; j++) {
        D[r * 16 + 8 * j + 2 * t] = d[4 * j];
        D[r * 16 + 8 * j + 2 * t + 1] = d[4 * j + 1];
        D[(r + 8) * 16 + 8 * j + 2 * t] = d[4 * j + 2];
        D[(r + 8) * 16 + 8 * j + 2 * t + 1] = d[4 * j + 3];
    }
}
'''

def main():
    dev = [d for p in cl.get_platforms() for d in p.get_devices() if "NVIDIA" in p.name][0]
    ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, SRC).build()
    ptx = prg.get_info(cl.program_info.BINARIES)[0].decode()
    print("[ptx]", [l for l in ptx.splitlines() if l.startswith((".version", ".target"))])
    print("[ptx] SM90A lines:", sum("SM90A" in l for l in ptx.splitlines()))
    for l in ptx.splitlines():
        if "SM90A" in l: print("   ", l.strip()[:200])
    patched = re.sub(r"\.target\s+sm_\d+a?", ".target sm_90a", ptx)
    patched = patched.replace("// SM90A: ", "")
    try:
        prg2 = cl.Program(ctx, [dev], [patched.encode()]).build(options="-cl-nv-verbose")
        print("[build] patched PTX built:", prg2.get_build_info(dev, cl.program_build_info.LOG).strip()[-300:])
    except Exception as e:
        print("[build] FAILED:", str(e)[:2000]); return
    rng = np.random.default_rng(1)
    A = rng.integers(-4, 5, (64, 8)).astype(np.float32)
    B = rng.integers(-4, 5, (8, 16)).astype(np.float32)
    ref = A @ B
    mf = cl.mem_flags
    dA = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=A)
    dB = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=B)
    dD = cl.Buffer(ctx, mf.READ_WRITE, size=64 * 16 * 4)
    for name, lbo, sbo, koff, noff in [("LBO=k-step", 128, 256, 128, 256),
                                       ("LBO=n-step", 256, 128, 128, 256),
                                       ("LBO=k-step, n first", 256, 128, 256, 128),
                                       ("LBO=n-step, n first", 128, 256, 256, 128)]:
        out = np.full((64, 16), np.nan, np.float32)
        cl.enqueue_copy(q, dD, out)
        prg2.k(q, (128,), (128,), dA, dB, dD, np.uint32(lbo), np.uint32(sbo), np.uint32(koff), np.uint32(noff))
        cl.enqueue_copy(q, out, dD); q.finish()
        ok = np.array_equal(out, ref)
        print(f"[run] {name}: lbo={lbo} sbo={sbo} koff={koff} noff={noff}: equal={ok}",
              "" if ok else f"max diff {np.nanmax(np.abs(out - ref)):.3g} nans {np.isnan(out).sum()}")

main()

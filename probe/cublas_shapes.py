import sys, torch
sys.path.insert(0, "scripts")
from cublas_ref import bench, launched
torch.backends.cuda.matmul.allow_tf32 = False
for s in sys.argv[1].split(","):
    m, n, k = map(int, s.split("x"))
    a = torch.randn(m, k, device="cuda"); b = torch.randn(k, n, device="cuda")
    ms = bench(lambda: a @ b)
    ks = launched(lambda: a @ b)
    print(f"{s:<16} {ms*1e3:8.1f} us  " + " | ".join(f"{d['name'][:100]} grid {d['grid']} block {d['block']} regs {d['registers']} smem {d['shared']} {d['us']}us" for d in ks), flush=True)

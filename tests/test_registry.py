"""The kernel registry: parameters, constraints and geometry checked before compiling."""

import pytest

from clgemm import kernels
from clgemm.build import options


class FakeDevice:
    max_work_group_size = 1024
    max_work_item_sizes = [1024, 1024, 64]
    local_mem_size = 48 * 1024
    type = 4  # GPU


class Hopper(FakeDevice):
    local_mem_size = 227 * 1024      # static local arrays that run on the H200 (device.py)


ALL = [*kernels.GEMM.values(), *kernels.MATVEC.values(), *kernels.TRANSPOSE.values()]


def test_every_kernel_source_exists_and_defaults_are_valid():
    """Defaults fit the 48 KB of local memory OpenCL devices commonly report, except kernel
    8's: they take 96 KB, for Hopper's 227 KB; its smallest tiles fit 48 KB."""
    from clgemm.build import kernel_dir
    for k in ALL:
        assert (kernel_dir() / k.source).is_file()
        assert k.violations(k.defaults, Hopper() if k.wgmma else FakeDevice()) == [], k.key
        if k.wgmma:
            small = {p.name: min(p.space) for p in k.params}
            assert k.violations(k.defaults, FakeDevice()) != [] and k.violations(small, FakeDevice()) == []
        for p in k.params:
            assert p.default in p.space


def test_kernel_sources_declare_their_parameters():
    """Each .cl file opens with #ifndef defaults for exactly the registry's parameters."""
    import re
    from clgemm.build import kernel_dir
    for k in ALL:
        src = (kernel_dir() / k.source).read_text()
        for inc in re.findall(r'#include "(\d_\w+\.cl)"', src):   # kernel 6 builds on kernel 5
            src += (kernel_dir() / inc).read_text()
        for p in k.params:
            assert f"#ifndef {p.name}" in src, (k.source, p.name)
            # the file's own default is the registry's, so the file read alone tells the truth
            assert f"#ifndef {p.name}\n#define {p.name} {p.default}\n" in src, (k.source, p.name)


def test_device_limits_are_enforced():
    k = kernels.get("3")
    p = dict(TSM=256, TSN=256, TSK=32, WPTM=4, WPTN=4)   # 64x64 = 4096 work-items, 64 KiB
    bad = k.violations(p, FakeDevice())
    assert any("exceeds the device maximum 1024" in b for b in bad)
    assert any("local memory 65536 bytes exceeds the device's 49152" in b for b in bad)
    assert k.violations(p) == []   # without a device only the kernel's own constraints apply


def test_geometry():
    k = kernels.get("5")
    p = dict(k.defaults, TSM=64, TSN=128, WPTM=16, WPTN=4)
    assert k.geometry.local(p) == (32, 4)
    # 1000 columns -> 8 tiles of 128 along dim 0; 130 rows -> 3 tiles of 64 along dim 1
    assert k.geometry.global_size(p, 130, 1000) == (8 * 32, 3 * 4)


def test_tensor_core_geometry_and_build_option(queue):
    """Kernel 7: one warp of 32 work-items per WM x WN block of the tile, the emulation's
    scratch counted in local memory, and MMA=1 only on NVIDIA from compute capability 8.0."""
    from types import SimpleNamespace
    from clgemm import build, device
    k = kernels.get("7")
    p = dict(TSM=128, TSN=64, TSK=16, WM=64, WN=32)
    assert k.geometry.local(p) == (64, 2)                     # 2 x 2 warps
    assert k.geometry.global_size(p, 130, 100) == (2 * 64, 2 * 2)
    assert k.geometry.local_bytes(p) == 2 * 4 * (128 * 16 + 16 * 64) + 4 * 6 * 128
    assert k.violations(dict(p, TSN=32, WM=128, WN=32)) == []      # one warp
    assert "at most 8 warps per work-group" in k.violations(dict(p, TSM=256, TSN=256, WM=32, WN=32))

    def nv(major, minor, ext="cl_nv_device_attribute_query"):
        return SimpleNamespace(extensions=ext, compute_capability_major_nv=major,
                               compute_capability_minor_nv=minor)
    assert device.has_tf32_mma(nv(9, 0)) and device.has_tf32_mma(nv(8, 0))
    assert not device.has_tf32_mma(nv(7, 5)) and not device.has_tf32_mma(nv(9, 0, ext=""))
    mma = int(device.has_tf32_mma(queue.device))        # pocl: 0, emulated; the H200: 1
    assert build.device_options(queue.context, k) == (f"-DMMA={mma}",)
    assert build.device_options(queue.context, kernels.get("5")) == ()


def test_space_and_counts():
    k = kernels.get("5")
    pts = list(k.space())
    assert len(pts) == k.space_size()
    valid = [p for p in pts if not k.violations(p, FakeDevice())]
    assert 0 < len(valid) < len(pts)
    assert k.defaults in valid


def test_constraints_checked_before_compiling(queue, monkeypatch):
    import clgemm.build as build
    from clgemm.gemm import GemmPlan
    monkeypatch.setattr(build, "compile_source", lambda *a, **kw: pytest.fail("compiled"))
    with pytest.raises(ValueError, match="B-tile vectors TSK\\*TSN/WIDTH split evenly"):
        GemmPlan(queue, "5", dict(TSM=256, TSN=32, TSK=4, WPTM=16, WPTN=2, WIDTH=2, PAD=0))


def test_compiler_options_are_numbers_only():
    assert options({"TS": 16})[0] == "-DTS=16"
    with pytest.raises(ValueError):
        options({"TS": "16 -I/etc"})
    with pytest.raises(ValueError):
        options({"TS -DX": 16})


def test_lookup_by_name():
    assert kernels.get("double-buffered").key == "5"
    assert kernels.get(3).key == "3"
    assert kernels.get("local", kind="transpose").key == "local"
    assert kernels.tunable("matvec-dot") is kernels.MATVEC["matvec-dot"]
    assert kernels.tunable("double-buffered").key == "5"
    with pytest.raises(ValueError, match="unknown tunable kernel 'matvec'; valid kernels: 1 "
                                         "\\(naive\\).*8 \\(warpgroup-mma\\), matvec-sweep, matvec-dot$"):
        kernels.tunable("matvec")
    with pytest.raises(ValueError, match="unknown gemm kernel 'matvec-sweep'"):
        kernels.get("matvec-sweep")      # gemm(kernel=...), `run`: GEMM kernels only


# ------------------------------------------------------------------ device facts

import json  # noqa: E402
from types import SimpleNamespace  # noqa: E402

class FakePocl(FakeDevice):
    """What pocl 3.0's CPU device reports."""
    max_work_group_size = 4096
    max_work_item_sizes = [4096, 4096, 4096]
    local_mem_size = 512 * 1024
    type = 2  # CPU
    platform = SimpleNamespace(name="Portable Computing Language")


# kernel 4 with a 2048-work-item group: SIGSEGV on pocl 3.0 (its frame: 9.2 MiB)
POCL_CRASH = dict(TSM=256, TSN=128, TSK=32, WPTM=1, WPTN=16, WIDTH=1, PAD=0)


def test_pocl_work_group_stack_refuses_the_crashing_group(queue):
    """pocl keeps each work-item's values that live across a barrier on the stack of the
    thread running the group: a group within every reported limit can overflow it. Its
    size is a device fact, consulted by the constraints before compiling."""
    from clgemm import device
    k = kernels.get("4")
    reported = SimpleNamespace(**{a: getattr(FakePocl, a) for a in (
        "max_work_group_size", "max_work_item_sizes", "local_mem_size", "type")})
    assert k.violations(POCL_CRASH, reported) == []                # pocl's query admits it
    stack = device.work_group_stack(FakePocl())
    assert stack == device.thread_stack_bytes() * 3 // 4
    bad = k.violations(POCL_CRASH, FakePocl())
    assert len(bad) == 1 and "work-group of 2048 work-items needs about" in bad[0]
    assert f"its threads leave {stack}" in bad[0] and "ulimit -s" in bad[0]
    if device.is_pocl_cpu(queue.device):                           # the real one too
        assert any("stack on pocl's CPU device" in b for b in k.violations(POCL_CRASH, queue.device))
    for key, kern in {**kernels.GEMM, **kernels.MATVEC}.items():   # what runs by default
        assert kern.violations(kern.defaults_for(FakePocl()), FakePocl()) == [], key
    assert device.work_group_stack(FakeDevice()) is None


_CHILD = """
import ctypes, json, sys
# New threads' default stack (pocl's workers ask for no size), set before pocl starts any;
# the main thread keeps its own, so that compiling the kernel cannot overflow it.
libc = ctypes.CDLL(None)
attr = ctypes.create_string_buffer(256)                  # pthread_attr_t is 56 bytes
assert libc.pthread_attr_init(attr) == 0
assert libc.pthread_attr_setstacksize(attr, ctypes.c_size_t(int(sys.argv.pop(1)))) == 0
assert libc.pthread_setattr_default_np(attr) == 0
import numpy as np
import pyopencl as cl
from clgemm import build, device, kernels
from clgemm.gemm import gemm
q = device.queue(device.select("portable computing"))
if sys.argv[1] == "admitted":    # the largest admitted frame of each kernel, TSK <= 8
    for key in sys.argv[2:]:
        k = kernels.get(key)
        p = max((p for p in k.space() if p["TSK"] <= 8 and p.get("WIDTH", 1) == 1
                 and not k.violations(p, q.device)), key=k.geometry.stack_bytes)
        tm, tn = k.geometry.tile(p)
        c = gemm(q, np.ones((tm, 17), np.float32), np.ones((17, tn), np.float32), kernel=key,
                 params=p)
        print(key, k.geometry.local(p), bool(np.all(c == 17)), flush=True)
else:                            # a refused one, launched past the constraints
    k, p = kernels.get(sys.argv[2]), json.loads(sys.argv[3])
    prg = build.program(q.context, k, p)
    m, n, kk = *k.geometry.tile(p), 64
    mf = cl.mem_flags.READ_WRITE
    a, b, c = (cl.Buffer(q.context, mf, 4 * x) for x in (m * kk, kk * n, m * n))
    print("launching", flush=True)
    prg.gemm(q, k.geometry.global_size(p, m, n), k.geometry.local(p), np.int32(m),
             np.int32(n), np.int32(kk), np.float32(1), a, np.int32(kk), b, np.int32(n),
             np.float32(0), c, np.int32(n))
    q.finish()
    print("survived", flush=True)
"""


def test_no_admitted_group_crashes_pocl(queue, tmp_path, monkeypatch):
    """No configuration the constraints admit crashes pocl. In child processes whose new
    threads get small stacks (glibc's default thread stack, which `ulimit -s` sets at
    process start, set here by pthread_setattr_default_np so that the main thread, which
    compiles, keeps its own; small, so that the groups at the limit compile fast): with 1 MiB,
    the admitted configurations of kernels 3 and 4 with the largest estimated frames run
    and are right; with 512 KiB, kernel 2's 32 x 32 group, which the constraints refuse
    there (its frame: 620 KB), launched past them, kills the process: the limit is real."""
    import subprocess
    import sys
    from clgemm import device
    if not device.is_pocl_cpu(queue.device):
        pytest.skip("pocl's CPU device only")
    script = tmp_path / "child.py"
    script.write_text(_CHILD)

    def child(stack, *args):
        return subprocess.run([sys.executable, str(script), str(stack), *args],
                              capture_output=True, text=True, timeout=300)
    r = child(1 << 20, "admitted", "3", "4")
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr[-2000:])
    assert r.stdout.split("\n")[:2] == ["3 (32, 16) True", "4 (32, 16) True"]
    monkeypatch.setattr(device, "_stack", (1 << 19) * 3 // 4)        # the second child's fact
    assert "stack on pocl's CPU device" in kernels.get("2").violations({"TS": 32}, queue.device)[0]
    r = child(1 << 19, "refused", "2", json.dumps({"TS": 32}))
    # it launched and died there: by SIGSEGV, or, where the frame jumped past the guard
    # page into mapped memory, by what that broke (in CI once the dynamic loader: exit 127)
    assert r.stdout == "launching\n", (r.returncode, r.stdout, r.stderr[-2000:])
    assert r.returncode != 0, (r.returncode, r.stdout, r.stderr[-2000:])


def test_nvidia_local_memory_is_probed_once_and_cached(tmp_path, monkeypatch):
    """NVIDIA's query says 48 KiB, but static local arrays up to 227 KiB run on the H200:
    the limit the constraints use there is probed once per device and driver, and kept in
    the clgemm home."""
    import json
    from clgemm import device, probes

    class H200(FakeDevice):
        extensions = "cl_khr_fp64 cl_nv_device_attribute_query"
        name, driver_version = "NVIDIA H200", "580.159.04"
        compute_capability_major_nv, compute_capability_minor_nv = 9, 0
        registers_per_block_nv = 65536
    monkeypatch.setenv("CLGEMM_HOME", str(tmp_path))
    monkeypatch.setattr(device, "_local", {})
    asked = []
    monkeypatch.setattr(probes, "local_mem", lambda dev: asked.append(dev) or 232448)
    k = kernels.get("7")
    big = dict(TSM=256, TSN=128, TSK=32, WM=64, WN=64)             # 8 warps, 102 KiB
    assert k.geometry.local_bytes(big) == 104448
    assert k.violations(big, FakeDevice()) == ["local memory 104448 bytes exceeds the device's 49152"]
    assert k.violations(big, H200()) == []
    assert device.local_mem_limit(H200()) == 232448 and len(asked) == 1
    doc = json.loads((tmp_path / probes.FACTS_FILE).read_text())
    assert doc["NVIDIA H200 | 580.159.04"]["local_mem_bytes"] == 232448
    monkeypatch.setattr(device, "_local", {})                      # a new process: the file
    assert device.local_mem_limit(H200()) == 232448 and len(asked) == 1
    k5 = kernels.get("5")
    bad = k5.violations(dict(TSM=256, TSN=256, TSK=32, WPTM=16, WPTN=16, WIDTH=4, PAD=1), H200())
    assert "local memory 133120 bytes exceeds" not in " ".join(bad)   # 130 KiB fits
    assert device.local_mem_limit(FakeDevice()) == 49152 and len(asked) == 1   # not NVIDIA
    monkeypatch.undo()                 # the real probe, on a stand-in it cannot build for
    nameless = SimpleNamespace(extensions=H200.extensions, local_mem_size=49152)
    assert device.local_mem_limit(nameless) == 49152


def test_registers_of_a_build_are_a_constraint(monkeypatch):
    """Where the compiler reports registers (build.footprint, NVIDIA), a work-group whose
    work-items hold more than the device gives a group is refused, as is local memory
    beyond the limit in the build's own report."""
    class NV(FakeDevice):
        extensions = "cl_nv_device_attribute_query"
        registers_per_block_nv = 65536
        name, driver_version = "NVIDIA fake", "1"
    from clgemm import device
    dev = NV()
    monkeypatch.setattr(device, "_local", {id(dev): 49152})   # its local memory, as if probed
    k = kernels.get("1")
    p = {"TS": 32}                                         # 1024 work-items
    assert k.violations(p, dev, footprint=(64, 0)) == []   # 64 x 1024 = 65536
    bad = k.violations(p, dev, footprint=(72, 0))
    assert bad == ["72 registers a work-item (the build's report) x 1024 work-items hold "
                   "73728 registers, over the 65536 a work-group may have"]
    assert k.violations(p, dev, footprint=(64, 50000)) == [
        "local memory 50000 bytes exceeds the device's 49152"]
    assert k.violations(p, FakeDevice(), footprint=(255, 0)) == []   # no register limit known


def test_local_memory_probe_finds_the_real_limit():
    """The probe bisects up from a low guess to the largest static local array that runs;
    Oclgrind enforces its 32 KiB."""
    from clgemm import device, probes
    try:
        sim = device.select("oclgrind")
    except device.DeviceNotFound:
        pytest.skip("Oclgrind not installed")
    assert probes.local_mem(sim, low=8 * 1024, top=64 * 1024) == 32 * 1024


def test_a_probe_source_registers_beside_its_kernel(tmp_path):
    """kernels.from_source (the probes of scripts/points.py and plans.py): kernel 5 built
    from another file is found as 5-NAME with kernel 5's parameters and switches, its file
    an absolute path, and kernel 5 itself is left as it was; an unknown kernel is named."""
    probe = tmp_path / "probe.cl"
    probe.write_text("// a probe\n")
    five = kernels.get("5")
    try:
        kern = kernels.from_source("5", "probe", probe)
        assert kernels.get("5-probe") is kern
        assert kern.source == str(probe.resolve()) and kern.params == five.params
        assert kern.unaligned == five.unaligned and kern.split_k == five.split_k
        assert kernels.get("5") is five and five.source == "5_double_buffered.cl"
    finally:
        kernels.GEMM.pop("5-probe", None)
    with pytest.raises(ValueError, match="unknown gemm kernel '9'"):
        kernels.from_source("9", "probe", probe)

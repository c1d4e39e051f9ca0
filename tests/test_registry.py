"""The kernel registry: parameters, constraints and geometry checked before compiling."""

import pytest

from clgemm import kernels
from clgemm.build import options


class FakeDevice:
    max_work_group_size = 1024
    max_work_item_sizes = [1024, 1024, 64]
    local_mem_size = 48 * 1024
    type = 4  # GPU


def test_every_kernel_source_exists_and_defaults_are_valid():
    from clgemm.build import kernel_dir
    for k in list(kernels.GEMM.values()) + list(kernels.TRANSPOSE.values()):
        assert (kernel_dir() / k.source).is_file()
        assert k.violations(k.defaults, FakeDevice()) == [], k.key
        for p in k.params:
            assert p.default in p.space


def test_kernel_sources_declare_their_parameters():
    """Each .cl file opens with #ifndef defaults for exactly the registry's parameters."""
    import re
    from clgemm.build import kernel_dir
    for k in list(kernels.GEMM.values()) + list(kernels.TRANSPOSE.values()):
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
    assert k.geometry.local_size(p) == (32, 4)
    # 1000 columns -> 8 tiles of 128 along dim 0; 130 rows -> 3 tiles of 64 along dim 1
    assert k.geometry.global_size(p, 130, 1000) == (8 * 32, 3 * 4)


def test_tensor_core_geometry_and_build_option(queue):
    """Kernel 7: one warp of 32 work-items per WM x WN block of the tile, the emulation's
    scratch counted in local memory, and MMA=1 only on NVIDIA from compute capability 8.0."""
    from types import SimpleNamespace
    from clgemm import build, device
    k = kernels.get("7")
    p = dict(TSM=128, TSN=64, TSK=16, WM=64, WN=32)
    assert k.geometry.local_size(p) == (64, 2)                     # 2 x 2 warps
    assert k.geometry.global_size(p, 130, 100) == (2 * 64, 2 * 2)
    assert k.geometry.local_bytes(p) == 2 * 4 * (128 * 20 + 16 * 72) + 4 * 6 * 128
    assert k.violations(dict(p, TSN=32, WM=128, WN=32)) == []      # one warp
    assert "at most 8 warps per work-group" in k.violations(dict(p, TSM=256, TSN=256, WM=32, WN=32))

    def nv(major, minor, ext="cl_nv_device_attribute_query"):
        return SimpleNamespace(extensions=ext, compute_capability_major_nv=major,
                               compute_capability_minor_nv=minor)
    assert device.has_tf32_mma(nv(9, 0)) and device.has_tf32_mma(nv(8, 0))
    assert not device.has_tf32_mma(nv(7, 5)) and not device.has_tf32_mma(nv(9, 0, ext=""))
    assert build.device_options(queue.context, k) == ("-DMMA=0",)   # the CPU: emulated
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

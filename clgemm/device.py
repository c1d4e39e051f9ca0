"""Choosing and describing OpenCL devices."""

from __future__ import annotations

import ctypes
import glob
import os
import resource
import subprocess
import threading
from dataclasses import dataclass

import pyopencl as cl

from . import probes


class DeviceNotFound(LookupError):
    """No device matches the request; the message lists what there is."""


@dataclass(frozen=True)
class Entry:
    platform_index: int
    device_index: int
    platform: cl.Platform
    device: cl.Device

    @property
    def spec(self) -> str:
        return f"{self.platform_index}:{self.device_index}"


def entries() -> list[Entry]:
    """Every device of every platform, with its PLATFORM:DEVICE indices."""
    out = []
    try:
        platforms = cl.get_platforms()
    except cl.Error:  # the ICD loader reports "no platforms" as an error
        platforms = []
    for pi, plat in enumerate(platforms):
        try:
            devices = plat.get_devices()
        except cl.Error:
            continue
        for di, dev in enumerate(devices):
            out.append(Entry(pi, di, plat, dev))
    return out


def is_gpu(dev: cl.Device) -> bool:
    """A real GPU: Oclgrind, a simulator, reports every device type at once."""
    return bool(dev.type & cl.device_type.GPU) and "oclgrind" not in dev.platform.name.lower()


def type_name(dev: cl.Device) -> str:
    for flag, name in ((cl.device_type.GPU, "GPU"), (cl.device_type.CPU, "CPU"),
                       (cl.device_type.ACCELERATOR, "accelerator")):
        if dev.type & flag and "oclgrind" not in dev.platform.name.lower():
            return name
    return "simulator" if "oclgrind" in dev.platform.name.lower() else "other"


def _is_oclgrind(e: Entry) -> bool:
    return "oclgrind" in e.platform.name.lower()


def select(spec: str | None = None) -> cl.Device:
    """The device named by `spec` ("P:D" indices or a case-insensitive name substring).

    Without a spec: PYOPENCL_CTX if set, else the first GPU across all platforms, else the
    first CPU device (pocl). Oclgrind, a simulator, is chosen only when asked for.
    """
    if isinstance(spec, int) and not isinstance(spec, bool):
        spec = str(spec)                     # a platform index, as PYOPENCL_CTX=1 is
    elif spec is not None and not isinstance(spec, str):
        raise TypeError(f"the device spec must be a string such as '0:1' or 'H200' (or a "
                        f"platform index), not {type(spec).__name__}")
    all_ = entries()
    from_env = False
    if spec is None or not spec.strip():     # blank (an unset shell variable): no choice made
        spec = os.environ.get("PYOPENCL_CTX", "").strip() or None
        from_env = spec is not None
    if spec is None:
        real = [e for e in all_ if not _is_oclgrind(e)]
        ranked = ([e for e in real if is_gpu(e.device)] + [e for e in real if not is_gpu(e.device)]
                  + [e for e in all_ if _is_oclgrind(e)])
        if not ranked:
            raise DeviceNotFound("no OpenCL device found. " + (nvidia_icd_hint() or
                                 "Install pocl-binary-distribution for a CPU device."))
        return ranked[0].device
    try:
        return _match(spec.strip(), all_).device
    except DeviceNotFound as e:
        if from_env:       # a choice not made on the command line is named where it was made
            raise DeviceNotFound(f"PYOPENCL_CTX={spec}: {e}") from None
        raise


def _match(spec: str, all_: list[Entry]) -> Entry:
    parts = spec.split(":")
    if all(p.isascii() and p.isdigit() for p in parts) and 1 <= len(parts) <= 2:
        pi, di = int(parts[0]), int(parts[1]) if len(parts) == 2 else 0
        for e in all_:
            if (e.platform_index, e.device_index) == (pi, di):
                return e
    else:
        low = spec.lower()
        found = [e for e in all_ if low in e.device.name.lower() or low in e.platform.name.lower()]
        # the simulator only where nothing else matches; devices of one name (a machine's
        # GPUs of one kind) are alike, so the first is taken, but not one of other devices
        found = [e for e in found if not _is_oclgrind(e)] or found
        if len({(e.device.name.strip(), e.platform.name.strip()) for e in found}) > 1:
            raise DeviceNotFound(f"{spec!r} matches several devices: {_listing(found)}; give "
                                 f"more of a name, or PLATFORM:DEVICE")
        if found:
            return found[0]
    raise DeviceNotFound(f"no OpenCL device matches {spec!r}. Devices: {_listing(all_) or 'none'}")


def _listing(entries_: list[Entry]) -> str:
    return "; ".join(f"{e.spec} {e.device.name.strip()} ({e.platform.name.strip()})"
                     for e in entries_)


def queue(device: cl.Device, profiling: bool = True) -> cl.CommandQueue:
    """A queue (profiling events on unless asked otherwise) in a new context of `device`."""
    if not isinstance(device, cl.Device):
        raise TypeError(f"device_queue takes a pyopencl Device (clgemm.select_device() gives "
                        f"one), not {type(device).__name__}")
    ctx = cl.Context([device])
    props = cl.command_queue_properties.PROFILING_ENABLE if profiling else 0
    return cl.CommandQueue(ctx, properties=props)


# ------------------------------------------------------------------ description

# FP32 lanes per multiprocessor by NVIDIA compute capability (major, minor).
_NV_FP32_LANES = {(3, 0): 192, (3, 5): 192, (3, 7): 192, (5, 0): 128, (5, 2): 128, (5, 3): 128,
                  (6, 0): 64, (6, 1): 128, (6, 2): 128, (7, 0): 64, (7, 2): 64, (7, 5): 64,
                  (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128, (9, 0): 128,
                  (10, 0): 128, (12, 0): 128}


def nvidia_cc(dev: cl.Device) -> tuple[int, int] | None:
    if "cl_nv_device_attribute_query" not in dev.extensions:
        return None
    try:
        return (dev.compute_capability_major_nv, dev.compute_capability_minor_nv)
    except (cl.Error, AttributeError):
        return None


def architecture(dev: cl.Device) -> str | None:
    """What makes another device's tuned entries fit this one: NVIDIA's compute capability
    and the number of compute units, which set the registers, local memory and waves that
    the tuned parameters were chosen for (the H100 SXM and the H200 are one GH100 chip with
    132 multiprocessors; they differ in memory: the H200's entries ran kernel 5 1.06-1.39x
    the registry defaults' speed on an H100, results/h100/README.md). None where the device
    does not say (other vendors, pocl): its entries are only its own."""
    cc = nvidia_cc(dev)
    return None if cc is None else f"NVIDIA sm_{cc[0]}{cc[1]}, {dev.max_compute_units} compute units"


def peak_gflops(dev: cl.Device) -> float | None:
    """Theoretical FP32 peak: multiprocessors x FP32 lanes x 2 (FMA) x clock, where the
    lanes per multiprocessor are known (NVIDIA, by compute capability)."""
    cc = nvidia_cc(dev)
    if cc is None or cc not in _NV_FP32_LANES:
        return None
    return dev.max_compute_units * _NV_FP32_LANES[cc] * 2 * dev.max_clock_frequency / 1e3


# Per-multiprocessor limits by compute capability (CUDA programming guide, "technical
# specifications"): resident warps, resident blocks, shared memory in KiB. The register
# file is 64K 32-bit registers on all of them.
_NV_SM_LIMITS = {(7, 0): (64, 32, 96), (7, 5): (32, 16, 64), (8, 0): (64, 32, 164),
                 (8, 6): (48, 16, 100), (8, 9): (48, 24, 100), (9, 0): (64, 32, 228)}


def resident_groups(dev: cl.Device, threads: int, registers: int, local_bytes: int) -> int | None:
    """How many work-groups of a build run at once on one compute unit, from the registers
    per work-item and local memory that NVIDIA's compiler reports (build.footprint): what
    decides how many waves a launch takes. None where the limits are not known. Registers
    are allocated per warp in units of 256; each block also reserves 1 KiB of shared
    memory from compute capability 8.0 on. The H200 confirms it: 223 registers x 128
    work-items give 2 groups, 141 x 128 give 3 (docs/levers.md, launch decisions)."""
    cc = nvidia_cc(dev)
    if cc not in _NV_SM_LIMITS or threads < 1:
        return None
    max_warps, max_blocks, smem_kib = _NV_SM_LIMITS[cc]
    warps = -(-threads // 32)
    per_warp = -(-registers * 32 // 256) * 256
    reserved = 1024 if cc >= (8, 0) else 0
    by_regs = 65536 // (per_warp * warps) if registers else max_blocks
    by_local = smem_kib * 1024 // (local_bytes + reserved) if local_bytes + reserved else max_blocks
    return max(0, min(max_blocks, max_warps // warps, by_regs, by_local))


def shuffle_support(dev: cl.Device) -> str:
    """How a sub-group shuffle is done on this device (see the shuffle transpose)."""
    ext = dev.extensions.split()
    if nvidia_cc(dev) is not None or "NVIDIA" in dev.platform.name:
        return "nvidia-ptx"          # inline PTX shfl.sync.idx.b32
    if "cl_khr_subgroup_shuffle" in ext:
        return "khr"
    if "cl_intel_subgroups" in ext:
        return "intel"
    return "emulated"                # through local memory


def has_tf32_mma(dev: cl.Device) -> bool:
    """Whether kernel 7 can issue mma.sync on TF32 by inline PTX: NVIDIA from compute
    capability 8.0 (Ampere) on. Elsewhere it emulates the instruction."""
    cc = nvidia_cc(dev)
    return cc is not None and cc >= (8, 0)


def has_wgmma(dev: cl.Device) -> bool:
    """Whether kernel 8 can issue wgmma (sm_90a PTX): NVIDIA compute capability 9.0, the
    Hopper GPUs; later ones have no wgmma. Elsewhere it emulates the instruction."""
    return nvidia_cc(dev) == (9, 0)


# ------------------------------------------------------------------ launch limits
# Limits a launch depends on that the device query misreports; Kernel.violations consults
# them. Duck-typed devices (the tests' fakes) without the attributes a fact needs get the
# query's own numbers.

def is_pocl_cpu(dev) -> bool:
    """pocl's CPU device (pthread), which runs work-groups on a pool of host threads."""
    platform = getattr(dev, "platform", None)
    name = getattr(platform, "name", "") if platform is not None else ""
    return "portable computing language" in name.lower() and bool(getattr(dev, "type", 0) & 2)


def thread_stack_bytes() -> int:
    """The stack a new thread gets when its creator asks for no size, as pocl 3.0 does for
    its worker threads: glibc takes it from the soft `ulimit -s` when the process starts
    (8 MiB by default, 2 MiB when unlimited). Without glibc's pthread_getattr_default_np,
    the soft limit itself, or 512 KiB where that is unlimited."""
    try:
        libc = ctypes.CDLL(None)
        attr = ctypes.create_string_buffer(256)            # pthread_attr_t is 56 bytes
        if libc.pthread_getattr_default_np(attr) == 0:
            size = ctypes.c_size_t()
            ok = libc.pthread_attr_getstacksize(attr, ctypes.byref(size)) == 0
            libc.pthread_attr_destroy(attr)
            if ok and size.value:
                return int(size.value)
    except (OSError, AttributeError):
        pass
    soft, _ = resource.getrlimit(resource.RLIMIT_STACK)
    return 512 * 1024 if soft == resource.RLIM_INFINITY or soft <= 0 else int(soft)


def work_group_stack(dev) -> int | None:
    """Bytes of stack one work-group may take, where that is a limit of its own: on pocl's
    CPU device; None elsewhere.

    pocl runs a work-group as one function call on one of its worker threads, and keeps
    each work-item's values that live across a barrier in arrays on that thread's stack
    ("context arrays", one element per work-item). A group whose arrays outgrow the stack
    dies with SIGSEGV and takes the caller with it, below the work-group size the device
    reports (4096 with pocl 3.0): kernel 4 with 256 x 128 tiles of 1 x 16 work-items (2048
    work-items) needed a 9.2 MiB frame where the threads had 8 MiB, and ran with 12 MiB
    (`ulimit -s`). pocl 3.0 creates its threads with the default stack size
    (thread_stack_bytes); 3/4 of it is left to the group, the margin later pocl versions
    keep when they check this themselves."""
    ptr = getattr(dev, "int_ptr", None)      # real devices: asked once (the tuner asks for
    pocl = _pocl.get(ptr) if ptr is not None else None          # every point of a space)
    if pocl is None:
        pocl = is_pocl_cpu(dev)
        if ptr is not None:
            _pocl[ptr] = pocl
    if not pocl:
        return None
    global _stack
    if _stack is None:
        _stack = thread_stack_bytes() * 3 // 4
    return _stack


_stack: int | None = None
_pocl: dict[int, bool] = {}


def local_mem_limit(dev) -> int:
    """Local memory one work-group may use: CL_DEVICE_LOCAL_MEM_SIZE, except on NVIDIA,
    whose query says 48 KiB while static __local arrays up to the multiprocessor's opt-in
    maximum compile and run (227 KiB on the H200, driver 580): there, the largest size
    that probes.local_mem found to run, probed once per device and driver and kept in the
    clgemm home (probes.FACTS_FILE)."""
    ptr = getattr(dev, "int_ptr", None)      # real devices: asked once
    key = id(dev) if ptr is None else ptr
    got = _local.get(key)
    if got is not None:
        return got
    got = int(dev.local_mem_size)
    if "cl_nv_device_attribute_query" in getattr(dev, "extensions", ""):
        try:
            with _facts_lock:
                got = max(got, probes.recorded(dev, "local_mem_bytes", probes.local_mem))
        except (cl.Error, AttributeError, TypeError, ValueError):
            pass                              # nothing to probe with: the query's number
    if ptr is not None:                       # a stand-in's id may be reused: not kept
        _local[key] = got
    return got


def registers_per_group(dev) -> int | None:
    """32-bit registers one work-group may hold, where the device says (NVIDIA:
    CL_DEVICE_REGISTERS_PER_BLOCK_NV); None elsewhere."""
    if "cl_nv_device_attribute_query" not in getattr(dev, "extensions", ""):
        return None
    try:
        return int(dev.registers_per_block_nv)
    except (cl.Error, AttributeError, TypeError, ValueError):
        return 65536 if nvidia_cc(dev) is not None else None


def group_registers(per_item: int, items: int) -> int:
    """Registers a work-group of `items` holds at `per_item` each: NVIDIA allocates them per
    warp of 32, in units of 256 (as resident_groups counts them)."""
    return -(-items // 32) * (-(-per_item * 32 // 256) * 256)


_local: dict[int, int] = {}
_facts_lock = threading.Lock()


def launch_violations(device, lx: int, ly: int, local_bytes: int, stack_frame: int,
                      footprint: tuple[int, int] | None = None) -> list[str]:
    """What a work-group of lx x ly work-items needing `local_bytes` of local memory (and,
    on pocl, `stack_frame` bytes of stack) breaks among the device's limits: the work-group
    size and its extent along each dimension, local memory (on NVIDIA the probed limit,
    local_mem_limit), pocl's work-group stack (work_group_stack), and, with a build's
    `footprint` (registers per work-item, local bytes: build.footprint, NVIDIA), its
    registers and local memory. Kernel.violations asks it for each parameter point."""
    bad = []
    items = lx * ly
    if items > device.max_work_group_size:
        bad.append(f"work-group {lx}x{ly}={items} work-items exceeds the device maximum "
                   f"{device.max_work_group_size}")
    dims = device.max_work_item_sizes
    if lx > dims[0] or ly > dims[1]:
        bad.append(f"work-group {lx}x{ly} exceeds the device's per-dimension limits "
                   f"{dims[0]}x{dims[1]}")
    limit = local_mem_limit(device)
    probed = "" if limit == device.local_mem_size else \
        f" (probed: static local arrays of up to {limit} bytes run; the query says " \
        f"{device.local_mem_size})"
    need = max(local_bytes, footprint[1]) if footprint is not None else local_bytes
    if need > limit:
        bad.append(f"local memory {need} bytes exceeds the device's {limit}{probed}")
    stack = work_group_stack(device)
    if stack is not None and not bad and stack_frame > stack:
        bad.append(f"work-group of {items} work-items needs about {stack_frame} bytes of "
                   f"stack on pocl's CPU device, which keeps each work-item's values "
                   f"that live across a barrier on the stack of the thread running "
                   f"the group; its threads leave {stack} (3/4 of the thread stack "
                   f"size, which `ulimit -s` sets when the process starts)")
    registers = registers_per_group(device)
    if footprint is not None and registers is not None:
        held = group_registers(footprint[0], items)
        if held > registers:
            bad.append(f"{footprint[0]} registers a work-item (the build's report) x "
                       f"{items} work-items hold {held} registers, over the {registers} "
                       f"a work-group may have")
    return bad


def describe(dev: cl.Device) -> dict:
    cc = nvidia_cc(dev)
    peak = peak_gflops(dev)
    return {
        "name": dev.name.strip(),
        "platform": dev.platform.name.strip(),
        "vendor": dev.vendor.strip(),
        "driver": dev.driver_version.strip(),
        "type": type_name(dev),
        "opencl": dev.version.strip(),
        "compute_units": dev.max_compute_units,
        "max_clock_mhz": dev.max_clock_frequency,
        "global_mem_bytes": dev.global_mem_size,
        "local_mem_bytes": dev.local_mem_size,
        "max_alloc_bytes": dev.max_mem_alloc_size,
        "max_work_group_size": dev.max_work_group_size,
        "fp64": bool(dev.double_fp_config) if hasattr(dev, "double_fp_config") else False,
        "compute_capability": f"{cc[0]}.{cc[1]}" if cc else None,
        "shuffle": shuffle_support(dev),
        "tf32_mma": has_tf32_mma(dev),
        "wgmma": has_wgmma(dev),
        "local_mem_usable_bytes": local_mem_limit(dev),
        "work_group_stack_bytes": work_group_stack(dev),
        "fp32_peak_gflops": round(peak, 1) if peak else None,
    }


def nvidia_icd_hint() -> str | None:
    """If NVIDIA's OpenCL driver is installed but not registered with the ICD loader (common
    in containers), say how to register it."""
    if any(is_gpu(e.device) for e in entries()):
        return None
    lib = _find_nvidia_opencl()
    if lib is None:
        return None
    vendors = os.environ.get("OCL_ICD_VENDORS", "/etc/OpenCL/vendors")
    registered = any("nvidia" in open(f, errors="replace").read().lower()
                     for f in glob.glob(os.path.join(vendors, "*.icd")) if os.path.isfile(f))
    if registered:
        return None
    return (f"NVIDIA's OpenCL driver is installed ({lib}) but not registered with the ICD loader. "
            f"Register it with:  echo {lib} > /etc/OpenCL/vendors/nvidia.icd   "
            f"(or, without root:  mkdir -p ~/icd && echo {lib} > ~/icd/nvidia.icd && "
            f"export OCL_ICD_VENDORS=~/icd)")


def _find_nvidia_opencl() -> str | None:
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    for line in out.splitlines():
        if "libnvidia-opencl.so.1" in line and "=>" in line:
            return line.split("=>")[-1].strip()
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/nvidia/lib64", "/usr/lib"):
        p = os.path.join(d, "libnvidia-opencl.so.1")
        if os.path.exists(p):
            return p
    return None

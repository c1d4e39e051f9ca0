"""Compiling kernels and caching the programs."""

from __future__ import annotations

import re
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pyopencl as cl

from .device import has_tf32_mma, has_wgmma, nvidia_cc, shuffle_support
from .kernels import Kernel


class BuildError(RuntimeError):
    """The OpenCL compiler rejected a kernel; the message carries its log."""


def kernel_dir() -> Path:
    """The .cl sources: inside the installed package (wheel), else the checkout's kernels/."""
    here = Path(__file__).resolve().parent
    for d in (here / "cl", here.parent / "kernels"):
        if (d / "common.cl").is_file():
            return d
    raise FileNotFoundError(f"clgemm's OpenCL sources were not found in {here / 'cl'} "
                            f"or {here.parent / 'kernels'}; the installation is incomplete")


def options(params: Mapping[str, int], extra: tuple[str, ...] = ()) -> list[str]:
    """-D NAME=VALUE for each parameter. Values are re-checked as integers so nothing but
    numbers can reach the compiler's command line."""
    opts = []
    for name, value in params.items():
        if not name.isidentifier() or isinstance(value, bool) or int(value) != value:
            raise ValueError(f"refusing compiler option for parameter {name!r}={value!r}")
        opts.append(f"-D{name}={int(value)}")
    return opts + [f"-I{kernel_dir()}"] + list(extra)


_cache: dict[tuple, cl.Program] = {}
# the kernel-object pool, and making and binding a kernel; re-entrant, since a Bound that
# the garbage collector frees while a kernel is made (it allocates) gives its kernel
# object back (_give_back) on the same thread
_lock = threading.RLock()
_build_lock = threading.RLock()     # compiling


_SHUFFLE_CODES = {"emulated": 0, "nvidia-ptx": 1, "khr": 2, "intel": 3}


def device_options(context: cl.Context, kernel: Kernel) -> tuple[str, ...]:
    """Options that follow from the device rather than the parameters: the shuffle mechanism
    and whether the tensor-core instruction exists."""
    dev = context.devices[0]
    opts = ()
    if kernel.shuffle:
        opts += (f"-DSHUFFLE={_SHUFFLE_CODES[shuffle_support(dev)]}",)
    if kernel.mma:
        opts += (f"-DMMA={int(has_tf32_mma(dev))}",)
    if kernel.wgmma:
        opts += (f"-DWGMMA={int(has_wgmma(dev))}",)
    return opts


SM90A = "// SM90A: "


def sm90a_ptx(ptx: str) -> str:
    """A build's PTX with its sm_90a instructions made real. NVIDIA's OpenCL compiles for
    sm_90, whose PTX has no wgmma; kernel 8 writes each such instruction as an inline-asm
    comment '// SM90A: ...', whose operands the compiler has filled in, and the driver
    builds the PTX once its target is sm_90a (H200, driver 580.159.04, 2026-12-04)."""
    ptx = ptx.rstrip("\0")
    if SM90A not in ptx:
        raise BuildError("no '// SM90A: ' instructions in the PTX to make real")
    ptx, targets = re.subn(r"^(\s*\.target\s+)sm_90\b", r"\1sm_90a", ptx, flags=re.M)
    if targets != 1:
        raise BuildError("the PTX does not target sm_90 (one '.target sm_90' line expected)")
    return ptx.replace(SM90A, "")


def program(context: cl.Context, kernel: Kernel, params: Mapping[str, int],
            extra: tuple[str, ...] = ()) -> cl.Program:
    """The built program for (context, kernel, params), compiled once per process."""
    extra = device_options(context, kernel) + tuple(extra)
    key = (context.int_ptr, kernel.key, kernel.kind, tuple(sorted(params.items())), extra)
    return _cached(key, lambda: compile_source(context, kernel, params, extra))


def helper(context: cl.Context, source: str, params: Mapping[str, int]) -> cl.Program:
    """A helper kernel outside the registry (no tuning, fixed launch shape: copy_rows.cl),
    compiled once per process."""
    return _cached((context.int_ptr, "helper", source, tuple(sorted(params.items()))),
                   lambda: _compile(context, source, params, (), source))


def _cached(key: tuple, make: Callable[[], cl.Program]) -> cl.Program:
    # One build at a time in this process, and each program built once: on the H200
    # (driver 580.159.04, 2026-12-03) gemm() from 4 threads at once, each planning new
    # shapes, crashed the process in 8 of 9 runs while builds, kernel creation and
    # argument setting overlapped (tests/test_gemm_api.py, test_threads_*)
    with _build_lock:
        prg = _cache.get(key)
        if prg is None:
            prg = _cache[key] = make()
            with _lock:
                _live.add(prg.int_ptr)
    return prg


def forget(context_ptr: int) -> None:
    """Drop the programs built for a context (by its int_ptr) and their idle kernel
    objects (cache.release)."""
    with _build_lock:
        gone = {_cache.pop(k).int_ptr for k in [k for k in _cache if k[0] == context_ptr]}
    with _lock:
        _live.difference_update(gone)
        for key in [k for k in _idle if k[0] in gone]:
            del _idle[key]


def compile_source(context: cl.Context, kernel: Kernel, params: Mapping[str, int],
                   extra: tuple[str, ...] = ()) -> cl.Program:
    return _compile(context, kernel.source, params, extra, f"kernel {kernel.key} ({kernel.name})")


def _compile(context: cl.Context, source: str, params: Mapping[str, int],
             extra: tuple[str, ...], what: str, tail: str = "") -> cl.Program:
    try:
        with _build_lock:
            prg = cl.Program(context, (kernel_dir() / source).read_text() + tail).build(
                options=options(params, extra))
            if "-DWGMMA=1" in extra:   # kernel 8 on a Hopper GPU: build its sm_90a PTX
                dev = context.devices[0]
                ptx = sm90a_ptx(prg.get_info(cl.program_info.BINARIES)[0].decode())
                prg = cl.Program(context, [dev], [ptx.encode()]).build(
                    options=[o for o in extra if o.startswith("-cl-nv-")])
            return prg
    except cl.Error as e:  # the message carries the build log
        raise BuildError(f"{what} failed to compile with {dict(params)}: {e}") from None


def footprint(context: cl.Context, kernel: Kernel, params: Mapping[str, int],
              extra: tuple[str, ...] = (), entry: str = "gemm") -> tuple[int, int] | None:
    """(registers per work-item, local bytes per work-group) of `entry` in this build, as
    NVIDIA's compiler reports them (-cl-nv-verbose); None elsewhere, since OpenCL has no
    query for registers. They decide how many work-groups share a compute unit
    (device.resident_groups)."""
    dev = context.devices[0]
    if nvidia_cc(dev) is None:
        return None
    # The driver prints ptxas's report only when it compiles the PTX, not when its compute
    # cache already holds the binary (a second build of the same program logs nothing), so
    # an empty kernel of a name never used before makes this program's PTX new.
    tail = f"\n__kernel void clgemm_footprint_{time.time_ns()}(void) {{}}\n"
    opts = device_options(context, kernel) + tuple(extra) + ("-cl-nv-verbose",)
    prg = _compile(context, kernel.source, params, opts, f"kernel {kernel.key} ({kernel.name})", tail)
    log = prg.get_build_info(dev, cl.program_build_info.LOG)
    used = r"Used (\d+) registers([^\n]*)"
    found = re.search(rf"entry function '{re.escape(entry)}'.*?{used}", log, re.S)
    if not found and len(re.findall(used, log)) == 1:   # no entry names: a lone count
        found = re.search(used, log)
    if not found:
        return None
    smem = re.search(r"(\d+) bytes smem", found.group(2))
    return int(found.group(1)), int(smem.group(1)) if smem else kernel.geometry.local_bytes(params)


class Bound:
    """A kernel object with its arguments set, as a call that only enqueues it: pyopencl's
    kernel(...) sets every argument again on each call, 87-128 us of host time a launch on
    the H200 against 13-17 us bound. `args` holds the buffers among the arguments alive (a
    kernel argument does not); `set` changes one argument, which is how a cached layout
    points the launch at the caller's next buffers. The kernel object comes from a pool and
    goes back to it when the Bound is dropped: creating one costs ~150 us in pyopencl (it
    fetches its argument setter from a disk cache)."""

    __slots__ = ("queue", "knl", "global_size", "local_size", "args", "__weakref__")

    def __init__(self, queue: cl.CommandQueue, knl: cl.Kernel, global_size: tuple,
                 local_size: tuple, args: list):
        self.queue, self.knl, self.args = queue, knl, args
        self.global_size, self.local_size = global_size, local_size

    def __call__(self, wait_for: list | None = None) -> cl.Event:
        return cl.enqueue_nd_range_kernel(self.queue, self.knl, self.global_size,
                                          self.local_size, wait_for=wait_for)

    def set(self, index: int, value: object) -> None:
        set_arg(self.knl, index, value)
        self.args[index] = value


def _scalar_setter():
    # pyopencl's Kernel.set_arg takes ~10 us of host time for a numpy scalar (its generic
    # path), its raw-bytes setter ~1.3 us on the same argument (2026-12-04, pyopencl
    # 2026.1): a cached call that sets one per launch (an epoch, an offset) feels that
    if hasattr(cl.Kernel, "_set_arg_buf"):
        return lambda knl, index, value: knl._set_arg_buf(index, memoryview(value))
    return lambda knl, index, value: knl.set_arg(index, value)


set_scalar: Callable[[cl.Kernel, int, np.generic], None] = _scalar_setter()
"""set_scalar(knl, index, value): a numpy scalar (np.int32, np.float32) as argument
`index` of `knl`, by the fastest setter this pyopencl has."""


def set_arg(knl: cl.Kernel, index: int, value: object) -> None:
    """Argument `index` of `knl`: a numpy scalar by set_scalar, anything else (a buffer,
    None) by Kernel.set_arg. Kernel.set_args took 57 us for gemm's 11 arguments on pocl's
    host, these 6 (2026-12-07)."""
    if isinstance(value, np.generic):
        set_scalar(knl, index, value)
    else:
        knl.set_arg(index, value)


class BoundCopy:
    """A flat device copy as a call that only enqueues it; args are [bytes, src, dst]."""

    __slots__ = ("queue", "args")

    def __init__(self, queue: cl.CommandQueue, args: list):
        self.queue, self.args = queue, args

    def __call__(self, wait_for: list | None = None) -> cl.Event:
        nbytes, src, dst = self.args
        return cl.enqueue_copy(self.queue, dst, src, byte_count=nbytes, wait_for=wait_for)

    def set(self, index: int, value: object) -> None:
        self.args[index] = value


def bind(queue: cl.CommandQueue, program: cl.Program, name: str, global_size: tuple,
         local_size: tuple, args: Sequence) -> Bound:
    """`name` of `program` with `args` set once, as a Bound call."""
    key = (program.int_ptr, name)
    with _lock:
        idle = _idle.get(key)
        knl = idle.pop() if idle else None
        if knl is None:   # made under the lock: pyopencl sets up its argument setter then
            knl = cl.Kernel(program, name)
        for index, value in enumerate(args):
            set_arg(knl, index, value)
    bound = Bound(queue, knl, tuple(global_size), tuple(local_size), list(args))
    # a kernel object captures its arguments when enqueued, so once nothing can enqueue
    # it again it may be handed out with other arguments
    weakref.finalize(bound, _give_back, key, knl).atexit = False
    return bound


_idle: dict[tuple, list[cl.Kernel]] = {}   # kernel objects no bound call holds
_live: set[int] = set()     # handles of the programs in _cache (not forgotten)


def _give_back(key: tuple, knl: cl.Kernel) -> None:
    # the pooled object holds its program, so key's program handle is not reused meanwhile;
    # one of a forgotten program (forget) is dropped: a Plan that outlived release() gave
    # its kernels back here, each holding its program and context (1.8 MB a context)
    with _lock:
        if key[0] in _live:
            _idle.setdefault(key, []).append(knl)


def cache_size() -> int:
    return len(_cache)

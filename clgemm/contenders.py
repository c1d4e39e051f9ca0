"""The contenders `clgemm bench` times, each a whole call as users make it, and what they
share: one shape's operands with their float64 reference on sampled rows (Problem), the
check of an output against it, and device spans around a call (markers for OpenCL, CUDA
events for cuBLAS). clgemm as `gemm(queue, a, b)`, CLBlast through libclblast's
CLBlastSgemm on device buffers, cuBLAS as torch's `a @ b`, and a device copy of the same
bytes for scale."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from . import operands, verify
from .cache import memory_pool
from .gemm import gemm
from .plan import Plan


class Skipped(Exception):
    """A contender that cannot run here; the message says why."""


class OpenCLSpan:
    """Brackets a call with markers; their profiling timestamps give its device span."""

    def __init__(self, queue: cl.CommandQueue):
        self.queue = queue

    def begin(self) -> None:
        self.start = cl.enqueue_marker(self.queue)

    def end(self) -> float | None:
        stop = cl.enqueue_marker(self.queue)
        self.queue.finish()
        try:
            ms = (stop.profile.end - self.start.profile.end) * 1e-6
        except cl.Error:          # no profiling on markers here: host time only
            return None
        return ms if ms > 0 else None


class CudaSpan:
    """The same for cuBLAS: CUDA events recorded on the stream before and after the call."""

    def __init__(self, torch):
        self.torch = torch

    def begin(self) -> None:
        self.start = self.torch.cuda.Event(enable_timing=True)
        self.stop = self.torch.cuda.Event(enable_timing=True)
        self.start.record()

    def end(self) -> float | None:
        self.stop.record()
        self.torch.cuda.synchronize()
        return self.start.elapsed_time(self.stop)


class Problem:
    """One shape's inputs, their float64 reference on sampled rows, on host and device."""

    def __init__(self, queue: cl.CommandQueue, m: int, n: int, k: int, rng: np.random.Generator):
        self.queue, self.shape = queue, (m, n, k)
        # whole calls run on a queue made as users make one, without profiling (it costs
        # NVIDIA's driver host time on every command); device spans on `queue`
        self.plain = cl.CommandQueue(queue.context, queue.device)
        self.a, self.b = verify.random_matrix(rng, m, k), verify.random_matrix(rng, k, n)
        # device-resident, as every OpenCL contender takes them: what a contender does to
        # its inputs on the device (padding, transposes) is then inside its timed calls
        self.dev_a, self.dev_b = cla.to_device(queue, self.a), cla.to_device(queue, self.b)
        self.rows = verify.sample_rows(rng, m, 62)
        self.a_rows = self.a[self.rows]
        self.ref = verify.reference(self.a_rows, self.b)
        self.bound = verify.allowed(k, self.a_rows, self.b)    # once, for every contender

    def check(self, rows_out: np.ndarray) -> tuple[float, bool]:
        """(relative error, whether it passes: verify.passes) of the sampled rows."""
        return (verify.rel_error(rows_out, self.ref),
                verify.passes(rows_out, self.ref, self.shape[2], self.a_rows, self.b,
                              bound=self.bound))


@dataclass
class Contender:
    """One library call to time: `call` makes it on the plain queue (its result may be
    dropped), `sync` waits for the device; `span_call` makes it on the profiling queue,
    which `span` brackets for device timing; `before` runs ahead of each round (CLBlast
    re-applies its parameters)."""
    name: str
    call: Callable[[], object]
    sync: Callable[[], None]
    span_call: Callable[[], object]
    span: object
    rel_error: float | None = None
    info: dict = field(default_factory=dict)
    before: Callable[[], None] = lambda: None
    verified: bool = False


def clgemm_contender(p: Problem, kernel: str | None) -> Contender:
    """gemm(queue, a, b) as a user calls it: device Arrays in, a fresh Array out."""
    q = p.queue
    m, n, k = p.shape
    try:
        plan = Plan(q, m, n, k, kernel=kernel)      # the same choice gemm() makes
        # poison: a NaN-filled block of the output's size goes back to the pool just
        # before the checked call, which takes it for its output
        junk = cla.empty(q, (m, n), np.float32, allocator=memory_pool(q))
        junk.fill(np.float32(np.nan))
        q.finish()
        del junk
        out = gemm(q, p.dev_a, p.dev_b, kernel=kernel)
    except ValueError as e:   # refused as planned: a kernel this device cannot run (a limit),
        raise Skipped(str(e)) from None   # a matrix-vector kernel named where its form is not
    err, ok = p.check(out.get()[p.rows])
    del out
    return Contender("clgemm" if kernel is None else f"clgemm-{kernel}",
                     lambda: gemm(p.plain, p.dev_a, p.dev_b, kernel=kernel), p.plain.finish,
                     lambda: gemm(q, p.dev_a, p.dev_b, kernel=kernel), OpenCLSpan(q),
                     err, plan.describe(), verified=ok)

class CLBlast:
    """libclblast through ctypes, row-major SGEMM on pyopencl buffers."""

    def __init__(self, queue: cl.CommandQueue, params: dict | None = None, label: str = "clblast"):
        path = os.environ.get("CLGEMM_CLBLAST") or ctypes.util.find_library("clblast") or "libclblast.so.1"
        try:
            self.lib = ctypes.CDLL(path)
        except OSError as e:
            raise Skipped(f"CLBlast not installed ({e})") from None
        self.queue, self.label, self.params = queue, label, params
        missing = [name for name in ("CLBlastSgemm", "CLBlastClearCache",
                                     "CLBlastOverrideParameters") if not hasattr(self.lib, name)]
        if missing:
            raise Skipped(f"{path} is not CLBlast 1.x: it has no {', '.join(missing)}")
        f = self.lib.CLBlastSgemm
        size, ptr = ctypes.c_size_t, ctypes.c_void_p
        f.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, size, size, size, ctypes.c_float,
                      ptr, size, size, ptr, size, size, ctypes.c_float, ptr, size, size,
                      ctypes.POINTER(ptr), ctypes.POINTER(ptr)]
        f.restype = ctypes.c_int
        self.apply()

    def apply(self) -> None:
        """Overrides are per-device state in CLBlast: drop any earlier set (clearing its
        caches), then apply this contender's own, if any."""
        self.lib.CLBlastClearCache()
        if self.params:
            self.override(self.params)

    def override(self, params: dict) -> None:
        """Apply Xgemm parameters (e.g. from CLBlast's own tuner) for this device."""
        names = (ctypes.c_char_p * len(params))(*[k.encode() for k in params])
        values = (ctypes.c_size_t * len(params))(*[int(v) for v in params.values()])
        f = self.lib.CLBlastOverrideParameters
        f.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t,
                      ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_size_t)]
        status = f(self.queue.device.int_ptr, b"Xgemm", 32, len(params), names, values)
        if status != 0:
            raise Skipped(f"CLBlastOverrideParameters refused the parameters (status {status})")

    def sgemm(self, m, n, k, a: cl.Buffer, b: cl.Buffer, c: cl.Buffer,
              queue: cl.CommandQueue | None = None) -> None:
        qp = ctypes.c_void_p((queue or self.queue).int_ptr)
        ev = ctypes.c_void_p()
        status = self.lib.CLBlastSgemm(101, 111, 111, m, n, k, 1.0, a.int_ptr, 0, k, b.int_ptr, 0, n,
                                       0.0, c.int_ptr, 0, n, ctypes.byref(qp), ctypes.byref(ev))
        if status != 0:
            raise Skipped(f"CLBlastSgemm returned status {status}")
        if ev.value:
            cl.Event.from_int_ptr(ev.value, retain=False)   # released when collected

    def contender(self, p: Problem) -> Contender:
        self.apply()
        q = p.queue
        m, n, k = p.shape
        am, bm = operands.raw(q, p.dev_a, 1), operands.raw(q, p.dev_b, 1)
        cm = operands.poison(q, operands.empty(q, m, n, n))
        self.sgemm(m, n, k, am.buf, bm.buf, cm.buf)
        q.finish()
        err, ok = p.check(operands.rows_to_host(q, cm, p.rows))
        return Contender(self.label, lambda: self.sgemm(m, n, k, am.buf, bm.buf, cm.buf, p.plain),
                         p.plain.finish, lambda: self.sgemm(m, n, k, am.buf, bm.buf, cm.buf),
                         OpenCLSpan(q), err, before=self.apply, verified=ok)


def cublas_contender(p: Problem) -> Contender:
    """torch's a @ b with TF32 off: a fresh output each call, from torch's own pool."""
    try:
        import torch
    except ImportError:
        raise Skipped("torch is not installed (cuBLAS is reached through torch)") from None
    if not torch.cuda.is_available():
        raise Skipped("torch sees no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = False
    x, y = torch.from_numpy(p.a).cuda(), torch.from_numpy(p.b).cuda()
    out = x @ y
    err, ok = p.check(out[torch.from_numpy(p.rows).cuda()].cpu().numpy())
    del out
    return Contender("cublas", lambda: x @ y, torch.cuda.synchronize, lambda: x @ y,
                     CudaSpan(torch), err, {"params": {"tf32": False}}, verified=ok)


def copy_contender(p: Problem) -> Contender:
    """A device copy of the bytes a GEMM must move at least (A, B read; C written)."""
    q = p.queue
    m, n, k = p.shape
    nbytes = 4 * (m * k + k * n + m * n)
    src = cl.Buffer(q.context, cl.mem_flags.READ_WRITE, nbytes)
    dst = cl.Buffer(q.context, cl.mem_flags.READ_WRITE, nbytes)
    cl.enqueue_fill_buffer(q, src, np.float32(1.5), 0, nbytes)
    return Contender("copy", lambda: cl.enqueue_copy(p.plain, dst, src, byte_count=nbytes),
                     p.plain.finish, lambda: cl.enqueue_copy(q, dst, src, byte_count=nbytes),
                     OpenCLSpan(q), info={"bytes": 2 * nbytes})

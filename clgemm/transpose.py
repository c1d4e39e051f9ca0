"""Out-of-place matrix transposes on the device, as a library call and for gemm()."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from . import build, cache, kernels, operands
from .operands import F32, Matrix


class TransposePlan:
    """A transpose kernel compiled and checked for one device, ready to launch."""

    def __init__(self, queue: cl.CommandQueue, kernel: str | None = None,
                 params: Mapping[str, object] | None = None):
        operands.check_queue(queue)
        self.queue = queue
        self.kernel = kernels.get(kernels.DEFAULT_TRANSPOSE if kernel is None else kernel,
                                  kind="transpose")
        self.params = self.kernel.resolve(params, base=self.kernel.defaults_for(queue.device))
        self.kernel.check(self.params, queue.device)
        self._program = build.program(queue.context, self.kernel, self.params)
        self.local = self.kernel.geometry.local(self.params)

    def bind(self, src: Matrix, dst: Matrix) -> build.Bound:
        """dst[:src.cols, :src.rows] = src.T, as a call that enqueues it (build.bind)."""
        g = self.kernel.geometry.global_size(self.params, src.rows, src.cols)
        return build.bind(self.queue, self._program, "transpose", g, self.local,
                          (np.int32(src.rows), np.int32(src.cols), src.buf, np.int32(src.ld),
                           dst.buf, np.int32(dst.ld)))

    def launch(self, src: Matrix, dst: Matrix) -> cl.Event:
        return self.bind(src, dst)()

    def transposed(self, src: Matrix, align: int = 1) -> Matrix:
        """A new matrix holding src.T, its leading dimension a multiple of `align`."""
        dst = operands.zeros(self.queue, src.cols, src.rows, operands.rounded(src.rows, align))
        self.launch(src, dst)
        return dst


def transpose(queue: cl.CommandQueue, a, *, kernel: str | None = None,
              params: Mapping[str, object] | None = None):
    """a.T as a new C-ordered matrix (numpy in, numpy out; Array in, Array out); an empty
    one for an empty a, as numpy gives. A device a may be a block of a larger matrix, as
    gemm() takes them (strides (4*ld, 4) or (4, 4*ld))."""
    operands.check_queue(queue)
    operands.check(a, "a", queue, empty=True, views=True)
    plan = TransposePlan(queue, kernel, params)
    if 0 in a.shape:
        shape = a.shape[::-1]
        return cla.empty(queue, shape, F32) if isinstance(a, cla.Array) else np.empty(shape, F32)
    operands.wait_for_arrays(queue, a)
    operands.check_fits(queue.device, [a.shape, a.shape])
    if isinstance(a, cla.Array) and (a.offset or not a.flags.forc):
        # a block: its memory as a row-major matrix ld apart in a sub-buffer, whose origin
        # the transpose kernel cannot start past, so a block off it is copied out first
        view = operands.device_view(a, "a", operands.base_align(queue.device))
        src, transposed = view.mem, view.transposed
        own = src.offset != 0
        if own:
            src = operands.dense(queue, src)
    else:
        src, transposed = operands.raw(queue, a, 1), operands.is_transposed(a)
        own = src.buf is not a.base_data if isinstance(a, cla.Array) else True
    # a.T when the memory holds a.T row-major already (a Fortran-ordered a) is that memory
    dst = src if transposed else plan.transposed(src)
    if isinstance(a, cla.Array):
        if dst is src and not own:       # never alias the caller's memory
            dst = operands.dense(queue, dst)
        out = operands.to_array(queue, dst, transposed=False)
        operands.mark_written(queue, out)
        cache.hold_elsewhere(out.events[-1], queue, (a,))
        return out
    return operands.to_host(queue, dst)

"""The Arrays a call hands back: pyopencl Arrays over the call's own output buffer, made
with as little host time as pyopencl allows, since a cached call's host work before and
after its launch is what the caller waits for beyond the kernel."""

from __future__ import annotations

import pyopencl.array as cla

from .operands import F32


def _fast_array(queue, shape, strides, buf, allocator, ev) -> cla.Array:
    # pyopencl's own fast constructor, which its Array operations use: the public one
    # costs ~40 us of host time (it validates the shape with numpy), as much as the rest
    # of a cached gemm() call
    return cla.Array(None, shape, F32, allocator=allocator, data=buf, strides=strides,
                     events=[ev], _fast=True, _size=shape[0] * shape[1],
                     _context=queue.context, _queue=queue)


def _slow_array(queue, shape, strides, buf, allocator, ev) -> cla.Array:
    return cla.Array(queue, shape, F32, allocator=allocator, data=buf, strides=strides,
                     events=[ev])


def _pick_constructor():
    try:
        import inspect
        if "_fast" in inspect.signature(cla.Array.__init__).parameters:
            return _fast_array
    except (TypeError, ValueError):
        pass
    return _slow_array


# the result Array of a gemm() call: (m, n) float32 over `buf` with `strides`, its
# allocator, and the event that writes it
new_array = _pick_constructor()


class Results:
    """The result Arrays of one plan's calls: (m, n) float32 with fixed strides and
    allocator, each over its call's buffer and carrying its call's event. The first is
    made by pyopencl's constructor (new_array); the next are copies of its attributes
    with the buffer and event replaced, which is what the constructor would set (every
    other attribute is an immutable value fixed by the plan). That takes 0.40 us of host
    time where the constructor takes 0.80 (the CPU-device machine, best of 5 runs of 50,000
    by timeit, 2026-12-05), and the host time of a cached call grows several-fold on a
    GPU host right after a long wait for the device (results/h100/README.md, "A call's
    host time")."""

    __slots__ = ("queue", "shape", "strides", "allocator", "_attrs")

    def __init__(self, queue, shape: tuple[int, int], strides: tuple[int, int], allocator):
        self.queue, self.shape, self.strides, self.allocator = queue, shape, strides, allocator
        self._attrs: dict | None = None

    def __call__(self, buf, ev) -> cla.Array:
        attrs = self._attrs
        if attrs is None:
            arr = new_array(self.queue, self.shape, self.strides, buf, self.allocator, ev)
            if _copyable(arr, buf, ev):
                # the template holds neither this call's buffer nor its event alive
                self._attrs = {**arr.__dict__, "base_data": None, "events": None}
            return arr
        arr = _new_object(cla.Array)
        arr.__dict__ = {**attrs, "base_data": buf, "events": [ev]}
        return arr


_new_object = object.__new__


def _copyable(arr, buf, ev) -> bool:
    """Whether an Array's attributes, its buffer and events replaced, make another Array
    (Results): an Array with a __dict__ in which nothing else is the buffer, the event or
    a mutable container that copies would share. A pyopencl whose Array keeps more state
    fails this and gets its constructor on every call instead."""
    d = getattr(arr, "__dict__", None)
    if type(arr) is not cla.Array or not isinstance(d, dict) or d.get("base_data") is not buf:
        return False
    return not any(v is buf or v is ev or isinstance(v, (list, dict, set, bytearray))
                   for k, v in d.items() if k not in ("base_data", "events"))

"""A Plan: a product of one shape laid out once (clgemm.layout), its kernels compiled and
bound, its scratch buffers taken from a memory pool. Calling it again only points the
bound kernels at the caller's buffers and enqueues them, which is what makes a repeated
call cost about as much host time as a bare kernel launch; a call that repeats the last
one (the same Arrays, no c) takes an express lane with fewer steps still. gemm() keeps
its plans in a cache (clgemm.gemm, clgemm.cache). The modules below this one, none
importing it: clgemm.cache (plans and memory pools kept between calls), clgemm.events
(what a call waits for and leaves on its output), clgemm.layout (a product's operands
laid out as launches, and the layouts a Plan keeps) and clgemm.launch (the plan's kernels
and their launch decisions).
"""

from __future__ import annotations

import numbers
import threading
import weakref
from threading import get_ident
from collections.abc import Callable, Mapping

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from . import arrays, cache, degenerate, events, heuristics, matvec, operands, record
from . import guard as guards
from .cache import memory_pool
from .launch import GemmPlan, Workspace, check_split_k
from .layout import Variant, prepare
from .operands import F32, F32_MAX, F32_ZERO

Allocator = Callable[[int], object]
LAYOUTS_KEPT = 16     # layouts a plan keeps (orders, c or not, blocks' leading dimensions)
_alloc_lock = threading.Lock()
# Planning (a new Plan, a new layout of one) and the enqueues of a call run one thread at
# a time; the rest of a call (checks, keys, the result's Array) runs concurrently. On the
# H200 (driver 580.159.04, 2026-12-03) 4 threads calling gemm() on one shared queue crashed
# the driver in most runs however clgemm serialised its own work, whenever a thread's own
# transfer into that queue overlapped another's gemm(); with a queue per thread (README,
# "Threads") 12 of 12 runs were clean.
_planning = threading.RLock()


def _serialised(allocator: Allocator) -> Allocator:
    def allocate(nbytes: int):
        with _alloc_lock:
            return allocator(nbytes)
    return allocate


def _orient(flags, trans: bool) -> bool:
    """Whether op(x) (x or x.T) lies transposed (Fortran-ordered only), from x's flags."""
    c, f = flags.c_contiguous, flags.f_contiguous
    return c != f and f != trans


class Plan:
    """C = alpha * op(A) @ op(B) + beta * C for one shape (m, n, k), planned once and called
    many times, as cuBLASLt's matmul plans and FFTW's plans are: `plan(a, b)` returns a new
    result, `plan(a, b, c, alpha=..., beta=...)` writes into c. The kernel, its parameters
    (tuned entry or defaults) and the launch decisions are fixed when the plan is made;
    the operands' orders, c, whether beta is zero and blocks of larger matrices (as gemm()
    takes them) may differ from call to call (each combination is laid out once, on its
    first call). With pyopencl Arrays nothing blocks the host; numpy operands are uploaded
    and a numpy result read back.

    `allocator` makes the outputs and scratch buffers (default: the calling thread's pool
    for the context, `memory_pool`). `guard` (kernels 7, 8): each call scans the operands and
    lets kernel 5 compute what the kernel cannot take, and products less than 48 deep run
    kernel 5 (clgemm.guard); False skips both."""

    def __init__(self, queue: cl.CommandQueue, m: int, n: int, k: int, *,
                 trans_a: bool = False, trans_b: bool = False, kernel: object = None,
                 params: Mapping[str, object] | None = None, transposed_by: str = "auto",
                 split_k: int | str = "auto", pad: str = "auto",
                 allocator: Allocator | None = None, guard: bool = True):
        operands.check_queue(queue)
        for name, d in (("m", m), ("n", n), ("k", k)):
            if isinstance(d, (bool, np.bool_)) or not isinstance(d, numbers.Integral) or d < 1:
                raise ValueError(f"{name} must be an integer >= 1, not {d!r}")
        _check_allocator(allocator)
        self.queue, self.shape = queue, (int(m), int(n), int(k))
        operands.check_depth(self.shape[2])
        operands.check_fits(queue.device, operands.gemm_shapes(*self.shape))
        self.trans_a, self.trans_b = operands.flag(trans_a, "trans_a"), operands.flag(trans_b, "trans_b")
        self.allocator, self.guard = allocator, operands.flag(guard, "guard")
        # a caller's allocator: each buffer it makes checked (the results' Arrays keep the
        # allocator itself, for what they make in turn)
        self._checked = None if allocator is None else cache.checked(allocator, queue.context)
        # pyopencl's MemoryPool is not made for threads: by default each calling thread
        # takes from its own pool (memory_pool), and clgemm's own allocations take one lock
        self._allocate = _serialised(self._checked if allocator is not None
                                     else lambda nbytes: memory_pool(queue)(nbytes))
        self._taken = [0]                # bytes of scratch: scratch_bytes, _counted
        self._scratch = _counted(self._allocate, self._taken)   # what the plan itself holds
        named = matvec.named(kernel)         # a matrix-vector kernel asked for by name
        if named is not None:
            check_split_k(split_k)           # its slices of the depth
            if pad != "auto":
                raise ValueError(f"kernel {named} takes no pad: it reads the matrix where it "
                                 f"lies")
        if self.guard and not named:
            kernel, params = guards.routed(kernel, params, self.shape[2])
        self.launch = GemmPlan(queue, None if named else kernel, None if named else params,
                               shape=self.shape, transposed_by=transposed_by, pad=pad,
                               split_k="auto" if named else split_k,
                               workspace=Workspace(queue.context, self._scratch))
        # one row or column of C and nothing named: a matrix-vector product (clgemm.matvec)
        self.matvec = named is not None or (
            kernel is None and params is None and split_k == "auto"
            and heuristics.matvec(self.shape, self.launch.facts))
        # each form's parameters, fixed now as a GEMM plan's are (tuned entry or defaults);
        # a kernel named: its form's only, `params` over them, its slices `split_k`
        self._bases = matvec.bases(queue.device, self.shape, named, params) if self.matvec else {}
        self._slices = None if named is None or split_k == "auto" else int(split_k)
        self._matvec_launch: tuple[matvec.Launch, dict] | None = None
        m, n, k = self.shape
        self._a_shape = (k, m) if trans_a else (m, k)
        self._b_shape = (n, k) if trans_b else (k, n)
        self._context = queue.context
        self._align = operands.base_align(queue.device)    # a sub-buffer origin's, in floats
        self._variants: dict[tuple, Variant] = {}
        self.calls = 0      # calls made, and those that reused a layout laid out before
        self.reused = 0
        self._out_bytes = 4 * self.shape[0] * self.shape[1]
        self._c_shape = self.shape[:2]
        # per thread: the result's allocator, and the maker of result Arrays (arrays.Results)
        # for each order a layout writes C in
        self._pools: dict[int, tuple[Allocator, dict]] = {}
        # [the last event this plan enqueued]: clgemm.events.foreign's `own`, and what the
        # finalizer (cache.bury), which may not hold self, waits for
        self._last: list[cl.Event | None] = [None]
        weakref.finalize(self, cache.bury, self._variants, self._last).atexit = False
        cache.sweep()
        self._hot = None     # weakrefs to the last call's a, b, c (or None), its layout keys
                             # for beta zero and not
        self._calm = None    # (a's events, b's events) that foreign() last found all this queue's
        # the express lane (_again): weakrefs to the last call's a and b where it had no c
        # and waited for nothing, its layout, alpha, beta and the result's order
        self._express: tuple | None = None
        # with CLGEMM_RECORD_SHAPES=1 every plan records its shape for `clgemm tune
        # --recorded` (a matrix-vector form is known once laid out, _lay_out)
        self.record = record.enabled()
        if self.record and not self.matvec:
            record.note_shape(queue.device, self.kernel, *self.shape)

    def _pool(self) -> tuple[Allocator, dict]:
        """The calling thread's allocator for results, found once per thread (looking the
        pool up by queue and thread on every call cost about a microsecond), and its
        result Arrays' makers by order."""
        mine = self._pools[get_ident()] = (self.allocator or memory_pool(self.queue), {})
        return mine

    def _results(self, pool: Allocator, makers: dict, order: str | None) -> arrays.Results:
        m, n = self.shape[:2]
        strides = (4, 4 * m) if order == "F" else (4 * n, 4)
        made = makers[order] = arrays.Results(self.queue, (m, n), strides, pool)
        return made

    @property
    def kernel(self) -> str:
        # a matrix-vector product: the form row-major operands take (another order may
        # take the other form)
        return self._planned()[1]["kernel"] if self.matvec else self.launch.kernel.key

    @property
    def params(self) -> dict:
        return dict(self._planned()[0].params if self.matvec else self.launch.params)

    def _planned(self) -> tuple[matvec.Launch, dict]:
        # fixed with the plan (its bases, slices and facts), so worked out once
        if self._matvec_launch is None:
            self._matvec_launch = matvec.planned(self.queue.device, self.shape,
                                                 self.launch.facts, self._bases, self._slices)
        return self._matvec_launch

    def describe(self) -> dict:
        """What the plan launches: the kernel, its parameters and where they came from, and
        the launch decisions at its shape for row-major operands."""
        if self.matvec:
            d = self._planned()[1]          # a copy: the plan keeps its own
            return {**d, "params": dict(d["params"])}
        return self.launch.describe(*self.shape, self.guard)

    def __call__(self, a, b, c=None, *, alpha: float = 1.0, beta: float = 0.0):
        if c is None:
            out = self._again(a, b, alpha, beta)
            if out is not None:
                return out
        return self._call(a, b, c, alpha, beta)

    def _again(self, a, b, alpha, beta) -> cla.Array | None:
        """The express lane: a call that repeats this plan's last call without c, with the
        same a and b Arrays (so the same shapes, orders and buffers), the same alpha and
        beta and nothing of another queue's pending on them nor from another queue's pool
        (kept until the kernel is done: cache.hold_elsewhere, in _run), enqueued with no
        lookup, key or check of its own (Variant.run); None for any other call,
        which takes the full path (_call). Every step before the enqueue is host time the
        device waits for, and after a long wait the host runs each several times slower
        than in a warm loop (results/h100/README.md, "A call's host time"). The lane is
        set by that full path (_run)."""
        x = self._express
        # a dead weakref gives None, which must not pass for an operand of None; an alpha
        # of zero leaves the lane, whose equality cannot tell -0.0 from 0.0
        if (x is None or x[0]() is not a or x[1]() is not b or a is None or b is None
                or type(alpha) is not float or type(beta) is not float or alpha != x[3]
                or not alpha or beta != x[4] or (a.events or b.events)
                and (tuple(a.events), tuple(b.events)) != self._calm):
            return None
        pool, makers = self._pools.get(get_ident()) or self._pool()
        with _alloc_lock:
            out = (pool if self._checked is None else self._checked)(self._out_bytes)
        ev = self._last[0] = x[2].run((a.base_data, b.base_data, None, out), _NO_OFFSETS,
                                      alpha, beta, None)
        self.calls += 1
        self.reused += 1
        return (makers.get(x[5]) or self._results(pool, makers, x[5]))(out, ev)

    def _call(self, a, b, c, alpha, beta):
        # The hot path of every cached gemm(): each step here is host time before the
        # kernel is enqueued (about 8 us of a 1024^3 call's 84 on the H200, 2026-12-04), so
        # the common case is tested by identity first and by equality only if that fails.
        if (type(alpha) is not float or not -F32_MAX <= alpha <= F32_MAX
                or -F32_ZERO <= alpha <= F32_ZERO):
            alpha = operands.scalar(alpha, "alpha")
            if alpha == 0.0:
                return self._beta_c(a, b, c, beta)
        if (type(beta) is not float or not -F32_MAX <= beta <= F32_MAX
                or beta and -F32_ZERO <= beta <= F32_ZERO):
            beta = operands.scalar(beta, "beta")
        if (type(a) is cla.Array and type(b) is cla.Array
                and (c is None or type(c) is cla.Array)):
            return self._device(a, b, c, alpha, beta)
        return self._host(a, b, c, alpha, beta)

    def _beta_c(self, a, b, c, beta):
        """alpha = 0: beta * C, as BLAS has it, A and B checked but never read (a NaN or an
        Inf there gave NaNs, through alpha * their product)."""
        from .gemm import gemm       # (which imports this module): a block of a larger c
        beta = operands.scalar(beta, "beta")
        self._check(a, b, c)
        m, n, _ = self.shape
        return degenerate.result(self.queue, a, b, c, beta, m, n, self.allocator, gemm)

    def _device(self, a: cla.Array, b: cla.Array, c: cla.Array | None, alpha: float,
                beta: float):
        hot = self._hot
        if (hot is not None and hot[0]() is a and hot[1]() is b
                and (hot[2] is None if c is None else hot[2] is not None and hot[2]() is c)):
            # the Arrays of the previous call again (weak references: the plan keeps no
            # caller's Array alive), which the checks below passed then and whose shape,
            # order, buffer and context are fixed for their life; only beta may differ
            return self._run(hot[4] if c is not None and beta != 0.0 else hot[3],
                             (a.base_data, b.base_data, None if c is None else c.base_data),
                             _NO_OFFSETS, None, a, b, c, alpha, beta)
        fa, fb, ctx = a.flags, b.flags, self._context
        if not (a.shape == self._a_shape and b.shape == self._b_shape
                and (a.dtype is F32 or a.dtype == F32) and (b.dtype is F32 or b.dtype == F32)
                and (a.context is ctx or a.context == ctx)
                and (b.context is ctx or b.context == ctx)
                and (c is None or (c.shape == self._c_shape and c.dtype == F32
                                   and c.context == ctx))):
            self._check(a, b, c)
        if (a.offset or b.offset or not (fa.forc and fb.forc)
                or (c is not None and (c.offset or not c.flags.forc))):
            return self._blocks(a, b, c, alpha, beta)
        key = (_orient(fa, self.trans_a), _orient(fb, self.trans_b),
               None if c is None else _orient(c.flags, False), c is not None and beta != 0.0,
               a.base_data is b.base_data)
        operands.refuse_in_place(a, b, c)
        self._hot = (weakref.ref(a), weakref.ref(b), None if c is None else weakref.ref(c),
                     key[:3] + (False,) + key[4:], key[:3] + (c is not None,) + key[4:])
        return self._run(key, (a.base_data, b.base_data, None if c is None else c.base_data),
                         _NO_OFFSETS, None, a, b, c, alpha, beta)

    def _blocks(self, a: cla.Array, b: cla.Array, c: cla.Array | None, alpha: float,
                beta: float):
        """Operands among which some are blocks of larger matrices (an offset, rows or
        columns ld apart), BLAS's sub-matrices: each block is passed as a sub-buffer of its
        own, made for this call (operands.device_view). A layout is kept per leading
        dimension and class of offset (at a sub-buffer's origin and read where it lies, or
        copied with float4s or floats), so that blocks at other offsets reuse it: their
        copies' offset arguments are set per call."""
        operands.refuse_in_place(a, b, c)
        parts = [self._part(x, name, t) for x, name, t in
                 ((a, "a", self.trans_a), (b, "b", self.trans_b), (c, "c", False))]
        key = (parts[0][0], parts[1][0], parts[2][0], c is not None and beta != 0.0,
               parts[0][1] is parts[1][1])
        return self._run(key, tuple(p[1] for p in parts), tuple(p[2] for p in parts),
                         tuple(p[3] for p in parts), a, b, c, alpha, beta)

    def _part(self, x, name: str, trans: bool) -> tuple:
        """(layout key, buffer, offset past the buffer's origin, View or None) of an operand."""
        if x is None:
            return None, None, 0, None
        if not x.offset and x.flags.forc:
            return _orient(x.flags, trans), x.base_data, 0, None
        v = operands.device_view(x, name, self._align)
        m = v.mem
        return (v.transposed, m.ld, not m.offset, m.offset % 4 == 0), m.buf, m.offset, v

    @property
    def scratch_bytes(self) -> int:
        """Bytes of scratch this plan has taken from its allocator (_counted)."""
        return self._taken[0]

    def _run(self, key: tuple, bufs: tuple, offs: tuple, views: tuple | None, a, b, c,
             alpha: float, beta: float):
        out = pool = None
        if c is None:
            pool, makers = self._pools.get(get_ident()) or self._pool()
            with _alloc_lock:
                out = (pool if self._checked is None else self._checked)(self._out_bytes)
        bufs += (out,)
        variant = self._variants.get(key)
        self.calls += 1
        if variant is None:
            with _planning:
                variant = self._lay_out(a, b, c, alpha, beta, bufs, views)
                if len(self._variants) >= LAYOUTS_KEPT:
                    # blocks of matrices of ever new leading dimensions each made a layout
                    # with scratch buffers of its own, none given back; the oldest goes,
                    # held (cache.bury) until this plan's last launch, which may use it, is done
                    old = next(iter(self._variants))
                    if self._express is not None and self._express[2] is self._variants[old]:
                        self._express = None
                    cache.bury({old: self._variants.pop(old)}, self._last[:])
            self._variants[key] = variant
        else:
            self.reused += 1
        # only other queues' events are waited for, and c's are replaced by this call's
        # last event, which follows them all (clgemm.events)
        pending = seen = None
        if c is not None:
            if a.events or b.events or c.events:
                pending = events.foreign(self.queue, (a, b, c), self._last[0])
                seen = c.events[:]
        elif a.events or b.events:
            # the operands' events as the previous call without c found them, none of them
            # another queue's: no need to look again (a write from another queue added
            # since makes the tuples differ)
            if (tuple(a.events), tuple(b.events)) != self._calm:
                pending = events.foreign(self.queue, (a, b), self._last[0])
                # as foreign() left them (it takes out other queues' finished events)
                self._calm = None if pending is not None else (tuple(a.events),
                                                                tuple(b.events))
        ev = self._last[0] = variant.run(bufs, offs, alpha, beta, pending)
        # cache.hold_elsewhere's test, written out: an Array of no pool costs one attribute
        # read, one of a pool a getattr of the pool's queue (an Array's queue may not be
        # its pool's: .with_queue())
        q = self.queue
        foreign = (a.allocator is not None and getattr(a.allocator, "_queue", a.queue) is not q
                   or b.allocator is not None and getattr(b.allocator, "_queue", b.queue) is not q
                   or c is not None and c.allocator is not None
                   and getattr(c.allocator, "_queue", c.queue) is not q)
        if foreign:
            cache.hold_elsewhere(ev, q, (a, b, c))
        if c is not None:
            c.events.append(ev)
            if seen:
                events.forget(c, seen)
            return c
        order = variant.out_order
        if views is None and pending is None and not foreign:   # the lane holds nothing
            x = self._express
            if (x is None or x[0]() is not a or x[1]() is not b or x[2] is not variant
                    or x[3] != alpha or x[4] != beta):
                self._express = (weakref.ref(a), weakref.ref(b), variant, alpha, beta, order)
        return (makers.get(order) or self._results(pool, makers, order))(out, ev)

    def _lay_out(self, a, b, c, alpha: float, beta: float, bufs: tuple,
                 views: tuple | None) -> Variant:
        if views is not None:        # blocks as Views over this call's sub-buffers
            a, b, c = (x if v is None else v for x, v in zip((a, b, c), views))
        out = bufs[3]
        opa = a.T if self.trans_a else a
        opb = b.T if self.trans_b else b
        if self.matvec:
            if self.record:           # the form this layout takes, at its tuning shape
                key, shape = matvec.tuning_job(opa, opb)
                record.note_shape(self.queue.device, key, *shape)
            prep = matvec.prepare(self.queue, opa, opb, c, alpha, beta, self.launch.facts,
                                  self._scratch, self._bases, self._slices)
        else:
            prep = prepare(self.launch, opa, opb, c, alpha, beta, self._scratch, self.guard)
        order, result = None, None
        if c is None:
            order, res = ("F" if prep.swap else "C"), prep.out
            if res.ld != res.cols:       # the kernel wrote an aligned scratch: copy it out
                prep.steps.append(operands.bind_copy(self.queue, res.buf, res.ld, out,
                                                     res.cols, res.rows, res.cols))
                result = out
            else:                        # the kernel writes each call's new output itself
                result = res.buf
        return Variant(prep, bufs[:3] + (result,), order, _planning)

    def _check(self, a, b, c) -> None:
        """The full checks, raising the error that names what is wrong (a numpy c must be
        writable: the result is written into it)."""
        operands.check(a, "a", self.queue, views=True)
        operands.check(b, "b", self.queue, views=True)
        want = {"a": self._a_shape, "b": self._b_shape}
        for name, x in (("a", a), ("b", b)):
            if x.shape != want[name]:
                raise ValueError(f"{name} has shape {x.shape}; this plan multiplies "
                                 f"{_product(self)} and takes {name} as "
                                 f"{want[name][0]}x{want[name][1]}")
        if c is not None:
            operands.check(c, "c", self.queue, views=True)
            if c.shape != self.shape[:2]:
                raise ValueError(f"c has shape {c.shape}; op(a) @ op(b) is "
                                 f"{self.shape[0]}x{self.shape[1]}")
            if isinstance(c, np.ndarray) and not c.flags.writeable:
                raise ValueError("c is a read-only numpy array; the result is written into c")

    def _host(self, a, b, c, alpha: float, beta: float):
        """numpy operands (or a mix): uploaded into pooled Arrays, computed on the device;
        a numpy result, or c, is read back (blocking: the caller asked for host data). Where
        the result is an Array, nothing blocks: a numpy operand is copied on the host and
        its copy uploaded without waiting (a blocking upload waited behind all the queue's
        work, for ever where that work waited for a user event this thread was to set), and
        the uploads are held until the kernel is done (cache.hold)."""
        self._check(a, b, c)
        # a device c over a device a or b is refused by _device, which every c that is an
        # Array reaches (a numpy c is written only after the inputs are on the device)
        device = isinstance(c, cla.Array) or c is None and (isinstance(a, cla.Array)
                                                            or isinstance(b, cla.Array))
        da, db_ = self._upload(a, device), self._upload(b, device)
        if device:
            try:
                out = self._device(da, db_, c, alpha, beta)
            except BaseException:
                # an upload dropped with the error waited for its copy, behind the queue's
                # work, holding the GIL: for ever where that work waited for a user event
                # (c the Array b refused, pocl, 2026-12-05)
                for x, given in ((da, a), (db_, b)):
                    if x is not given and x.events:
                        cache.hold(x.events[-1], x)
                raise
            if out.events and (da is not a or db_ is not b):
                cache.hold(out.events[-1], (da, db_))
            return out
        if c is None:
            return self._device(da, db_, None, alpha, beta).get()
        if beta == 0.0:
            c[...] = self._device(da, db_, None, alpha, beta).get()
        else:
            dc = self._upload(c)
            self._device(da, db_, dc, alpha, beta)
            c[...] = dc.get()
        return c

    def _upload(self, x, later: bool = False):
        """x on the device: itself if an Array; else uploaded, waiting for the copy, or with
        `later` from a copy of x's own, not waiting (x may change once the call returns)."""
        if isinstance(x, cla.Array):
            return x
        if later:
            x = np.array(x, order="F" if x.flags.f_contiguous and not x.flags.c_contiguous
                         else "C")
        elif not (x.flags.c_contiguous or x.flags.f_contiguous):
            x = np.ascontiguousarray(x)
        return cla.to_device(self.queue, x, allocator=self._allocate, async_=later)


def _product(plan: Plan) -> str:
    m, n, k = plan.shape
    a = "a.T" if plan.trans_a else "a"
    b = "b.T" if plan.trans_b else "b"
    return f"{a} @ {b} with op(a) {m}x{k} and op(b) {k}x{n}"


_NO_OFFSETS = (0, 0, 0)


def _counted(allocate: Allocator, taken: list[int]) -> Allocator:
    """`allocate`, adding the bytes of scratch it hands a plan to taken[0]
    (Plan.scratch_bytes: layouts' copies, split-K's workspace; results are the caller's),
    so that gemm()'s cache can bound what the plans it keeps hold (cache.keep). A count of
    what was taken: a workspace grown or a layout dropped leaves it as it was, never lower.
    The count lives in a list of its own: a closure over the plan would make every plan a
    reference cycle, kept (with its pool) until the garbage collector runs."""
    def take(nbytes: int):
        buf = allocate(nbytes)
        taken[0] += nbytes
        return buf
    return take


def _check_allocator(allocator: object) -> None:
    if allocator is not None and not callable(allocator):
        raise TypeError(f"allocator must be callable with a size in bytes (a pyopencl "
                        f"MemoryPool, say), not {type(allocator).__name__}")

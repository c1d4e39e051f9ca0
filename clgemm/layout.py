"""A product's operands laid out for a GemmPlan as a list of launches (prepare): padded
copies, device transposes, C read and written where it lies or through a copy, and the
guarded launch of a tensor-core kernel; and a Variant, such a layout kept by a Plan and
pointed at each call's buffers. The decisions (padding, K-major A, split-K, the tiles'
order, the spread last wave) are clgemm.heuristics', asked through the plan."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from . import build, heuristics, operands, timing
from . import guard as guards
from .launch import GemmPlan
from .operands import Matrix, View, is_transposed, rounded
from .transpose import TransposePlan

Step = Callable[..., cl.Event]


@dataclass
class Prepared:
    """A product laid out for the device: the launches that compute it (transposes and
    copies of operands included, each a build.Bound or build.BoundCopy returning one event)
    and where the row-major result lands. With `swap`, `out` holds C^T."""
    steps: list[Step]
    out: Matrix
    swap: bool
    splits: int = 1         # slices of k (split-K)
    read: tuple[str, ...] = ()   # the transposed operands ("A", "B") read as they lie
    kmajor: bool = False         # the left operand was transposed to K-major (kmajor_a)
    padded: bool = False         # A and B were copied into zero-padded whole tiles (pads)
    scalars: list[tuple] = field(default_factory=list)   # (bound, index, "alpha"|"beta")
    c_read: bool = False         # the kernels read c (beta != 0)
    # (bound, index, port, floats a unit): the copies' offsets into a caller's matrix that
    # starts past its sub-buffer's origin (View), set per call by a cached layout
    offsets: list[tuple] = field(default_factory=list)
    guard: guards.Guard | None = None    # the scan's flag and epochs (prepare's `guard`)
    tail: tuple[int, int] | None = None  # (tail_from, slices) of a spread last wave (tail_split)
    params: dict | None = None    # a matrix-vector launch's kernel parameters (matvec.prepare)
    columns_first: bool = False   # C's tiles taken down columns (heuristics.columns_first)
    floats: bool = False          # the AB_UNALIGNED build runs: A and B at any leading dimension
    peel: tuple[int, int] | None = None   # (m1, n1): the rows and columns past them apart

    def launch(self) -> list[cl.Event]:
        if self.guard is not None:
            self.guard.advance()
        return [e for step in self.steps for e in timing.events(step())]


class Variant:
    """One layout of a plan (operand orders, with or without c, beta zero or not, and for
    blocks of larger matrices their leading dimensions and classes of offset), as bound
    steps and the places in them where the caller's buffers go: `slots` are (kernel object
    or copy, argument index, role), roles indexing (a, b, c, new output); `oslots` the
    copies' offsets into blocks (kernel object, argument index, role, floats a unit)."""

    def __init__(self, prep: Prepared, bufs: tuple, out_order: str | None,
                 lock: AbstractContextManager):
        self.steps, self.out_order = list(prep.steps), out_order
        # beta stays 0 in the kernels of a layout that does not read c
        self.scalars = [(bound.knl, i, name) for bound, i, name in prep.scalars
                        if name == "alpha" or prep.c_read]
        self.ab = (None, None)          # the alpha and beta the kernels hold now
        self.kslots: list[tuple] = []
        self.cslots: list[tuple] = []
        ptrs = [None if b is None else b.int_ptr for b in bufs]
        for step in (p for s in self.steps for p in getattr(s, "parts", (s,))):
            for i, arg in enumerate(step.args):
                if isinstance(arg, cl.MemoryObjectHolder) and arg.int_ptr in ptrs:
                    roles = [r for r, p in enumerate(ptrs) if p == arg.int_ptr]
                    if hasattr(step, "knl"):
                        self.kslots.append((step.knl, i, roles[0]))
                    else:
                        self.cslots.append((step, i, roles[0]))
                    step.args[i] = None   # the caller's buffers are not kept alive here
        self.oslots = [(step.knl, i, port, unit) for step, i, port, unit in prep.offsets]
        self.guard = prep.guard  # a new epoch each call (clgemm.guard)
        self.lock = lock         # enqueues from several threads into one queue (clgemm.gemm)
        # one kernel and nothing else to point or advance: (queue, kernel object, global
        # and local sizes) for _once(), else None
        first = self.steps[0] if len(self.steps) == 1 else None
        self.single = ((first.queue, first.knl, first.global_size, first.local_size)
                       if isinstance(first, build.Bound) and self.guard is None
                       and not self.oslots and not self.cslots else None)

    def run(self, bufs: tuple, offs: tuple, alpha: float, beta: float,
            wait_for: list | None) -> cl.Event:
        if self.single is not None and not wait_for:
            return self._once(bufs, alpha, beta)
        with self.lock:
            for knl, i, r in self.kslots:
                knl.set_arg(i, bufs[r])
            for knl, i, r, unit in self.oslots:
                build.set_scalar(knl, i, np.int32(offs[r] // unit))
            for step, i, r in self.cslots:
                step.args[i] = bufs[r]
            if self.ab != (alpha, beta) or not alpha:     # (-0.0 == 0.0, yet both count)
                self._set_scalars(alpha, beta)
            if self.guard is not None:
                self.guard.advance()
            steps = self.steps
            ev = steps[0](wait_for)
            for step in steps[1:]:
                ev = step()
            for step, i, _ in self.cslots:
                step.args[i] = None
        return ev

    def _once(self, bufs: tuple, alpha: float, beta: float) -> cl.Event:
        """run() for a layout of one kernel (`single`) with nothing to wait for: the same
        enqueue through fewer steps (no offsets, copies or guard to see to), which is most
        repeated calls' (clgemm.plan's express lane among them)."""
        queue, knl, global_size, local_size = self.single
        with self.lock:
            for _, i, r in self.kslots:
                knl.set_arg(i, bufs[r])
            if self.ab != (alpha, beta) or not alpha:
                self._set_scalars(alpha, beta)
            return cl.enqueue_nd_range_kernel(queue, knl, global_size, local_size)

    def _set_scalars(self, alpha: float, beta: float) -> None:
        for knl, i, name in self.scalars:
            build.set_scalar(knl, i, np.float32(alpha if name == "alpha" else beta))
        self.ab = (alpha, beta)


def prepare(plan: GemmPlan, opa, opb, c, alpha: float, beta: float,
            allocator: Callable[[int], object] | None = None, guard: bool = False) -> Prepared:
    """Check shapes and lay the product out as launches. Device operands (pyopencl Arrays,
    blocks of larger ones included, or Views of them) are taken as they lie (every copy or
    transpose of them is a step, so a repeated launch recomputes from their current
    contents); host ones are uploaded now. Buffers clgemm needs of its own come from
    `allocator` (a pyopencl MemoryPool, say) where given. With `guard`, a Kernel.guarded
    (7) runs between a scan of its operands and a fallback (clgemm.guard); `clgemm run`
    leaves it out, to time the kernel alone."""
    queue = plan.queue
    align = operands.base_align(queue.device)
    opa, opb, c = (as_view(v, port, align) for port, v in enumerate((opa, opb, c)))
    (m, k), (k2, n) = opa.shape, opb.shape
    if k != k2:
        raise ValueError(f"inner dimensions differ: op(a) is {m}x{k} but op(b) is {k2}x{n}")
    if c is not None and c.shape != (m, n):
        raise ValueError(f"c has shape {c.shape}; op(a) @ op(b) is {m}x{n}")

    # Multiply either X=op(A), Y=op(B) into C, or X=op(B)^T, Y=op(A)^T into C^T: whichever
    # needs fewer device transposes (a Fortran-ordered matrix is its transpose row-major):
    # of an operand the kernel does not read as it lies, and of C on the way in (beta != 0)
    # and out.
    c_needed = c is not None and beta != 0.0
    rx, ry = plan.reads

    def transposes(x_t: bool, y_t: bool, c_t: bool) -> int:
        return (x_t and not rx) + (y_t and not ry) + (c is not None and c_t) * (1 + c_needed)

    a_t, b_t, c_t = is_transposed(opa), is_transposed(opb), c is not None and is_transposed(c)
    swap = transposes(not b_t, not a_t, not c_t) < transposes(a_t, b_t, c_t)
    x, y = (opb.T, opa.T) if swap else (opa, opb)
    target = None if c is None else (c.T if swap else c)
    rows, cols = x.shape[0], y.shape[1]

    # an operand the kernel reads as it lies is taken in its own layout; a row-major left
    # one may be turned K-major first (kmajor_a)
    ta, tb = rx and is_transposed(x), ry and is_transposed(y)
    kmajor = rx and not ta and plan.kmajor_a(rows, cols, k)
    ta = ta or kmajor
    # a device operand taken as it lies (not transposed first) whose rows are not whole
    # vectors is read there a float at a time where the kernel can (reads_floats), rather
    # than copied into an aligned buffer; then nothing is padded
    al = plan.align
    copied = tuple(lies and isinstance(v, View) and not v.mem.offset
                   and not v.mem.whole_vectors(al)
                   for v, lies in ((x, not kmajor and (rx or not is_transposed(x))),
                                   (y, ry or not is_transposed(y))))
    # ... and the rest of the launch decisions (GemmPlan.decide): padding, C's rows and
    # columns past whole tiles as thin products of their own (heuristics.peel: the main
    # launch then covers (m1, n1) of them, at the operands' laid-out depth), slices of k
    d = plan.decide(rows, cols, k, copied, guard)
    floats, pads, cut, main, guarded = d.floats, d.padded, d.peel, d.main, d.guarded
    mp, np_, kp = d.launched
    padded = [(mp, kp), (kp, np_)] if pads else []

    mats = [(x, (rows, rounded(k, al))), (y, (k, rounded(cols, al))), (target, (rows, rounded(cols, al)))]
    # the matrices a device transpose re-lays out
    relaid = [shape for (v, shape), read in zip(mats, (rx, ry, False))
              if v is not None and is_transposed(v) and not read]
    relaid += [(k, rounded(rows, al))] if kmajor else []
    # every matrix, plus the copy a transposed one is read into first, padded copies and
    # split-K's partial sums
    slices, spread = d.splits, d.tail
    partial = [(slices * rows, rounded(cols, heuristics.SPLIT_ROW))] if slices > 1 else []
    partial += [plan.tail_sums(*main, spread)] if spread is not None else []
    operands.check_fits(queue.device, [shape for _, shape in mats] + padded + relaid + partial)
    # C is read and written where it lies when it is a row-major device matrix at the origin
    # of its buffer or sub-buffer, else through a dense matrix; a leading dimension that is
    # not a multiple of the vector width takes the C_UNALIGNED build (with split-K only the
    # sum of the slices writes C: their workspace has aligned rows of its own)
    tm = target.mem if isinstance(target, View) and not target.transposed else None
    in_place = tm is not None and not tm.offset
    ragged = tm.ld % al != 0 if in_place else target is None and cols % al != 0
    c_unaligned = slices == 1 and ragged
    plan.compiled(*main, ta, tb, c_unaligned=c_unaligned,    # errors before I/O
                  guard=guards.kernel_code(c_needed) if guarded else 0, floats=floats)
    lay = _Layout(queue, al, TransposePlan(queue) if relaid or c is not None else None, allocator)
    # the operands as the kernel takes them, (K x M or M x K, N x K or K x N), in whole tiles
    # when padded (along k alone, heuristics.pads_depth: m and n then rounded to whole
    # vectors, as every copy's rows are): a device transpose writes straight into that shape
    xs = ((kp, rounded(mp, al)) if ta else (mp, kp)) if pads else None
    ys = ((np_, kp) if tb else (kp, rounded(np_, al))) if pads else None
    xm = lay.relaid(x, xs) if kmajor else (lay.taken if rx else lay.row_major)(x, xs, floats)
    ym = (lay.taken if ry else lay.row_major)(y, ys, floats)
    if in_place:
        cm = tm                                              # read and written where it lies
    elif c_needed:
        cm = lay.row_major(target)
    else:
        cm = lay.empty(rows, cols, cols if ragged else rounded(cols, al))
    beta = beta if c_needed else 0.0
    lay.flush()
    if guarded:
        bounds, scalars, scanned = guards.bound(plan, xm, ym, cm, alpha, beta, ta, tb,
                                                c_needed, allocator)
    elif cut is not None:
        bounds, scalars = lay.peeled(plan, xm, ym, cm, cut, alpha, beta, ta, tb, c_needed)
        scanned = None
    else:
        bounds, scalars = plan.bound(xm, ym, cm, alpha, beta, a_kmajor=ta, b_nmajor=tb,
                                     floats=floats)
        scanned = None
    lay.steps += bounds
    if isinstance(target, View) and cm is not tm:
        lay.write_back(cm, target)
    assert not lay.pending, "an operand copy was laid out after the kernels that read it"
    read = tuple(name for name, t in zip("BA" if swap else "AB", (ta and not kmajor, tb)) if t)
    return Prepared(lay.steps, cm, swap, slices, read, kmajor, pads,
                    scalars, c_needed, lay.offsets, scanned, spread,
                    columns_first=d.columns_first, floats=floats, peel=cut)


def as_view(x, port: int, align: int):
    """A device operand as a View numbered `port` (View.port); a host one as it is."""
    if isinstance(x, cla.Array):
        x = operands.device_view(x, "abc"[port], align)
    return replace(x, port=port) if isinstance(x, View) else x


@dataclass
class _Layout:
    """The steps of one layout and the buffers they need, made by `allocator`."""
    queue: cl.CommandQueue
    align: int
    tplan: TransposePlan | None
    allocator: Callable[[int], object] | None
    steps: list = field(default_factory=list)
    offsets: list = field(default_factory=list)      # Prepared.offsets
    # the operands' aligned copies (taken), made steps by flush: in pairs, one launch each
    pending: list = field(default_factory=list)

    def empty(self, rows: int, cols: int, ld: int) -> Matrix:
        return operands.empty(self.queue, rows, cols, ld, self.allocator)

    def zeros(self, rows: int, cols: int, ld: int) -> Matrix:
        return operands.zeros(self.queue, rows, cols, ld, self.allocator)

    def taken(self, x, shape: tuple[int, int] | None = None, floats: bool = False) -> Matrix:
        """x in its own layout (operands.raw). With `shape` (whole tiles, when padding), in
        the top-left corner of a zero-filled buffer that large, whose padding adds nothing
        to the sums. A device matrix is read where it lies when it starts at its
        (sub-)buffer's origin and either its width and leading dimension are aligned (the
        vector loads read whole vectors: past an unaligned width they would read a
        neighbour's elements, not zeros) or the kernel reads a float at a time (`floats`);
        else a step copies it."""
        if isinstance(x, np.ndarray):
            return operands.raw(self.queue, x, self.align, shape, self.allocator)
        m = x.mem
        if not m.offset and (shape is None and (floats or m.whole_vectors(self.align))
                             or (m.rows, m.cols) == shape and m.ld % self.align == 0):
            return m
        want = shape or (m.rows, rounded(m.cols, self.align))
        out = self.zeros(want[0], m.cols if shape is None else want[1], want[1])
        self.pending.append((m, out, x.port, None))   # only the kernels read it: flush
        return out

    def copy(self, src: Matrix, dst: Matrix, src_port: int | None,
             dst_port: int | None) -> None:
        """A step copying src (all of it) into dst's top-left corner; an offset into a
        caller's matrix is noted (Prepared.offsets) for a cached layout to set per call."""
        step = operands.bind_copy(self.queue, *_block(src, dst))
        self._note_offsets(step, operands.COPY_OFFSETS, src, dst, src_port, dst_port)
        self.steps.append(step)

    def flush(self) -> None:
        """The pending operand copies as steps: two of one build as one launch
        (operands.bind_copy_pair), any other alone. They depend on nothing laid out before
        them, and only the kernels' launches that follow read them."""
        copies, self.pending = self.pending, []
        for step, members in self._bind([_block(*c[:2]) for c in copies]):
            indices = operands.COPY_PAIR_OFFSETS if len(members) == 2 else (operands.COPY_OFFSETS,)
            for (src, dst, src_port, dst_port), at in zip((copies[i] for i in members), indices):
                self._note_offsets(step, at, src, dst, src_port, dst_port)
            self.steps.append(step)

    def _bind(self, blocks: list[operands.Block]) -> list[tuple[object, list[int]]]:
        """Steps copying `blocks`, two of one build as one launch (operands.bind_copy_pair:
        None unless both take one build), any other alone, each with the indices of the
        blocks it copies."""
        left, out = list(range(len(blocks))), []
        while left:
            i = left.pop(0)
            for j in left:
                pair = operands.bind_copy_pair(self.queue, blocks[i], blocks[j])
                if pair is not None:
                    left.remove(j)
                    out.append((pair, [i, j]))
                    break
            else:
                out.append((operands.bind_copy(self.queue, *blocks[i]), [i]))
        return out

    def _note_offsets(self, step, indices: tuple[int, int], src: Matrix, dst: Matrix,
                      src_port: int | None, dst_port: int | None) -> None:
        unit = operands.copy_width(src.cols, src.ld, dst.ld, src.offset, dst.offset)
        for index, m, port in zip(indices, (src, dst), (src_port, dst_port)):
            if m.offset:
                self.offsets.append((step, index, port, unit))

    def peeled(self, plan: GemmPlan, xm: Matrix, ym: Matrix, cm: Matrix,
               cut: tuple[int, int], alpha: float, beta: float, ta: bool, tb: bool,
               c_read: bool) -> tuple[list, list[tuple]]:
        """plan.bound's steps for C in whole tiles, its first m1 rows and n1 columns (the same
        matrices taken smaller), then the rows past m1 (all n columns) and the columns past
        n1 (m1 rows) as products of their own. One row or column is a matrix-vector launch
        that reads the operands and writes C where they lie (matvec.bound). More are thin
        products of the same kernel at their own shapes (its tuned entry there, split-K as
        it decides), each into a scratch matrix that is then copied into C where those rows
        and columns lie (C read into it first where beta != 0); the kernels take no offsets,
        so the few rows of op(A) past m1 and columns of op(B) past n1 are copied into
        aligned scratch of their own. All of it is enqueued after the main launch, so that
        the device starts on that while the host enqueues the rest."""
        from . import matvec        # (matvec lays its own products out through this module)
        m1, n1 = cut
        rows, cols = cm.rows, cm.cols
        xi = replace(xm, cols=m1) if ta else replace(xm, rows=m1)
        yi = replace(ym, rows=n1) if tb else replace(ym, cols=n1)
        steps, scalars = plan.bound(xi, yi, replace(cm, rows=m1, cols=n1), alpha, beta,
                                    a_kmajor=ta, b_nmajor=tb, split_k=1)
        depth = xm.rows if ta else xm.cols
        ins, outs, thin, vectors = [], [], [], []    # copies before and after the thin products
        if rows - m1 == 1:      # C's last row: op(A)'s last row times op(B)
            row = (replace(xm, rows=depth, cols=1, offset=xm.offset + m1) if ta else
                   replace(xm, rows=1, offset=xm.offset + m1 * xm.ld))
            B = replace(ym, rows=cols) if tb else replace(ym, cols=cols)
            vectors.append(("dot" if tb else "sweep", B, row,
                            replace(cm, rows=1, offset=cm.offset + m1 * cm.ld)))
        elif m1 < rows:
            xs = self._strip(xm, m1, rows - m1, depth, ta, ins)
            thin.append((rows - m1, cols, xs, ym, m1 * cm.ld))
        if cols - n1 == 1:      # C's last column above row m1: op(A)'s rows times op(B)'s last column
            col = (replace(ym, rows=1, offset=ym.offset + n1 * ym.ld) if tb else
                   replace(ym, rows=depth, cols=1, offset=ym.offset + n1))
            vectors.append(("sweep" if ta else "dot", xi, col,
                            replace(cm, rows=m1, cols=1, offset=cm.offset + n1)))
        elif n1 < cols:
            ys = self._strip(ym, n1, cols - n1, depth, not tb, ins)
            thin.append((m1, cols - n1, xi, ys, n1))
        for kind, X, v, y in vectors:
            launch, _, _ = matvec.bound(self.queue, kind, X, v, y, alpha, beta, plan.facts,
                                        self.allocator)
            steps.append(launch)
            scalars += [(launch, 2, "alpha"), (launch, 9, "beta")]
        parts = []
        for r, c, xs, ys, at in thin:
            part = self.empty(r, c, rounded(c, self.align))
            if c_read:
                ins.append((cm.buf, cm.ld, part.buf, part.ld, r, c, cm.offset + at, 0))
            outs.append((part.buf, part.ld, cm.buf, cm.ld, r, c, 0, cm.offset + at))
            more, held = plan.at((r, c, depth)).bound(xs, ys, part, alpha, beta, a_kmajor=ta,
                                                      b_nmajor=tb)
            parts += more
            scalars += held
        # (a caller's matrix here starts at its buffer's origin: offsets fixed with the layout)
        copies = [[step for step, _ in self._bind(blocks)] for blocks in (ins, outs)]
        return steps + copies[0] + parts + copies[1], scalars

    def _strip(self, m: Matrix, start: int, count: int, depth: int, across: bool,
              copies: list) -> Matrix:
        """An aligned, zero-filled matrix for m's rows start.. (`across`: its columns; count
        of them, each `depth` long), and the copy that fills it, added to `copies`."""
        shape = (depth, count) if across else (count, depth)
        out = self.zeros(*shape, rounded(shape[1], self.align))
        at = m.offset + (start if across else start * m.ld)
        copies.append((m.buf, m.ld, out.buf, out.ld, *shape, at, 0))
        return out

    def row_major(self, x, shape: tuple[int, int] | None = None, floats: bool = False) -> Matrix:
        """x as a row-major device matrix with an aligned leading dimension (any, with
        `floats`: taken); a transpose it needs becomes a step (into a zero-padded `shape`
        when given)."""
        return self.relaid(x, shape) if is_transposed(x) else self.taken(x, shape, floats)

    def relaid(self, x, shape: tuple[int, int] | None = None) -> Matrix:
        """The transpose of x's memory as a new device matrix (row-major x for a transposed
        x, K-major for a row-major A), in the top-left corner of a zero-filled `shape` when
        given; the transpose becomes a step (after a dense copy of a device matrix that
        starts past its sub-buffer's origin: the transposes take no offset)."""
        if isinstance(x, View):
            src = x.mem
            if src.offset:
                src = self.empty(src.rows, src.cols, src.cols)
                self.copy(x.mem, src, x.port, None)
        else:
            src = operands.raw(self.queue, x, 1, allocator=self.allocator)
        if shape is not None:
            dst = self.zeros(shape[0], shape[1], shape[1])
        else:
            dst = self.zeros(src.cols, src.rows, rounded(src.rows, self.align))
        self.steps.append(self.tplan.bind(src, dst))
        return dst

    def write_back(self, cm: Matrix, target: View) -> None:
        """Steps putting the row-major result `cm` into the device matrix `target`, only
        into its elements (a block's neighbours are left as they are)."""
        t = target.mem
        if not target.transposed:
            self.copy(cm, t, None, target.port)
            return
        # target's memory is row-major target.T: transposed straight there, or into a dense
        # matrix first where it starts past its sub-buffer's origin
        dst = (self.empty(cm.cols, cm.rows, cm.rows) if t.offset
               else Matrix(t.buf, cm.cols, cm.rows, t.ld))
        self.steps.append(self.tplan.bind(cm, dst))
        if t.offset:
            self.copy(dst, t, None, target.port)


def _block(src: Matrix, dst: Matrix) -> operands.Block:
    """All of src into dst's top-left corner, as operands.copy_rect's arguments."""
    return (src.buf, src.ld, dst.buf, dst.ld, src.rows, src.cols, src.offset, dst.offset)

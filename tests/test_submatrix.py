"""Sub-matrix operands, as BLAS users pass them: a block of a larger device matrix, given
by an offset and a leading dimension, for each of A, B and C (pyopencl Array views).

The matrix of cases follows CLBlast's xgemm tests: layouts (a block of a row-major matrix,
or of a column-major one, which is the Array's transpose in memory) x transposes x
alpha/beta (0 and negative included) x odd sizes x leading dimensions larger than the
width x offsets (0, 1 and 5 floats, and one where a sub-buffer can start), each against a
float64 reference on fresh random data. Every element of the buffers around the blocks
holds NaN: a kernel that read one would spread it, one that wrote one is caught."""

import gc
import itertools
import sys
from dataclasses import dataclass

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pyopencl.tools as cl_tools
import pytest

import clgemm
from clgemm import verify

from .conftest import P5, close, rand

pytestmark = pytest.mark.usefixtures("home")   # conftest: no tuned entries

F32 = np.float32
EXTRA = (0, 1, 3, 8)                      # ld = width + these
ALPHA_BETA = [(1.0, 0.0), (-0.5, 0.0), (0.75, -1.25), (0.0, 1.0)]
SIZES = [(1, 7, 3), (17, 29, 13), (33, 65, 9), (32, 40, 24), (64, 32, 16)]


def aligned(queue) -> int:
    """An offset (floats) at which a sub-buffer can start (CL_DEVICE_MEM_BASE_ADDR_ALIGN is
    in bits): such a block is read where it lies."""
    return 2 * max(4, queue.device.mem_base_addr_align // 32)


class Block:
    """`values` (r x c) as a block of a larger device buffer: starting `offset` floats in,
    its rows (layout "R") or its columns ("C", the Array's transpose in memory) ld = width +
    `extra` floats apart; every other element of the buffer holds NaN."""

    def __init__(self, queue, values: np.ndarray, layout: str, extra: int, offset: int,
                 allocator=None):
        mem = values if layout == "R" else values.T       # what lies row-major in memory
        rows, cols = mem.shape
        self.ld, self.layout = cols + extra, layout
        self.flat = np.full(offset + rows * self.ld + 3, np.nan, F32)
        self.index = offset + np.arange(rows)[:, None] * self.ld + np.arange(cols)
        self.flat[self.index] = mem
        self.buf = cla.to_device(queue, self.flat, allocator=allocator)
        strides = (4 * self.ld, 4) if layout == "R" else (4, 4 * self.ld)
        self.view = cla.Array(queue, values.shape, F32, data=self.buf.base_data,
                              offset=4 * offset, strides=strides)

    def now(self) -> tuple[np.ndarray, np.ndarray]:
        """(the block's values, the rest of the buffer) as the device holds them now."""
        flat = self.buf.get()
        mem = flat[self.index]
        rest = np.delete(flat, self.index.ravel())
        return (mem if self.layout == "R" else mem.T), rest


def nan_free_surroundings(*blocks: Block) -> bool:
    return all(np.isnan(b.now()[1]).all() for b in blocks)


@dataclass
class BlockCase:
    """One product of blocks (block_cases): the operands, and A, B, C as Blocks."""
    a: np.ndarray
    b: np.ndarray
    c0: np.ndarray
    k: int
    ab: tuple[float, float]
    blocks: tuple[Block, Block, Block]
    where: str

    def check_untouched(self) -> np.ndarray:
        """C's block as the device holds it, after asserting that nothing around it was
        written and that A's and B's blocks and surroundings are as they were."""
        got, rest = self.blocks[2].now()
        assert np.isnan(rest).all(), f"wrote outside C: {self.where}"
        for blk, want in zip(self.blocks[:2], (self.a, self.b)):
            now, around = blk.now()
            assert np.array_equal(now, want) and np.isnan(around).all(), f"changed: {self.where}"
        return got


def block_cases(queue, sizes, extras, ta: bool, tb: bool, layouts: str):
    """Each (size, alpha/beta) as blocks of NaN-filled buffers, the leading dimension
    (width + one of `extras`) and offset of each of A, B and C cycling through theirs out
    of phase; beta = 0 takes a NaN block of C, which must never be read."""
    rng = np.random.default_rng()
    lds_offsets = list(itertools.product(extras, (0, 1, 5, aligned(queue))))
    for i, ((m, n, k), (alpha, beta)) in enumerate(itertools.product(sizes, ALPHA_BETA)):
        a = rand(rng, *((k, m) if ta else (m, k)))
        b = rand(rng, *((n, k) if tb else (k, n)))
        c0 = rand(rng, m, n)
        (ea, oa), (eb, ob), (ec, oc) = (lds_offsets[(i * step) % len(lds_offsets)]
                                        for step in (1, 3, 7))
        ba, bb = Block(queue, a, layouts[0], ea, oa), Block(queue, b, layouts[1], eb, ob)
        bc = Block(queue, c0 if beta else np.full_like(c0, np.nan), layouts[2], ec, oc)
        where = f"{m}x{n}x{k} alpha={alpha} beta={beta} ld+{(ea, eb, ec)} offsets {(oa, ob, oc)}"
        yield BlockCase(a, b, c0, k, (alpha, beta), (ba, bb, bc), where)


# ------------------------------------------------------------------ the matrix

CASES = [("5", P5, "auto"), ("5", P5, "kernel"), ("2", {"TS": 4}, "transpose")]


@pytest.mark.parametrize("kernel,params,by", CASES, ids=["5", "5-kernel-reads", "2"])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("layouts", ["RRR", "CCC", "RCR", "CRC"])
def test_submatrix_operands(queue, kernel, params, by, ta, tb, layouts):
    """Every (size, alpha/beta) of the matrix, the leading dimension and offset of each of
    A, B and C cycling through theirs out of phase: the result against float64, C's
    surroundings untouched, beta = 0 over a NaN block never read."""
    for case in block_cases(queue, SIZES, EXTRA, ta, tb, layouts):
        a, b, c0, (alpha, beta), (ba, bb, bc) = case.a, case.b, case.c0, case.ab, case.blocks
        out = clgemm.gemm(queue, ba.view, bb.view, bc.view, alpha=alpha, beta=beta,
                          trans_a=ta, trans_b=tb, kernel=kernel, params=params,
                          transposed_by=by)
        assert out is bc.view
        got = case.check_untouched()
        ref = verify.reference(a.T if ta else a, b.T if tb else b, alpha, beta, c0)
        assert close(got, ref, case.k), case.where


@pytest.mark.parametrize("layouts", ["RRR", "CCC", "RCC"])
def test_blocks_give_the_contiguous_result_bit_for_bit(queue, layouts):
    """Where the same kernel runs (a block read where it lies or copied first, the same
    orders), the result is the contiguous operands' bit for bit: a block changes where
    values come from, not the arithmetic. No c: C is new, dense, in the same order."""
    rng = np.random.default_rng()
    for (m, n, k), (ea, oa), (eb, ob) in [((33, 65, 9), (1, 5), (3, 1)),
                                          ((32, 40, 24), (8, aligned(queue)), (0, 0)),
                                          ((64, 32, 16), (0, aligned(queue)), (8, 5))]:
        a, b = rand(rng, m, k), rand(rng, k, n)
        ba, bb = Block(queue, a, layouts[0], ea, oa), Block(queue, b, layouts[1], eb, ob)
        dense = [cla.to_device(queue, np.asfortranarray(x) if lay == "C" else x)
                 for x, lay in ((a, layouts[0]), (b, layouts[1]))]
        want = clgemm.gemm(queue, *dense, kernel="5", params=P5).get()
        got = clgemm.gemm(queue, ba.view, bb.view, kernel="5", params=P5).get()
        assert np.array_equal(got, want)
        assert close(got, verify.reference(a, b), k)


def test_default_kernel_and_numpy_mixed_in(queue):
    """No kernel named (the default, its CPU parameters), a block of A with a numpy B and a
    numpy block of C (numpy views were taken by copying all along, and still are)."""
    rng = np.random.default_rng()
    m, n, k = 45, 37, 70
    a, b = rand(rng, m, k), rand(rng, k, n)
    ba = Block(queue, a, "R", 3, 1)
    host = np.full((m + 4, n + 9), np.nan, F32)
    c0 = rand(rng, m, n)
    host[2:2 + m, 5:5 + n] = c0
    clgemm.gemm(queue, ba.view, b, host[2:2 + m, 5:5 + n], alpha=2.0, beta=-1.0)
    assert close(host[2:2 + m, 5:5 + n], verify.reference(a, b, 2.0, -1.0, c0), k)
    host[2:2 + m, 5:5 + n] = np.nan
    assert np.isnan(host).all()
    out = clgemm.gemm(queue, ba.view, Block(queue, b, "C", 8, aligned(queue)).view)
    assert close(out.get(), verify.reference(a, b), k)
    bc = Block(queue, c0, "C", 1, 5)                   # numpy a and b, a block of C
    clgemm.gemm(queue, a, b, bc.view, alpha=-1.0, beta=0.5)
    got, rest = bc.now()
    assert close(got, verify.reference(a, b, -1.0, 0.5, c0), k) and np.isnan(rest).all()


# ------------------------------------------------------------------ as users slice them

def test_slices_of_one_matrix_update_a_block_in_place(queue):
    """The BLAS use: blocks of one matrix, A22 -= A21 @ A12 (LU's trailing update), written
    into A22 where it lies; the rest of the matrix is untouched."""
    rng = np.random.default_rng()
    host = rand(rng, 100, 90)
    big = cla.to_device(queue, host)
    r = 24
    clgemm.gemm(queue, big[r:, :r], big[:r, r:], big[r:, r:], alpha=-1.0, beta=1.0,
                kernel="5", params=P5)
    want = verify.reference(host[r:, :r], host[:r, r:], -1.0, 1.0, host[r:, r:])
    got = big.get()
    assert np.array_equal(got[:r], host[:r]) and np.array_equal(got[:, :r], host[:, :r])
    assert close(got[r:, r:], want, r)
    out = clgemm.gemm(queue, big[0:50, 8:40], big[40:72, 20:30])      # as the README has it
    assert close(out.get(), verify.reference(got[0:50, 8:40], got[40:72, 20:30]), 32)
    outt = clgemm.gemm(queue, big[5:40, 3:20].T, big[60:77, 1:11], trans_a=True)
    assert close(outt.get(), verify.reference(got[5:40, 3:20], got[60:77, 1:11]), 17)


def test_c_overlapping_a_or_b_is_refused(queue, rng):
    big = cla.to_device(queue, rand(rng, 40, 40))
    for c in (big[5:25, 5:25], big[0:20, 0:20]):
        with pytest.raises(ValueError, match="c overlaps a or b"):
            clgemm.gemm(queue, big[0:20, 0:10], big[0:10, 0:20], c, kernel="5", params=P5)
    # the same rows, other columns: no shared element, taken
    clgemm.gemm(queue, big[0:20, 0:10], big[20:30, 0:20], big[0:20, 20:40], kernel="5",
                params=P5)
    # blocks of a Fortran-ordered matrix, one of them a single column (as a run of floats
    # it has no leading dimension of its own): apart, so taken, and computed right
    host = np.asfortranarray(rand(rng, 90, 90))
    big = cla.to_device(queue, host)
    clgemm.gemm(queue, big[0:25, 22:23], big[30:31, 58:77], big[60:85, 10:29], beta=1.0)
    want = verify.reference(host[0:25, 22:23], host[30:31, 58:77], 1.0, 1.0, host[60:85, 10:29])
    assert close(big.get()[60:85, 10:29], want, 1)


def test_arrays_over_sub_buffers_of_one_buffer(queue, rng):
    """Arrays that live in OpenCL sub-buffers (their own buffer objects over one parent's
    memory): c over the memory of a is refused (it ran and gave a wrong product), c in a part
    of the parent apart from a and b is taken; a block of such an Array (which needs a
    sub-buffer of its own: OpenCL makes none of a sub-buffer) is read and written where it
    lies in the parent (clCreateSubBuffer failed)."""
    n, at = 24, aligned(queue)
    parent = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 4 * (at + 3 * n * n))
    whole = cla.Array(queue, (at + 3 * n * n,), F32, data=parent)
    whole.set(np.full(at + 3 * n * n, np.nan, F32))
    part = [cla.Array(queue, (n, n), F32, data=parent.get_sub_region(4 * (at + i * n * n), 4 * n * n))
            for i in range(3)]
    ha, hb = rand(rng, n, n), rand(rng, n, n)
    part[0].set(ha)
    part[1].set(hb)
    twin = cla.Array(queue, (n, n), F32, data=parent.get_sub_region(4 * at, 4 * n * n))
    with pytest.raises(ValueError, match="c overlaps a or b"):
        clgemm.gemm(queue, part[0], part[1], twin)
    with pytest.raises(ValueError, match="c overlaps a or b"):
        clgemm.gemm(queue, part[0][2:9, 1:7], part[1][0:6, 3:12], twin[4:11, 0:9])
    assert close(clgemm.gemm(queue, part[0], part[1], part[2]).get(), verify.reference(ha, hb), n)
    part[2].set(np.full((n, n), np.nan, F32))
    c = part[2][3:10, 5:14]
    clgemm.gemm(queue, part[0][2:9, 1:7], part[1][0:6, 3:12], c)
    got = part[2].get()
    assert close(got[3:10, 5:14], verify.reference(ha[2:9, 1:7], hb[0:6, 3:12]), 6)
    got[3:10, 5:14] = np.nan
    assert np.isnan(got).all()                       # nothing else of the parent written
    out = clgemm.gemm(queue, part[0][1:20, 2:15], part[1][3:16, 0:11])
    assert close(out.get(), verify.reference(ha[1:20, 2:15], hb[3:16, 0:11]), 13)


def test_overlap_is_exact_for_blocks_of_any_leading_dimension(queue):
    """operands.overlaps against the sets of elements two views of one buffer cover:
    blocks (transposed or not) at random offsets and leading dimensions, single rows and
    columns, and dense runs among them."""
    from clgemm import operands
    rng = np.random.default_rng(7)
    size = 300
    buf = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 4 * size)

    def view():
        while True:
            ld, rows = int(rng.integers(1, 24)), int(rng.integers(1, 10))
            cols, off = int(rng.integers(1, ld + 1)), int(rng.integers(0, size))
            if off + (rows - 1) * ld + cols <= size:
                break
        shape, strides = ((cols, rows), (4, 4 * ld)) if rng.integers(2) else ((rows, cols), (4 * ld, 4))
        elems = {off + i * ld + j for i in range(rows) for j in range(cols)}
        return cla.Array(queue, shape, np.float32, strides=strides, data=buf, offset=4 * off), elems

    met = 0
    for _ in range(3000):
        (x, ex), (y, ey) = view(), view()
        assert operands.overlaps(x, y) == bool(ex & ey), (x.shape, x.strides, x.offset,
                                                           y.shape, y.strides, y.offset)
        met += bool(ex & ey)
    assert 300 < met < 2700          # both answers drawn often


# ------------------------------------------------------------------ the plan API

def test_a_plan_reuses_a_layout_across_offsets(queue):
    """clgemm.Plan with blocks at other offsets of the same class (read where it lies, or
    copied with float4s or floats) reuses one layout per class, each call's offset set
    anew; every result is right and C's surroundings stay untouched."""
    rng = np.random.default_rng()
    m, n, k = 17, 24, 12
    plan = clgemm.Plan(queue, m, n, k, kernel="5", params=P5)
    al = aligned(queue)
    classes = {"in place": [0, al, 3 * al], "float4": [4, 8, al + 12], "float": [1, 5, al + 7]}
    for offsets in classes.values():
        for off in offsets:
            a, b, c0 = rand(rng, m, k), rand(rng, k, n), rand(rng, m, n)
            ba, bb, bc = (Block(queue, x, "R", 4, off) for x in (a, b, c0))
            assert plan(ba.view, bb.view, bc.view, alpha=1.5, beta=0.5) is bc.view
            got, rest = bc.now()
            assert close(got, verify.reference(a, b, 1.5, 0.5, c0), k), off
            assert np.isnan(rest).all()
    assert len(plan._variants) == len(classes)
    assert plan.reused == plan.calls - len(classes)


@pytest.mark.parametrize("pad,split", [("yes", 1), ("no", 3)])
def test_a_plan_pads_and_splits_blocks(queue, pad, split):
    """Blocks copied into zero-padded whole tiles (the EXACT build), and split-K, whose
    partial sums take C's leading dimension: C is written where it lies only when that is
    its aligned width, else through an aligned matrix."""
    rng = np.random.default_rng()
    m, n, k = 37, 52, 64
    plan = clgemm.Plan(queue, m, n, k, kernel="5", params=P5, pad=pad, split_k=split)
    for (ea, oa), (ec, oc) in [((3, 1), (0, aligned(queue))), ((0, aligned(queue)), (8, 5)),
                               ((8, 0), (0, 0))]:
        a, b, c0 = rand(rng, m, k), rand(rng, k, n), rand(rng, m, n)
        ba, bb, bc = Block(queue, a, "R", ea, oa), Block(queue, b, "C", 1, 5), \
            Block(queue, c0, "R", ec, oc)
        plan(ba.view, bb.view, bc.view, alpha=-1.0, beta=2.0)
        got, rest = bc.now()
        assert close(got, verify.reference(a, b, -1.0, 2.0, c0), k)
        assert np.isnan(rest).all()


def test_kmajor_a_from_blocks(queue, thresholds):
    """A row-major block of A laid out K-major by the device transpose (after a dense copy
    when it starts past a sub-buffer's origin), and a transposed block of C written back."""
    thresholds(kmajor_min_n=0, kmajor_min_volume=0)
    rng = np.random.default_rng()
    m, n, k = 29, 20, 16
    for oa, oc in ((5, 1), (aligned(queue), 0)):
        a, b, c0 = rand(rng, m, k), rand(rng, k, n), rand(rng, m, n)
        ba, bc = Block(queue, a, "R", 3, oa), Block(queue, c0, "C", 3, oc)
        clgemm.gemm(queue, ba.view, cla.to_device(queue, b), bc.view, beta=1.0, kernel="5",
                    params=P5)
        got, rest = bc.now()
        assert close(got, verify.reference(a, b, 1.0, 1.0, c0), k)
        assert np.isnan(rest).all()


# ------------------------------------------------------------------ lifetimes

def test_sub_buffers_outlive_the_call_and_nothing_is_kept(queue):
    """A call's sub-buffers are dropped when it returns, yet its kernels, held back on the
    device, still find them (OpenCL frees a memory object once the commands using it are
    done); afterwards neither the plan nor anything else holds one: the parents' reference
    counts (each sub-buffer holds its parent) are back where they were."""
    rng = np.random.default_rng()
    m, n, k = 20, 24, 16
    pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(queue))
    plan = clgemm.Plan(queue, m, n, k, kernel="5", params=P5)
    for off in (aligned(queue), 5):
        a, b, c0 = rand(rng, m, k), rand(rng, k, n), rand(rng, m, n)
        blocks = [Block(queue, x, lay, 4, off, allocator=pool)
                  for x, lay in ((a, "R"), (b, "C"), (c0, "R"))]
        parents = [cl.Buffer.from_int_ptr(blk.buf.base_data.int_ptr) for blk in blocks]
        gc.collect()        # the blocks' own garbage (their fill's temporaries) gone first: a
        before = [p.reference_count for p in parents]   # count of 3 seen once, then 2
        gate = cl.UserEvent(queue.context)
        for blk in blocks:
            blk.view.add_event(gate)
        plan(*(blk.view for blk in blocks), beta=-1.0)
        gc.collect()
        gate.set_status(cl.command_execution_status.COMPLETE)
        queue.finish()
        gc.collect()
        for blk in blocks:
            blk.view.events.clear()
        got, rest = blocks[2].now()
        assert close(got, verify.reference(a, b, 1.0, -1.0, c0), k)
        assert np.isnan(rest).all()
        assert [p.reference_count for p in parents] == before


# ------------------------------------------------------------------ what stays refused

def test_the_old_refusal_of_views_is_gone(queue, rng):
    a = cla.to_device(queue, rand(rng, 30, 30))
    out = clgemm.gemm(queue, a[2:10, 3:27], a[0:24, 1:7], kernel="2", params={"TS": 4})
    assert close(out.get(), verify.reference(a.get()[2:10, 3:27], a.get()[0:24, 1:7]), 24)


@pytest.mark.parametrize("make,words", [
    (lambda big: big[:, ::2], "neither its rows nor its columns are contiguous"),
    (lambda big: cla.Array(big.queue, (6, 8), F32, data=big.base_data, strides=(8, 4)),
     "its rows or columns overlap"),
    (lambda big: cla.Array(big.queue, (6, 8), F32, data=big.base_data, strides=(0, 4)),
     "its rows or columns overlap"),
    (lambda big: cla.Array(big.queue, (6, 8), F32, data=big.base_data, offset=2,
                           strides=(64, 4)), "not whole float32 elements"),
])
def test_layouts_the_kernels_cannot_take_are_refused_by_name(queue, rng, make, words):
    big = cla.to_device(queue, rand(rng, 16, 16))
    x = make(big)
    k = x.shape[1]
    for call in (lambda: clgemm.gemm(queue, x, big[:k, :5]),
                 lambda: clgemm.Plan(queue, x.shape[0], 5, k)(x, big[:k, :5])):
        with pytest.raises(ValueError, match=words) as err:
            call()
        assert "\n" not in str(err.value)


def test_k_zero_scales_a_block_of_c(queue, rng):
    """k = 0 leaves beta * C, here in a block (pyopencl's own fill and *= take only
    contiguous arrays); beta = 0 over NaN gives zeros; the surroundings stay."""
    c0 = rand(rng, 7, 5)
    bc = Block(queue, c0, "R", 3, 5)
    a, b = cla.zeros(queue, (7, 0), F32), cla.zeros(queue, (0, 5), F32)
    clgemm.gemm(queue, a, b, bc.view, beta=-2.0)
    got, rest = bc.now()
    assert np.array_equal(got, F32(-2.0) * c0) and np.isnan(rest).all()
    bc = Block(queue, np.full_like(c0, np.nan), "C", 1, 1)
    clgemm.gemm(queue, a, b, bc.view, beta=0.0)
    got, rest = bc.now()
    assert not got.any() and np.isnan(rest).all()


# ------------------------------------------------------------------ on the simulator

RUNNER = """
import json, sys
import numpy as np, pyopencl.array as cla
import clgemm
from clgemm import device, verify
q = device.queue(device.select("oclgrind"))
rng = np.random.default_rng()
align = 2 * max(4, q.device.mem_base_addr_align // 32)

def block(values, layout, extra, offset):
    # the buffer ends where the block does: a read or write past it is reported
    mem = values if layout == "R" else values.T
    rows, cols = mem.shape
    ld = cols + extra
    off = align if offset == "aligned" else offset
    flat = np.full(off + (rows - 1) * ld + cols, np.nan, np.float32)
    flat[off + np.arange(rows)[:, None] * ld + np.arange(cols)] = mem
    buf = cla.to_device(q, flat)
    strides = (4 * ld, 4) if layout == "R" else (4, 4 * ld)
    return cla.Array(q, values.shape, np.float32, data=buf.base_data, offset=4 * off,
                     strides=strides), buf, off + np.arange(rows)[:, None] * ld + np.arange(cols)

for kernel, params, (m, n, k), layouts, extra, offset in json.loads(sys.argv[1]):
    a, b, c0 = (verify.random_matrix(rng, *s) for s in ((m, k), (k, n), (m, n)))
    (va, _, _), (vb, _, _), (vc, cbuf, ci) = (block(x, lay, extra, offset)
                                              for x, lay in zip((a, b, c0), layouts))
    clgemm.gemm(q, va, vb, vc, alpha=0.5, beta=-1.0, kernel=kernel, params=params)
    got = cbuf.get()[ci]
    got = got if layouts[2] == "R" else got.T
    ok = verify.rel_error(got, verify.reference(a, b, 0.5, -1.0, c0)) <= verify.tolerance(k)
    print(f"RESULT {kernel} {layouts} {extra} {offset} {'ok' if ok else 'WRONG'}", flush=True)
"""


def test_blocks_on_the_simulator():
    """Blocks whose buffers end where they do, read where they lie (an aligned offset) and
    copied (offset 5, or a width that is not a multiple of 4 where the leading dimension is:
    whole float4s would read past the block), row- and column-major: Oclgrind reports no
    access outside them."""
    from . import test_oclgrind as og
    if not any("oclgrind" in e.platform.name.lower() for e in og.device.entries()):
        pytest.skip("Oclgrind platform not installed")
    import json
    import os
    import subprocess
    cases = [(kern, p, shape, lay, extra, off)
             for kern, p in (("5", P5), ("2", {"TS": 4})) for shape in ((37, 20, 16), (37, 21, 15))
             for lay in ("RRR", "CCC") for extra, off in ((4, "aligned"), (1, "aligned"), (3, 5))]
    env = dict(os.environ, PYOPENCL_COMPILER_OUTPUT="0")
    p = subprocess.run([sys.executable, "-c", RUNNER, json.dumps(cases)], capture_output=True,
                       text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert og.reports(p.stderr) == [], p.stderr[-3000:]
    assert p.stdout.count(" ok") == len(cases), p.stdout


def test_a_plan_keeps_a_bounded_number_of_layouts(queue, rng):
    """Blocks of matrices of ever new leading dimensions each need a layout of their own,
    with scratch buffers (here the block of A, copied: its start is not where a sub-buffer
    can begin): a plan keeps the newest LAYOUTS_KEPT, so what it holds stops growing (60
    leading dimensions held 60 layouts and their buffers), and each product is still right."""
    from clgemm.plan import LAYOUTS_KEPT
    pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(queue))
    hb = rand(rng, 40, 40)
    b = cla.to_device(queue, hb)
    plan = clgemm.Plan(queue, 40, 40, 40, allocator=pool)
    held = []
    for ld in range(41, 41 + 3 * LAYOUTS_KEPT):
        host = rand(rng, 40, ld)
        out = plan(cla.to_device(queue, host)[:, 1:41], b)
        assert close(out.get(), verify.reference(host[:, 1:41], hb), 40)
        del out
        queue.finish()
        held.append((len(plan._variants), pool.active_bytes))
    assert max(n for n, _ in held) == LAYOUTS_KEPT
    assert held[-1][1] <= held[LAYOUTS_KEPT + 1][1]          # no more held past the cap


def test_a_block_spanning_more_than_32_bit_indices_is_refused(queue, rng, monkeypatch):
    """The kernels index a block from its sub-buffer's origin with 32-bit integers: a block
    whose rows lie so far apart that it spans more floats than that (a few rows of a matrix
    with a huge leading dimension) is refused by name, not overrun (here with the bound
    lowered, as such a buffer does not fit on the CPU device)."""
    from clgemm import operands
    big = cla.to_device(queue, rand(rng, 40, 100))
    b = cla.to_device(queue, rand(rng, 8, 8))
    monkeypatch.setattr(operands, "MAX_ELEMENTS", 1000)
    with pytest.raises(ValueError, match=r"a is a block that spans \d+ floats"):
        clgemm.gemm(queue, big[0:20, 1:9], b)
    out = clgemm.gemm(queue, big[0:9, 1:9], b)          # 8 rows of 100 and 8 floats: taken
    assert close(out.get(), verify.reference(big.get()[0:9, 1:9], b.get()), 8)

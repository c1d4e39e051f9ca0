"""Kernel 7's guard, also kernel 8's (clgemm/guard.py, kernels/scan_special.cl): gemm() and
Plan with kernel 7 scan the operands on the device and hand a product with an Inf, a NaN or a nonzero
magnitude outside [2^-51, 2^60) to kernel 5, so that the answers are float's; other
products are kernel 7's, bit for bit. Shapes and kernel-7 parameters are small: its MMA is
emulated on the CPU."""

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import clgemm
from clgemm import device, guard, operands, verify

from .conftest import SMALL
from .test_submatrix import Block, aligned

pytestmark = pytest.mark.usefixtures("home")   # conftest: no tuned entries

P7 = SMALL["7"][0]
M, N, K = 40, 50, 60     # K >= guard.MIN_DEPTH: shallower products run kernel 5
F32 = np.float32
TOP = F32((2 - 2**-12) * 2.0**100)      # times 2^27 just below float's max; its TF32 head is 2^101


def operands_with(rng, case: str) -> tuple[np.ndarray, np.ndarray]:
    a, b = verify.random_matrix(rng, M, K), verify.random_matrix(rng, K, N)
    if case == "inf in A":
        a[3, 7] = np.inf
    elif case == "-inf in B":
        b[5, 11] = -np.inf
    elif case == "nan in A":
        a[0, 0] = np.nan
    elif case == "3.4e38 in A":
        a[2, 9] = F32(3.4e38)
    elif case == "a product near float's max":
        a[6, 1], b[1] = TOP, F32(2.0**27)
    elif case == "row of A x 1e-36":
        a[4] *= F32(1e-36)
    return a, b


def product(queue, a, b, **kw) -> np.ndarray:
    """gemm() into a c poisoned with NaN (beta = 0 never reads it)."""
    c = np.full((a.shape[0], b.shape[1]), np.nan, F32)
    return clgemm.gemm(queue, a, b, c, beta=0.0, **kw)


def floats_answer(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> bool:
    """IEEE semantics against float64: NaN and +-Inf where float64 has them, and every
    row's finite entries within kernel 5's tolerance of float64's, relative to that row
    (a row scaled by 1e-36 would vanish in a norm over the whole matrix)."""
    ref = verify.reference(a, b)
    if not (np.array_equal(np.isnan(c), np.isnan(ref))
            and np.array_equal(np.isposinf(c), np.isposinf(ref))
            and np.array_equal(np.isneginf(c), np.isneginf(ref))):
        return False
    finite = np.isfinite(ref)
    return all(verify.rel_error(c[r][finite[r]], ref[r][finite[r]]) <= verify.tolerance(a.shape[1])
               for r in range(c.shape[0]) if finite[r].any())


# case: whether kernel 7 alone gets it wrong (NaN gives NaN either way, and 3.4e38 alone
# is multiplied right: both are routed for the same bound's sake). None: it depends on
# the device. A head product of 2^128 is Inf in the emulation, but the H200's tensor
# cores summed al*bh + ah*bh into a finite float (pytest on the H200, 2026-12-04): the
# bound is for devices whose MMAs round each product.
CASES = {"inf in A": True, "-inf in B": True, "a product near float's max": None,
         "row of A x 1e-36": True, "nan in A": False, "3.4e38 in A": False}


@pytest.mark.parametrize("kernel", ["7", "8"])
@pytest.mark.parametrize("case", CASES)
def test_inputs_kernel_7_cannot_take_get_floats_answer(queue, rng, case, kernel):
    """Kernel 8 splits floats as kernel 7 does and has the same guard; what it gets wrong
    alone is asserted where the split decides it (Inf - Inf is NaN; NaN and 3.4e38 are
    multiplied right), not for a product near float's max or a row scaled by 1e-36,
    where the tensor cores' handling of the parts decides."""
    params = SMALL[kernel][0]
    a, b = operands_with(rng, case)
    guarded = product(queue, a, b, kernel=kernel, params=params)
    alone = product(queue, a, b, kernel=kernel, params=params, guard=False)
    fma = product(queue, a, b, kernel="5", split_k=1)
    assert floats_answer(fma, a, b)
    assert floats_answer(guarded, a, b)
    assert np.array_equal(guarded, fma, equal_nan=True)          # the fallback, bit for bit
    assert not np.array_equal(guarded, alone, equal_nan=True)    # another kernel ran
    wrong = CASES[case]
    if wrong is None and kernel == "7":
        wrong = not device.has_tf32_mma(queue.device)
    if kernel == "7" or case in ("inf in A", "-inf in B", "nan in A", "3.4e38 in A"):
        assert floats_answer(alone, a, b) != wrong               # the guard mattered or not
    if case in ("inf in A", "-inf in B"):
        assert np.isnan(alone).any() and not np.isnan(guarded).any()


@pytest.mark.parametrize("kernel", ["7", "8"])
@pytest.mark.parametrize("case", ["inf in A", "row of A x 1e-36", "none"])
def test_a_guarded_product_that_reads_c(queue, rng, kernel, case):
    """With beta != 0 the tensor-core kernel is built to return on a flagged call (GUARD=1),
    so that C reaches the fallback as it was; with beta = 0 it runs unguarded and the
    fallback overwrites its result (clgemm.guard.kernel_code). Either way a flagged call
    gives kernel 5's answer bit for bit, and an ordinary one the kernel's own."""
    params = SMALL[kernel][0]
    a, b = operands_with(rng, case)
    c0 = verify.random_matrix(rng, M, N)
    got = clgemm.gemm(queue, a, b, c0.copy(), alpha=2.0, beta=0.5, kernel=kernel, params=params)
    other = ("5", {"split_k": 1}) if case != "none" else (kernel, {"params": params, "guard": False})
    want = clgemm.gemm(queue, a, b, c0.copy(), alpha=2.0, beta=0.5, kernel=other[0], **other[1])
    assert np.array_equal(got, want, equal_nan=True)
    ref = 2.0 * verify.reference(a, b) + 0.5 * c0.astype(np.float64)
    if case == "none":
        assert verify.rel_error(got, ref) <= verify.tolerance(K)


@pytest.mark.parametrize("kernel", ["7", "8"])
def test_the_scan_beside_the_kernel_waits_for_the_operands(queue, rng, kernel):
    """Where C is not read the scan runs on a second queue (guard.Beside); it must still
    see what the caller's queue writes into the operands before the call. Here A's Inf
    lands by a copy held back by a user event until after the call is enqueued (and the
    scan's queue has had time to run): a scan that did not wait would miss it, and the
    kernel's NaN would stand."""
    import time
    if "NVIDIA" in queue.device.platform.name:
        pytest.skip("NVIDIA's OpenCL (580.159.04) crashes at a read after a copy held back by "
                    "a user event, with kernel 5 alone too (git show 95d7cb0:probe/gate.py)")
    params = SMALL[kernel][0]
    a, b = operands_with(rng, "inf in A")
    da, src = cla.to_device(queue, np.zeros_like(a)), cla.to_device(queue, a)
    db = cla.to_device(queue, b)
    queue.finish()
    gate = cl.UserEvent(queue.context)
    cl.enqueue_copy(queue, da.data, src.data, wait_for=[gate])      # device to device
    out = clgemm.gemm(queue, da, db, kernel=kernel, params=params)
    time.sleep(0.2)
    gate.set_status(cl.command_execution_status.COMPLETE)
    got = out.get()
    assert np.array_equal(got, product(queue, a, b, kernel="5", split_k=1), equal_nan=True)
    assert floats_answer(got, a, b)


@pytest.mark.parametrize("kernel", ["7", "8"])
def test_ordinary_operands_run_the_tensor_core_kernel(queue, rng, kernel):
    """The common case is the tensor-core kernel's product, not the fallback's: bit for
    bit what it gives alone, and not what kernel 5 gives."""
    params = SMALL[kernel][0]
    a, b = operands_with(rng, "none")
    guarded = product(queue, a, b, kernel=kernel, params=params)
    assert np.array_equal(guarded, product(queue, a, b, kernel=kernel, params=params, guard=False))
    assert not np.array_equal(guarded, product(queue, a, b, kernel="5", split_k=1))
    assert floats_answer(guarded, a, b)


def test_a_plan_alternating_special_and_ordinary_operands(queue, rng, monkeypatch):
    """Every call of one cached layout takes a new epoch: a flag left by an earlier call
    must not send a later one to the fallback, nor miss its own. The calls are all
    enqueued before any result is read, and none reads anything back to the host."""
    cases = ["none", "inf in A", "inf in A", "none", "nan in A", "row of A x 1e-36", "none",
             "-inf in B", "none"]
    inputs = [operands_with(rng, case) for case in cases]
    want = [product(queue, a, b, kernel="5", split_k=1) if case != "none"
            else product(queue, a, b, kernel="7", params=P7, guard=False)
            for case, (a, b) in zip(cases, inputs)]
    dev = [(cla.to_device(queue, a), cla.to_device(queue, b)) for a, b in inputs]
    plan = clgemm.Plan(queue, M, N, K, kernel="7", params=P7)
    assert plan.describe()["guarded"]
    plan(*dev[0])                                   # lays the layout out (and builds)
    reads = []
    real_copy = cl.enqueue_copy
    monkeypatch.setattr(cl, "enqueue_copy", lambda q, dest, src, **kw: (
        isinstance(dest, np.ndarray) and reads.append(dest)) or real_copy(q, dest, src, **kw))
    monkeypatch.setattr(cl, "wait_for_events", lambda events: reads.append(events))
    outs = [plan(da, db) for da, db in dev]
    assert reads == [] and plan.reused == len(cases)
    monkeypatch.undo()
    for case, out, w in zip(cases, outs, want):
        assert np.array_equal(out.get(), w, equal_nan=True), case


@pytest.mark.parametrize("where", ["aligned", "offset 1"])
def test_a_block_is_scanned_and_not_its_neighbours(queue, rng, where):
    """A of a larger matrix whose other elements hold NaN: read where it lies (32 x 64, its
    rows ld = 68 apart, at a sub-buffer's origin), or copied first (offset 1). The scan
    reads the block as kernel 7 does, and nothing around it."""
    a, b = verify.random_matrix(rng, 32, 64), verify.random_matrix(rng, 64, N)
    offset = aligned(queue) if where == "aligned" else 1
    block = Block(queue, a, "R", 4, offset)
    db = cla.to_device(queue, b)
    guarded = clgemm.gemm(queue, block.view, db, kernel="7", params=P7).get()
    alone = clgemm.gemm(queue, block.view, db, kernel="7", params=P7, guard=False).get()
    assert np.array_equal(guarded, alone)
    a[-1, -1] = np.inf
    block = Block(queue, a, "R", 4, offset)
    guarded = clgemm.gemm(queue, block.view, db, kernel="7", params=P7).get()
    assert floats_answer(guarded, a, b)


# ---------------------------------------------------------------- the scan alone

def scan_flags(queue, a: np.ndarray, b: np.ndarray, lda: int, ldb: int, epoch: int = 7) -> bool:
    """Whether the scan flags a and b, laid out rows ld apart with NaN between rows (the
    padding a scan must not read)."""
    mats = []
    for x, ld in ((a, lda), (b, ldb)):
        rows, cols = x.shape
        flat = np.full(rows * ld, np.nan, F32)
        flat.reshape(rows, ld)[:, :cols] = x
        mats.append(operands.Matrix(cla.to_device(queue, flat).base_data, rows, cols, ld))
    flag = cla.zeros(queue, 1, np.int32)
    step = guard.scan(queue, *mats, flag.base_data)
    step.set(9, np.int32(epoch))
    step()
    return {0: False, epoch: True}[int(flag.get()[0])]


SHAPES = [((1, 1), 1), ((1, 1), 4), ((7, 13), 13), ((7, 13), 16), ((13, 8), 8), ((5, 11), 11),
          ((3, 9), 12), ((31, 37), 41), ((2, 1), 5)]


@pytest.mark.parametrize("shape,ld", SHAPES, ids=lambda v: str(v))
@pytest.mark.parametrize("at", ["first", "last", "nowhere"])
@pytest.mark.parametrize("operand", "AB")
def test_scan_finds_a_value_wherever_it_lies(queue, rng, shape, ld, at, operand):
    x = verify.random_matrix(rng, *shape)
    other = verify.random_matrix(rng, 3, 5)
    if at != "nowhere":
        x[(0, 0) if at == "first" else (-1, -1)] = np.inf
    a, b = (x, other) if operand == "A" else (other, x)
    lda, ldb = (ld, 8) if operand == "A" else (8, ld)
    assert scan_flags(queue, a, b, lda, ldb) == (at != "nowhere")


def test_scan_thresholds(queue):
    """Flagged: Inf, NaN, subnormals, nonzero magnitudes below 2^-51 and from 2^60; not:
    zeros of either sign and everything between, ends included."""
    small, big = F32(2.0**guard.SMALL_EXP), F32(2.0**guard.BIG_EXP)
    flagged = [np.inf, -np.inf, np.nan, F32(1e-45), -F32(1e-40), np.nextafter(small, F32(0)),
               -np.nextafter(small, F32(0)), big, -big, np.finfo(F32).max]
    kept = [0.0, -0.0, small, -small, np.nextafter(big, F32(0)), -np.nextafter(big, F32(0)), 1.0]
    one = np.ones((1, 1), F32)
    for value, want in [(v, True) for v in flagged] + [(v, False) for v in kept]:
        x = np.full((2, 5), F32(0.5))
        x[1, 4] = value
        y = np.full((1, 8), F32(0.5))
        y[0, 6] = value
        assert scan_flags(queue, x, one, 8, 4) == want, value     # a row's partial float4
        assert scan_flags(queue, x, one, 5, 4) == want, value     # floats (ld 5)
        assert scan_flags(queue, one, y, 4, 8) == want, value     # a float4


def test_shallow_products_run_kernel_5(queue, rng):
    """Below guard.MIN_DEPTH a guarded kernel-7 call runs kernel 5's entry, whose float
    chain is more accurate there than kernel 7's truncating MMA sums; at MIN_DEPTH and
    without the guard, kernel 7 runs."""
    k = guard.MIN_DEPTH - 1
    a, b = verify.random_matrix(rng, M, k), verify.random_matrix(rng, k, N)
    plan = clgemm.Plan(queue, M, N, k, kernel="7", params=P7)
    assert plan.kernel == "5"
    assert np.array_equal(product(queue, a, b, kernel="7", params=P7),
                          product(queue, a, b, kernel="5"))
    assert clgemm.Plan(queue, M, N, k, kernel="7", params=P7, guard=False).kernel == "7"
    assert clgemm.Plan(queue, M, N, guard.MIN_DEPTH, kernel="7", params=P7).kernel == "7"


@pytest.mark.parametrize("kernel", ["7", "8"])
def test_shallow_products_still_check_the_parameters_given(queue, rng, kernel):
    """Below guard.MIN_DEPTH kernel 5 runs instead of the kernel asked for, but parameters
    given for that kernel are still checked, not passed over."""
    a, b = verify.random_matrix(rng, 8, 8), verify.random_matrix(rng, 8, 8)
    with pytest.raises(ValueError, match="TSM=96 is outside"):
        clgemm.gemm(queue, a, b, kernel=kernel, params={"TSM": 96})
    with pytest.raises(ValueError, match="no parameter 'TSX'"):
        clgemm.Plan(queue, 8, 8, 8, kernel=kernel, params={"TSX": 32})


@pytest.mark.parametrize("bad", ["no", None, 2])
def test_guard_must_be_a_bool(queue, bad):
    """A guard that is not True or False is refused by name, not read as truthy."""
    a = np.ones((4, 4), F32)
    with pytest.raises(TypeError, match="guard must be True or False"):
        clgemm.gemm(queue, a, a, kernel="7", guard=bad)
    with pytest.raises(TypeError, match="guard must be True or False"):
        clgemm.Plan(queue, 4, 4, 4, kernel="7", guard=bad)


@pytest.mark.parametrize("key", ["7", "8"])
def test_magnitudes_whose_mma_sums_overflow_run_kernel_5(queue, key):
    """A row x, x, -x, -x, ... times a column of x, with x = 7e18: exactly 0, and finite in
    kernel 5's chain, but the MMAs' fresh sums of up to 32 products of 2^125 overflow: with
    the bound at 2^63 the guarded kernels gave NaN. From 2^60 such operands are flagged,
    and kernel 5 answers; just below it, every sum of 64 products stays finite."""
    k = 64
    for x, flagged in ((F32(7e18), True), (np.nextafter(F32(2.0 ** guard.BIG_EXP), F32(0)), False)):
        a = np.zeros((4, k), F32)
        a[0] = np.tile(np.array([x, x, -x, -x], F32), k // 4)
        a[1] = x                                   # no cancellation: 64 x^2, finite if < 2^128
        b = np.full((k, 3), x, F32)
        got = product(queue, a, b, kernel=key)
        assert np.isfinite(got[0]).all(), (x, got)        # row 1 overflows in float at 7e18
        if flagged:
            assert np.array_equal(got, product(queue, a, b, kernel="5"))
        else:
            assert np.isfinite(got).all(), (x, got)
            ref = a.astype(np.float64) @ b.astype(np.float64)
            assert np.allclose(got, ref, rtol=1e-5, atol=1e-6 * float(x) ** 2)

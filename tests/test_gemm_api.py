"""The library call's contract: numpy and Array in and out, both orders, alpha/beta, c,
the program cache, and clear errors for bad input."""

import sys

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import clgemm
from clgemm import build, db, device, kernels, verify
from clgemm.gemm import GemmPlan
from clgemm.operands import is_transposed
from clgemm.transpose import TransposePlan

P5 = dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=0)


def rand(rng, *shape, order="C"):
    x = verify.random_matrix(rng, *shape)
    return np.asfortranarray(x) if order == "F" else x


def close(out, ref, k):
    return verify.rel_error(np.asarray(out), ref) <= verify.tolerance(k)


@pytest.mark.parametrize("order_a", "CF")
@pytest.mark.parametrize("order_b", "CF")
@pytest.mark.parametrize("kernel,params", [("5", P5), ("2", {"TS": 4})])
def test_numpy_orders(queue, rng, order_a, order_b, kernel, params):
    a, b = rand(rng, 45, 23, order=order_a), rand(rng, 23, 31, order=order_b)
    c = clgemm.gemm(queue, a, b, kernel=kernel, params=params)
    assert isinstance(c, np.ndarray) and c.shape == (45, 31)
    assert close(c, verify.reference(a, b), 23)


@pytest.mark.parametrize("order_a", "CF")
@pytest.mark.parametrize("order_b", "CF")
def test_array_in_array_out(queue, rng, order_a, order_b):
    a, b = rand(rng, 33, 17, order=order_a), rand(rng, 17, 29, order=order_b)
    da, dB = cla.to_device(queue, a), cla.to_device(queue, b)
    dc = clgemm.gemm(queue, da, dB, kernel="5", params=P5)
    assert isinstance(dc, cla.Array) and dc.queue is queue and dc.shape == (33, 29)
    assert close(dc.get(), verify.reference(a, b), 17)


def test_array_result_stays_on_device(queue, rng, monkeypatch):
    """No host round trip for Array inputs: nothing is read back to the host."""
    a, b = cla.to_device(queue, rand(rng, 40, 40)), cla.to_device(queue, rand(rng, 40, 40))
    reads = []
    real = cl.enqueue_copy

    def spy(q, dest, src, **kw):
        if isinstance(dest, np.ndarray):
            reads.append(dest.shape)
        return real(q, dest, src, **kw)

    monkeypatch.setattr(cl, "enqueue_copy", spy)
    clgemm.gemm(queue, a, b, kernel="5", params=P5)
    assert reads == []


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("order", "CF")
@pytest.mark.parametrize("by", ["transpose", "kernel", "auto"])
def test_transposed_operands(queue, rng, trans_a, trans_b, order, by, monkeypatch):
    m, n, k = 19, 37, 11
    a = rand(rng, *((k, m) if trans_a else (m, k)), order=order)
    b = rand(rng, *((n, k) if trans_b else (k, n)), order=order)
    launches = []
    monkeypatch.setattr(GemmPlan, "bound", spy(GemmPlan.bound, launches))
    monkeypatch.setattr(TransposePlan, "bind", spy(TransposePlan.bind, launches))
    c = clgemm.gemm(queue, a, b, trans_a=trans_a, trans_b=trans_b, kernel="5", params=P5,
                    transposed_by=by)
    ref = verify.reference(a.T if trans_a else a, b.T if trans_b else b)
    assert close(c, ref, k)
    if by == "kernel":      # operands read as they lie: one launch, no transposes
        assert launches == ["GemmPlan"]
    if by == "auto":        # A^T read as it lies; B^T transposed unless C^T = B^T A^T avoids it
        op_a_t, op_b_t = trans_a != (order == "F"), trans_b != (order == "F")
        assert launches.count("TransposePlan") == (op_b_t and not op_a_t)
        assert launches.count("GemmPlan") == 1


def spy(method, log):
    def wrapper(self, *args, **kwargs):
        log.append(type(self).__name__)
        return method(self, *args, **kwargs)
    return wrapper


@pytest.mark.parametrize("ta,tb", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("shape", [(64, 128, 48), (37, 53, 29), (1, 70, 33), (70, 1, 5)])
def test_kernel_reads_transposed_operands(queue, rng, ta, tb, shape):
    """The A_KMAJOR / B_NMAJOR builds of kernels 5 and 6, whole tiles (EXACT) and partial."""
    m, n, k = shape
    for kernel, params in (("5", P5), ("6", dict(P5, WIDTH=2, WPTN=4, WPTM=4))):
        a = rand(rng, *((k, m) if ta else (m, k)))
        b = rand(rng, *((n, k) if tb else (k, n)))
        c = clgemm.gemm(queue, a, b, trans_a=ta, trans_b=tb, kernel=kernel, params=params,
                        transposed_by="kernel")
        assert close(c, verify.reference(a.T if ta else a, b.T if tb else b), k)


def test_transposed_by_is_checked(queue, rng):
    with pytest.raises(ValueError, match="transposed_by must be one of"):
        clgemm.gemm(queue, rand(rng, 4, 4), rand(rng, 4, 4), transposed_by="magic")
    with pytest.raises(ValueError, match="kernel 4 .* cannot read transposed operands"):
        clgemm.gemm(queue, rand(rng, 4, 4), rand(rng, 4, 4), trans_a=True, kernel="4",
                    transposed_by="kernel")


@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (0.0, 1.0), (-1.5, 0.5), (2.0, -1.0), (0.0, 0.0)])
@pytest.mark.parametrize("as_array", [False, True])
def test_alpha_beta_into_c(queue, rng, alpha, beta, as_array):
    a, b, c0 = rand(rng, 21, 13), rand(rng, 13, 18), rand(rng, 21, 18)
    c = cla.to_device(queue, c0) if as_array else c0.copy()
    out = clgemm.gemm(queue, a, b, c, alpha=alpha, beta=beta, kernel="5", params=P5)
    assert out is c
    got = c.get() if as_array else c
    ref = verify.reference(a, b, alpha, beta, c0)
    if not np.any(ref):  # alpha = beta = 0: exactly zero
        assert not np.any(got)
    else:
        assert close(got, ref, 13)


@pytest.mark.parametrize("kernel,params", [("1", {"TS": 4}), ("2", {"TS": 4}), ("3", None), ("5", P5)])
def test_beta_zero_never_reads_c(queue, rng, kernel, params):
    a, b = rand(rng, 30, 9), rand(rng, 9, 22)
    c = np.full((30, 22), np.nan, np.float32)
    clgemm.gemm(queue, a, b, c, beta=0.0, kernel=kernel, params=params)
    assert np.all(np.isfinite(c))
    assert close(c, verify.reference(a, b), 9)


def test_fortran_c_is_filled_in_place(queue, rng):
    a, b = rand(rng, 14, 6), rand(rng, 6, 10)
    c0 = rand(rng, 14, 10, order="F")
    c = cla.to_device(queue, c0)
    clgemm.gemm(queue, a, b, c, alpha=1.0, beta=1.0, kernel="5", params=P5)
    assert close(c.get(), verify.reference(a, b, 1.0, 1.0, c0), 6)


def test_program_cache(queue, rng):
    a, b = rand(rng, 8, 8), rand(rng, 8, 8)
    params = {"TS": 8}
    clgemm.gemm(queue, a, b, kernel="2", params=params)
    n = build.cache_size()
    clgemm.gemm(queue, a, b, kernel="2", params=params)
    assert build.cache_size() == n


@pytest.mark.parametrize("rows,cols,src_ld,dst_ld", [
    (37, 53, 53, 53),       # dense both sides: one flat copy
    (29, 40, 40, 64),       # widths of 4: the float4 copy_rows build
    (29, 40, 44, 40),
    (5, 37, 37, 40),        # odd width: the scalar build
    (1, 3, 3, 8),
    (130, 70, 71, 73),
])
def test_copy_rect_copies_the_block_and_nothing_else(queue, rng, rows, cols, src_ld, dst_ld):
    """Every path of operands.copy_rect: the block arrives, and the destination's columns
    beyond it (and its rows beyond it) keep what they held."""
    from clgemm import operands
    src = rand(rng, rows, src_ld)
    dst0 = rand(rng, rows + 2, dst_ld)
    sbuf = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=src)
    dbuf = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=dst0)
    operands.copy_rect(queue, sbuf, src_ld, dbuf, dst_ld, rows, cols).wait()
    got = np.empty_like(dst0)
    cl.enqueue_copy(queue, got, dbuf)
    want = dst0.copy()
    want[:rows, :cols] = src[:, :cols]
    assert np.array_equal(got, want)


# ------------------------------------------------------------------ bad input

@pytest.mark.parametrize("a,b,exc,words", [
    (np.zeros((3, 4), np.float32), np.zeros((5, 2), np.float32), ValueError, "inner dimensions"),
    (np.zeros((3,), np.float32), np.zeros((3, 2), np.float32), ValueError, "2-D"),
    (np.zeros((3, 4, 1), np.float32), np.zeros((4, 2), np.float32), ValueError, "2-D"),
    (np.zeros((3, 4), np.float64), np.zeros((4, 2), np.float32), TypeError, "float32"),
    (np.zeros((3, 4), np.float32), np.zeros((4, 2), np.int32), TypeError, "float32"),
    ([[1.0]], np.zeros((1, 1), np.float32), TypeError, "numpy array"),
    (np.ma.masked_invalid(np.array([[1, np.nan]], np.float32)), np.ones((2, 1), np.float32),
     TypeError, "a is a masked array"),
])
def test_bad_input(queue, a, b, exc, words):
    with pytest.raises(exc, match=words):
        clgemm.gemm(queue, a, b)


@pytest.mark.parametrize("bad", ["N", "no", "", 2, None])
def test_transposes_must_be_bools(queue, bad):
    """trans_a="N" (BLAS's no-transpose) would read as truthy and transpose a square
    operand without a word: anything but True or False (or 1 and 0) is refused by name."""
    a = np.ones((4, 4), np.float32)
    for name in ("trans_a", "trans_b"):
        with pytest.raises(TypeError, match=f"{name} must be True or False"):
            clgemm.gemm(queue, a, a, **{name: bad})
        with pytest.raises(TypeError, match=f"{name} must be True or False"):
            clgemm.Plan(queue, 4, 4, 4, **{name: bad})
    b = np.arange(16, dtype=np.float32).reshape(4, 4)
    assert np.array_equal(clgemm.gemm(queue, a, b, trans_b=np.bool_(True)), a @ b.T)
    assert np.array_equal(clgemm.gemm(queue, a, b, trans_b=0), a @ b)


@pytest.mark.parametrize("as_array", [False, True])
def test_zero_dimensions_follow_blas(queue, rng, as_array):
    """k = 0 is an empty sum: zeros, or beta * C with c (alpha is not used); m = 0 or
    n = 0 gives an empty result. numpy's matmul and BLAS agree on both."""
    dev = (lambda x: cla.to_device(queue, x)) if as_array else (lambda x: x)
    host = (lambda x: x.get()) if as_array else (lambda x: x)
    a, b = np.zeros((5, 0), np.float32), np.zeros((0, 3), np.float32)
    out = clgemm.gemm(queue, dev(a), dev(b))
    assert out.shape == (5, 3) and np.array_equal(host(out), a @ b)
    c0 = rand(rng, 5, 3)
    c = dev(c0.copy())
    assert clgemm.gemm(queue, dev(a), dev(b), c, alpha=3.0, beta=-0.5) is c
    assert np.array_equal(host(c), np.float32(-0.5) * c0)
    c = dev(np.full((5, 3), np.nan, np.float32))
    clgemm.gemm(queue, dev(a), dev(b), c, beta=0.0)          # beta = 0 never reads c
    assert np.array_equal(host(c), np.zeros((5, 3), np.float32))
    for m, n in ((0, 3), (5, 0), (0, 0)):
        out = clgemm.gemm(queue, dev(np.zeros((m, 4), np.float32)), dev(np.zeros((4, n), np.float32)))
        assert out.shape == (m, n)
    with pytest.raises(ValueError, match="inner dimensions"):
        clgemm.gemm(queue, dev(np.zeros((5, 0), np.float32)), dev(np.zeros((1, 3), np.float32)))


@pytest.mark.parametrize("option,value,exc,words", [
    ("kernel", "99", ValueError, "unknown tunable kernel '99'"),
    ("params", {"TSM": 3}, ValueError, "TSM=3 is outside kernel 5's space"),
    ("transposed_by", "magic", ValueError, "transposed_by must be one of"),
    ("split_k", 0, ValueError, "split_k must be"),
    ("guard", "yes", TypeError, "guard must be True or False"),
    ("allocator", 5, TypeError, "allocator must be callable"),
])
def test_an_empty_product_refuses_bad_options_too(queue, option, value, exc, words):
    """With a zero dimension there is nothing to compute, but the options are checked as
    for any other product: the mistake shows at once, not at the first real shape."""
    options = {"kernel": "5"} if option == "params" else {}
    with pytest.raises(exc, match=words):
        clgemm.gemm(queue, np.zeros((5, 0), np.float32), np.zeros((0, 3), np.float32),
                    **options, **{option: value})


def test_array_from_another_context(queue, rng):
    other = cl.CommandQueue(cl.Context([queue.device]))
    a = cla.to_device(other, rand(rng, 4, 4))
    with pytest.raises(TypeError, match="another OpenCL context"):
        clgemm.gemm(queue, a, rand(rng, 4, 4))


def test_bad_c(queue, rng):
    a, b = rand(rng, 4, 5), rand(rng, 5, 6)
    with pytest.raises(ValueError, match="c has shape"):
        clgemm.gemm(queue, a, b, np.zeros((6, 4), np.float32))
    with pytest.raises(TypeError, match="float32"):
        clgemm.gemm(queue, a, b, np.zeros((4, 6)))


def test_read_only_c_is_refused_before_the_product(queue, rng, monkeypatch):
    a, c = rand(rng, 4, 4), np.zeros((4, 4), np.float32)
    c.flags.writeable = False
    monkeypatch.setattr(sys.modules["clgemm.gemm"], "prepare", lambda *a, **k: pytest.fail("ran"))
    with pytest.raises(ValueError, match="c is a read-only"):
        clgemm.gemm(queue, a, a, c, beta=1.0)


@pytest.mark.parametrize("value,exc,words", [
    (None, TypeError, "alpha must be a real number, not NoneType"),
    (1j, TypeError, "alpha must be a real number, not complex"),
    ("2", TypeError, "alpha must be a real number, not str"),
    (np.array([2.0]), TypeError, "alpha must be a real number, not ndarray"),
    (True, TypeError, "alpha must be a real number, not bool"),
    (1e40, ValueError, "alpha=1e[+]?40 is beyond float32's range"),
    (10**39, ValueError, "alpha=1e[+]?39 is beyond float32's range"),
    (-10**400, ValueError, "alpha=-[(]an integer of 1329 bits[)] is beyond float32's range"),
])
def test_bad_alpha(queue, rng, value, exc, words):
    a = rand(rng, 4, 4)
    with pytest.raises(exc, match=words):
        clgemm.gemm(queue, a, a, alpha=value)
    with pytest.raises(exc, match=words.replace("alpha", "beta")):
        clgemm.gemm(queue, a, a, np.zeros((4, 4), np.float32), beta=value)


def test_numpy_scalars_are_taken(queue, rng):
    a, b = rand(rng, 9, 70), rand(rng, 70, 5)
    c = clgemm.gemm(queue, a, b, alpha=np.float32(2.0), beta=np.int64(0), kernel="5", params=P5,
                    split_k=np.int64(2))
    assert close(c, verify.reference(a, b, 2.0), 70)


def test_c_aliasing_an_input(queue, rng):
    a = cla.to_device(queue, rand(rng, 5, 5))
    with pytest.raises(ValueError, match="shares its buffer"):
        clgemm.gemm(queue, a, a, a)


def test_unknown_kernel_and_params(queue, rng):
    a = rand(rng, 4, 4)
    with pytest.raises(ValueError, match="valid kernels: 1 \\(naive\\)"):
        clgemm.gemm(queue, a, a, kernel=9)
    with pytest.raises(ValueError, match="no parameter 'TSX'"):
        clgemm.gemm(queue, a, a, kernel="3", params={"TSX": 4})
    with pytest.raises(ValueError, match="TS=24 is outside"):
        clgemm.gemm(queue, a, a, kernel="2", params={"TS": 24})
    with pytest.raises(ValueError, match="must be an integer"):
        clgemm.gemm(queue, a, a, kernel="2", params={"TS": "8 -DEVIL"})
    for odd in ("²", float("inf"), float("nan")):
        with pytest.raises(ValueError, match="TS=.* must be an integer"):
            clgemm.gemm(queue, a, a, kernel="2", params={"TS": odd})
    for not_a_mapping in ([("TS", 4)], "TS=4"):
        with pytest.raises(TypeError, match="params must be a mapping"):
            clgemm.gemm(queue, a, a, kernel="2", params=not_a_mapping)


def test_constraint_violation_names_the_constraint(queue, rng):
    a = rand(rng, 4, 4)
    with pytest.raises(ValueError, match="WIDTH divides WPTM"):
        clgemm.gemm(queue, a, a, kernel="5", params=dict(P5, WPTM=2, WIDTH=4))


def test_too_large_for_device_fails_before_allocating(queue, monkeypatch):
    """A matrix beyond the device's max allocation is refused before any buffer exists."""
    made = []
    real = cl.Buffer
    monkeypatch.setattr(cl, "Buffer", lambda *a, **k: made.append(1) or real(*a, **k))
    # a strided view costs no host memory: shape (M, K) with K huge
    big = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), shape=(2**16, 2**16),
                                          strides=(0, 0))
    small = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), shape=(2**16, 2),
                                            strides=(0, 0))
    with pytest.raises(ValueError, match="maximum allocation|32-bit"):
        clgemm.gemm(queue, big, small)
    assert made == []


def test_device_selection_errors():
    with pytest.raises(device.DeviceNotFound, match="no OpenCL device matches"):
        device.select("no-such-device-xyz")
    with pytest.raises(device.DeviceNotFound, match="Devices:"):
        device.select("99:0")


def test_device_selection_by_index_and_name():
    e = [x for x in device.entries() if "oclgrind" not in x.platform.name.lower()][0]
    assert device.select(e.spec) == e.device
    assert device.select(e.device.name[:6].lower()) is not None


def test_pyopencl_ctx_is_honoured(monkeypatch):
    e = device.entries()[-1]
    monkeypatch.setenv("PYOPENCL_CTX", e.spec)
    assert device.select() == e.device


def test_nvidia_icd_hint(monkeypatch, tmp_path):
    """An installed but unregistered NVIDIA OpenCL driver gets exact registration advice."""
    monkeypatch.setattr(device, "_find_nvidia_opencl", lambda: "/usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1")
    monkeypatch.setenv("OCL_ICD_VENDORS", str(tmp_path))
    cpu_only = [e for e in device.entries() if not device.is_gpu(e.device)]
    monkeypatch.setattr(device, "entries", lambda: cpu_only)
    hint = device.nvidia_icd_hint()
    assert "/etc/OpenCL/vendors/nvidia.icd" in hint and "OCL_ICD_VENDORS" in hint
    assert "libnvidia-opencl.so.1" in hint
    (tmp_path / "nvidia.icd").write_text("libnvidia-opencl.so.1\n")
    assert device.nvidia_icd_hint() is None        # registered: nothing to say
    monkeypatch.setattr(device, "_find_nvidia_opencl", lambda: None)
    (tmp_path / "nvidia.icd").unlink()
    assert device.nvidia_icd_hint() is None        # no driver: nothing to say either


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(m=st.integers(1, 40), n=st.integers(1, 40), k=st.integers(1, 40),
       ta=st.booleans(), tb=st.booleans(), orders=st.sampled_from(["CCC", "FCF", "CFC", "FFF", "FFC"]),
       with_c=st.booleans(), beta=st.sampled_from([0.0, 1.0, -0.5]), as_array=st.booleans(),
       kernel=st.sampled_from(["3", "5", "6", "7"]), by=st.sampled_from(["transpose", "kernel", "auto"]),
       guarded=st.booleans())
def test_any_layout_any_op(queue, m, n, k, ta, tb, orders, with_c, beta, as_array, kernel, by,
                           guarded):
    """Every layout and op through gemm(); kernel 7 guarded (k < 48 runs kernel 5 then) or
    alone, so that its own layouts are covered at these small shapes too."""
    rng = np.random.default_rng()
    a = rand(rng, *((k, m) if ta else (m, k)), order=orders[0])
    b = rand(rng, *((n, k) if tb else (k, n)), order=orders[1])
    c0 = rand(rng, m, n, order=orders[2])
    put = (lambda x: cla.to_device(queue, x)) if as_array else (lambda x: x.copy(order="K"))
    params = {"3": dict(TSM=16, TSN=16, TSK=4, WPTM=2, WPTN=2),
              "5": P5, "6": dict(P5, WIDTH=2, WPTN=4, WPTM=4),
              "7": dict(TSM=32, TSN=32, TSK=16, WM=32, WN=32, FOLD=8)}[kernel]
    c = put(c0) if with_c else None
    out = clgemm.gemm(queue, put(a), put(b), c, alpha=1.5, beta=beta, trans_a=ta, trans_b=tb,
                      kernel=kernel, params=params, guard=guarded,
                      transposed_by="transpose" if kernel in ("3", "7") and by == "kernel" else by)
    got = out.get() if as_array else out
    opa, opb, b_eff = a.T if ta else a, b.T if tb else b, beta if with_c else 0.0
    ref = verify.reference(opa, opb, 1.5, b_eff, c0)
    assert got.shape == (m, n)
    # m = n = 1 is one sum, which may cancel: judged against its terms' magnitudes too
    assert verify.passes(np.asarray(got), ref, k, opa, opb, 1.5, b_eff, c0)
    if with_c:
        assert out is c


def test_pad_rule(queue):
    """Auto-padding only where it wastes little and the launch is large; never for kernels
    without an EXACT build, nor for shapes that are whole tiles already."""
    from clgemm.heuristics import DEFAULTS
    PAD_MIN_VOLUME = DEFAULTS["pad_min_volume"]
    plan = GemmPlan(queue, "5", P5)                    # "auto" is the default
    assert plan.pad == "auto"
    assert plan.pads(4001, 4001, 4001)                 # 4032^3: 2% more work
    assert not plan.pads(4000, 4000, 4000)             # whole 32x32x8 tiles already
    assert not plan.pads(37, 53, 29)                   # too small to pay for the copies
    side = round(PAD_MIN_VOLUME ** (1 / 3)) - 9        # just below the volume threshold
    assert side**3 < PAD_MIN_VOLUME < (side + 32) ** 3 and side % 32
    assert not plan.pads(side, side, side) and plan.pads(side + 32, side + 32, side + 32)
    assert not plan.pads(1, 4096, 4096)                # 32x the work
    assert not plan.pads(4001, 4001, 135)              # too shallow to repay the copies
    assert not plan.pads(1001, 1001, 2150)             # too narrow
    assert plan.pads(4001, 4001, 1001)
    assert not plan.pads(4001, 4001, 4000) and plan.loads(4001, 4001, 4000) == "clamp"   # CLAMP, no copies
    assert GemmPlan(queue, "5", P5, pad="yes").pads(4001, 4001, 4000)
    assert not GemmPlan(queue, "5", P5, pad="no").pads(4001, 4001, 4001)
    assert GemmPlan(queue, "5", P5, pad="yes").pads(37, 53, 29)
    assert not GemmPlan(queue, "4", dict(P5, PAD=1), pad="yes").pads(37, 53, 29)
    with pytest.raises(ValueError, match="pad must be one of"):
        GemmPlan(queue, "5", P5, pad="always")


@pytest.mark.parametrize("where", ["host", "device"])
@pytest.mark.parametrize("by", ["transpose", "kernel"])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("kernel,params,split", [("5", P5, 1), ("6", dict(P5, WIDTH=1), 1),
                                                 ("5", P5, 3)])
def test_padded_copies_give_the_same_product(queue, rng, where, by, ta, tb, kernel, params, split):
    """pad="yes": operands put into zero-padded whole tiles, the EXACT build launched
    over them, and C (read for beta) written in place by the kernel's bounds-checked
    stores; odd shapes, both operand layouts, host and device operands, beta != 0,
    split-K, and beta = 0 over NaN."""
    from clgemm.gemm import prepare
    m, n, k = 37, 53, 29
    a = rand(rng, *((k, m) if ta else (m, k)))
    b = rand(rng, *((n, k) if tb else (k, n)))
    c0 = rand(rng, m, n)
    opa, opb = (a.T if ta else a), (b.T if tb else b)
    ha, hb = opa, opb
    if where == "device":
        opa, opb = cla.to_device(queue, opa), cla.to_device(queue, opb)
    plan = GemmPlan(queue, kernel, params, transposed_by=by, pad="yes", split_k=split)
    for alpha, beta, fill in ((1.5, -0.5, None), (1.0, 0.0, np.nan)):
        c = c0.copy()
        if fill is not None:
            c[...] = fill
        prep = prepare(plan, opa, opb, c, alpha, beta)
        assert prep.padded
        assert (prep.out.rows, prep.out.cols) == ((n, m) if prep.swap else (m, n))   # not padded
        # A device operand goes into its padded buffer by a step (a copy, or a transpose
        # that writes straight there); a host one is uploaded there, and takes a step only
        # for a device transpose (laid out transposed, and not read as it lies).
        x, y = (hb.T, ha.T) if prep.swap else (ha, hb)
        moved = 2 if where == "device" else sum(
            is_transposed(v) and not r for v, r in zip((x, y), plan.reads))
        # then C's transpose in when it is read and stored transposed, the product (and its sum)
        assert len(prep.launch()) == moved + (prep.swap and beta != 0) + 1 + (prep.splits > 1)
        assert (prep.splits > 1) == (split > 1)
        c[...] = host_result(queue, prep)
        assert close(c, verify.reference(ha, hb, alpha, beta, c0), k)
    assert set(key[0] for key in plan._programs) == {"exact"}    # only the EXACT build ran


@pytest.mark.parametrize("by,pad,built", [
    # (tile loads build, A_KMAJOR, B_NMAJOR, SPLIT_K, C_UNALIGNED, COLUMNS_FIRST): C is 37 x 53,
    # in place, in 4 tiles
    ("kernel", "no", {("checked", True, False, False, True, False)}),   # A read as K x M, partial tiles
    ("transpose", "yes", {("exact", False, False, False, True, False)}),   # padded to whole tiles: EXACT
])
def test_prepare_builds_only_the_variant_it_launches(queue, rng, by, pad, built):
    from clgemm.gemm import prepare
    a, b = rand(rng, 29, 37), rand(rng, 29, 53)      # op(A) = a.T is 37 x 29
    plan = GemmPlan(queue, "5", P5, transposed_by=by, pad=pad)
    assert plan._programs == {}                        # nothing built before it is needed
    prep = prepare(plan, a.T, b, None, 1.0, 0.0)
    assert set(plan._programs) == built
    prep.launch()
    assert set(plan._programs) == built
    assert close(host_result(queue, prep), verify.reference(a.T, b), 29)


def host_result(queue, prep):
    from clgemm import operands
    out = operands.to_host(queue, prep.out)
    return out.T if prep.swap else out


def test_untuned_split_leaves_the_fewest_waves():
    """Without a tuned count, a split is taken only where it cuts the waves of work on the
    device: the H200's 132 units (2026-12-04) ran 80-128 groups of 64x128 at k = 1024 13-18%
    slower in the two slices that doubling to a full wave gave (half a wave's groups more
    cannot finish sooner), and 64 groups faster in two (twice the units busy); at k = 4096,
    104-128 groups of 128x128 ran 18-23% faster in two slices (more groups a unit)."""
    from clgemm.heuristics import DEFAULTS, Facts, _fill_splits
    f = Facts(compute_units=132)
    assert _fill_splits(128, 1024, f) == 1
    assert _fill_splits(112, 2048, f) == 1       # 2 or 4 slices: a whole wave of work
    assert _fill_splits(80, 1024, f) == 1        # 160 groups: 2 waves of half the work
    assert _fill_splits(64, 1024, f) == 2        # one wave of half the work
    assert _fill_splits(56, 2048, f) == 4        # 2 and 4 tie at half a wave: the larger
    assert _fill_splits(64, 512, f) == 1         # slices would be under split_min_k
    assert _fill_splits(1, 2**20, f) == 256      # one tile of C: past a wave, as before
    assert _fill_splits(96, 4096, f) == 4        # 3 waves of a quarter: 33% faster measured
    assert _fill_splits(80, 4096, f) == 4
    assert _fill_splits(64, 4096, f) == 4        # 8 saves nothing more than 4
    assert _fill_splits(48, 4096, f) == 8        # 3 waves of an eighth against 2 of a quarter
    assert _fill_splits(132, 2**20, f) == 1
    assert _fill_splits(128, 4096, f) == 2       # no wave saved, but slices 2048 deep
    assert _fill_splits(128, 4095, f) == 1
    f2 = Facts(compute_units=132, thresholds=dict(DEFAULTS, split_fill=2))
    assert _fill_splits(128, 1024, f2) == 2      # two groups a unit make the wave 264


def test_split_k_rule(queue):
    """Auto splits only when C has too few tiles for the device, into slices >= 256 deep,
    and every slice keeps at least one tile of k; kernels without split-K never split, and
    refuse a count asked of them."""
    from clgemm.heuristics import DEFAULTS
    SPLIT_FILL, SPLIT_MIN_K = DEFAULTS["split_fill"], DEFAULTS["split_min_k"]
    cus = queue.device.max_compute_units
    plan = GemmPlan(queue, "5", P5)                    # 32 x 32 tiles, TSK=8
    want = SPLIT_FILL * cus
    long = 2 * SPLIT_MIN_K * want                      # deep enough for `want` slices on any device
    s = plan.splits(1, 32, long)                       # one tile of C, a long k
    assert s >= want and s // 2 < want                 # the fewest doublings that fill it
    assert plan.splits(1, 32, SPLIT_MIN_K) == 1        # too short to split
    # a shorter k stops the doubling where slices would fall under SPLIT_MIN_K
    assert plan.splits(1, 32, 4 * SPLIT_MIN_K) == min(4, 1 << (want - 1).bit_length())
    big = -(-want // 1) * 32                            # enough tiles of C already
    assert plan.splits(32, big, long) == 1
    fixed = GemmPlan(queue, "5", P5, split_k=7)
    assert fixed.splits(5, 5, 24) == 3                 # 3 tiles of k: 3 slices at most
    assert fixed.splits(5, 5, 8 * 20) == 7             # 20 tiles: 3,3,3,3,3,3,2
    assert fixed.splits(5, 5, 8 * 13) == 7             # 13 tiles: ceil(13/7)=2 each -> 7
    assert GemmPlan(queue, "5", P5, split_k=8).splits(5, 5, 8 * 13) == 7   # 2 each -> 7 slices
    assert GemmPlan(queue, "4", dict(P5, PAD=1), split_k=1).splits(5, 5, 1000) == 1
    # a count of slices asked of a kernel that cannot split is refused, not ignored
    with pytest.raises(ValueError, match=r"kernel 4 \(vectorized\) cannot cut k.*can: 5, 6"):
        GemmPlan(queue, "4", dict(P5, PAD=1), split_k=8)
    with pytest.raises(ValueError, match="kernel 3 .*cannot cut k"):
        clgemm.gemm(queue, np.ones((4, 4), np.float32), np.ones((4, 4), np.float32), kernel=3,
                    split_k=2)
    for bad in (0, -2, "3", 1.5, True):
        with pytest.raises(ValueError, match="split_k must be"):
            GemmPlan(queue, "5", P5, split_k=bad)


def test_a_plan_for_a_shape_refuses_an_empty_or_malformed_one(queue, tmp_path, monkeypatch):
    """GemmPlan(shape=...) looks the shape up in the tuning database: a zero there raised a
    ZeroDivisionError from inside the lookup; now the error names the shape."""
    monkeypatch.setenv("CLGEMM_HOME", str(tmp_path / "home"))    # a database of its own
    monkeypatch.setattr(db, "_shipped", lambda: [])
    db.record_best(queue.device, "5", 64, 64, 64, P5, 1.0)
    for bad in ((0, 5, 5), (5, 0, 5), (5, 5, 0), (5, 5), (5, 5, 5.0), (True, 5, 5)):
        with pytest.raises(ValueError, match=r"shape must be \(m, n, k\)"):
            GemmPlan(queue, "5", shape=bad)
    assert GemmPlan(queue, "5", shape=(np.int64(5), 5, 5)).params == P5


@pytest.mark.parametrize("kernel,params", [("5", P5), ("6", dict(P5, WIDTH=1)),
                                           ("5", dict(P5, WIDTH=2, PAD=1))])
@pytest.mark.parametrize("m,n,k", [(1, 67, 300), (37, 53, 129), (64, 64, 256), (5, 3, 9)])
@pytest.mark.parametrize("split", [2, 5, 64])
def test_split_k_gives_the_same_product(queue, rng, kernel, params, m, n, k, split):
    """Slices summed by splitk_reduce, with alpha and beta applied once: odd shapes, whole
    tiles (the EXACT build), more slices asked than tiles of k, a Fortran-ordered C."""
    a, b = rand(rng, m, k), rand(rng, k, n)
    c0 = rand(rng, m, n, order="F")
    c = c0.copy(order="F")
    out = clgemm.gemm(queue, a, b, c, alpha=-1.5, beta=0.5, kernel=kernel, params=params,
                      split_k=split)
    assert out is c
    assert close(c, verify.reference(a, b, -1.5, 0.5, c0), k)
    # beta = 0 must not read C, here all NaN
    c[...] = np.nan
    clgemm.gemm(queue, a, b, c, kernel=kernel, params=params, split_k=split)
    assert close(c, verify.reference(a, b), k)


# tiles of 4 and 8 rows or columns (the smallest in the space): a whole row of work-items
# (RTSM = 1), a work-group of one vector per item, WIDTH 2 and 4, with and without PAD
SMALL_TILES = [dict(TSM=4, TSN=128, TSK=32, WPTM=4, WPTN=4, WIDTH=4, PAD=1),
               dict(TSM=8, TSN=64, TSK=16, WPTM=8, WPTN=4, WIDTH=4, PAD=0),
               dict(TSM=64, TSN=4, TSK=16, WPTM=4, WPTN=4, WIDTH=4, PAD=0),
               dict(TSM=8, TSN=8, TSK=4, WPTM=2, WPTN=2, WIDTH=2, PAD=1)]


@pytest.mark.parametrize("kernel,params", [(k, p) for k in ("4", "5", "6") for p in SMALL_TILES
                                           if not kernels.get(k).violations(p)] + [
    ("3", dict(TSM=4, TSN=32, TSK=8, WPTM=4, WPTN=4)), ("3", dict(TSM=32, TSN=4, TSK=8, WPTM=4, WPTN=4))])
@pytest.mark.parametrize("m,n,k", [(1, 300, 517), (301, 1, 33), (13, 9, 77), (64, 64, 64)])
def test_small_tiles(queue, rng, kernel, params, m, n, k):
    """m = 1 and n = 1 products (what the small tiles are for), odd shapes and whole tiles
    (the EXACT build), split-K included."""
    a, b = rand(rng, m, k), rand(rng, k, n)
    for split in ((1, 3) if kernels.get(kernel).split_k else (1,)):
        extra = {"split_k": split} if kernels.get(kernel).split_k else {}
        out = clgemm.gemm(queue, a, b, kernel=kernel, params=params, **extra)
        assert close(out, verify.reference(a, b), k)


def test_shared_workspace(queue, rng):
    """Plans given one Workspace put their partial sums in one buffer, grown to the largest
    launch; anything else as a workspace is refused by name."""
    from clgemm import operands
    from clgemm.gemm import Workspace
    work = Workspace(queue.context)
    bufs = []
    for s, (m, k) in ((5, (37, 600)), (2, (3, 300))):     # the larger first, then reused
        plan = GemmPlan(queue, "5", P5, split_k=s, workspace=work)
        a, b = rand(rng, m, k), rand(rng, k, 40)
        out = operands.poison(queue, operands.empty(queue, m, 40, 40))
        cl.wait_for_events(plan.bind(operands.raw(queue, a, 4), operands.raw(queue, b, 4), out)())
        assert close(operands.to_host(queue, out), verify.reference(a, b), k)
        bufs.append(work.buf)
    assert bufs[0] is bufs[1] and bufs[0].size >= 4 * 5 * 37 * 40
    with pytest.raises(TypeError, match="workspace must be a clgemm.gemm.Workspace, not str"):
        GemmPlan(queue, "5", P5, workspace="x")
    other = cl.Context([queue.device])
    with pytest.raises(ValueError, match="another OpenCL context"):
        GemmPlan(queue, "5", P5, workspace=Workspace(other))


def test_bound_launch_holds_its_buffers(queue, rng):
    """A bound launch keeps the operands it was given alive (kernel arguments do not), so
    it can run after the caller's references are gone; every call recomputes the product."""
    import gc
    from clgemm import operands
    plan = GemmPlan(queue, "5", P5)
    a, b = rand(rng, 37, 300), rand(rng, 300, 29)
    out = operands.empty(queue, 37, 29, 32)
    calls = [plan.bind(operands.raw(queue, a, 4), operands.raw(queue, b, 4), out),
             GemmPlan(queue, "5", P5, split_k=3).bind(operands.raw(queue, a, 4),
                                                      operands.raw(queue, b, 4), out)]
    gc.collect()
    for call in calls:
        operands.poison(queue, out)
        cl.wait_for_events(call())
        assert close(operands.to_host(queue, out), verify.reference(a, b), 300)


def test_kmajor_rule(queue):
    """transposed_by="auto" turns a row-major A K-major only for kernels that read it so,
    and only for products large enough (N and M*N*K) to repay the transpose."""
    from clgemm.heuristics import DEFAULTS
    KMAJOR_MIN_N, KMAJOR_MIN_VOLUME = DEFAULTS["kmajor_min_n"], DEFAULTS["kmajor_min_volume"]
    plan = GemmPlan(queue, "5", P5)
    big = KMAJOR_MIN_VOLUME // KMAJOR_MIN_N
    assert plan.kmajor_a(big, KMAJOR_MIN_N, 1)
    assert not plan.kmajor_a(big, KMAJOR_MIN_N // 2, 2)         # A reused too few times
    assert not plan.kmajor_a(big // 2, KMAJOR_MIN_N, 1)         # too small a product
    assert not GemmPlan(queue, "5", P5, transposed_by="transpose").kmajor_a(big, KMAJOR_MIN_N, 1)
    assert not GemmPlan(queue, "5", P5, transposed_by="kernel").kmajor_a(big, KMAJOR_MIN_N, 1)
    assert not GemmPlan(queue, "4", dict(P5, PAD=1)).kmajor_a(big, KMAJOR_MIN_N, 1)


@pytest.mark.parametrize("kernel,params", [("5", P5), ("6", dict(P5, WIDTH=1)),
                                           ("5", dict(P5, WIDTH=2, PAD=1))])
@pytest.mark.parametrize("m,n,k,ta,tb", [(37, 53, 29, False, False), (64, 96, 48, False, False),
                                         (45, 7, 300, False, True), (33, 64, 20, True, False)])
def test_kmajor_a_gives_the_same_product(queue, rng, thresholds, kernel, params, m, n, k, ta, tb):
    """With the thresholds at zero every row-major A goes through the device transpose to
    K x M and the A_KMAJOR build: odd shapes, whole tiles (EXACT), a transposed B, a
    transposed A (read as it lies, no extra transpose), C with beta, and beta = 0 over NaN."""
    gemm_mod = sys.modules["clgemm.gemm"]    # the module; clgemm.gemm is the function
    thresholds(kmajor_min_n=0, kmajor_min_volume=0)
    a = rand(rng, k, m) if ta else rand(rng, m, k)
    b = rand(rng, n, k) if tb else rand(rng, k, n)
    opa, opb = (a.T if ta else a), (b.T if tb else b)
    plan = GemmPlan(queue, kernel, params)
    prep = gemm_mod.prepare(plan, opa, opb, None, 1.0, 0.0)
    assert prep.kmajor == (not ta) and not prep.swap
    assert all(key[1] for key in plan._programs)     # only A_KMAJOR builds
    prep.launch()
    assert close(host_result(queue, prep), verify.reference(opa, opb), k)
    c0 = rand(rng, m, n)
    c = c0.copy()
    clgemm.gemm(queue, a, b, c, alpha=0.5, beta=-2.0, trans_a=ta, trans_b=tb, kernel=kernel,
                params=params)
    assert close(c, verify.reference(opa, opb, 0.5, -2.0, c0), k)
    c[...] = np.nan
    clgemm.gemm(queue, a, b, c, trans_a=ta, trans_b=tb, kernel=kernel, params=params)
    assert close(c, verify.reference(opa, opb), k)


@pytest.mark.parametrize("where", ["host", "device"])
def test_kmajor_a_transposes_straight_into_the_padded_buffer(queue, rng, thresholds, where):
    """Padding and the K-major A together: the transpose writes A into the zero-padded K x M
    buffer itself (no second copy); B is uploaded straight into its padded buffer from the
    host, or copied there by a step from the device; then the product."""
    gemm_mod = sys.modules["clgemm.gemm"]
    thresholds(kmajor_min_n=0, kmajor_min_volume=0, pad_min_volume=0, pad_min_k=0, pad_min_mn=0)
    m, n, k = 62, 63, 30                               # 64 x 64 x 32 in whole tiles
    a, b = rand(rng, m, k), rand(rng, k, n)
    plan = GemmPlan(queue, "5", P5)
    da, db_ = (a, b) if where == "host" else (cla.to_device(queue, a), cla.to_device(queue, b))
    prep = gemm_mod.prepare(plan, da, db_, None, 1.0, 0.0)
    assert prep.kmajor and prep.padded
    assert len(prep.launch()) == (2 if where == "host" else 3)
    assert set(plan._programs) == {("exact", True, False, False, True, False)}  # EXACT, A_KMAJOR, n = 63
    assert close(host_result(queue, prep), verify.reference(a, b), k)


# ------------------------------------------------------------------ queues and host time

def test_out_of_order_queue_is_refused(queue, rng):
    """clgemm's launches follow each other only on an in-order queue; on another one a
    transpose could run after the product that reads it. Refused, naming why."""
    ooo = cl.CommandQueue(queue.context,
                          properties=cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)
    a = rand(rng, 5, 6)
    for call in (lambda: clgemm.gemm(ooo, a, a.T), lambda: clgemm.transpose(ooo, a),
                 lambda: GemmPlan(ooo, "5", P5)):
        with pytest.raises(ValueError, match="in-order"):
            call()
    with pytest.raises(TypeError, match="CommandQueue"):
        clgemm.gemm(queue.context, a, a.T)


@pytest.mark.parametrize("op", ["gemm", "transpose"])
def test_pending_work_on_array_operands_is_waited_for(queue, rng, op):
    """An Array whose contents are still being written by work on another queue (its
    .events) is read only after that work: here a user event stands for it. The result
    Array carries an event for the work that wrote it, so others can wait in turn."""
    other = cl.CommandQueue(queue.context)
    a, b = rand(rng, 37, 29), rand(rng, 29, 41)
    da, db_ = cla.to_device(other, np.zeros_like(a)), cla.to_device(queue, b)
    gate = cl.UserEvent(queue.context)
    # the "other work": a copy of the real values into da that cannot start before the gate
    da.add_event(cl.enqueue_copy(other, da.base_data, a, is_blocking=False, wait_for=[gate]))
    out = (clgemm.gemm(queue, da, db_, kernel="5", params=P5) if op == "gemm"
           else clgemm.transpose(queue, da))
    assert out.events, "the result carries the event of the work that writes it"
    assert out.events[-1].command_execution_status != cl.command_execution_status.COMPLETE
    gate.set_status(cl.command_execution_status.COMPLETE)
    want = verify.reference(a, b) if op == "gemm" else a.T
    assert close(out.get(), want, 29)


def test_repeated_calls_make_no_new_kernel_objects(queue, rng, monkeypatch):
    """A kernel object costs ~150 us of host time in pyopencl: after the first call, gemm()
    takes them from a pool (build.bind) instead of creating them."""
    a, b = rand(rng, 40, 30), rand(rng, 30, 20)
    clgemm.gemm(queue, a, b, kernel="5", params=P5)
    made = []
    real = cl.Kernel
    monkeypatch.setattr(cl, "Kernel", lambda *args: made.append(args) or real(*args))
    for _ in range(5):
        assert close(clgemm.gemm(queue, a, b, kernel="5", params=P5), verify.reference(a, b), 30)
    assert made == []


def test_launches_bound_at_once_keep_their_own_arguments(queue, rng):
    """Two launches of one program bound before either runs hold two kernel objects: the
    second binding must not change the first one's operands, in either order of running."""
    from clgemm import operands
    plan = GemmPlan(queue, "5", P5)
    pairs = [(rand(rng, 33, 20), rand(rng, 20, 17)) for _ in range(2)]
    outs = [operands.empty(queue, 33, 17, 20) for _ in pairs]
    calls = [plan.bind(operands.raw(queue, a, 4), operands.raw(queue, b, 4), out)
             for (a, b), out in zip(pairs, outs)]
    for order in ((0, 1), (1, 0)):
        for i in order:
            operands.poison(queue, outs[i])
        for i in order:
            cl.wait_for_events(calls[i]())
        for (a, b), out in zip(pairs, outs):
            assert close(operands.to_host(queue, out), verify.reference(a, b), 20)


def test_threads_get_their_own_products(queue):
    """gemm() from several threads at once, each on its own queue of one context (the way
    README's "Threads" asks for): the program cache, the pooled kernel objects, the plan
    cache and the kept choices are shared, plans are made and evicted (more shapes than
    the cache keeps) while other threads call, and no thread's operands reach another's
    product. On the H200 this ran clean in 8 of 8 runs; threads sharing one queue crashed
    NVIDIA's driver (README, "Threads")."""
    from concurrent.futures import ThreadPoolExecutor

    def work(seed):
        r = np.random.default_rng(seed)
        q = cl.CommandQueue(queue.context, queue.device)
        bad = []
        for i in range(6):
            m, n, k = (int(v) for v in r.integers(1, 60, 3))
            a, b = rand(r, m, k), rand(r, k, n)
            out = clgemm.gemm(q, cla.to_device(q, a), cla.to_device(q, b),
                              kernel="5", params=P5).get()
            bad += [] if close(out, verify.reference(a, b), k) else [(seed, i, m, n, k)]
        return bad

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)      # threads interleave between any two bytecodes
    try:
        with ThreadPoolExecutor(4) as pool:
            assert sum(pool.map(work, range(8)), []) == []
    finally:
        sys.setswitchinterval(interval)


def test_without_a_kernel_an_entry_beaten_at_its_own_shape_is_not_taken(queue, tmp_path, monkeypatch):
    """gemm() without a kernel chooses among every kernel's entries; where two kernels were
    tuned at one shape, the slower one's entry does not stand for that shape elsewhere. A
    narrow product passed over kernel 5's wide tiles (tile waste) and took kernel 2's small
    ones, four times slower on the H200 at 4096 x 32 x 4096."""
    monkeypatch.setenv("CLGEMM_HOME", str(tmp_path))
    dev = queue.device
    db.record_best(dev, "2", 64, 64, 64, {"TS": 4}, 5.0)
    db.record_best(dev, "5", 64, 64, 64, P5, 10.0)
    plan = GemmPlan(queue, None, shape=(64, 4, 64))
    assert plan.kernel.key == "5" and plan.params == P5
    db.record_best(dev, "2", 64, 64, 64, {"TS": 4}, 50.0)      # now kernel 2 was the faster
    assert GemmPlan(queue, None, shape=(64, 4, 64)).kernel.key == "2"
    assert GemmPlan(queue, "5", shape=(64, 4, 64)).params == P5    # a kernel named: its own

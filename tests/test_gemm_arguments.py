"""gemm()'s arguments checked before any work, with clear errors for bad input (shapes,
dtypes, transposes, scalars, c, kernels and parameters, sizes beyond the device, a plan's
shape); what BLAS takes is taken (zero dimensions, numpy scalars); and the device
selection's errors and hints."""

import sys

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import clgemm
from clgemm import db, device, verify
from clgemm.gemm import GemmPlan

from .conftest import P5, close, rand


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


@pytest.mark.parametrize("good,bad,exc,words", [
    (dict(trans_b=True), dict(trans_b=1.0), TypeError, "trans_b must be True or False"),
    (dict(kernel=5), dict(kernel=5.0), ValueError, "unknown"),
    (dict(kernel=1), dict(kernel=True), ValueError, "unknown"),
    (dict(split_k=1), dict(split_k=True), ValueError, "split_k must be"),
    (dict(guard=True), dict(guard=1.0), TypeError, "guard must be True or False"),
])
def test_a_refused_option_is_refused_after_a_valid_equal_one(queue, rng, good, bad, exc, words):
    """The plan cache is keyed by the options' types too: 1.0 == True and 5.0 == 5 hash
    alike, and a value its check refuses was taken once a valid equal one had made a plan."""
    a = cla.to_device(queue, rand(rng, 16, 16))
    clgemm.gemm(queue, a, a, **good)
    clgemm.gemm(queue, a, a, **good)
    with pytest.raises(exc, match=words):
        clgemm.gemm(queue, a, a, **bad)


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
    with pytest.raises(ValueError, match="c overlaps a or b"):
        clgemm.gemm(queue, a, a, a)
    with pytest.raises(ValueError, match="c overlaps a or b"):   # a from the host
        clgemm.gemm(queue, a.get(), a, a)


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


@pytest.mark.parametrize("kernel", [None, "matvec-sweep", "5", "2"])
def test_a_product_deeper_than_the_kernels_count_is_refused(queue, kernel, monkeypatch):
    """A 1 x 1 output with k of 2^30 or more (two vectors of 4 GiB each fit an H200): the
    kernels' 32-bit counters along k step past k by up to a tile, and a named matrix-vector
    kernel returned 0 (k = 2^31 - 63) or read out of bounds on pocl. Refused before any
    buffer exists, naming the limit; one below it is planned."""
    made = []
    real = cl.Buffer
    monkeypatch.setattr(cl, "Buffer", lambda *a, **k: made.append(1) or real(*a, **k))
    for k in (2**30, 2**31 - 63):
        with pytest.raises(ValueError, match=r"k must be below 2\^30"):
            clgemm.Plan(queue, 1, 1, k, kernel=kernel)
    assert made == []
    a = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), shape=(1, 2**30), strides=(0, 0))
    with pytest.raises(ValueError, match=r"k must be below 2\^30"):
        clgemm.gemm(queue, a, a.T, kernel=kernel)
    assert made == []
    assert clgemm.Plan(queue, 1, 1, 2**30 - 1, kernel=kernel).shape == (1, 1, 2**30 - 1)


def test_the_depth_limit_guards_every_launch_and_the_tuner(queue, rng, monkeypatch):
    """Past Plan, the launch of a GemmPlan (run, the tuner's workers) and the matrix-vector
    layout each check the depth they launch, and a tune refuses a product too deep before
    any worker starts."""
    from clgemm import matvec, operands, pool
    from clgemm.choice import facts
    seen = []
    real = operands.check_depth
    monkeypatch.setattr(operands, "check_depth", lambda k: seen.append(k) or real(k))
    plan = GemmPlan(queue, "5", P5)
    al = plan.align
    am, bm = operands.raw(queue, rand(rng, 5, 37), al), operands.raw(queue, rand(rng, 37, 3), al)
    cm = operands.empty(queue, 5, 3, operands.rounded(3, al))
    seen.clear()
    plan.bind(am, bm, cm)
    assert seen == [37]
    v, x = cla.to_device(queue, rand(rng, 1, 37)), cla.to_device(queue, rand(rng, 37, 3))
    seen.clear()
    matvec.prepare(queue, v, x, cla.empty(queue, (1, 3), np.float32), 1.0, 0.0, facts(queue.device))
    assert seen == [37]
    with pytest.raises(ValueError, match=r"k must be below 2\^30"):
        pool.check_fits(queue.device, "5", 1, 1, 2**30, 1)


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


def test_device_selection_errors():
    with pytest.raises(device.DeviceNotFound, match="no OpenCL device matches"):
        device.select("no-such-device-xyz")
    with pytest.raises(device.DeviceNotFound, match="Devices:"):
        device.select("99:0")


def test_device_selection_by_index_and_name():
    e = [x for x in device.entries() if "oclgrind" not in x.platform.name.lower()][0]
    assert device.select(e.spec) == e.device
    # a platform index as an int, as PYOPENCL_CTX=1 gives it (it raised AttributeError)
    p = int(e.spec.split(":")[0])
    assert clgemm.select_device(p) == device.select(str(p))
    for bad in (True, 1.0, ["0"]):
        with pytest.raises(TypeError, match="device spec must be a string"):
            clgemm.select_device(bad)
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

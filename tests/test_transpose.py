"""The standalone transposes: exact results at odd shapes, numpy and Array, and the CLI."""

import json

import numpy as np
import pyopencl.array as cla
import pytest
from click.testing import CliRunner

import clgemm
from clgemm import kernels, verify
from clgemm.cli import main

from .conftest import SMALL_TRANSPOSE

SHAPES = [(1, 1), (1, 37), (37, 1), (5, 131), (130, 7), (64, 64), (33, 100), (256, 96)]


def test_small_params_cover_every_transpose():
    assert set(SMALL_TRANSPOSE) == set(kernels.TRANSPOSE)


@pytest.mark.parametrize("key,i", [(k, i) for k, sets in SMALL_TRANSPOSE.items()
                                   for i in range(len(sets))])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_transpose_exact(queue, rng, key, i, shape):
    a = verify.random_matrix(rng, *shape)
    t = clgemm.transpose(queue, a, kernel=key, params=SMALL_TRANSPOSE[key][i])
    assert isinstance(t, np.ndarray) and t.flags.c_contiguous
    assert np.array_equal(t, a.T)


@pytest.mark.parametrize("key", list(kernels.TRANSPOSE))
def test_transpose_defaults_and_arrays(queue, rng, key):
    a = verify.random_matrix(rng, 45, 70)
    da = cla.to_device(queue, a)
    t = clgemm.transpose(queue, da, kernel=key)
    assert isinstance(t, cla.Array) and t.shape == (70, 45)
    assert np.array_equal(t.get(), a.T)
    assert np.array_equal(da.get(), a)     # the input is untouched


def test_transpose_of_fortran_input(queue, rng):
    a = np.asfortranarray(verify.random_matrix(rng, 9, 14))
    assert np.array_equal(clgemm.transpose(queue, a), a.T)
    t = clgemm.transpose(queue, cla.to_device(queue, a))
    assert np.array_equal(t.get(), a.T)


@pytest.mark.parametrize("order", ["C", "F"])
def test_transpose_of_blocks_of_a_device_matrix(queue, order):
    """Blocks of a larger device matrix, as gemm() takes them, plain and through .T, at
    offsets on and off a sub-buffer's origin; the larger matrix is left as it was."""
    rng = np.random.default_rng(3)
    host = verify.random_matrix(rng, 61, 47)
    host = np.asfortranarray(host) if order == "F" else host
    big = cla.to_device(queue, host)
    for _ in range(60):
        r0, c0 = int(rng.integers(0, 61)), int(rng.integers(0, 47))
        r1, c1 = int(rng.integers(r0 + 1, 62)), int(rng.integers(c0 + 1, 48))
        block, want = big[r0:r1, c0:c1], host[r0:r1, c0:c1]
        if rng.integers(2):
            block, want = block.T, want.T
        got = clgemm.transpose(queue, block)
        assert isinstance(got, cla.Array) and np.array_equal(got.get(), want.T), (r0, r1, c0, c1)
    assert np.array_equal(big.get(), host)


@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (0, 0)])
def test_transpose_of_an_empty_matrix_is_empty(queue, shape):
    """As numpy's: an empty matrix of the transposed shape (a bad kernel is still refused)."""
    a = np.zeros(shape, np.float32)
    t = clgemm.transpose(queue, a)
    assert isinstance(t, np.ndarray) and t.shape == a.T.shape and t.dtype == np.float32
    t = clgemm.transpose(queue, cla.to_device(queue, a))
    assert isinstance(t, cla.Array) and t.shape == a.T.shape
    with pytest.raises(ValueError, match="valid kernels"):
        clgemm.transpose(queue, a, kernel="fast")


def test_transpose_bad_input(queue):
    with pytest.raises(TypeError, match="float32"):
        clgemm.transpose(queue, np.zeros((3, 3)))
    with pytest.raises(ValueError, match="2-D"):
        clgemm.transpose(queue, np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="valid kernels"):
        clgemm.transpose(queue, np.zeros((3, 3), np.float32), kernel="fast")


@pytest.mark.parametrize("key", list(kernels.TRANSPOSE))
def test_transpose_cli(key):
    r = CliRunner().invoke(main, ["transpose", "--kernel", key, "--rows", "33", "--cols", "70",
                                  "--repeat", "2", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output.strip().splitlines()[-1])
    assert d["verified"] is True and d["gbps"] > 0 and d["copy_gbps"] > 0
    assert d["ratio_to_copy"] == pytest.approx(d["copy_ms_median"] / d["ms_median"])


def test_transpose_cli_reports_emulation():
    r = CliRunner().invoke(main, ["transpose", "--kernel", "shuffle", "--size", "40", "--repeat", "2"])
    assert r.exit_code == 0, r.output
    assert "GB/s" in r.output and "ratio" in r.output
    assert ("EMULATED" in r.output) or ("shuffle: nvidia-ptx" in r.output)


SUBGROUP_PATHS = [(2, "cl_khr_subgroup_shuffle", "sub_group_shuffle_xor"),
                  (3, "cl_intel_subgroups", "intel_sub_group_shuffle_xor")]


@pytest.mark.parametrize("code,ext,builtin", SUBGROUP_PATHS)
@pytest.mark.parametrize("kind,key", [("transpose", "shuffle"), ("gemm", "6")])
def test_subgroup_shuffle_paths_pass_the_compiler(queue, code, ext, builtin, kind, key):
    """No device here has these extensions, but pocl's compiler declares their built-ins
    when told the extension is there: the khr and Intel paths must then compile, with at
    most the built-in itself missing at link time (pocl has no implementation)."""
    import pyopencl as cl
    from clgemm import build
    if queue.device.platform.name.strip() != "Portable Computing Language":
        pytest.skip("relies on pocl's compiler")
    k = kernels.get(key, kind)
    source = (build.kernel_dir() / k.source).read_text()
    params = k.resolve({"WIDTH": 1}) if kind == "gemm" else k.defaults   # lanes do exchange
    opts = build.options(params, (f"-DSHUFFLE={code}", f"-D{ext}=1", "-cl-std=CL2.0"))
    try:
        cl.Program(queue.context, source).build(options=opts)
    except cl.RuntimeError as e:
        log = str(e)
        assert "error:" not in log, log[-2000:]
        assert "Cannot find symbol" in log and builtin in log, log[-2000:]


def test_transpose_command_where_copies_have_no_time(monkeypatch):
    """Oclgrind often gives a device copy no duration: the report says so instead of
    dividing by it. Here the copy's timings are made zero on the CPU device."""
    from clgemm import run, timing
    real = timing.profile

    def untimed_copies(launch, *a, **k):
        t = real(launch, *a, **k)
        copy = getattr(launch, "__name__", None) == "<lambda>"     # the transpose is a Bound
        return timing.Timing((0.0,) * len(t.ms)) if copy else t
    monkeypatch.setattr(run.timing, "profile", untimed_copies)
    r = CliRunner().invoke(main, ["transpose", "--size", "8", "--repeat", "1"])
    assert r.exit_code == 0, r.output
    assert "gives device copies no time" in r.output and "PASS" in r.output
    r = CliRunner().invoke(main, ["transpose", "--size", "8", "--repeat", "1", "--json"])
    d = json.loads(r.output)
    assert d["copy_gbps"] is None and d["ratio_to_copy"] is None and d["verified"] is True


@pytest.mark.parametrize("kernel", [0, "", False])
def test_a_falsy_kernel_is_refused_not_taken_as_the_default(queue, kernel):
    a = cla.zeros(queue, (4, 4), np.float32)
    with pytest.raises((ValueError, TypeError)):
        clgemm.transpose(queue, a, kernel=kernel)

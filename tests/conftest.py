import numpy as np
import pyopencl as cl
import pytest

import clgemm
from clgemm import device, verify

# Small parameter sets (two per kernel) so register-blocked kernels stay fast on the CPU.
SMALL = {
    "1": [{"TS": 4}, {"TS": 8}],
    "2": [{"TS": 4}, {"TS": 8}],
    "3": [dict(TSM=16, TSN=16, TSK=4, WPTM=2, WPTN=2), dict(TSM=32, TSN=16, TSK=8, WPTM=4, WPTN=1)],
    "4": [dict(TSM=16, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=1),
          dict(TSM=64, TSN=64, TSK=8, WPTM=4, WPTN=4, WIDTH=2, PAD=0)],
    "5": [dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=0),
          dict(TSM=32, TSN=16, TSK=8, WPTM=2, WPTN=2, WIDTH=1, PAD=1)],
    "6": [dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=1, PAD=0),
          dict(TSM=64, TSN=64, TSK=8, WPTM=4, WPTN=4, WIDTH=2, PAD=1)],
    "7": [dict(TSM=32, TSN=32, TSK=16, WM=32, WN=32, FOLD=8),
          dict(TSM=32, TSN=32, TSK=32, WM=16, WN=32, FOLD=16)],
    "8": [dict(TSM=64, TSN=64), dict(TSM=128, TSN=64)],
}

# pocl builds a work-group function per barrier region, and the emulated shuffles and MMAs
# (two barriers each) make the shuffle transpose and kernel 7 its slowest builds: WARPS =
# 1, 2, 4 took 30, 79 and 126 s with an empty pocl cache (2026-12-03), kernel 7 at 32x64x16
# tiles 42 s, at 32x32x16 25 s; so two sets cover one and several warps, and kernel 7's
# second set keeps 32x32 tiles. With the emulation's scratch reads and writes as calls
# (shuffle.cl, 7_tensor_cores.cl) they took 4, 8 and 10 s and 2-4 s (2026-12-04).
SMALL_TRANSPOSE = {
    "naive": [{"TS": 4}, {"TS": 8}],
    "local": [{"TS": 8, "RPT": 2}, {"TS": 16, "RPT": 4}],
    "shuffle": [{"WARPS": 1}, {"WARPS": 2}],
}

# Shapes (M, N, K): ones, primes, non-multiples of every tile and width, tall-skinny.
ODD_SHAPES = [(1, 1, 1), (1, 7, 3), (37, 53, 29), (64, 64, 64), (3, 129, 5),
              (100, 7, 131), (257, 3, 2), (2, 300, 1)]

# Kernel 5's parameters in the gemm() tests: 32 x 32 tiles, float4 loads.
P5 = dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=0)

SKINNY = (1, 64, 512)     # two 32 x 32 tiles of C, 64 tiles of k: splitting k can pay


def rand(rng, *shape, order="C"):
    x = verify.random_matrix(rng, *shape)
    return np.asfortranarray(x) if order == "F" else x


def close(out, ref, k):
    return verify.rel_error(np.asarray(out), ref) <= verify.tolerance(k)


@pytest.fixture(scope="session")
def queue() -> cl.CommandQueue:
    """The default device (the CPU through pocl on CI), with profiling enabled."""
    return device.queue(device.select())


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng()


@pytest.fixture(autouse=True)
def _fresh_plans():
    """Each test starts with gemm()'s plan cache empty: a plan kept from another test would
    hide what this test's first call lays out. The databases' stamps are looked at afresh
    too: a stamp kept from a test with a home of its own (the `home` fixture) stood for up
    to db.RESTAT_S into the next test, whose plan cache then missed once it expired
    (test_matvec_new_results, 2026-12-05)."""
    from clgemm import db
    clgemm.clear_cache()
    db._seen.clear()
    db._restat_at[0] = 0.0


@pytest.fixture
def thresholds(monkeypatch):
    """Sets launch-heuristics thresholds (clgemm.thresholds.DEFAULTS) for one test, over
    the device's database too: on a device with shipped thresholds (the H200) those would
    otherwise win over the test's values."""
    from clgemm import choice, db, thresholds
    chosen: set[str] = set()
    measured = db.thresholds
    monkeypatch.setattr(db, "thresholds",
                        lambda dev, *limits: {k: v for k, v in measured(dev, *limits).items()
                                              if k not in chosen})

    def set_(**values):
        for name, value in values.items():
            assert name in thresholds.DEFAULTS, name
            monkeypatch.setitem(thresholds.DEFAULTS, name, value)
            chosen.add(name)
        choice._facts.clear()
    yield set_
    choice._facts.clear()


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A user database of the test's own, and no shipped one: on the device the package was
    tuned for, the shipped entries would answer the lookups the tuner and database tests
    make. Modules that need it everywhere name it in `pytestmark`."""
    from clgemm import db
    monkeypatch.setenv("CLGEMM_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(db, "_shipped", lambda: [])
    return tmp_path / "home"

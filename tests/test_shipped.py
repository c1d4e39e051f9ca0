"""Every configuration the package ships (each distinct kernel and parameters of
clgemm/tuned/*.json, tuned on an H200) computes the right product on this device, checked
against float64 on fresh random data at odd shapes: 1 x 1 x 1, non-multiples of its tiles
on every side, tall and skinny, transposed, and cut into the slices of k its entries name.
The other tests use small parameter sets of their own; a shipped entry that computed wrong
would have passed them (an audit ran every shipped configuration at 977 cases on pocl,
2026-12-05: all correct)."""

import json

import numpy as np
import pytest

import clgemm
from clgemm import db, kernels, verify


def _configs() -> list[tuple[str, dict, tuple[int, ...]]]:
    """(kernel, params, the split counts above 1 its entries name), each once."""
    seen: dict = {}
    for path in db._shipped():
        for key, shapes in json.loads(path.read_text())["entries"].items():
            for entry in shapes.values():
                cfg = seen.setdefault((key, tuple(sorted(entry["params"].items()))), set())
                if entry.get("splits", 1) > 1:
                    cfg.add(entry["splits"])
    return [(key, dict(params), tuple(sorted(splits))) for (key, params), splits in seen.items()]


CONFIGS = _configs()


def _cases(kern: kernels.Kernel, params: dict, splits: tuple[int, ...]) -> list[dict]:
    if kern.kind == "matvec":            # shapes of its form only: one row, or one column
        odd = [(1, 1, 1), (1, 257, 129), (1, 3, 1031), (1, 1000, 33)]
        if kern.key == "matvec-dot":       # (1 x 1 x 1 is of the other form)
            odd = [(2, 1, 1)] + [(n, m, k) for m, n, k in odd[1:]]
        return [dict(shape=s) for s in odd] + [dict(shape=odd[2], split=s) for s in splits]
    tm, tn = kern.geometry.tile(params)
    tk = kern.geometry.depth(params)
    cases = [dict(shape=s) for s in ((1, 1, 1), (tm + 1, 2 * tn - 1, 2 * tk + 3),
                                     (257, 3, 129), (3, tn + 5, 67))]
    cases += [dict(shape=(tm - 1 or 1, tn + 1, tk + 1), trans=(True, True)),
              dict(shape=(37, 41, 43), trans=(True, False), alpha=-0.75, beta=1.25)]
    cases += [dict(shape=(tm + 1, tn + 1, max(2 * s * tk + 5, 129)), split=s) for s in splits]
    return cases


@pytest.mark.parametrize("key,params,splits", CONFIGS,
                         ids=[f"{k}-" + "-".join(f"{n}{v}" for n, v in sorted(p.items()))
                              + (f"-split{'+'.join(map(str, s))}" if s else "")
                              for k, p, s in CONFIGS])
def test_every_shipped_configuration_computes_the_right_product(queue, key, params, splits):
    kern = kernels.tunable(key)
    rng = np.random.default_rng()
    for case in _cases(kern, params, splits):
        m, n, k = case["shape"]
        ta, tb = case.get("trans", (False, False))
        alpha, beta = case.get("alpha", 1.0), case.get("beta", 0.0)
        a = verify.random_matrix(rng, *((k, m) if ta else (m, k)))
        b = verify.random_matrix(rng, *((n, k) if tb else (k, n)))
        c0 = verify.random_matrix(rng, m, n) if beta else None
        opts = dict(kernel=key, params=params, trans_a=ta, trans_b=tb, alpha=alpha, beta=beta)
        if kern.kind == "gemm":
            opts["guard"] = False                   # kernels 7 and 8 alone
        if "split" in case:
            opts["split_k"] = case["split"]
        got = clgemm.gemm(queue, a, b, None if c0 is None else c0.copy(), **opts)
        opa, opb = (a.T if ta else a), (b.T if tb else b)
        ref = verify.reference(opa, opb, alpha, beta, c0)
        assert verify.passes(np.asarray(got), ref, k, opa, opb, alpha, beta, c0), (
            f"kernel {key} {params} {case}: relative error "
            f"{verify.rel_error(np.asarray(got), ref):.2e}")


def test_the_shipped_configurations_are_found():
    """The list above is not empty by accident: the package ships H200 entries of kernels
    2 to 8 and both matrix-vector forms."""
    assert {k for k, _, _ in CONFIGS} >= {"2", "3", "4", "5", "6", "7", "8", "matvec-sweep",
                                          "matvec-dot"}

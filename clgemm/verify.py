"""Checking results against a float64 reference."""

from __future__ import annotations

import numpy as np

EPS32 = float(np.finfo(np.float32).eps)


def random_matrix(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """Fresh uniform values in [-1, 1): signed, so cancellation is exercised, never zeros."""
    return rng.uniform(-1.0, 1.0, size=(rows, cols)).astype(np.float32)


def sample_rows(rng: np.random.Generator, m: int, count: int) -> np.ndarray:
    """Rows to check when a full float64 reference costs too much: the first and last
    (edge tiles) plus `count` random ones, sorted and unique."""
    return np.unique(np.concatenate([[0, m - 1], rng.choice(m, min(m, count), replace=False)]))


def tolerance(k: int) -> float:
    """The factor of each element's allowed error (`allowed`) for a float32 product with
    inner dimension k. Rounding errors of a k-term sum grow like sqrt(k) for random signs; the factor 4 and
    the floor of 16 eps leave room for alpha/beta and blocked summation orders, while a
    single wrong or missing term (about 1/sqrt(k) relative) stays far above it."""
    return max(16.0, 4.0 * k ** 0.5) * EPS32


def rel_error(out: np.ndarray, ref: np.ndarray) -> float:
    """||out - ref||_F / ||ref||_F, infinite when out has non-finite values (unwritten
    elements poisoned with NaN count as wrong)."""
    out64 = out.astype(np.float64)
    if not np.all(np.isfinite(out64)):
        return float("inf")
    den = np.linalg.norm(ref)
    num = np.linalg.norm(out64 - ref)
    return float(num / den) if den > 0 else float(num)


ALLOWED_COLUMNS = 1024   # B's columns squared at once by `allowed`


def allowed(k: int, a: np.ndarray, b: np.ndarray, alpha: float = 1.0, beta: float = 0.0,
            c: np.ndarray | None = None) -> np.ndarray:
    """Each element's allowed error for out = alpha a @ b + beta c: tolerance(k) times the
    root of the sum of its terms' squares (plus |beta c|). A float32 sum's rounding errors
    grow like that root (partial sums of random signs: about a twentieth of the allowance
    for a sum in order), while the sum of the terms' magnitudes, the scale used before,
    grows k times faster, so that with k = 10^6 an output missing its last 1000 terms
    passed (2026-12-05). One missing or wrong term is about 1/sqrt(k) of that root, far
    above tolerance(k). A check of several outputs computes it once (Evaluator); B's squares
    are taken a block of columns at a time, so that it holds no float64 copy of B (512 MB
    at 8192 x 8192, in each of the tuner's workers)."""
    a2 = np.square(a, dtype=np.float64)
    scale = np.empty((a.shape[0], b.shape[1]))
    for j in range(0, b.shape[1], ALLOWED_COLUMNS):
        scale[:, j:j + ALLOWED_COLUMNS] = a2 @ np.square(b[:, j:j + ALLOWED_COLUMNS],
                                                         dtype=np.float64)
    scale = abs(alpha) * np.sqrt(scale)
    if beta != 0.0 and c is not None:
        scale = scale + abs(beta) * np.abs(c.astype(np.float64))
    return tolerance(k) * scale


def passes(out: np.ndarray, ref: np.ndarray, k: int, a: np.ndarray, b: np.ndarray,
           alpha: float = 1.0, beta: float = 0.0, c: np.ndarray | None = None,
           bound: np.ndarray | None = None) -> bool:
    """Whether every element of out (= alpha a @ b + beta c, as `ref`) is finite and within
    its allowed error (`allowed`, or `bound` as it gives it). Element by element, not as a
    whole: the relative Frobenius error of a 2048 x 2048 x 1024 product passed one element
    missing one of its terms (an audit, 2026-12-05), and a correct 1 x 1 x 9 output whose
    sum cancels failed it in 1.3% of random draws (2026-12-04)."""
    if bound is None:
        bound = allowed(k, a, b, alpha, beta, c)
    out64 = out.astype(np.float64)
    return bool(np.all(np.isfinite(out64)) and np.all(np.abs(out64 - ref) <= bound))


def json_safe(x: object) -> object:
    """`x` with non-finite floats (the infinite error of an output holding NaN) as None:
    strict JSON has no Infinity or NaN, and other readers reject Python's spelling."""
    if isinstance(x, float):
        return x if np.isfinite(x) else None
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    return x


def reference(a: np.ndarray, b: np.ndarray, alpha: float = 1.0, beta: float = 0.0,
              c: np.ndarray | None = None) -> np.ndarray:
    ref = alpha * (a.astype(np.float64) @ b.astype(np.float64))
    if beta != 0.0 and c is not None:
        ref += beta * c.astype(np.float64)
    return ref

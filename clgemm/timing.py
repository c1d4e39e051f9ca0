"""Measuring kernels with OpenCL profiling events."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

import pyopencl as cl


@dataclass(frozen=True)
class Timing:
    ms: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.ms)

    @property
    def min(self) -> float:
        return min(self.ms)

    @property
    def max(self) -> float:
        return max(self.ms)


def profile(launch: Callable[[], cl.Event], repeat: int = 10, warmup: int = 1) -> Timing:
    """Device time of `repeat` launches after `warmup` untimed ones, read from each launch's
    own profiling event (the queue must have profiling enabled)."""
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    for _ in range(warmup):
        launch().wait()
    events = [launch() for _ in range(repeat)]
    cl.wait_for_events(events)
    return Timing(tuple((e.profile.end - e.profile.start) * 1e-6 for e in events))


def gflops(m: int, n: int, k: int, ms: float) -> float:
    """2*M*N*K floating-point operations per GEMM."""
    return 2.0 * m * n * k / (ms * 1e-3) / 1e9

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


Launch = Callable[[], "cl.Event | list[cl.Event]"]


def profile(launch: Launch, repeat: int = 10, warmup: int = 1) -> Timing:
    """Device time of `repeat` launches after `warmup` untimed ones, read from profiling
    events (the queue must have profiling enabled). A launch may enqueue several kernels
    and return their events in order: it is timed from the first start to the last end,
    so host-side gaps between them count too."""
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    for _ in range(warmup):
        cl.wait_for_events(events(launch()))
    runs = [events(launch()) for _ in range(repeat)]
    cl.wait_for_events([e for evs in runs for e in evs])
    return Timing(tuple((evs[-1].profile.end - evs[0].profile.start) * 1e-6 for evs in runs))


def events(x) -> list:
    """The events a launch returned (one, or a list of them), as a list."""
    return list(x) if isinstance(x, (list, tuple)) else [x]


def gbps(nbytes: int, ms: float) -> float:
    return nbytes / (ms * 1e-3) / 1e9


def gflops(m: int, n: int, k: int, ms: float) -> float:
    """2*M*N*K floating-point operations per GEMM."""
    return 2.0 * m * n * k / (ms * 1e-3) / 1e9

"""clgemm: OpenCL SGEMM kernels grown one technique at a time, from a naive kernel to
register-blocked, double-buffered ones and onto the tensor cores, with a library call, a
reusable plan for hot loops, and an auto-tuner."""

from .build import BuildError
from .cache import cache_info, clear_cache, memory_pool, release
from .device import DeviceNotFound
from .device import queue as device_queue
from .device import select as select_device
from .gemm import gemm
from .plan import Plan
from .kernels import GEMM, MATVEC, TRANSPOSE
from .launch import GemmPlan
from .transpose import transpose

__all__ = ["gemm", "Plan", "memory_pool", "cache_info", "clear_cache", "release", "transpose", "GemmPlan", "GEMM",
           "MATVEC", "TRANSPOSE", "BuildError", "DeviceNotFound", "select_device", "device_queue"]

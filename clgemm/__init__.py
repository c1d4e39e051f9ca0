"""clgemm: OpenCL SGEMM kernels, from naive to double-buffered, and their auto-tuner."""

from .build import BuildError
from .device import DeviceNotFound
from .gemm import GemmPlan, gemm
from .kernels import GEMM, TRANSPOSE
from .transpose import transpose

__all__ = ["gemm", "transpose", "GemmPlan", "GEMM", "TRANSPOSE", "BuildError", "DeviceNotFound"]

#!/bin/bash
# SASS of a kernel-5 build without a GPU: clang (from the ziglang wheel) compiles the
# OpenCL C to PTX for sm_90, with nvptx_prelude.cl for the work-item functions that have
# no libclc here; ptxas 13.0 (nvidia-cuda-nvcc 13.0.88, the driver 580's CUDA) assembles
# it and nvdisasm (nvidia-cuda-nvdisasm 13.5.37) prints it. NVIDIA's OpenCL compiler
# makes other PTX: register counts differ by 6-20 from the driver's; placement only.
#   pip download --no-deps ziglang "nvidia-cuda-nvcc==13.0.*" nvidia-cuda-nvdisasm, unzip
#   usage: ZIG=... PTXAS=... NVDISASM=... INC=<dir with opencl-c-base.h> \
#          probe/offline_sass.sh SRC.cl OUT [-DNAME=V ...]
set -euo pipefail
src=$1; out=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
D="-DTSM=128 -DTSN=128 -DTSK=8 -DWPTM=16 -DWPTN=8 -DWIDTH=4 -DPAD=1 -DEXACT -I$here/../kernels"
"$ZIG" clang -x cl -cl-std=CL1.2 -target nvptx64-nvidia-nvcl -Xclang -target-cpu -Xclang sm_90 \
  -isystem "$INC" -Xclang -finclude-default-header -O3 -include "$here/nvptx_prelude.cl" \
  -S $D "$@" -o "$out.ptx" "$src"
"$PTXAS" -arch=sm_90 -v "$out.ptx" -o "$out.cubin" 2>&1 | grep -E "registers|spill"
"$NVDISASM" -c "$out.cubin" > "$out.sass"

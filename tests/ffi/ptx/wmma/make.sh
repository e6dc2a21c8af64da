#!/bin/sh
# Writes the WMMA part of the PTX corpus: wmma_gemm.cu compiled by nvcc for
# sm_80 and sm_90 (tests/ffi/test_ptx_wmma.py runs both on cuda-sim).
set -e
cd "$(dirname "$0")"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
for arch in 80 90; do
    "$NVCC" -ptx -arch=sm_$arch -o wmma_gemm.sm$arch.ptx wmma_gemm.cu
done
"$NVCC" --version | tail -1 > nvcc_version.txt

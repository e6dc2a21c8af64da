"""NVIDIA's cuda-bindings and aruntime share one CUDA context and its memory.

On cuda-sim, aruntime loads the sim first, so cuda-bindings' dlopen of
``libcuda.so.1`` resolves to it by soname.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import aruntime as ar

ROOT = Path(__file__).resolve().parents[3]


def test_cuda_bindings_reads_what_aruntime_wrote() -> None:
    if not (ROOT / "ffi" / "cuda" / "sim").is_dir():
        pytest.skip("the software CUDA driver is not in this checkout yet")
    gpu = ar.open_backend("cuda-sim")  # before cuda-bindings touches libcuda.so.1
    cb = pytest.importorskip("cuda.bindings.driver", reason="pip install cuda-bindings")
    try:
        (err,) = cb.cuInit(0)
        assert err == cb.CUresult.CUDA_SUCCESS
        pattern = (np.arange(1 << 16) * 7 % 251).astype(np.uint8)
        dev = gpu.alloc(pattern.nbytes)
        gpu.copy_h2d(pattern, dev)
        gpu.memset(dev.offset(100), 0xAB, 50)
        expected = pattern.copy()
        expected[100:150] = 0xAB

        gpu.bind_to_thread()  # the primary context aruntime retained
        err, device = cb.cuCtxGetDevice()
        assert err == cb.CUresult.CUDA_SUCCESS
        err, primary = cb.cuDevicePrimaryCtxRetain(device)
        assert err == cb.CUresult.CUDA_SUCCESS
        err, current = cb.cuCtxGetCurrent()
        assert int(current) == int(primary)  # one context, shared
        out = np.zeros_like(pattern)
        (err,) = cb.cuMemcpyDtoH(out.ctypes.data, int(dev), out.nbytes)
        assert err == cb.CUresult.CUDA_SUCCESS
        np.testing.assert_array_equal(out, expected)
        cb.cuDevicePrimaryCtxRelease(device)
        gpu.free(dev)
    finally:
        gpu.close()

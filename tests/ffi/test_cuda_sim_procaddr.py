"""cuda-sim: cuGetProcAddress_v2 answers by base name and CUDA version."""

from __future__ import annotations

import pytest
from _cudasim_support import CUDA_ERROR_NOT_FOUND, CUDA_SUCCESS, Cuda, ffi

SUCCESS, SYMBOL_NOT_FOUND, VERSION_NOT_SUFFICIENT = 0, 1, 2


def _resolve(cu: Cuda, name: str, version: int, flags: int = 0) -> tuple[int, int, object]:
    fn, status = ffi.new("void **"), ffi.new("int *")
    rc = cu.lib.cuGetProcAddress_v2(name.encode(), fn, version, flags, status)
    return rc, status[0], fn[0]


@pytest.mark.parametrize(
    ("name", "version", "symbol"),
    [
        ("cuMemAlloc", 12000, "cuMemAlloc_v2"),
        ("cuMemFree", 12000, "cuMemFree_v2"),
        ("cuMemcpyHtoDAsync", 12000, "cuMemcpyHtoDAsync_v2"),
        ("cuStreamDestroy", 12000, "cuStreamDestroy_v2"),
        ("cuEventDestroy", 12000, "cuEventDestroy_v2"),
        ("cuStreamBeginCapture", 12000, "cuStreamBeginCapture_v2"),
        ("cuGraphInstantiate", 12000, "cuGraphInstantiateWithFlags"),
        ("cuEventElapsedTime", 12000, "cuEventElapsedTime"),
        ("cuEventElapsedTime", 12080, "cuEventElapsedTime_v2"),
        ("cuEventElapsedTime", 13000, "cuEventElapsedTime_v2"),
        ("cuGetProcAddress", 12000, "cuGetProcAddress_v2"),
        ("cuDevicePrimaryCtxRelease", 12000, "cuDevicePrimaryCtxRelease_v2"),
        ("cuCtxCreate", 12000, "cuCtxCreate_v2"),
        ("cuCtxCreate", 13000, "cuCtxCreate_v4"),
        ("cuInit", 2000, "cuInit"),
    ],
)
def test_versioned_resolution(cu: Cuda, name: str, version: int, symbol: str) -> None:
    rc, status, fn = _resolve(cu, name, version)
    assert (rc, status) == (CUDA_SUCCESS, SUCCESS)
    assert fn == ffi.cast("void *", getattr(cu.lib, symbol))


def test_unknown_and_too_old(cu: Cuda) -> None:
    rc, status, fn = _resolve(cu, "cuNoSuchFunction", 12000)
    assert (rc, status, fn) == (CUDA_ERROR_NOT_FOUND, SYMBOL_NOT_FOUND, ffi.NULL)
    # The 1-argument cuStreamBeginCapture of CUDA 10.0 is not provided.
    rc, status, fn = _resolve(cu, "cuStreamBeginCapture", 10000)
    assert (rc, status, fn) == (CUDA_ERROR_NOT_FOUND, VERSION_NOT_SUFFICIENT, ffi.NULL)
    # Versioned names are not base names.
    assert _resolve(cu, "cuMemAlloc_v2", 12000)[0] == CUDA_ERROR_NOT_FOUND


@pytest.mark.parametrize(
    ("name", "symbol"),
    [
        ("cuMemcpyHtoDAsync", "cuMemcpyHtoDAsync_v2_ptsz"),
        ("cuMemcpyHtoD", "cuMemcpyHtoD_v2_ptds"),
        ("cuLaunchKernel", "cuLaunchKernel_ptsz"),
        ("cuStreamBeginCapture", "cuStreamBeginCapture_v2_ptsz"),
        ("cuMemAlloc", "cuMemAlloc_v2"),  # no stream: no variant
    ],
)
def test_per_thread_flag_gives_the_ptsz_variants(cu: Cuda, name: str, symbol: str) -> None:
    rc, _status, fn = _resolve(cu, name, 12000, flags=2)
    assert rc == CUDA_SUCCESS
    assert fn == ffi.cast("void *", getattr(cu.lib, symbol))


def test_ptsz_variant_uses_the_per_thread_stream(cu: Cuda) -> None:
    """Stream 0 in a _ptsz/_ptds entry point is this thread's per-thread
    default stream, not the legacy stream."""
    lib = cu.lib
    d = cu.alloc(16)
    cu.check(lib.cuMemsetD8Async_ptsz(d, 4, 16, ffi.NULL))
    ptds = ffi.cast("CUstream", 2)
    cu.check(lib.cuStreamSynchronize(ptds))
    assert lib.cuStreamQuery_ptsz(ffi.NULL) == CUDA_SUCCESS
    out = ffi.new("unsigned char[16]")
    cu.check(lib.cuMemcpyDtoH_v2_ptds(out, d, 16))
    assert list(out) == [4] * 16

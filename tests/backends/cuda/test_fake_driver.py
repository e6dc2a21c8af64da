"""CudaDriver's error paths, against a fake library that counts its calls."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest

from aruntime import _exceptions as exc
from aruntime.backends import cuda
from aruntime.backends.cuda._driver import CudaDriver


@pytest.fixture
def driver(cuda_library_env: pytest.MonkeyPatch, fake_libcuda: Path):  # type: ignore[no-untyped-def]
    cuda_library_env.setenv("ARUNTIME_CUDA_LIBRARY", str(fake_libcuda))
    opened = cuda.open_driver(0, sim=False)
    yield opened
    opened.close()


def test_device_info_comes_from_the_library(driver: CudaDriver) -> None:
    info = driver.device_info()
    assert info.name == "Fake CUDA device"
    assert info.compute_units == 4
    assert driver.backend_name == "cuda"


def test_out_of_memory(driver: CudaDriver, fake_control: ctypes.CDLL) -> None:
    fake_control.fake_set_next_result(2)
    with pytest.raises(exc.OutOfMemoryError, match=r"cuMemAlloc_v2.*out of memory"):
        driver.mem_alloc(1 << 40)
    assert driver.mem_alloc(16) == 0x100000  # not sticky


def test_sticky_error_fails_fast(driver: CudaDriver, fake_control: ctypes.CDLL) -> None:
    fake_control.fake_set_next_result(700)
    with pytest.raises(exc.DeviceLostError, match="CUDA_ERROR_ILLEGAL_ADDRESS"):
        driver.mem_alloc(16)
    calls = fake_control.fake_calls()
    with pytest.raises(exc.DeviceLostError, match="lost earlier"):
        driver.mem_alloc(16)
    driver.mem_free(0x100000)  # frees are no-ops: the context took everything with it
    assert fake_control.fake_calls() == calls  # the library was not called again


def test_missing_symbols_raise_not_supported_naming_them(driver: CudaDriver) -> None:
    with pytest.raises(exc.NotSupportedError, match="cuMemAllocManaged") as info:
        driver.mem_alloc_managed(16)
    assert info.value.function == "cuMemAllocManaged"
    start = end = object()
    with pytest.raises(exc.NotSupportedError, match="cuEventElapsedTime"):
        driver.event_elapsed_ms(start, end)  # type: ignore[arg-type]


def test_no_such_device(cuda_library_env: pytest.MonkeyPatch, fake_libcuda: Path) -> None:
    cuda_library_env.setenv("ARUNTIME_CUDA_LIBRARY", str(fake_libcuda))
    with pytest.raises(exc.BackendUnavailableError, match="no device 3"):
        cuda.open_driver(3, sim=False)

"""The one CUresult table."""

from __future__ import annotations

import pytest

from aruntime import _exceptions as exc
from aruntime.backends.cuda import _errors


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        (2, exc.OutOfMemoryError),
        (801, exc.NotSupportedError),
        (700, exc.DeviceLostError),
        (719, exc.DeviceLostError),
        (714, exc.DeviceLostError),
        (715, exc.DeviceLostError),
        (716, exc.DeviceLostError),
        (718, exc.DeviceLostError),
        (214, exc.DeviceLostError),
        (1, exc.DriverError),
        (400, exc.DriverError),
        (12345, exc.DriverError),
    ],
)
def test_codes_map_to_the_error_tree(code: int, cls: type[exc.DriverError]) -> None:
    error = _errors.error_for(code, "cuSomething", backend="cuda-sim")
    assert type(error) is cls
    assert error.code == code
    assert error.function == "cuSomething"
    assert error.backend == "cuda-sim"
    assert "cuSomething" in str(error)


def test_message_carries_the_drivers_name_and_description() -> None:
    error = _errors.error_for(
        2, "cuMemAlloc_v2", backend="cuda", describe=lambda c: ("CUDA_ERROR_OUT_OF_MEMORY", "oom!")
    )
    assert isinstance(error, MemoryError)
    assert error.name == "CUDA_ERROR_OUT_OF_MEMORY"
    assert "CUDA_ERROR_OUT_OF_MEMORY" in str(error) and "oom!" in str(error)


def test_unnamed_codes_fall_back_to_the_static_names() -> None:
    error = _errors.error_for(700, "cuEventSynchronize", backend="cuda", describe=lambda c: None)
    assert error.name == "CUDA_ERROR_ILLEGAL_ADDRESS"
    assert "unusable" in str(error)


def test_every_mapped_code_has_a_name() -> None:
    assert set(_errors.ERROR_CLASSES) <= set(_errors.KNOWN_NAMES)

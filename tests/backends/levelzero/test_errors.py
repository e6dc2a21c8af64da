"""The ze_result_t table maps every code onto the error tree, with useful messages."""

from __future__ import annotations

import pickle

import pytest

from aruntime._exceptions import (
    DeviceLostError,
    DriverError,
    NotSupportedError,
    OutOfMemoryError,
)
from aruntime.backends.levelzero import _errors
from aruntime.backends.levelzero._ffi import ffi


def test_table_names_agree_with_the_declarations() -> None:
    declared = ffi.typeof("ze_result_t").relements
    for code, (name, _cls) in _errors.RESULTS.items():
        assert declared[name] == code, name
    missing = {
        name
        for name, value in declared.items()
        if value not in _errors.RESULTS and value not in (0, 1, 0x7FFFFFFF)
    }
    assert not missing, f"codes without a table entry: {sorted(missing)}"


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        (0x70000001, DeviceLostError),  # DEVICE_LOST
        (0x70000006, DeviceLostError),  # DEVICE_REQUIRES_RESET
        (0x70000002, OutOfMemoryError),  # OUT_OF_HOST_MEMORY
        (0x70000003, OutOfMemoryError),  # OUT_OF_DEVICE_MEMORY
        (0x78000003, NotSupportedError),  # UNSUPPORTED_FEATURE
        (0x78000002, NotSupportedError),  # UNSUPPORTED_VERSION
        (0x78000009, NotSupportedError),  # UNSUPPORTED_SIZE
        (0x7800000A, NotSupportedError),  # UNSUPPORTED_ALIGNMENT
        (0x7800000D, NotSupportedError),  # UNSUPPORTED_ENUMERATION
        (0x78000004, DriverError),  # INVALID_ARGUMENT
        (0x7FFFFFFE, DriverError),  # UNKNOWN
    ],
)
def test_code_maps_to_class(code: int, cls: type[DriverError]) -> None:
    err = _errors.error_for(code, "zeMemAllocDevice", "levelzero-sim")
    assert type(err) is cls
    assert err.code == code
    assert err.function == "zeMemAllocDevice"
    assert err.backend == "levelzero-sim"
    assert err.name.startswith("ZE_RESULT_")
    assert str(err).startswith(f"zeMemAllocDevice failed: {err.name} ({code:#x})")


def test_every_unsupported_code_is_not_supported() -> None:
    for name, cls in _errors.RESULTS.values():
        if "UNSUPPORTED" in name:
            assert cls is NotSupportedError, name


def test_out_of_memory_is_a_memory_error() -> None:
    with pytest.raises(MemoryError):
        _errors.raise_result(0x70000003, "zeMemAllocDevice", "levelzero", "1 TiB")


def test_unknown_code_and_detail() -> None:
    err = _errors.error_for(0x12345, "zeFoo", "levelzero", "while testing")
    assert type(err) is DriverError
    assert "unknown ze_result_t 0x12345" in str(err)
    assert str(err).endswith("while testing")


def test_errors_pickle() -> None:
    err = _errors.error_for(0x70000001, "zeEventHostSynchronize", "levelzero-sim")
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is DeviceLostError
    assert (again.code, again.name, again.function) == (err.code, err.name, err.function)

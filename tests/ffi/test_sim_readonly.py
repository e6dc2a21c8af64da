"""The sims' hook for ranges a launch declared read-only (ffi/sim/engine.h).

What a wrong declaration does to a launch is tested on every sim in
tests/conformance/test_hazards.py; here, the hook's own refusals: nothing
half-kept, and a refused declaration leaves the next launch unchecked
rather than checked against stale ranges.
"""

from __future__ import annotations

import ctypes

import pytest

from aruntime._native import native_library_path

DRIVERS = ("libcuda.so.1", "libze_aruntime_sim.so")


def hook(driver: str) -> ctypes._CFuncPtr:  # type: ignore[name-defined]
    lib = ctypes.CDLL(str(native_library_path(driver)))
    setter = lib.arsim_set_launch_readonly
    setter.restype = ctypes.c_int
    setter.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_uint32]
    return setter


def pairs(*values: int) -> ctypes.Array[ctypes.c_uint64]:
    return (ctypes.c_uint64 * len(values))(*values)


@pytest.mark.parametrize("driver", DRIVERS)
def test_declarations_the_hook_refuses(driver: str) -> None:
    setter = hook(driver)
    assert setter(pairs(4096, 256), 1) == 0
    assert setter(None, 0) == 0  # forgets them
    assert setter(pairs(4096, 0), 1) == -1  # an empty range
    assert setter(pairs(2**64 - 16, 32), 1) == -1  # wraps around
    assert setter(None, 3) == -1  # ranges promised, none given
    many = [v for i in range(65) for v in (4096 * (i + 1), 8)]
    assert setter(pairs(*many), 65) == -1  # over ARSIM_MAX_READONLY
    assert setter(pairs(*many[:128]), 64) == 0  # the limit itself
    assert setter(None, 0) == 0

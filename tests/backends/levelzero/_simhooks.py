"""The software driver's test hooks (fault injection, timing), bound on their own FFI."""

from __future__ import annotations

import functools
from typing import Any

import cffi

from aruntime._native import native_library_path

SIM_FILENAME = "libze_aruntime_sim.so"
FAULT_OUT_OF_MEMORY = 1
FAULT_KERNEL_ERROR = 2
FAULT_DEVICE_LOST = 3

_ffi = cffi.FFI()
_ffi.cdef(
    """
    int arze_sim_inject_fault(int device, int kind, int count);
    void arze_sim_clear_faults(void);
    void arze_sim_set_timing(double copy_gbps, double op_latency_us);
    int arze_sim_live_queues(void);
    """
)


@functools.cache
def hooks() -> Any:
    """The sim library: the same instance the loader (or a direct load) uses."""
    return _ffi.dlopen(str(native_library_path(SIM_FILENAME).resolve()))


def kernels_image() -> bytes:
    return native_library_path("libarkernels_host.so").read_bytes()

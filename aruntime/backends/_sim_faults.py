"""The software drivers' report of a kernel's memory fault, for error messages.

When a kernel on cuda-sim or levelzero-sim touches memory outside every live
allocation, the driver fails the op with its illegal-address / device-lost
code and keeps a one-line report (``arsim_fault_report``): the kernel, the
address, the nearest allocation and the offset into it.  Hardware says no
more than the code; the sims can, so the error message carries the report.
"""

from __future__ import annotations

import ctypes
import os

from .._exceptions import AruntimeError
from .._native import native_library_path

__all__ = ["fault_report"]

_LIBRARIES = {"cuda-sim": "libcuda.so.1", "levelzero-sim": "libze_aruntime_sim.so"}


def fault_report(backend: str) -> str:
    """The sim driver's last fault report, or ``""`` (not a sim, not loaded, no fault)."""
    filename = _LIBRARIES.get(backend)
    if filename is None:
        return ""
    try:
        path = native_library_path(filename)
        # RTLD_NOLOAD: only the copy this process already runs, never a new one.
        lib = ctypes.CDLL(str(path), mode=os.RTLD_NOLOAD | os.RTLD_LOCAL)
        report = lib.arsim_fault_report
    except (OSError, AttributeError, AruntimeError):
        return ""
    report.restype = ctypes.c_int
    report.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    buf = ctypes.create_string_buffer(512)
    report(buf, len(buf))
    return buf.value.decode(errors="replace")

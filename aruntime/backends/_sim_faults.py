"""The software drivers' report of a kernel's memory fault, for error messages.

When a kernel on cuda-sim or levelzero-sim touches memory outside every live
allocation, the driver fails the op with its illegal-address / device-lost
code and keeps a one-line report (``arsim_fault_report``): the kernel, the
address, the nearest allocation and the offset into it.  Hardware says no
more than the code; the sims can, so the error message carries the report.

The report also names where the application launched that kernel: before
each launch on a sim, :func:`launch_site_hook`'s function hands the sim the
caller's ``"file:line"`` (``arsim_set_launch_site``), which the kernel op
keeps.  Every later call on the lost device fails with the same report, so
each of them names the op that lost the device and its call site.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from typing import Any

from .._callsite import caller_site
from .._exceptions import AruntimeError
from .._native import native_library_looked_up, native_library_path

__all__ = ["fault_report", "launch_site_hook", "recover_lost_sim"]

_LIBRARIES = {"cuda-sim": "libcuda.so.1", "levelzero-sim": "libze_aruntime_sim.so"}

# The sim keeps a pointer to each site's bytes, never a copy, so every site
# handed to it stays alive here for the life of the process: one entry per
# distinct line of user code that launches kernels, capped all the same.
_SITES: dict[str, bytes] = {}
_MAX_SITES = 65536
_TOO_MANY = b"<a call site: more than 65536 launch sites seen>"


def _sim_function(backend: str, name: str) -> Any:
    """``name`` in the sim driver this process already runs, or None."""
    filename = _LIBRARIES.get(backend)
    if filename is None:
        return None
    try:
        path = native_library_path(filename)
        # RTLD_NOLOAD: only the copy this process already runs, never a new one.
        lib = ctypes.CDLL(str(path), mode=os.RTLD_NOLOAD | os.RTLD_LOCAL)
        return getattr(lib, name)
    except (OSError, AttributeError, AruntimeError):
        return None


def launch_site_hook(backend: str) -> Callable[[], None] | None:
    """For a sim backend: a function to call just before each kernel launch, else None.

    It tells the sim, on the launching thread, the user's ``"file:line"``
    of this launch, so that a fault of the kernel names it.
    """
    setter = _sim_function(backend, "arsim_set_launch_site")
    if setter is None:
        return None
    setter.restype = None
    setter.argtypes = [ctypes.c_char_p]

    def note_launch_site() -> None:
        site = caller_site()
        data = _SITES.get(site)
        if data is None:
            data = _TOO_MANY
            if len(_SITES) < _MAX_SITES:
                data = _SITES.setdefault(site, site.encode(errors="replace"))
        setter(data)

    return note_launch_site


def fault_report(backend: str) -> str:
    """The sim driver's last fault report, or ``""`` (not a sim, not loaded, no fault)."""
    report = _sim_function(backend, "arsim_fault_report")
    if report is None:
        return ""
    report.restype = ctypes.c_int
    report.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    buf = ctypes.create_string_buffer(1024)
    report(buf, len(buf))
    return buf.value.decode(errors="replace")


def recover_lost_sim(backend: str) -> str:
    """If ``backend``'s sim has a lost device, clear it as a relaunch would; its report, or "".

    For test suites that run many tests in one process: on hardware each
    would need a fresh process after a sticky fault.  Only the sim's own
    test hook can undo one (``arsim_clear_faults``, ``arze_sim_clear_faults``).
    """
    if not native_library_looked_up():
        return ""  # no sim is loaded, and looking one up would build it
    lost = _sim_function(backend, "arsim_lost_devices")
    if lost is None:
        return ""
    lost.restype = ctypes.c_int
    if lost() == 0:
        return ""
    report = fault_report(backend) or "a device was lost"
    name = "arze_sim_clear_faults" if backend == "levelzero-sim" else "arsim_clear_faults"
    clear = _sim_function(backend, name)
    if clear is not None:
        clear.restype = None
        clear()
    return report

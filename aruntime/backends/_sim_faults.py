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

import collections
import ctypes
import os
import sys
from collections.abc import Callable, Sequence
from types import CodeType, FrameType
from typing import Any, cast

import cffi

from .._callsite import KNOWN_FILES, EntryCaller, known_user_frame
from .._enqueue import launch_site
from .._exceptions import AruntimeError, StoreHazardError
from .._native import native_library_looked_up, native_library_path

__all__ = [
    "fault_report",
    "launch_site_hook",
    "one_step_notes",
    "readonly_error",
    "readonly_hook",
    "recover_lost_sim",
]

_LIBRARIES = {"cuda-sim": "libcuda.so.1", "levelzero-sim": "libze_aruntime_sim.so"}

# The sim keeps a pointer to each site's bytes, never a copy, so every site
# handed to it stays alive here for the life of the process: one entry per
# distinct line of user code that launches kernels, capped all the same.
_SITES: dict[tuple[str, int], bytes] = {}
# The same bytes by call instruction, ``(id(code), f_lasti)``, with the code
# object (held, so its id cannot be reused): the line of a call seen before
# without ``f_lineno``, which scans the code's line table at every read.
_BY_INSTRUCTION: dict[tuple[int, int], tuple[CodeType, bytes]] = {}
_FFI = cffi.FFI()
_MAX_SITES = 65536
_TOO_MANY = b"<a call site: more than 65536 launch sites seen>"
_UNKNOWN = b"<unknown>:0"
# Where each sim's launches come from: one per backend name, shared by its
# backends (the road to the hook is the same), kept for the tests to ask
# whether launches take the one-step road.
_CALLERS: dict[str, EntryCaller] = {}
# Per sim: the Python notes that found the user's frame a few frames up (known_user_frame).
_NEAR_NOTES: collections.Counter[str] = collections.Counter()
#: How many frames up from the note the user's may be (SITE_DEPTH_MAX in ffi/core/site.c).
_NEAR = 6


# Each sim's latest note, compiled or not (one_step_notes reads its count).
_NOTES: dict[str, object] = {}


def _site_bytes(frame: FrameType | None) -> bytes:
    """The ``"file:line"`` bytes of ``frame``, kept for good (see _SITES)."""
    if frame is None:
        return _UNKNOWN
    code = frame.f_code
    key = (id(code), frame.f_lasti)
    known = _BY_INSTRUCTION.get(key)
    if known is not None and known[0] is code:
        return known[1]
    where = (code.co_filename, frame.f_lineno)
    data = _SITES.get(where)
    if data is None:
        if len(_SITES) >= _MAX_SITES:
            return _TOO_MANY
        data = _SITES.setdefault(where, f"{where[0]}:{where[1]}".encode(errors="replace"))
    if len(_BY_INSTRUCTION) < _MAX_SITES:
        _BY_INSTRUCTION[key] = (code, data)
    return data


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
    found = _sim_function(backend, "arsim_set_launch_site")
    if found is None:
        return None
    # Called through cffi, not ctypes: a third of the cost on every launch
    # (cffi hands the bytes' own buffer to the C pointer, without a copy).
    address = ctypes.cast(found, ctypes.c_void_p).value
    setter = _FFI.cast("void (*)(const char *)", address)
    find = _CALLERS.get(backend) or _CALLERS.setdefault(
        backend, EntryCaller("_backend.py", "launch")
    )
    by_instruction = _BY_INSTRUCTION
    near_notes, _getframe = _NEAR_NOTES, sys._getframe

    def note_launch_site() -> None:
        # What the compiled note does (ffi/core/site.c), for a line it has not cached:
        # a few frames up, past aruntime's own, the first is the user's; through a
        # Backend's compiled front no Backend.launch frame is there to jump below.
        frame = known_user_frame(_getframe(1), _NEAR)
        if frame is not None:
            near_notes[backend] += 1
        else:
            frame = find()
        if frame is not None:
            code = frame.f_code
            known = by_instruction.get((id(code), frame.f_lasti))
            if known is not None and known[0] is code:
                setter(known[1])
                return
        setter(_site_bytes(frame))

    # In C where the caches above already know the launch's line (ffi/core/site.c).
    compiled = launch_site(
        note_launch_site, inside=KNOWN_FILES, sites=by_instruction, setter=address or 0
    )
    _NOTES[backend] = compiled
    return cast("Callable[[], None]", compiled)


def one_step_notes(backend: str) -> int:
    """How many of ``backend``'s launch-site notes took a short road (a jump, a user's
    frame a few frames up, or the compiled note's cache hit) rather than a walk up the
    stack: the tests hold the road to it."""
    caller = _CALLERS.get(backend)
    compiled = _NOTES.get(backend)
    jumps = caller.jumps if caller else 0
    return jumps + _NEAR_NOTES[backend] + int(getattr(compiled, "taken", 0))


def readonly_hook(backend: str) -> Callable[[Sequence[tuple[int, int]]], None] | None:
    """For a sim backend: a function that declares the next launch's read-only ranges, else None.

    Called on the launching thread just before the launch (and with no
    ranges just after it), it hands the sim the ``(address, nbytes)``
    ranges that the launch's ``reads=`` declared read-only; the sim's
    interpreters then fail the launch on a store into one of them
    (:func:`readonly_error` turns that into the error).
    """
    setter = _sim_function(backend, "arsim_set_launch_readonly")
    if setter is None:
        return None
    setter.restype = ctypes.c_int
    setter.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_uint32]

    def declare(ranges: Sequence[tuple[int, int]]) -> None:
        n = len(ranges)
        if n == 0:
            setter(None, 0)
            return
        pairs = (ctypes.c_uint64 * (2 * n))(*(v for r in ranges for v in r))
        if setter(pairs, n) != 0:  # more ranges than the sim keeps: left unchecked
            setter(None, 0)

    return declare


def readonly_error(backend: str, code: int, name: str, function: str) -> StoreHazardError:
    """The error for a launch the sim stopped at a store into memory declared read-only.

    The sim's report of the store names the kernel, its launch site and the
    address; it is the latest one, which is this launch's unless two such
    launches failed at once.
    """
    detail = "a kernel stored into memory its launch declared read-only (reads=)"
    report = _sim_function(backend, "arsim_readonly_report")
    if report is not None:
        report.restype = ctypes.c_int
        report.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        buf = ctypes.create_string_buffer(1024)
        if report(buf, len(buf)) > 0:
            detail = buf.value.decode(errors="replace")
    return StoreHazardError(
        f"{function} failed with {name}: {detail}: a kernel that stores through a pointer "
        "must not list it in reads= (list it in writes=, or in neither)",
        backend=backend,
        code=code,
        name=name,
        function=function,
    )


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

"""ResourceWarnings name the user's line: where a dropped object was made, where close() ran."""

from __future__ import annotations

import gc
import inspect
import os
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aruntime as ar
from aruntime.testing import open_test_backend

ROOT = Path(__file__).resolve().parent.parent


def _line_of(marker: str, fn: Callable[..., Any]) -> int:
    """The line number of the first line of ``fn``'s source that contains ``marker``."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, text in enumerate(lines) if marker in text)


def _make_and_drop(gpu: ar.Backend, what: str) -> None:
    if what == "stream":
        gpu.create_stream()  # made here
    elif what == "event":
        gpu.create_event()  # made here
    elif what == "graph":
        with gpu.capture(gpu.default_stream()):  # made here
            pass
    else:
        gpu.array_from_numpy(np.arange(4, dtype=np.float32))  # made here


@pytest.mark.parametrize("what", ["stream", "event", "graph", "array"])
def test_a_dropped_handle_warns_at_the_line_that_made_it(what: str) -> None:
    with ar.open_backend("mock") as gpu:
        with pytest.warns(ResourceWarning, match="unclosed") as record:
            _make_and_drop(gpu, what)
            gc.collect()
        ours = [w for w in record if issubclass(w.category, ResourceWarning)]
        assert ours, record
        assert ours[0].filename == __file__, ours[0].filename  # not weakref.py
        source = inspect.getsource(_make_and_drop)
        marker = {
            "stream": "gpu.create_stream()",
            "event": "gpu.create_event()",
            "graph": "with gpu.capture(",
            "array": "gpu.array_from_numpy(",
        }[what]
        assert marker in source
        assert ours[0].lineno == _line_of(marker, _make_and_drop)


def _open_and_drop() -> None:
    ar.open_backend("mock")  # opened here


def test_a_dropped_backend_warns_at_the_line_that_opened_it() -> None:
    with pytest.warns(ResourceWarning, match="unclosed backend") as record:
        _open_and_drop()
        gc.collect()
    assert record[0].filename == __file__
    assert record[0].lineno == _line_of("ar.open_backend", _open_and_drop)


@pytest.mark.parametrize("variant", ["mock", "mock-async"])
def test_close_warns_about_live_allocations_with_their_sites(variant: str) -> None:
    options: dict[str, Any] = {"latency": 0.0} if variant == "mock-async" else {}
    gpu = ar.open_backend("mock", **options)
    first = gpu.alloc(100)
    more = [gpu.alloc(10) for _ in range(3)]
    pinned = gpu.alloc_host_pinned(16)
    gpu.host_ptr_to_device(pinned)  # a mapping goes with its host buffer, uncounted
    freed = gpu.alloc(8)
    gpu.free(freed)
    with pytest.warns(ResourceWarning, match="freed 5 allocations \\(146 bytes\\)") as record:
        gpu.close()
    message = str(record[0].message)
    here = __file__
    this_test = test_close_warns_about_live_allocations_with_their_sites
    assert f"{here}:{_line_of('first = gpu.alloc(100)', this_test)}" in message
    assert "(3 x, 30 bytes)" in message  # grouped by site
    assert record[0].filename == here
    assert gpu.live_alloc_count() == 0 and pinned.freed
    del first, more


def test_close_without_leaks_does_not_warn() -> None:
    import warnings

    gpu = ar.open_backend("mock")
    ptr = gpu.alloc(8)
    gpu.free(ptr)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gpu.close()


class _Hold:
    """Keeps a backend's default stream busy until :meth:`open`, holding nothing of the backend.

    The threaded mock runs a kernel that waits; cuda-sim runs a host function
    that waits (``cuLaunchHostFunc`` on the stream's native handle).  Either
    way "the op is still pending" is a fact, not a matter of timing.
    """

    def __init__(self, gpu: ar.Backend, variant: str) -> None:
        self._event = threading.Event()
        event = self._event
        if variant == "cuda-sim":
            import cffi

            from aruntime._native import native_library_path

            ffi = cffi.FFI()
            ffi.cdef("typedef void (*fn)(void *); int cuLaunchHostFunc(void *, fn, void *);")
            lib = ffi.dlopen(str(native_library_path("libcuda.so.1")))
            self._callback = ffi.callback("void(void *)", lambda _user: event.wait(60) and None)
            handle = ffi.cast("void *", gpu.default_stream().__cuda_stream__()[1])
            assert lib.cuLaunchHostFunc(handle, self._callback, ffi.NULL) == 0
        else:
            module = gpu.load_module("hold", {"hold": lambda launch: event.wait(60) and None})
            gpu.launch(gpu.kernel(module, "hold"), 1, 1, [])

    def open(self) -> None:
        self._event.set()


def _open_queue_and_drop(variant: str) -> _Hold | None:
    gpu = open_test_backend(variant)  # opened here
    hold = None if variant == "mock" else _Hold(gpu, variant)
    ptr = gpu.alloc(1 << 16)
    gpu.copy_h2d_async(np.ones(1 << 16, np.uint8), ptr)  # never awaited
    # A device-side op is in stream order behind the hold on every backend (a
    # pageable copy may be staged around it), and its Completion holds its
    # ledger entry, the link to the backend that the core must not keep.
    if hold is not None:
        assert not gpu.memset_async(ptr, 0, 1 << 16).done()  # never awaited
    return hold


@pytest.mark.parametrize("variant", ["mock", "mock-async", "cuda-sim"])
def test_a_backend_dropped_with_work_in_flight_still_warns(variant: str) -> None:
    """The pending op must not keep a dropped backend alive (issue 22, item 6)."""
    with warnings.catch_warnings():  # backends earlier tests dropped must not answer for this one
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
    name = "cuda-sim" if variant == "cuda-sim" else "mock"
    try:
        hold = None
        with pytest.warns(ResourceWarning, match="unclosed backend") as record:
            hold = _open_queue_and_drop(variant)
            gc.collect()
    except ar.BackendUnavailableError as exc:
        pytest.skip(f"{variant} unavailable: {exc}")
    finally:
        if hold is not None:
            hold.open()  # the dropped backend's waiters drain, then its driver closes
    ours = [w for w in record if f"unclosed backend {name!r}" in str(w.message)]
    assert len(ours) == 1, [str(w.message) for w in record]
    assert ours[0].filename == __file__
    assert ours[0].lineno == _line_of("open_test_backend(variant)", _open_queue_and_drop)


_EXIT_SCRIPT = """
import threading
import numpy as np
import aruntime as ar

gpu = ar.open_backend("mock", latency=0.0)
never = threading.Event()
hang = gpu.kernel(gpu.load_module("hang", {"hang": lambda launch: never.wait()}), "hang")
pinned = gpu.alloc_host_pinned(16)  # held by the pending copy: the backend stays reachable
gpu.launch(hang, 1, 1, [])
gpu.copy_h2d_async(pinned, gpu.alloc(16))
del gpu, pinned
"""


def test_a_backend_left_open_at_exit_with_pending_work_warns() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-W", "always::ResourceWarning", "-c", _EXIT_SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "unclosed backend 'mock' at exit, with work still pending" in run.stderr, run.stderr
    assert "<string>:6: ResourceWarning" in run.stderr, run.stderr  # the line that opened it
    assert "Traceback" not in run.stderr, run.stderr

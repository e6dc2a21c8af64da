"""CudaDriver: the driver-level primitives over the CUDA driver API.

:class:`CudaDriver` is assembled from one part per subsystem, and those
parts are the only modules that call the CUDA API (besides ``cuInit`` and
the error-naming calls in :mod:`._library`): ``_base`` (context, sticky
errors, staging-buffer recycling), ``_memory``, ``_streams`` (streams and
events), ``_copies`` (copies, fills, pageable staging), ``_modules``
(modules, kernels, launches) and ``_graphs``; ``_platform`` lists devices
without a context, and ``_exit`` holds the interpreter-exit hook.  Every call goes through cffi (the
compiled wrappers or libffi, see :mod:`._ffi`), which releases the GIL for
its duration, and every ``CUresult`` goes through :mod:`._errors`.

Context.  The driver uses the device's *primary* context
(``cuDevicePrimaryCtxRetain``), the one the runtime API, CuPy and PyTorch
use, so pointers and streams interoperate with them in one process.  The core
calls in from the event-loop thread, its waiter threads and user threads; each
thread gets the context made current lazily, on its first call, remembered in
a thread-local (a library that later switches that thread to another context
behind our back is not detected: call ``bind_to_thread()`` again).

Completion.  Events are created with ``CU_EVENT_BLOCKING_SYNC`` so that the
core's waiter threads sleep in ``cuEventSynchronize`` instead of spinning a
core; ``CU_EVENT_DISABLE_TIMING`` is added when timing is not asked for, which
makes record and query cheaper.

Pageable host memory.  See :meth:`CudaDriver.memcpy_h2d` and
:meth:`CudaDriver.memcpy_d2h`: copies from or to memory the driver has not
pinned are staged through pinned buffers by a *native* host function
(``libaruntime_cuda_helpers.so``), so the enqueueing thread never waits for
the copy, and no Python runs on a driver thread.

Sticky errors.  Once a call reports an error after which the CUDA context is
unusable (:class:`DeviceLostError`), every later call fails fast with
``DeviceLostError`` without reaching the driver.

Interpreter exit.  The first open registers one ``atexit`` hook.  It stops
new work (calls raise :class:`ClosedResourceError`), waits a bounded time
(``ARUNTIME_CUDA_EXIT_TIMEOUT_S``, default 10 s) for every stream to drain by
polling ``cuStreamQuery`` (there is no bounded ``cuCtxSynchronize``), then
turns the native host functions into no-ops, because the Python objects
whose memory they would copy are about to be freed.  It frees and releases
nothing: the process exit reclaims the context, and freeing memory or
destroying events that undrained work or a daemon waiter thread may still
touch is exactly the crash to avoid.  No Python ever runs on a driver
thread, so a driver thread finishing late cannot re-enter a dying
interpreter.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from ..._enqueue import direct_call
from ..._exceptions import ClosedResourceError, DeviceLostError
from .._staging import DIRECT_PAGEABLE_H2D_MAX
from ._base import _open_drivers
from ._constants import _NOT_READY
from ._copies import _CopyOps
from ._exit import _live_drivers, _register_exit_hook
from ._graphs import _GraphOps
from ._handles import _Resources
from ._library import CudaLibrary
from ._memory import _MemoryOps
from ._modules import _ModuleOps
from ._streams import _StreamOps

__all__ = ["CudaDriver", "open_driver"]

_log = logging.getLogger("aruntime.cuda")


class CudaDriver(_MemoryOps, _StreamOps, _CopyOps, _ModuleOps, _GraphOps):
    """One CUDA device, through its primary context."""

    def __init__(self, library: CudaLibrary, ordinal: int) -> None:
        super().__init__(library, ordinal)
        self.stream_ordered_alloc = library.has("cuMemAllocFromPoolAsync")
        self._install_direct_calls()
        _live_drivers.add(self)
        _register_exit_hook()

    def _install_direct_calls(self) -> None:
        """Let the core's compiled enqueue make the plain memset, copies and launch in C.

        Each of ``memset_d8``, ``memcpy_d2d``, ``memcpy_h2d``, ``launch``,
        ``graph_launch`` and ``stream_finished`` becomes a DirectCall
        (``aruntime/_enqueue.py``, ``ffi/core/direct.c``), an instance
        attribute over the method.  On a live driver and a thread already in
        this context, a memset, a device copy, a host copy small enough never
        to be staged, or a launch whose argument types were laid out before
        (``_params.ParamBlock``) and that needs no shared-memory opt-in, or a
        replay of a graph that holds no staging memory (``_Graph.direct``), is
        one call of the C function handed over here, made without Python; so
        is a stream's "not yet" or "done" (query, then synchronize), which an
        awaited op's stream is asked at every loop step.  Every other case,
        and any failure's name, is the method's or ``_fail``'s.  Nothing is
        installed where the compiled enqueue is off.
        """
        library = self._library
        get_current = library.address("cuCtxGetCurrent")
        context = int(self._ffi.cast("uintptr_t", self._ctx))
        for method, symbol in (
            ("memset_d8", "cuMemsetD8Async"),
            ("memcpy_d2d", "cuMemcpyDtoDAsync_v2"),
            ("memcpy_h2d", "cuMemcpyHtoDAsync_v2"),
            ("launch", "cuLaunchKernel"),
            ("graph_launch", "cuGraphLaunch"),
            ("stream_finished", "cuStreamQuery"),
        ):
            function = library.address(symbol)
            if not (function and get_current and context):
                continue
            # A stream found done is synchronized too (see _StreamOps.stream_finished).
            settle: dict[str, Any] = {}
            if method == "stream_finished":
                synchronize = library.address("cuStreamSynchronize")
                if not synchronize:
                    continue
                settle = {"settle": synchronize, "settle_name": "cuStreamSynchronize"}
            call = direct_call(
                self,
                getattr(CudaDriver, method),
                CudaDriver._fail,
                shape=method,
                function=function,
                name=symbol,
                get_current=get_current,
                context=context,
                host_limit=DIRECT_PAGEABLE_H2D_MAX,
                note=self._note_launch_site if method == "launch" else None,
                **settle,
            )
            if call is not None:
                vars(self)[method] = call

    def close(self) -> None:
        with self._state_lock:
            if self._closed:
                return
            self._closed = True
        _live_drivers.discard(self)
        _open_drivers.discard(self)
        lost = isinstance(self._dead, DeviceLostError)
        try:
            self._releases.close()  # deferred frees first: they need the context
            if not lost:
                self._enter_slow_unchecked()
                self._release_all_resources()
        finally:
            # Our reference to the primary context; CuPy or PyTorch hold their own.
            self._lib.cuDevicePrimaryCtxRelease_v2(self._device)
            if self._dead is None:
                self._dead = ClosedResourceError(f"the {self.backend_name} driver is closed")

    def _release_all_resources(self) -> None:
        """Free staging memory once nothing can use it (close and exit only)."""
        self._staging.close()  # from here on, buffers given back are freed at once
        with self._state_lock:
            retired, self._retired = self._retired, []
            orphans, self._orphans = self._orphans, _Resources()
        lib = self._lib
        for events, resources in retired:
            for event in events:
                lib.cuEventSynchronize(event)
                lib.cuEventDestroy_v2(event)
            self._free_resources(resources)
        lib.cuCtxSynchronize()
        self._destroy_mem_pool()
        self._free_resources(orphans)

    def shutdown_at_exit(self, deadline: float) -> None:
        """The exit hook's part for this device: see the module docstring.

        Nothing is freed or released here: process exit reclaims the context,
        and daemon waiter threads may still sit in ``cuEventSynchronize`` on
        our events, which must stay valid until the process is gone.
        """
        if self._closed:
            return
        if self._dead is None:
            self._dead = ClosedResourceError(
                f"{self.backend_name}: the interpreter is exiting; no new work is accepted"
            )
        drained = isinstance(self._dead, DeviceLostError) or self._drain(deadline)
        # From here on the Python objects owning pageable buffers may be freed:
        # host functions still queued (work that did not drain) copy nothing.
        if self._helpers is not None:
            self._helpers.ar_helpers_shutdown()
        if not drained:
            _log.warning(
                "%s: device work still running at interpreter exit; leaving it to process exit",
                self.backend_name,
            )

    def _drain(self, deadline: float) -> bool:
        lib = self._lib
        self._enter_slow_unchecked()
        pause = 0.0005
        while True:
            with self._state_lock:
                streams = list(self._streams)
            busy = [s for s in streams if lib.cuStreamQuery(s.handle) == _NOT_READY]
            if not busy:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(pause)  # exit path, not the event loop: sleeping is fine here
            pause = min(pause * 2, 0.02)


def open_driver(library: CudaLibrary, device: int) -> CudaDriver:
    """Open CUDA device ``device`` (an ordinal) of ``library``."""
    return CudaDriver(library, device)

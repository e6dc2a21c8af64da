"""The Level Zero driver, assembled from one part per subsystem.

Only the driver's modules call into the C library: ``_platform`` (zeInit,
discovery, properties), ``_base`` (context, queue groups, stream ordering),
``_event_pool``, ``_memory``, ``_streams`` (streams and events), ``_copies``,
``_modules`` (modules, kernels, launches), ``_graphs`` and
``_graph_launcher`` (the replay thread).  ``_handles`` and ``_constants``
hold plain data.

How the driver contract maps onto Level Zero (API 1.4, what Debian's loader
routes):

Streams
    A stream is an immediate command list on the device's compute queue group,
    plus a second immediate list on a copy-only queue group when the device has
    one.  Copies and fills go to the copy list and kernels to the compute list,
    so a copy on one stream overlaps a kernel on another on separate engines.
    The two lists of a stream stay one in-order sequence: when the stream's
    next op goes to the other list, the previous list signals a per-stream
    "hand-over" event with a barrier and the next list waits on it and resets it
    on the device (one event per direction, so a reset always precedes the
    next signal).  Level Zero 1.4 command lists are not in-order by default, so
    a barrier separates consecutive ops on one list; it is made in the same
    compiled call as the op after it.  A failed op's error reaches the
    stream's next marker across a hand-over (on levelzero-sim the waiting
    list takes it on), so an op nobody waits for keeps no marker.
Events
    A driver event (:class:`_Event`) is not a Level Zero event: it points at
    the pooled ze event of its latest record.  Each ``event_record`` takes a
    fresh ze event from recycled host-visible pools and appends a barrier that
    signals it; the previous one goes back to the pool.  So a
    ``stream_wait_event`` or a host wait queued before a re-record keeps
    waiting for the record that was current when it was called (CUDA's
    semantics), where resetting one ze event per record would make it wait
    for the new record, and a pipeline that re-records its events each chunk
    would deadlock.  When a pooled ze event may be reset and reused is
    :class:`_EventPool`'s business (see there).  A pool is created only when
    all events are in use, never per op.  ``event_wait`` is
    ``zeEventHostSynchronize(UINT64_MAX)`` (the core calls it on its own
    waiter threads; cffi releases the GIL).  Timing events come from pools
    with ``ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP``, and ``elapsed_ms``
    subtracts their global kernel timestamps.
Graphs
    ``capture_begin`` switches the stream to recording into a regular command
    list, ``capture_end`` closes it.  ``graph_launch`` records a "ready" event
    on the stream and hands the launch to one launcher thread per device, which
    waits for it, runs ``zeCommandQueueExecuteCommandLists`` with a fence,
    waits for the fence and signals a per-launch "done" event that the stream
    waits on (then resets on the device, which tells the pool the event is
    free again).  Launches of any graph on one device run one at a time, in
    launch order.  A replay that fails is reported by the waiter of the
    replay's own Completion (the next event recorded on that stream); the
    stream is still released, so nothing waits forever.
Modules
    SPIR-V when the image starts with the SPIR-V magic number, else a native
    binary (``ZE_MODULE_FORMAT_NATIVE``: a device binary on a GPU, a host shared
    object on the sim).
"""

from __future__ import annotations

import contextlib
from typing import Any

from ..._exceptions import DriverError, InvalidArgumentError
from ._copies import _CopyOps
from ._graphs import _GraphOps
from ._library import ZeLibrary
from ._memory import _MemoryOps
from ._modules import _ModuleOps
from ._platform import _platform, list_devices, loader_components, probe
from ._shared_context import release_context
from ._streams import _StreamOps

__all__ = ["LevelZeroDriver", "list_devices", "loader_components", "open_driver", "probe"]


class LevelZeroDriver(_MemoryOps, _StreamOps, _CopyOps, _ModuleOps, _GraphOps):
    """One Level Zero device, its context and everything made in it."""

    def __init__(self, zl: ZeLibrary, driver: Any, device: Any, *, backend_name: str) -> None:
        super().__init__(zl, driver, device, backend_name=backend_name)
        self._install_appends()
        self._install_launch()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # Streams the core has not destroyed yet (a closed stream's waiter may
        # still be draining): Level Zero lists must go before their context.
        with self._lock:
            left = list(self._streams)
        for s in left:
            with contextlib.suppress(DriverError):  # a lost device: the context takes the rest
                self._destroy_stream(s)
        if self._launcher is not None:
            self._launcher.stop()
            self._launcher = None
        self._staging.close()
        self._events.destroy()
        self._timed_events.destroy()
        release_context(self._lib, self._context_key)


def open_driver(zl: ZeLibrary, device: int, backend_name: str) -> LevelZeroDriver:
    platform = _platform(zl)
    if not 0 <= device < len(platform.devices):
        raise InvalidArgumentError(
            f"{backend_name}: device {device} does not exist "
            f"({len(platform.devices)} device(s): 0..{len(platform.devices) - 1})"
        )
    drv = LevelZeroDriver(zl, *platform.devices[device], backend_name=backend_name)
    drv.ordinal = device
    return drv

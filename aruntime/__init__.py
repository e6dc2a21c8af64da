"""aruntime: an async-first GPU runtime.

Every copy, launch, graph replay and synchronisation is enqueued at once and
returns a :class:`Completion` to ``await`` under asyncio or trio::

    import aruntime as ar

    async with ar.open_backend("auto") as gpu:
        dptr = gpu.alloc(host.nbytes)
        await gpu.copy_h2d_async(host, dptr)
"""

from __future__ import annotations

from ._array import DeviceArray, DeviceMem
from ._backend import Backend, BackendStatistics
from ._completion import Completion
from ._driver import DeviceInfo, DeviceLimits, LaunchConfig
from ._exceptions import (
    AruntimeError,
    BackendUnavailableError,
    CaptureError,
    ClosedResourceError,
    DeviceLostError,
    DriverError,
    HazardError,
    InvalidArgumentError,
    NotSupportedError,
    OutOfMemoryError,
    StoreHazardError,
)
from ._gather import gather
from ._handles import Event, Graph, Stream
from ._memory import Allocation, DevicePtr, HostBuffer
from ._modules import Kernel, Module
from ._pool import DevicePool, open_pool
from ._registry import (
    BACKEND_NAMES,
    BackendStatus,
    available_backends,
    open_backend,
    probe_backends,
)
from ._trace import Trace, TraceSpan

#: The version of this aruntime.
__version__ = "0.1.0"

__all__ = [
    "BACKEND_NAMES",
    "Allocation",
    "AruntimeError",
    "Backend",
    "BackendStatistics",
    "BackendStatus",
    "BackendUnavailableError",
    "CaptureError",
    "ClosedResourceError",
    "Completion",
    "DeviceArray",
    "DeviceMem",
    "DeviceInfo",
    "DeviceLimits",
    "DeviceLostError",
    "DevicePool",
    "DevicePtr",
    "DriverError",
    "Event",
    "Graph",
    "HazardError",
    "HostBuffer",
    "InvalidArgumentError",
    "Kernel",
    "LaunchConfig",
    "Module",
    "NotSupportedError",
    "OutOfMemoryError",
    "StoreHazardError",
    "Stream",
    "Trace",
    "TraceSpan",
    "__version__",
    "available_backends",
    "gather",
    "open_backend",
    "open_pool",
    "probe_backends",
]

"""The driver's handle objects: streams, functions, staging resources, graphs."""

from __future__ import annotations

from typing import Any

from ._ffi import CData


class _Stream:
    """A CUstream and what the driver keeps with it."""

    __slots__ = ("__weakref__", "address", "capture_keep", "foreign", "graphs", "handle", "staging")

    def __init__(self, handle: CData, address: int, *, foreign: bool = False) -> None:
        self.handle = handle
        #: The CUstream as an int, for the core's direct calls (0: the legacy stream).
        self.address = address
        self.foreign = foreign  # made by another library: never cuStreamDestroy'd here
        self.staging: CData | None = None  # pinned buffer for pageable copies
        self.capture_keep: _Resources | None = None  # while we capture on this stream
        self.graphs: set[_Graph] = set()  # launched graphs that own resources


class _Function:
    """A CUfunction, its kernel's name, its parameter sizes (None: unknown), its layouts.

    ``blocks`` maps a launch's argument types to the parameter block laid out
    for them (``_params.signature_block``), or to None for a signature packed
    per launch.  ``shared_ok`` is the dynamic shared memory a launch may ask
    for without the driver being asked again: 0 until a launch asks for some,
    then the function's ``MAX_DYNAMIC_SHARED_SIZE_BYTES`` (raised by the
    opt-in, never lowered).
    """

    __slots__ = ("address", "blocks", "handle", "name", "param_sizes", "shared_ok")

    def __init__(
        self, handle: CData, address: int, name: str, param_sizes: tuple[int, ...] | None
    ) -> None:
        self.handle = handle
        #: The CUfunction as an int, for the core's direct launch.
        self.address = address
        self.name = name
        self.param_sizes = param_sizes
        self.blocks: dict[tuple[type, ...], Any] = {}
        self.shared_ok = 0


class _Resources:
    """Native memory that device work reads or writes: freed only once that work is done."""

    __slots__ = ("jobs", "staging")

    def __init__(self) -> None:
        self.jobs: list[CData] = []
        self.staging: list[CData] = []

    def __bool__(self) -> bool:
        return bool(self.jobs or self.staging)


class _Graph:
    """An instantiated graph (CUgraphExec) and the staging memory its nodes use."""

    __slots__ = ("__weakref__", "direct", "exec", "pending_events", "resources", "streams")

    def __init__(self, exec_handle: CData, address: int, resources: _Resources) -> None:
        self.exec = exec_handle
        #: The CUgraphExec as an int where a replay is the driver call alone (it
        #: holds no staging memory, whose streams the driver must track), else
        #: 0: for the core's direct replay (``_driver.CudaDriver``).
        self.direct = 0 if resources else address
        self.resources = resources
        self.streams: set[_Stream] = set()  # live streams it was launched on
        self.pending_events: list[CData] = []  # recorded when such a stream was destroyed

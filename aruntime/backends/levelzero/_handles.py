"""The driver's handle objects: pooled events, lists, streams, modules, graphs."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from ..._exceptions import DriverError
from .._worker import HostWorker
from ._ffi import ffi


def _address(handle: Any) -> int:
    return int(ffi.cast("uintptr_t", handle))


@dataclass(eq=False)
class _ZeEvent:
    """One pooled Level Zero event."""

    handle: Any
    timing: bool
    #: Recorded at least once since it left the pool (a never-recorded event is complete).
    recorded: bool = False
    #: For graph "done" events: the launcher has signalled it.
    fired: bool = False
    #: The stream of the last record and its position there.
    stream: _ZeStream | None = None
    position: int = 0
    #: References that keep it out of the pool (see :class:`_EventPool`).
    holds: int = 0
    #: The ``ze_event_pool`` it was made in (the pool's number for it).
    block: int = 0
    #: Seen signalled since the host last reset it (read and set under the
    #: owning event's lock): a signalled event stays so until it is reset, so
    #: the next query need not ask the driver.  Never set on a ``replayed``
    #: one, which every replay of its graph resets on the device.
    signalled: bool = False
    #: Recorded into a capture: each replay resets and signals it again.
    replayed: bool = False
    #: ``handle`` as an integer, for the compiled calls (``_ffi.compiled_calls``).
    address: int = field(init=False)

    def __post_init__(self) -> None:
        self.address = _address(self.handle)


@dataclass(eq=False)
class _Event:
    """A driver event: the pooled ze event of its latest record, or None before the first."""

    timing: bool
    current: _ZeEvent | None = None
    #: Guards ``current``; taken before a pool's lock, never after.
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(eq=False)
class _List:
    """A command list and whether an op was appended since its last barrier."""

    handle: Any
    unordered: bool = False
    #: ``handle`` as an integer, for the compiled calls (``_ffi.compiled_calls``).
    address: int = field(init=False)

    def __post_init__(self) -> None:
        self.address = _address(self.handle)


@dataclass(eq=False)
class _Stager:
    """A stream's pageable-copy staging: its worker thread and two pinned buffers."""

    worker: HostWorker
    buffers: tuple[int, int]


@dataclass(eq=False)
class _ZeStream:
    compute: _List
    copy: _List | None
    #: Hand-over events: compute -> copy, copy -> compute.
    to_copy: _ZeEvent | None
    to_compute: _ZeEvent | None
    last: _List | None = None
    capture: _List | None = None
    #: Pooled events the capture records or waits for, held for the graph's life.
    captured_events: list[_ZeEvent] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Events recorded so far: orders graph failures against later records.
    records: int = 0
    #: (records at launch, error) of graph replays that failed.
    failures: list[tuple[int, DriverError]] = field(default_factory=list)
    destroyed: bool = False
    #: Made on the stream's first staged copy (see ``_staged``).
    stager: _Stager | None = None


@dataclass(eq=False)
class _ZeKernel:
    handle: Any
    name: str
    num_args: int | None = None  # from zeKernelGetProperties; None: unknown
    lock: threading.Lock = field(default_factory=threading.Lock)
    # What the kernel object holds now (Level Zero keeps a kernel's group
    # size and arguments until they are set again), so a launch sets only
    # what changed; guarded by ``lock``.
    block: tuple[int, int, int] | None = None
    args: list[bytes | None] = field(default_factory=list)
    grid: tuple[int, int, int] | None = None
    groups: Any = None  # the ze_group_count_t of ``grid``
    groups_address: int = 0  # ``groups``' address, for the compiled launch
    #: ``handle`` as an integer, for the compiled launch (``_ffi.compiled_calls``).
    address: int = field(init=False)

    def __post_init__(self) -> None:
        self.address = _address(self.handle)


@dataclass(eq=False)
class _ZeModule:
    handle: Any
    kernels: dict[str, _ZeKernel] = field(default_factory=dict)


@dataclass(eq=False)
class _ZeGraph:
    command_list: Any
    #: Pooled events that every replay signals or waits for (released with the graph).
    events: list[_ZeEvent] = field(default_factory=list)
    pending: int = 0
    destroyed: bool = False

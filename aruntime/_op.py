"""One submission: what an op is, what it calls, and which bytes it touches.

Every async op the backend enqueues is described by one :class:`Op` and
handed to :meth:`aruntime.Stream.submit`.  The op names the driver call
and its arguments (the stream's handle comes last, so no op builds a
closure), the host objects it must keep alive until the device is done, and
the byte ranges it reads and writes.

The ranges are for checking the user's code (stream races, docs/design.md):
a device range is ``(address, nbytes)``; a host range is the ``memoryview``
of the caller's buffer that an async copy reads or writes.  A kernel's
pointer arguments count as read and written over their whole extent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeAlias

__all__ = ["Op", "OpKind", "Range"]

#: A device byte range ``(address, nbytes)``, or the host buffer of an async copy.
Range: TypeAlias = tuple[int, int] | memoryview


#: From an op's driver arguments and byte count, the ranges it reads and writes.
RangesOf: TypeAlias = Callable[[tuple[Any, ...], int], tuple[tuple[Range, ...], tuple[Range, ...]]]
#: From the whole op, for a kind whose ranges its arguments cannot tell.
OpRangesOf: TypeAlias = Callable[["Op"], tuple[tuple[Range, ...], tuple[Range, ...]]]


def _h2d(args: tuple[Any, ...], nbytes: int) -> tuple[tuple[Range, ...], tuple[Range, ...]]:
    view, address = args
    return (view,), ((address, nbytes),)


def _d2h(args: tuple[Any, ...], nbytes: int) -> tuple[tuple[Range, ...], tuple[Range, ...]]:
    address, view = args
    return ((address, nbytes),), (view,)


def _d2d(args: tuple[Any, ...], nbytes: int) -> tuple[tuple[Range, ...], tuple[Range, ...]]:
    src, dst, n = args
    return ((src, n),), ((dst, n),)


def _pitched(args: tuple[Any, ...], nbytes: int) -> tuple[tuple[Range, ...], tuple[Range, ...]]:
    # Each side's whole extent, the pitch gaps between its rows included.
    src, src_pitch, dst, dst_pitch, width, rows = args
    return ((src, (rows - 1) * src_pitch + width),), ((dst, (rows - 1) * dst_pitch + width),)


def _fill(args: tuple[Any, ...], nbytes: int) -> tuple[tuple[Range, ...], tuple[Range, ...]]:
    address, _value, n = args
    return (), ((address, n),)


def _launched(args: tuple[Any, ...], nbytes: int) -> tuple[tuple[Range, ...], tuple[Range, ...]]:
    """A launch without ``reads=``/``writes=``: every pointer argument, read and written whole.

    ``args`` are the driver's: the kernel, the geometry, the checked
    arguments.  A pointer is told by its allocation id (this layer sits
    below the DevicePtr class).
    """
    spans = tuple((arg.address, arg.nbytes) for arg in args[2] if hasattr(arg, "alloc_id"))
    return spans, spans


def _given(args: tuple[Any, ...], nbytes: int) -> tuple[tuple[Range, ...], tuple[Range, ...]]:
    """Kinds whose ranges the op states itself (launches, frees), or that touch none."""
    return (), ()


def _replayed(op: Op) -> tuple[tuple[Range, ...], tuple[Range, ...]]:
    """A replay touches again every range its graph's captured ops touched.

    The graph is what the op holds first (``Graphs.launch_graph``): its
    body, read when something first asks, which is at submit.
    """
    body = op.keepalive[0].body
    return body.reads, body.writes


class OpKind:
    """What an op does: one fixed instance per kind, ``OpKind.COPY_H2D`` and so on.

    ``public`` is the call that enqueues it, for messages and Completion names;
    ``ranges`` finds the bytes an op of this kind reads and writes from its
    driver arguments (``op_ranges`` from the whole op, where those cannot
    tell), so no op builds them until something asks.
    A plain class rather than an ``enum.Enum``: every op names its kind, and
    a member lookup on an Enum class costs ten times an attribute's.
    """

    __slots__ = ("op_ranges", "public", "ranges")

    COPY_H2D: ClassVar[OpKind]
    COPY_D2H: ClassVar[OpKind]
    COPY_D2D: ClassVar[OpKind]
    COPY_2D: ClassVar[OpKind]
    MEMSET: ClassVar[OpKind]
    LAUNCH: ClassVar[OpKind]
    LAUNCH_GRAPH: ClassVar[OpKind]
    FREE_ASYNC: ClassVar[OpKind]
    #: The core's own blocking ops (guard bands) and its empty markers.
    REDZONE: ClassVar[OpKind]
    SCAN_REDZONES: ClassVar[OpKind]
    SYNCHRONIZE: ClassVar[OpKind]
    CLOSE: ClassVar[OpKind]
    #: Every kind, in the order above.
    ALL: ClassVar[tuple[OpKind, ...]]

    def __init__(
        self, public: str, ranges: RangesOf = _given, op_ranges: OpRangesOf | None = None
    ) -> None:
        self.public = public
        self.ranges = ranges
        self.op_ranges = op_ranges

    def __repr__(self) -> str:
        return f"<OpKind {self.public}>"

    def __str__(self) -> str:
        return self.public


OpKind.ALL = (
    OpKind("copy_h2d_async", _h2d),
    OpKind("copy_d2h_async", _d2h),
    OpKind("copy_d2d_async", _d2d),
    OpKind("copy_d2d_2d_async", _pitched),
    OpKind("memset_async", _fill),
    OpKind("launch", _launched),
    OpKind("launch_graph", op_ranges=_replayed),
    OpKind("free_async"),
    OpKind("redzone", _fill),
    OpKind("scan_redzones", _d2h),
    OpKind("synchronize"),
    OpKind("close"),
)
(
    OpKind.COPY_H2D,
    OpKind.COPY_D2H,
    OpKind.COPY_D2D,
    OpKind.COPY_2D,
    OpKind.MEMSET,
    OpKind.LAUNCH,
    OpKind.LAUNCH_GRAPH,
    OpKind.FREE_ASYNC,
    OpKind.REDZONE,
    OpKind.SCAN_REDZONES,
    OpKind.SYNCHRONIZE,
    OpKind.CLOSE,
) = OpKind.ALL


class Op:
    """One op on its way to a stream: built once per call, read by the stream and its policy.

    ``call(*args, stream_handle)`` enqueues it.  ``keepalive`` are objects the
    op needs until the device is done (ledger entries, the caller's buffers);
    ``views`` are memoryviews the core made of host buffers, released when
    the op finishes; ``held`` is the part of ``keepalive`` its Completion
    holds while it runs, its host buffers without the ledger entries (None:
    found from ``keepalive``); ``result`` is what awaiting the op returns.  ``reads``
    and ``writes`` are its byte ranges: given by the op where its kind cannot
    tell (a launch's pointer arguments, a replay's captured ops), else found
    from the arguments by the kind when first asked.
    """

    __slots__ = (
        "_reads",
        "_writes",
        "args",
        "call",
        "held",
        "keepalive",
        "kernel",
        "kind",
        "nbytes",
        "result",
        "views",
    )

    def __init__(
        self,
        kind: OpKind,
        call: Callable[..., None],
        args: tuple[Any, ...],
        keepalive: tuple[Any, ...] = (),
        views: tuple[memoryview, ...] = (),
        nbytes: int = 0,
        result: Any = None,
        kernel: Any = None,
        reads: tuple[Range, ...] | None = None,
        writes: tuple[Range, ...] | None = None,
        held: tuple[Any, ...] | None = None,
    ) -> None:
        self.kind = kind
        self.held = held
        self.call = call
        self.args = args
        self.keepalive = keepalive
        self.views = views
        self.nbytes = nbytes
        self.result = result
        self.kernel = kernel
        self._reads = reads
        self._writes = writes

    def _find_ranges(self) -> None:
        kind = self.kind
        if kind.op_ranges is not None:
            found_reads, found_writes = kind.op_ranges(self)
        else:
            found_reads, found_writes = kind.ranges(self.args, self.nbytes)
        if self._reads is None:
            self._reads = found_reads
        if self._writes is None:
            self._writes = found_writes

    @property
    def reads(self) -> tuple[Range, ...]:
        """The byte ranges the op reads."""
        if self._reads is None:
            self._find_ranges()
        assert self._reads is not None
        return self._reads

    @property
    def writes(self) -> tuple[Range, ...]:
        """The byte ranges the op writes."""
        if self._writes is None:
            self._find_ranges()
        assert self._writes is not None
        return self._writes

    def __repr__(self) -> str:
        return f"<Op {self.kind.public} reads={len(self.reads)} writes={len(self.writes)}>"

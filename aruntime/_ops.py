"""The async ops' front end: each op validated, built into an :class:`Op` and submitted here.

One place for what every enqueue does before it reaches a stream
(docs/design.md, "The life of an op"): the backend is open, the operands
are checked (types, the ledger's liveness and bounds, the launch's
geometry and arguments), the stream is resolved, and the op goes to
``stream.submit``, the one road onto a stream.  The public methods of
:class:`aruntime.Backend` are one line each over these.

A kernel launch remembers each argument signature it has checked (the
types of its arguments), so a repeat launch checks only that its pointers
are live.  Drivers trust what is checked here and never check it again.
The ops that belong to a part with state of its own are built there:
graph replays (``_graphs``), peer copies (``_peer_copy``), stream-ordered
frees and guard bands (``_alloc``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._array import DeviceMem
from ._completion import Completion
from ._driver import DeviceLimits, Driver, LaunchConfig
from ._enqueue import host_viewer, op_front
from ._exceptions import InvalidArgumentError
from ._handles import Graph, Stream
from ._ledger import Entry, Ledger
from ._memory import DevicePtr, HostBuffer
from ._modules import Kernel
from ._objects import Objects
from ._op import Op, OpKind
from ._peer_copy import PeerCopies
from ._state import BackendState
from ._validate import (
    as_host_view,
    check_byte_value,
    check_count,
    check_dims,
    check_kernel_args,
    check_shared_mem,
    device_operand,
    launch_ranges,
)

__all__ = ["Ops", "launch_config"]

#: Signatures remembered per kernel (a program uses a handful).
_SIGNATURES = 64


class _ArgNames(dict[int, str]):
    """``"args[i]"`` for each index, made on first use."""

    def __missing__(self, index: int) -> str:
        name = self[index] = f"args[{index}]"
        return name


#: How many launch geometries a backend keeps checked.
_CONFIGS = 64

#: The ops with a compiled front: (Backend method, front.c's op, driver method, kind).
#: Ops.launch must stay this front's common case: the same parts to Stream.enqueue.
_FRONTS = (
    ("memset_async", "memset", "memset_d8", OpKind.MEMSET),
    ("copy_h2d_async", "copy_h2d", "memcpy_h2d", OpKind.COPY_H2D),
    ("copy_d2h_async", "copy_d2h", "memcpy_d2h", OpKind.COPY_D2H),
    ("launch", "launch", "launch", OpKind.LAUNCH),
    ("launch_graph", "graph", "graph_launch", OpKind.LAUNCH_GRAPH),
)

#: How a message names each pointer argument (built once, not per launch).
_ARG_NAMES = _ArgNames()


def launch_config(
    grid: object, block: object, shared_mem: object, limits: DeviceLimits
) -> LaunchConfig:
    """A launch's geometry checked against the device's ``limits``; the common
    shapes (an int grid and block, no shared memory) without a call."""
    fn = "launch"
    return LaunchConfig(
        (grid, 1, 1)
        if type(grid) is int and 0 < grid <= limits.max_grid[0]
        else check_dims(grid, fn, "grid", limits),
        (block, 1, 1)
        if type(block) is int
        and 0 < block <= limits.max_block_threads
        and block <= limits.max_block[0]
        else check_dims(block, fn, "block", limits),
        0
        if type(shared_mem) is int and shared_mem == 0
        else check_shared_mem(shared_mem, fn, limits),
    )


def _fixed(signature: tuple[type, ...]) -> bool:
    """Whether arguments of these types pass check_kernel_args unchanged, whatever their values.

    A pointer or a numpy scalar does (its type fixes its dtype); raw bytes
    are copied and a DeviceArray is replaced by its pointer, so those
    signatures are checked at every launch.
    """
    return all(t is DevicePtr or issubclass(t, np.generic) for t in signature)


class Ops:
    """Builds and submits one backend's async ops (see the module's docstring).

    Each method is the body of the :class:`aruntime.Backend` method of the
    same name, whose docstring is the contract; ``owner`` is that backend
    (a launch's kernel must be its own).
    """

    def __init__(
        self, state: BackendState, owner: object, objects: Objects, peers: PeerCopies
    ) -> None:
        self._state = state
        self._owner = owner
        self._ledger: Ledger = state.ledger
        self._driver: Driver = state.driver
        self._objects = objects
        self._peers = peers
        #: Checked launch geometries by (grid, block), for int ones without shared memory.
        self._configs: dict[tuple[int, int], LaunchConfig] = {}
        #: A host copy's common case, in C where built (None: as_host_view decides);
        #: looked up at the first copy, as a stream's compiled enqueue is.
        self._host_view: Callable[[object, bool], memoryview | None] = self._first_host_view
        #: Whether the compiled fronts were tried (at the first memset, host copy or launch).
        self._fronts_tried = False

    def _install_fronts(self) -> None:
        """Put the memset, host copies', launch's and replay's common case in C on the backend.

        Each front (``ffi/core/front.c``) takes the calls whose every check
        passes and hands any other to the backend class's Python method,
        which runs this class's method of the same name.  They go on the
        backend instance under the methods' names, as a Stream's compiled
        ``enqueue`` goes on the stream: two Python frames were most of such
        an op.  Made at the first of these ops, not at open, which must not
        load the extension (a first open of the mock stays light).  A
        launch's front takes a signature and a geometry this class has
        checked before (``Kernel.signatures``, ``_configs``); a replay's, an
        open graph of this backend whose capture has ended (``Graphs``).
        """
        self._fronts_tried = True
        owner = self._owner
        made: dict[str, Callable[..., Completion]] = {}
        for method, op, call, kind in _FRONTS:
            front = op_front(
                op,
                owner,
                getattr(type(owner), method),
                state=self._state,
                in_range=self._ledger.range_check(),
                driver=self._driver,
                call=call,
                kind=kind,
                stream_type=Stream,
                kernel_type=Kernel,
                configs=self._configs,
                graph_type=Graph,
            )
            if front is None:
                return  # no extension: the Python methods stay
            made[method] = front
        vars(owner).update(made)

    def _first_host_view(self, obj: object, writable: bool) -> memoryview | None:
        self._host_view = host_viewer()
        return self._host_view(obj, writable)

    def copy_h2d_async(self, src: Any, dst: DeviceMem, stream: Stream | None) -> Completion:
        fn = "copy_h2d_async"
        if not self._fronts_tried:
            self._install_fronts()
        state = self._state
        if state.closed:
            state.check_open(fn)
        dst = dst if type(dst) is DevicePtr else device_operand(dst, fn, "dst", src)
        view = self._host_view(src, False) or as_host_view(src, fn, writable=False)
        n = view.nbytes
        entry = self._ledger.in_range(dst, n) or self._ledger.check_range(dst, n, fn, "dst")
        # The common case without a call: one of this backend's open streams.
        st = (
            stream
            if type(stream) is Stream and stream.open_for is self._owner
            else self._objects.resolve(stream, fn)
        )
        if n == 0:
            return st.no_op(fn, None)
        call = self._driver.memcpy_h2d
        args = (view, dst._address)
        entries = _with_host_entry(entry, src)
        return st.enqueue(OpKind.COPY_H2D, call, args, entries, (src,), (view,), n)

    def copy_d2h_async(self, src: DeviceMem, dst: Any, stream: Stream | None) -> Completion:
        fn = "copy_d2h_async"
        if not self._fronts_tried:
            self._install_fronts()
        state = self._state
        if state.closed:
            state.check_open(fn)
        src = src if type(src) is DevicePtr else device_operand(src, fn, "src", dst)
        view = self._host_view(dst, True) or as_host_view(dst, fn, writable=True)
        n = view.nbytes
        entry = self._ledger.in_range(src, n) or self._ledger.check_range(src, n, fn, "src")
        # The common case without a call: one of this backend's open streams.
        st = (
            stream
            if type(stream) is Stream and stream.open_for is self._owner
            else self._objects.resolve(stream, fn)
        )
        if n == 0:
            return st.no_op(fn, dst)
        call = self._driver.memcpy_d2h
        args = (src._address, view)
        entries = _with_host_entry(entry, dst)
        return st.enqueue(OpKind.COPY_D2H, call, args, entries, (dst,), (view,), n, dst)

    def copy_d2d_async(
        self, src: DeviceMem, dst: DeviceMem, nbytes: int, stream: Stream | None
    ) -> Completion:
        fn = "copy_d2d_async"
        self._state.check_open(fn)
        n = check_count(nbytes, fn, "nbytes")
        src, dst = device_operand(src, fn, "src"), device_operand(dst, fn, "dst")
        if src._backend is not self._owner or dst._backend is not self._owner:
            return self._peers.copy(src, dst, n, stream)
        src_entry = self._ledger.check_range(src, n, fn, "src")
        dst_entry = self._ledger.check_range(dst, n, fn, "dst")
        st = self._objects.resolve(stream, fn)
        if n == 0:
            return st.no_op(fn, None)
        s_addr, d_addr = src.address, dst.address
        if src_entry is dst_entry and abs(s_addr - d_addr) < n:
            raise InvalidArgumentError(
                f"{fn}: source and destination ranges overlap ({n} bytes, "
                f"{abs(s_addr - d_addr)} apart)"
            )
        args = (s_addr, d_addr, n)
        call = self._driver.memcpy_d2d
        return st.enqueue(OpKind.COPY_D2D, call, args, (src_entry, dst_entry), (), (), n)

    def copy_d2d_2d_async(
        self,
        src: DevicePtr,
        src_pitch: int,
        dst: DevicePtr,
        dst_pitch: int,
        width_bytes: int,
        height: int,
        stream: Stream | None,
    ) -> Completion:
        fn = "copy_d2d_2d_async"
        self._state.check_open(fn)
        sp = check_count(src_pitch, fn, "src_pitch")
        dp = check_count(dst_pitch, fn, "dst_pitch")
        width = check_count(width_bytes, fn, "width_bytes")
        rows = check_count(height, fn, "height")
        if width > sp:
            raise InvalidArgumentError(f"{fn}: width_bytes {width} exceeds src_pitch {sp}")
        if width > dp:
            raise InvalidArgumentError(f"{fn}: width_bytes {width} exceeds dst_pitch {dp}")
        src_extent = (rows - 1) * sp + width if rows and width else 0
        dst_extent = (rows - 1) * dp + width if rows and width else 0
        entries = (
            self._ledger.check_range(src, src_extent, fn, "src"),
            self._ledger.check_range(dst, dst_extent, fn, "dst"),
        )
        st = self._objects.resolve(stream, fn)
        if src_extent == 0:
            return st.no_op(fn, None)
        args = (src.address, sp, dst.address, dp, width, rows)
        call = self._driver.memcpy_2d
        return st.enqueue(OpKind.COPY_2D, call, args, entries, (), (), width * rows)

    def memset_async(
        self, ptr: DeviceMem, value: int, nbytes: int, stream: Stream | None
    ) -> Completion:
        fn = "memset_async"
        if not self._fronts_tried:
            self._install_fronts()
        state = self._state
        if state.closed:
            state.check_open(fn)
        # The checks' common case inline: a call each costs more than the check.
        v = value if type(value) is int and 0 <= value <= 255 else check_byte_value(value, fn)
        n = (
            nbytes
            if type(nbytes) is int and 0 <= nbytes < 1 << 63
            else check_count(nbytes, fn, "nbytes")
        )
        ptr = ptr if type(ptr) is DevicePtr else device_operand(ptr, fn, "ptr")
        entry = self._ledger.in_range(ptr, n) or self._ledger.check_range(ptr, n, fn)
        # The common case without a call: one of this backend's open streams.
        st = (
            stream
            if type(stream) is Stream and stream.open_for is self._owner
            else self._objects.resolve(stream, fn)
        )
        if n == 0:
            return st.no_op(fn, None)
        call = self._driver.memset_d8
        return st.enqueue(OpKind.MEMSET, call, (ptr._address, v, n), (entry,), (), (), n)

    def launch(
        self,
        kernel: Kernel,
        grid: int | tuple[int, ...],
        block: int | tuple[int, ...],
        args: Sequence[Any],
        shared_mem: int,
        stream: Stream | None,
        reads: Sequence[Any] | None,
        writes: Sequence[Any] | None,
    ) -> Completion:
        """The launch: ``args`` checked, every pointer live, the op submitted.

        The op keeps the ledger entries of the memory it uses (a capture pins
        them, see _graphs).  Without annotations a pointer argument is read and
        written, all of it; ``reads``/``writes`` narrow that (launch_ranges).
        """
        fn = "launch"
        if not self._fronts_tried:
            self._install_fronts()
        state = self._state
        if state.closed:
            state.check_open(fn)
        if type(kernel) is not Kernel or kernel.owner is not self._owner:
            if not isinstance(kernel, Kernel):
                raise TypeError(
                    f"{fn}: kernel must be a Kernel from backend.kernel(), "
                    f"got {type(kernel).__name__}"
                )
            if kernel.owner is not self._owner:
                raise InvalidArgumentError(f"{fn}: {kernel!r} belongs to another backend")
        # The usual geometries, each checked once: an int grid and block, no
        # shared memory (a bool is an int subclass, not an int: it is checked).
        config = (
            self._configs.get((grid, block))
            if type(grid) is int
            and type(block) is int
            and type(shared_mem) is int
            and not shared_mem
            else None
        )
        if config is None:
            config = launch_config(grid, block, shared_mem, state.limits)
            if (
                len(self._configs) < _CONFIGS
                and type(grid) is int
                and type(block) is int
                and config.shared_mem == 0
            ):
                self._configs[(grid, block)] = config
        # The common case without a call: one of this backend's open streams.
        st = (
            stream
            if type(stream) is Stream and stream.open_for is self._owner
            else self._objects.resolve(stream, fn)
        )
        kind = type(args)
        signature = tuple(map(type, args)) if kind is list or kind is tuple else None
        pointers = kernel.signatures.get(signature) if signature is not None else None
        if pointers is None:
            checked: Sequence[Any] = check_kernel_args(args, fn)
            pointers = tuple(i for i, arg in enumerate(checked) if type(arg) is DevicePtr)
            if signature is not None and _fixed(signature) and len(kernel.signatures) < _SIGNATURES:
                kernel.signatures[signature] = pointers
        else:
            checked = tuple(args)  # the types were checked at this signature's first launch
        in_range, check = self._ledger.in_range, self._ledger.check_range
        entries = []  # a loop, not a comprehension: that would be a call of its own (3.11)
        for i in pointers:
            ptr = checked[i]
            entries.append(in_range(ptr, 0) or check(ptr, 0, fn, _ARG_NAMES[i]))
        call_args = (kernel.handle, config, checked)
        if reads is None and writes is None:
            # Every pointer, read and written: the race checker finds them when asked.
            launch = self._driver.launch
            return st.enqueue(
                OpKind.LAUNCH, launch, call_args, tuple(entries), (), (), 0, None, kernel
            )
        read_ranges, write_ranges = launch_ranges(checked, reads, writes, fn)
        op = Op(
            OpKind.LAUNCH,
            self._driver.launch,
            call_args,
            tuple(entries),
            kernel=kernel,
            reads=read_ranges,
            writes=write_ranges,
        )
        return st.submit(op)


def _with_host_entry(entry: Entry, host: object) -> tuple[Entry, ...]:
    """A host copy's ledger entries: its device side's, then a pinned buffer's own.

    Named, the pinned buffer's entry is checked under the stream's lock as the
    device's is (a ``free_host_pinned`` under way refuses the copy there), and
    a graph that captures the copy pins it, so the buffer outlives the graph.
    """
    if type(host) is HostBuffer:
        record = host._record
        if record is not None and record.entry is not None:
            return (entry, record.entry)
    return (entry,)

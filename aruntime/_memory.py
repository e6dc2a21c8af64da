"""Value types for memory: device pointers, pinned host buffers, ledger entries."""

from __future__ import annotations

import gc
import sys
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._exceptions import InvalidArgumentError
from ._protocols import Owner

__all__ = ["Allocation", "DevicePtr", "HostBuffer"]


class DevicePtr:
    """An immutable view of device memory: an address, a byte length, an owner.

    Made only by a backend (``alloc``, ``alloc_managed``, ``alloc_arena``,
    ``host_ptr_to_device``) or by slicing another pointer.  ``int(ptr)`` is the
    address; ``ptr.offset(n)`` and ``ptr[a:b]`` are bounds-checked views into the
    same allocation: a slice that reaches past the view's end raises, as
    ``offset`` does, and arithmetic (``ptr + 8``) is refused in favour of
    ``ptr.offset(8)``.  A pointer stays a valid Python object after its memory is
    freed, but every backend call then rejects it with
    :class:`InvalidArgumentError`.
    """

    __slots__ = ("_address", "_alloc_id", "_backend", "_nbytes")

    def __init__(self, backend: Owner, address: int, nbytes: int, alloc_id: int) -> None:
        self._backend = backend
        self._address = address
        self._nbytes = nbytes
        self._alloc_id = alloc_id

    @property
    def address(self) -> int:
        """The device address of the view's first byte (also ``int(ptr)``)."""
        return self._address

    @property
    def nbytes(self) -> int:
        """The view's length in bytes (also ``len(ptr)``); copies and ops are checked against it."""
        return self._nbytes

    @property
    def backend(self) -> Owner:
        """The backend that allocated the memory."""
        return self._backend

    @property
    def alloc_id(self) -> int:
        """The ledger's id of the allocation this pointer points into."""
        return self._alloc_id

    def __int__(self) -> int:
        return self._address

    def __len__(self) -> int:
        return self._nbytes

    def offset(self, nbytes: int) -> DevicePtr:
        """The view that starts ``nbytes`` into this one (``0 <= nbytes <= self.nbytes``)."""
        if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)):
            raise TypeError(f"DevicePtr.offset: expected an int, got {type(nbytes).__name__}")
        n = int(nbytes)
        if n < 0 or n > self._nbytes:
            raise InvalidArgumentError(
                f"DevicePtr.offset: offset {n} is outside this {self._nbytes}-byte view"
            )
        return DevicePtr(self._backend, self._address + n, self._nbytes - n, self._alloc_id)

    def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray[Any, Any]:
        # Without this, numpy takes the pointer for a sequence (it has __len__
        # and __getitem__) and fails on ptr[0] with the slicing message.
        raise TypeError(
            f"np.asarray(DevicePtr): a DevicePtr is device memory ({self._nbytes} bytes at "
            f"0x{self._address:x}), which the host cannot view; copy it into a host array "
            f"with gpu.copy_d2h(ptr, host) or await gpu.copy_d2h_async(ptr, host)"
        )

    def __getitem__(self, key: slice) -> DevicePtr:
        if not isinstance(key, slice):
            raise TypeError(
                f"DevicePtr indices must be slices (ptr[a:b]), got {type(key).__name__}; use "
                "ptr.offset(n) for an offset, and copy_d2h to read the device's bytes"
            )
        if key.step not in (None, 1):
            raise InvalidArgumentError(f"DevicePtr slice step must be 1, got {key.step}")
        for bound in (key.start, key.stop):
            if bound is not None and (
                isinstance(bound, bool) or not isinstance(bound, (int, np.integer))
            ):
                raise TypeError(f"DevicePtr slice bounds must be ints, got {type(bound).__name__}")
        start, stop, _ = key.indices(self._nbytes)
        for bound in (key.start, key.stop):
            # indices() clamps; a bound past the end is a mistake, not a shorter view.
            if bound is not None and not -self._nbytes <= int(bound) <= self._nbytes:
                raise InvalidArgumentError(
                    f"DevicePtr[{_bound(key.start)}:{_bound(key.stop)}]: {int(bound)} is outside "
                    f"this {self._nbytes}-byte view"
                )
        stop = max(start, stop)
        return DevicePtr(self._backend, self._address + start, stop - start, self._alloc_id)

    def __add__(self, other: object) -> DevicePtr:
        if isinstance(other, (int, np.integer)) and not isinstance(other, bool):
            raise TypeError(
                f"DevicePtr does not support arithmetic: use p.offset({int(other)}) for the view "
                f"{int(other)} bytes in (bounds-checked), or int(p) + {int(other)} for the address"
            )
        return NotImplemented

    __radd__ = __add__

    def __sub__(self, other: object) -> DevicePtr:
        if isinstance(other, (int, np.integer, DevicePtr)) and not isinstance(other, bool):
            raise TypeError(
                "DevicePtr does not support arithmetic: use p.offset(n) for a view n bytes in, "
                "or int(p) for the address"
            )
        return NotImplemented

    def _identity(self) -> tuple[int, int, int, int]:
        """What equality and the hash compare: the backend (by identity), the range, the
        allocation it lies in."""
        return (id(self._backend), self._address, self._nbytes, self._alloc_id)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DevicePtr):
            return NotImplemented
        return self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __repr__(self) -> str:
        return f"<DevicePtr 0x{self._address:x} nbytes={self._nbytes} on {self._backend.name}>"


def _bound(value: object) -> str:
    return "" if value is None else str(value)


class _HostRecord:
    """What the ledger knows about one pinned host allocation, and the numpy views of it.

    A view made from the HostBuffer (``buf[16:]``, ``buf.view(np.float32)``,
    ``buf.reshape(...)``) is a HostBuffer too, and registers itself in
    ``views``; a plain ndarray view (``np.asarray(buf)``, ``np.frombuffer(buf)``)
    refers to the array under the HostBuffer, ``base``, whose reference count
    then exceeds the one taken at allocation.  ``free_host_pinned`` refuses
    while either kind is alive.  A ``memoryview`` or ctypes export of the
    HostBuffer itself refers to the HostBuffer, as the caller's own names do,
    so it cannot be told from them and is not seen.
    """

    __slots__ = (
        "address",
        "alloc_id",
        "backend",
        "base",
        "base_refs",
        "entry",
        "freed",
        "nbytes",
        "views",
    )

    def __init__(self, backend: Owner, address: int, nbytes: int, alloc_id: int, base: Any) -> None:
        self.backend = backend
        self.address = address
        self.nbytes = nbytes
        self.alloc_id = alloc_id
        self.freed = False
        #: The allocation's ledger entry (freed with it, and kept): a host copy
        #: names it with its device entry, so that a free under way refuses the
        #: copy at its stream and a graph that captured the copy pins the memory.
        self.entry: Any = None
        #: HostBuffer views alive now, by id (made at the first view; ndarrays
        #: are not hashable, so not a WeakSet).  A view's entry goes as it dies.
        self.views: dict[int, weakref.ref[HostBuffer]] | None = None
        #: The plain array under the HostBuffer, and its references with no view
        #: alive (counted by :meth:`no_views_yet`, once the allocation's own
        #: temporaries are gone).
        self.base = base
        self.base_refs = 0

    def _base_refs(self) -> int:
        return sys.getrefcount(self.base)

    def no_views_yet(self) -> None:
        """Count the base's references now, when only the HostBuffer and this record hold it.

        The same call shape as :meth:`_count`'s, so the two counts agree.
        """
        self.base_refs = self._base_refs()

    def add_view(self, view: HostBuffer) -> None:
        views = self.views
        if views is None:
            views = self.views = {}
        key = id(view)
        views[key] = weakref.ref(view, lambda _ref: views.pop(key, None))

    def live_views(self, buf: HostBuffer) -> int:
        """How many numpy views of the allocation are alive, besides ``buf``."""
        count = self._count(buf)
        if count:
            gc.collect()  # views that only garbage cycles still hold are not alive
            count = self._count(buf)
        return count

    def _count(self, buf: HostBuffer) -> int:
        # No iteration: another thread's view may come or go meanwhile.
        views = len(self.views) - (id(buf) in self.views) if self.views else 0
        return views + max(0, self._base_refs() - self.base_refs)


class HostBuffer(np.ndarray):
    """Pinned (page-locked) host memory: a 1-D ``uint8`` numpy array.

    Made by ``backend.alloc_host_pinned(nbytes)``; released by
    ``backend.free_host_pinned(buf)``.  It supports the buffer protocol, so it
    is accepted wherever host memory is, and views of it (``buf[16:]``,
    ``buf.view(np.float32)``) stay pinned views.  ``free_host_pinned`` refuses
    while a numpy view of it is alive.  After it is freed, backend calls
    reject it; touching its bytes from numpy is then undefined, as with any
    freed memory.
    """

    _record: _HostRecord | None

    def __array_finalize__(self, obj: Any) -> None:
        record = getattr(obj, "_record", None)
        # Only views that lie inside the pinned region keep the pinned record; a
        # fresh array produced by arithmetic on a HostBuffer is ordinary memory.
        if record is not None and self.size:
            start = self.__array_interface__["data"][0]
            if not (record.address <= start < record.address + record.nbytes):
                record = None
            elif not record.freed:
                record.add_view(self)
        self._record = record

    @property
    def backend(self) -> Owner | None:
        """The backend that pinned the memory; None for an array that is not pinned memory."""
        return self._record.backend if self._record is not None else None

    @property
    def address(self) -> int:
        """The host address of this array's first byte (of the view, for a view)."""
        return int(self.__array_interface__["data"][0])

    @property
    def freed(self) -> bool:
        """True once ``free_host_pinned`` released the memory; backend calls then reject it."""
        return self._record is not None and self._record.freed


@dataclass(frozen=True)
class Allocation:
    """One live allocation in a backend's ledger."""

    #: The allocation itself: a :class:`DevicePtr`, or a :class:`HostBuffer` for pinned
    #: host memory.
    ptr: DevicePtr | HostBuffer
    #: Its size in bytes, as requested.
    nbytes: int
    #: Where the user's code allocated it, ``"file:line"``.
    site: str
    #: Which call made it: ``"device"`` (``alloc``), ``"managed"``, ``"arena"``,
    #: ``"async"`` (``alloc_async``) or ``"host"`` (``alloc_host_pinned``).
    kind: str

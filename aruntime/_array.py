"""DeviceArray: a typed, shaped view over device memory, for interop.

It exports the memory to other libraries without copying:

* ``__cuda_array_interface__`` (version 3) on CUDA backends, for CuPy,
  Numba, PyTorch (``torch.as_tensor``) and cuda.core;
* DLPack (``__dlpack__``, ``__dlpack_device__``) on CUDA (``kDLCUDA``), Level
  Zero (``kDLOneAPI``) and the mock (``kDLExtDev``: its memory is numpy's, but
  it is as unreadable from the host as a device's, so a test cannot come to
  rely on ``np.from_dlpack(view)``);
* ``to_numpy()`` copies to a new host array on every backend, and
  :meth:`DeviceArray.from_numpy` allocates and uploads.

A view made by ``backend.array(ptr, ...)`` does not own its memory: free the
pointer as usual.  One made by ``from_numpy`` owns its allocation: ``close()``
it (or use ``with``); dropped unclosed, it warns with ``ResourceWarning`` and
frees the memory.  An exported view keeps the Python objects alive until the
consumer lets go, but, as with CuPy or PyTorch, freeing the memory underneath
a consumer is the caller's bug.

Basic indexing (``a[1:3]``, ``a[0]``, ``a[:, ::2]``) returns a view of the same
memory, as numpy's does.  A DeviceArray is accepted wherever the copy ops and
``launch`` accept a :class:`DevicePtr`; a copy then checks the host array's
dtype and shape against it.  ``np.asarray(a)`` raises :class:`TypeError` on
every backend, the mock too, rather than copy behind the caller's back:
``a.to_numpy()`` or ``copy_d2h_async`` copy.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

import numpy as np

from . import _dlpack
from ._blocking import check as check_blocking
from ._callsite import user_frame, warn_at
from ._exceptions import (
    CaptureError,
    ClosedResourceError,
    InvalidArgumentError,
    NotSupportedError,
)
from ._handles import Event, Stream
from ._memory import DevicePtr

if TYPE_CHECKING:
    from ._completion import Completion
    from ._driver import Driver

__all__ = ["ArrayOwner", "DeviceArray", "DeviceMem"]


@runtime_checkable
class ArrayOwner(Protocol):
    """The backend calls a DeviceArray makes (a :class:`aruntime.Backend` has them all)."""

    @property
    def name(self) -> str: ...

    @property
    def closed(self) -> bool: ...

    @property
    def driver(self) -> Driver: ...

    def alloc(self, nbytes: int) -> DevicePtr: ...

    def free(self, ptr: DevicePtr) -> None: ...

    def copy_h2d_async(
        self, src: Any, dst: DevicePtr, stream: Stream | None = None
    ) -> Completion: ...

    def copy_d2h_async(
        self, src: DevicePtr, dst: Any, stream: Stream | None = None
    ) -> Completion: ...

    def default_stream(self) -> Stream: ...

    def stream_is_capturing(self, stream: Stream) -> bool: ...

    def wrap_stream(self, stream: object) -> Stream: ...

    def create_event(self, *, timing: bool = False) -> Event: ...

    def record_event(self, event: Event, stream: Stream | None = None) -> None: ...

    def stream_wait_event(self, stream: Stream, event: Event) -> None: ...


def _free_dropped(
    backend: ArrayOwner, ptr: DevicePtr, description: str, site: tuple[str, int]
) -> None:
    warn_at(
        site,
        f"unclosed {description}: close it (or use 'with') to free its device memory promptly",
    )
    if not backend.closed:
        try:
            backend.free(ptr)
        except InvalidArgumentError:
            pass  # freed already through the pointer


class DeviceArray:
    """A view of device memory with a shape, a dtype and byte strides.

    Made by ``backend.array(ptr, shape, dtype)`` or
    ``backend.array_from_numpy(arr)``.  ``stream`` is the stream the data is
    ordered on (the backend's default stream unless given): consumers of
    ``__cuda_array_interface__`` and ``__dlpack__`` synchronise with it.
    """

    __slots__ = (
        "__weakref__",
        "_base",
        "_closed",
        "_finalizer",
        "_owner",
        "_owns",
        "dtype",
        "ptr",
        "shape",
        "stream",
        "strides",
    )

    #: The device memory the array views, from its first element's byte.
    ptr: DevicePtr
    #: The array's dimensions, as numpy's ``shape``.
    shape: tuple[int, ...]
    #: The element type (a native-order numeric numpy dtype).
    dtype: np.dtype[Any]
    #: Bytes between consecutive elements along each dimension, as numpy's ``strides``.
    strides: tuple[int, ...]
    #: The stream the data is ordered on (None: the backend's default stream); the
    #: consumers of ``__cuda_array_interface__`` and ``__dlpack__`` synchronise with it.
    stream: Stream | None

    def __init__(
        self,
        ptr: DevicePtr,
        shape: int | Sequence[int],
        dtype: Any,
        *,
        strides: Sequence[int] | None = None,
        stream: Stream | None = None,
        owner: ArrayOwner | None = None,
    ) -> None:
        fn = "DeviceArray"
        if not isinstance(ptr, DevicePtr):
            raise TypeError(f"{fn}: ptr must be a DevicePtr, got {type(ptr).__name__}")
        if owner is None:
            found = ptr.backend
            if not isinstance(found, ArrayOwner):  # pragma: no cover - backends always are
                raise TypeError(f"{fn}: {found!r} cannot hold device arrays")
            owner = found
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError(f"{fn}: stream must be a Stream or None, got {type(stream).__name__}")
        try:
            dt = np.dtype(dtype)
        except Exception as exc:  # numpy's parser raises even SyntaxError for some strings
            raise TypeError(f"{fn}: {dtype!r} is not a dtype ({exc})") from None
        if _dlpack.dtype_code(dt) is None:
            raise InvalidArgumentError(f"{fn}: dtype {dt} is not a numeric dtype")
        if dt.byteorder == (">" if np.little_endian else "<"):
            raise InvalidArgumentError(f"{fn}: dtype {dt} is not in native byte order")
        dims = _ints((shape,) if isinstance(shape, (int, np.integer)) else shape, fn, "shape")
        if any(d < 0 for d in dims):
            raise InvalidArgumentError(f"{fn}: shape {dims} has a negative dimension")
        if strides is None:
            steps = _c_strides(dims, dt.itemsize)
        else:
            steps = _ints(strides, fn, "strides")
            if len(steps) != len(dims):
                raise InvalidArgumentError(
                    f"{fn}: {len(steps)} strides for a {len(dims)}-dimensional shape"
                )
            if any(s < 0 or s % dt.itemsize for s in steps):
                raise InvalidArgumentError(
                    f"{fn}: strides {steps} must be non-negative multiples of the "
                    f"itemsize {dt.itemsize}"
                )
        extent = _extent(dims, steps, dt.itemsize)
        if extent > ptr.nbytes:
            raise InvalidArgumentError(
                f"{fn}: shape {dims} of {dt} spans {extent} bytes, past the end of a "
                f"{ptr.nbytes}-byte pointer"
            )
        stream_owner: object = None if stream is None else stream.backend
        if stream is not None and stream_owner is not ptr.backend:
            raise InvalidArgumentError(f"{fn}: the stream belongs to another backend")
        self.ptr = ptr
        self.shape = dims
        self.dtype = dt
        self.strides = steps
        self.stream = stream
        self._owner = owner
        self._owns = False
        self._closed = False
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._base: DeviceArray | None = None  # what a view keeps alive (its memory's owner)

    # -- construction ------------------------------------------------------------------
    @classmethod
    def from_numpy(
        cls, backend: ArrayOwner, array: Any, *, stream: Stream | None = None
    ) -> DeviceArray:
        """Allocate device memory, copy ``array`` into it (blocking) and own it."""
        fn = "array_from_numpy"
        if stream is not None and backend.stream_is_capturing(stream):
            raise CaptureError(f"{fn}: {stream!r} is capturing; the upload would never run")
        try:
            host = np.ascontiguousarray(array)
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(
                f"{fn}: a {type(array).__name__} cannot be read as an array ({exc})"
            ) from None
        if host.dtype.byteorder == (">" if np.little_endian else "<"):
            host = host.astype(host.dtype.newbyteorder("="))
        ptr = backend.alloc(max(host.nbytes, 1))
        try:
            view = cls(ptr, host.shape, host.dtype, stream=stream, owner=backend)
            if host.nbytes:
                instead = "gpu.alloc(), 'await gpu.copy_h2d_async(host, ptr)', then gpu.array()"
                check_blocking(fn, instead)
                backend.copy_h2d_async(host, ptr, stream)._block()
        except BaseException:
            backend.free(ptr)
            raise
        view._owns = True
        view._finalizer = weakref.finalize(
            view, _free_dropped, backend, ptr, repr(view), user_frame()
        )
        view._finalizer.atexit = False
        return view

    # -- shape ---------------------------------------------------------------------------
    @property
    def backend(self) -> ArrayOwner:
        """The backend the memory belongs to."""
        return self._owner

    @property
    def ndim(self) -> int:
        """The number of dimensions (``len(shape)``), as numpy's ``ndim``."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """The number of elements (the product of ``shape``; 1 for a 0-d array)."""
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def itemsize(self) -> int:
        """Bytes per element (``dtype.itemsize``)."""
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of element data (``size * itemsize``); gaps between strided rows not counted."""
        return self.size * self.dtype.itemsize

    @property
    def is_c_contiguous(self) -> bool:
        """Whether the elements lie in C order with no gaps between them."""
        return self.size == 0 or _same_steps(self.shape, self.strides, self.dtype.itemsize)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self.shape[0]

    def __getitem__(self, key: Any) -> DeviceArray:
        """A view of part of the array (basic indexing only), sharing its memory.

        ``key`` is an int, a slice with a positive step, ``...``, or a tuple of
        them; an int removes its axis, as in numpy.  Nothing is copied.
        """
        offset, shape, strides = _index(self.shape, self.strides, key)
        extent = _extent(shape, strides, self.dtype.itemsize)
        view = DeviceArray(
            self.ptr.offset(offset)[:extent],
            shape,
            self.dtype,
            strides=strides,
            stream=self.stream,
            owner=self._owner,
        )
        view._base = self if self._base is None else self._base
        return view

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray[Any, Any]:
        """Refuse to become a host array implicitly (CuPy does the same), on every backend."""
        del dtype, copy
        raise TypeError(
            f"a DeviceArray on {self.backend.name} is device memory and is not converted "
            "to a host array implicitly: copy it with a.to_numpy(), or "
            "await gpu.copy_d2h_async(a, out) into a host array"
        )

    def _as_operand(self, fn: str, what: str, host: object) -> DevicePtr:
        """The bytes this array covers, for a copy or launch; ``host`` is checked against it.

        A typed host array must have this dtype and shape; a raw byte buffer
        (bytes-like, or a 1-D uint8 array such as a HostBuffer) must have
        exactly ``nbytes`` bytes.
        """
        self._check_usable(fn)
        if not self.is_c_contiguous:
            raise InvalidArgumentError(
                f"{fn}: {what} is a strided DeviceArray (strides {self.strides}); copies and "
                "launches take contiguous memory: pass a contiguous view, or its .ptr"
            )
        if host is not None:
            _check_host_match(self, host, fn, what)
        return self.ptr[: self.nbytes]

    def __repr__(self) -> str:
        owner = " owning" if self._owns else ""
        return (
            f"<DeviceArray shape={self.shape} dtype={self.dtype} at 0x{self.ptr.address:x} "
            f"on {self.ptr.backend.name}{owner}>"
        )

    # -- lifetime --------------------------------------------------------------------------
    def close(self) -> None:
        """Free the memory if this array owns it (from ``from_numpy``); idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._finalizer is not None:
            self._finalizer.detach()
        if self._owns and not self.backend.closed:
            self.backend.free(self.ptr)

    def __enter__(self) -> DeviceArray:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- host copies -----------------------------------------------------------------------
    def to_numpy(self) -> np.ndarray[Any, Any]:
        """A new host array with a copy of the data (blocks until it has arrived).

        The copy is ordered on :attr:`stream`.  In async code, prefer
        ``await gpu.copy_d2h_async(view.ptr, out)`` into an array you made.
        """
        out = np.empty(self.shape, self.dtype)
        if self.size == 0:
            return out
        check_blocking("DeviceArray.to_numpy", "'await gpu.copy_d2h_async(array, out)'")
        if self.is_c_contiguous:
            self.backend.copy_d2h_async(self.ptr[: self.nbytes], out, self.stream)._block()
            return out
        extent = _extent(self.shape, self.strides, self.dtype.itemsize)
        raw = np.empty(extent, np.uint8)
        self.backend.copy_d2h_async(self.ptr[:extent], raw, self.stream)._block()
        out[...] = np.ndarray(self.shape, self.dtype, buffer=raw, strides=self.strides)
        return out

    # -- interop -----------------------------------------------------------------------------
    def _device(self) -> tuple[int, int]:
        return self.backend.driver.dlpack_device()

    def _stream_handle(self, *, handed_out: bool = False) -> int | None:
        """Our stream's native handle; ``handed_out``: a consumer gets it, and may queue on it."""
        backend = self.backend
        stream = self.stream if self.stream is not None else backend.default_stream()
        try:
            handle = backend.driver.stream_handle_int(stream.handle)
        except NotSupportedError:
            return None
        if handed_out:
            stream.state.share()
        return handle

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """CUDA Array Interface v3 (CUDA backends only; ``hasattr`` is False elsewhere)."""
        self._check_usable("__cuda_array_interface__")
        try:
            device = self._device()
        except NotSupportedError:
            device = (0, 0)
        if device[0] != _dlpack.KDL_CUDA:
            raise AttributeError(
                f"__cuda_array_interface__: {self.backend.name} memory is not CUDA memory"
            )
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "descr": [("", self.dtype.str)],
            "data": (self.ptr.address, False),
            "strides": None if self.is_c_contiguous else self.strides,
            "version": 3,
            "stream": self._stream_handle(handed_out=True),
        }

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(kDLCUDA, n)`` on CUDA, ``(kDLOneAPI, n)`` on Level Zero, ``(kDLExtDev, 0)`` on mock.

        No backend's is ``kDLCPU``: numpy reads none of them.
        """
        self._check_usable("__dlpack_device__")
        return self._device()

    def __dlpack__(
        self,
        *,
        stream: int | Any | None = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """A DLPack capsule (``"dltensor"``) over this memory, never a copy.

        On CUDA, ``stream`` is the consumer's stream: its later work is made to
        wait (on the device) for the work queued on :attr:`stream` so far.
        ``None`` means the legacy default stream, ``-1`` no synchronisation.
        """
        del max_version  # the unversioned capsule is what every consumer accepts
        fn = "__dlpack__"
        self._check_usable(fn)
        device = self._device()
        if dl_device is not None and tuple(dl_device) != device:
            raise BufferError(f"{fn}: the data is on device {device}, not {tuple(dl_device)}")
        if copy:
            raise BufferError(f"{fn}: copy=True is not supported; use to_numpy()")
        if device[0] == _dlpack.KDL_CUDA and stream != -1:
            self._order_before(1 if stream is None else stream, fn)
        item = self.dtype.itemsize
        strides = None if self.is_c_contiguous else tuple(s // item for s in self.strides)
        return _dlpack.make_capsule(
            self.ptr.address, device, self.dtype, self.shape, strides, (self,)
        )

    def _order_before(self, consumer: Any, fn: str) -> None:
        """Make ``consumer``'s later work wait for what is queued on our stream."""
        backend = self.backend
        if isinstance(consumer, bool) or not isinstance(consumer, int):
            raise TypeError(f"{fn}: stream must be an int handle, None or -1, got {consumer!r}")
        if consumer == self._stream_handle():
            return
        event = backend.create_event()
        try:
            backend.record_event(event, self.stream)
            with backend.wrap_stream(consumer) as theirs:
                backend.stream_wait_event(theirs, event)
        finally:
            event.close()

    def _check_usable(self, fn: str) -> None:
        if self._closed:
            raise InvalidArgumentError(f"{fn}: this DeviceArray was closed")
        if self.backend.closed:
            raise ClosedResourceError(f"{fn}: the {self.backend.name} backend is closed")


def _check_host_match(array: DeviceArray, host: object, fn: str, what: str) -> None:
    typed = isinstance(host, np.ndarray) and not (host.dtype == np.uint8 and host.ndim == 1)
    if typed:
        assert isinstance(host, np.ndarray)
        if host.dtype != array.dtype:
            raise InvalidArgumentError(
                f"{fn}: dtype mismatch: {what} is a DeviceArray of {array.dtype}, the host "
                f"array is {host.dtype}: use a {array.dtype} host array"
            )
        if host.shape != array.shape:
            raise InvalidArgumentError(
                f"{fn}: shape mismatch: {what} is a DeviceArray of shape {array.shape}, the "
                f"host array has shape {host.shape}"
            )
        return
    try:
        with memoryview(host) as view:  # type: ignore[arg-type]
            nbytes = view.nbytes
    except (TypeError, ValueError):
        return  # not host memory: the copy's own checks name it
    if nbytes != array.nbytes:
        raise InvalidArgumentError(
            f"{fn}: size mismatch: {what} is a DeviceArray of {array.nbytes} bytes "
            f"({array.shape} {array.dtype}), the host buffer has {nbytes}"
        )


def _index(
    shape: tuple[int, ...], strides: tuple[int, ...], key: Any
) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    """Basic indexing: (byte offset, shape, strides) of the view ``key`` selects."""
    keys = key if isinstance(key, tuple) else (key,)
    if sum(k is Ellipsis for k in keys) > 1:
        raise IndexError("DeviceArray: an index can only have one ellipsis ('...')")
    if Ellipsis in keys:
        at = keys.index(Ellipsis)
        fill = len(shape) - (len(keys) - 1)
        keys = keys[:at] + (slice(None),) * max(fill, 0) + keys[at + 1 :]
    if len(keys) > len(shape):
        raise IndexError(f"DeviceArray: too many indices: {len(keys)} for {len(shape)} dimensions")
    keys = keys + (slice(None),) * (len(shape) - len(keys))
    offset = 0
    dims: list[int] = []
    steps: list[int] = []
    for axis, (k, d, s) in enumerate(zip(keys, shape, strides, strict=True)):
        if isinstance(k, slice):
            start, stop, step = k.indices(d)
            if step < 1:
                raise IndexError(
                    f"DeviceArray: axis {axis}: slice step must be positive, got {step} "
                    "(strides cannot be negative)"
                )
            count = max(0, -(-(stop - start) // step))
            offset += start * s if count else 0
            dims.append(count)
            steps.append(s * step)
        elif isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            i = int(k)
            if not -d <= i < d:
                raise IndexError(
                    f"DeviceArray: index {i} is out of bounds for axis {axis} with size {d}"
                )
            offset += (i % d) * s
        else:
            raise IndexError(
                "DeviceArray: only basic indexing is supported (ints, slices, '...'), got "
                f"{type(k).__name__}"
            )
    return offset, tuple(dims), tuple(steps)


def _ints(values: Any, fn: str, what: str) -> tuple[int, ...]:
    try:
        items = tuple(values)
    except (TypeError, ValueError):  # ValueError: a released memoryview, say
        raise TypeError(f"{fn}: {what} must be an int or a sequence of ints") from None
    for v in items:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{fn}: {what} must hold ints, got {type(v).__name__}")
    return tuple(int(v) for v in items)


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    steps = []
    step = itemsize
    for d in reversed(shape):
        steps.append(step)
        step *= max(d, 1)
    return tuple(reversed(steps))


def _same_steps(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> bool:
    expected = _c_strides(shape, itemsize)
    return all(d == 1 or s == e for d, s, e in zip(shape, strides, expected, strict=True))


def _extent(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> int:
    if any(d == 0 for d in shape):
        return 0
    return sum((d - 1) * s for d, s in zip(shape, strides, strict=True)) + itemsize


#: What the copy ops, ``memset`` and ``launch`` take as device memory: a
#: :class:`DevicePtr`, or a contiguous :class:`DeviceArray` (its bytes; a copy then
#: checks the host array's dtype and shape against it).
DeviceMem: TypeAlias = DevicePtr | DeviceArray

"""Copies and fills, appended to a stream's copy list."""

from __future__ import annotations

import threading
from ctypes import addressof as _addressof
from ctypes import c_char as _c_char
from typing import Any, cast

from ..._driver import Driver, DriverStream
from ..._enqueue import ze_append
from ..._exceptions import NotSupportedError
from .._staging import DIRECT_PAGEABLE_H2D_MAX
from ._ffi import ffi, table_slot
from ._handles import _ZeStream
from ._staged import _StagedCopyOps

_COPY = "zeCommandListAppendMemoryCopy"
_FILL = "zeCommandListAppendMemoryFill"


class _CopyOps(_StagedCopyOps):
    def _install_appends(self) -> None:
        """Let a plain fill or copy be appended without Python (``ffi/core/zeappend.c``).

        Each of ``memset_d8`` and the three ``memcpy_*`` becomes a ZeAppend
        (``aruntime/_enqueue.py``), an instance attribute over the method.
        When the stream captures nothing and its newest work is on the copy
        list already, with int operands and a host buffer never staged, the
        op's barrier and append are made in C through the compiled calls'
        table.  Every other case runs the method, which the ZeAppend calls.
        Nothing is installed without the compiled calls or where the compiled
        enqueue is off.
        """
        calls = self._calls
        if calls is None:
            return
        barrier = table_slot(calls, "zeCommandListAppendBarrier")
        for method, function in (
            ("memset_d8", _FILL),
            ("memcpy_h2d", _COPY),
            ("memcpy_d2h", _COPY),
            ("memcpy_d2d", _COPY),
        ):
            made = ze_append(
                self,
                getattr(_CopyOps, method),
                _CopyOps._compiled_append_failed,
                shape=method,
                name=function,
                function=table_slot(calls, function),
                barrier=barrier,
                table=calls.table,
                host_limit=DIRECT_PAGEABLE_H2D_MAX,
            )
            if made is not None:
                vars(self)[method] = made

    def memcpy_h2d(self, src: memoryview, dst: int, stream: DriverStream) -> None:
        """Enqueue a host-to-device copy; large pageable sources are staged (see ``_staged``)."""
        host = _host_address(src)
        s: _ZeStream = stream  # type: ignore[assignment]  # not cast(): a call per op
        if self._staged(s, host, src.nbytes):
            self._staged_copy(s, host, dst, src.nbytes, to_device=True)
            return
        self._append_plain_copy(s, dst, host, src.nbytes)

    def memcpy_d2h(self, src: int, dst: memoryview, stream: DriverStream) -> None:
        """Enqueue a device-to-host copy; large pageable targets are staged (see ``_staged``)."""
        host = _host_address(dst, writable=True)
        s: _ZeStream = stream  # type: ignore[assignment]  # not cast(): a call per op
        if self._staged(s, host, dst.nbytes):
            self._staged_copy(s, host, src, dst.nbytes, to_device=False)
            return
        self._append_plain_copy(s, host, src, dst.nbytes)

    def memcpy_d2d(self, src: int, dst: int, nbytes: int, stream: DriverStream) -> None:
        s: _ZeStream = stream  # type: ignore[assignment]
        self._append_plain_copy(s, dst, src, nbytes)

    def _append_plain_copy(self, s: _ZeStream, dst: int, src: int, nbytes: int) -> None:
        """Append one plain copy to ``s``'s copy list, compiled where it can be."""
        calls = self._calls
        if calls is not None:
            args: tuple[Any, ...] = (dst, src, nbytes, calls.table)
            self._append_call(s, True, calls.copy, args, _COPY, compiled=True)
            return
        void_p = self._void_p
        args = (void_p(dst), void_p(src), nbytes, ffi.NULL, 0, ffi.NULL)
        self._append_call(s, True, self._lib.zeCommandListAppendMemoryCopy, args, _COPY)

    # -- several devices -----------------------------------------------------------
    def is_peer(self, other: Driver) -> bool:
        return (
            isinstance(other, _CopyOps)
            and other._context == self._context  # one ze driver: one shared context
            and other._device != self._device
        )

    def can_access_peer(self, other: Driver) -> bool:
        if not self.is_peer(other):
            return False
        value = ffi.new("ze_bool_t*", 0)
        rc = self._lib.zeDeviceCanAccessPeer(self._device, cast(_CopyOps, other)._device, value)
        self._check(rc, "zeDeviceCanAccessPeer")
        return bool(value[0])

    def memcpy_peer(
        self,
        src: int,
        dst: int,
        nbytes: int,
        src_driver: Driver,
        dst_driver: Driver,
        stream: DriverStream,
    ) -> None:
        """Both allocations are in the one context: a plain copy, where the devices allow it."""
        other = cast(_CopyOps, dst_driver if src_driver is self else src_driver)
        if not self.can_access_peer(other):
            raise NotSupportedError(
                f"{self.backend_name}: zeDeviceCanAccessPeer says these two devices cannot "
                "reach each other's memory; copy through host memory instead"
            )
        self.memcpy_d2d(src, dst, nbytes, stream)

    def memcpy_2d(
        self,
        src: int,
        src_pitch: int,
        dst: int,
        dst_pitch: int,
        width_bytes: int,
        height: int,
        stream: DriverStream,
    ) -> None:
        limit = 0xFFFFFFFF
        for what, value in (
            ("src_pitch", src_pitch),
            ("dst_pitch", dst_pitch),
            ("width_bytes", width_bytes),
            ("height", height),
            ("src slice", src_pitch * height),
            ("dst slice", dst_pitch * height),
        ):
            if value > limit:
                raise NotSupportedError(
                    f"copy_d2d_2d_async: {what} {value} exceeds Level Zero's 32-bit copy "
                    f"region limit {limit}",
                    backend=self.backend_name,
                    function="zeCommandListAppendMemoryCopyRegion",
                )
        region = ffi.new("ze_copy_region_t*", [0, 0, 0, width_bytes, height, 1])
        self._append(
            stream,
            True,
            lambda h: self._lib.zeCommandListAppendMemoryCopyRegion(
                h,
                ffi.cast("void*", dst),
                region,
                dst_pitch,
                dst_pitch * height,
                ffi.cast("void*", src),
                region,
                src_pitch,
                src_pitch * height,
                ffi.NULL,
                0,
                ffi.NULL,
            ),
            "zeCommandListAppendMemoryCopyRegion",
        )

    def memset_d8(self, dst: int, value: int, nbytes: int, stream: DriverStream) -> None:
        s: _ZeStream = stream  # type: ignore[assignment]
        calls = self._calls
        if calls is not None:
            args: tuple[Any, ...] = (dst, _fill_address(value & 0xFF), 1, nbytes, calls.table)
            self._append_call(s, True, calls.fill, args, _FILL, compiled=True)
            return
        args = (self._void_p(dst), _fill_pattern(value & 0xFF), 1, nbytes, ffi.NULL, 0, ffi.NULL)
        self._append_call(s, True, self._lib.zeCommandListAppendMemoryFill, args, _FILL)


def _host_address(view: memoryview, *, writable: bool = False) -> int:
    """The address of a host buffer, without keeping a buffer export open.

    The core keeps the buffer itself alive until the op is done.  An open
    export held by a cffi object that ends up in a traceback (a failed
    append) forms a cycle the garbage collector cannot clear safely.  A
    writable buffer's address comes through ctypes, a fifth of cffi's cost;
    its export ends with the expression.
    """
    if not view.readonly and view.nbytes:
        return _addressof(_c_char.from_buffer(view))
    buf = ffi.from_buffer(view, require_writable=writable)
    try:
        return int(ffi.cast("uintptr_t", buf))
    finally:
        ffi.release(buf)


#: One byte pattern per value, alive for the whole process: a fill may read
#: its pattern after the append returns.  With a pointer to each made once.
_FILL_PATTERNS: Any = None
_FILL_POINTERS: list[Any] = []
_FILL_LOCK = threading.Lock()


_FILL_ADDRESSES: list[int] = []


def _fill_pattern(value: int) -> Any:
    if not _FILL_POINTERS:
        _make_fill_patterns()
    return _FILL_POINTERS[value]


def _fill_address(value: int) -> int:
    """:func:`_fill_pattern`'s address, for the compiled fill."""
    if not _FILL_ADDRESSES:
        _make_fill_patterns()
    return _FILL_ADDRESSES[value]


def _make_fill_patterns() -> None:
    # Under a lock, once: a pointer into the array does not keep it alive,
    # so a second array must never replace one that a fill may be reading.
    global _FILL_PATTERNS
    with _FILL_LOCK:
        if _FILL_POINTERS:
            return
        _FILL_PATTERNS = ffi.new("uint8_t[256]", list(range(256)))
        base = int(ffi.cast("uintptr_t", _FILL_PATTERNS))
        # Addresses first: a reader that sees the pointers filled finds them too.
        _FILL_ADDRESSES.extend([base + value for value in range(256)])
        _FILL_POINTERS.extend([_FILL_PATTERNS + value for value in range(256)])

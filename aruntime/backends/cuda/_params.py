"""A kernel's parameter block, laid out once per signature and packed in place.

``cuLaunchKernel`` takes ``void **kernelParams``: one pointer per parameter,
to the bytes it holds.  The layout depends only on the argument types, so
it is worked out on a kernel's first launch with a given signature (the
types of its arguments) and kept: a buffer with each value at a 16-byte
aligned offset, the pointer array into it, and a :class:`struct.Struct`
that writes every value in one call.  A repeat launch packs and calls the
driver, nothing else; the driver copies the parameters at the launch, so
the next launch may overwrite the buffer.  A lock keeps two threads that
launch one kernel from packing the same buffer at once.

Signatures with raw ``bytes`` (their length varies) or numpy kinds that
``struct`` cannot write exactly (complex, void) are packed per launch.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..._kernel_args import arg_bytes, check_arg_sizes
from ..._memory import DevicePtr

__all__ = ["ParamBlock", "pack_once", "signature_block"]

#: numpy dtype kind and itemsize -> the struct code that writes it exactly.
_CODES = {
    ("b", 1): "?",
    ("i", 1): "b",
    ("u", 1): "B",
    ("i", 2): "h",
    ("u", 2): "H",
    ("i", 4): "i",
    ("u", 4): "I",
    ("i", 8): "q",
    ("u", 8): "Q",
    ("f", 2): "e",
    ("f", 4): "f",
    ("f", 8): "d",
}

_ALIGN = 16


def _padded(size: int) -> int:
    """The room a parameter of ``size`` bytes takes in a block: 16-byte aligned, never 0."""
    return (size + _ALIGN - 1) & ~(_ALIGN - 1) or _ALIGN


def _code(arg: Any) -> str | None:
    if type(arg) is DevicePtr:
        return "Q"
    if isinstance(arg, np.generic) and arg.dtype.byteorder in "=|":
        return _CODES.get((arg.dtype.kind, arg.dtype.itemsize))
    return None


class ParamBlock:
    """The parameter buffer and pointer array of one kernel for one argument signature."""

    __slots__ = (
        "_buffer",
        "_keep",
        "_pack_into",
        "c_layout",
        "lock",
        "params",
        "pointer_slots",
    )

    def __init__(self, ffi: Any, codes: Sequence[str], pointer_slots: tuple[int, ...]) -> None:
        layout = ["<"]
        offsets = []
        total = 0
        for code in codes:
            offsets.append(total)
            size = struct.calcsize("<" + code)
            layout.append(code)
            padded = _padded(size)
            if padded > size:
                layout.append(f"{padded - size}x")
            total += padded
        blob = ffi.new("char[]", max(total, 1))
        params = ffi.new("void *[]", max(len(codes), 1))
        for index, offset in enumerate(offsets):
            params[index] = blob + offset
        self._keep = blob
        self._buffer = ffi.buffer(blob)
        self._pack_into = struct.Struct("".join(layout)).pack_into
        self.params = params
        self.pointer_slots = pointer_slots
        #: For the core's direct launch (ffi/core/direct.c), which packs into a
        #: block of its own: the total size, then each parameter's offset and
        #: size, as native int64s; a pointer's size is -8 (its DevicePtr's address).
        sizes = [
            -8 if i in pointer_slots else struct.calcsize("<" + code)
            for i, code in enumerate(codes)
        ]
        self.c_layout = struct.pack(
            f"={1 + 2 * len(codes)}q",
            total,
            *(v for pair in zip(offsets, sizes, strict=True) for v in pair),
        )
        self.lock = threading.Lock()

    def pack(self, args: Sequence[Any]) -> None:
        """Write ``args`` into the buffer (hold :attr:`lock` until the launch returns)."""
        slots = self.pointer_slots
        if slots:
            values = list(args)
            for i in slots:
                values[i] = values[i]._address  # not the property: a call per pointer
            self._pack_into(self._buffer, 0, *values)
        else:
            self._pack_into(self._buffer, 0, *args)


def signature_block(
    ffi: Any, name: str, sizes: Sequence[int] | None, args: Sequence[Any]
) -> ParamBlock | None:
    """The block for ``args``' signature, checked against the kernel's ``sizes``; None if unfit.

    Raises InvalidArgumentError for a wrong count or size, as every launch would.
    """
    if sizes is not None:
        check_arg_sizes(name, sizes, args)
    codes = []
    for arg in args:
        code = _code(arg)
        if code is None:
            return None
        codes.append(code)
    slots = tuple(i for i, arg in enumerate(args) if type(arg) is DevicePtr)
    return ParamBlock(ffi, codes, slots)


def pack_once(ffi: Any, args: Sequence[Any]) -> tuple[Any, Any]:
    """The ``void**`` array and the buffer it points into, for a launch packed by itself."""
    values = [arg_bytes(arg) for arg in args]
    offsets = []
    total = 0
    for value in values:
        offsets.append(total)
        total += _padded(len(value))
    blob = ffi.new("char[]", max(total, 1))
    params = ffi.new("void *[]", max(len(values), 1))
    for index, (offset, value) in enumerate(zip(offsets, values, strict=True)):
        ffi.memmove(blob + offset, value, len(value))
        params[index] = blob + offset
    return params, blob

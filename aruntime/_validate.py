"""Argument checks shared by every backend, run before anything reaches a driver."""

from __future__ import annotations

import math
import operator
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from ._driver import DeviceLimits
from ._exceptions import InvalidArgumentError
from ._memory import DevicePtr, HostBuffer

__all__ = [
    "as_host_view",
    "check_allocation",
    "check_byte_value",
    "check_count",
    "check_dims",
    "check_kernel_args",
    "device_operand",
    "no_module_message",
    "launch_ranges",
    "pointer_args_named",
]

_INT64_MAX = 2**63 - 1


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_count(value: object, fn: str, what: str, *, minimum: int = 0) -> int:
    """A non-negative (or >= minimum) integer count."""
    if type(value) is int and minimum <= value <= _INT64_MAX:
        return value  # the common case, on every op's path, without the calls below
    if not _is_int(value):
        raise TypeError(f"{fn}: {what} must be an int, got {type(value).__name__}")
    n = operator.index(value)  # type: ignore[arg-type]
    if n < minimum:
        raise InvalidArgumentError(f"{fn}: {what} must be >= {minimum}, got {n}")
    if n > _INT64_MAX:
        raise InvalidArgumentError(f"{fn}: {what} {n} exceeds the 64-bit limit")
    return n


def check_byte_value(value: object, fn: str) -> int:
    if type(value) is int and 0 <= value <= 255:
        return value
    if not _is_int(value):
        raise TypeError(f"{fn}: value must be an int in 0..255, got {type(value).__name__}")
    v = operator.index(value)  # type: ignore[arg-type]
    if not 0 <= v <= 255:
        raise InvalidArgumentError(f"{fn}: value {v} is outside 0..255 (memset sets bytes)")
    return v


def as_host_view(obj: object, fn: str, *, writable: bool) -> memoryview:
    """A flat byte view of a C-contiguous host buffer, or a clear error."""
    kind = type(obj)
    if kind is HostBuffer:  # pinned memory, the other hot path: only its liveness to check
        if obj.freed:  # type: ignore[attr-defined]
            raise InvalidArgumentError(f"{fn}: the HostBuffer was freed with free_host_pinned")
    elif kind not in _PLAIN_BUFFERS:
        _check_host_object(obj, fn)
    try:
        view = memoryview(obj)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(
            f"{fn}: host memory must support the buffer protocol (numpy array, bytearray, "
            f"memoryview, HostBuffer), got {type(obj).__name__}"
        ) from None
    except ValueError as exc:  # a released memoryview, an exporter that refuses
        raise InvalidArgumentError(f"{fn}: cannot use this host buffer: {exc}") from None
    fmt = view.format  # a new str per read: read it once
    # The common case first: raw bytes, flat, contiguous, writable if it must be.
    if fmt == "B" and view.ndim == 1 and view.c_contiguous and not (writable and view.readonly):
        return view
    if "O" in fmt:
        view.release()
        raise InvalidArgumentError(
            f"{fn}: host buffer holds Python objects (format {fmt!r}), not raw data"
        )
    if not view.c_contiguous:
        view.release()
        raise InvalidArgumentError(f"{fn}: host buffer is not C-contiguous; copy it first")
    if writable and view.readonly:
        view.release()
        raise InvalidArgumentError(f"{fn}: destination host buffer is read-only")
    if fmt == "B" and view.ndim == 1:
        return view
    try:
        return view.cast("B")
    except (TypeError, ValueError, NotImplementedError):
        # Formats memoryview cannot cast (structured dtypes): numpy reads raw bytes.
        return memoryview(np.frombuffer(view, dtype=np.uint8))  # type: ignore[arg-type]


#: Exact types that need no check before ``memoryview()`` (the hot path of every copy).
_PLAIN_BUFFERS = frozenset({np.ndarray, bytearray, bytes, memoryview})


def _check_host_object(obj: object, fn: str) -> None:
    """Reject device pointers, scalars and freed pinned buffers with a clear error."""
    if isinstance(obj, DevicePtr):
        raise TypeError(f"{fn}: expected host memory, got a DevicePtr (device memory)")
    if isinstance(obj, (str, int, float, complex)) or obj is None:
        raise TypeError(
            f"{fn}: host memory must support the buffer protocol (numpy array, bytearray, "
            f"memoryview, HostBuffer), got {type(obj).__name__}"
        )
    if isinstance(obj, HostBuffer) and obj.freed:
        raise InvalidArgumentError(f"{fn}: the HostBuffer was freed with free_host_pinned")


def device_operand(obj: object, fn: str, what: str, host: object = None) -> DevicePtr:
    """The DevicePtr an op reads or writes: ``obj`` itself, or a DeviceArray's bytes.

    A DeviceArray (``_array`` sits above this layer, so it is recognised by
    its ``_as_operand``) is checked against ``host``, the other side of a
    copy: a typed host array must match its dtype and shape.  Anything else
    raises :class:`TypeError` naming both accepted types.
    """
    if isinstance(obj, DevicePtr):
        return obj
    as_operand = getattr(type(obj), "_as_operand", None)
    if as_operand is None:
        raise TypeError(
            f"{fn}: {what} must be a DevicePtr or a DeviceArray, got {type(obj).__name__}"
        )
    ptr: DevicePtr = as_operand(obj, fn, what, host)
    return ptr


def pointer_args_named(args: Sequence[Any], given: object, fn: str, what: str) -> set[int]:
    """The indices of the pointer arguments that ``given`` (``reads=`` or ``writes=``) names.

    Each entry must be a DevicePtr (or DeviceArray) equal to one of the
    kernel's pointer arguments: an annotation naming memory the kernel is
    not given would narrow nothing and hide a mistake.
    """
    if not isinstance(given, (list, tuple)):
        raise TypeError(
            f"{fn}: {what} must be a tuple of DevicePtr or DeviceArray, got {type(given).__name__}"
        )
    found: set[int] = set()
    for j, obj in enumerate(given):
        ptr = device_operand(obj, fn, f"{what}[{j}]")
        matches = [i for i, arg in enumerate(args) if isinstance(arg, DevicePtr) and arg == ptr]
        if not matches:
            raise InvalidArgumentError(
                f"{fn}: {what}[{j}] ({ptr!r}) is not one of the kernel's pointer arguments"
            )
        found.update(matches)
    return found


def launch_ranges(
    args: Sequence[Any], reads: object, writes: object, fn: str
) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """A launch's read and written ranges under its ``reads=``/``writes=`` annotations.

    A pointer argument named only in ``reads`` is read; every other one is
    written (a write orders like a read and a write together).
    """
    only_read = set()
    if reads is not None:
        only_read = pointer_args_named(args, reads, fn, "reads")
    if writes is not None:
        only_read -= pointer_args_named(args, writes, fn, "writes")
    read_ranges: list[tuple[int, int]] = []
    write_ranges: list[tuple[int, int]] = []
    for i, arg in enumerate(args):
        if isinstance(arg, DevicePtr):
            span = (arg.address, arg.nbytes)
            read_ranges.append(span)
            if i not in only_read:
                write_ranges.append(span)
    return tuple(read_ranges), tuple(write_ranges)


def check_dims(value: object, fn: str, what: str, limits: DeviceLimits) -> tuple[int, int, int]:
    """A grid or block shape: an int or a tuple of 1 to 3 positive ints, within ``limits``."""
    most = limits.max_grid if what == "grid" else limits.max_block
    if _is_int(value):
        dims: tuple[Any, ...] = (value,)
    elif isinstance(value, (tuple, list)) and 1 <= len(value) <= 3:
        dims = tuple(value)
    else:
        raise TypeError(f"{fn}: {what} must be an int or a tuple of 1 to 3 ints, got {value!r:.60}")
    out = []
    for axis, d in enumerate(dims):
        if not _is_int(d):
            raise TypeError(f"{fn}: {what}[{axis}] must be an int, got {type(d).__name__}")
        n = int(d)
        if n < 1 or n > most[axis]:
            raise InvalidArgumentError(
                f"{fn}: {what}[{axis}] = {n} is outside 1..{most[axis]}, the device's limit"
            )
        out.append(n)
    while len(out) < 3:
        out.append(1)
    if what == "block" and math.prod(out) > limits.max_block_threads:
        raise InvalidArgumentError(
            f"{fn}: block of {math.prod(out)} threads exceeds the device's limit of "
            f"{limits.max_block_threads} threads per block"
        )
    return (out[0], out[1], out[2])


def check_shared_mem(value: object, fn: str, limits: DeviceLimits) -> int:
    """Dynamic shared memory per block, within the device's limit with the opt-in."""
    n = check_count(value, fn, "shared_mem")
    limit = limits.max_launch_shared_mem
    if n > limit:
        raise InvalidArgumentError(
            f"{fn}: shared_mem {n} bytes exceeds the limit of {limit} bytes "
            f"({limits.shared_mem_hint})"
        )
    return n


def check_allocation(n: int, fn: str, limits: DeviceLimits) -> None:
    """An allocation of ``n`` bytes no larger than the device's largest single allocation."""
    if n > limits.max_allocation:
        raise InvalidArgumentError(
            f"{fn}: {n} bytes exceeds the largest single allocation of "
            f"{limits.max_allocation} bytes ({limits.allocation_hint})"
        )


def check_kernel_args(args: object, fn: str) -> list[Any]:
    """Explicitly typed kernel arguments: DevicePtr, numpy scalars or bytes."""
    if not isinstance(args, (list, tuple)):
        raise TypeError(f"{fn}: args must be a list or tuple, got {type(args).__name__}")
    out: list[Any] = []
    for i, arg in enumerate(args):
        if isinstance(arg, DevicePtr):
            out.append(arg)
        elif isinstance(arg, np.generic):
            # Before the bare-number check: np.float64 subclasses float and
            # np.complex128 complex, yet each has a fixed C type.
            if arg.dtype.kind in "OUSVMm":
                raise TypeError(
                    f"{fn}: args[{i}] has numpy dtype {arg.dtype}, which has no fixed C layout"
                )
            out.append(arg)
        elif isinstance(arg, (bool, int, float, complex)):
            kind = type(arg).__name__
            raise TypeError(
                f"{fn}: args[{i}] is a bare Python {kind} ({arg!r}), whose C type is "
                "ambiguous; pass a numpy scalar such as np.uint32(...), np.int64(...), "
                "np.float32(...) or np.float64(...)"
            )
        elif isinstance(arg, (bytes, bytearray, memoryview)):
            try:
                out.append(bytes(arg))
            except ValueError as exc:  # a released memoryview
                raise InvalidArgumentError(f"{fn}: args[{i}]: {exc}") from None
        elif hasattr(type(arg), "_as_operand"):  # a DeviceArray: its pointer
            out.append(device_operand(arg, fn, f"args[{i}]"))
        else:
            raise TypeError(
                f"{fn}: args[{i}] has type {type(arg).__name__}; kernel arguments are "
                "DevicePtr, DeviceArray, numpy scalars (np.float32(2)) or raw bytes"
            )
    return out


def no_module_message(fn: str, name: str, loaded: Collection[str]) -> str:
    """Why ``kernel(name, ...)`` found no module, and what to pass instead."""
    builtin = f"aruntime.{name}"
    if builtin in loaded:
        return (
            f"{fn}: no module named {name!r} is loaded; builtin_module({name!r}) is loaded as "
            f"{builtin!r}: pass the Module that builtin_module returned, or the name {builtin!r}"
        )
    names = ", ".join(repr(n) for n in loaded) or "none"
    return f"{fn}: no module named {name!r} is loaded (loaded: {names}); pass a Module or its name"

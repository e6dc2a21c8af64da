"""Checking launch arguments against what a kernel declares, shared by the backends.

A driver that learns a kernel's parameters (their count, and where it can
their sizes) checks each launch here before anything reaches the native
driver: the native launch reads as many bytes as each parameter holds from
wherever the argument pointers point, so a short or missing argument is a
crash or a silent garbage read rather than an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._exceptions import InvalidArgumentError

__all__ = ["arg_bytes", "arg_size", "check_arg_count", "check_arg_sizes", "describe_arg"]


def arg_bytes(arg: Any) -> bytes:
    """The bytes a checked launch argument puts in its parameter.

    A numpy scalar's native bytes, raw bytes as they are, and a DevicePtr's
    64-bit address (``int()`` of it), little-endian as on every device.
    """
    if isinstance(arg, np.generic):
        return arg.tobytes()
    if isinstance(arg, (bytes, bytearray, memoryview)):
        return bytes(arg)
    return int(arg).to_bytes(8, "little")


def arg_size(arg: Any) -> int:
    """The bytes a checked launch argument fills: its itemsize, its length, or 8 for a DevicePtr."""
    if isinstance(arg, np.generic):
        return int(arg.itemsize)
    if isinstance(arg, (bytes, bytearray, memoryview)):
        return memoryview(arg).nbytes
    return 8  # a DevicePtr: a 64-bit address


def check_arg_count(name: str, fewest: int, args: Sequence[Any], most: int | None = -1) -> None:
    """InvalidArgumentError unless kernel ``name`` is given ``fewest``..``most`` arguments.

    ``most`` -1 (the default) means exactly ``fewest``; None means no limit.
    """
    top = fewest if most == -1 else most
    if fewest <= len(args) and (top is None or len(args) <= top):
        return
    if top == fewest:
        wanted = f"{fewest}"
    elif top is None:
        wanted = f"at least {fewest}"
    else:
        wanted = f"{fewest} to {top}"
    raise InvalidArgumentError(
        f"launch: kernel {name!r} takes {wanted} argument(s), got {len(args)}"
    )


def check_arg_sizes(name: str, sizes: Sequence[int], args: Sequence[Any]) -> None:
    """InvalidArgumentError unless ``args`` match the parameter ``sizes`` in count and size."""
    check_arg_count(name, len(sizes), args)
    for index, (arg, expected) in enumerate(zip(args, sizes, strict=True)):
        given = arg_size(arg)
        if given != expected:
            raise InvalidArgumentError(
                f"launch: kernel {name!r} argument {index} is {expected} bytes, "
                f"got {given} bytes ({describe_arg(arg)}){_suggest(arg, expected)}"
            )


#: C names of the numpy scalars whose C type users ask about most.
_C_TYPES = {"float64": "a C double", "float32": "a C float", "float16": "a C _Float16"}


def describe_arg(arg: Any) -> str:
    """How an error names a launch argument's type: ``np.float64, a C double``."""
    if isinstance(arg, np.generic):
        c_type = _C_TYPES.get(arg.dtype.name)
        return f"np.{arg.dtype.name}, {c_type}" if c_type else f"np.{arg.dtype.name}"
    return type(arg).__name__


def _suggest(arg: Any, size: int) -> str:
    """The numpy scalar of the same kind that fills ``size`` bytes, when there is one."""
    if not isinstance(arg, np.generic) or arg.dtype.kind not in "iufc":
        return ""
    try:
        fitting = np.dtype(f"{arg.dtype.kind}{size}")
    except TypeError:
        return ""
    article = "an" if fitting.name.startswith("i") else "a"
    return f"; pass np.{fitting.name}(...) if the parameter is {article} {fitting.name}"

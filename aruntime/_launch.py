"""A kernel launch's op: its checked arguments, the memory it pins and the bytes it touches."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._driver import DeviceLimits, Driver, LaunchConfig
from ._handles import Kernel
from ._ledger import Ledger
from ._memory import DevicePtr
from ._op import Op, OpKind
from ._validate import (
    check_dims,
    check_kernel_args,
    check_shared_mem,
    launch_ranges,
)

__all__ = ["launch_config", "launch_op"]

#: Signatures remembered per kernel (a program uses a handful).
_SIGNATURES = 64


class _ArgNames(dict[int, str]):
    """``"args[i]"`` for each index, made on first use."""

    def __missing__(self, index: int) -> str:
        name = self[index] = f"args[{index}]"
        return name


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


def launch_op(
    ledger: Ledger,
    driver: Driver,
    kernel: Kernel,
    config: LaunchConfig,
    args: Sequence[Any],
    reads: Sequence[Any] | None,
    writes: Sequence[Any] | None,
) -> Op:
    """The :class:`Op` of ``launch``: ``args`` checked, every pointer live.

    The op keeps the ledger entries of the memory it uses (a capture pins
    them, see _graphs).  Without annotations a pointer argument is read and
    written, all of it; ``reads``/``writes`` narrow that (launch_ranges).
    """
    fn = "launch"
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
    check = ledger.check_range
    held = []  # a loop, not a comprehension: that would be a call of its own (3.11)
    for i in pointers:
        held.append(check(checked[i], 0, fn, _ARG_NAMES[i]))
    entries = tuple(held)
    read_ranges = write_ranges = None  # every pointer, read and written: found when asked
    if reads is not None or writes is not None:
        read_ranges, write_ranges = launch_ranges(checked, reads, writes, fn)
    call_args = (kernel.handle, config, checked)
    return Op(
        OpKind.LAUNCH,
        driver.launch,
        call_args,
        entries,
        kernel=kernel,
        reads=read_ranges,
        writes=write_ranges,
    )

"""A kernel launch's op: its checked arguments, the memory it pins and the bytes it touches."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._driver import Driver, LaunchConfig
from ._handles import Kernel
from ._ledger import Ledger
from ._memory import DevicePtr
from ._op import Op, OpKind
from ._validate import check_kernel_args, launch_ranges

__all__ = ["launch_op"]

#: Signatures remembered per kernel (a program uses a handful).
_SIGNATURES = 64


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
    entries = []
    touched = []
    for i in pointers:
        entry, span = ledger.live_span(checked[i], fn, i)
        entries.append(entry)
        touched.append(span)
    ranges = read_ranges = tuple(touched)
    if reads is not None or writes is not None:
        read_ranges, ranges = launch_ranges(checked, reads, writes, fn)
    call_args = (kernel.handle, config, checked)
    keepalive = tuple(entries)
    return Op(
        OpKind.LAUNCH,
        driver.launch,
        call_args,
        keepalive,
        kernel=kernel,
        reads=read_ranges,
        writes=ranges,
    )

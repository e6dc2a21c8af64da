"""A kernel launch's op: its checked arguments, the memory it pins and the bytes it touches."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._driver import Driver, LaunchConfig
from ._handles import Kernel
from ._ledger import Ledger
from ._memory import DevicePtr
from ._op import Op, OpKind
from ._validate import check_kernel_args, launch_ranges

__all__ = ["launch_op"]


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
    checked = check_kernel_args(args, fn)
    entries = []
    touched = []
    for i, arg in enumerate(checked):
        if isinstance(arg, DevicePtr):
            entries.append(ledger.check_ptr(arg, fn, f"args[{i}]"))
            touched.append((arg.address, arg.nbytes))
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

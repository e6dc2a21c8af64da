"""The peer part of a backend: copies between two devices of one driver.

``copy_d2d_async`` with ``src`` and ``dst`` on two devices of one driver is
a peer copy, queued on the stream of the backend whose method was called
(docs/scaling.md, "One node, several devices: a pool"); one of the two
sides must be that backend's.  Each side is checked against its own device's ledger, and the
other device's frees then wait for this device's queued work too
(:meth:`aruntime._state.BackendState.add_peer_user`).
"""

from __future__ import annotations

from typing import Any

from ._completion import Completion
from ._exceptions import InvalidArgumentError
from ._handles import Stream
from ._memory import DevicePtr
from ._objects import Objects
from ._op import Op, OpKind
from ._peer import describe_device, peer_driver
from ._state import BackendState

__all__ = ["PeerCopies"]


class PeerCopies:
    """Peer copies and peer queries for one backend."""

    def __init__(self, state: BackendState, owner: Any, objects: Objects) -> None:
        self._state = state
        self._owner = owner
        self._objects = objects

    def can_access(self, other: object) -> bool:
        fn = "can_access_peer"
        self._state.check_open(fn)
        if type(other) is not type(self._owner):
            raise TypeError(f"{fn}: other must be a Backend, got {type(other).__name__}")
        theirs: BackendState = other._state  # type: ignore[attr-defined]
        theirs.check_open(fn)
        driver = self._state.driver
        return driver.is_peer(theirs.driver) and driver.can_access_peer(theirs.driver)

    def copy(self, src: DevicePtr, dst: DevicePtr, n: int, stream: Stream | None) -> Completion:
        fn = "copy_d2d_async"
        mine = self._owner
        ours_src = src.backend is mine
        if not ours_src and dst.backend is not mine:
            raise InvalidArgumentError(
                f"{fn}: neither src ({describe_device(src.backend)}) nor dst "
                f"({describe_device(dst.backend)}) is memory of this backend's "
                f"{describe_device(mine)}"
            )
        other = dst.backend if ours_src else src.backend
        peer_driver(mine, other, fn, "dst" if ours_src else "src")
        theirs: BackendState = other._state  # type: ignore[attr-defined]
        src_side, dst_side = (self._state, theirs) if ours_src else (theirs, self._state)
        src_entry = src_side.ledger.check_range(src, n, fn, "src")
        dst_entry = dst_side.ledger.check_range(dst, n, fn, "dst")
        st = self._objects.resolve(stream, fn)
        if n == 0:
            return st.no_op(fn, None)
        # The other device's frees must wait for this stream's work too.
        theirs.add_peer_user(self._state)
        s_addr, d_addr = src.address, dst.address
        args = (s_addr, d_addr, n, src_side.driver, dst_side.driver)
        call = self._state.driver.memcpy_peer
        keep = (src_entry, dst_entry)
        reads, writes = ((s_addr, n),), ((d_addr, n),)
        return st.submit(Op(OpKind.COPY_D2D, call, args, keep, (), n, reads=reads, writes=writes))

"""A pool of devices: every device of one kind, opened together, chosen by load.

A server with several GPUs spreads its requests over them.  The pool holds one
:class:`~aruntime.Backend` per device and answers which one has the least work
queued and not yet finished, from each backend's own count of pending ops, so
choosing takes no lock and never waits for a device.  The pool owns its
backends: closing it closes them all, in reverse order of opening.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Any

from ._backend import Backend
from ._callsite import user_frame, warn_at
from ._exceptions import ClosedResourceError, InvalidArgumentError
from ._registry import device_count, open_backend, resolve_kind

__all__ = ["DevicePool", "open_pool"]


def _warn_unclosed(site: tuple[str, int], names: list[str]) -> None:
    warn_at(site, f"a DevicePool of {', '.join(names)} was never closed")


class DevicePool:
    """Several devices of one kind.  Made by :func:`aruntime.open_pool`.

    ``pool.backends`` are the opened devices, in the order asked for;
    :meth:`least_busy` picks one for the next piece of work.  Use it as a
    context manager (``with``), or an async one (``async with``, whose exit
    awaits each device's queued work before closing it), or call
    :meth:`close`.
    """

    def __init__(self, backends: Sequence[Backend], *, _site: tuple[str, int]) -> None:
        self._backends = tuple(backends)
        self._closed = False
        self._lock = threading.Lock()
        # Ties go round the pool instead of always to the first device, so
        # short requests that finish before the next choice still spread.
        self._turn = itertools.count()
        names = [f"{b.name}:{b.device.name}" for b in self._backends]
        self._finalizer = weakref.finalize(self, _warn_unclosed, _site, names)

    @property
    def backends(self) -> tuple[Backend, ...]:
        """The pool's devices, one Backend each, in the order they were opened."""
        return self._backends

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has begun."""
        return self._closed

    def __len__(self) -> int:
        return len(self._backends)

    def __iter__(self) -> Iterator[Backend]:
        return iter(self._backends)

    def __getitem__(self, index: int) -> Backend:
        return self._backends[index]

    def __repr__(self) -> str:
        state = " closed" if self._closed else ""
        names = ", ".join(b.name for b in self._backends)
        return f"<aruntime.DevicePool of {len(self._backends)} ({names}){state}>"

    def least_busy(self) -> Backend:
        """The open device with the fewest ops queued and not yet finished.

        Never blocks and takes no lock across any wait: it reads each
        device's pending-op count, which the device's own completions keep.
        Among equally busy devices it goes round the pool.  A device whose
        backend was closed (for instance after it was lost) is passed over,
        so the others keep serving.

        Raises:
            ClosedResourceError: the pool, or every device in it, is closed.
        """
        if self._closed:
            raise ClosedResourceError("least_busy: the DevicePool is closed")
        backends = self._backends
        count = len(backends)
        start = next(self._turn) % count
        best: Backend | None = None
        best_load = 0
        for i in range(count):
            backend = backends[(start + i) % count]
            if backend.closed:
                continue
            load = backend.statistics().pending_ops
            if best is None or load < best_load:
                best, best_load = backend, load
                if load == 0:
                    break
        if best is None:
            raise ClosedResourceError("least_busy: every device of the DevicePool is closed")
        return best

    def close(self) -> None:
        """Close every device (idempotent), the last opened first.

        Each device waits for its queued work before releasing memory, as
        :meth:`Backend.close` does.  If closing one raises, the others are
        still closed and the first error is raised.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._finalizer.detach()
        first: BaseException | None = None
        for backend in reversed(self._backends):
            try:
                backend.close()
            except BaseException as exc:  # close the rest, then report
                first = first or exc
        if first is not None:
            raise first

    async def aclose(self) -> None:
        """Await each device's queued work, then close them all.

        Cancellation: if cancelled while awaiting a device, the devices not
        yet closed are closed without waiting further (their close still
        lets the device finish with every buffer it uses), and the
        cancellation propagates.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._finalizer.detach()
        remaining = list(reversed(self._backends))
        first: BaseException | None = None
        try:
            while remaining:
                backend = remaining[0]
                try:
                    await backend.__aexit__(None, None, None)
                except Exception as exc:
                    first = first or exc
                remaining.pop(0)
        finally:
            for backend in remaining:
                try:
                    backend.close()
                except Exception as exc:
                    first = first or exc
        if first is not None:
            raise first

    def __enter__(self) -> DevicePool:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> DevicePool:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def open_pool(
    kind: str = "auto", devices: Sequence[int] | None = None, **options: Any
) -> DevicePool:
    """Open several devices of one backend kind as a :class:`DevicePool`.

    ``devices=None`` opens every device the kind has here (the sims have
    ``ARUNTIME_SIM_DEVICES`` of them); otherwise the listed ordinals, in
    that order.  ``options`` go to every :func:`open_backend` call.  If one
    device fails to open, those already opened are closed and the error is
    raised.
    """
    if not isinstance(kind, str):
        raise TypeError(f"open_pool: kind must be a str, got {type(kind).__name__}")
    kind = resolve_kind(kind)
    ordinals = list(range(device_count(kind))) if devices is None else _check_devices(devices)
    site = user_frame()
    opened: list[Backend] = []
    try:
        for ordinal in ordinals:
            opened.append(open_backend(kind, device=ordinal, **options))
    except BaseException:
        for backend in reversed(opened):
            backend.close()
        raise
    return DevicePool(opened, _site=site)


def _check_devices(devices: object) -> list[int]:
    if isinstance(devices, (str, bytes)) or not isinstance(devices, Sequence):
        raise TypeError(
            f"open_pool: devices must be a sequence of ints or None, got {type(devices).__name__}"
        )
    ordinals: list[int] = []
    for d in devices:
        if isinstance(d, bool) or not isinstance(d, int):
            raise TypeError(f"open_pool: devices must hold ints, got {type(d).__name__}")
        if d < 0:
            raise InvalidArgumentError(f"open_pool: device ordinals must be >= 0, got {d}")
        if d in ordinals:
            raise InvalidArgumentError(f"open_pool: device {d} is listed twice")
        ordinals.append(d)
    if not ordinals:
        raise InvalidArgumentError("open_pool: devices is empty; pass None for every device")
    return ordinals

"""The registry of one backend's live resources, closed in reverse dependency order.

Streams, events, graphs, modules, allocations and the core's own pools each
hold their driver object, what they depend on, and their own ``release()``.
A resource is registered when its factory has built it whole, and a
resource can only depend on resources that exist already, so creation order
is a dependency order: closing walks the registry backwards and each
resource is released before anything it depends on (a graph before the
memory and the module its ops use, every handle before the driver).

The registry holds its resources weakly: a handle dropped unclosed is found
by its own finalizer, which warns and releases it (docs/design.md).
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Callable, Iterable
from typing import Protocol

__all__ = ["Resource", "Resources", "run_all"]


class Resource(Protocol):
    """What the registry needs of a resource."""

    def release(self) -> None:
        """Release the driver object now (the backend is closing: no work is in flight)."""


class Resources:
    """Live resources in creation order; ``claim`` decides, once, who releases each."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[int, weakref.ref[Resource]] = {}
        # The same, by the resource's exact type: live_of(Stream) on every
        # free must not walk every live allocation (that made n frees O(n^2)).
        self._of_type: dict[type, dict[int, weakref.ref[Resource]]] = {}
        self._serials = itertools.count()
        self.closed = False

    def add(self, resource: Resource) -> int:
        """Register ``resource``; its serial, for :meth:`claim`."""
        serial = next(self._serials)
        live = self._live
        with self._lock:
            same = self._of_type.setdefault(type(resource), {})

            def forget(_ref: object) -> None:
                live.pop(serial, None)
                same.pop(serial, None)

            live[serial] = same[serial] = weakref.ref(resource, forget)
        return serial

    def claim(self, serial: int) -> bool:
        """Take ``serial`` out; True for the one caller that must now release it."""
        with self._lock:
            for same in self._of_type.values():
                if same.pop(serial, None) is not None:
                    break
            return self._live.pop(serial, None) is not None

    def live_of(self, kind: type) -> list[Resource]:
        """Every live resource that is a ``kind``, oldest first."""
        with self._lock:
            refs = sorted(
                (serial, ref)
                for t, same in self._of_type.items()
                if issubclass(t, kind)
                for serial, ref in same.items()
            )
        return [r for r in (ref() for _serial, ref in refs) if r is not None]

    def live(self) -> list[Resource]:
        """Every live resource, oldest first."""
        with self._lock:
            refs = list(self._live.values())
        return [r for r in (ref() for ref in refs) if r is not None]

    def close(self) -> list[Resource]:
        """Stop registering; every live resource, newest first, for the caller to release."""
        with self._lock:
            self.closed = True
            refs = list(self._live.values())
        return [r for r in (ref() for ref in reversed(refs)) if r is not None]


def run_all(releases: Iterable[Callable[[], None]]) -> None:
    """Run every release, even after one fails; then raise the first failure."""
    first: BaseException | None = None
    for release in releases:
        try:
            release()
        except Exception as exc:
            if first is None:
                first = exc
    if first is not None:
        raise first

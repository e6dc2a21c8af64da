"""The marker pool (``aruntime._submit.Markers``) takes no lock, so these check what a lock gave.

Every op takes a marker and most give it straight back, so the pool relies
on a list's ``pop`` and ``append`` being atomic.  What must still hold: no
marker is handed to two users at once, none is destroyed while pooled, and
none outlives the backend's close, even one given back while the pool is
being released.
"""

from __future__ import annotations

import threading
from typing import Any

from aruntime._submit import MARKERS_KEPT, Markers


class _Driver:
    """Counts the markers made and destroyed; each one is a distinct object."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.made = 0
        self.destroyed: list[object] = []

    def event_create(self, timing: bool) -> object:
        with self.lock:
            self.made += 1
        return object()

    def event_destroy(self, marker: object) -> None:
        with self.lock:
            self.destroyed.append(marker)


class _State:
    def __init__(self) -> None:
        self.driver = _Driver()
        self.resources = self
        self.added: list[Any] = []

    def add(self, resource: Any) -> None:
        self.added.append(resource)


def _pool() -> tuple[Markers, _Driver]:
    state = _State()
    markers = Markers(state)  # type: ignore[arg-type]
    assert state.added == [markers]  # released with the backend
    return markers, state.driver


def test_a_marker_given_back_is_reused() -> None:
    markers, driver = _pool()
    first = markers.acquire()
    markers.give_back(first)
    assert markers.acquire() is first
    assert driver.made == 1


def test_the_pool_keeps_at_most_markers_kept() -> None:
    markers, driver = _pool()
    taken = [markers.acquire() for _ in range(MARKERS_KEPT + 5)]
    for marker in taken:
        markers.give_back(marker)
    assert len(driver.destroyed) == 5
    assert driver.destroyed == taken[-5:]


def test_release_destroys_pooled_markers_and_later_ones() -> None:
    markers, driver = _pool()
    a, b, late = markers.acquire(), markers.acquire(), markers.acquire()
    markers.give_back(a)
    markers.give_back(b)
    markers.release()
    assert sorted(map(id, driver.destroyed)) == sorted(map(id, (a, b)))
    markers.give_back(late)  # an op that finished after the close
    assert driver.destroyed[-1] is late


def test_a_marker_given_back_while_the_pool_is_released_is_destroyed() -> None:
    """release() runs between give_back's check and its append: the marker must not stay pooled."""
    markers, driver = _pool()
    marker = markers.acquire()

    class RacingList(list[object]):
        def append(self, item: object) -> None:
            markers.release()  # the other thread's close, just before this append lands
            super().append(item)

    markers.free = RacingList()
    markers.give_back(marker)
    assert driver.destroyed == [marker]
    assert len(markers.free) == 0


def test_no_marker_is_handed_to_two_threads_at_once() -> None:
    markers, driver = _pool()
    in_use: set[int] = set()
    guard = threading.Lock()
    errors: list[str] = []
    start = threading.Barrier(4)

    def worker() -> None:
        start.wait()
        for _ in range(5000):
            marker = markers.acquire()
            with guard:
                if id(marker) in in_use:
                    errors.append("a marker handed out twice")
                in_use.add(id(marker))
            with guard:
                in_use.discard(id(marker))
            markers.give_back(marker)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    # Every marker made is pooled or destroyed; none is lost.
    assert driver.made == len(markers.free) + len(driver.destroyed)
    markers.release()
    assert len(driver.destroyed) == driver.made

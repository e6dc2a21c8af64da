"""A stream's order point, read while its waiter thread finishes a failed op."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aruntime._completion import Completion
from aruntime._streamstate import FailureList, StreamState


class _Probe(StreamState):
    """A StreamState whose last pending op is whatever ``pending()`` says (slots: no
    instance attribute can stand in for the method)."""

    __slots__ = ("pending",)
    pending: Callable[[], Completion | None]

    def last_pending(self) -> Completion | None:
        found: Completion | None = self.pending()
        return found


def _state() -> _Probe:
    driver: Any = object()  # order_point asks the driver nothing
    return _Probe(driver, "s", FailureList(), lambda _waiter: None)


def test_an_op_finishing_as_an_event_is_recorded_is_still_its_order_point() -> None:
    """The waiter thread sets the poison, then the op stops being pending; an event
    recorded between the two reads of order_point must still stand behind the
    failure (it stood behind nothing, and a stream waiting on it ran on clean)."""
    state = _state()
    failed = Completion("launch")

    def waiter_finishes_it_meanwhile() -> Completion | None:
        state.poison = failed  # what ordered_error does as the op finishes
        return None  # and then nothing is pending any more

    state.pending = waiter_finishes_it_meanwhile
    assert state.order_point() is failed


def test_the_order_point_is_the_last_pending_op_or_nothing() -> None:
    state = _state()
    pending = Completion("copy_h2d_async")
    state.pending = lambda: pending
    assert state.order_point() is pending
    state.pending = lambda: None
    assert state.order_point() is None

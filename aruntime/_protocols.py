"""The small protocols that lower layers use to talk back to the parts above them.

A value or a handle never imports the module that made it: it holds an
object that satisfies one of these protocols, so the import graph of the core
points one way only (``tests/test_layering.py`` and the import-linter
contract in ``pyproject.toml`` check it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

__all__ = ["CompletionHooks", "Owner"]

_C_contra = TypeVar("_C_contra", contravariant=True)


class Owner(Protocol):
    """What a pointer, a pinned buffer or the ledger asks of the backend that made it."""

    @property
    def name(self) -> str: ...

    @property
    def closed(self) -> bool: ...


class CompletionHooks(Protocol[_C_contra]):
    """How a Completion reaches the stream it was queued on (see ``_streamstate``).

    Generic in the Completion type so that this module needs no import of it.
    """

    #: True while an op finishing here may owe its outcome to an earlier one
    #: (a failure upstream on the stream, or behind an event it waited for).
    ordering: bool

    @property
    def tail(self) -> object:
        """The stream's last op while it has no marker yet (see ``mark_tail``)."""

    def ordered_error(
        self, completion: _C_contra, error: BaseException | None
    ) -> BaseException | None:
        """The error ``completion`` finishes with, in stream order (its own or a first one's)."""

    def after_pending(self, fn: Callable[[], None]) -> bool:
        """Call ``fn`` once every op queued so far has finished; False if none is pending."""

    def poll_begin(self) -> None:
        """An awaiting task polls the stream from its loop: the waiter thread may stay asleep."""

    def poll_end(self) -> None:
        """That task stopped polling: a wake-up it held back is due again."""

    def kick(self) -> None:
        """Someone started waiting: the stream's waiter must not sleep on a deferred wake-up."""

    def mark_tail(self, completion: _C_contra) -> None:
        """Someone will wait for ``completion``: record its marker now if it has none."""

    @property
    def ask_tail(self) -> Callable[[_C_contra], bool] | None:
        """``probe_tail``, its common cases in C (it calls ``probe_tail`` for the rest); or None."""

    def probe_tail(self, completion: _C_contra) -> bool:
        """An awaited unmarked tail: finished if the stream is past it; False while it runs."""

    def finish_ready(self, completion: _C_contra) -> None:
        """Finish ``completion`` here, now, if the device is already done with it."""

    def note_failure(self, completion: _C_contra) -> None:
        """``completion`` failed: keep it for the stream's next ``synchronize()``."""

    def forget_failure(self, completion: _C_contra) -> None:
        """Someone saw ``completion``'s error: the next ``synchronize()`` must not raise it."""

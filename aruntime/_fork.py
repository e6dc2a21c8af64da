"""A forked child and the backends of its parent.

``fork()`` copies the parent's memory but keeps only the thread that called
it.  A backend opened before the fork lives on in the child as data whose
threads (stream waiters, the sims' engines, the CUDA driver's own) are gone,
so waiting on it would hang.  NVIDIA's driver refuses a child forked after
``cuInit`` (every call: ``CUDA_ERROR_NOT_INITIALIZED``, 3), and the sims do
the same (``pthread_atfork``).

Here, through :func:`os.register_at_fork`: in the child, every backend
inherited from the parent is marked forked.  Its calls raise
:class:`BackendUnavailableError` naming fork at once, its pending
Completions fail with it (``wait()`` and ``await`` return at once), and its
close is a no-op that leaves the parent's device state alone.  Backends
opened in the child are the child's own.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from ._exceptions import BackendUnavailableError

__all__ = ["forked_error", "on_fork_in_child", "parent_pid"]

_log = logging.getLogger("aruntime")

_pid = [os.getpid()]  # this process's pid, as of the last fork seen
_parent: list[int | None] = [None]
_in_child: list[Callable[[int], None]] = []


def forked_error(fn: str, backend: str, parent: int) -> BackendUnavailableError:
    """The error of a call on a ``backend`` opened in process ``parent``, before this fork."""
    return BackendUnavailableError(
        f"{fn}: this {backend} backend was opened in process {parent}, and this process "
        f"({os.getpid()}) is a fork of it: a forked child cannot use its parent's backends "
        "(their threads and device state did not survive fork()); open a backend in the "
        "child, or start it with the 'spawn' or 'forkserver' method"
    )


def parent_pid() -> int | None:
    """In a forked child: the pid of the process it was forked from; else None."""
    return _parent[0]


def on_fork_in_child(fn: Callable[[int], None]) -> None:
    """Call ``fn(parent_pid)`` in every child forked from now on, right after the fork.

    ``fn`` runs on the child's only thread before anything else; it must
    not take a lock that another thread of the parent may have held.
    """
    _in_child.append(fn)


def _after_fork_in_child() -> None:
    parent = _pid[0]
    _pid[0] = os.getpid()
    _parent[0] = parent
    for fn in _in_child:
        try:
            fn(parent)
        except Exception:  # an at-fork hook must not raise
            _log.exception("aruntime: marking backends forked failed")


def _before_fork() -> None:
    _pid[0] = os.getpid()


os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)

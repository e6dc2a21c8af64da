"""free_host_pinned refuses while a numpy view of the buffer is alive, on every backend.

A view read after the free would read freed memory (on the sims and a GPU the
pages are unmapped: a segfault), so the free refuses, as a ``bytearray``
refuses to resize while exported.  Views made from the HostBuffer are
HostBuffers and register themselves; plain ndarray views (``np.asarray``,
``np.frombuffer``) are counted through the array under the HostBuffer.  The
refusal changes nothing: the buffer stays allocated and usable, and the free
succeeds once the views are gone.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import aruntime as ar

pytestmark = pytest.mark.anyio

#: Ways to make a numpy view of a pinned buffer, each kept alive by the test.
VIEWS: dict[str, Callable[[ar.HostBuffer], Any]] = {
    "slice": lambda b: b[16:],
    "typed view": lambda b: b.view(np.float32),
    "reshape": lambda b: b.reshape(8, 8),
    "np.asarray": lambda b: np.asarray(b),
    "np.frombuffer": lambda b: np.frombuffer(b, np.uint8),
    "a view of a view": lambda b: b[8:][8:],
    "a plain view of a view": lambda b: np.asarray(b[4:]),
}


@pytest.mark.parametrize("how", list(VIEWS))
def test_a_live_view_refuses_the_free_and_changes_nothing(backend: ar.Backend, how: str) -> None:
    buf = backend.alloc_host_pinned(64)
    view = VIEWS[how](buf)
    live = backend.live_alloc_count()
    with pytest.raises(ar.InvalidArgumentError) as caught:
        backend.free_host_pinned(buf)
    text = str(caught.value)
    assert text.startswith("free_host_pinned: 1 numpy view(s) of this HostBuffer"), text
    assert "freed memory" in text, text
    assert not buf.freed and backend.live_alloc_count() == live
    buf[:] = 3  # still allocated and usable
    dev = backend.alloc(64)
    backend.copy_h2d(buf, dev)
    assert (backend.copy_d2h(dev, np.empty(64, np.uint8)) == 3).all()
    backend.free(dev)
    del view
    backend.free_host_pinned(buf)
    assert buf.freed and backend.live_alloc_count() == live - 1


def test_every_live_view_is_counted(backend: ar.Backend) -> None:
    buf = backend.alloc_host_pinned(64)
    views = [make(buf) for make in VIEWS.values()]
    with pytest.raises(ar.InvalidArgumentError, match=f"{len(views)} numpy view"):
        backend.free_host_pinned(buf)
    views.pop()
    with pytest.raises(ar.InvalidArgumentError, match=f"{len(views)} numpy view"):
        backend.free_host_pinned(buf)
    views.clear()
    backend.free_host_pinned(buf)


def test_views_that_died_do_not_count(backend: ar.Backend) -> None:
    buf = backend.alloc_host_pinned(4096)
    buf[:] = 0  # pinned memory starts with whatever was there
    for i in range(1000):
        assert buf[i : i + 4].sum() == 0  # each view dies at once
        np.asarray(buf)[i] = 0
    record = buf._record
    assert record is not None and not record.views  # nothing piles up
    backend.free_host_pinned(buf)


def test_a_view_only_a_garbage_cycle_holds_does_not_count(backend: ar.Backend) -> None:
    buf = backend.alloc_host_pinned(64)
    cycle: dict[str, Any] = {"view": buf[8:], "plain": np.asarray(buf)}
    cycle["self"] = cycle
    del cycle
    gc.disable()  # the free's own collection must find it
    try:
        backend.free_host_pinned(buf)
    finally:
        gc.enable()
    assert buf.freed


async def test_a_completion_holding_a_view_refuses_until_it_is_dropped(
    backend: ar.Backend,
) -> None:
    buf = backend.alloc_host_pinned(64)
    dev = backend.alloc(64)
    await backend.memset_async(dev, 5, 64)
    done = backend.copy_d2h_async(dev, buf[:32])
    out = await done  # the destination view, which `done` keeps
    assert (out == 5).all()
    del out
    with pytest.raises(ar.InvalidArgumentError, match="Completion of a copy"):
        backend.free_host_pinned(buf)
    del done
    backend.free_host_pinned(buf)
    backend.free(dev)


def test_the_buffer_itself_and_memoryviews_of_it_are_not_views(backend: ar.Backend) -> None:
    """The caller's own names for the HostBuffer cannot be told from a memoryview of it;
    neither counts (a memoryview of it, read after the free, is the caller's to avoid)."""
    buf = backend.alloc_host_pinned(64)
    same = buf
    raw = memoryview(buf)
    backend.free_host_pinned(same)
    raw.release()
    assert buf.freed

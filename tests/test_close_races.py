"""Closing against enqueues from other threads, many rounds, beside a busy process (slow).

The conformance suite runs a few rounds of the same race
(``tests/conformance/test_stream_order.py``); this runs hundreds per backend
with another process taking a core, as issue 29's adversarial trial did:
every op either completes or raises ClosedResourceError, with no crash and
no hang, and a backend closed after its failure was seen raises nothing.
It also frees a pointer while another thread launches on it (issue 32):
each launch either runs on live memory or is refused, with no device fault
and no byte lost, in the ledger or the driver; and closes a graph while
another thread replays it, or an event while another thread records it or
waits on it: each runs before the destroy or is refused, never a driver
call on a destroyed graph or event.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import pytest

import aruntime as ar
from tests.conformance.test_stream_order import (
    EVENT_USES,
    NBYTES,
    N,
    _close_race_round,
    _open,
    event_close_during,
    free_during,
    graph_close_during,
    pinned_free_during,
)

pytestmark = pytest.mark.slow


@pytest.fixture
def busy_neighbour() -> Iterator[None]:
    spinner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\nend = time.time() + 600\nwhile time.time() < end: pass",
        ]
    )
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait()


@pytest.mark.parametrize("path", ["race-checked", "plain"])
@pytest.mark.parametrize("target", ["stream", "backend"])
@pytest.mark.parametrize("kind", ["mock", "mock-async", "cuda-sim", "levelzero-sim"])
@pytest.mark.usefixtures("busy_neighbour")
def test_close_against_enqueues_many_rounds(kind: str, target: str, path: str) -> None:
    """Both roads onto a stream: an Op for the race checker, and the plain
    enqueue (compiled where built), which refuses under the same lock."""
    for _ in range(150):
        _close_race_round(kind, target, check_hazards=path == "race-checked")


def _free_against_launches(gpu: ar.Backend, stream: ar.Stream, after: int) -> None:
    """One round: another thread launches on a pointer while this one frees it,
    once ``after`` launches are queued (so the free meets launches in flight)."""
    kernel = gpu.kernel(gpu.builtin_module("vector_ops"), "scale_f32")
    ptr = gpu.alloc(NBYTES)
    args = [np.uint32(N), np.float32(1), ptr]
    free_during(gpu, ptr, lambda: gpu.launch(kernel, 1, N, args, stream=stream), after)


#: Issue 32's target is 1,000 rounds on the sims, where the race once lost the
#: device or leaked; the mocks run fewer (a mock-async round waits some 60 ms
#: for the worker's launches, which its free is ordered after).
_FREE_ROUNDS = {"mock": 200, "mock-async": 200, "cuda-sim": 1000, "levelzero-sim": 1000}


@pytest.mark.parametrize("kind", list(_FREE_ROUNDS))
@pytest.mark.usefixtures("busy_neighbour")
def test_free_against_launches_many_rounds(kind: str) -> None:
    """No fault and no leak, in the ledger or the driver, whichever side wins."""
    gpu = _open(kind)
    try:
        free_before = gpu.device_free_memory()
        with gpu.create_stream() as stream:
            for round_ in range(_FREE_ROUNDS[kind]):
                _free_against_launches(gpu, stream, after=round_ % 8)
                assert gpu.live_alloc_count() == 0
        assert gpu.device_free_memory() == free_before  # the driver has every byte back
    finally:
        gpu.close()  # raises any error no one saw: a fault would show here


#: At the old code's 12-30% of rounds, a hundred rounds on a sim all but surely catch it.
_GRAPH_ROUNDS = {"mock": 100, "mock-async": 50, "cuda-sim": 200, "levelzero-sim": 200}


@pytest.mark.parametrize("kind", list(_GRAPH_ROUNDS))
@pytest.mark.usefixtures("busy_neighbour")
def test_graph_close_against_replays_many_rounds(kind: str) -> None:
    """Before the close waited out the replays under way, 12% of such rounds on cuda-sim
    and 30% on levelzero-sim replayed a destroyed graph (an invalid-handle error there; on
    a GPU, a use after free)."""
    gpu = _open(kind)
    try:
        ptr = gpu.alloc(NBYTES)
        with gpu.create_stream() as stream:
            for round_ in range(_GRAPH_ROUNDS[kind]):
                graph_close_during(gpu, ptr, stream, after=round_ % 8)
            assert gpu.statistics().open_graphs == 0
        gpu.free(ptr)
    finally:
        gpu.close()  # raises any error no one saw


#: A quarter of a graph's rounds per use: each backend runs five.
_EVENT_ROUNDS = {kind: rounds // 4 for kind, rounds in _GRAPH_ROUNDS.items()}


@pytest.mark.parametrize("use", EVENT_USES)
@pytest.mark.parametrize("kind", list(_EVENT_ROUNDS))
@pytest.mark.usefixtures("busy_neighbour")
def test_event_close_against_its_uses_many_rounds(kind: str, use: str) -> None:
    """Before the close waited them out, 30% of record rounds on cuda-sim recorded a
    destroyed event (cuEventRecord's invalid-handle error; on a GPU, a use after free),
    and before it waited out host-side calls, 66% of elapsed_ms rounds and 1% of query
    rounds asked cuda-sim about a destroyed event."""
    gpu = _open(kind)
    try:
        ptr = gpu.alloc(NBYTES)
        with gpu.create_stream() as stream, gpu.create_stream() as other:
            for round_ in range(_EVENT_ROUNDS[kind]):
                event_close_during(gpu, ptr, stream, other, use, after=round_ % 8)
            assert gpu.statistics().open_events == 0
        gpu.free(ptr)
    finally:
        gpu.close()


@pytest.mark.parametrize("kind", list(_GRAPH_ROUNDS))
@pytest.mark.usefixtures("busy_neighbour")
def test_pinned_free_against_copies_many_rounds(kind: str) -> None:
    """Before the free waited out the copies under way (and they named the buffer's entry),
    levelzero-sim refused the free of memory a copy still used (zeMemFree's
    HANDLE_OBJECT_IN_USE) in 2 of 3 runs of 200 rounds beside a busy process."""
    gpu = _open(kind)
    try:
        with gpu.create_stream() as stream:
            for round_ in range(_GRAPH_ROUNDS[kind]):
                pinned_free_during(gpu, stream, after=round_ % 8)
            assert gpu.live_alloc_count() == 0
    finally:
        gpu.close()  # raises any error no one saw

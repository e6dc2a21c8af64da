"""Stream-race checking on every backend (docs/testing.md, "Stream races").

Each race the checker must catch is one program here, run as written (it
raises :class:`aruntime.HazardError` naming both ops and both call sites,
and enqueues nothing) and with the fix a user would make: an event between
the streams, a host wait, disjoint ranges, or reads only.  The ``backend``
fixture turns checking on, as ``aruntime.testing`` does for every user.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import numpy as np
import pytest

import aruntime as ar

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        os.environ.get("ARUNTIME_CHECK_HAZARDS") == "0",
        reason="the fixtures check no races under ARUNTIME_CHECK_HAZARDS=0",
    ),
]

N = 64  # float32 elements per buffer
NBYTES = 4 * N
FIXES = ["race", "event", "host_wait", "disjoint"]


def at(offset: int = 0) -> str:
    """``"file:line"`` of the caller's line (plus ``offset``), as a race message names it."""
    frame = sys._getframe(1)
    return f"{frame.f_code.co_filename}:{frame.f_lineno + offset}"


def vector(backend: ar.Backend, name: str) -> ar.Kernel:
    return backend.kernel(backend.builtin_module("vector_ops"), name)


GRID, BLOCK = 1, N


def data(scale: float = 1.0) -> np.ndarray[Any, np.dtype[np.float32]]:
    return np.arange(N, dtype=np.float32) * np.float32(scale)


def empty() -> np.ndarray[Any, np.dtype[np.float32]]:
    return np.empty(N, np.float32)


@contextlib.contextmanager
def raced_if(race: bool, *parts: str) -> Iterator[None]:
    """The block raises HazardError whose message has every one of ``parts`` (if ``race``)."""
    if not race:
        yield
        return
    with pytest.raises(ar.HazardError) as info:
        yield
    message = str(info.value)
    for part in ("stream race", *parts):
        assert part in message, f"{part!r} not in: {message}"


async def order(
    backend: ar.Backend, fix: str, first: ar.Stream, second: ar.Stream, op: Any
) -> None:
    """Order ``second``'s next op after ``op`` on ``first``, the way ``fix`` says."""
    if fix == "event":
        with backend.create_event() as event:
            backend.record_event(event, first)
            backend.stream_wait_event(second, event)
    elif fix == "host_wait":
        await op
    elif fix == "await_stream":
        await first
    elif fix == "await_event":
        with backend.create_event() as event:
            backend.record_event(event, first)
            await event


async def finish(backend: ar.Backend, *streams: ar.Stream) -> None:
    for stream in streams:
        await stream
        stream.close()


async def test_the_fixtures_check_for_races(backend: ar.Backend) -> None:
    assert backend.check_hazards


@pytest.mark.parametrize("fix", [*FIXES, "await_stream", "await_event"])
async def test_an_upload_then_a_kernel_on_another_stream(backend: ar.Backend, fix: str) -> None:
    s1, s2 = backend.create_stream(), backend.create_stream()
    buf = backend.alloc(2 * NBYTES)
    a, b = buf[:NBYTES], buf[NBYTES:]
    scale = vector(backend, "scale_f32")
    site1 = at(+1)
    up = backend.copy_h2d_async(data(), a, stream=s1)
    await order(backend, fix, s1, s2, up)
    target = b if fix == "disjoint" else a
    site2 = at(+2)
    with raced_if(fix == "race", "launch 'scale_f32'", "copy_h2d_async", site1, site2, "0x"):
        backend.launch(scale, GRID, BLOCK, [np.uint32(N), np.float32(2), target], stream=s2)
    await s2
    out = await backend.copy_d2h_async(a, empty(), stream=s1)
    # A racing launch enqueues nothing: `a` still holds what was uploaded.
    np.testing.assert_array_equal(out, data(1 if fix in ("race", "disjoint") else 2))
    await finish(backend, s1, s2)
    backend.free(buf)


async def test_a_download_and_a_kernel_that_only_read_never_race(backend: ar.Backend) -> None:
    s1, s2 = backend.create_stream(), backend.create_stream()
    a, b = backend.alloc(NBYTES), backend.alloc(NBYTES)
    add = vector(backend, "add_f32")
    await backend.copy_h2d_async(data(), a)
    down = backend.copy_d2h_async(a, empty(), stream=s1)
    await backend.launch(add, GRID, BLOCK, [np.uint32(N), a, a, b], stream=s2, reads=(a,))
    np.testing.assert_array_equal(await down, data())
    np.testing.assert_array_equal(await backend.copy_d2h_async(b, empty(), stream=s2), data(2))
    await finish(backend, s1, s2)
    backend.free(a)
    backend.free(b)


@pytest.mark.parametrize("fix", [*FIXES, "query"])
async def test_a_kernel_then_a_download_on_another_stream(backend: ar.Backend, fix: str) -> None:
    s1, s2 = backend.create_stream(), backend.create_stream()
    buf = backend.alloc(2 * NBYTES)
    a, b = buf[:NBYTES], buf[NBYTES:]
    await backend.copy_h2d_async(np.concatenate([data(), data()]), buf)
    scale = vector(backend, "scale_f32")
    site1 = at(+1)
    run = backend.launch(scale, GRID, BLOCK, [np.uint32(N), np.float32(3), a], stream=s1)
    if fix == "query":  # a True event_query is a host wait that already returned
        with backend.create_event() as event:
            backend.record_event(event, s1)
            while not backend.event_query(event):
                await anyio.sleep(0.001)
    else:
        await order(backend, fix, s1, s2, run)
    source = b if fix == "disjoint" else a
    site2 = at(+2)
    with raced_if(fix == "race", "copy_d2h_async", "launch 'scale_f32'", site1, site2):
        down = backend.copy_d2h_async(source, empty(), stream=s2)
    if fix != "race":
        np.testing.assert_array_equal(await down, data(1 if fix == "disjoint" else 3))
    await finish(backend, s1, s2)
    backend.free(buf)


@pytest.mark.parametrize("fix", [*FIXES, "done"])
async def test_a_host_buffer_a_download_writes_and_an_upload_reads(
    backend: ar.Backend, fix: str
) -> None:
    """Pinned memory: the device reads it in stream order, so an event orders the two."""
    s1, s2 = backend.create_stream(), backend.create_stream()
    a, b = backend.alloc(NBYTES), backend.alloc(NBYTES)
    await backend.copy_h2d_async(data(5), a)
    pinned = backend.alloc_host_pinned(2 * NBYTES)
    host = pinned.view(np.float32)
    site1 = at(+1)
    down = backend.copy_d2h_async(a, host[:N], stream=s1)
    if fix == "done":  # done() answering True is a host wait too
        while not down.done():
            await anyio.sleep(0.001)
    else:
        await order(backend, fix, s1, s2, down)
    source = host[N:] if fix == "disjoint" else host[:N]
    site2 = at(+2)
    with raced_if(fix == "race", "copy_h2d_async", "copy_d2h_async", site1, site2, "host"):
        backend.copy_h2d_async(source, b, stream=s2)
    await finish(backend, s1, s2)
    if fix not in ("race", "disjoint"):
        np.testing.assert_array_equal(await backend.copy_d2h_async(b, empty()), data(5))
    del host, source, down  # the download's Completion holds its destination, a view
    backend.free_host_pinned(pinned)
    backend.free(a)
    backend.free(b)


@pytest.mark.parametrize("fix", ["event", "host_wait"])
async def test_an_upload_from_pageable_memory_is_ordered_by_host_waits_only(
    backend: ar.Backend, fix: str
) -> None:
    """The driver reads pageable memory as the upload is called: an event cannot order that."""
    s1, s2 = backend.create_stream(), backend.create_stream()
    a, b = backend.alloc(NBYTES), backend.alloc(NBYTES)
    await backend.copy_h2d_async(data(5), a)
    host = np.zeros(N, np.float32)
    site1 = at(+1)
    down = backend.copy_d2h_async(a, host, stream=s1)
    await order(backend, fix, s1, s2, down)
    site2 = at(+2)
    with raced_if(fix == "event", "reads pageable host memory", site1, site2):
        backend.copy_h2d_async(host, b, stream=s2)
    await finish(backend, s1, s2)
    if fix == "host_wait":
        np.testing.assert_array_equal(await backend.copy_d2h_async(b, empty()), data(5))
    backend.free(a)
    backend.free(b)


@pytest.mark.parametrize("fix", ["race", "event", "host_wait", "same_stream"])
async def test_free_async_against_another_streams_write(backend: ar.Backend, fix: str) -> None:
    s1, s2 = backend.create_stream(), backend.create_stream()
    ptr = backend.alloc_async(NBYTES, s1)
    site1 = at(+1)
    fill = backend.memset_async(ptr, 7, NBYTES, stream=s1)
    await order(backend, fix, s1, s2, fill)
    freeing = s1 if fix == "same_stream" else s2
    site2 = at(+2)
    with raced_if(fix == "race", "free_async", "memset_async", site1, site2):
        backend.free_async(ptr, freeing)
    if fix == "race":  # nothing was freed: the memory is still the caller's
        assert backend.live_alloc_count() == 1
        await s1
        backend.free_async(ptr, s2)
    await finish(backend, s1, s2)
    assert backend.live_alloc_count() == 0


@pytest.mark.parametrize("fix", FIXES)
async def test_a_graph_replay_against_a_copy_on_another_stream(
    backend: ar.Backend, fix: str
) -> None:
    s1, s2 = backend.create_stream(), backend.create_stream()
    buf = backend.alloc(2 * NBYTES)
    a, b = buf[:NBYTES], buf[NBYTES:]
    with backend.capture(s1) as graph:
        backend.memset_async(a, 1, NBYTES, stream=s1)
    target = b if fix == "disjoint" else a
    site1 = at(+1)
    up = backend.copy_h2d_async(data(), target, stream=s2)
    await order(backend, fix, s2, s1, up)
    site2 = at(+2)
    with raced_if(fix == "race", "launch_graph", "copy_h2d_async", site1, site2):
        backend.launch_graph(graph, s1)
    await finish(backend, s1, s2)
    graph.close()
    backend.free(buf)


async def test_ops_under_capture_are_checked_when_replayed_not_when_recorded(
    backend: ar.Backend,
) -> None:
    s1, s2 = backend.create_stream(), backend.create_stream()
    a = backend.alloc(NBYTES)
    up = backend.copy_h2d_async(data(), a, stream=s2)
    with backend.capture(s1) as graph:  # recorded, not run: no race yet
        backend.memset_async(a, 1, NBYTES, stream=s1)
    with pytest.raises(ar.HazardError):
        backend.launch_graph(graph, s1)
    await up
    await backend.launch_graph(graph, s1)
    await finish(backend, s1, s2)
    graph.close()
    backend.free(a)


@pytest.mark.parametrize("annotated", [True, False])
async def test_reads_annotations_let_two_streams_share_an_input(
    backend: ar.Backend, annotated: bool
) -> None:
    s1, s2 = backend.create_stream(), backend.create_stream()
    x, y1, y2 = (backend.alloc(NBYTES) for _ in range(3))
    await backend.copy_h2d_async(data(), x)
    add = vector(backend, "add_f32")
    reads1: dict[str, Any] = {"reads": (x,), "writes": (y1,)} if annotated else {}
    reads2: dict[str, Any] = {"reads": [x]} if annotated else {}
    site1 = at(+1)
    first = backend.launch(add, GRID, BLOCK, [np.uint32(N), x, x, y1], stream=s1, **reads1)
    site2 = at(+2)
    with raced_if(not annotated, "launch 'add_f32'", site1, site2):
        backend.launch(add, GRID, BLOCK, [np.uint32(N), x, x, y2], stream=s2, **reads2)
    await first
    await finish(backend, s1, s2)
    for p in (x, y1, y2):
        backend.free(p)


async def test_compute_ops_declare_their_inputs_read_only(backend: ar.Backend) -> None:
    s1, s2 = backend.create_stream(), backend.create_stream()
    x, y1, y2 = (backend.alloc(NBYTES) for _ in range(3))
    await backend.copy_h2d_async(data(), x)
    first = backend.unary(x, y1, N, "neg", stream=s1)
    second = backend.binary(x, x, y2, N, "add", stream=s2)  # reads x while s1 reads it: fine
    with pytest.raises(ar.HazardError, match=r"launch 'unary_f32'.* writes"):
        backend.unary(x, x, N, "neg", stream=s1)  # writes x, which s2's add reads unordered
    await first
    await second
    await finish(backend, s1, s2)
    for p in (x, y1, y2):
        backend.free(p)


async def test_reads_annotations_are_validated(backend: ar.Backend) -> None:
    x, other = backend.alloc(NBYTES), backend.alloc(NBYTES)
    scale = vector(backend, "scale_f32")
    args = [np.uint32(N), np.float32(1), x]
    with pytest.raises(ar.InvalidArgumentError, match=r"reads\[0\].*not one of the kernel"):
        backend.launch(scale, GRID, BLOCK, args, reads=(other,))
    with pytest.raises(TypeError, match=r"writes\[0\] must be a DevicePtr"):
        backend.launch(scale, GRID, BLOCK, args, writes=(np.uint32(1),))
    with pytest.raises(TypeError, match="reads must be a tuple"):
        backend.launch(scale, GRID, BLOCK, args, reads=x)  # type: ignore[arg-type]
    await backend.launch(scale, GRID, BLOCK, args, reads=[], writes=[x])
    backend.free(x)
    backend.free(other)


async def test_a_store_into_memory_declared_read_only_fails_the_launch(
    backend: ar.Backend,
) -> None:
    """The sims see every store: a kernel writing through a pointer in reads= only is caught.

    Declaring a pointer read-only lets other streams read it at the same
    time, so a wrong declaration would hide a race; hardware and the mock
    cannot see the stores, so there the declaration is trusted.
    """
    if not backend.driver.checks_stores:
        pytest.skip(f"{backend.name} cannot see a kernel's stores; reads= is trusted there")
    x, y = backend.alloc(NBYTES), backend.alloc(NBYTES)
    await backend.copy_h2d_async(data(), x)
    await backend.copy_h2d_async(data(), y)
    scale = vector(backend, "scale_f32")  # y[i] *= a: stores into its pointer
    site = at(2)
    with pytest.raises(ar.StoreHazardError) as info:
        await backend.launch(scale, GRID, BLOCK, [np.uint32(N), np.float32(2), y], reads=[y])
    assert isinstance(info.value, ar.HazardError) and isinstance(info.value, ar.DriverError)
    message = str(info.value)
    assert "kernel 'scale_f32'" in message, message
    assert f"launched at {site}" in message, message
    assert f"at {y.address:#x}" in message and "declared read-only" in message, message
    assert "writes=" in message, message  # says what to do instead
    # Not sticky: the device is fine, and an honest declaration runs clean.
    saxpy = vector(backend, "saxpy")  # y = a*x + y: reads x, stores into y
    await backend.launch(
        saxpy, GRID, BLOCK, [np.uint32(N), np.float32(1), x, y], reads=[x], writes=[y]
    )
    out = await backend.copy_d2h_async(y, empty())
    np.testing.assert_array_equal(out, data() * 2)  # the faulting launch stopped at its first store
    # A captured launch keeps its declaration: each replay is held to it.
    s1 = backend.create_stream()
    with backend.capture(s1) as graph:
        backend.launch(scale, GRID, BLOCK, [np.uint32(N), np.float32(2), y], reads=[y], stream=s1)
    for _ in range(2):
        with pytest.raises(ar.StoreHazardError, match="kernel 'scale_f32'"):
            await backend.launch_graph(graph, s1)
    graph.close()
    await finish(backend, s1)
    backend.free(x)
    backend.free(y)


async def test_a_freed_allocation_is_forgotten(backend: ar.Backend) -> None:
    """Memory handed out again after free() starts with no history (no false races)."""
    s1, s2 = backend.create_stream(), backend.create_stream()
    for _ in range(3):
        ptr = backend.alloc(NBYTES)
        backend.memset_async(ptr, 1, NBYTES, stream=s1)
        backend.free(ptr)  # released behind the queued work: nothing can race with it
        fresh = backend.alloc(NBYTES)
        await backend.memset_async(fresh, 2, NBYTES, stream=s2)
        backend.free(fresh)
    await finish(backend, s1, s2)


def test_blocking_copies_are_host_waits(backend: ar.Backend) -> None:
    s1 = backend.create_stream()
    a = backend.alloc(NBYTES)
    backend.copy_h2d(data(), a)  # default stream, waited for
    backend.memset_async(a, 0, NBYTES, stream=s1).wait()
    out = backend.copy_d2h(a, empty())  # default stream again: ordered by the waits
    np.testing.assert_array_equal(out, np.zeros(N, np.float32))
    backend.synchronize(s1).wait()
    s1.close()
    backend.free(a)

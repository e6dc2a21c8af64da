"""Turning stream-race checking on and off, and what it keeps (on the mock).

The races themselves, on every backend, are in tests/conformance/test_hazards.py.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import aruntime as ar

pytestmark = pytest.mark.anyio


def test_it_is_off_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARUNTIME_CHECK_HAZARDS", raising=False)
    with ar.open_backend("mock") as gpu:
        assert not gpu.check_hazards
    with ar.open_backend("mock", check_hazards=True) as gpu:
        assert gpu.check_hazards


@pytest.mark.parametrize(("value", "on"), [("1", True), ("0", False), ("", False)])
def test_the_environment_turns_it_on(monkeypatch: pytest.MonkeyPatch, value: str, on: bool) -> None:
    monkeypatch.setenv("ARUNTIME_CHECK_HAZARDS", value)
    with ar.open_backend("mock") as gpu:
        assert gpu.check_hazards is on


def test_an_explicit_false_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARUNTIME_CHECK_HAZARDS", "1")
    with ar.open_backend("mock", check_hazards=False) as gpu:
        assert not gpu.check_hazards


def test_check_hazards_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="check_hazards must be a bool"):
        ar.open_backend("mock", check_hazards="yes")  # type: ignore[arg-type]


def test_with_checking_off_a_race_runs_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARUNTIME_CHECK_HAZARDS", raising=False)
    with ar.open_backend("mock") as gpu:
        s1, s2 = gpu.create_stream(), gpu.create_stream()
        ptr = gpu.alloc(64)
        gpu.memset_async(ptr, 1, 64, stream=s1)
        gpu.memset_async(ptr, 2, 64, stream=s2)  # a race nobody checks
        gpu.synchronize(s1).wait()
        gpu.synchronize(s2).wait()
        gpu.free(ptr)
        s1.close()
        s2.close()


async def test_awaited_ops_keep_few_records(mock_backend: ar.Backend) -> None:
    gpu = mock_backend
    streams = [gpu.create_stream() for _ in range(3)]
    ptr = gpu.alloc(4096)
    host = np.zeros(4096, np.uint8)
    for i in range(200):
        await gpu.copy_h2d_async(host, ptr, stream=streams[i % 3])
    checker = gpu._state.hazards.checker  # type: ignore[union-attr]
    assert checker.record_count() <= 2
    for stream in streams:
        stream.close()
    gpu.free(ptr)


async def test_a_dead_host_buffer_is_not_mistaken_for_a_new_one(mock_backend: ar.Backend) -> None:
    """A new array at a freed array's address has none of its history."""
    gpu = mock_backend
    s1, s2 = gpu.create_stream(), gpu.create_stream()
    a, b = gpu.alloc(256), gpu.alloc(256)
    seen: set[int] = set()
    for _ in range(20):
        host = np.ones(256, np.uint8)
        seen.add(host.ctypes.data)
        gpu.copy_d2h_async(a, host, stream=s1)  # writes `host`, never awaited
        del host
        gc.collect()
        fresh = np.ones(256, np.uint8)  # often at the same address
        gpu.copy_h2d_async(fresh, b, stream=s2)  # reads it: no race with a dead buffer
        if fresh.ctypes.data in seen:
            break
        del fresh
    else:
        pytest.fail("numpy never reused a freed buffer's address: this test tests nothing")
    await s1
    await s2
    s1.close()
    s2.close()
    gpu.free(a)
    gpu.free(b)


async def test_a_live_host_buffer_keeps_its_history(mock_backend: ar.Backend) -> None:
    gpu = mock_backend
    s1, s2 = gpu.create_stream(), gpu.create_stream()
    a, b = gpu.alloc(256), gpu.alloc(256)
    host = bytearray(256)  # no weak references: the record holds it
    gpu.copy_d2h_async(a, host, stream=s1)
    with pytest.raises(ar.HazardError, match="host"):
        gpu.copy_h2d_async(memoryview(host)[128:], b[:128], stream=s2)
    await s1
    await gpu.copy_h2d_async(host, b, stream=s2)
    s1.close()
    s2.close()
    gpu.free(a)
    gpu.free(b)


async def test_slices_of_one_array_are_their_own_bytes(mock_backend: ar.Backend) -> None:
    """Two streams download into the two halves of one array, through memoryview slices
    (each a view of the same array object): disjoint bytes, no race; a third op over the
    whole array races with both."""
    gpu = mock_backend
    s1, s2, s3 = gpu.create_stream(), gpu.create_stream(), gpu.create_stream()
    a, b, c = gpu.alloc(128), gpu.alloc(128), gpu.alloc(256)
    host = np.zeros(256, np.uint8)
    first = gpu.copy_d2h_async(a, memoryview(host)[:128], stream=s1)
    second = gpu.copy_d2h_async(b, memoryview(host)[128:], stream=s2)
    with pytest.raises(ar.HazardError, match="host"):
        gpu.copy_d2h_async(c, host, stream=s3)
    await first
    await second
    for s in (s1, s2, s3):
        s.close()
    for ptr in (a, b, c):
        gpu.free(ptr)


async def test_exception_is_a_host_wait(mock_backend: ar.Backend) -> None:
    gpu = mock_backend
    s1, s2 = gpu.create_stream(), gpu.create_stream()
    ptr = gpu.alloc(64)
    fill = gpu.memset_async(ptr, 1, 64, stream=s1)
    assert fill.exception() is None
    await gpu.memset_async(ptr, 2, 64, stream=s2)
    s1.close()
    s2.close()
    gpu.free(ptr)


def test_a_site_kept_as_code_and_offset_names_the_frames_line() -> None:
    """Ops keep where they were made as (code, f_lasti); a message turns that into the line
    f_lineno would have given, a call spread over several lines included."""
    import sys

    from aruntime._hazards import _site

    def here(_: int) -> tuple[object, int, int]:
        frame = sys._getframe(1)
        return frame.f_code, frame.f_lasti, frame.f_lineno

    code, offset, line = here(
        0,
    )
    assert _site((code, offset)) == f"{__file__}:{line}"  # type: ignore[arg-type]


def test_the_public_ops_find_the_users_frame_without_a_walk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The check finds the caller of a public async op by trying depths one at a time
    (``_racecheck._user_site``: two frames up from a compiled front, four from the Python
    methods), never by walking up the stack; only a caller deeper than ``_SITE_DEPTHS``
    walks.  A layer that made the public ops' callers that deep fails here."""
    import aruntime._racecheck as racecheck

    walks: list[object] = []
    real_walk = racecheck.user_frame

    def counting_walk() -> tuple[str, int]:
        walks.append(None)
        return real_walk()

    monkeypatch.setattr(racecheck, "user_frame", counting_walk)
    with ar.open_backend("mock", check_hazards=True) as gpu:
        ptr, out = gpu.alloc(64), gpu.alloc(64)
        host = np.zeros(16, np.float32)
        kernel = gpu.kernel(gpu.builtin_module("vector_ops"), "fill_f32")
        with gpu.create_stream() as stream:
            gpu.memset_async(ptr, 0, 64, stream=stream)
            gpu.copy_h2d_async(host, ptr, stream=stream)
            gpu.launch(kernel, 1, 16, [np.uint32(16), np.float32(1), ptr], stream=stream)
            gpu.launch(
                kernel,
                1,
                16,
                [np.uint32(16), np.float32(1), ptr],
                reads=[],
                writes=[ptr],
                stream=stream,
            )
            gpu.copy_d2h_async(ptr, host, stream=stream).wait()
            assert walks == []
            # Wrappers (a blocking copy, a compute op): a few frames deeper, still tried.
            gpu.copy_d2h(ptr, host)
            gpu.unary(ptr, out, 16, "exp").wait()
            assert walks == []
            # Deeper than the depths tried: the walk.
            monkeypatch.setattr(racecheck, "_SITE_DEPTHS", 3)
            gpu.unary(ptr, out, 16, "exp").wait()
            assert walks
        gpu.free(ptr)
        gpu.free(out)

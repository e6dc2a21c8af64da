"""The mock backend's own features: call log, faults, device, kernels, graphs."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import aruntime as ar
from aruntime import _resources
from aruntime.backends.mock import FAULT_KINDS, H100, MockCall

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["mock", "mock-async"])
def gpu(request: pytest.FixtureRequest) -> Iterator[ar.Backend]:
    options = {"latency": 0.0} if request.param == "mock-async" else {}
    b = ar.open_backend("mock", **options)
    try:
        yield b
    finally:
        b.close()


def test_call_log() -> None:
    # The ops below touch one buffer from two streams in no order: a race the
    # fixtures' checking would refuse, and beside the point of a call log.
    with ar.open_backend("mock", check_hazards=False) as gpu:
        _call_log(gpu)


def _call_log(gpu: ar.Backend) -> None:
    drv: Any = gpu.driver
    s = gpu.create_stream()
    ptr = gpu.alloc(64)
    gpu.copy_h2d_async(bytes(64), ptr, stream=s)
    gpu.memset_async(ptr, 1, 32)
    gpu.copy_d2h_async(ptr[:16], bytearray(16), stream=s)
    gpu.copy_d2d_async(ptr[:8], ptr[8:16], 8)
    gpu.copy_d2d_2d_async(ptr, 16, ptr[32:], 8, 4, 2)
    kern = gpu.kernel(gpu.builtin_module(), "fill_f32")
    args = [np.uint32(4), np.float32(1.5), ptr]
    gpu.launch(kern, 1, 4, args, stream=s)
    sid = s.handle.id  # type: ignore[attr-defined]
    dsid = gpu.default_stream().handle.id  # type: ignore[attr-defined]
    ops = [c for c in drv.call_log if c.op != "alloc"]
    assert ops == [
        MockCall("copy_h2d", sid, 64),
        MockCall("memset", dsid, 32),
        MockCall("copy_d2h", sid, 16),
        MockCall("copy_d2d", dsid, 8),
        MockCall("copy_2d", dsid, 8),
        MockCall("launch", sid, 0, "fill_f32", tuple(args)),
    ]
    assert drv.calls("alloc") == [MockCall("alloc", nbytes=64)]
    assert [c.op for c in drv.calls()] == [c.op for c in drv.call_log]
    s.close()
    gpu.free(ptr)
    assert drv.calls("free") == [MockCall("free", nbytes=64)]


@pytest.mark.parametrize("kind", [k for k in FAULT_KINDS if k != "any"])
async def test_inject_fault_for_every_kind(gpu: ar.Backend, kind: str) -> None:
    drv: Any = gpu.driver
    ptr = gpu.alloc(64)
    cs = gpu.create_stream()
    with gpu.capture(cs) as graph:
        pass
    kern = gpu.kernel(gpu.builtin_module(), "fill_f32")
    ops: dict[str, Callable[[], Any]] = {
        "alloc": lambda: gpu.alloc(8),
        "alloc_host": lambda: gpu.alloc_host_pinned(8),
        "copy_h2d": lambda: gpu.copy_h2d_async(bytes(8), ptr),
        "copy_d2h": lambda: gpu.copy_d2h_async(ptr, bytearray(8)),
        "copy_d2d": lambda: gpu.copy_d2d_async(ptr[:8], ptr[8:16], 8),
        "copy_2d": lambda: gpu.copy_d2d_2d_async(ptr, 8, ptr[32:], 8, 4, 2),
        "memset": lambda: gpu.memset_async(ptr, 0, 8),
        "launch": lambda: gpu.launch(kern, 1, 2, [np.uint32(2), np.float32(0), ptr]),
        "graph_launch": lambda: gpu.launch_graph(graph),
    }
    spare, side = gpu.alloc(8), gpu.create_stream()
    drv.inject_fault(kind, ar.NotSupportedError, count=2)
    for _ in range(2):
        if kind.startswith("alloc"):
            before = gpu.live_alloc_count()
            with pytest.raises(ar.NotSupportedError, match="injected"):
                ops[kind]()
            assert gpu.live_alloc_count() == before  # a failed alloc leaves no entry
        else:
            c = ops[kind]()
            # Other kinds are unaffected meanwhile (on a stream of their own:
            # one queued after ``c`` on its stream would fail with it).
            await gpu.memset_async(spare, 0, 1, stream=side) if kind != "memset" else None
            with pytest.raises(ar.NotSupportedError) as info:
                await c
            err = info.value
            assert (err.backend, err.name, err.code) == ("mock", "MOCK_INJECTED_FAULT", 999)
    # The third one succeeds: the fault was used up.
    made = ops[kind]()
    if isinstance(made, ar.Completion):
        await made
    await gpu.synchronize()
    graph.close()
    cs.close()
    side.close()
    gpu.sweep_unreleased()


async def test_any_fault_and_clear(gpu: ar.Backend) -> None:
    drv: Any = gpu.driver
    ptr = gpu.alloc(8)
    drv.inject_fault("any", ar.DriverError)
    with pytest.raises(ar.DriverError):
        await gpu.memset_async(ptr, 0, 8)
    await gpu.memset_async(ptr, 0, 8)
    drv.inject_fault("any", ar.DriverError, count=5)
    drv.clear_faults()
    await gpu.memset_async(ptr, 0, 8)
    for kind, error, count, exc in (
        ("nope", ar.DriverError, 1, ar.InvalidArgumentError),
        ("memset", ValueError, 1, TypeError),
        ("memset", ar.DriverError, 0, ar.InvalidArgumentError),
        ("memset", ar.DriverError, True, TypeError),
    ):
        with pytest.raises(exc):
            drv.inject_fault(kind, error, count)
    gpu.free(ptr)


async def test_the_copy_fast_path_sees_every_fault_state(gpu: ar.Backend) -> None:
    """A 4 KiB upload takes the mock's fast path: injected faults, their end, a lost
    device and clear_faults() each change what it does."""
    drv: Any = gpu.driver
    ptr = gpu.alloc(4096)
    host = np.arange(4096, dtype=np.uint8)
    drv.inject_fault("copy_h2d", ar.OutOfMemoryError, count=2)
    for _ in range(2):
        with pytest.raises(ar.OutOfMemoryError):
            await gpu.copy_h2d_async(host, ptr)
    await gpu.copy_h2d_async(host, ptr)  # the fault was used up
    drv.inject_fault("copy_h2d", ar.DeviceLostError)
    with pytest.raises(ar.DeviceLostError):
        await gpu.copy_h2d_async(host, ptr)
    with pytest.raises(ar.DeviceLostError, match="lost earlier"):
        await gpu.copy_h2d_async(host, ptr)  # sticky
    drv.clear_faults()
    await gpu.copy_h2d_async(host, ptr)
    assert np.array_equal(await gpu.copy_d2h_async(ptr, np.zeros_like(host)), host)
    gpu.free(ptr)


async def test_device_lost_is_sticky(gpu: ar.Backend) -> None:
    drv: Any = gpu.driver
    ptr = gpu.alloc(8)
    drv.inject_fault("launch", ar.DeviceLostError)
    kern = gpu.kernel(gpu.builtin_module(), "fill_f32")
    with pytest.raises(ar.DeviceLostError):
        await gpu.launch(kern, 1, 1, [np.uint32(1), np.float32(0), ptr])
    launched_at = f"{__file__}:{sys._getframe().f_lineno - 1}"
    for _ in range(3):  # everything after fails too, as on a real device
        with pytest.raises(ar.DeviceLostError, match="lost earlier") as info:
            await gpu.memset_async(ptr, 0, 8)
        # ... naming the call that lost it, and where it was made
        assert f"launch: injected DeviceLostError (at {launched_at})" in str(info.value)
    with pytest.raises(ar.DeviceLostError):
        gpu.alloc(8)
    with pytest.raises(ar.DeviceLostError):
        await gpu.synchronize()
    with pytest.raises(ar.DeviceLostError):
        await gpu.default_stream()
    drv.clear_faults()  # a test can recover the mock
    await gpu.memset_async(ptr, 0, 8)
    gpu.free(ptr)


def test_out_of_memory_past_total_memory() -> None:
    with ar.open_backend("mock", total_memory=1 << 20) as gpu:
        a = gpu.alloc(1 << 19)
        b = gpu.alloc(1 << 19)
        with pytest.raises(ar.OutOfMemoryError, match="1 bytes requested, 0 of 1048576 free") as e:
            gpu.alloc(1)
        assert isinstance(e.value, MemoryError)
        assert gpu.live_alloc_count() == 2 and gpu.device_free_memory() == 0
        gpu.free(a)
        assert gpu.device_free_memory() == 1 << 19
        c = gpu.alloc(1 << 19)
        with pytest.raises(ar.OutOfMemoryError):
            gpu.alloc_managed(1 << 30)
        gpu.free(b)
        gpu.free(c)


def test_redzones_count_against_device_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARUNTIME_REDZONE", "1")
    with ar.open_backend("mock", total_memory=1000) as gpu:
        with pytest.raises(ar.OutOfMemoryError):
            gpu.alloc(1000)  # plus 2 x 256 guard bytes
        p = gpu.alloc(1000 - 512)
        gpu.free(p)


async def test_python_kernels_get_views_and_scalars(gpu: ar.Backend) -> None:
    seen: dict[str, Any] = {}

    def probe(launch: Any, n: Any, scale: Any, raw: Any, buf: Any, view: Any) -> None:
        seen.update(launch=launch, n=n, scale=scale, raw=raw, buf=buf, view=view)
        buf[:] = np.arange(buf.size, dtype=np.uint8)
        view[:4] = 0xEE

    kern = gpu.kernel(gpu.load_module("probe", {"probe": probe}), "probe")
    ptr = gpu.alloc(32)
    other = gpu.alloc(16)
    await gpu.memset_async(other, 0, 16)
    await gpu.launch(
        kern,
        (2, 3),
        (4,),
        [np.uint32(7), np.float32(0.5), b"\x01\x02", ptr, other[4:12]],
        shared_mem=128,
    )
    launch = seen["launch"]
    assert isinstance(launch, ar.LaunchConfig)
    assert (launch.grid, launch.block, launch.shared_mem) == ((2, 3, 1), (4, 1, 1), 128)
    assert type(seen["n"]) is np.uint32 and seen["n"] == 7
    assert type(seen["scale"]) is np.float32
    assert seen["raw"] == b"\x01\x02"
    for name, size in (("buf", 32), ("view", 8)):
        arr = seen[name]
        assert isinstance(arr, np.ndarray) and arr.dtype == np.uint8
        assert arr.flags.writeable and arr.size == size
    out = await gpu.copy_d2h_async(ptr, np.empty(32, np.uint8))
    np.testing.assert_array_equal(out, np.arange(32, dtype=np.uint8))
    got = await gpu.copy_d2h_async(other, bytearray(16))
    assert got == bytes(4) + b"\xee" * 4 + bytes(8)  # only the view's bytes
    gpu.free(ptr)
    gpu.free(other)


async def test_kernel_that_raises_fails_its_completion(gpu: ar.Backend) -> None:
    def boom(launch: Any) -> None:
        raise ZeroDivisionError("kernel bug")

    kern = gpu.kernel(gpu.load_module("boom", {"boom": boom}), "boom")
    with pytest.raises(ar.DriverError, match=r"boom.*ZeroDivisionError") as info:
        await gpu.launch(kern, 1, 1, [])
    assert info.value.name == "MOCK_KERNEL_EXCEPTION"
    if gpu.driver.synchronous:
        assert isinstance(info.value.__cause__, ZeroDivisionError)
    await gpu.synchronize()  # the error was seen; the stream goes on


async def test_builtin_kernels(gpu: ar.Backend) -> None:
    mod = gpu.builtin_module()
    assert gpu.builtin_module() is mod and gpu.has_module("aruntime.vector_ops")
    n = 100
    x, y, z = (gpu.alloc(n * 4) for _ in range(3))
    k = {name: gpu.kernel(mod, name) for name in ("fill_f32", "iota_u32", "add_f32", "scale_f32")}
    await gpu.launch(k["fill_f32"], 1, 128, [np.uint32(n), np.float32(2), x])
    await gpu.launch(k["iota_u32"], 1, 128, [np.uint32(n), np.uint32(5), y])
    got = await gpu.copy_d2h_async(y, np.empty(n, np.uint32))
    np.testing.assert_array_equal(got, np.arange(5, 5 + n, dtype=np.uint32))
    await gpu.launch(k["fill_f32"], 1, 128, [np.uint32(n), np.float32(1), y])
    await gpu.launch(k["add_f32"], 1, 128, [np.uint32(n), x, y, z])
    await gpu.launch(k["scale_f32"], 1, 64, [np.uint32(n), np.float32(10), z])  # 64 < n
    got = await gpu.copy_d2h_async(z, np.empty(n, np.float32))
    np.testing.assert_array_equal(got[:64], 30)
    np.testing.assert_array_equal(got[64:], 3)  # a too-small grid leaves the tail
    with pytest.raises(ar.NotSupportedError):
        gpu.builtin_module("no_such_module")
    for p in (x, y, z):
        gpu.free(p)


async def test_graph_capture_and_replay(gpu: ar.Backend) -> None:
    drv: Any = gpu.driver
    s = gpu.create_stream()
    ptr = gpu.alloc(4 * 16)
    await gpu.memset_async(ptr, 0, 64, stream=s)
    add = gpu.kernel(
        gpu.load_module("inc", {"inc": lambda launch, b: b.view(np.float32).__iadd__(1)}), "inc"
    )
    before = len(drv.call_log)
    with gpu.capture(s) as graph:
        gpu.launch(add, 1, 1, [ptr], stream=s)
        gpu.launch(add, 1, 1, [ptr], stream=s)
        gpu.copy_d2d_async(ptr[:4], ptr[60:], 4, stream=s)
    assert len(drv.call_log) == before  # recorded, not run
    assert graph.op_count == 3 and graph.ready
    for _ in range(3):
        await gpu.launch_graph(graph, stream=s)
    await graph.launch()  # on the default stream
    out = await gpu.copy_d2h_async(ptr, np.empty(16, np.float32), stream=s)
    assert out[0] == 8 and out[1] == 8 and out[15] == 8
    assert len(drv.calls("graph_launch")) == 4 and len(drv.calls("launch")) == 8
    drv.inject_fault("copy_d2d", ar.DriverError)  # a fault inside a replay fails it
    with pytest.raises(ar.DriverError):
        await gpu.launch_graph(graph, stream=s)
    gpu.destroy_graph(graph)
    gpu.destroy_graph(graph)
    assert not graph.ready
    with pytest.raises(ar.ClosedResourceError):
        gpu.launch_graph(graph, stream=s)
    with gpu.capture(s) as empty:
        pass
    assert empty.op_count == 0
    await gpu.launch_graph(empty, stream=s)
    empty.close()
    with pytest.raises(ZeroDivisionError), gpu.capture(s) as aborted:
        gpu.memset_async(ptr, 1, 8, stream=s)
        raise ZeroDivisionError
    assert not aborted.ready and not gpu.stream_is_capturing(s)
    with pytest.raises(ar.CaptureError):
        gpu.end_capture(s)
    ev = gpu.create_event()
    with pytest.raises(ar.CaptureError, match="not supported"), gpu.capture(s):
        gpu.record_event(ev, s)
    ev.close()
    s.close()
    gpu.free(ptr)


async def test_mapped_host_memory_is_zero_copy(gpu: ar.Backend) -> None:
    host = gpu.alloc_host_pinned(64)
    dev = gpu.host_ptr_to_device(host)
    await gpu.memset_async(dev[8:16], 7, 8)
    assert (host[8:16] == 7).all() and host[:8].sum() == 0
    host[0] = 42
    out = await gpu.copy_d2h_async(dev[:1], bytearray(1))
    assert out[0] == 42
    gpu.free_host_pinned(host)


async def test_events_and_priorities(gpu: ar.Backend) -> None:
    low, high = gpu.driver.priority_range()
    s = gpu.create_stream(priority=high)
    assert s.priority == high and low <= high
    a, b = gpu.create_event(timing=True), gpu.create_event(timing=True)
    a.record(s)
    await gpu.memset_async(gpu_ptr := gpu.alloc(8), 0, 8, stream=s)
    b.record(s)
    await b
    assert b.query() and gpu.elapsed_ms(a, b) >= 0
    for h in (a, b, s):
        h.close()
    gpu.free(gpu_ptr)


def test_host_memory_the_machine_cannot_back_is_out_of_memory() -> None:
    huge = dataclasses.replace(H100, max_allocation=1 << 62)
    with ar.open_backend("mock", total_memory=1 << 62, profile=huge) as gpu:
        with pytest.raises(ar.OutOfMemoryError, match="alloc_host_pinned"):
            gpu.alloc_host_pinned(1 << 60)
        with pytest.raises(ar.OutOfMemoryError, match="alloc: the host cannot back"):
            gpu.alloc(1 << 60)  # within total_memory, but numpy cannot back it
        assert gpu.live_alloc_count() == 0


def test_threaded_mock_copies_run_on_the_stream_not_at_enqueue() -> None:
    # The synchronous mock's copy fast path must never apply to the threaded
    # mock: its copies queue behind earlier work on the stream's worker.
    import numpy as np

    import aruntime as ar

    with ar.open_backend("mock", latency=0.05) as gpu:
        stream = gpu.create_stream()
        ptr = gpu.alloc(16)
        gpu.memset_async(ptr, 1, 16, stream=stream)
        copy = gpu.copy_h2d_async(np.full(16, 7, np.uint8), ptr, stream=stream)
        assert not copy.done()
        out = gpu.copy_d2h_async(ptr, np.zeros(16, np.uint8), stream=stream).wait(timeout=30)
        assert (out == 7).all()  # the copy ran after the memset, in stream order
        stream.close()
        gpu.free(ptr)


async def test_a_kernel_fault_is_sticky_and_the_download_raises(gpu: ar.Backend) -> None:
    # As a test would write it: only the download is awaited.  On a GPU the
    # download fails with the fault's illegal address; it must not return
    # stale data on the mock either.
    buf = gpu.alloc(16)
    await gpu.copy_h2d_async(np.arange(4, dtype=np.float32), buf)
    kern = gpu.kernel(gpu.builtin_module("vector_ops"), "scale_f32")
    gpu.launch(kern, 4096, 256, [np.uint32(1 << 20), np.float32(2), buf])  # past the end
    # The download fails with "lost earlier", or, on the threaded mock when
    # its worker had not yet run the kernel at enqueue, with the fault itself.
    with pytest.raises(ar.DeviceLostError) as info:
        await gpu.copy_d2h_async(buf, np.empty(4, np.float32))
    message = str(info.value)
    assert "scale_f32" in message and "out-of-bounds" in message, message
    assert f"launched at {__file__}:" in message, message  # the user's launch line
    with pytest.raises(ar.DeviceLostError):
        gpu.alloc(8)
    gpu.driver.clear_faults()  # type: ignore[attr-defined]
    # The download named the launch's failure, so it was seen: synchronize()
    # does not raise it again (stream order, DESIGN.md section 4).
    await gpu.synchronize()
    gpu.free(buf)


async def test_memset_into_reused_host_mapped_alias_reaches_the_new_buffer() -> None:
    """The memset path caches its view of device memory per range; freeing pinned memory
    hands its device alias to the next mapping, which must not get the old buffer's view."""
    async with ar.open_backend("mock") as gpu:
        first = gpu.alloc_host_pinned(64)
        alias = gpu.host_ptr_to_device(first)
        await gpu.memset_async(alias, 1, 64)
        assert bytes(first) == b"\x01" * 64
        gpu.free_host_pinned(first)
        second = gpu.alloc_host_pinned(64)
        again = gpu.host_ptr_to_device(second)
        assert again.address == alias.address  # the alias was handed on
        await gpu.memset_async(again, 2, 64)
        assert bytes(second) == b"\x02" * 64
        gpu.free_host_pinned(second)


def test_the_default_profile_is_an_h100s() -> None:
    with ar.open_backend("mock") as gpu:
        profile = gpu.driver.profile  # type: ignore[attr-defined]
    assert profile is H100
    assert (profile.max_shared_mem, profile.max_shared_mem_optin) == (48 * 1024, 227 * 1024)
    assert profile.max_block_threads == 1024 and profile.alloc_alignment == 256


def test_a_smaller_profile_is_enforced_at_the_launch_and_the_alloc() -> None:
    small = dataclasses.replace(
        H100,
        name="a small part",
        max_shared_mem=1024,
        max_shared_mem_optin=2048,
        max_block_threads=128,
        max_grid=(8, 8, 8),
        max_allocation=4096,
    )
    with ar.open_backend("mock", profile=small) as gpu:
        kern = gpu.kernel(gpu.builtin_module(), "iota_u32")
        ptr = gpu.alloc(4096)
        args = [np.uint32(0), np.uint32(0), ptr]
        gpu.launch(kern, 8, 128, args, shared_mem=1024).wait()
        gpu.launch(kern, 8, 128, args, shared_mem=2048).wait()  # the opt-in
        with pytest.raises(
            ar.InvalidArgumentError, match=r"shared_mem 2049 .* 2048 .*more than 1024 .*small"
        ):
            gpu.launch(kern, 1, 1, args, shared_mem=2049)
        with pytest.raises(ar.InvalidArgumentError, match=r"block of 256 threads .* 128"):
            gpu.launch(kern, 1, (16, 16), args)
        with pytest.raises(ar.InvalidArgumentError, match=r"grid\[0\] = 9 is outside 1\.\.8"):
            gpu.launch(kern, 9, 1, args)
        with pytest.raises(
            ar.InvalidArgumentError, match=r"alloc: 4097 bytes .* 4096 bytes .*small"
        ):
            gpu.alloc(4097)
        gpu.free(ptr)
    with pytest.raises(TypeError, match="profile must be a DeviceProfile"):
        ar.open_backend("mock", profile="h100")


def test_a_freed_address_is_reused_by_the_next_allocation_of_its_size(gpu: ar.Backend) -> None:
    first = gpu.alloc(1000)
    address = int(first)
    gpu.free(first)
    again = gpu.alloc(1000)  # the same 1024-byte slot, as a real allocator reuses it
    assert int(again) == address
    gpu.copy_h2d(np.full(1000, 7, np.uint8), again)
    other = gpu.alloc(4096)  # another size: a slot of its own
    assert int(other) != address and int(other) % 256 == 0
    out = np.zeros(1000, np.uint8)
    gpu.copy_d2h(again, out)
    assert (out == 7).all()
    gpu.free(again)
    gpu.free(other)


def test_freeing_the_newest_allocation_first_is_not_quadratic(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 20,000 frees newest first took about 50 s when each one walked the
    # backend's live resources (allocations included) to find its streams.
    # No wall-clock bound (a shared machine's timings vary): a free must not
    # ask the registry for every live resource, only for its streams.
    with ar.open_backend("mock") as gpu:
        ptrs = [gpu.alloc(256) for _ in range(2_000)]

        def walked(self: object) -> None:
            raise AssertionError("free() walked every live resource")

        monkeypatch.setattr(_resources.Resources, "live", walked)
        for ptr in reversed(ptrs):
            gpu.free(ptr)
        monkeypatch.undo()
        assert gpu.live_alloc_count() == 0


async def test_raw_pointer_bytes_are_the_address_as_on_the_sims(gpu: ar.Backend) -> None:
    kern = gpu.kernel(gpu.builtin_module(), "scale_f32")
    ptr = gpu.alloc(64)
    await gpu.copy_h2d_async(np.arange(16, dtype=np.float32), ptr)
    raw = int(ptr.offset(16)).to_bytes(8, "little")  # elements 4.. of the buffer
    await gpu.launch(kern, 1, 64, [np.uint32(4), np.float32(2), raw])
    out = await gpu.copy_d2h_async(ptr, np.empty(16, np.float32))
    want = np.arange(16, dtype=np.float32)
    want[4:8] *= 2
    np.testing.assert_array_equal(out, want)
    # The view runs to the allocation's end, and no further: past it faults.
    with pytest.raises(ar.DeviceLostError, match="out-of-bounds"):
        await gpu.launch(kern, 1, 64, [np.uint32(13), np.float32(2), raw])
    gpu.free(ptr)


async def test_raw_bytes_naming_no_memory_at_a_pointer_parameter_lose_the_device(
    gpu: ar.Backend,
) -> None:
    kern = gpu.kernel(gpu.builtin_module(), "scale_f32")
    raw = (0x1000).to_bytes(8, "little")
    with pytest.raises(ar.DeviceLostError, match=r"address 0x1000 as raw argument bytes"):
        await gpu.launch(kern, 1, 1, [np.uint32(1), np.float32(2), raw])
    with pytest.raises(ar.DeviceLostError, match="lost earlier"):  # sticky, as on a device
        gpu.alloc(16)
    gpu.driver.clear_faults()  # type: ignore[attr-defined]


async def test_raw_bytes_elsewhere_stay_bytes_unless_they_name_memory(gpu: ar.Backend) -> None:
    seen: list[Any] = []
    kern = gpu.kernel(gpu.load_module("probe", {"probe": lambda _l, *a: seen.extend(a)}), "probe")
    ptr = gpu.alloc(32)
    await gpu.launch(kern, 1, 1, [b"\x01" * 8, int(ptr).to_bytes(8, "little")])
    assert seen[0] == b"\x01" * 8
    assert isinstance(seen[1], np.ndarray) and seen[1].size == 32
    gpu.free(ptr)


async def test_a_misaligned_access_in_a_builtin_kernel_loses_the_device(gpu: ar.Backend) -> None:
    # As on CUDA (CUDA_ERROR_MISALIGNED_ADDRESS, 716), sticky like an illegal address.
    kern = gpu.kernel(gpu.builtin_module(), "scale_f32")
    ptr = gpu.alloc(64)
    with pytest.raises(ar.DeviceLostError, match="4-byte access 1 bytes past") as info:
        await gpu.launch(kern, 1, 4, [np.uint32(4), np.float32(2), ptr.offset(1)])
    assert info.value.code == 716 and info.value.name == "MOCK_MISALIGNED_ADDRESS"
    with pytest.raises(ar.DeviceLostError, match="lost earlier"):
        await gpu.memset_async(ptr, 0, 64)
    gpu.driver.clear_faults()  # type: ignore[attr-defined]
    await gpu.launch(kern, 1, 4, [np.uint32(4), np.float32(2), ptr.offset(4)])  # aligned
    gpu.free(ptr)

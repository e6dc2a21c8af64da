"""Argument validation: what is rejected, with which error and which message."""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
import pytest

import aruntime as ar

from .helpers import Gate

pytestmark = pytest.mark.anyio


@pytest.fixture
def gpu(mock_backend: ar.Backend) -> ar.Backend:
    return mock_backend


@pytest.fixture
def other() -> Iterator[ar.Backend]:
    with ar.open_backend("mock") as b:
        yield b


def test_invalid_argument_error_is_a_value_error() -> None:
    assert issubclass(ar.InvalidArgumentError, ValueError)
    assert issubclass(ar.InvalidArgumentError, ar.AruntimeError)
    assert issubclass(ar.OutOfMemoryError, MemoryError)
    for cls in (ar.OutOfMemoryError, ar.NotSupportedError, ar.DeviceLostError):
        assert issubclass(cls, ar.DriverError)


@pytest.mark.parametrize("nbytes", [0, -1, -(2**40)])
def test_alloc_sizes(gpu: ar.Backend, nbytes: int) -> None:
    for fn in (gpu.alloc, gpu.alloc_managed, gpu.alloc_arena, gpu.alloc_host_pinned):
        with pytest.raises(ar.InvalidArgumentError, match=f"{fn.__name__}: nbytes must be >= 1"):
            fn(nbytes)


@pytest.mark.parametrize("nbytes", [1.0, "8", None, True, np.float32(8), [8]])
def test_alloc_types(gpu: ar.Backend, nbytes: object) -> None:
    with pytest.raises(TypeError, match="alloc: nbytes must be an int"):
        gpu.alloc(nbytes)  # type: ignore[arg-type]


def test_alloc_accepts_numpy_ints(gpu: ar.Backend) -> None:
    p = gpu.alloc(np.uint16(100))  # type: ignore[arg-type]
    assert p.nbytes == 100 and isinstance(p.nbytes, int)
    gpu.free(p)


def test_messages_name_function_value_and_limit(gpu: ar.Backend) -> None:
    ptr = gpu.alloc(4096)
    msg = "copy_h2d_async: 8192 bytes past the end of a 4096-byte allocation"
    with pytest.raises(ar.InvalidArgumentError, match=re.escape(msg)):
        gpu.copy_h2d_async(np.zeros(12288, np.uint8), ptr)
    msg = "copy_d2h_async: 100 bytes past the end of a 96-byte view (offset 4000)"
    with pytest.raises(ar.InvalidArgumentError, match=re.escape(msg)):
        gpu.copy_d2h_async(ptr[4000:], np.zeros(196, np.uint8))
    with pytest.raises(ar.InvalidArgumentError, match=r"memset_async: value 256 is outside 0\.\."):
        gpu.memset_async(ptr, 256, 1)
    with pytest.raises(ar.InvalidArgumentError, match="block of 2048 threads exceeds"):
        gpu.launch(gpu.kernel(gpu.builtin_module(), "saxpy"), 1, (32, 64), [])
    gpu.free(ptr)


def test_memset_checks_its_value_and_count_at_the_edges(gpu: ar.Backend) -> None:
    """The plain-int fast paths accept exactly what the full checks accept."""
    ptr = gpu.alloc(16)
    for value in (0, 255, np.uint8(7), np.int64(255)):
        gpu.memset_async(ptr, value, 16).wait()  # type: ignore[arg-type]
    for bad, error, text in (
        (-1, ar.InvalidArgumentError, "value -1 is outside 0..255"),
        (256, ar.InvalidArgumentError, "value 256 is outside 0..255"),
        (True, TypeError, "value must be an int in 0..255, got bool"),
        (1.0, TypeError, "value must be an int in 0..255, got float"),
    ):
        with pytest.raises(error, match=re.escape(f"memset_async: {text}")):
            gpu.memset_async(ptr, bad, 16)  # type: ignore[arg-type]
    for bad_count, error, text in (
        (-1, ar.InvalidArgumentError, "nbytes must be >= 0, got -1"),
        (2**63, ar.InvalidArgumentError, f"nbytes {2**63} exceeds the 64-bit limit"),
        (False, TypeError, "nbytes must be an int, got bool"),
    ):
        with pytest.raises(error, match=re.escape(f"memset_async: {text}")):
            gpu.memset_async(ptr, 1, bad_count)  # type: ignore[arg-type]
    with pytest.raises(ar.InvalidArgumentError, match="memset_async: 1 bytes past the end"):
        gpu.memset_async(ptr, 1, 17)
    gpu.free(ptr)


def test_zero_byte_copies_are_no_ops(gpu: ar.Backend) -> None:
    ptr = gpu.alloc(16)
    log = gpu.driver.call_log
    before = len(log)
    assert gpu.copy_h2d_async(b"", ptr).done()
    assert gpu.copy_d2h_async(ptr, bytearray()).wait() == bytearray()
    assert gpu.copy_d2d_async(ptr, ptr, 0).done()  # no overlap complaint for 0 bytes
    assert gpu.memset_async(ptr, 1, 0).done()
    assert gpu.copy_d2d_2d_async(ptr, 4, ptr, 4, 0, 4).done()
    assert gpu.copy_d2d_2d_async(ptr, 4, ptr, 4, 4, 0).done()
    assert len(log) == before  # nothing reached the driver
    gpu.free(ptr)


def test_pointer_checks(gpu: ar.Backend, other: ar.Backend) -> None:
    mine = gpu.alloc(64)
    foreign = other.alloc(64)
    with pytest.raises(ar.InvalidArgumentError, match="another backend"):
        gpu.memset_async(foreign, 0, 8)
    with pytest.raises(ar.InvalidArgumentError, match="another backend"):
        gpu.copy_d2d_async(mine, foreign, 8)
    with pytest.raises(ar.InvalidArgumentError, match="another backend"):
        gpu.free(foreign)
    with pytest.raises(TypeError, match="DevicePtr"):
        gpu.memset_async(int(mine), 0, 8)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="DevicePtr"):
        gpu.copy_h2d_async(b"x", np.zeros(1))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got a DevicePtr"):
        gpu.copy_h2d_async(mine, mine)
    with pytest.raises(ar.InvalidArgumentError, match="view at offset 8"):
        gpu.free(mine[8:])
    with pytest.raises(ar.InvalidArgumentError, match="overlap"):
        gpu.copy_d2d_async(mine[0:32], mine[16:48], 20)
    gpu.copy_d2d_async(mine[0:16], mine[16:32], 16)  # adjacent is fine
    arena = gpu.alloc_arena(64)
    with pytest.raises(ar.InvalidArgumentError, match="arena memory"):
        gpu.free(arena)
    with pytest.raises(ar.InvalidArgumentError, match="device memory"):
        gpu.free_arena(mine)
    gpu.free_arena(arena)
    gpu.free(mine)
    with pytest.raises(ar.InvalidArgumentError, match="was freed"):
        gpu.memset_async(mine[4:], 0, 4)
    other.free(foreign)


def test_2d_copy_checks(gpu: ar.Backend) -> None:
    a = gpu.alloc(100)
    with pytest.raises(ar.InvalidArgumentError, match="width_bytes 20 exceeds src_pitch 10"):
        gpu.copy_d2d_2d_async(a, 10, a, 30, 20, 2)
    with pytest.raises(ar.InvalidArgumentError, match="exceeds dst_pitch"):
        gpu.copy_d2d_2d_async(a, 30, a, 10, 20, 2)
    with pytest.raises(ar.InvalidArgumentError, match="past the end"):
        gpu.copy_d2d_2d_async(a, 30, a, 30, 20, 4)  # 3*30+20 = 110 > 100
    with pytest.raises(ar.InvalidArgumentError, match="height must be >= 0"):
        gpu.copy_d2d_2d_async(a, 30, a, 30, 20, -1)
    gpu.free(a)


def test_host_buffer_kinds(gpu: ar.Backend) -> None:
    ptr = gpu.alloc(64)
    gpu.copy_h2d(np.array(3.0), ptr)  # 0-d arrays are 8 bytes of host memory
    rec = np.zeros(2, dtype=[("a", "<i4"), ("b", "<f8")])
    rec["a"] = 7
    gpu.copy_h2d(rec, ptr)
    back = np.zeros_like(rec)
    gpu.copy_d2h(ptr, back)
    assert back["a"].tolist() == [7, 7]
    with pytest.raises(ar.InvalidArgumentError, match="Python objects"):
        gpu.copy_h2d_async(np.array([None, 1], dtype=object), ptr)
    released = memoryview(bytearray(8))
    released.release()
    with pytest.raises(ar.InvalidArgumentError, match="released"):
        gpu.copy_h2d_async(released, ptr)
    with pytest.raises(ar.InvalidArgumentError, match="read-only"):
        gpu.copy_d2h_async(ptr, memoryview(bytes(8)))
    fortran = np.zeros((4, 4), order="F")
    with pytest.raises(ar.InvalidArgumentError, match="C-contiguous"):
        gpu.copy_h2d_async(fortran, ptr)
    for bad in ("str", 5, 2.0, 1j, None, [1, 2]):
        with pytest.raises(TypeError):
            gpu.copy_h2d_async(bad, ptr)
    gpu.free(ptr)


def test_callers_memoryview_is_not_released(async_mock_backend: ar.Backend) -> None:
    gpu = async_mock_backend
    ptr = gpu.alloc(16)
    src = memoryview(bytearray(b"abcdefghijklmnop"))
    gpu.copy_h2d_async(src, ptr).wait(30)
    assert src.tobytes() == b"abcdefghijklmnop"  # still usable
    dst = memoryview(bytearray(16))
    out = gpu.copy_d2h_async(ptr, dst).wait(30)
    assert out is dst and dst.tobytes() == b"abcdefghijklmnop"
    gpu.free(ptr)


def test_host_buffer_locked_against_resize_until_the_op_finishes(
    async_mock_backend: ar.Backend,
) -> None:
    gpu = async_mock_backend
    ptr = gpu.alloc(16)
    gate = Gate(gpu)
    gate.launch()
    buf = bytearray(16)
    c = gpu.copy_d2h_async(ptr, buf)
    with pytest.raises(BufferError):
        buf.extend(b"more")  # the device may still write it
    gate.open()
    c.wait(30)
    buf.extend(b"more")  # released once the op finished
    assert len(buf) == 20
    gpu.free(ptr)


def test_kernel_argument_checks(gpu: ar.Backend) -> None:
    kern = gpu.kernel(gpu.builtin_module(), "fill_f32")
    y = gpu.alloc(64)
    for bad, name in ((5, "int"), (2.0, "float"), (True, "bool"), (1j, "complex")):
        with pytest.raises(TypeError, match=f"bare Python {name}.*np.uint32"):
            gpu.launch(kern, 1, 16, [bad, np.float32(1), y])
    with pytest.raises(TypeError, match="no fixed C layout"):
        gpu.launch(kern, 1, 16, [np.str_("x"), np.float32(1), y])
    with pytest.raises(TypeError, match="args must be a list or tuple"):
        gpu.launch(kern, 1, 16, np.uint32(1))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="kernel arguments are"):
        gpu.launch(kern, 1, 16, [object()])
    released = memoryview(b"1234")
    released.release()
    with pytest.raises(ar.InvalidArgumentError):
        gpu.launch(kern, 1, 16, [released])
    with pytest.raises(ar.InvalidArgumentError, match=r"args\[2\].*freed"):
        freed = gpu.alloc(8)
        gpu.free(freed)
        gpu.launch(kern, 1, 16, [np.uint32(1), np.float32(1), freed])
    gpu.launch(kern, (1,), [16], (np.uint32(16), np.float32(2), y)).wait()
    gpu.free(y)


@pytest.mark.parametrize(
    ("grid", "block", "error"),
    [
        (0, 1, ar.InvalidArgumentError),
        (1, 0, ar.InvalidArgumentError),
        ((1, 65536), 1, ar.InvalidArgumentError),
        (2**31, 1, ar.InvalidArgumentError),
        (1, (1, 1, 65), ar.InvalidArgumentError),
        (1, 1025, ar.InvalidArgumentError),
        ((1, 1, 1, 1), 1, TypeError),
        ((), 1, TypeError),
        (1.0, 1, TypeError),
        ((1, "2"), 1, TypeError),
        (None, 1, TypeError),
    ],
)
def test_launch_geometry(gpu: ar.Backend, grid: object, block: object, error: type) -> None:
    kern = gpu.kernel(gpu.builtin_module(), "fill_f32")
    with pytest.raises(error):
        gpu.launch(kern, grid, block, [])  # type: ignore[arg-type]


def test_shared_mem_limits(gpu: ar.Backend) -> None:
    kern = gpu.kernel(gpu.builtin_module(), "fill_f32")
    with pytest.raises(ar.InvalidArgumentError, match="shared_mem"):
        gpu.launch(kern, 1, 1, [], shared_mem=1 << 30)
    with pytest.raises(ar.InvalidArgumentError):
        gpu.launch(kern, 1, 1, [], shared_mem=-1)


def test_handles_of_other_backends_and_closed_handles(gpu: ar.Backend, other: ar.Backend) -> None:
    ptr = gpu.alloc(8)
    s_other = other.create_stream()
    e_other = other.create_event()
    k_other = other.kernel(other.builtin_module(), "fill_f32")
    with other.capture(s_other) as g_other:
        pass
    for call in (
        lambda: gpu.memset_async(ptr, 0, 8, stream=s_other),
        lambda: gpu.synchronize(s_other),
        lambda: gpu.record_event(e_other),
        lambda: gpu.event_synchronize(e_other),
        lambda: gpu.destroy_event(e_other),
        lambda: gpu.launch(k_other, 1, 1, []),
        lambda: gpu.launch_graph(g_other),
        lambda: gpu.destroy_graph(g_other),
        lambda: gpu.kernel(other.builtin_module(), "fill_f32"),
    ):
        with pytest.raises(ar.InvalidArgumentError, match="another backend"):
            call()
    s = gpu.create_stream()
    e = gpu.create_event()
    s.close()
    e.close()
    with pytest.raises(ar.ClosedResourceError, match="memset_async"):
        gpu.memset_async(ptr, 0, 8, stream=s)
    with pytest.raises(ar.ClosedResourceError):
        gpu.record_event(e)
    with pytest.raises(ar.ClosedResourceError):
        gpu.stream_wait_event(gpu.default_stream(), e)
    with pytest.raises(TypeError, match="stream must be a Stream"):
        gpu.synchronize("default")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="priority"):
        gpu.create_stream(priority=99)
    with pytest.raises(TypeError):
        gpu.create_stream(priority=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        gpu.create_event(timing=1)  # type: ignore[arg-type]
    g_other.close()
    e_other.close()
    s_other.close()
    gpu.free(ptr)


def test_pinned_host_buffer_rules(gpu: ar.Backend, other: ar.Backend) -> None:
    buf = gpu.alloc_host_pinned(64)
    with pytest.raises(TypeError, match="HostBuffer"):
        gpu.free_host_pinned(np.zeros(64, np.uint8))  # type: ignore[arg-type]
    with pytest.raises(ar.InvalidArgumentError, match="not allocated by"):
        other.free_host_pinned(buf)
    with pytest.raises(ar.InvalidArgumentError, match="not a view"):
        gpu.free_host_pinned(buf[8:])
    with pytest.raises(ar.InvalidArgumentError, match="not a view"):
        gpu.free_host_pinned(buf[:8])  # starts at the same address, still a view
    with pytest.raises(ar.InvalidArgumentError, match="C-contiguous"):
        gpu.host_ptr_to_device(buf[::2])
    mapped = gpu.host_ptr_to_device(buf[16:32])
    assert mapped.nbytes == 16
    with pytest.raises(ar.InvalidArgumentError):
        gpu.free(mapped)  # mapped memory goes with its host buffer
    assert (buf + 1)._record is None  # arithmetic results are ordinary memory
    assert buf.view(np.float32).backend is gpu
    gpu.free_host_pinned(buf)
    assert buf.freed and buf[4:].freed
    with pytest.raises(ar.InvalidArgumentError, match="freed"):
        gpu.host_ptr_to_device(buf)
    with pytest.raises(ar.InvalidArgumentError, match="freed"):
        gpu.memset_async(mapped, 0, 4)
    dev = gpu.alloc(64)
    for host in (buf, buf[4:]):  # the copies' fast path for pinned memory checks it too
        with pytest.raises(ar.InvalidArgumentError, match="HostBuffer was freed"):
            gpu.copy_h2d_async(host, dev[: host.nbytes])
        with pytest.raises(ar.InvalidArgumentError, match="HostBuffer was freed"):
            gpu.copy_d2h_async(dev[: host.nbytes], host)
    gpu.free(dev)


def test_module_checks(gpu: ar.Backend) -> None:
    with pytest.raises(TypeError, match="module image"):
        gpu.load_module("m", b"\x7fELF")
    with pytest.raises(ar.InvalidArgumentError, match="empty"):
        gpu.load_module("", {})
    with pytest.raises(TypeError):
        gpu.load_module(3, {})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not callable"):
        gpu.load_module("m1", {"k": 3})
    m = gpu.load_module("m2", {"k": lambda launch: None})
    assert gpu.has_module("m2") and not gpu.has_module("nope")
    with pytest.raises(ar.InvalidArgumentError, match="already loaded"):
        gpu.load_module("m2", {})
    with pytest.raises(ar.InvalidArgumentError, match="no kernel 'zz'"):
        gpu.kernel(m, "zz")
    with pytest.raises(ar.InvalidArgumentError, match="no module named"):
        gpu.kernel("nope", "k")
    assert gpu.kernel("m2", "k").name == "k"
    with pytest.raises(TypeError):
        gpu.kernel(m, 5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        gpu.launch("k", 1, 1, [])  # type: ignore[arg-type]


def test_a_builtin_modules_short_name_says_what_to_pass(gpu: ar.Backend) -> None:
    module = gpu.builtin_module("vector_ops")
    with pytest.raises(ar.InvalidArgumentError) as caught:
        gpu.kernel("vector_ops", "saxpy")
    text = str(caught.value)
    assert "builtin_module('vector_ops')" in text and "'aruntime.vector_ops'" in text, text
    assert gpu.kernel(module.name, "saxpy").name == "saxpy"
    with pytest.raises(ar.InvalidArgumentError, match=r"loaded: 'aruntime\.vector_ops'"):
        gpu.kernel("other", "saxpy")


def test_cuda_load_module_takes_ptx_text_as_a_str() -> None:
    from pathlib import Path

    try:
        cuda = ar.open_backend("cuda-sim")
    except ar.BackendUnavailableError as exc:
        pytest.skip(f"cuda-sim unavailable: {exc}")
    ptx = (Path(ar.__file__).parent / "kernels" / "vector_ops.ptx").read_text()
    with cuda:
        kernel = cuda.kernel(cuda.load_module("mine", ptx), "fill_f32")
        ptr = cuda.alloc(256 * 4)
        cuda.launch(kernel, 1, 256, [np.uint32(256), np.float32(3), ptr]).wait()
        out = cuda.copy_d2h(ptr, np.empty(256, np.float32))
        assert (out == 3).all()
        cuda.free(ptr)


def test_every_method_of_a_closed_backend_raises_closed() -> None:
    from .test_fuzz import ENTRY_POINTS, NO_ARGS

    gpu = ar.open_backend("mock")
    gpu.close()
    exempt = {
        # Idempotent releases and pure queries answer without the device.
        "destroy_event",
        "destroy_graph",
        "abort_capture_if_active",
        "has_module",
        "total_memory",
        "sm_count",
        "live_bytes",
        "live_alloc_count",
        "live_allocations",
        "alloc_report",
        "statistics",
    }
    for name, (npos, _) in ENTRY_POINTS.items():
        if name in exempt:
            continue
        with pytest.raises(ar.ClosedResourceError, match=name):
            required = {"scale": 1.0} if name == "attention" else {}  # keyword-only, no default
            result = getattr(gpu, name)(*([None] * npos), **required)
            if name == "capture":
                with result:
                    pass
    for name in NO_ARGS:
        if name not in exempt:
            with pytest.raises(ar.ClosedResourceError):
                getattr(gpu, name)()


@pytest.mark.parametrize(
    "cls", [ar.DriverError, ar.OutOfMemoryError, ar.NotSupportedError, ar.DeviceLostError]
)
def test_driver_errors_pickle_with_their_attributes(cls: type[ar.DriverError]) -> None:
    import pickle

    err = cls("boom", backend="mock", code=7, name="MOCK_X", function="alloc")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is cls and str(back) == "boom"
    assert (back.backend, back.code, back.name, back.function) == ("mock", 7, "MOCK_X", "alloc")


def test_errors_from_a_mock_fault_carry_driver_attributes(gpu: ar.Backend) -> None:
    gpu.driver.inject_fault("alloc", ar.OutOfMemoryError)  # type: ignore[attr-defined]
    with pytest.raises(ar.OutOfMemoryError) as info:
        gpu.alloc(8)
    err = info.value
    assert (err.backend, err.function, err.name) == ("mock", "alloc", "MOCK_INJECTED_FAULT")


@pytest.mark.parametrize("grid", [1.0, True, np.int64(1)])
def test_a_checked_geometry_is_no_pass_for_equal_values_of_other_types(
    gpu: ar.Backend, grid: object
) -> None:
    """A launch's (grid, block) is checked once and kept: 1.0, True and np.int64(1) equal 1
    and hash alike, but each still goes through the full check."""
    kern = gpu.kernel(gpu.builtin_module(), "fill_f32")
    y = gpu.alloc(64)
    args = [np.uint32(16), np.float32(2), y]
    gpu.launch(kern, 1, 16, args).wait()  # (1, 16): checked, and kept
    try:
        gpu.launch(kern, grid, 16, args).wait()  # type: ignore[arg-type]
    except TypeError:
        assert not isinstance(grid, np.integer), "a numpy int is a valid grid"
    else:
        assert isinstance(grid, np.integer), f"grid={grid!r} was let through"
    with pytest.raises(ar.InvalidArgumentError, match="shared_mem"):
        gpu.launch(kern, 1, 16, args, shared_mem=1 << 30)
    gpu.free(y)

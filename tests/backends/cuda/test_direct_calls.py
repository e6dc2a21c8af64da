"""The CUDA driver's direct calls: memset_d8, memcpy_d2d, small memcpy_h2d, launch,
graph_launch and stream_finished in C.

``_CopyOps._install_direct_calls`` puts a DirectCall (ffi/core/direct.c)
over each of those methods.  Its plain case (a live driver, a thread in the
driver's context, int arguments, a host copy the driver never stages) is one
C call; every other case is the Python method.  These tests hold that both
roads give the same bytes and the same errors, and that each case the C
must not take reaches the method.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aruntime as ar
from aruntime import _enqueue
from aruntime._driver import DriverStream, LaunchConfig
from aruntime._streamstate import StreamState
from aruntime._submit import Marking
from aruntime.backends import cuda
from aruntime.backends._staging import DIRECT_PAGEABLE_H2D_MAX
from aruntime.backends.cuda import _base
from aruntime.backends.cuda._copies import _CopyOps
from aruntime.backends.cuda._driver import CudaDriver
from aruntime.backends.cuda._params import ParamBlock

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def driver() -> Iterator[CudaDriver]:
    if not _enqueue.enabled():
        pytest.skip("the compiled enqueue is not built or is switched off")
    opened: Any = cuda.open_driver(0, sim=True)
    try:
        yield opened
    finally:
        opened.close()


def _sync(driver: CudaDriver, stream: DriverStream) -> None:
    event = driver.event_create(False)
    driver.event_record(event, stream)
    driver.event_wait(event)
    driver.event_destroy(event)


def _download(driver: CudaDriver, address: int, n: int, stream: DriverStream) -> np.ndarray:
    """The device bytes, through the Python method into pinned memory (no direct call)."""
    host, view = driver.host_alloc(n)
    try:
        _CopyOps.memcpy_d2h(driver, address, view, stream)
        _sync(driver, stream)
        return np.frombuffer(view, np.uint8).copy()
    finally:
        view.release()
        driver.host_free(host)


def _fails_alike(direct: Callable[[], object], method: Callable[[], object]) -> ar.DriverError:
    """The DirectCall's error, after checking the Python method raises the same one."""
    with pytest.raises(ar.DriverError) as by_c:
        direct()
    with pytest.raises(ar.DriverError) as by_method:
        method()
    assert type(by_c.value) is type(by_method.value)
    assert str(by_c.value) == str(by_method.value)
    return by_c.value


def _child(code: str, **env: str) -> str:
    """What ``code`` prints, run in a fresh interpreter from the checkout with ``env`` set."""
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_each_method_is_a_direct_call_naming_its_function(driver: CudaDriver) -> None:
    symbols = {
        "memset_d8": "cuMemsetD8Async",
        "memcpy_d2d": "cuMemcpyDtoDAsync_v2",
        "memcpy_h2d": "cuMemcpyHtoDAsync_v2",
        "launch": "cuLaunchKernel",
        "graph_launch": "cuGraphLaunch",
        "stream_finished": "cuStreamQuery",
    }
    for method, symbol in symbols.items():
        call = vars(driver)[method]
        assert type(call).__name__ == "DirectCall"
        assert call.name == symbol
        assert repr(call) == f"<DirectCall {method} -> {symbol}>"
        assert getattr(driver, method) is call  # one object, not a bound method per read
    assert "memcpy_d2h" not in vars(driver)  # it asks whether the memory is pinned first


def test_a_stream_carries_its_handle_as_an_int(driver: CudaDriver) -> None:
    stream: Any = driver.stream_create(0)
    try:
        assert stream.address == int(driver._ffi.cast("uintptr_t", stream.handle))
        assert stream.address != 0
    finally:
        driver.stream_destroy(stream)


def test_both_roads_write_the_same_bytes(driver: CudaDriver) -> None:
    """Each op by its DirectCall and by its Python method, into two buffers: equal."""
    stream = driver.stream_create(0)
    n = 4096
    direct, method = driver.mem_alloc(n), driver.mem_alloc(n)
    source = np.arange(n, dtype=np.uint32).astype(np.uint8)
    try:
        for target, memset, h2d, d2d in (
            (direct, driver.memset_d8, driver.memcpy_h2d, driver.memcpy_d2d),
            (
                method,
                lambda *a: _CopyOps.memset_d8(driver, *a),
                lambda *a: _CopyOps.memcpy_h2d(driver, *a),
                lambda *a: _CopyOps.memcpy_d2d(driver, *a),
            ),
        ):
            memset(target, 0x5A, n, stream)
            h2d(memoryview(source[:1024]), target + 1024, stream)
            d2d(target + 1024, target + 3072, 512, stream)
            memset(target + 100, 0x1FF, 7, stream)  # the value's low byte, as the method does
        got_direct = _download(driver, direct, n, stream)
        got_method = _download(driver, method, n, stream)
        np.testing.assert_array_equal(got_direct, got_method)
        expected = np.full(n, 0x5A, np.uint8)
        expected[1024:2048] = source[:1024]
        expected[3072:3584] = source[:512]
        expected[100:107] = 0xFF
        np.testing.assert_array_equal(got_direct, expected)
    finally:
        _sync(driver, stream)
        driver.mem_free(direct)
        driver.mem_free(method)
        driver.stream_destroy(stream)


def _graph_frames(run: Any) -> list[str]:
    """The driver's own ``graph_launch`` frames that ``run()`` makes."""
    ran: list[str] = []

    def profile(frame: Any, event: str, arg: object) -> None:
        code = frame.f_code
        if event == "call" and code.co_name == "graph_launch":
            ran.append(Path(code.co_filename).name)

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return ran


def test_a_replay_is_a_direct_call_unless_its_graph_keeps_memory(driver: CudaDriver) -> None:
    """A graph that is only device work replays in C; one that staged a pageable copy
    replays through the method, which ties its staging memory to the stream."""
    call = vars(driver)["graph_launch"]
    assert type(call).__name__ == "DirectCall" and call.name == "cuGraphLaunch"
    stream = driver.stream_create(0)
    dev = driver.mem_alloc(64)
    back = bytearray(64)
    graphs: list[Any] = []
    try:
        driver.capture_begin(stream)
        driver.memset_d8(dev, 0x11, 64, stream)
        plain: Any = driver.capture_end(stream)
        graphs.append(plain)
        driver.capture_begin(stream)
        driver.memcpy_d2h(dev, memoryview(back), stream)  # pageable: staged, kept by the graph
        staged: Any = driver.capture_end(stream)
        graphs.append(staged)
        assert plain.direct == int(driver._ffi.cast("uintptr_t", plain.exec)) != 0
        assert staged.direct == 0 and staged.resources

        driver.memset_d8(dev, 0, 64, stream)
        assert _graph_frames(lambda: driver.graph_launch(plain, stream)) == []
        assert stream not in plain.streams  # nothing to track
        assert _graph_frames(lambda: driver.graph_launch(staged, stream)) == ["_graphs.py"]
        assert stream in staged.streams and staged in stream.graphs
        _sync(driver, stream)
        assert back == bytes([0x11]) * 64
        np.testing.assert_array_equal(_download(driver, dev, 64, stream), np.full(64, 0x11))
    finally:
        _sync(driver, stream)
        for graph in graphs:
            driver.graph_destroy(graph)
            assert graph.direct == 0  # a destroyed graph is never replayed in C
        driver.mem_free(dev)
        driver.stream_destroy(stream)


def test_a_failed_replay_raises_what_the_method_raises(driver: CudaDriver) -> None:
    """A graph handle the sim does not know (its handle table refuses it, nothing is read)."""
    from aruntime.backends.cuda._handles import _Graph, _Resources

    bogus = 0xDEAD0
    graph = _Graph(driver._ffi.cast("CUgraphExec", bogus), bogus, _Resources())
    stream = driver.stream_create(0)
    try:
        assert graph.direct == bogus
        error = _fails_alike(
            lambda: driver.graph_launch(graph, stream),  # type: ignore[arg-type]
            lambda: CudaDriver.graph_launch(driver, graph, stream),  # type: ignore[arg-type]
        )
        assert error.function == "cuGraphLaunch"
        assert error.name == "CUDA_ERROR_INVALID_HANDLE"
    finally:
        driver.stream_destroy(stream)


def test_a_large_pageable_copy_goes_to_the_method_and_is_staged(
    driver: CudaDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the direct limit only the method may decide (pinned or staged): it is asked."""
    staged: list[int] = []
    real = _CopyOps._staged_copy

    def spy(self: Any, stream: Any, host: Any, device: int, nbytes: int, **kw: Any) -> None:
        staged.append(nbytes)
        real(self, stream, host, device, nbytes, **kw)

    monkeypatch.setattr(_CopyOps, "_staged_copy", spy)
    stream = driver.stream_create(0)
    n = DIRECT_PAGEABLE_H2D_MAX + 4096
    dev = driver.mem_alloc(n)
    host = (np.arange(n) % 251).astype(np.uint8)
    try:
        driver.memcpy_h2d(memoryview(host[:DIRECT_PAGEABLE_H2D_MAX]), dev, stream)
        assert staged == []  # at the limit: direct
        driver.memcpy_h2d(memoryview(host), dev, stream)
        assert staged == [n]
        np.testing.assert_array_equal(_download(driver, dev, n, stream), host)
    finally:
        _sync(driver, stream)
        driver.mem_free(dev)
        driver.stream_destroy(stream)


def test_a_failed_call_raises_what_the_method_raises(driver: CudaDriver) -> None:
    stream = driver.stream_create(0)
    nowhere = 0x1234  # no allocation: the sim refuses it at the call
    try:
        error = _fails_alike(
            lambda: driver.memset_d8(nowhere, 1, 16, stream),
            lambda: _CopyOps.memset_d8(driver, nowhere, 1, 16, stream),
        )
        assert error.name == "CUDA_ERROR_INVALID_VALUE"
        assert error.function == "cuMemsetD8Async"
    finally:
        driver.stream_destroy(stream)


def test_a_new_thread_gets_the_context_from_the_method(driver: CudaDriver) -> None:
    """On a thread that never called in, the C must not call: the method makes the
    context current first (the sim refuses a call without one)."""
    stream = driver.stream_create(0)
    dev = driver.mem_alloc(64)
    seen: list[object] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            seen.append(getattr(_base._current, "ctx", None))
            driver.memset_d8(dev, 7, 64, stream)
            seen.append(getattr(_base._current, "ctx", None))
            driver.memset_d8(dev, 9, 32, stream)  # now in the context: the C takes it
        except BaseException as exc:
            errors.append(exc)

    try:
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join(30)
        assert not errors, errors
        assert seen == [None, driver._ctx]
        expected = np.full(64, 7, np.uint8)
        expected[:32] = 9
        np.testing.assert_array_equal(_download(driver, dev, 64, stream), expected)
    finally:
        _sync(driver, stream)
        driver.mem_free(dev)
        driver.stream_destroy(stream)


def test_a_closed_driver_refuses_as_the_method_does() -> None:
    if not _enqueue.enabled():
        pytest.skip("the compiled enqueue is not built or is switched off")
    driver: Any = cuda.open_driver(0, sim=True)
    stream = driver.stream_create(0)
    dev = driver.mem_alloc(64)
    driver.close()
    with pytest.raises(ar.ClosedResourceError, match=r"cuMemsetD8Async: .*closed"):
        driver.memset_d8(dev, 1, 64, stream)
    with pytest.raises(ar.ClosedResourceError, match=r"cuMemcpyDtoDAsync_v2: .*closed"):
        driver.memcpy_d2d(dev, dev + 32, 16, stream)


def test_arguments_the_c_cannot_take_go_to_the_method(driver: CudaDriver) -> None:
    """A value that is not an int, or a stream without a raw handle: the method's own error."""
    stream = driver.stream_create(0)
    dev = driver.mem_alloc(64)
    try:
        with pytest.raises(TypeError):  # cffi's, from the method
            driver.memset_d8(dev, 1.5, 64, stream)
        with pytest.raises(AttributeError):  # the method reads .handle
            driver.memset_d8(dev, 1, 64, object())  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            driver.memset_d8(dev, 1, 64, stream, "extra")  # type: ignore[call-arg]
    finally:
        _sync(driver, stream)
        driver.mem_free(dev)
        driver.stream_destroy(stream)


def test_the_constructor_checks_what_it_is_given() -> None:
    module = _enqueue._module()
    if module is None:
        pytest.skip("the compiled enqueue is not built or is switched off")

    class Owner:
        _dead = None

    owner = Owner()
    good: dict[str, Any] = dict(
        owner=owner,
        method=lambda *a: None,
        fail=lambda *a: RuntimeError("x"),
        shape="memset_d8",
        function=1,
        name="f",
        get_current=1,
        context=1,
        host_limit=0,
        note=None,
        settle=0,
        settle_name=None,
    )
    with pytest.raises(ValueError, match="no shape memset_d16"):
        module.DirectCall(**{**good, "shape": "memset_d16"})
    with pytest.raises(ValueError, match="non-null"):
        module.DirectCall(**{**good, "function": 0})
    with pytest.raises(TypeError, match="callable"):
        module.DirectCall(**{**good, "fail": 3})
    with pytest.raises(TypeError, match="note callable or None"):
        module.DirectCall(**{**good, "note": 3})
    with pytest.raises(TypeError, match="settle and settle_name come together"):
        module.DirectCall(**{**good, "shape": "stream_finished", "settle": 1})
    with pytest.raises(TypeError, match="settle and settle_name come together"):
        module.DirectCall(**{**good, "shape": "stream_finished", "settle_name": "g"})
    with pytest.raises(TypeError, match="with the stream_finished shape and no other"):
        module.DirectCall(**{**good, "shape": "stream_finished"})  # it always settles
    with pytest.raises(TypeError, match="with the stream_finished shape and no other"):
        module.DirectCall(**{**good, "settle": 1, "settle_name": "g"})  # a memset never does
    call = module.DirectCall(**good)
    del owner, good
    with pytest.raises(ReferenceError, match="f: its driver is gone"):
        call(1, 2, 3, None)


def test_the_switch_leaves_the_methods_alone() -> None:
    """ARUNTIME_COMPILED_ENQUEUE=0: no compiled code, so no DirectCall either."""
    code = (
        "from aruntime.backends import cuda\n"
        "d = cuda.open_driver(0, sim=True)\n"
        "print(sorted(n for n in ('memset_d8', 'memcpy_d2d', 'memcpy_h2d') if n in vars(d)))\n"
        "d.close()\n"
    )
    assert _child(code, ARUNTIME_COMPILED_ENQUEUE="0") == "[]"


def test_abi_mode_calls_the_same_functions() -> None:
    """Without the compiled binding (libffi), the addresses come from the dlopen'd library."""
    if not _enqueue.enabled():
        pytest.skip("the compiled enqueue is not built or is switched off")
    code = (
        "import numpy as np\n"
        "from aruntime.backends import cuda\n"
        "d = cuda.open_driver(0, sim=True)\n"
        "assert d._library.mode == 'abi', d._library.mode\n"
        "assert type(vars(d)['memset_d8']).__name__ == 'DirectCall'\n"
        "s = d.stream_create(0)\n"
        "dev = d.mem_alloc(64)\n"
        "d.memset_d8(dev, 3, 64, s)\n"
        "d.memcpy_h2d(memoryview(np.arange(16, dtype=np.uint8)), dev + 8, s)\n"
        "host, view = d.host_alloc(64)\n"
        "d.memcpy_d2h(dev, view, s)\n"
        "e = d.event_create(False); d.event_record(e, s); d.event_wait(e)\n"
        "got = bytes(view)\n"
        "assert got == bytes([3] * 8) + bytes(range(16)) + bytes([3] * 40), got\n"
        "view.release(); d.host_free(host); d.mem_free(dev); d.event_destroy(e)\n"
        "d.stream_destroy(s); d.close()\n"
        "print('ok')\n"
    )
    assert _child(code, ARUNTIME_CUDA_ABI="1") == "ok"


# A kernel that stores each of its parameters, one of each width the packer writes.
_MIX_PTX = b"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry mix(
    .param .u8 p_a,
    .param .u16 p_b,
    .param .s64 p_c,
    .param .f64 p_d,
    .param .f32 p_e,
    .param .u64 p_out
)
{
    .reg .b16 %rs<3>;
    .reg .f32 %f<2>;
    .reg .b64 %rd<4>;
    .reg .f64 %fd<2>;
    ld.param.u8 %rs1, [p_a];
    ld.param.u16 %rs2, [p_b];
    ld.param.s64 %rd1, [p_c];
    ld.param.f64 %fd1, [p_d];
    ld.param.f32 %f1, [p_e];
    ld.param.u64 %rd2, [p_out];
    cvta.to.global.u64 %rd3, %rd2;
    st.global.u8 [%rd3], %rs1;
    st.global.u16 [%rd3+2], %rs2;
    st.global.s64 [%rd3+8], %rd1;
    st.global.f64 [%rd3+16], %fd1;
    st.global.f32 [%rd3+24], %f1;
    ret;
}
"""


def _mix_args(i: int, out: object) -> list[Any]:
    return [
        np.uint8(200 + i),
        np.uint16(60000 + i),
        np.int64(-5 - i),
        np.float64(2.5 * i),
        np.float32(1.25 + i),
        out,
    ]


def _stored(host: np.ndarray) -> tuple[int, int, int, float, float]:
    return (
        int(host[0]),
        int(host[2:4].view(np.uint16)[0]),
        int(host[8:16].view(np.int64)[0]),
        float(host[16:24].view(np.float64)[0]),
        float(host[24:28].view(np.float32)[0]),
    )


@pytest.fixture
def mix(driver: CudaDriver) -> Iterator[tuple[Any, Any, int, ar.DevicePtr]]:
    """The ``mix`` kernel's function, a stream, a 32-byte buffer, and the DevicePtr of it
    that the core would hand the driver."""
    module = driver.module_load(_MIX_PTX)
    stream = driver.stream_create(0)
    out = driver.mem_alloc(32)
    ptr = ar.DevicePtr.__new__(ar.DevicePtr)
    object.__setattr__(ptr, "_address", out)
    try:
        yield driver.module_function(module, "mix"), stream, out, ptr
    finally:
        _sync(driver, stream)
        driver.mem_free(out)
        driver.stream_destroy(stream)
        driver.module_unload(module)


def test_a_launch_packs_each_argument_as_the_method_does(
    driver: CudaDriver, mix: tuple[Any, Any, int, ar.DevicePtr], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once its signature is laid out, a launch is packed in C (the method's packer is
    never reached), with fresh values every time."""
    function, stream, out, ptr = mix
    config = LaunchConfig((1, 1, 1), (1, 1, 1), 0)
    CudaDriver.launch(driver, function, config, _mix_args(0, ptr), stream)  # lays it out
    assert _stored(_download(driver, out, 32, stream)) == (200, 60000, -5, 0.0, 1.25)

    def refuse(self: Any, args: Any) -> None:
        raise AssertionError("the Python packer ran: the launch did not take the C road")

    monkeypatch.setattr(ParamBlock, "pack", refuse)
    for i in (1, 2):
        driver.launch(function, config, _mix_args(i, ptr), stream)
        assert _stored(_download(driver, out, 32, stream)) == (
            200 + i,
            60000 + i,
            -5 - i,
            2.5 * i,
            1.25 + i,
        )
    # A new signature (an int8 where the uint8 was) is the method's to lay out first.
    with pytest.raises(AssertionError, match="Python packer"):
        args = _mix_args(3, ptr)
        args[0] = np.int8(3)
        driver.launch(function, config, args, stream)


def test_a_launch_asking_for_shared_memory_goes_to_the_method(
    driver: CudaDriver, mix: tuple[Any, Any, int, ar.DevicePtr], monkeypatch: pytest.MonkeyPatch
) -> None:
    """More dynamic shared memory than the kernel was opted in for: the method opts in."""
    function, stream, out, ptr = mix
    CudaDriver.launch(
        driver, function, LaunchConfig((1, 1, 1), (1, 1, 1), 0), _mix_args(0, ptr), stream
    )
    seen: list[int] = []
    real = CudaDriver._opt_in_shared

    def spy(self: Any, f: Any, nbytes: int) -> None:
        seen.append(nbytes)
        real(self, f, nbytes)

    monkeypatch.setattr(CudaDriver, "_opt_in_shared", spy)
    driver.launch(function, LaunchConfig((1, 1, 1), (1, 1, 1), 1024), _mix_args(1, ptr), stream)
    assert seen == [1024]
    assert _stored(_download(driver, out, 32, stream))[0] == 201


def test_a_failed_launch_raises_what_the_method_raises(
    driver: CudaDriver, mix: tuple[Any, Any, int, ar.DevicePtr]
) -> None:
    function, stream, _, ptr = mix
    good = LaunchConfig((1, 1, 1), (1, 1, 1), 0)
    CudaDriver.launch(driver, function, good, _mix_args(0, ptr), stream)
    empty = LaunchConfig((0, 1, 1), (1, 1, 1), 0)  # the core never sends one: the sim refuses it
    error = _fails_alike(
        lambda: driver.launch(function, empty, _mix_args(0, ptr), stream),
        lambda: CudaDriver.launch(driver, function, empty, _mix_args(0, ptr), stream),
    )
    assert error.function == "cuLaunchKernel"


async def test_launches_through_the_backend_store_every_value(anyio_backend: str) -> None:
    """The user's road: the first launch of a signature and the compiled ones after it."""
    if not _enqueue.enabled():
        pytest.skip("the compiled enqueue is not built or is switched off")
    async with ar.open_backend("cuda-sim") as gpu:
        kernel = gpu.kernel(gpu.load_module("mix", _MIX_PTX), "mix")
        out = gpu.alloc(32)
        for i in range(4):
            await gpu.launch(kernel, 1, 1, _mix_args(i, out))
            host = await gpu.copy_d2h_async(out, np.zeros(32, np.uint8))
            assert _stored(host) == (200 + i, 60000 + i, -5 - i, 2.5 * i, 1.25 + i)
        gpu.free(out)


# -- stream_finished and the awaited tail ------------------------------------------
LAUNCH_FAILED = 2  # the sim's injectable fault: reported once, by the next synchronize


@pytest.fixture
def sim() -> Iterator[ctypes.CDLL]:
    from aruntime._native import native_library_path

    library = ctypes.CDLL(str(native_library_path("libcuda.so.1")))
    library.arsim_set_timing.argtypes = [ctypes.c_double, ctypes.c_double]
    library.arsim_clear_faults()
    yield library
    library.arsim_clear_faults()
    library.arsim_set_timing(0.0, 0.0)


@contextlib.contextmanager
def _slow_ops(sim: ctypes.CDLL, latency_us: float) -> Iterator[None]:
    """Every op on the sim takes ``latency_us`` at least, while inside."""
    sim.arsim_set_timing(0.0, latency_us)
    try:
        yield
    finally:
        sim.arsim_set_timing(0.0, 0.0)


def _fill(driver: CudaDriver, stream: DriverStream, address: int) -> None:
    module = driver.module_load(driver.builtin_module_image("vector_ops"))
    fill = driver.module_function(module, "fill_f32")
    config = LaunchConfig(grid=(1, 1, 1), block=(64, 1, 1), shared_mem=0)
    driver.launch(fill, config, [np.uint32(64), np.float32(1), _Address(address)], stream)  # type: ignore[list-item]


class _Address(int):
    """Stands in for a DevicePtr: a launch reads its ``_address``."""

    @property
    def _address(self) -> int:
        return int(self)


def test_stream_finished_answers_in_c_as_the_method_does(
    driver: CudaDriver, sim: ctypes.CDLL
) -> None:
    """Not yet, done, or the work's error: each answered in C, as the method answers it."""
    stream = driver.stream_create(0)
    dev = driver.mem_alloc(256)
    method_asked: list[object] = []
    query = driver._cuStreamQuery
    driver._cuStreamQuery = lambda handle: method_asked.append(handle) or query(handle)  # type: ignore[method-assign]
    try:
        assert driver.stream_finished(stream) is True  # nothing queued
        with _slow_ops(sim, 200_000.0):  # held long enough for a preempted thread to ask
            _fill(driver, stream, dev)
            assert driver.stream_finished(stream) is False
            assert CudaDriver.stream_finished(driver, stream) is False  # the method agrees
            assert len(method_asked) == 1
        _sync(driver, stream)
        assert driver.stream_finished(stream) is True
        sim.arsim_inject_fault(-1, LAUNCH_FAILED, 1)
        _fill(driver, stream, dev)
        with pytest.raises(ar.DriverError) as failure:
            while not driver.stream_finished(stream):
                pass
        assert failure.value.function == "cuStreamSynchronize"  # the call that reported it
        assert failure.value.name == "CUDA_ERROR_LAUNCH_FAILED"
        assert driver.stream_finished(stream) is True  # reported once: the sim's is not sticky
        assert len(method_asked) == 1  # every answer after the first came from C

        # A thread the driver's context is not current on: only the method may ask.
        answers: list[bool | None] = []
        thread = threading.Thread(target=lambda: answers.append(driver.stream_finished(stream)))
        thread.start()
        thread.join()
        assert answers == [True]
        assert len(method_asked) == 2
    finally:
        driver._cuStreamQuery = query  # type: ignore[method-assign]
        _sync(driver, stream)
        driver.mem_free(dev)
        driver.stream_destroy(stream)


async def test_an_awaited_last_op_is_asked_after_and_settled_in_c(
    anyio_backend: str, sim: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stream's TailProbe answers every ask, finishes the op, and hands it its error.

    The stream runs launches only, and the await's window is made long
    enough that none outlasts it on a busy machine: a marked op (a staged
    download, or one marked at the window's end) would hand the stream's
    waiter work, and an ask while the waiter is busy is probe_tail's to
    answer.  The results are read on another stream, after each await.
    """
    if not _enqueue.enabled():
        pytest.skip("the compiled enqueue is not built or is switched off")
    import aruntime._completion as completion_module

    monkeypatch.setattr(completion_module, "AWAIT_SPIN_S", 60.0)
    in_python: list[object] = []
    probe_tail = StreamState.probe_tail

    def counted(state: StreamState, completion: Any) -> bool:
        in_python.append(completion)
        return probe_tail(state, completion)

    monkeypatch.setattr(StreamState, "probe_tail", counted)
    settled_in_python: list[object] = []
    settle_probed = Marking.settle_probed

    def spied(marking: Marking, state: StreamState, completion: Any, error: Any) -> None:
        settled_in_python.append(completion)
        settle_probed(marking, state, completion, error)

    monkeypatch.setattr(Marking, "settle_probed", spied)
    async with ar.open_backend("cuda-sim") as gpu:
        stream, reader = gpu.create_stream(), gpu.create_stream()
        assert type(stream.state.ask_tail).__name__ == "TailProbe"
        out = gpu.alloc(64 * 4)
        fill = gpu.kernel(gpu.builtin_module(), "fill_f32")

        async def read() -> np.ndarray:
            return await gpu.copy_d2h_async(out, np.zeros(64, np.float32), stream=reader)

        for value in range(8):
            await gpu.launch(fill, 1, 64, [np.uint32(64), np.float32(value), out], stream=stream)
            assert (await read() == value).all()
        with _slow_ops(sim, 2_000.0):  # many loop steps of "not yet"
            await gpu.launch(fill, 1, 64, [np.uint32(64), np.float32(9), out], stream=stream)
        assert (await read() == 9).all()
        assert settled_in_python == []  # each done op was finished in C (settle.c)
        sim.arsim_inject_fault(-1, LAUNCH_FAILED, 1)
        with pytest.raises(ar.DriverError, match="CUDA_ERROR_LAUNCH_FAILED") as failure:
            failing = gpu.launch(fill, 1, 64, [np.uint32(64), np.float32(1), out], stream=stream)
            await failing
        assert in_python == []  # not one ask was left to Python
        assert settled_in_python == [failing]  # a failure is the policy's to settle
        assert failing.exception() is failure.value
        del failing
        assert (await read() == 9).all()  # the failed launch wrote nothing
        await gpu.launch(fill, 1, 64, [np.uint32(64), np.float32(3), out], stream=stream)
        assert (await read() == 3).all()  # the error was seen: the stream goes on
        assert not stream.state.ordering  # (that op was the policy's: it ended the ordering)
        settled_before = len(settled_in_python)

        # Ops queued before it that nobody kept: the policy's settle says the awaited
        # op covers them, and the C leaves the op to it.
        for value in (5, 6):
            gpu.launch(fill, 1, 64, [np.uint32(64), np.float32(value), out], stream=stream)
        assert stream.state.dropped == 1  # the second is the tail until the next op
        last = gpu.launch(fill, 1, 64, [np.uint32(64), np.float32(7), out], stream=stream)
        assert stream.state.dropped == 2
        await last
        assert settled_in_python[settled_before:] == [last] and stream.state.dropped == 0
        assert (await read() == 7).all()
        del last

        # A thread the driver's context is not current on: the C hands the ask to
        # probe_tail, whose answer it returns (the stream still runs the op).
        with _slow_ops(sim, 200_000.0):
            held = gpu.launch(fill, 1, 64, [np.uint32(64), np.float32(4), out], stream=stream)
            answers: list[bool] = []
            thread = threading.Thread(target=lambda: answers.append(held.done()))
            thread.start()
            thread.join()
        assert answers == [False] and in_python == [held]
        await held
        assert (await read() == 4).all()
        gpu.free(out)
        reader.close()
        stream.close()

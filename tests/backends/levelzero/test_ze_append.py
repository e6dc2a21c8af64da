"""The Level Zero driver's fills and copies appended in C (``ffi/core/zeappend.c``).

``_CopyOps._install_appends`` puts a ZeAppend over ``memset_d8`` and the
three ``memcpy_*`` methods.  Its plain case (int operands, a host buffer
never staged, a stream capturing nothing whose newest work is already on
the copy list) is the barrier, if due, and the append, made in C through the
compiled calls' table; every other case is the Python method.  These tests
hold that both roads give the same bytes and the same errors, and that each
case the C must not take reaches the method.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import numpy as np
import pytest

from aruntime import _enqueue
from aruntime._driver import DriverStream, LaunchConfig
from aruntime._exceptions import (
    BackendUnavailableError,
    DriverError,
    InvalidArgumentError,
    NotSupportedError,
)
from aruntime._memory import DevicePtr
from aruntime.backends import levelzero
from aruntime.backends._staging import DIRECT_PAGEABLE_H2D_MAX
from aruntime.backends.levelzero import _driver
from aruntime.backends.levelzero._copies import _CopyOps
from aruntime.backends.levelzero._ffi import table_slot
from aruntime.backends.levelzero._modules import _ModuleOps

from ._subproc import run_python
from .conftest import replaced_call

METHODS = ("memset_d8", "memcpy_h2d", "memcpy_d2h", "memcpy_d2d")
_UNKNOWN = 0x7FFFFFFE  # ZE_RESULT_ERROR_UNKNOWN

ZeDriver = _driver.LevelZeroDriver


@pytest.fixture
def drv() -> Iterator[ZeDriver]:
    if not _enqueue.enabled():
        pytest.skip("the compiled enqueue is not built or is switched off")
    try:
        opened: Any = levelzero.open_driver(0, sim=True)
    except BackendUnavailableError as exc:
        pytest.skip(f"levelzero-sim cannot be opened: {exc}")
    if opened._calls is None:
        opened.close()
        pytest.skip("the compiled calls are not built here")
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def stream(drv: ZeDriver) -> Iterator[DriverStream]:
    made = drv.stream_create(0)
    try:
        yield made
    finally:
        drv.stream_destroy(made)


@pytest.fixture
def dev(drv: ZeDriver, stream: DriverStream) -> Iterator[int]:
    """64 bytes of device memory, freed before ``stream`` goes."""
    address = drv.mem_alloc(64)
    try:
        yield address
    finally:
        drv.mem_free(address)


def _sync(drv: ZeDriver, stream: DriverStream) -> None:
    event = drv.event_create(False)
    drv.event_record(event, stream)
    drv.event_wait(event)
    drv.event_destroy(event)


def _python_frames(fn: Callable[[], object]) -> list[str]:
    """The Python functions ``fn()`` ran, by name (``fn``'s own frame left out).

    With the collector held off: a collection that an allocation in ``fn``
    happens to start runs weakref callbacks (``WeakSet._remove``) of other
    tests' garbage, which are not ``fn``'s.
    """
    seen: list[str] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            seen.append(frame.f_code.co_name)

    gc.collect()
    collecting = gc.isenabled()
    gc.disable()
    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
        if collecting:
            gc.enable()
    return seen[1:]


def _child(code: str, **env: str) -> str:
    """What ``code`` prints in a fresh interpreter, with ``env`` set."""
    out = run_python(code, timeout=120, **env)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_each_method_is_a_ze_append_naming_its_function(drv: ZeDriver) -> None:
    for method in METHODS:
        made = vars(drv)[method]
        assert type(made).__name__ == "ZeAppend"
        function = "Fill" if method == "memset_d8" else "Copy"
        assert repr(made) == f"<ZeAppend {method} -> zeCommandListAppendMemory{function}>"


def test_both_roads_write_the_same_bytes(drv: ZeDriver) -> None:
    """Each op once through the ZeAppend and once through the method, on one stream."""
    stream = drv.stream_create(0)
    a, b = drv.mem_alloc(256), drv.mem_alloc(256)
    source = np.arange(256, dtype=np.uint8)
    try:
        results = []
        for road in ("compiled", "method"):

            def call(method: str, *args: Any, road: str = road) -> None:
                if road == "compiled":
                    getattr(drv, method)(*args, stream)
                else:
                    getattr(_CopyOps, method)(drv, *args, stream)

            back = np.zeros(256, dtype=np.uint8)
            call("memset_d8", a, 0xAB, 256)
            call("memset_d8", a, 0x11, 64)  # a second op on the list: a barrier first
            call("memcpy_h2d", memoryview(source[:128]), a + 128)
            call("memcpy_d2d", a, b, 256)
            call("memcpy_d2h", b, memoryview(back))
            _sync(drv, stream)
            results.append(back)
        expect = np.concatenate([np.full(64, 0x11), np.full(64, 0xAB), source[:128]])
        np.testing.assert_array_equal(results[0], expect.astype(np.uint8))
        np.testing.assert_array_equal(results[1], results[0])
    finally:
        drv.mem_free(a)
        drv.mem_free(b)
        drv.stream_destroy(stream)


def test_the_plain_case_runs_no_python(drv: ZeDriver, stream: DriverStream, dev: int) -> None:
    host = np.zeros(64, dtype=np.uint8)
    drv.memset_d8(dev, 1, 64, stream)  # the first op on the copy list: the method's
    assert _python_frames(lambda: drv.memset_d8(dev, 2, 64, stream)) == []
    assert _python_frames(lambda: drv.memcpy_h2d(memoryview(host), dev, stream)) == []
    assert _python_frames(lambda: drv.memcpy_d2h(dev, memoryview(host), stream)) == []
    assert _python_frames(lambda: drv.memcpy_d2d(dev, dev + 32, 32, stream)) == []
    _sync(drv, stream)


def test_a_hand_over_and_a_capture_go_to_the_method(
    drv: ZeDriver, stream: DriverStream, dev: int, iota: Any
) -> None:
    """The C appends only where the stream's newest work already is."""
    back = np.zeros(64, dtype=np.uint8)
    drv.memset_d8(dev, 0, 64, stream)
    drv.launch(iota, _BLOCK, [np.uint32(4), np.uint32(0x02020202), dev], stream)
    # The launch left the stream on its compute list: the fill hands over, in Python.
    assert "memset_d8" in _python_frames(lambda: drv.memset_d8(dev + 16, 3, 16, stream))
    drv.memcpy_d2h(dev, memoryview(back), stream)
    _sync(drv, stream)
    words = (np.arange(4, dtype=np.uint32) + 0x02020202).view(np.uint8)
    assert back.tolist() == words.tolist() + [3] * 16 + [0] * 32
    drv.capture_begin(stream)
    try:
        frames = _python_frames(lambda: drv.memset_d8(dev, 4, 16, stream))
    finally:
        graph = drv.capture_end(stream)
    assert "memset_d8" in frames
    drv.graph_destroy(graph)


def test_arguments_the_c_cannot_take_go_to_the_method(
    drv: ZeDriver, stream: DriverStream, dev: int
) -> None:
    drv.memset_d8(dev, 0, 64, stream)
    for call in (
        lambda: drv.memset_d8(dev, np.uint8(5), 64, stream),  # not an exact int
        lambda: drv.memset_d8(dev, 5, 64, stream=stream),  # a keyword
        lambda: drv.memcpy_h2d(memoryview(b""), dev, stream),  # nothing to copy
    ):
        assert _python_frames(call)[0] in METHODS
    # A read-only download target: the method's refusal, by either road.
    with pytest.raises(BufferError) as compiled:
        drv.memcpy_d2h(dev, memoryview(bytes(64)), stream)
    with pytest.raises(BufferError) as method:
        _CopyOps.memcpy_d2h(drv, dev, memoryview(bytes(64)), stream)
    assert str(compiled.value) == str(method.value)
    _sync(drv, stream)


def test_a_large_pageable_copy_goes_to_the_method_and_is_staged(drv: ZeDriver) -> None:
    n = DIRECT_PAGEABLE_H2D_MAX * 4
    stream = drv.stream_create(0)
    dev = drv.mem_alloc(n)
    source = np.random.default_rng(1).integers(0, 256, n, dtype=np.uint8)
    back = np.zeros(n, dtype=np.uint8)
    try:
        drv.memset_d8(dev, 0, n, stream)
        frames = _python_frames(lambda: drv.memcpy_h2d(memoryview(source), dev, stream))
        assert "_staged_copy" in frames
        drv.memcpy_d2h(dev, memoryview(back), stream)
        _sync(drv, stream)
        np.testing.assert_array_equal(back, source)
    finally:
        drv.mem_free(dev)
        drv.stream_destroy(stream)


@pytest.mark.parametrize("failing", ["zeCommandListAppendBarrier", "zeCommandListAppendMemoryCopy"])
def test_a_failed_append_raises_what_the_method_raises(
    drv: ZeDriver, stream: DriverStream, dev: int, failing: str
) -> None:
    errors: list[DriverError] = []
    for road in (drv.memcpy_d2d, lambda *a: _CopyOps.memcpy_d2d(drv, *a)):
        drv.memset_d8(dev, 0, 64, stream)  # a barrier is due before the next op
        with (
            replaced_call(drv, failing, lambda *args: _UNKNOWN),
            pytest.raises(DriverError) as info,
        ):
            road(dev, dev + 32, 32, stream)
        errors.append(info.value)
    assert [type(e) for e in errors] == [DriverError, DriverError]
    assert str(errors[0]) == str(errors[1])
    assert str(errors[0]).startswith(f"{failing} failed: ZE_RESULT_ERROR_UNKNOWN")
    _sync(drv, stream)  # the stream's lock was released: it goes on


def test_the_constructor_checks_what_it_is_given(drv: ZeDriver) -> None:
    calls = drv._calls
    assert calls is not None
    good: dict[str, Any] = dict(
        owner=drv,
        method=_CopyOps.memset_d8,
        fail=_CopyOps._compiled_append_failed,
        shape="memset_d8",
        name="zeCommandListAppendMemoryFill",
        function=table_slot(calls, "zeCommandListAppendMemoryFill"),
        barrier=table_slot(calls, "zeCommandListAppendBarrier"),
        table=calls.table,
        host_limit=DIRECT_PAGEABLE_H2D_MAX,
    )
    assert _enqueue.ze_append(**good) is not None
    with pytest.raises(ValueError, match="no shape memset_d16"):
        _enqueue.ze_append(**{**good, "shape": "memset_d16"})
    with pytest.raises(ValueError, match="non-null addresses"):
        _enqueue.ze_append(**{**good, "function": 0})
    with pytest.raises(ValueError, match="host_limit not negative"):
        _enqueue.ze_append(**{**good, "host_limit": -1})
    with pytest.raises(TypeError, match="must be callable"):
        _enqueue.ze_append(**{**good, "fail": None})
    launch = {**good, "shape": "launch", "method": _ModuleOps.launch}
    parts: dict[str, Any] = {
        "set_arg": table_slot(calls, "zeKernelSetArgumentValue"),
        "set_again": _ModuleOps._set_arg,
        "append_other": _ModuleOps._append_launch,
        "note": None,
        "scalars": np.generic,
        "pointers": DevicePtr,
    }
    assert _enqueue.ze_append(**launch, launch=parts) is not None
    with pytest.raises(ValueError, match="set_arg"):
        _enqueue.ze_append(**launch, launch={**parts, "set_arg": 0})
    with pytest.raises(TypeError, match="set_again"):
        _enqueue.ze_append(**launch, launch={**parts, "append_other": None})
    with pytest.raises(TypeError, match="scalars must be a class"):
        _enqueue.ze_append(**launch, launch={**parts, "scalars": 3})


def test_the_switches_leave_the_methods_alone() -> None:
    code = (
        "from aruntime.backends import levelzero\n"
        "d = levelzero.open_driver(0, sim=True)\n"
        "print(sorted(m for m in ('memset_d8', 'memcpy_h2d') if m in vars(d)))\n"
        "d.close()\n"
    )
    assert _child(code, ARUNTIME_COMPILED_ENQUEUE="0") == "[]"
    assert _child(code, ARUNTIME_LEVELZERO_ABI="1") == "[]"
    assert _child(code) == "['memcpy_h2d', 'memset_d8']"
    launch = code.replace("('memset_d8', 'memcpy_h2d')", "('launch',)")
    assert _child(launch, ARUNTIME_COMPILED_ENQUEUE="0") == "[]"
    assert _child(launch) == "['launch']"


# -- launches ---------------------------------------------------------------------------

_BLOCK = LaunchConfig(grid=(1, 1, 1), block=(16, 1, 1), shared_mem=0)
_INVALID_SIZE = 0x78000016  # ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE


@pytest.fixture
def iota(drv: ZeDriver) -> Iterator[Any]:
    """``iota_u32(n, start, y)``: ``y[i] = start + i`` for ``i < n``."""
    module = drv.module_load(drv.builtin_module_image("vector_ops"))
    try:
        yield drv.module_function(module, "iota_u32")
    finally:
        drv.module_unload(module)


def _words(drv: ZeDriver, stream: DriverStream, dev: int, n: int) -> list[int]:
    back = np.zeros(n, dtype=np.uint32)
    drv.memcpy_d2h(dev, memoryview(back).cast("B"), stream)
    _sync(drv, stream)
    return back.tolist()


def test_both_roads_launch_alike(drv: ZeDriver, stream: DriverStream, dev: int, iota: Any) -> None:
    """The same launches, arguments changing between them, through the ZeAppend and
    through the method: the same words, and the kernel holds the same arguments."""
    results = []
    for launch in (drv.launch, lambda *a: _ModuleOps.launch(drv, *a)):
        drv.memset_d8(dev, 0, 64, stream)
        for start, offset in ((10, 0), (20, 16), (30, 16), (30, 32)):
            launch(iota, _BLOCK, [np.uint32(4), np.uint32(start), dev + offset], stream)
        results.append((_words(drv, stream, dev, 16), list(iota.args)))
    assert results[0][0] == [10, 11, 12, 13, 30, 31, 32, 33, 30, 31, 32, 33, 0, 0, 0, 0]
    assert results[1] == results[0]


def test_a_plain_launch_runs_no_python_even_with_new_arguments(
    drv: ZeDriver, stream: DriverStream, dev: int, iota: Any
) -> None:

    def launch(args: list[Any]) -> None:
        drv.launch(iota, _BLOCK, args, stream)

    # The first: the method, and the sim's site note learns this line.
    launch([np.uint32(4), np.uint32(1), dev])
    for args in ([np.uint32(4), np.uint32(1), dev], [np.uint32(4), np.uint32(7), dev + 16]):
        assert _python_frames(lambda a=args: launch(a)) == ["launch"]  # the test's own
    assert _words(drv, stream, dev, 8) == [1, 2, 3, 4, 7, 8, 9, 10]


def test_a_launch_after_a_copy_hands_over_through_the_method_s_append(
    drv: ZeDriver, stream: DriverStream, dev: int, iota: Any
) -> None:
    drv.launch(iota, _BLOCK, [np.uint32(4), np.uint32(1), dev], stream)
    drv.memset_d8(dev + 16, 0, 16, stream)  # the stream moves to its copy list
    args = [np.uint32(4), np.uint32(5), dev + 16]
    frames = _python_frames(lambda: drv.launch(iota, _BLOCK, args, stream))
    assert "_append_launch" in frames and "launch" not in frames
    assert _words(drv, stream, dev, 8) == [1, 2, 3, 4, 5, 6, 7, 8]


def test_launches_the_c_cannot_take_go_to_the_method(
    drv: ZeDriver, stream: DriverStream, dev: int, iota: Any
) -> None:
    args = [np.uint32(4), np.uint32(1), dev]
    drv.launch(iota, _BLOCK, args, stream)
    wider = LaunchConfig(grid=(1, 1, 1), block=(32, 1, 1), shared_mem=0)
    for call in (
        lambda: drv.launch(iota, wider, args, stream),  # a group size to set first
        lambda: drv.launch(iota, _BLOCK, [np.uint32(4), np.array(1, np.uint32), dev], stream),
        lambda: drv.launch(iota, _BLOCK, args, stream=stream),
    ):
        assert "launch" in _python_frames(call)
    for config, given, error in (
        (LaunchConfig((1, 1, 1), (16, 1, 1), 64), args, NotSupportedError),
        (_BLOCK, args[:2], InvalidArgumentError),
    ):
        with pytest.raises(error) as compiled:
            drv.launch(iota, config, given, stream)
        with pytest.raises(error) as method:
            _ModuleOps.launch(drv, iota, config, given, stream)
        assert str(compiled.value) == str(method.value)
    _sync(drv, stream)


def test_a_failed_argument_is_set_again_by_the_method(
    drv: ZeDriver, stream: DriverStream, dev: int, iota: Any
) -> None:
    """The C's set fails (the table's function stands in): the method sets it again
    through the ABI binding, which works here, and the launch goes on."""
    drv.launch(iota, _BLOCK, [np.uint32(4), np.uint32(1), dev], stream)
    args = [np.uint32(4), np.uint32(9), dev]
    with replaced_call(drv, "zeKernelSetArgumentValue", lambda *a: _INVALID_SIZE):
        frames = _python_frames(lambda: drv.launch(iota, _BLOCK, args, stream))
    assert "_set_arg" in frames and "launch" not in frames
    assert _words(drv, stream, dev, 4) == [9, 10, 11, 12]


def test_an_argument_refused_both_ways_raises_what_the_method_raises(
    drv: ZeDriver, stream: DriverStream, dev: int, iota: Any
) -> None:
    real = drv._lib

    class Refusing:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        @staticmethod
        def zeKernelSetArgumentValue(*args: Any) -> int:
            return _INVALID_SIZE

    drv.launch(iota, _BLOCK, [np.uint32(4), np.uint32(1), dev], stream)
    errors = []
    for launch in (drv.launch, lambda *a: _ModuleOps.launch(drv, *a)):
        args = [np.uint32(4), np.uint32(2), dev]
        with (
            replaced_call(drv, "zeKernelSetArgumentValue", lambda *a: _INVALID_SIZE),
            pytest.raises(InvalidArgumentError) as info,
        ):
            drv._lib = Refusing()  # the method's ABI call refuses too
            try:
                launch(iota, _BLOCK, args, stream)
            finally:
                drv._lib = real
        errors.append(str(info.value))
        assert iota.args[1] is None  # unknown: the next launch sets it again
    assert errors[0] == errors[1]
    assert errors[0].startswith("launch: kernel 'iota_u32' argument 1: the driver rejects")
    drv.launch(iota, _BLOCK, [np.uint32(4), np.uint32(6), dev], stream)
    assert _words(drv, stream, dev, 4) == [6, 7, 8, 9]

"""The mock driver's host copies in C (``ffi/core/mockcopy.c``).

``MockDriver._install_mock_copies`` puts a MockCopy over ``memcpy_h2d`` and
``memcpy_d2h``.  Its case is the method's quiet one once the method has
cached the stream's log entry and the range's byte view: it logs and copies,
as the method does.  These tests hold that both roads give the same bytes and
the same log, that each case the C must not take (a fault, a capture, a freed
range, another shape of call) reaches the method, and that it is off where
the compiled enqueue is.
"""

from __future__ import annotations

import gc
import sys
import weakref
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import numpy as np
import pytest

from aruntime import _enqueue
from aruntime._driver import DriverStream
from aruntime._exceptions import DeviceLostError, DriverError
from aruntime.backends.mock._driver import MockDriver
from aruntime.backends.mock._threaded import ThreadedMockDriver

SIZE = 4096


@pytest.fixture
def drv() -> Iterator[MockDriver]:
    if not _enqueue.enabled():
        pytest.skip("the compiled enqueue is not built or is switched off")
    made = MockDriver()
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def stream(drv: MockDriver) -> DriverStream:
    return drv.stream_create(0)


@pytest.fixture
def dev(drv: MockDriver) -> Iterator[int]:
    address = drv.mem_alloc(SIZE)
    try:
        yield address
    finally:
        drv.mem_free(address)


def pattern(seed: int, n: int = SIZE) -> bytearray:
    return bytearray(np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes())


def method_calls(run: Callable[[], object]) -> int:
    """How many times the Python ``memcpy_h2d`` or ``memcpy_d2h`` ran during ``run``."""
    count = 0
    methods = {MockDriver.memcpy_h2d.__code__, MockDriver.memcpy_d2h.__code__}

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        if event == "call" and frame.f_code in methods:
            count += 1

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return count


def upload(drv: MockDriver, data: bytearray, dev: int, stream: DriverStream) -> None:
    drv.memcpy_h2d(memoryview(data), dev, stream)


def download(drv: MockDriver, dev: int, n: int, stream: DriverStream) -> bytearray:
    out = bytearray(n)
    drv.memcpy_d2h(dev, memoryview(out), stream)
    return out


def test_both_copies_are_installed_with_the_first_stream(drv: MockDriver) -> None:
    assert "memcpy_h2d" not in vars(drv)  # an open that makes no stream loads no extension
    drv.stream_create(0)
    for name in ("memcpy_h2d", "memcpy_d2h"):
        assert type(getattr(drv, name)).__name__ == "MockCopy", name
        assert name in vars(drv)


def test_the_threaded_mock_and_the_switch_keep_the_methods(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    threaded = ThreadedMockDriver()
    try:
        threaded.stream_create(0)
        assert "memcpy_h2d" not in vars(threaded)  # its copies run on its worker
    finally:
        threaded.close()
    monkeypatch.setenv("ARUNTIME_COMPILED_ENQUEUE", "0")
    plain = MockDriver()
    try:
        plain.stream_create(0)
        assert "memcpy_h2d" not in vars(plain) and "memcpy_d2h" not in vars(plain)
    finally:
        plain.close()


def test_a_subclass_keeps_its_own_copy() -> None:
    if not _enqueue.enabled():
        pytest.skip("the compiled enqueue is not built or is switched off")

    class Counting(MockDriver):
        uploads = 0

        def memcpy_h2d(self, src: memoryview, dst: int, stream: DriverStream) -> None:
            self.uploads += 1
            super().memcpy_h2d(src, dst, stream)

    drv = Counting()
    try:
        stream = drv.stream_create(0)
        address = drv.mem_alloc(SIZE)
        for _ in range(3):
            upload(drv, pattern(14), address, stream)
        assert drv.uploads == 3
        assert "memcpy_h2d" not in vars(drv) and "memcpy_d2h" in vars(drv)
        assert download(drv, address, SIZE, stream) == pattern(14)
        drv.mem_free(address)
    finally:
        drv.close()


def test_the_second_copy_of_a_range_takes_no_python_frame(
    drv: MockDriver, stream: DriverStream, dev: int
) -> None:
    first, second = pattern(1), pattern(2)
    assert method_calls(lambda: upload(drv, first, dev, stream)) == 1  # fills the caches
    assert method_calls(lambda: upload(drv, second, dev, stream)) == 0
    assert download(drv, dev, SIZE, stream) == second
    assert method_calls(lambda: download(drv, dev, SIZE, stream)) == 0


def test_both_roads_give_the_same_bytes_and_log(
    drv: MockDriver, stream: DriverStream, dev: int
) -> None:
    for n in (1, 7, SIZE):
        drv.call_log.clear()
        data = pattern(n, n)
        MockDriver.memcpy_h2d(drv, memoryview(data), dev, stream)  # the method itself
        by_method = (download(drv, dev, n, stream), list(drv.call_log))
        drv.call_log.clear()
        MockDriver.memcpy_h2d(drv, memoryview(pattern(99, n)), dev, stream)  # other bytes
        drv.call_log.clear()
        assert method_calls(lambda d=data: upload(drv, d, dev, stream)) == 0  # C: caches full
        assert method_calls(lambda k=n: download(drv, dev, k, stream)) == 0
        by_c = (download(drv, dev, n, stream), drv.call_log[:1] + drv.call_log[-1:])
        assert by_c[0] == by_method[0] == data
        assert by_c[1] == by_method[1], n  # one copy_h2d, then one copy_d2h, alike


def test_a_copy_into_part_of_a_range_touches_only_that_part(
    drv: MockDriver, stream: DriverStream, dev: int
) -> None:
    upload(drv, bytearray(SIZE), dev, stream)
    for _ in range(2):  # the method, then the C
        upload(drv, bytearray(b"\xab" * 16), dev + 32, stream)
    whole = download(drv, dev, SIZE, stream)
    assert whole[32:48] == b"\xab" * 16
    assert whole.count(0) == SIZE - 16


def test_an_injected_fault_reaches_the_method_and_then_the_c_again(
    drv: MockDriver, stream: DriverStream, dev: int
) -> None:
    data = pattern(3)
    upload(drv, data, dev, stream)
    drv.inject_fault("copy_h2d", DriverError)
    with pytest.raises(DriverError, match="injected"):
        upload(drv, pattern(4), dev, stream)
    assert download(drv, dev, SIZE, stream) == data  # the failed copy wrote nothing
    assert method_calls(lambda: upload(drv, pattern(5), dev, stream)) == 0


def test_a_lost_device_fails_every_copy_both_ways(
    drv: MockDriver, stream: DriverStream, dev: int
) -> None:
    upload(drv, pattern(6), dev, stream)
    download(drv, dev, SIZE, stream)
    drv.inject_fault("copy_h2d", DeviceLostError)
    with pytest.raises(DeviceLostError):
        upload(drv, pattern(7), dev, stream)
    with pytest.raises(DeviceLostError):
        upload(drv, pattern(7), dev, stream)
    with pytest.raises(DeviceLostError):
        download(drv, dev, SIZE, stream)


def test_a_capturing_stream_records_through_the_method(
    drv: MockDriver, stream: DriverStream, dev: int
) -> None:
    first, captured = pattern(8), pattern(9)
    upload(drv, first, dev, stream)
    drv.capture_begin(stream)
    calls = method_calls(lambda: upload(drv, captured, dev, stream))
    graph = drv.capture_end(stream)
    assert calls == 1
    assert download(drv, dev, SIZE, stream) == first  # recorded, not run
    drv.graph_launch(graph, stream)
    assert download(drv, dev, SIZE, stream) == captured
    drv.graph_destroy(graph)


def test_a_freed_range_is_not_written_through_a_stale_view(
    drv: MockDriver, stream: DriverStream
) -> None:
    old = drv.mem_alloc(SIZE)
    upload(drv, pattern(10), old, stream)
    upload(drv, pattern(10), old, stream)
    stale = drv._byte_views[(old, SIZE)]
    drv.mem_free(old)
    new = drv.mem_alloc(SIZE)  # the freed slot again, at the same address
    try:
        assert new == old
        data = pattern(11)
        assert method_calls(lambda: upload(drv, data, new, stream)) == 1  # the cache was cleared
        assert download(drv, new, SIZE, stream) == data
        assert bytes(stale) != data
    finally:
        drv.mem_free(new)


@pytest.mark.parametrize(
    "shape",
    ["bytes", "readonly target", "keyword", "empty"],
)
def test_other_calls_are_the_methods_with_its_errors(
    drv: MockDriver, stream: DriverStream, dev: int, shape: str
) -> None:
    data = pattern(12)
    upload(drv, data, dev, stream)
    download(drv, dev, SIZE, stream)
    copies: dict[str, Callable[[Any], object]] = {
        "bytes": lambda copy: copy.h2d(memoryview(bytes(data)), dev, stream),
        "readonly target": lambda copy: copy.d2h(dev, memoryview(bytes(SIZE)), stream),
        "keyword": lambda copy: copy.h2d(memoryview(data), dev, stream=stream),
        "empty": lambda copy: copy.h2d(memoryview(bytearray()), dev, stream),
    }

    class Installed:
        h2d, d2h = drv.memcpy_h2d, drv.memcpy_d2h

    class Method:
        @staticmethod
        def h2d(*args: Any, **kwargs: Any) -> object:
            return MockDriver.memcpy_h2d(drv, *args, **kwargs)

        @staticmethod
        def d2h(*args: Any, **kwargs: Any) -> object:
            return MockDriver.memcpy_d2h(drv, *args, **kwargs)

    outcomes = []
    for copy in (Method, Installed):
        drv.call_log.clear()
        try:
            copy_result: object = copies[shape](copy)
        except Exception as exc:  # the two roads must fail alike
            copy_result = (type(exc), str(exc))
        outcomes.append((copy_result, list(drv.call_log)))
    assert outcomes[0] == outcomes[1]
    if shape == "readonly target":
        assert outcomes[1][0][0] is TypeError  # memoryview refuses the write


def test_a_large_copy_matches(drv: MockDriver, stream: DriverStream) -> None:
    n = 3 << 20
    address = drv.mem_alloc(n)
    try:
        data = pattern(13, n)
        upload(drv, bytearray(n), address, stream)
        upload(drv, data, address, stream)
        assert download(drv, address, n, stream) == data
        assert download(drv, address, n, stream) == data
    finally:
        drv.mem_free(address)


def test_a_copy_outlived_by_its_driver_says_so() -> None:
    if not _enqueue.enabled():
        pytest.skip("the compiled enqueue is not built or is switched off")
    drv = MockDriver()
    drv.stream_create(0)
    copy = drv.memcpy_h2d
    drv.close()
    del drv
    gc.collect()
    with pytest.raises(ReferenceError, match="memcpy_h2d: its driver is gone"):
        copy(memoryview(bytearray(4)), 0, None)


def test_a_dropped_driver_lets_its_memory_go_at_once() -> None:
    """The copies hold the driver weakly and nothing of it: no cycle keeps its
    arrays until the next collection."""
    if not _enqueue.enabled():
        pytest.skip("the compiled enqueue is not built or is switched off")
    drv = MockDriver()
    stream = drv.stream_create(0)
    address = drv.mem_alloc(SIZE)
    for _ in range(2):
        upload(drv, pattern(15), address, stream)
    memory = weakref.ref(next(iter(drv._arrays.values())))
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        del drv
        assert memory() is None
    finally:
        if was_enabled:
            gc.enable()


def test_the_constructor_checks_its_arguments() -> None:
    module = _enqueue._module()
    if module is None:
        pytest.skip("the compiled enqueue is not built or is switched off")
    drv = MockDriver()
    try:
        with pytest.raises(TypeError, match="method must be callable"):
            module.MockCopy(owner=drv, method=3, to_device=True)
        with pytest.raises(AttributeError, match="no __dict__"):
            module.MockCopy(owner=object(), method=print, to_device=True)
        with pytest.raises(TypeError):
            module.MockCopy(drv, print, True)  # keywords only
        made = module.MockCopy(owner=drv, method=MockDriver.memcpy_d2h, to_device=False)
        assert "memcpy_d2h" in repr(made)
    finally:
        drv.close()

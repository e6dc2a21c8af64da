"""What a new user hit (issue 32, item 5): public names, clear messages, honest reports."""

from __future__ import annotations

import pickle
import traceback

import numpy as np
import pytest

import aruntime as ar

_ERRORS = [
    getattr(ar, name)
    for name in ar.__all__
    if isinstance(getattr(ar, name), type) and issubclass(getattr(ar, name), Exception)
]


def test_every_public_exception_is_counted() -> None:
    assert ar.AruntimeError in _ERRORS and ar.StoreHazardError in _ERRORS
    assert len(_ERRORS) >= 11


@pytest.mark.parametrize("cls", _ERRORS, ids=lambda c: c.__name__)
def test_exceptions_are_named_by_their_public_module(cls: type[Exception]) -> None:
    assert cls.__module__ == "aruntime"
    try:
        raise cls("boom")
    except cls as err:
        shown = "".join(traceback.format_exception_only(type(err), err))
    assert shown.startswith(f"aruntime.{cls.__name__}: boom")
    back = pickle.loads(pickle.dumps(cls("boom")))
    assert type(back) is cls and str(back) == "boom"


def test_np_asarray_of_a_device_ptr_says_to_copy_it(mock_backend: ar.Backend) -> None:
    ptr = mock_backend.alloc(16)
    try:
        with pytest.raises(TypeError, match=r"DevicePtr.*copy_d2h"):
            np.asarray(ptr)
        with pytest.raises(TypeError, match=r"DevicePtr.*copy_d2h"):
            np.array(ptr)
        with pytest.raises(TypeError, match="slices"):
            ptr[0]  # type: ignore[index]
    finally:
        mock_backend.free(ptr)


# -- fault injection is public ------------------------------------------------------

_CALLS = {
    "alloc": lambda gpu, a, b, h: gpu.alloc(8),
    "alloc_host_pinned": lambda gpu, a, b, h: gpu.alloc_host_pinned(8),
    "copy_h2d_async": lambda gpu, a, b, h: gpu.copy_h2d_async(h, a).wait(),
    "copy_d2h_async": lambda gpu, a, b, h: gpu.copy_d2h_async(a, h).wait(),
    "copy_d2d_async": lambda gpu, a, b, h: gpu.copy_d2d_async(a, b, 64).wait(),
    "copy_d2d_2d_async": lambda gpu, a, b, h: gpu.copy_d2d_2d_async(a, 8, b, 8, 8, 8).wait(),
    "memset_async": lambda gpu, a, b, h: gpu.memset_async(a, 0, 64).wait(),
    "launch": lambda gpu, a, b, h: gpu.unary(a, b, 16, "relu").wait(),
    "any": lambda gpu, a, b, h: gpu.memset_async(a, 0, 64).wait(),
}


def test_fault_ops_are_the_public_call_names() -> None:
    import aruntime.testing as testing

    assert set(testing.FAULT_OPS) == {*_CALLS, "launch_graph"}
    for op in testing.FAULT_OPS:
        assert op == "any" or hasattr(ar.Backend, op), op


@pytest.mark.parametrize("op", sorted(_CALLS))
def test_inject_fault_by_public_op_name(op: str) -> None:
    import aruntime.testing as testing

    with ar.open_backend("mock") as gpu:
        a, b = gpu.alloc(64), gpu.alloc(64)
        host = np.zeros(64, np.uint8)
        testing.inject_fault(gpu, op, ar.NotSupportedError)
        with pytest.raises(ar.NotSupportedError, match="injected") as info:
            _CALLS[op](gpu, a, b, host)
        assert info.value.name == "MOCK_INJECTED_FAULT"
        again = _CALLS[op](gpu, a, b, host)  # count=1: the next one succeeds
        if isinstance(again, ar.DevicePtr):
            gpu.free(again)
        elif isinstance(again, ar.HostBuffer):
            gpu.free_host_pinned(again)
        gpu.free(a)
        gpu.free(b)


def test_inject_fault_keeps_the_old_short_names() -> None:
    with ar.open_backend("mock") as gpu:
        a = gpu.alloc(64)
        gpu.driver.inject_fault("memset", ar.DriverError)  # type: ignore[attr-defined]
        with pytest.raises(ar.DriverError, match="injected"):
            gpu.memset(a, 0, 64)
        gpu.driver.inject_fault("copy_h2d_async", ar.DriverError)  # type: ignore[attr-defined]
        with pytest.raises(ar.DriverError, match="injected"):
            gpu.copy_h2d(np.zeros(8, np.uint8), a)
        gpu.free(a)


def test_inject_fault_rejects_what_it_cannot_do(tmp_path: object) -> None:
    import aruntime.testing as testing

    with ar.open_backend("mock") as gpu:
        with pytest.raises(
            ar.InvalidArgumentError, match=r"inject_fault: op 'copy'.*copy_h2d_async"
        ):
            testing.inject_fault(gpu, "copy")
        with pytest.raises(TypeError, match=r"inject_fault: expected an aruntime\.Backend"):
            testing.inject_fault(gpu.driver, "launch")  # type: ignore[arg-type]
        testing.inject_fault(gpu, "launch", ar.DeviceLostError)
        testing.clear_faults(gpu)
        a = gpu.alloc(8)
        gpu.memset(a, 0, 8)  # nothing injected any more
        gpu.free(a)


def test_inject_fault_on_a_sim_says_only_the_mock_takes_it() -> None:
    import aruntime.testing as testing

    try:
        gpu = ar.open_backend("cuda-sim")
    except ar.BackendUnavailableError as exc:
        pytest.skip(f"cuda-sim: {exc}")
    with gpu, pytest.raises(ar.NotSupportedError, match=r"inject_fault: backend 'cuda-sim'.*mock"):
        testing.inject_fault(gpu, "launch")

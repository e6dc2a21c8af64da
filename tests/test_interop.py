"""Interop: DeviceArray (CUDA Array Interface, DLPack, numpy), __cuda_stream__, wrap_stream."""

from __future__ import annotations

import ctypes
import gc
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aruntime as ar
from aruntime import _dlpack
from tests.skip_summary import one_line

ROOT = Path(__file__).resolve().parents[1]

_is_capsule = ctypes.pythonapi.PyCapsule_IsValid
_is_capsule.restype = ctypes.c_int
_is_capsule.argtypes = [ctypes.py_object, ctypes.c_char_p]


@pytest.fixture
def mock() -> Iterator[ar.Backend]:
    with ar.open_backend("mock") as gpu:
        yield gpu
        assert gpu.live_alloc_count() == 0


def open_or_skip(name: str) -> ar.Backend:
    try:
        return ar.open_backend(name)
    except ar.BackendUnavailableError as exc:
        pytest.skip(f"{name} unavailable: {exc}")


@pytest.fixture
def cuda_sim() -> Iterator[ar.Backend]:
    gpu = open_or_skip("cuda-sim")
    try:
        yield gpu
    finally:
        gpu.close()


# -- DeviceArray on the mock ------------------------------------------------------------------


def test_array_view_shape_and_bounds(mock: ar.Backend) -> None:
    dev = mock.alloc(4096)
    a = mock.array(dev, (16, 8), np.float32)
    assert isinstance(a, ar.DeviceArray)
    assert a.ptr is dev and a.shape == (16, 8) and a.dtype == np.float32
    assert a.strides == (32, 4) and a.nbytes == 512 and a.size == 128 and a.ndim == 2
    assert a.is_c_contiguous and len(a) == 16
    assert mock.array(dev, 10, "u1").shape == (10,)
    with pytest.raises(ar.InvalidArgumentError, match="past the end of a 4096-byte"):
        mock.array(dev, (1025,), np.float32)
    with pytest.raises(ar.InvalidArgumentError, match="not a numeric dtype"):
        mock.array(dev, 4, object)
    with pytest.raises(ar.InvalidArgumentError, match="multiples of the itemsize"):
        mock.array(dev, (2, 2), np.float32, strides=(6, 4))
    with pytest.raises(TypeError):
        mock.array(dev, (2.0,), np.float32)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        mock.array(int(dev), 4, np.float32)  # type: ignore[arg-type]
    mock.free(dev)
    with pytest.raises(ar.InvalidArgumentError):
        mock.array(dev, 4, np.float32)  # freed


def test_numpy_round_trip_and_strided_to_numpy(mock: ar.Backend) -> None:
    host = np.arange(24, dtype=np.int32).reshape(4, 6)
    with mock.array_from_numpy(host) as a:
        assert a.shape == (4, 6) and a.dtype == np.int32
        np.testing.assert_array_equal(a.to_numpy(), host)
        # Every other column: byte strides over the same memory.
        cols = mock.array(a.ptr, (4, 3), np.int32, strides=(24, 8))
        assert not cols.is_c_contiguous
        np.testing.assert_array_equal(cols.to_numpy(), host[:, ::2])
        assert mock.live_alloc_count() == 1
    assert mock.live_alloc_count() == 0  # the owning array freed its memory
    empty = mock.array_from_numpy(np.zeros((0, 3), np.float64))
    assert empty.to_numpy().shape == (0, 3)
    empty.close()
    empty.close()  # idempotent


def test_dropped_owning_array_warns_and_frees(mock: ar.Backend) -> None:
    with pytest.warns(ResourceWarning, match="unclosed <DeviceArray"):
        mock.array_from_numpy(np.ones(8, np.float32))  # dropped at once, never closed
        gc.collect()
    assert mock.live_alloc_count() == 0


def test_mock_memory_has_no_implicit_host_view(mock: ar.Backend) -> None:
    # Mock device memory is numpy memory, but a device's is not host memory:
    # numpy must refuse it here as it does there, or a test passes only here.
    dev = mock.alloc(64)
    mock.copy_h2d(np.arange(16, dtype=np.float32), dev)
    a = mock.array(dev, (4, 4), np.float32)
    assert a.__dlpack_device__() == (_dlpack.KDL_EXT_DEV, 0)
    assert not hasattr(a, "__cuda_array_interface__")
    assert not hasattr(a, "__array_interface__")
    with pytest.raises(TypeError, match=r"DeviceArray on mock is device memory .*to_numpy"):
        np.asarray(a)
    with pytest.raises(RuntimeError, match=r"[Dd]evice"):
        np.from_dlpack(a)
    # The explicit ways: a copy, and the mock driver's own view for inspection.
    np.testing.assert_array_equal(a.to_numpy()[1], [4, 5, 6, 7])
    seen = mock.driver.view(int(dev), 64).view(np.float32)  # type: ignore[attr-defined]
    np.testing.assert_array_equal(seen, np.arange(16, dtype=np.float32))
    mock.free(dev)


def test_unconsumed_capsule_releases_its_owner(mock: ar.Backend) -> None:
    dev = mock.alloc(16)
    a = mock.array(dev, 4, np.int32)
    before = _dlpack.live_exports()
    capsule = a.__dlpack__()
    assert _is_capsule(capsule, b"dltensor")
    assert _dlpack.live_exports() == before + 1
    del capsule
    gc.collect()
    assert _dlpack.live_exports() == before
    with pytest.raises(BufferError, match="copy=True"):
        a.__dlpack__(copy=True)
    with pytest.raises(BufferError, match="not"):
        a.__dlpack__(dl_device=(2, 0))
    mock.free(dev)


def test_mock_streams_are_not_cuda_streams(mock: ar.Backend) -> None:
    st = mock.create_stream()
    assert not hasattr(st, "__cuda_stream__")
    with pytest.raises(ar.NotSupportedError):
        mock.wrap_stream(1234)
    with pytest.raises(TypeError, match="cannot find a stream handle"):
        mock.wrap_stream("stream")
    st.close()


# -- CUDA (cuda-sim) --------------------------------------------------------------------------


def test_cuda_array_interface_and_stream_protocol(cuda_sim: ar.Backend) -> None:
    gpu = cuda_sim
    dev = gpu.alloc(1024)
    st = gpu.create_stream()
    version, handle = st.__cuda_stream__()
    assert version == 0 and isinstance(handle, int) and handle
    a = gpu.array(dev, (8, 16), np.float64, stream=st)
    cai = a.__cuda_array_interface__
    assert cai["version"] == 3
    assert cai["data"] == (int(dev), False)
    assert cai["shape"] == (8, 16) and cai["typestr"] == "<f8" and cai["strides"] is None
    assert cai["stream"] == handle
    default = gpu.array(dev, 4, np.uint8).__cuda_array_interface__["stream"]
    assert default == gpu.default_stream().__cuda_stream__()[1]
    strided = gpu.array(dev, (4, 4), np.float64, strides=(64, 8)).__cuda_array_interface__
    assert strided["strides"] == (64, 8)
    assert a.__dlpack_device__() == (2, 0)  # kDLCUDA
    assert not hasattr(a, "__array_interface__")
    for consumer in (None, 1, 2, -1):  # legacy default, legacy, per-thread, no sync
        capsule = a.__dlpack__(stream=consumer)
        assert _is_capsule(capsule, b"dltensor")
        del capsule
    with pytest.raises(TypeError):
        a.__dlpack__(stream="s")
    st.close()
    gpu.free(dev)


def test_dlpack_orders_the_consumer_stream_after_ours(cuda_sim: ar.Backend) -> None:
    gpu = cuda_sim
    n = 1 << 20
    dev = gpu.alloc(n)
    ours, theirs = gpu.create_stream(), gpu.create_stream()
    gpu.memset_async(dev, 9, n, stream=ours)
    a = gpu.array(dev, n, np.uint8, stream=ours)
    capsule = a.__dlpack__(stream=theirs.__cuda_stream__()[1])
    out = np.zeros(n, np.uint8)
    gpu.copy_d2h_async(dev, out, stream=theirs).wait()  # waits for the memset on the device
    assert (out == 9).all()
    del capsule
    ours.close()
    theirs.close()
    gpu.free(dev)


@pytest.mark.parametrize("name", ["mock", "cuda-sim", "levelzero-sim"])
def test_numpy_refusing_device_memory_is_an_ordinary_error(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # numpy reads host memory only, and drops the capsule with its error set:
    # the capsule's destructor must clean up without running Python then.
    unraisable: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    gpu = open_or_skip(name)
    try:
        with gpu.array_from_numpy(np.arange(4, dtype=np.float32)) as a:
            before = _dlpack.live_exports()
            with pytest.raises(RuntimeError, match=r"[Dd]evice") as info:
                np.from_dlpack(a)
            assert not isinstance(info.value, SystemError)
            assert _dlpack.live_exports() == before  # the refused export was released
            np.testing.assert_array_equal(a.to_numpy(), np.arange(4, dtype=np.float32))
    finally:
        gpu.close()
    assert unraisable == []


class _ProtocolStream:
    def __init__(self, handle: int) -> None:
        self._handle = handle

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self._handle)


class _CupyLike:
    def __init__(self, handle: int) -> None:
        self.ptr = handle


class _TorchLike:
    def __init__(self, handle: int) -> None:
        self.cuda_stream = handle


@pytest.mark.anyio
async def test_wrap_stream_awaits_cuda_bindings_work(cuda_sim: ar.Backend) -> None:
    gpu = cuda_sim  # opened first, so cuda-bindings' dlopen of libcuda.so.1 finds the sim
    cb: Any = pytest.importorskip("cuda.bindings.driver", reason="pip install cuda-bindings")
    ok = cb.CUresult.CUDA_SUCCESS
    assert cb.cuInit(0)[0] == ok
    gpu.bind_to_thread()  # aruntime's primary context, current for cuda-bindings
    err, foreign = cb.cuStreamCreate(0)
    assert err == ok
    n = 1 << 20
    dev = gpu.alloc(n)
    host = (np.arange(n) % 251).astype(np.uint8)
    try:
        for obj in (
            foreign,
            int(foreign),
            _ProtocolStream(int(foreign)),
            _CupyLike(int(foreign)),
            _TorchLike(int(foreign)),
        ):
            with gpu.wrap_stream(obj) as wrapped:
                assert wrapped.foreign and "foreign" in repr(wrapped)
                assert wrapped.__cuda_stream__() == (0, int(foreign))
        wrapped = gpu.wrap_stream(foreign)
        # Work enqueued by cuda-bindings, awaited through aruntime.
        assert cb.cuMemcpyHtoDAsync(int(dev), host.ctypes.data, n, foreign)[0] == ok
        assert cb.cuMemsetD8Async(int(dev), 0xEE, 16, foreign)[0] == ok
        await gpu.synchronize(wrapped)
        expected = host.copy()
        expected[:16] = 0xEE
        out = np.zeros(n, np.uint8)
        # aruntime work on the wrapped stream is ordered after the foreign work.
        assert cb.cuMemsetD8Async(int(dev) + 16, 0xDD, 16, foreign)[0] == ok
        expected[16:32] = 0xDD
        await gpu.copy_d2h_async(dev, out, stream=wrapped)
        np.testing.assert_array_equal(out, expected)
        wrapped.close()
        wrapped.close()
        # Closing the wrapper left the native stream alone: its owner destroys it.
        assert cb.cuStreamSynchronize(foreign)[0] == ok
    finally:
        assert cb.cuStreamDestroy(foreign)[0] == ok
        gpu.free(dev)


def test_wrap_stream_rejects_bad_handles(cuda_sim: ar.Backend) -> None:
    with pytest.raises(TypeError):
        cuda_sim.wrap_stream(True)
    with pytest.raises(TypeError):
        cuda_sim.wrap_stream(1.5)
    with pytest.raises(ar.InvalidArgumentError):
        cuda_sim.wrap_stream(-3)
    with pytest.raises(ar.DriverError):
        cuda_sim.wrap_stream(0xDEAD0000)  # not a stream the driver knows


# -- Level Zero -------------------------------------------------------------------------------


def test_levelzero_dlpack_device_and_no_cuda_protocols() -> None:
    gpu = open_or_skip("levelzero-sim")
    try:
        dev = gpu.alloc(64)
        a = gpu.array(dev, 16, np.float32)
        assert a.__dlpack_device__() == (14, 0)  # kDLOneAPI
        assert not hasattr(a, "__cuda_array_interface__")
        assert not hasattr(gpu.default_stream(), "__cuda_stream__")
        capsule = a.__dlpack__()
        assert _is_capsule(capsule, b"dltensor")
        del capsule
        with pytest.raises(ar.NotSupportedError):
            gpu.wrap_stream(1)
        with gpu.array_from_numpy(np.arange(4, dtype=np.float32)) as b:
            np.testing.assert_array_equal(b.to_numpy(), np.arange(4, dtype=np.float32))
        gpu.free(dev)
    finally:
        gpu.close()


# -- CuPy and PyTorch on a real GPU -------------------------------------------------------------
# Each runs in a fresh process: once cuda-sim is loaded in this one, libcuda.so.1
# means the sim here, and the real driver cannot be opened next to it.

_GPU_PRELUDE = """
import json
import sys
import anyio
import numpy as np
import aruntime as ar

def skip(reason):
    # JSON keeps the reason's lines (a "tried:" list) for the parent to join.
    print("SKIP:", json.dumps(str(reason)))
    sys.exit(0)

try:
    gpu = ar.open_backend("cuda")
except ar.BackendUnavailableError as exc:
    skip(f"no CUDA GPU: {exc}")
host = np.arange(1 << 16, dtype=np.float32)
"""

_CUPY = """
try:
    import cupy as cp
except ImportError:
    skip("cupy is not installed")

async def main():
    with gpu.array_from_numpy(host) as a:
        view = cp.asarray(a)  # __cuda_array_interface__: no copy
        assert int(view.data.ptr) == int(a.ptr)
        np.testing.assert_array_equal(cp.asnumpy(view), host)
        theirs = cp.cuda.Stream(non_blocking=True)
        with theirs:
            view *= 2
        with gpu.wrap_stream(theirs) as wrapped:
            await gpu.synchronize(wrapped)  # CuPy's kernel, awaited from the loop
        np.testing.assert_array_equal(a.to_numpy(), host * 2)
        np.testing.assert_array_equal(cp.asnumpy(cp.from_dlpack(a)), host * 2)

anyio.run(main)
gpu.close()
print("OK")
"""

_TORCH = """
try:
    import torch
except ImportError:
    skip("torch is not installed")
if not torch.cuda.is_available():
    skip("PyTorch sees no CUDA device")

async def main():
    with gpu.array_from_numpy(host) as a:
        t = torch.from_dlpack(a)
        assert t.device.type == "cuda" and t.data_ptr() == int(a.ptr)
        theirs = torch.cuda.Stream()
        with torch.cuda.stream(theirs):
            t.mul_(3)
        with gpu.wrap_stream(theirs) as wrapped:
            await gpu.synchronize(wrapped)  # PyTorch's kernel, awaited from the loop
        np.testing.assert_array_equal(a.to_numpy(), host * 3)
        u = torch.as_tensor(a, device="cuda")  # __cuda_array_interface__
        assert u.data_ptr() == int(a.ptr)

anyio.run(main)
gpu.close()
print("OK")
"""


@pytest.mark.gpu
@pytest.mark.parametrize("library", ["cupy", "torch"])
def test_gpu_library_interop(library: str) -> None:
    source = _GPU_PRELUDE + (_CUPY if library == "cupy" else _TORCH)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("ARUNTIME_BACKEND", None)
    done = subprocess.run(
        [sys.executable, "-c", source], env=env, capture_output=True, text=True, timeout=300
    )
    out = done.stdout.strip().splitlines()
    if done.returncode == 0 and out and out[-1].startswith("SKIP:"):
        pytest.skip(_child_skip_reason(out[-1]))
    assert done.returncode == 0 and out[-1:] == ["OK"], done.stdout + done.stderr


def _child_skip_reason(line: str) -> str:
    """The reason a child's ``SKIP: "<json>"`` line gives, on one line that reads whole."""
    return " ".join(one_line(json.loads(line[len("SKIP: ") :])).split())


def test_child_skip_reason_reads_cleanly() -> None:
    reason = (
        "no CUDA GPU: the cuda backend is unavailable; tried:\n"
        "  - libcuda.so.1 cannot be loaded:  no such file\n"
        "  - /usr/lib/libcuda.so.1 cannot be loaded"
    )
    assert _child_skip_reason("SKIP: " + json.dumps(reason)) == (
        "no CUDA GPU: the cuda backend is unavailable; tried: libcuda.so.1 cannot be "
        "loaded: no such file; /usr/lib/libcuda.so.1 cannot be loaded"
    )

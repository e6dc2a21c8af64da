"""After a kernel fault, both sims stay lost as their drivers document (docs/backends.md).

cuda.h: after ``CUDA_ERROR_ILLEGAL_ADDRESS`` "any further CUDA work will
return the same error" until the process is relaunched; ze_api.h: a lost
device "must be reset for use" and its contexts are invalid.  So on both
sims a fault outlives the backend that made it: a new backend on the device
fails too.  Every one of those errors names the kernel that lost the device
and the line that launched it, for a real fault and an injected one alike.
The test hook that stands in for a relaunch (or a device reset) recovers.

Each scenario runs in a fresh interpreter, under asyncio and under trio: a
lost CUDA process is one to relaunch, and so is this test's.  (Alone, a
process also showed a crash the enqueue of a download on the lost device
left behind: the cuda backend's staged copies now drop their buffer export
when the enqueue raises.)
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import aruntime as ar
from aruntime.backends._sim_faults import _sim_function

ROOT = Path(__file__).resolve().parents[2]

ILLEGAL_ADDRESS = 3  # arsim_inject_fault's kind


def _recover(kind: str) -> None:
    clear = _sim_function(
        kind, "arze_sim_clear_faults" if kind == "levelzero-sim" else "arsim_clear_faults"
    )
    clear.restype = None
    clear()


def _close_lost(gpu: ar.Backend) -> None:
    # The download raised the launch's failure (stream order), so it was seen:
    # close() does not raise it again.  The buffer the lost device still
    # holds is freed by close(), with the usual warning.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gpu.close()


async def _fault_then_download(gpu: ar.Backend, n: int) -> tuple[str, str]:
    """Launch ``scale_f32`` over ``n`` floats of a 16-byte buffer; the D2H's error, the site."""
    buf = gpu.alloc(16)
    await gpu.copy_h2d_async(np.arange(4, dtype=np.float32), buf)
    kern = gpu.kernel(gpu.builtin_module("vector_ops"), "scale_f32")
    site = f"{__file__}:{sys._getframe().f_lineno + 1}"
    gpu.launch(kern, max(1, n // 256), 256, [np.uint32(n), np.float32(2), buf])
    # As a test would write it: only the download is awaited.
    with pytest.raises(ar.DeviceLostError) as info:
        await gpu.copy_d2h_async(buf, np.empty(4, np.float32))
    return str(info.value), site


@pytest.mark.parametrize("loop", ["asyncio", "trio"])
@pytest.mark.parametrize("kind", ["cuda-sim", "levelzero-sim"])
@pytest.mark.parametrize(
    "scenario",
    [
        "kernel_fault_outlives_the_backend",
        "injected_loss_behaves_the_same",
        "synchronize_raises_after_the_faulting_launch",
        "a_fault_after_other_launches_names_its_own_line",
    ],
)
def test_sticky_fault(scenario: str, kind: str, loop: str) -> None:
    code = (
        "import anyio, tests.backends.test_sim_sticky_faults as t; "
        f"anyio.run(t.{scenario}, {kind!r}, backend={loop!r})"
    )
    path = os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))
    run = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, f"{scenario} on {kind} ({loop}):\n{run.stdout}{run.stderr}"


async def kernel_fault_outlives_the_backend(kind: str) -> None:
    gpu = ar.open_backend(kind)
    message, site = await _fault_then_download(gpu, 64)  # 256 bytes into a 16-byte buffer
    assert f"kernel scale_f32 (launched at {site})" in message, message
    assert "past its end" in message, message
    with pytest.raises(ar.DeviceLostError, match="scale_f32"):
        gpu.alloc(8)
    _close_lost(gpu)
    # A new backend on the lost device fails at once, naming the same launch.
    with pytest.raises(ar.DeviceLostError) as info:
        ar.open_backend(kind)
    assert "lost earlier" in str(info.value), info.value
    assert f"kernel scale_f32 (launched at {site})" in str(info.value), info.value
    _recover(kind)
    with ar.open_backend(kind) as fresh:
        buf = fresh.alloc(16)
        await fresh.memset_async(buf, 3, 16)
        assert (await fresh.copy_d2h_async(buf, np.empty(16, np.uint8))).tolist() == [3] * 16
        fresh.free(buf)


async def injected_loss_behaves_the_same(kind: str) -> None:
    gpu = ar.open_backend(kind)
    inject = _sim_function(kind, "arsim_inject_fault")
    inject.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    assert inject(-1, ILLEGAL_ADDRESS, 1) == 0
    message, site = await _fault_then_download(gpu, 4)  # in bounds: the injection faults it
    assert f"kernel scale_f32 (launched at {site}): injected illegal address" in message, message
    _close_lost(gpu)
    with pytest.raises(ar.DeviceLostError) as info:
        ar.open_backend(kind)
    assert f"kernel scale_f32 (launched at {site}): injected" in str(info.value), info.value
    _recover(kind)
    ar.open_backend(kind).close()


async def a_fault_after_other_launches_names_its_own_line(kind: str) -> None:
    """Launches after the first find the user's frame in one step (EntryCaller), and a
    fault still names its own launch's line, not an earlier one's."""
    from aruntime.backends._sim_faults import one_step_notes

    gpu = ar.open_backend(kind)
    buf = gpu.alloc(16)
    kern = gpu.kernel(gpu.builtin_module("vector_ops"), "scale_f32")
    args = [np.uint32(4), np.float32(2), buf]
    # The first launch of a signature lays it out in Python; the later ones take the
    # compiled launch where it is built, one frame shorter: each road walks once.
    await gpu.launch(kern, 1, 256, args)
    await gpu.launch(kern, 1, 256, args)
    await gpu.launch(kern, 1, 256, args)
    jumps = one_step_notes(kind)
    assert jumps >= 1, "the third launch walked the stack again"
    message, site = await _fault_then_download(gpu, 64)
    assert f"kernel scale_f32 (launched at {site})" in message, message
    assert one_step_notes(kind) > jumps, "the faulting launch walked the stack again"
    _close_lost(gpu)
    _recover(kind)


async def synchronize_raises_after_the_faulting_launch(kind: str) -> None:
    """synchronize() covers the launch that lost the device, and raises only once it has settled.

    Its own marker fails at enqueue on the lost device; it must still finish
    behind the launch queued before it, and close() must not raise again what
    the synchronize raised.  Thread timing decides which comes first, so the
    round runs many times.
    """
    for _ in range(25):
        gpu = ar.open_backend(kind)
        buf = gpu.alloc(16)
        kern = gpu.kernel(gpu.builtin_module("vector_ops"), "scale_f32")
        n = 1 << 16
        launch = gpu.launch(kern, n // 256, 256, [np.uint32(n), np.float32(2), buf])
        with pytest.raises(ar.DeviceLostError):
            await gpu.synchronize()
        assert launch.finished, "synchronize() raised before the launch it covers had settled"
        _close_lost(gpu)
        _recover(kind)

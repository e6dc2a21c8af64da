"""A pinned smoke of dpctl on levelzero-sim: what a dpctl user does first.

Run it with the Python of a venv that has .ci/dpctl/requirements.txt, under
``eval "$(aruntime env levelzero-sim)"`` (run.py sets that up).  Each check
prints ``ok`` or ``FAIL`` with its reason; the last line counts them, and
the exit status is 1 when one failed.
"""

from __future__ import annotations

import ctypes
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

import dpctl
import dpctl.memory as dpm
import dpctl.program as dpp
import numpy as np

SIM_NAME = "aruntime levelzero-sim"


def check_devices() -> None:
    devices = dpctl.get_devices()
    assert devices, "dpctl lists no device"
    for dev in devices:
        assert dev.backend == dpctl.backend_type.level_zero, dev
        assert dev.device_type == dpctl.device_type.gpu, dev
        assert dev.name.startswith(SIM_NAME), dev.name
    assert dpctl.SyclDevice().name.startswith(SIM_NAME)


def check_usm_round_trips() -> None:
    q = dpctl.SyclQueue()
    data = np.random.default_rng(7).integers(0, 255, size=1 << 20, dtype=np.uint8)
    for kind in (dpm.MemoryUSMDevice, dpm.MemoryUSMShared, dpm.MemoryUSMHost):
        usm = kind(data.nbytes, queue=q)
        q.memcpy(usm, data, data.nbytes)
        back = np.zeros_like(data)
        q.memcpy(back, usm, data.nbytes)
        assert np.array_equal(back, data), kind.__name__
    moved = dpm.MemoryUSMDevice(data.nbytes, queue=q)
    q.memcpy(moved, usm, data.nbytes)  # device to device
    back = np.zeros_like(data)
    moved.copy_to_host(back)
    assert np.array_equal(back, data)


def _axpy_kernel(q: dpctl.SyclQueue) -> dpctl.SyclKernel:
    # dpctl's own test image: add(a, b, c) and axpy(a, b, c, d): c = a + d * b.
    image = Path(dpctl.__file__).parent / "tests" / "input_files" / "multi_kernel.spv"
    return dpp.create_program_from_spirv(q, image.read_bytes()).get_sycl_kernel("axpy")


def check_spirv_kernel_and_profiling() -> None:
    q = dpctl.SyclQueue(property="enable_profiling")
    n = 4096
    a = np.arange(n, dtype=np.int32)
    b = (np.arange(n, dtype=np.int32) * 7) % 1000
    dev_a = dpm.MemoryUSMDevice(a.nbytes, queue=q)
    shared_b = dpm.MemoryUSMShared(b.nbytes, queue=q)
    host_c = dpm.MemoryUSMHost(a.nbytes, queue=q)
    q.memcpy(dev_a, a, a.nbytes)
    q.memcpy(shared_b, b, b.nbytes)
    ev = q.submit(_axpy_kernel(q), [dev_a, shared_b, host_c, ctypes.c_int(-3)], [n], [64])
    ev.wait()
    c = np.zeros_like(a)
    q.memcpy(c, host_c, c.nbytes)
    assert np.array_equal(c, a - 3 * b), np.flatnonzero(c != a - 3 * b)[:8]
    submit, start, end = ev.profiling_info_submit, ev.profiling_info_start, ev.profiling_info_end
    assert 0 < submit <= start <= end < 1 << 62, (submit, start, end)


CHECKS: dict[str, Callable[[], None]] = {
    "devices": check_devices,
    "usm_round_trips": check_usm_round_trips,
    "spirv_kernel_and_profiling": check_spirv_kernel_and_profiling,
}


def main() -> int:
    failed = 0
    for name, check in CHECKS.items():
        try:
            check()
            print(f"ok   {name}")
        except Exception:
            failed += 1
            print(f"FAIL {name}:\n{traceback.format_exc()}")
    print(f"smoke: {len(CHECKS) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""printf in a kernel that aruntime launches on cuda-sim: the output is written
by the time the launch's await returns.

aruntime's await ends in the driver's cuEventSynchronize (its waiter thread's
``event_wait``, also after a query saw the op done), and cuEventSynchronize
is one of the flush points CUDA documents for the printf FIFO.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aruntime as ar

ROOT = Path(__file__).resolve().parents[3]
PTX = ROOT / "tests" / "ffi" / "ptx" / "printf.ptx"

pytestmark = pytest.mark.skipif(
    not (ROOT / "ffi" / "cuda" / "sim").is_dir(), reason="no software CUDA driver in this checkout"
)


@pytest.mark.anyio
async def test_awaiting_a_launch_writes_its_printf_output(capfd: Any) -> None:
    async with ar.open_backend("cuda-sim") as gpu:
        kernel = gpu.kernel(gpu.load_module("printing", PTX.read_bytes()), "per_thread")
        with gpu.create_stream() as stream:
            out = gpu.alloc(4 * 64)
            capfd.readouterr()
            await gpu.launch(kernel, 2, 32, [out], stream=stream)
            lines = capfd.readouterr().out.splitlines()
            returned = await gpu.copy_d2h_async(out, np.zeros(64, np.int32), stream=stream)
            gpu.free(out)
    assert sorted(lines) == sorted(f"thread {t} block {b}" for b in range(2) for t in range(32))
    assert returned.tolist() == [2] * 64

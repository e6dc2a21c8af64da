"""DevicePool: several devices opened together, work sent to the least busy.

The software drivers have ``ARUNTIME_SIM_DEVICES`` devices, read when the
driver loads, so the two-device cases run in a fresh process each.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import aruntime as ar

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.anyio


async def test_a_mock_pool_serves_and_closes() -> None:
    async with ar.open_pool("mock") as pool:
        assert len(pool) == 1 and pool.backends[0].name == "mock"
        gpu = pool.least_busy()
        ptr = gpu.alloc(4)
        await gpu.memset_async(ptr, 7, 4)
        assert await gpu.copy_d2h_async(ptr, bytearray(4)) == bytearray(b"\x07" * 4)
        gpu.free(ptr)
    assert pool.closed and all(b.closed for b in pool.backends)
    with pytest.raises(ar.ClosedResourceError, match="least_busy: the DevicePool is closed"):
        pool.least_busy()
    pool.close()  # idempotent


def test_least_busy_passes_over_closed_devices() -> None:
    with ar.open_pool("mock", devices=[0]) as pool:
        pool.backends[0].close()
        with pytest.raises(ar.ClosedResourceError, match="every device"):
            pool.least_busy()


@pytest.mark.parametrize(
    ("devices", "error", "match"),
    [
        ("0", TypeError, "devices must be a sequence of ints or None, got str"),
        ([0, 0], ar.InvalidArgumentError, "device 0 is listed twice"),
        ([], ar.InvalidArgumentError, "devices is empty"),
        ([-1], ar.InvalidArgumentError, "must be >= 0, got -1"),
        ([True], TypeError, "devices must hold ints, got bool"),
        ([0, 1], ar.BackendUnavailableError, "device 1 does not exist"),
    ],
)
def test_bad_devices_are_refused(devices: object, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        ar.open_pool("mock", devices=devices)  # type: ignore[arg-type]


def test_bad_kind_is_refused() -> None:
    with pytest.raises(ar.InvalidArgumentError, match="unknown backend 'gpu'"):
        ar.open_pool("gpu")
    with pytest.raises(TypeError, match="kind must be a str"):
        ar.open_pool(0)  # type: ignore[arg-type]


def test_an_unclosed_pool_warns() -> None:
    import gc

    pool = ar.open_pool("mock")
    for b in pool.backends:
        b.close()
    with pytest.warns(ResourceWarning, match="DevicePool of mock"):
        del pool
        gc.collect()


TWO_DEVICES = textwrap.dedent(
    """
    import sys
    from collections import Counter

    import anyio
    import numpy as np

    import aruntime as ar

    kind, loop = sys.argv[1], sys.argv[2]

    async def request(pool, i, seen):
        gpu = pool.least_busy()
        seen[gpu.device.name] += 1
        n = 4096
        host = np.full(n, i, np.float32)
        buf = gpu.alloc(host.nbytes)
        stream = gpu.create_stream()
        try:
            gpu.copy_h2d_async(host, buf, stream=stream)
            kern = gpu.kernel(gpu.builtin_module("vector_ops"), "scale_f32")
            gpu.launch(kern, n // 256, 256, [np.uint32(n), np.float32(2), buf], stream=stream)
            out = await gpu.copy_d2h_async(buf, np.empty_like(host), stream=stream)
            assert (out == 2 * i).all(), (i, out[:4])
        finally:
            stream.close()
            gpu.free(buf)

    async def main():
        seen = Counter()
        async with ar.open_pool(kind) as pool:
            assert len(pool) == 2, pool
            assert {b.device.name for b in pool.backends} == {
                b.device.name for b in pool.backends}
            async with anyio.create_task_group() as tg:
                for i in range(64):
                    tg.start_soon(request, pool, i, seen)
        print("SEEN", dict(seen))
        assert len(seen) == 2 and sum(seen.values()) == 64, seen

    anyio.run(main, backend=loop)
    print("OK")
    """
)


@pytest.mark.parametrize("loop", ["asyncio", "trio"])
@pytest.mark.parametrize("kind", ["cuda-sim", "levelzero-sim"])
def test_64_requests_land_on_both_sim_devices(kind: str, loop: str) -> None:
    env = {
        **os.environ,
        "ARUNTIME_SIM_DEVICES": "2",
        # Slow enough that a device is still busy when the next request chooses.
        "ARUNTIME_SIM_OP_LATENCY_US": "300",
        "PYTHONPATH": str(ROOT),
    }
    proc = subprocess.run(
        [sys.executable, "-c", TWO_DEVICES, kind, loop],
        env=env,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stdout + proc.stderr


def test_least_busy_prefers_the_device_with_less_queued() -> None:
    # Two handles on the one mock device stand in for two devices: the
    # threaded mock keeps ops pending until its worker runs them.
    a = ar.open_backend("mock", latency=0.05)
    b = ar.open_backend("mock")
    pool = ar.DevicePool([a, b], _site=("x", 1))
    try:
        busy = pool.backends[0]
        ptr = busy.alloc(64)
        pending = [busy.memset_async(ptr, 0, 64) for _ in range(4)]
        assert busy.statistics().pending_ops > 0
        assert all(pool.least_busy() is b for _ in range(6))
        for c in pending:
            c.wait()
        busy.free(ptr)
    finally:
        pool.close()

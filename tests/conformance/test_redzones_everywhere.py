"""Guard bands (ARUNTIME_REDZONE=1) on every backend."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import aruntime as ar
from aruntime import testing
from aruntime._ledger import REDZONE_BYTES


@pytest.fixture(params=testing.CONFORMANCE_BACKENDS)
def rz_backend(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ar.Backend]:
    monkeypatch.setenv("ARUNTIME_REDZONE", "1")  # read when the backend opens
    gpu = testing._open_or_skip(request.param)
    try:
        yield gpu
    finally:
        gpu.close()


def test_guard_bands_catch_an_overflow(rz_backend: ar.Backend) -> None:
    gpu = rz_backend
    a = gpu.alloc(1000)
    b = gpu.alloc_managed(24)
    data = (np.arange(1000) % 256).astype(np.uint8)
    gpu.copy_h2d(data, a)
    gpu.memset(b, 7, 24)
    out = np.empty(1000, np.uint8)
    gpu.copy_d2h(a, out)
    np.testing.assert_array_equal(out, data)
    assert gpu.scan_redzones() == 0
    # A copy that runs 8 bytes past the end of ``a``, as a wrong pointer in
    # native code would (the driver call bypasses aruntime's checks).
    gpu.driver.memcpy_d2d(b.address, a.address + 1000 - 16, 24, gpu.default_stream().handle)
    gpu.synchronize().wait(30)
    assert gpu.scan_redzones() == 1
    assert gpu.poison_redzones(0x11, 0x22) == 2  # rewrites the bands: clean again
    assert gpu.scan_redzones() == 0
    assert REDZONE_BYTES >= 64
    gpu.free(a)
    gpu.free(b)

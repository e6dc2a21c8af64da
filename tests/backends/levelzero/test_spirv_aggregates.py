"""Structs and arrays as SPIR-V values on levelzero-sim.

``OpCompositeConstruct`` of a struct or an array, ``OpCompositeExtract`` and
``OpCompositeInsert`` through index paths, phis, calls and returns of them,
and whole loads and stores (``spirv/aggregates.spvasm``; SYCL's functors and
``std::pair``-like values take these shapes).  The sim refused every
aggregate value at module creation; it now keeps one slot per leaf, members
in order.  Checked against numpy.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import aruntime as ar
from aruntime._exceptions import DriverError

HERE = Path(__file__).resolve().parent / "spirv"
S = np.dtype([("x", np.uint32), ("y", np.float32), ("z", np.uint32, 2)])


def test_structs_and_arrays_as_values(gpu: ar.Backend) -> None:
    n = 128
    rng = np.random.default_rng(3131)
    a = rng.integers(0, 1 << 28, n, dtype=np.uint32)
    b = rng.standard_normal(n).astype(np.float32)
    module = gpu.load_module("aggregates.spv", (HERE / "aggregates.spv").read_bytes())
    host = [a, b, np.zeros(n, S), np.zeros(9 * n, np.uint32)]
    ptrs = [gpu.alloc(h.nbytes) for h in host]
    try:
        for h, p in zip(host, ptrs, strict=True):
            gpu.copy_h2d(h, p)
        gpu.launch(gpu.kernel(module, "aggregates"), n // 64, 64, ptrs)
        gpu.synchronize().wait()
        s_out = gpu.copy_d2h(ptrs[2], np.zeros(n, S))
        out = gpu.copy_d2h(ptrs[3], np.zeros(9 * n, np.uint32)).reshape(n, 9)
    finally:
        for p in ptrs:
            gpu.free(p)
    np.testing.assert_array_equal(s_out["x"], a)
    np.testing.assert_array_equal(s_out["y"].view(np.uint32), b.view(np.uint32))
    np.testing.assert_array_equal(s_out["z"], np.stack([a + 1, a + 2], 1))
    odd = (np.arange(n) & 1).astype(bool)
    want = np.stack(
        [
            2 * a,
            np.full(n, 7, np.uint32),
            4 * a,
            a + 2,  # t.s.z[1]
            4 * a,  # t.a[2]
            np.where(odd, np.uint32(99), a),  # the phi's x
            b.view(np.uint32),  # the loaded struct's y
            a + 2,  # f(s)[2]
            np.full(n, 30, np.uint32),  # the constant array, element 2
        ],
        axis=1,
    )
    for k in range(9):
        np.testing.assert_array_equal(out[:, k], want[:, k], err_msg=f"column {k}")


def test_a_value_past_255_components_is_refused(gpu: ar.Backend) -> None:
    image = "refused_big_aggregate.spv"
    with pytest.raises(DriverError, match="MODULE_BUILD_FAILURE") as info:
        gpu.load_module(image, (HERE / image).read_bytes())
    assert "with more than 255 components" in str(info.value)

"""Bitcasts between vectors of other lane counts, on levelzero-sim's executor.

dpnp's complex kernels bitcast, for example, two doubles into four floats;
the sim refused any bitcast but a 64-bit value to and from two 32-bit lanes
("bitcasts that regroup vector lanes", 116 of dpnp.tests.tensor's first
failures, issue 31).  ``spirv/bitcast_lanes.cl`` casts between 8-, 16-, 32-
and 64-bit lanes both ways, checked against numpy's views of the same bytes.
"""

from __future__ import annotations

import numpy as np

import aruntime as ar

from .test_spirv_hints import run


def test_bitcasts_regroup_lanes_as_memory_does(gpu: ar.Backend) -> None:
    n = 64
    rng = np.random.default_rng(116)
    a = rng.integers(0, 2**64 - 2, 2 * n, dtype=np.uint64)
    b = rng.integers(0, 256, 16 * n, dtype=np.uint8)
    outs = [np.zeros(16 * n, np.uint8) for _ in range(5)]
    *_, o1, o2, o3, o4, o5 = run(gpu, "bitcast_lanes.spv", "lanes", 1, n, [a, b, *outs])
    x, y = a + np.uint64(1), b + np.uint8(3)
    np.testing.assert_array_equal(o1.view(np.uint64), y.view(np.uint64))
    np.testing.assert_array_equal(o2, x.view(np.uint8))
    np.testing.assert_array_equal(
        o3.view(np.int32), (x.view(np.int16) + np.int16(1)).view(np.int32)
    )
    # Through float32 (times 1) and float64 (plus 0): NaN payloads and -0 may
    # change there, so the check is of the lanes that are ordinary numbers.
    f4 = x.view(np.float32)
    f8 = f4.view(np.float64)
    plain = np.isfinite(f8) & (f8 != 0) & np.all(np.isfinite(f4).reshape(-1, 2), axis=1)
    got = o4.view(np.uint64)[plain]
    np.testing.assert_array_equal(got, (f8[plain] + 0.0).view(np.uint64))
    np.testing.assert_array_equal(o5.view(np.int16), y.view(np.int16))

"""Intel sub-group shuffles of vectors on levelzero-sim's SPIR-V executor.

SPV_INTEL_subgroups lets ``OpSubgroupShuffle(Xor/Down/Up)INTEL`` take a
vector: each component moves as the scalar shuffle moves it, every component
from the same work-item.  oneMKL's ``sgemm_kernel`` (dpnp's f32 ``matmul``)
shuffles ``float4`` values; the executor refused vector operands of every
group operation.  ``spirv/intel_shuffle_vec.cl`` (clang-15 -O2, llvm-spirv-15
with ``--spirv-ext=+SPV_INTEL_subgroups``) shuffles float2/4/8/16, int4, uint2
and uint8, checked here bit for bit against a numpy model of the lanes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aruntime as ar

HERE = Path(__file__).resolve().parent / "spirv"

SG = 16  # the sim's sub-group size
GROUPS, SIZE = 3, 64
N = GROUPS * SIZE

TYPES = {
    "float2": (np.float32, 2),
    "float4": (np.float32, 4),
    "float8": (np.float32, 8),
    "float16": (np.float32, 16),
    "int4": (np.int32, 4),
    "uint2": (np.uint32, 2),
    "uint8": (np.uint32, 8),
}


@pytest.fixture(scope="module")
def module(gpu: ar.Backend) -> ar.Module:
    name = "intel_shuffle_vec.spv"
    return gpu.load_module(name, (HERE / name).read_bytes())


def run(gpu: ar.Backend, module: ar.Module, kernel: str, args: list[Any]) -> list[np.ndarray]:
    """Launches GROUPS x SIZE work-items on device copies of the arrays; returns them."""
    ptrs = []
    try:
        for a in args:
            p = gpu.alloc(a.nbytes)
            gpu.copy_h2d(a, p)
            ptrs.append((p, a))
        gpu.launch(gpu.kernel(module, kernel), GROUPS, SIZE, [p for p, _ in ptrs])
        gpu.synchronize().wait()
        return [gpu.copy_d2h(p, np.empty_like(a)) for p, a in ptrs]
    finally:
        for p, _ in ptrs:
            gpu.free(p)


def model(x: np.ndarray, y: np.ndarray, lane: np.ndarray, delta: int, mask: int) -> np.ndarray:
    """The four shuffles of each work-item (x, y: (N, comps)), as (N, 4, comps)."""
    out = np.empty((len(x), 4, x.shape[1]), x.dtype)
    for i in range(len(x)):
        base, j = i - i % SG, i % SG
        out[i, 0] = x[base + lane[i]]
        out[i, 1] = x[base + (j ^ mask)]
        down = j + delta  # current, then next
        out[i, 2] = x[base + down] if down < SG else y[base + down - SG]
        up = j - delta  # previous, then current
        out[i, 3] = x[base + up] if up >= 0 else y[base + up + SG]
    return out


@pytest.mark.parametrize("delta,mask", [(5, 3), (0, 0), (15, 15), (1, 8)])
@pytest.mark.parametrize("type_name", list(TYPES))
def test_vector_shuffles_move_whole_vectors(
    gpu: ar.Backend, module: ar.Module, type_name: str, delta: int, mask: int
) -> None:
    dtype, comps = TYPES[type_name]
    rng = np.random.default_rng(comps * 100 + delta)
    if dtype == np.float32:
        x = rng.standard_normal((N, comps)).astype(dtype)
        y = rng.standard_normal((N, comps)).astype(dtype)
    else:
        x = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, (N, comps), dtype=dtype)
        y = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, (N, comps), dtype=dtype)
    lane = rng.integers(0, SG, N).astype(np.uint32)
    params = np.array([delta, mask], np.uint32)
    out = np.zeros((N, 4, comps), dtype)
    *_, got = run(gpu, module, f"shuf_{type_name}", [x, y, lane, params, out])
    want = model(x, y, lane, delta, mask)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))

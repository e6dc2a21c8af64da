"""Capabilities dpnp's SPIR-V images declare, run on levelzero-sim's executor.

Issue 31 found most of dpnp's images refused for a capability the sim could
take: hints that are exact to ignore (``ExpectAssumeKHR``,
``MemoryAccessAliasingINTEL``, ``FPFastMathModeINTEL``, ``OptNoneINTEL``) and uniform group
arithmetic (``GroupUniformArithmeticKHR``), which the sim runs as the
collectives they are.  Each is tested with a hand-assembled module
(``spirv/*.spvasm``, built by ``spirv/build.py`` with spirv-as) against numpy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import aruntime as ar

HERE = Path(__file__).resolve().parent / "spirv"


def run(
    gpu: ar.Backend, image: str, kernel: str, groups: int, size: int, args: list[Any]
) -> list[np.ndarray]:
    """Launches groups x size work-items on device copies of the arrays; returns them."""
    # Named by its kernel too: a test may run two kernels of one image.
    module = gpu.load_module(f"{image}:{kernel}", (HERE / image).read_bytes())
    ptrs = []
    try:
        for a in args:
            p = gpu.alloc(a.nbytes)
            gpu.copy_h2d(a, p)
            ptrs.append((p, a))
        gpu.launch(gpu.kernel(module, kernel), groups, size, [p for p, _ in ptrs])
        gpu.synchronize().wait()
        return [gpu.copy_d2h(p, np.empty_like(a)) for p, a in ptrs]
    finally:
        for p, _ in ptrs:
            gpu.free(p)


def test_expect_and_assume_are_identity_and_nothing(gpu: ar.Backend) -> None:
    x = (np.arange(256, dtype=np.uint32) * 5) % 7  # the assumption x < 7 holds
    _, out = run(gpu, "expect_assume.spv", "expect_assume", 4, 64, [x, np.zeros(768, np.uint32)])
    np.testing.assert_array_equal(out.reshape(-1, 3), np.stack([x + 1, x, 2 * x], axis=1))


def test_alias_scopes_are_accepted_and_ignored(gpu: ar.Backend) -> None:
    a = np.arange(256, dtype=np.uint32) * 11
    _, out = run(gpu, "aliasing.spv", "scaled_copy", 4, 64, [a, np.zeros(256, np.uint32)])
    np.testing.assert_array_equal(out, a * 3)


def test_opt_none_functions_run(gpu: ar.Backend) -> None:
    x = np.arange(256, dtype=np.uint32) * 7
    _, out = run(gpu, "optnone.spv", "optnone", 4, 64, [x, np.zeros(256, np.uint32)])
    np.testing.assert_array_equal(out, 3 * x + 1)


def test_fast_math_flags_leave_each_operation_rounded(gpu: ar.Backend) -> None:
    rng = np.random.default_rng(31)
    a, b, c = (rng.standard_normal(256).astype(np.float32) for _ in range(3))
    *_, out = run(gpu, "fast_math.spv", "mul_add", 4, 64, [a, b, c, np.zeros(256, np.float32)])
    # Rounded twice (no contraction into an fma), bit for bit.
    np.testing.assert_array_equal(out.view(np.uint32), (a * b + c).view(np.uint32))


def _scan(values: np.ndarray, op: Any, identity: Any, inclusive: bool) -> np.ndarray:
    out = np.empty_like(values)
    acc = identity
    for j, v in enumerate(values):
        if inclusive:
            acc = op(acc, v)
            out[j] = acc
        else:
            out[j] = acc
            acc = op(acc, v)
    return out


def test_uniform_group_arithmetic_runs(gpu: ar.Backend) -> None:
    groups, size, sub = 4, 64, 16
    n = groups * size
    rng = np.random.default_rng(6400)
    x = rng.integers(1, 4, n).astype(np.uint32)  # 1, 2 or 3
    fx = rng.choice(np.array([0.5, 1.0, 2.0, -1.0], np.float32), n)
    _, _, u, f = run(
        gpu,
        "group_uniform.spv",
        "uniform_ops",
        groups,
        size,
        [x, fx, np.zeros(8 * n, np.uint32), np.zeros(n, np.float32)],
    )
    u = u.reshape(n, 8)
    mul, xor, bor = np.multiply, np.bitwise_xor, np.bitwise_or
    want = np.zeros((n, 8), np.uint32)
    for g in range(groups):
        wg = slice(g * size, (g + 1) * size)
        want[wg, 1] = _scan(x[wg], mul, np.uint32(1), inclusive=True)
        want[wg, 3] = np.bitwise_and.reduce(x[wg] | 0xF0)
        want[wg, 6] = np.any(x[wg] == 3)
        for s in range(size // sub):
            sg = slice(g * size + s * sub, g * size + (s + 1) * sub)
            xs = x[sg]
            want[sg, 0] = np.prod(xs, dtype=np.uint32)
            want[sg, 2] = _scan(xs, xor, np.uint32(0), inclusive=False)
            want[sg, 4] = _scan(xs << np.arange(sub, dtype=np.uint32), bor, np.uint32(0), True)
            want[sg, 5] = np.all(xs != 2)
            want[sg, 7] = _scan(xs == 1, np.logical_xor, False, inclusive=True)
        fw = np.empty(size, np.float32)
        fw[:] = _scan(fx[wg], mul, np.float32(1), inclusive=False)
        np.testing.assert_array_equal(f[wg], fw, err_msg=f"FMul exclusive scan, group {g}")
    for k in range(8):
        np.testing.assert_array_equal(u[:, k], want[:, k], err_msg=f"column {k}")

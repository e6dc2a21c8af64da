"""Half precision on levelzero-sim's SPIR-V executor: exact, or refused by name.

Issue 31 found a module with ``OpFAdd`` on 16-bit floats run as an integer
add of the bit patterns, and the capabilities Vector16, Float16Buffer and
Float16 (7, 8, 9) read shifted by one.  Here half arithmetic, conversions and
comparisons (``spirv/half.cl`` at -O0 and -O2, and ``spirv/float16_cap.spvasm``,
which declares ``Float16`` itself) are checked bit for bit against numpy's
float16 (IEEE half, round to nearest even) over every class of value:
zeros, subnormals, normals, the largest finite values, infinities and NaNs.
OpenCL.std math on halves runs (``test_spirv_half_math.py``); an OpenCL.std
instruction the executor runs on no width is refused at module creation with
a message naming it and the half type.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aruntime as ar
from aruntime._exceptions import DriverError

from .test_spirv_hints import run as run_groups

HERE = Path(__file__).resolve().parent / "spirv"
HALF_BUILDS = ("half_O0.spv", "half_O2.spv")
f16 = np.float16


@pytest.fixture(scope="module", params=HALF_BUILDS)
def module(request: pytest.FixtureRequest, gpu: ar.Backend) -> ar.Module:
    name = str(request.param)
    return gpu.load_module(name, (HERE / name).read_bytes())


def run(gpu: ar.Backend, module: ar.Module, kernel: str, n: int, args: list[Any]) -> list[Any]:
    """Launches n work-items on device copies of the arrays; returns them read back."""
    ptrs = []
    try:
        for a in args:
            p = gpu.alloc(max(a.nbytes, 4))
            gpu.copy_h2d(a, p)
            ptrs.append((p, a))
        gpu.launch(gpu.kernel(module, kernel), n // 64, 64, [p for p, _ in ptrs])
        gpu.synchronize().wait()
        return [gpu.copy_d2h(p, np.empty_like(a)) for p, a in ptrs]
    finally:
        for p, _ in ptrs:
            gpu.free(p)


def operands(n: int) -> tuple[np.ndarray, np.ndarray]:
    """n pairs of halves: every class of value, then random bit patterns."""
    special = np.array(
        [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0200, 0x0400, 0x3C00, 0xBC00, 0x3C01,
         0x7BFF, 0xFBFF, 0x7BFE, 0x7C00, 0xFC00, 0x7E00, 0x3555, 0x0003, 0x4000, 0xC000],
        dtype=np.uint16,
    )  # fmt: skip
    rng = np.random.default_rng(31)
    a = rng.integers(0, 1 << 16, n, dtype=np.uint16)
    b = rng.integers(0, 1 << 16, n, dtype=np.uint16)
    # Every pair of special values, and each special value against random ones.
    k = len(special)
    a[: k * k] = np.repeat(special, k)
    b[: k * k] = np.tile(special, k)
    a[k * k : k * k + 1024] = special[rng.integers(0, k, 1024)]
    # Small values, whose sums and products land among the subnormals.
    small = rng.integers(0, 0x0C00, 2048, dtype=np.uint16) | (rng.integers(0, 2, 2048) << 15)
    a[-2048:] = small
    b[-2048:] = small[::-1]
    return a.view(f16), b.view(f16)


def assert_same_halves(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Equal bit for bit, except that any NaN matches any NaN."""
    got_bits, want_bits = got.view(np.uint16), want.view(np.uint16)
    both_nan = np.isnan(got) & np.isnan(want)
    bad = np.flatnonzero((got_bits != want_bits) & ~both_nan)
    assert not bad.size, (
        f"{what}: {bad.size} of {got.size} wrong, e.g. at {bad[:5]}: "
        f"got {got_bits[bad[:5]]}, want {want_bits[bad[:5]]}"
    )


def test_half_arithmetic_rounds_as_ieee_half(gpu: ar.Backend, module: ar.Module) -> None:
    n = 16384
    a, b = operands(n)
    outs = [np.zeros(n, f16) for _ in range(5)]
    _, _, total, diff, prod, quot, neg = run(gpu, module, "half_arith", n, [a, b, *outs])
    with np.errstate(all="ignore"):
        want = {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b, "neg": -a}
    for (what, w), got in zip(want.items(), (total, diff, prod, quot, neg), strict=True):
        assert_same_halves(got, w, what)
    # The sample reaches the subnormal results the issue is about.
    assert np.count_nonzero((np.abs(want["add"]) < 6.1e-5) & (want["add"] != 0)) > 100
    assert np.count_nonzero((np.abs(want["mul"]) < 6.1e-5) & (want["mul"] != 0)) > 100


def test_half_conversions_round_to_nearest_even(gpu: ar.Backend, module: ar.Module) -> None:
    n = 16384
    rng = np.random.default_rng(9)
    # Doubles near halves' rounding boundaries, subnormals, overflow, and specials.
    h, _ = operands(n)
    with np.errstate(all="ignore"):
        ulp = np.abs(np.spacing(h).astype(np.float64))
        steps = rng.choice([0.0, 0.5, -0.5, 0.25, 0.75, 0.4999999, 0.5000001], n)
        d = np.where(np.isfinite(ulp), h.astype(np.float64) + ulp * steps, h.astype(np.float64))
        d[:6] = [65519.99, 65520.0, -65520.0, 2.0**-25, 2.0**-25 * 1.0000001, 3 * 2.0**-26]
        f = d.astype(np.float32)
    outs = [np.zeros(n, f16), np.zeros(n, f16), h, np.zeros(n, np.float32), np.zeros(n)]
    _, _, from_f, from_d, _, to_f, to_d = run(gpu, module, "half_convert", n, [f, d, *outs])
    with np.errstate(all="ignore"):
        assert_same_halves(from_f, f.astype(f16), "float -> half")
        assert_same_halves(from_d, d.astype(f16), "double -> half")
    np.testing.assert_array_equal(to_f, h.astype(np.float32))
    np.testing.assert_array_equal(to_d, h.astype(np.float64))


def test_half_comparisons(gpu: ar.Backend, module: ar.Module) -> None:
    n = 8192
    a, b = operands(n)
    outs = [np.zeros(n, np.int32) for _ in range(5)]
    _, _, lt, le, eq, ne, nan = run(gpu, module, "half_compare", n, [a, b, *outs])
    np.testing.assert_array_equal(lt != 0, a < b)
    np.testing.assert_array_equal(le != 0, a <= b)
    np.testing.assert_array_equal(eq != 0, a == b)
    np.testing.assert_array_equal(ne != 0, a != b)
    np.testing.assert_array_equal(nan != 0, np.isnan(a))


def test_a_module_declaring_float16_runs_half_adds(gpu: ar.Backend) -> None:
    mod = gpu.load_module("float16_cap", (HERE / "float16_cap.spv").read_bytes())
    n = 4096
    a, b = operands(n)
    _, _, total = run(gpu, mod, "add_halves", n, [a, b, np.zeros(n, f16)])
    with np.errstate(all="ignore"):
        assert_same_halves(total, a + b, "add (Float16 module)")
    # The example: -2.0 + 0.3 is not the integer sum of the bit patterns.
    x, y = np.full(64, -2.0, f16), np.full(64, 0.3, f16)
    _, _, out = run(gpu, mod, "add_halves", 64, [x, y, np.zeros(64, f16)])
    assert_same_halves(out, x + y, "-2.0 + 0.3")


def test_a_module_declaring_vector16_loads(gpu: ar.Backend) -> None:
    """Capability 7 is Vector16 (the sim once refused it as "Float16 (7)")."""
    gpu.load_module("vector16_cap", (HERE / "vector16_cap.spv").read_bytes())


def test_openclstd_unsupported_on_halves_is_refused_naming_it(gpu: ar.Backend) -> None:
    """rootn, which the sim runs on no width: refused naming it and the type
    (the message once named only OpExtInst, for any OpenCL.std on halves)."""
    with pytest.raises(DriverError, match="MODULE_BUILD_FAILURE") as info:
        gpu.load_module("refused_half_math", (HERE / "refused_half_math.spv").read_bytes())
    message = str(info.value)
    assert "OpenCL.std rootn (54) on half (16-bit float) values is not supported" in message
    assert "at word" in message


def _steps(values: np.ndarray, op: Any, identity: Any, inclusive: bool) -> np.ndarray:
    """A scan in work-item order, each step rounded to half (numpy's float16)."""
    out = np.empty_like(values)
    acc = np.float16(identity)
    for j, v in enumerate(values):
        if not inclusive:
            out[j] = acc
        acc = np.float16(op(acc, v))
        if inclusive:
            out[j] = acc
    return out


def test_collectives_on_halves_round_each_step(gpu: ar.Backend) -> None:
    """dpnp's f2 sums and cumulative sums were refused (OpGroupFAdd on half):
    reductions and scans now round each step to half, in work-item order."""
    groups, size, sub = 2, 64, 16
    rng = np.random.default_rng(16)
    # Values near 1 whose sums and products each round (a float32 result
    # rounded to half would differ from these in the last bit often).
    x = rng.uniform(0.8, 1.25, groups * size).astype(np.float16)
    args = [x, np.zeros(8 * x.size, np.float16)]
    _, out = run_groups(gpu, "half_groups.spv", "half_groups", groups, size, args)
    out = out.reshape(-1, 8)
    add, mul = np.add, np.multiply
    want = np.zeros_like(out)
    for g in range(groups):
        wg = slice(g * size, (g + 1) * size)
        want[wg, 0] = _steps(x[wg], add, 0, True)[-1]
        want[wg, 1] = _steps(x[wg], add, 0, True)
        want[wg, 5] = x[wg].max()
        for s in range(size // sub):
            sg = slice(g * size + s * sub, g * size + (s + 1) * sub)
            want[sg, 2] = _steps(x[sg], add, 0, True)[-1]
            want[sg, 3] = _steps(x[sg], add, 0, False)
            want[sg, 4] = x[sg].min()
            want[sg, 6] = _steps(x[sg], mul, 1, True)
            want[sg, 7] = x[sg][3]
    for k in range(8):
        np.testing.assert_array_equal(out[:, k].view(np.uint16), want[:, k].view(np.uint16), f"{k}")

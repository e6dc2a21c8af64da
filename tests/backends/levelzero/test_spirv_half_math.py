"""OpenCL.std math on halves, on levelzero-sim's executor.

dpnp's tensor suite had 388 tests refused at module creation, every one for
OpenCL.std math on half values (``f2`` kernels: sin, exp, pow, hypot, floor
...).  The sim now runs each OpenCL.std float function on halves as
``np.float16(f(x.astype(np.float64)))`` computes it: each operand widened
exactly to double, the double function, the result rounded once to half, to
nearest even.  ``spirv/half_math.cl`` (built by ``spirv/build.py``) applies
every such function to halves, scalars and vectors, and each result is
checked bit for bit (any NaN matching any NaN) against that (Python's math
where numpy lacks the function): the unary functions on every one of the
65,536 halves (zeros, subnormals, the largest finite values, infinities,
NaNs), the others on every pair of special values and random ones.  ``fma``
and ``mad`` are exact so: a * b is exact in double, and where a * b + c is
not, it lies far from any tie between halves.  What the sim runs on no width
stays refused, naming the instruction and the half type
(``test_spirv_half.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

import aruntime as ar

from .test_spirv_half import assert_same_halves
from .test_spirv_hints import run
from .test_spirv_powr import powr

f16, f64 = np.float16, np.float64
ALL_HALVES = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(f16)
SPECIAL = np.array(
    [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0200, 0x0400, 0x3C00, 0xBC00, 0x3C01, 0x7BFF,
     0xFBFF, 0x7BFE, 0x7C00, 0xFC00, 0x7E00, 0x3555, 0x0003, 0x4000, 0xC000, 0x3800, 0xB800,
     0x4200, 0xC200],
    dtype=np.uint16,
).view(f16)  # fmt: skip


def launch(gpu: ar.Backend, kernel: str, n: int, args: list[np.ndarray]) -> np.ndarray:
    """Runs n work-items of half_math.spv's kernel; its last argument read back."""
    *_, out = run(gpu, "half_math.spv", kernel, n // 64, 64, args)
    return out


def vectorized(f: Callable[[float], float]) -> Callable[[np.ndarray], np.ndarray]:
    """A float function of Python's math (numpy has no erf, erfc) over an array."""
    return lambda x: np.array([f(v) for v in x.tolist()], f64)


def logb(x: np.ndarray) -> np.ndarray:
    """C's logb: the exponent of x as a float (subnormals too), -inf at zero."""
    exponent = (np.frexp(x)[1] - 1).astype(f64)
    return np.where(x == 0, -np.inf, np.where(np.isfinite(x), exponent, np.abs(x)))


def c_round(x: np.ndarray) -> np.ndarray:
    """C's round: halfway cases away from zero (exact for halves' doubles)."""
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


def sign(x: np.ndarray) -> np.ndarray:
    """OpenCL's sign: 1, -1, the zero itself, NaN for NaN."""
    return np.where(x > 0, 1.0, np.where(x < 0, -1.0, x * 0))


# half_unary's outputs, in order, as numpy's float64 functions.
UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin, "asinh": np.arcsinh,
    "atan": np.arctan, "atanh": np.arctanh, "cbrt": np.cbrt, "ceil": np.ceil, "cos": np.cos,
    "cosh": np.cosh, "erfc": vectorized(math.erfc), "erf": vectorized(math.erf), "exp": np.exp,
    "exp2": np.exp2, "exp10": lambda x: np.power(10.0, x), "expm1": np.expm1, "fabs": np.abs,
    "floor": np.floor, "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p,
    "logb": logb, "rint": np.rint, "round": c_round, "rsqrt": lambda x: 1 / np.sqrt(x),
    "sin": np.sin, "sinh": np.sinh, "sqrt": np.sqrt, "tan": np.tan, "tanh": np.tanh,
    "trunc": np.trunc, "degrees": lambda x: x * (180 / np.pi),
    "radians": lambda x: x * (np.pi / 180), "sign": sign, "negate": np.negative,
    "copy": lambda x: x,
}  # fmt: skip


def to_half(want: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        return want.astype(f16)


def test_unary_math_on_every_half(gpu: ar.Backend) -> None:
    x = ALL_HALVES
    out = launch(gpu, "half_unary", x.size, [x, np.zeros(x.size * len(UNARY), f16)])
    out = out.reshape(x.size, len(UNARY))
    with np.errstate(all="ignore"):
        for k, (name, f) in enumerate(UNARY.items()):
            assert_same_halves(out[:, k], to_half(f(x.astype(f64))), name)


def pairs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n pairs of halves: every pair of special values, moderate bases and
    exponents (pow's results spread over halves' range), then random bits."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 1 << 16, n, dtype=np.uint16).view(f16)
    b = rng.integers(0, 1 << 16, n, dtype=np.uint16).view(f16)
    k = SPECIAL.size
    a[: k * k], b[: k * k] = np.repeat(SPECIAL, k), np.tile(SPECIAL, k)
    m = min(4096, n - k * k)
    a[k * k : k * k + m] = rng.uniform(0, 4, m)
    b[k * k : k * k + m] = rng.uniform(-12, 12, m)
    return a, b


def nextafter(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's nextafter in half: b where a == b (numpy's float16 gives a)."""
    return np.where(a == b, b, np.nextafter(a, b)).astype(f64)


def remainder(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """IEEE remainder (Python's math.remainder; numpy's is the floored one):
    NaN for an infinite x or a zero y, x for an infinite y."""
    ok = np.isfinite(x) & ~np.isnan(y) & (y != 0)
    pairs = zip(x.tolist(), y.tolist(), ok.tolist(), strict=True)
    return np.array([math.remainder(p, q) if o else math.nan for p, q, o in pairs], f64)


def test_binary_math_on_halves(gpu: ar.Backend) -> None:
    n = 16384
    a, b = pairs(n, 16)
    rng = np.random.default_rng(17)
    # ldexp's and pown's int operand: small, and past any half's range.
    k = rng.integers(-40, 40, n).astype(np.int32)
    k[:12] = [0, 1, -1, 24, -24, 30, -30, 100_000, -100_000, 2**31 - 1, -(2**31), 16]
    out = launch(gpu, "half_binary", n, [a, b, k, np.zeros(16 * n, f16)]).reshape(n, 16)
    x, y = a.astype(f64), b.astype(f64)
    with np.errstate(all="ignore"):
        fdim = np.where(np.isnan(x) | np.isnan(y), np.nan, np.where(x > y, x - y, 0.0))
        want = {
            "atan2": np.arctan2(x, y), "copysign": np.copysign(x, y), "fdim": fdim,
            "fmax": np.fmax(x, y), "fmin": np.fmin(x, y), "fmod": np.fmod(x, y),
            "hypot": np.hypot(x, y), "nextafter": nextafter(a, b), "pow": np.power(x, y),
            "powr": powr(a, b).astype(f64), "remainder": remainder(x, y),
            "step": np.where(y < x, 0.0, 1.0), "ldexp": np.ldexp(x, k),
            "pown": np.power(x, k.astype(f64)), "max": np.fmax(x, y), "min": np.fmin(x, y),
        }  # fmt: skip
        for j, (name, w) in enumerate(want.items()):
            assert_same_halves(out[:, j], to_half(w), name)


def test_ternary_math_on_halves(gpu: ar.Backend) -> None:
    n = 16384
    a, b = pairs(n, 18)
    rng = np.random.default_rng(19)
    c = rng.integers(0, 1 << 16, n, dtype=np.uint16).view(f16)
    # c near the tie between the two halves nearest a * b, and tiny: where
    # fma's single rounding and a double rounding would part.
    x, y = a.astype(f64), b.astype(f64)
    with np.errstate(all="ignore"):
        near = to_half(x * y).astype(f64)
        tie = near + np.copysign(np.abs(np.spacing(to_half(x * y))).astype(f64) / 2, x * y - near)
        c[:4096] = to_half(tie - x * y)[:4096]
        c[4096:6144] = SPECIAL[rng.integers(0, SPECIAL.size, 2048)]
    out = launch(gpu, "half_ternary", n, [a, b, c, np.zeros(4 * n, f16)]).reshape(n, 4)
    z = c.astype(f64)
    with np.errstate(all="ignore"):
        want = {
            "fma": x * y + z, "mad": x * y + z, "clamp": np.fmin(np.fmax(x, y), z),
            "mix": x + (y - x) * z,
        }  # fmt: skip
        for j, (name, w) in enumerate(want.items()):
            assert_same_halves(out[:, j], to_half(w), name)


def test_vectors_of_halves(gpu: ar.Backend) -> None:
    """half4 lane by lane through vload4 and vstore4, and the instructions
    that move halves' bits: select, bitselect, shuffle, shuffle2."""
    n = 4096
    a, b = pairs(4 * n, 20)
    rng = np.random.default_rng(21)
    k = rng.integers(-30, 30, 4 * n).astype(np.int32)
    s = rng.integers(-(1 << 15), 1 << 15, 4 * n).astype(np.int16)
    out = launch(gpu, "half_vector", n, [a, b, k, s, np.zeros(36 * n, f16)])
    out = out.reshape(n, 9, 4)
    x, y = a.reshape(n, 4), b.reshape(n, 4)
    xd, yd, m = x.astype(f64), y.astype(f64), s.reshape(n, 4)
    lanes = m.view(np.uint16) & 7
    xb, yb, mb = x.view(np.uint16), y.view(np.uint16), m.view(np.uint16)
    both = np.concatenate([x, y], axis=1)
    with np.errstate(all="ignore"):
        want = {
            "sin": to_half(np.sin(xd)), "atan2": to_half(np.arctan2(xd, yd)),
            "fma": to_half(xd * yd + xd), "ldexp": to_half(np.ldexp(xd, k.reshape(n, 4))),
            "select": np.where(m < 0, y, x), "bitselect": ((xb & ~mb) | (yb & mb)).view(f16),
            "shuffle": np.take_along_axis(x, (lanes & 3).astype(np.intp), axis=1),
            "shuffle2": np.take_along_axis(both, lanes.astype(np.intp), axis=1),
            "clamp": to_half(np.fmin(np.fmax(xd, -1.5), 2.0)),
        }  # fmt: skip
    for j, (name, w) in enumerate(want.items()):
        assert_same_halves(out[:, j].reshape(-1), w.reshape(-1), name)


def test_scalar_select_of_halves(gpu: ar.Backend) -> None:
    n = 1024
    a, b = pairs(n, 22)
    s = np.random.default_rng(23).integers(-2, 3, n).astype(np.int16)
    out = launch(gpu, "half_select", n, [a, b, s, np.zeros(n, f16)])
    assert_same_halves(out, np.where(s != 0, b, a), "select")


def test_native_and_half_forms_on_halves(gpu: ar.Backend) -> None:
    """native_* and half_* on half operands (``spirv/half_native.spvasm``):
    at full precision, as on floats."""
    x = ALL_HALVES
    y = np.roll(x, 12345)
    *_, out = run(
        gpu, "half_native.spv", "half_native", x.size // 64, 64, [x, y, np.zeros(4 * x.size, f16)]
    )
    out = out.reshape(x.size, 4)
    xd, yd = x.astype(f64), y.astype(f64)
    with np.errstate(all="ignore"):
        want = {"native_sin": np.sin(xd), "half_exp": np.exp(xd), "native_divide": xd / yd,
                "half_recip": 1 / xd}  # fmt: skip
        for j, (name, w) in enumerate(want.items()):
            assert_same_halves(out[:, j], to_half(w), name)

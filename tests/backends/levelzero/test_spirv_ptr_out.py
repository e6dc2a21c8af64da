"""OpenCL.std functions that store through a pointer, on levelzero-sim.

dpnp's ``frexp`` was refused at module creation on every width, with every
other OpenCL.std function that writes through a pointer operand (``modf``,
``fract``, ``sincos``, ``remquo``, ``lgamma_r``), and ``sinpi``, ``cospi``,
``tanpi``, ``tgamma``, ``lgamma``.  ``spirv/cl_ptr_out.cl`` (built by
``spirv/build.py``) runs each on half, float and double, scalars and
4-vectors, through pointers to global, private and local memory; each result
and each stored value is checked against numpy or the host's libm (by
ctypes): frexp, modf, fract exactly (fract per OpenCL C: fmin(x - floor(x),
the largest value below 1), floor(x) stored, signed zeros for zeros and
infinities); sincos, lgamma_r, tgamma, lgamma bit for bit against libm's
function of the width (halves: the double function rounded once); remquo's
remainder bit for bit, its quotient bits as OpenCL C asks (the sign and the
low 7 bits of the rounded quotient, computed exactly here; libm keeps 3, and
those agree); sinpi, cospi, tanpi within 1 ulp of a long double reference
(2 for double) and exactly at OpenCL C's special values.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest

import aruntime as ar
from aruntime._exceptions import DeviceLostError

from . import _simhooks
from .test_spirv_hints import HERE, run

LIBM = ctypes.CDLL("libm.so.6")
f16, f32, f64 = np.float16, np.float32, np.float64
N = 1024  # work-items of the scalar kernels
TYPES = {"half": f16, "float": f32, "double": f64}


def _libm(name: str, ctype: type, *extra: type) -> Callable[..., float]:
    fn = getattr(LIBM, name)
    fn.restype = ctype
    fn.argtypes = [ctype, *extra]
    return fn


def specials(t: type) -> np.ndarray:
    info = np.finfo(t)
    tiny, big = float(info.smallest_subnormal), float(info.max)
    vals = [
        0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.0, -2.0, 3.0, -3.0, 2.5, -2.5, 0.25,
        -0.25, 0.75, -0.75, tiny, -tiny, float(info.smallest_normal), big, -big, math.inf,
        -math.inf, math.nan, 100.5, -7.25, 4.0, -4.0, 5.0, -5.0, 6.5, -6.5, 1000.0, -1001.0,
        0.125, 1e-3, -1e-3, 7.75, 20.0, -20.5, 37.0, -0.999, 1024.0, -2048.0,
    ]  # fmt: skip
    return np.array(vals, dtype=f64).astype(t)


def operands(t: type, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n pairs: special values against each other, moderate values, random bits."""
    rng = np.random.default_rng(seed)
    bits = {f16: np.uint16, f32: np.uint32, f64: np.uint64}[t]
    a = rng.integers(0, np.iinfo(bits).max, n, dtype=bits, endpoint=True).view(t)
    b = rng.integers(0, np.iinfo(bits).max, n, dtype=bits, endpoint=True).view(t)
    s = specials(t)
    k = min(s.size * 8, n // 2)
    a[:k], b[:k] = np.repeat(s, 8)[:k], np.tile(s[[2, 3, 8, 10, 13, 18, 0, 21]], s.size)[:k]
    m = n // 4
    a[k : k + m] = rng.uniform(-40, 40, m).astype(t)
    b[k : k + m] = rng.uniform(-5, 5, m).astype(t)
    b[k + m : k + m + 8] = [3.0, 7.0, 0.375, -3.0, 0.1, 1.0, -1.0, 5.0]  # long quotients
    a[k + m : k + m + 8] = [1000.0, -2047.0, 10000.0, 60000.0, 1e4, 65000.0, 65504.0, 255.0]
    return a, b


def same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Equal bit for bit (floats: any NaN matching any NaN)."""
    got, want = np.asarray(got), np.asarray(want).astype(got.dtype)
    if got.dtype.kind == "f":
        u = {2: np.uint16, 4: np.uint32, 8: np.uint64}[got.itemsize]
        bad = (got.view(u) != want.view(u)) & ~(np.isnan(got) & np.isnan(want))
    else:
        bad = got != want
    where = np.flatnonzero(bad)
    assert not where.size, (
        f"{what}: {where.size} wrong, at {where[:5]}: {got[where[:5]]} != {want[where[:5]]}"
    )


def close(got: np.ndarray, want: np.ndarray, ulps: int, what: str) -> None:
    """Within ulps of want (in got's type), NaN where want is NaN, equal infinities."""
    w = want.astype(got.dtype)
    nan = np.isnan(w)
    assert np.array_equal(np.isnan(got), nan), f"{what}: NaNs differ"
    g, w = got[~nan].astype(f64), w[~nan]
    tol = ulps * np.spacing(np.abs(w)).astype(f64)
    with np.errstate(invalid="ignore"):
        bad = ~((g == w.astype(f64)) | (np.abs(g - w.astype(f64)) <= tol))
    where = np.flatnonzero(bad)
    assert not where.size, f"{what}: {where.size} off, e.g. {g[where[:5]]} vs {w[where[:5]]}"


def fract(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """OpenCL C's fract: fmin(x - floor(x), below 1) and floor(x); zeros keep
    their sign, infinities give a zero of their sign, NaN gives NaN."""
    t = x.dtype.type
    below_one = np.nextafter(t(1), t(0))
    xd = x.astype(f64)
    with np.errstate(invalid="ignore"):
        fl = np.floor(x)
        diff = (xd - np.floor(xd)).astype(t) if t is not f64 else x - fl
        fr = np.fmin(diff, below_one)
    fr = np.where((x == 0) | np.isnan(x), x, np.where(np.isinf(x), np.copysign(t(0), x), fr))
    return fr.astype(t), fl


def remquo_bits(x: float, y: float) -> int | None:
    """OpenCL C's remquo quotient: the sign of x / y and the low 7 bits of the
    quotient rounded to nearest even, exactly; None where the result is NaN."""
    if math.isnan(x) or math.isnan(y) or math.isinf(x) or y == 0:
        return None
    if math.isinf(y):
        return 0
    q = Fraction(x) / Fraction(y)
    n = abs(round(q)) & 127  # Fraction rounds halves to even
    return -n if (math.copysign(1, x) != math.copysign(1, y)) and n else n


class Ref:
    """The host's libm at width t (halves: the double function, rounded once)."""

    def __init__(self, t: type) -> None:
        self.t = t
        c = ctypes.c_float if t is f32 else ctypes.c_double
        s = "f" if t is f32 else ""
        ip = ctypes.POINTER(ctypes.c_int)
        self.sin, self.cos = _libm("sin" + s, c), _libm("cos" + s, c)
        self.tgamma = _libm("tgamma" + s, c)
        self._lgamma_r = _libm("lgamma" + s + "_r", c, ip)
        self._remquo = _libm("remquo" + s, c, c, ip)

    def lgamma_r(self, x: float) -> tuple[float, int]:
        sg = ctypes.c_int(0)
        return self._lgamma_r(x, ctypes.byref(sg)), sg.value

    def remquo(self, x: float, y: float) -> tuple[float, int]:
        q = ctypes.c_int(0)
        return self._remquo(x, y, ctypes.byref(q)), q.value

    def map(self, f: Callable[[float], float], x: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore"):
            return np.array([f(v) for v in x.astype(f64).tolist()], f64).astype(self.t)


def pi_ref(name: str, x: np.ndarray) -> np.ndarray:
    """sinpi, cospi, tanpi by long double: x reduced exactly modulo 2 first."""
    ld = np.longdouble
    pi = ld("3.14159265358979323846264338327950288")
    with np.errstate(all="ignore"):
        r = np.fmod(x.astype(ld), ld(2))
        f = {"sinpi": np.sin, "cospi": np.cos, "tanpi": np.tan}[name]
        return f(pi * r).astype(f64)


def pi_specials(name: str, x: np.ndarray, got: np.ndarray) -> None:
    """OpenCL C's exact values of sinpi, cospi, tanpi at integers and halves."""
    xd = x.astype(f64)
    with np.errstate(invalid="ignore"):
        integer = np.isfinite(xd) & (xd == np.floor(xd))
        half_int = np.isfinite(xd) & (xd - np.floor(xd) == 0.5)
        odd = integer & (np.fmod(np.abs(xd), 2) == 1)
        below = np.floor(xd)
        odd_below = np.fmod(np.abs(below), 2) == 1
    g = got.astype(f64)
    assert np.all(np.isnan(g[np.isinf(xd)])), name
    if name == "sinpi":
        same(got[integer], np.copysign(0.0, xd[integer]), "sinpi(n)")
        same(got[half_int], np.where(odd_below[half_int], -1.0, 1.0), "sinpi(n + 0.5)")
    elif name == "cospi":
        same(got[half_int], np.zeros(half_int.sum()), "cospi(n + 0.5)")
        same(got[integer], np.where(odd[integer], -1.0, 1.0), "cospi(n)")
    else:
        want = np.where(odd, np.copysign(0.0, -xd), np.copysign(0.0, xd))
        same(got[integer], want[integer], "tanpi(n)")
        same(got[half_int], np.where(odd_below[half_int], -np.inf, np.inf), "tanpi(n + 0.5)")


def check(
    t: type,
    x: np.ndarray,
    y: np.ndarray,
    res: dict[str, np.ndarray],
    fout: dict[str, np.ndarray],
    iout: dict[str, np.ndarray],
) -> None:
    with np.errstate(all="ignore"):
        _check(t, x, y, res, fout, iout)


def _check(
    t: type,
    x: np.ndarray,
    y: np.ndarray,
    res: dict[str, np.ndarray],
    fout: dict[str, np.ndarray],
    iout: dict[str, np.ndarray],
) -> None:
    ref = Ref(t)
    mant, expo = np.frexp(x)
    same(res["frexp"], mant, "frexp")
    same(iout["frexp"], np.where(np.isfinite(x), expo, 0).astype(np.int32), "frexp's exponent")
    frac, whole = np.modf(x)
    same(res["modf"], frac, "modf")
    same(fout["modf"], whole, "modf's integral part")
    fr, fl = fract(x)
    same(res["fract"], fr, "fract")
    same(fout["fract"], fl, "fract's floor")
    assert np.all(res["fract"][np.isfinite(x)] < 1), "fract reached 1"
    same(res["sincos"], ref.map(ref.sin, x), "sincos")
    same(fout["sincos"], ref.map(ref.cos, x), "sincos's cosine")
    pairs = list(zip(x.astype(f64).tolist(), y.astype(f64).tolist(), strict=True))
    rq = [ref.remquo(p, q) for p, q in pairs]
    same(res["remquo"], np.array([r for r, _ in rq], f64).astype(t), "remquo")
    quo, libq = iout["remquo"], np.array([q for _, q in rq])
    exact = [remquo_bits(p, q) for p, q in pairs]
    ok = np.array([e is not None for e in exact])
    same(quo[ok], np.array([e for e in exact if e is not None], np.int32), "remquo's quotient")
    # glibc keeps n modulo 8 as 0 to 8, its sign that of x / y
    low, lib_low = np.abs(quo[ok]) & 7, np.abs(libq[ok]) & 7
    same(low, lib_low, "remquo's quotient's low 3 bits against libm's")
    same(np.sign(quo[ok])[low != 0], np.sign(libq[ok])[low != 0], "remquo's sign against libm's")
    lg = [ref.lgamma_r(v) for v in x.astype(f64).tolist()]
    with np.errstate(over="ignore"):
        same(res["lgamma_r"], np.array([v for v, _ in lg], f64).astype(t), "lgamma_r")
    same(iout["lgamma_r"], np.array([s for _, s in lg], np.int32), "lgamma_r's sign")
    for v, (_, s) in zip(x.astype(f64).tolist(), lg, strict=True):
        if math.isfinite(v) and not (v <= 0 and v == math.floor(v)):
            try:
                g = math.copysign(1, math.gamma(v))
            except OverflowError:  # gamma's sign: + above 0, (-1)^floor(v) below
                g = 1 if v > 0 or math.floor(v) % 2 == 0 else -1
            assert s == g, f"lgamma_r's sign at {v}: {s}, gamma's {g}"
    if "sinpi" in res:
        for name in ("sinpi",) + (("cospi", "tanpi") if "cospi" in res else ()):
            # away from the integers and halves, whose values are exact
            xd = x.astype(f64)
            away = ~(np.isfinite(xd) & (2 * xd == np.floor(2 * xd)))
            close(res[name][away], pi_ref(name, x[away]), 2 if t is f64 else 1, name)
            pi_specials(name, x, res[name])
    if "tgamma" in res:
        same(res["tgamma"], ref.map(ref.tgamma, x), "tgamma")
        lgam = ref.map(lambda v: ref.lgamma_r(v)[0], x)
        same(res["lgamma"], lgam, "lgamma")


SCALAR_OUT = ["frexp", "modf", "fract", "sincos", "remquo", "lgamma_r", "sinpi", "cospi",
              "tanpi", "tgamma", "lgamma"]  # fmt: skip


@pytest.mark.parametrize("name", TYPES)
def test_scalars(gpu: ar.Backend, name: str) -> None:
    t = TYPES[name]
    x, y = operands(t, N, 40 + len(name))
    args = [x, y, np.zeros(11 * N, t), np.zeros(3 * N, t), np.zeros(3 * N, np.int32)]
    _, _, res, fout, iout = run(gpu, "cl_ptr_out.spv", f"ptr_out_{name}", N // 64, 64, args)
    res, fout, iout = res.reshape(N, 11), fout.reshape(N, 3), iout.reshape(N, 3)
    check(
        t, x, y, {k: res[:, j] for j, k in enumerate(SCALAR_OUT)},
        {k: fout[:, j] for j, k in enumerate(["modf", "fract", "sincos"])},
        {k: iout[:, j] for j, k in enumerate(["frexp", "remquo", "lgamma_r"])},
    )  # fmt: skip


@pytest.mark.parametrize("name", TYPES)
def test_vectors(gpu: ar.Backend, name: str) -> None:
    t, n = TYPES[name], N // 4
    x, y = operands(t, 4 * n, 50 + len(name))
    args = [x, y, np.zeros(28 * n, t), np.zeros(12 * n, t), np.zeros(12 * n, np.int32)]
    _, _, res, fout, iout = run(gpu, "cl_ptr_out.spv", f"ptr_out_{name}4", n // 64, 64, args)
    res, fout, iout = res.reshape(n, 7, 4), fout.reshape(n, 3, 4), iout.reshape(n, 3, 4)
    check(
        t, x, y, {k: res[:, j].reshape(-1) for j, k in enumerate(SCALAR_OUT[:7])},
        {k: fout[:, j].reshape(-1) for j, k in enumerate(["modf", "fract", "sincos"])},
        {k: iout[:, j].reshape(-1) for j, k in enumerate(["frexp", "remquo", "lgamma_r"])},
    )  # fmt: skip


def test_store_past_the_buffer_faults(gpu: ar.Backend) -> None:
    """frexp's exponent goes through the checked store: in bounds it lands,
    past the end of the buffer the launch faults like any other store."""
    module = gpu.load_module("ptr_out_fault", (HERE / "cl_ptr_out.spv").read_bytes())
    a, res, out, n = gpu.alloc(256), gpu.alloc(256), gpu.alloc(256), gpu.alloc(4)
    try:
        gpu.copy_h2d(np.full(64, 8.0, f32), a)
        gpu.copy_h2d(np.zeros(1, np.int32), n)
        gpu.launch(gpu.kernel(module, "frexp_at"), 1, 64, [a, res, out, n])
        gpu.synchronize().wait()
        same(gpu.copy_d2h(res, np.empty(64, f32)), np.full(64, 0.5, f32), "frexp")
        same(gpu.copy_d2h(out, np.empty(64, np.int32)), np.full(64, 4, np.int32), "exponent")
        gpu.copy_h2d(np.array([1 << 20], np.int32), n)
        done = gpu.launch(gpu.kernel(module, "frexp_at"), 1, 64, [a, res, out, n])
        with pytest.raises(DeviceLostError) as caught:
            done.wait()
        text = str(caught.value)
        assert "invalid access of 4 bytes" in text and "kernel frexp_at" in text, text
    finally:
        _simhooks.hooks().arze_sim_clear_faults()
        for p in (a, res, out, n):
            gpu.free(p)

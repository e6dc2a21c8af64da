"""cuda-sim's PTX executor, one instruction family per test.

The kernels are CUDA C (ptx/features.cu) compiled once by nvcc into the
committed ptx/features.ptx, so these tests need no nvcc; expectations are
computed here with numpy and exact Python arithmetic.
"""

from __future__ import annotations

import math
import subprocess
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _cudasim_support import CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_SUCCESS, Cuda, ffi

HERE = Path(__file__).resolve().parent / "ptx"
FEATURES = HERE / "features.ptx"
NVCC = Path("/usr/local/cuda/bin/nvcc")


CU_JIT_ERROR_LOG_BUFFER = 5
CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6


def load_ex(cu: Cuda, image: bytes) -> tuple[int, Any, str]:
    """cuModuleLoadDataEx with an error log: (result, module, log text)."""
    mod = ffi.new("CUmodule *")
    log = ffi.new("char[]", 1024)
    opts = ffi.new("int[]", [CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES])
    vals = ffi.new("void *[]", [ffi.cast("void *", log), ffi.cast("void *", 1024)])
    rc = cu.lib.cuModuleLoadDataEx(mod, ffi.from_buffer(image + b"\0"), 2, opts, vals)
    return int(rc), mod[0], ffi.string(log).decode()


class Kernels:
    """features.ptx loaded on the sim, with numpy-in, numpy-out launches."""

    def __init__(self, cu: Cuda) -> None:
        self.cu = cu
        rc, self.mod, log = load_ex(cu, FEATURES.read_bytes())
        assert rc == CUDA_SUCCESS, log
        self.buffers: dict[int, np.ndarray] = {}

    def dev(self, a: np.ndarray) -> int:
        a = np.ascontiguousarray(a)
        d = self.cu.alloc(max(a.nbytes, 1))
        self.cu.check(self.cu.lib.cuMemcpyHtoD_v2(d, ffi.cast("void *", a.ctypes.data), a.nbytes))
        self.buffers[d] = a
        return d

    def get(self, d: int) -> np.ndarray:
        out = np.empty_like(self.buffers[d])
        self.cu.check(
            self.cu.lib.cuMemcpyDtoH_v2(ffi.cast("void *", out.ctypes.data), d, out.nbytes)
        )
        return out

    def launch(
        self,
        name: str,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        args: list[tuple[str, Any]],
        shared: int = 0,
    ) -> int:
        fn = ffi.new("CUfunction *")
        self.cu.check(self.cu.lib.cuModuleGetFunction(fn, self.mod, name.encode()))
        keep = [ffi.new(f"{ctype} *", value) for ctype, value in args]
        argv = ffi.new("void *[]", [ffi.cast("void *", k) for k in keep])
        rc = self.cu.lib.cuLaunchKernel(fn[0], *grid, *block, shared, ffi.NULL, argv, ffi.NULL)
        if rc == CUDA_SUCCESS:
            rc = self.cu.lib.cuCtxSynchronize()
        return int(rc)

    def run(self, *a: Any, **k: Any) -> None:
        self.cu.check(self.launch(*a, **k))


@pytest.fixture
def k(cu: Cuda) -> Kernels:
    return Kernels(cu)


P = "unsigned long long"  # a device pointer argument


def test_block_sum_uses_shared_memory_barriers_shuffles_and_atomics(k: Kernels) -> None:
    rng = np.random.default_rng(1)
    x = rng.integers(-8, 9, 10000).astype(np.float32)  # exact sums
    out, done = k.dev(np.zeros(1, np.float32)), k.dev(np.zeros(1, np.int32))
    args = [(P, k.dev(x)), ("int", x.size), (P, out), (P, done)]
    k.run("block_sum", (7, 1, 1), (256, 1, 1), args, shared=8 * 4)
    assert k.get(out)[0] == x.sum()
    assert k.get(done)[0] == 7


def _fns(mask: int, base: int, offset: int) -> int:
    seen = 0
    for i in range(base, 32):
        if mask >> i & 1:
            seen += 1
            if seen == offset:
                return i
    return 0xFFFFFFFF


def test_warp_votes_and_shuffles_under_divergence(k: Kernels) -> None:
    out = k.dev(np.zeros((2, 64, 8), np.uint32))
    k.run("warp_divergent", (2, 1, 1), (64, 1, 1), [(P, out)])
    got = k.get(out)
    third = sum(1 << lane for lane in range(32) if lane % 3 == 0)
    rest = 0xFFFFFFFF & ~third
    for t in range(64):
        lane = t % 32
        o = got[:, t, :]
        if lane % 3 == 0:
            rank = bin(third & ((1 << lane) - 1)).count("1")
            src = _fns(third, 0, (rank + 1) % bin(third).count("1") + 1)
            ballot = sum(1 << q for q in range(32) if q % 3 == 0 and q & 1)
            want = [third, ballot, 1, 0, src * 10]
        else:
            ballot = sum(1 << q for q in range(32) if q % 3 and q > 16)
            want = [rest, ballot, 0, 1, 0]
        up = lane - 3 + 100 if lane % 8 >= 3 else lane + 100
        want += [0xFFFFFFFF, lane ^ 5, up]
        assert (o == np.array(want, np.uint32)).all(), (t, o[0].tolist(), want)


def test_divergent_loop_then_shuffle_after_reconvergence(k: Kernels) -> None:
    start = np.random.default_rng(2).integers(1, 3000, 128).astype(np.uint32)
    steps, after = k.dev(np.zeros(128, np.uint32)), k.dev(np.zeros(128, np.uint32))
    k.run("collatz", (2, 1, 1), (64, 1, 1), [(P, k.dev(start)), (P, steps), (P, after)])

    def collatz(v: int) -> int:
        n = 0
        while v != 1:
            v = 3 * v + 1 if v & 1 else v // 2
            n += 1
        return n

    want = np.array([collatz(int(v)) for v in start], np.uint32)
    np.testing.assert_array_equal(k.get(steps), want)
    shifted = np.array([want[i + 1] if i % 32 != 31 else want[i] for i in range(128)])
    np.testing.assert_array_equal(k.get(after), shifted)


def test_atomics_32_and_64_bit_float_global_and_shared(k: Kernels) -> None:
    i32 = k.dev(np.array([0, 10**6, -(10**6), -1, 0, 0, 0, 0], np.int32))
    u32 = k.dev(np.array([0, 0, 4_000_000_000, 0], np.uint32))
    u64 = k.dev(np.array([0, 10**6, 0, 0, 0, 2**64 - 1, 0, 0], np.uint64))
    f32, f64 = k.dev(np.zeros(1, np.float32)), k.dev(np.zeros(1, np.float64))
    sh = k.dev(np.zeros(4, np.int32))
    k.run(
        "atomics",
        (3, 1, 1),
        (128, 1, 1),
        [(P, i32), (P, u32), (P, u64), (P, f32), (P, f64), (P, sh)],
    )
    ts = range(384)
    xor = 0
    for t in ts:
        xor ^= t
    g = k.get(i32)
    assert g[:7].tolist() == [sum(ts), 617, 3 * 383 - 50, -(2**31), 2**29 - 1, xor, 7]
    assert 1 <= g[7] <= 384  # one thread's compare-and-swap won
    assert k.get(u32).tolist() == [384 % 18, 0, 4_000_000_000 - 383, 383]
    assert k.get(u64).tolist() == [384 << 33, 617, 383 << 40, 5, 9, 1 << 63, 2**61 - 1, xor << 32]
    assert k.get(f32)[0] == 192.0 and k.get(f64)[0] == 96.0
    blocks = [range(b * 128, b * 128 + 128) for b in range(3)]
    bx = [0, 0, 0]
    for b, r in enumerate(blocks):
        for t in r:
            bx[b] ^= t
    assert k.get(sh).tolist() == [768, 384, 765, sum(bx)]


def test_3d_grids_and_blocks(k: Kernels) -> None:
    grid, block = (3, 2, 2), (4, 3, 2)
    out = k.dev(np.zeros((12, 24, 4), np.uint32))
    k.run("coords", grid, block, [(P, out)])
    got = k.get(out)
    for bz in range(2):
        for by in range(2):
            for bx in range(3):
                for tz in range(2):
                    for ty in range(3):
                        for tx in range(4):
                            o = got[bx + 3 * (by + 2 * bz), tx + 4 * (ty + 3 * tz)]
                            assert o.tolist() == [
                                tx | ty << 10 | tz << 20,
                                bx | by << 10 | bz << 20,
                                4 | 3 << 10 | 2 << 20,
                                3 | 2 << 10 | 2 << 20,
                            ]


def test_func_calls_recursion_aggregates_and_local_memory(k: Kernels) -> None:
    idx = np.random.default_rng(3).integers(0, 1000, 64).astype(np.int32)
    fact, pairs = k.dev(np.zeros(64, np.uint64)), k.dev(np.zeros(128, np.float32))
    picked = k.dev(np.zeros(64, np.int32))
    k.run(
        "calls_local", (1, 1, 1), (64, 1, 1), [(P, k.dev(idx)), (P, fact), (P, pairs), (P, picked)]
    )
    assert k.get(fact).tolist() == [math.factorial(t % 21) for t in range(64)]
    want = np.array([[-t * 0.5, t * 0.5] for t in range(64)], np.float32).ravel()
    np.testing.assert_array_equal(k.get(pairs), want)
    np.testing.assert_array_equal(k.get(picked), (idx % 24) ** 2 + np.arange(64))


def _w(v: int, bits: int, signed: bool = True) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >> (bits - 1) else v


def _cdiv(a: int, b: int) -> int:
    if b == 0:
        return 0  # the kernel skips division by zero
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _int_expect(t: int, x: int, y: int, p: int, q: int) -> list[int]:
    u = lambda v: v & 0xFFFFFFFF  # noqa: E731
    hs, hy = _w(x, 16), _w(y | 1, 16)

    def funnel_l(lo: int, hi: int, s: int) -> int:
        return u(((u(hi) << 32 | u(lo)) << (s & 31)) >> 32)

    def funnel_r(lo: int, hi: int, s: int) -> int:
        return u((u(hi) << 32 | u(lo)) >> (s & 31))

    def perm(a: int, b: int, s: int) -> int:
        by = (u(b) << 32 | u(a)).to_bytes(8, "little")
        return sum(by[s >> (4 * i) & 7] << (8 * i) for i in range(4))

    sh = y & 31
    return [
        _w(x + y, 32),
        _w(x - y, 32),
        _w(x * y, 32),
        _w((x * y) >> 32, 32),
        x * y,
        _cdiv(x, y),
        x - _cdiv(x, y) * y if y else 0,
        u(x) // (u(y) | 1),
        _w(min(x, y) ^ _w(max(x, y) << 1, 32), 32),
        u((x >> sh) ^ (u(x) >> sh) ^ _w(x << (y & 7), 32)),
        bin(u(x)).count("1") | (32 - u(y).bit_length()) << 8 | ((u(x) & -u(x)).bit_length()) << 16,
        int(f"{u(x):032b}"[::-1], 2),
        perm(x, y, 0x5140),
        funnel_l(x, y, t) ^ funnel_r(x, y, t * 3),
        _w(p * q, 64),
        (p * q) >> 64,
        _cdiv(p, q),
        p - _cdiv(p, q) * q if q else 0,
        _w((p >> (t & 63)) ^ ((p & (2**64 - 1)) >> (t & 63)), 64),
        bin(p & (2**64 - 1)).count("1") | (64 - (q & (2**64 - 1)).bit_length()) << 8,
        _w(hs * hy, 16) + _w(_cdiv(hs, hy), 16),
        abs(x) + abs(p),
        u(abs(x - y) + 7),
        (u(x) * u(y)) >> 32,
    ]


def test_integer_arithmetic_16_32_64_bits(k: Kernels) -> None:
    rng = np.random.default_rng(4)
    n = 64
    a = rng.integers(-(2**31) + 1, 2**31, n, dtype=np.int64).astype(np.int32)
    b = rng.integers(-(2**31) + 1, 2**31, n, dtype=np.int64).astype(np.int32)
    b[:8] = [0, 1, -1, 3, -7, 65536, 12, 2**31 - 1]
    a[:8] = [5, -5, 2**31 - 1, -100, 100, 7, 0, -(2**31) + 1]
    c = rng.integers(-(2**62), 2**62, n, dtype=np.int64)
    d = rng.integers(-(2**62), 2**62, n, dtype=np.int64)
    d[0] = 3
    out = k.dev(np.zeros((n, 24), np.int64))
    k.run(
        "int_ops",
        (1, 1, 1),
        (n, 1, 1),
        [(P, k.dev(a)), (P, k.dev(b)), (P, k.dev(c)), (P, k.dev(d)), (P, out)],
    )
    got = k.get(out)
    for t in range(n):
        x, y, p, q = int(a[t]), int(b[t]), int(c[t]), int(d[t])
        want = _int_expect(t, x, y, p, q)
        assert [_w(int(v), 64) for v in got[t]] == [_w(w, 64) for w in want], t


def _round_f32(v: Fraction) -> np.float32:
    """Fraction -> nearest float32 (ties to even), without double rounding."""
    d = float(v)
    with np.errstate(over="ignore"):
        f = np.float32(d)
    if np.isfinite(f) and Fraction(float(f)) != v and Fraction(d) != v:
        lo, hi = sorted((f, np.nextafter(f, np.float32(math.copysign(np.inf, d - float(f))))))
        mid = (Fraction(float(lo)) + Fraction(float(hi))) / 2
        if v != mid:
            f = lo if v < mid else hi
    return f


def test_float_arithmetic_and_transcendentals(k: Kernels) -> None:
    rng = np.random.default_rng(5)
    n = 64
    a = rng.uniform(-100, 100, n).astype(np.float32)
    b = rng.uniform(-100, 100, n).astype(np.float32)
    c = rng.uniform(-1000, 1000, n)
    o32, o64 = k.dev(np.zeros((n, 16), np.float32)), k.dev(np.zeros((n, 8), np.float64))
    k.run(
        "float_ops",
        (1, 1, 1),
        (n, 1, 1),
        [(P, k.dev(a)), (P, k.dev(b)), (P, k.dev(c)), (P, o32), (P, o64)],
    )
    g, h = k.get(o32), k.get(o64)
    x, y = a, b
    exact = np.stack([x + y, x * y, np.zeros(n, np.float32), x / y, np.sqrt(np.abs(x))], axis=1)
    exact[:, 2] = [
        _round_f32(Fraction(float(p)) * Fraction(float(q)) + 1) for p, q in zip(x, y, strict=True)
    ]
    np.testing.assert_array_equal(g[:, :5], exact)
    approx = np.stack(
        [
            x / y,
            np.exp(x * np.float32(0.01)),
            np.sin(x) + np.cos(y),
            np.log(np.abs(y) + 1),
            1 / np.sqrt(np.abs(x) + 1),
            np.exp(x * np.float32(0.01)),
            np.sin(x),
            np.log(np.abs(y) + 1),
            np.tanh(x * np.float32(0.1)),
        ],
        axis=1,
    ).astype(np.float32)
    np.testing.assert_allclose(g[:, 5:14], approx, rtol=2e-6, atol=2e-6)
    np.testing.assert_array_equal(g[:, 14], np.minimum(x, y) + np.maximum(x, y) * np.float32(2))
    f15 = np.copysign(y, x) + np.trunc(x) + np.floor(y) + np.ceil(x) + np.rint(y)
    np.testing.assert_array_equal(g[:, 15], f15.astype(np.float32))
    p = c
    fma = [float(Fraction(v) * Fraction(v) + Fraction(v)) for v in p]
    np.testing.assert_array_equal(h[:, 0], fma)
    np.testing.assert_array_equal(h[:, 1], [float(Fraction(v) * Fraction(v) - 1) for v in p])
    np.testing.assert_array_equal(h[:, 2], 1.0 / p)
    np.testing.assert_array_equal(h[:, 3], np.sqrt(np.abs(p)))
    ref = np.stack(
        [np.exp(p * 0.001), np.log(np.abs(p) + 1), np.sin(p), (np.abs(p) + 1) ** 0.3], axis=1
    )
    np.testing.assert_allclose(h[:, 4:], ref, rtol=1e-15, atol=1e-15)


def _directed(v: Fraction, dtype: Any, mode: str) -> Any:
    """v rounded into dtype (float16/float32) by mode rn/rz/rd/ru."""
    with np.errstate(over="ignore"):
        return _directed_quiet(v, dtype, mode)


def _directed_quiet(v: Fraction, dtype: Any, mode: str) -> Any:
    near = _round_f32(v) if dtype is np.float32 else dtype(float(v))
    if mode == "rn" or (np.isfinite(near) and Fraction(float(near)) == v):
        return near
    big = np.finfo(dtype).max
    if not np.isfinite(near):
        below = big if v > 0 else -np.inf
        above = np.inf if v > 0 else -big
    elif Fraction(float(near)) < v:
        below, above = near, np.nextafter(near, dtype(np.inf))
    else:
        below, above = np.nextafter(near, dtype(-np.inf)), near
    if mode == "rd":
        return dtype(below)
    if mode == "ru":
        return dtype(above)
    return dtype(below if v > 0 else above)  # rz


def _bf16(x: np.float32, mode: str) -> int:
    u = int(np.float32(x).view(np.uint32))
    hi, lo = u >> 16, u & 0xFFFF
    if mode == "rn" and (lo > 0x8000 or (lo == 0x8000 and hi & 1)):
        hi += 1
    return hi


def test_cvt_rounding_modes_and_half_bfloat16(k: Kernels) -> None:
    a = np.array(
        [0.5, 1.5, 2.5, -0.5, -1.5, -2.7, 3.49, 1e10, -1e10, np.inf, -np.inf, np.nan, 65519.0,
         65520.0, 1.0009766, 0.333333, -7.1e-5, 3.0e-8, 123456.79, -0.0, 2**31, 4.5e9, 1.1, 77.7],
        np.float32,
    )  # fmt: skip
    n = a.size
    d = np.linspace(-3e9, 3e9, n) + 0.3
    d[0], d[1] = 1.0 + 2.0**-30, -(1.0 + 2.0**-25)
    ll = np.random.default_rng(6).integers(-(2**62), 2**62, n, dtype=np.int64)
    ll[:4] = [2**24 + 1, -(2**24 + 3), 2**53 + 7, 300]
    oi, of = k.dev(np.zeros((n, 8), np.int32)), k.dev(np.zeros((n, 8), np.float32))
    oh = k.dev(np.zeros((n, 8), np.uint16))
    k.run(
        "conversions",
        (1, 1, 1),
        (n, 1, 1),
        [(P, k.dev(a)), (P, k.dev(d)), (P, k.dev(ll)), (P, oi), (P, of), (P, oh)],
    )
    gi, gf, gh = k.get(oi), k.get(of), k.get(oh)

    def sat(v: float, lo: int, hi: int) -> int:
        return 0 if math.isnan(v) else int(min(max(v, lo), hi))

    for t in range(n):
        x, p, v = float(a[t]), float(d[t]), int(ll[t])
        i32 = (-(2**31), 2**31 - 1)
        want_i = [
            sat(np.rint(x), *i32),
            sat(np.trunc(x), *i32),
            sat(np.floor(x), *i32),
            sat(np.ceil(x), *i32),
            _w(sat(np.rint(x), 0, 2**32 - 1), 32),
            sat(np.trunc(p), *i32),
            _w(sat(np.floor(x), -(2**63), 2**63 - 1), 32),
            _w(v, 8) + (v & 0xFFFF),
        ]
        assert gi[t].tolist() == want_i, (t, x)
        want_f = [_directed(Fraction(v), np.float32, m) for m in ("rn", "rz", "rd", "ru")]
        want_f += [_directed(Fraction(p), np.float32, m) for m in ("rn", "rz", "rd", "ru")]
        np.testing.assert_array_equal(gf[t], np.array(want_f, np.float32), err_msg=str(t))
        if math.isnan(x):
            assert gh[t, 0] == 0x7FFF and gh[t, 4] == 0x7FFF
            continue
        if math.isinf(x) or x == 0:  # exact (and Fraction would drop -0's sign)
            halves = [np.float16(x)] * 4
        else:
            halves = [_directed(Fraction(x), np.float16, m) for m in ("rn", "rz", "rd", "ru")]
        want_h = [int(np.float16(h).view(np.uint16)) for h in halves]
        want_h += [_bf16(a[t], "rn"), _bf16(a[t], "rz")]
        h0 = np.float16(halves[0])
        want_h.append(int(np.float16(float(h0) + 1.0).view(np.uint16)))
        bf = np.uint32(_bf16(a[t], "rn") << 16).view(np.float32)
        s = np.float32(np.float32(h0) * np.float32(2) + bf)
        with np.errstate(over="ignore"):
            want_h.append(int(np.float16(s).view(np.uint16)))
        assert gh[t].tolist() == want_h, (t, x)


def test_out_of_bounds_store_is_an_illegal_address(k: Kernels) -> None:
    x = k.dev(np.zeros(16, np.float32))
    k.run("out_of_bounds", (1, 1, 1), (1, 1, 1), [(P, x), ("long long", 15)])
    rc = k.launch("out_of_bounds", (1, 1, 1), (1, 1, 1), [(P, x), ("long long", 16)])
    assert rc == CUDA_ERROR_ILLEGAL_ADDRESS
    # sticky: the context is unusable until it is reset
    assert k.cu.lib.cuCtxSynchronize() == CUDA_ERROR_ILLEGAL_ADDRESS
    k.cu.check(k.cu.lib.cuDevicePrimaryCtxReset_v2(0))


@pytest.mark.skipif(not NVCC.exists(), reason="nvcc is not installed")
def test_committed_ptx_is_current(tmp_path: Path) -> None:
    out = tmp_path / "features.ptx"
    cmd = [str(NVCC), "-ptx", "-arch=compute_80", "-O3", str(HERE / "features.cu"), "-o", str(out)]
    subprocess.run(cmd, check=True, cwd=HERE)

    def body(p: Path) -> list[str]:
        return [ln for ln in p.read_text().splitlines() if not ln.lstrip().startswith("//")]

    assert body(out) == body(FEATURES), "regenerate tests/ffi/ptx/features.ptx with nvcc"


SHARED_AT = b"""
.version 8.0
.target sm_80
.address_size 64
.visible .entry shared_at(.param .u64 out, .param .u64 off)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<3>;
    .shared .align 4 .b8 buf[16];
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [off];
    ld.shared.u32 %r1, [%rd2];
    st.global.u32 [%rd1], %r1;
    ret;
}
"""


@pytest.mark.parametrize("offset", [16, 2**64 - 4])
def test_shared_access_outside_the_window_is_an_illegal_address(cu: Cuda, offset: int) -> None:
    # 2**64 - 4 is -4: its end wraps around to 0, which must not pass as
    # inside the window (it would read the bytes before the block's memory).
    k = Kernels(cu)
    rc, k.mod, log = load_ex(cu, SHARED_AT)
    assert rc == CUDA_SUCCESS, log
    out = k.dev(np.zeros(1, np.uint32))
    k.run("shared_at", (1, 1, 1), (1, 1, 1), [(P, out), (P, 12)])
    rc = k.launch("shared_at", (1, 1, 1), (1, 1, 1), [(P, out), (P, offset)])
    assert rc == CUDA_ERROR_ILLEGAL_ADDRESS
    k.cu.check(k.cu.lib.cuDevicePrimaryCtxReset_v2(0))

"""wgmma.mma_async (sm_90a) on cuda-sim, against numpy (issue 30).

A warpgroup (128 threads) copies a shared-memory image made here into shared
memory, runs one wgmma.mma_async.m64nNk16 on two matrix descriptors and
stores D.  The images follow the canonical layouts of the PTX ISA's matrix
descriptors (as CUTLASS spells them, cute/atom/mma_traits_sm90_gmma.hpp):
K-major and MN-major, no swizzle and 32-, 64- and 128-byte swizzles, with
every byte the layout does not name filled with noise.  D is unpacked from
the ISA's register fragment layout ("WGMMA .m64nNk16 register fragment
layout for accumulator matrix D").  The 8-bit forms (m64nNk32 on e4m3 and
e5m2) read K-major layouts of the same 16-byte rows.  Triton's own sm_90
matmuls, whose
descriptors use the 64- and 128-byte swizzles, are in
test_ptx_triton_corpus.py.

The asynchronous rules are modelled so a wrong kernel fails: a missing
fence.proxy.async or wgmma.fence fails the launch naming the line, and D
read before its wait_group is the old accumulator.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import aruntime as ar
from aruntime import DriverError

RNG = np.random.default_rng(90)
_SERIAL = itertools.count()
HEAD = ".version 8.0\n.target sm_90a\n.address_size 64\n"
X = {0: 1, 3: 2, 2: 4, 1: 8}  # swizzle mode -> 16-byte units in a swizzled row
A_AT, B_AT, IMAGE = 0, 8192, 16384


@pytest.fixture(scope="module")
def gpu() -> Iterator[ar.Backend]:
    with ar.open_backend("cuda-sim") as backend:
        yield backend


def _swizzle(addr: int, mode: int) -> int:
    bits = {0: 0, 3: 1, 2: 2, 1: 3}[mode]  # Swizzle<bits,4,3>
    return addr ^ (((addr >> 7) & ((1 << bits) - 1)) << 4)


def _offsets(mn_size: int, mn_major: bool, mode: int) -> tuple[int, int, Any]:
    """(LBO, SBO, (mn, k) -> byte offset) of a canonical layout of 16-bit elements."""
    x, t = X[mode], 8
    if not mn_major and mode == 0:  # ((8,m),(T,2)):((1T,SBO),(1,LBO))
        lbo, sbo = 128, 256
        return (
            lbo,
            sbo,
            lambda mn, k: (mn % 8) * 16 + (mn // 8) * sbo + (k % t) * 2 + (k // t) * lbo,
        )
    if not mn_major:  # ((8,m),(T,2)):((xT,SBO),(1,T))
        sbo = 8 * x * 16
        return 1, sbo, lambda mn, k: (mn % 8) * x * 16 + (mn // 8) * sbo + k * 2
    if mode == 0:  # ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))
        lbo, sbo = 128 * (mn_size // 8), 128
        return (
            lbo,
            sbo,
            lambda mn, k: (mn % t) * 2 + (mn // t) * sbo + (k % 8) * 16 + (k // 8) * lbo,
        )
    sbo = 8 * x * 16  # ((T,x,m),(8,k)):((1,T,LBO),(xT,SBO))
    lbo = 2 * sbo
    return (
        lbo,
        sbo,
        lambda mn, k: (
            (mn % (x * t)) * 2 + (mn // (x * t)) * lbo + (k % 8) * x * 16 + (k // 8) * sbo
        ),
    )


def _place(
    image: np.ndarray[Any, Any], base: int, mat: np.ndarray[Any, Any], mn_major: bool, mode: int
) -> int:
    """Writes mat (MN x 16, as uint16 bits) into image at base; its descriptor."""
    lbo, sbo, off = _offsets(mat.shape[0], mn_major, mode)
    for mn in range(mat.shape[0]):
        for k in range(16):
            addr = _swizzle(base + off(mn, k), mode)
            image[addr // 2] = mat[mn, k]
    return (base >> 4) | (lbo >> 4) << 16 | (sbo >> 4) << 32 | mode << 62


KERNEL = """.visible .entry wg(.param .u64 img, .param .u64 c, .param .u64 out,
    .param .u64 da, .param .u64 db, .param .u32 scale)
{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b32 %d<130>;
    .reg .b64 %rd<16>;
    .shared .align 1024 .b8 smem[16384];
    ld.param.u64 %rd1, [img];
    ld.param.u64 %rd2, [c];
    ld.param.u64 %rd3, [out];
    ld.param.u64 %rd4, [da];
    ld.param.u64 %rd5, [db];
    ld.param.u32 %r1, [scale];
    setp.ne.u32 %p1, %r1, 0;
    mov.u32 %r2, %tid.x;
    shl.b32 %r3, %r2, 4;
    mov.u32 %r4, smem;
$copy:
    cvt.u64.u32 %rd6, %r3;
    add.s64 %rd7, %rd1, %rd6;
    ld.global.v4.b32 {%r5, %r6, %r7, %r8}, [%rd7];
    add.u32 %r9, %r4, %r3;
    st.shared.v4.b32 [%r9], {%r5, %r6, %r7, %r8};
    add.u32 %r3, %r3, 2048;
    setp.lt.u32 %p2, %r3, 16384;
    @%p2 bra $copy;
    bar.sync 0;
    @PROXY@
    mul.wide.u32 %rd8, %r2, NBYTES;
    add.s64 %rd9, %rd2, %rd8;
    add.s64 %rd10, %rd3, %rd8;
LOADC
    @WGFENCE@
    MMA
    wgmma.commit_group.sync.aligned;
    @EARLY@
    wgmma.wait_group.sync.aligned 0;
STORED
    ret;
}
"""


def _kernel(n: int, dtype: str, trans: tuple[int, int], neg: tuple[int, int], **edits: str) -> str:
    regs = n // 2 if dtype == "f32" else n // 4
    names = [f"%d{i}" for i in range(regs)]
    d = "{" + ", ".join(names) + "}"
    sa, sb = (-1 if neg[0] else 1), (-1 if neg[1] else 1)
    mma = (
        f"wgmma.mma_async.sync.aligned.m64n{n}k16.{dtype}.f16.f16 {d}, %rd4, %rd5, %p1, "
        f"{sa}, {sb}, {trans[0]}, {trans[1]};"
    )
    text = (
        KERNEL.replace(
            "LOADC",
            "".join(f"    ld.global.b32 {r}, [%rd9+{4 * i}];\n" for i, r in enumerate(names)),
        )
        .replace(
            "STORED",
            "".join(f"    st.global.b32 [%rd10+{4 * i}], {r};\n" for i, r in enumerate(names)),
        )
        .replace("NBYTES", str(4 * regs))
        .replace("MMA", mma)
    )
    defaults = {
        "PROXY": "fence.proxy.async.shared::cta;",
        "WGFENCE": "wgmma.fence.sync.aligned;",
        "EARLY": "",
    }
    for key, value in {**defaults, **edits}.items():
        text = text.replace(f"@{key}@", value)
    return HEAD + text


def _d_index(n: int) -> list[tuple[int, int, int, int]]:
    """(thread, register i, row, col) of D's f32 elements, per the ISA's figure."""
    out = []
    for thread in range(128):
        w, lane = thread // 32, thread % 32
        g, t = lane >> 2, lane % 4
        for i in range(n // 2):
            out.append((thread, i, 16 * w + g + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * t + (i & 1)))
    return out


def _run(
    gpu: ar.Backend,
    ptx: str,
    image: Any,
    c_regs: Any,
    da: int,
    db: int,
    scale: int,
    threads: int = 128,
) -> Any:
    module = gpu.load_module(f"wg-{next(_SERIAL)}", ptx)
    out = np.zeros_like(c_regs)
    ptrs = []
    try:
        for host in (image, c_regs, out):
            ptrs.append(gpu.alloc(host.nbytes))
            gpu.copy_h2d(np.ascontiguousarray(host), ptrs[-1])
        args = [*ptrs, np.uint64(da), np.uint64(db), np.uint32(scale)]
        gpu.launch(gpu.kernel(module, "wg"), 1, threads, args).wait()
        return gpu.copy_d2h(ptrs[2], np.empty_like(out))
    finally:
        for p in ptrs:
            gpu.free(p)


def _case(n: int, ta: int, tb: int, mode_a: int, mode_b: int) -> tuple[Any, ...]:
    a = RNG.standard_normal((64, 16)).astype(np.float16)
    b = RNG.standard_normal((16, n)).astype(np.float16)
    image = RNG.integers(0, 2**16, IMAGE // 2).astype(np.uint16) | 0x7C00  # noise: infs and NaNs
    da = _place(image, A_AT, a.view(np.uint16), bool(ta), mode_a)
    db = _place(image, B_AT, b.T.copy().view(np.uint16), bool(tb), mode_b)  # B as N x K
    return a, b, image, da, db


@pytest.mark.parametrize(("ta", "tb"), [(0, 0), (0, 1), (1, 0), (1, 1)])
@pytest.mark.parametrize("mode", [0, 3, 2, 1])
@pytest.mark.parametrize("n", [16, 64])
def test_wgmma_f32_from_descriptors(gpu: ar.Backend, ta: int, tb: int, mode: int, n: int) -> None:
    a, b, image, da, db = _case(n, ta, tb, mode, mode)
    c = RNG.standard_normal((64, n)).astype(np.float32)
    index = _d_index(n)
    c_regs = np.zeros((128, n // 2), np.float32)
    for thread, i, row, col in index:
        c_regs[thread, i] = c[row, col]
    got = _run(gpu, _kernel(n, "f32", (ta, tb), (0, 0)), image, c_regs, da, db, 1)
    want = (a.astype(np.float64) @ b.astype(np.float64) + c).astype(np.float32)
    d = np.zeros_like(want)
    for thread, i, row, col in index:
        d[row, col] = got[thread, i]
    assert (d == want).all()


@pytest.mark.parametrize(("neg", "scale"), [((1, 0), 1), ((0, 1), 0), ((1, 1), 0)])
def test_wgmma_scales_and_an_f16_accumulator(
    gpu: ar.Backend, neg: tuple[int, int], scale: int
) -> None:
    """imm-scale-a/-b of -1 negate; scale-d false drops C; an f16 D packs pairs."""
    n = 32
    a, b, image, da, db = _case(n, 0, 1, 1, 2)
    c = RNG.standard_normal((64, n)).astype(np.float16)
    index = _d_index(n)
    c_half = np.zeros((128, n // 2), np.float16)
    for thread, i, row, col in index:
        c_half[thread, i] = c[row, col]
    c_regs = c_half.view(np.uint32)
    got = _run(gpu, _kernel(n, "f16", (0, 1), neg), image, c_regs, da, db, scale).view(np.float16)
    sign = (-1) ** (neg[0] + neg[1])
    want = (
        sign * (a.astype(np.float64) @ b.astype(np.float64)) + scale * c.astype(np.float64)
    ).astype(np.float16)
    d = np.zeros_like(want)
    for thread, i, row, col in index:
        d[row, col] = got[thread, i]
    assert (d == want).all()


def test_wgmma_with_a_in_registers(gpu: ar.Backend) -> None:
    """A from 4 registers per thread, laid out per warp as mma.m16n8k16's A
    (rows 16 w + g, + 8 for a2 a3 a6 a7; columns 2 t + i % 2, + 8 for a4..a7)."""
    n = 32
    a, b, image, _, db = _case(n, 0, 1, 1, 1)
    regs = np.zeros((128, 8), np.float16)
    for thread in range(128):
        w, g, t = thread // 32, (thread % 32) >> 2, thread % 4
        for i in range(8):
            regs[thread, i] = a[16 * w + g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >= 4)]
    index = _d_index(n)
    c = RNG.standard_normal((64, n)).astype(np.float32)
    c_regs = np.zeros((128, n // 2 + 4), np.float32)  # C's registers, then A's
    for thread, i, row, col in index:
        c_regs[thread, i] = c[row, col]
    c_regs[:, n // 2 :] = regs.view(np.float32)
    ptx = _kernel(n, "f32", (0, 1), (0, 0))
    loads = "".join(f"    ld.global.b32 %r{12 + k}, [%rd9+{4 * (n // 2 + k)}];\n" for k in range(4))
    ptx = ptx.replace("    wgmma.fence.sync.aligned;", loads + "    wgmma.fence.sync.aligned;")
    ptx = ptx.replace(
        "}, %rd4, %rd5, %p1, 1, 1, 0, 1;", "}, {%r12, %r13, %r14, %r15}, %rd5, %p1, 1, 1, 1;"
    )
    ptx = ptx.replace("mul.wide.u32 %rd8, %r2, 64;", f"mul.wide.u32 %rd8, %r2, {4 * (n // 2 + 4)};")
    got = _run(gpu, ptx, image, c_regs, 0, db, 1)[:, : n // 2]
    want = (a.astype(np.float64) @ b.astype(np.float64) + c).astype(np.float32)
    d = np.zeros_like(want)
    for thread, i, row, col in index:
        d[row, col] = got[thread, i]
    assert (d == want).all()


def _failing(gpu: ar.Backend, capfd: Any, ptx: str, threads: int = 128) -> str:
    _, _, image, da, db = _case(16, 0, 0, 1, 1)
    with pytest.raises(DriverError, match="LAUNCH_FAILED"):
        _run(gpu, ptx, image, np.zeros((128, 8), np.float32), da, db, 1, threads)
    return capfd.readouterr().err


def _line(ptx: str, prefix: str) -> int:
    return next(i for i, s in enumerate(ptx.splitlines(), 1) if s.strip().startswith(prefix))


def test_without_fence_proxy_async_the_launch_fails(gpu: ar.Backend, capfd: Any) -> None:
    ptx = _kernel(16, "f32", (0, 0), (0, 0), PROXY="")
    err = _failing(gpu, capfd, ptx)
    assert f"ptx line {_line(ptx, 'wgmma.mma_async')}: wgmma.mma_async reads shared memory" in err
    assert "with no fence.proxy.async after the write" in err


def test_without_wgmma_fence_the_launch_fails(gpu: ar.Backend, capfd: Any) -> None:
    ptx = _kernel(16, "f32", (0, 0), (0, 0), WGFENCE="")
    err = _failing(gpu, capfd, ptx)
    assert f"ptx line {_line(ptx, 'wgmma.mma_async')}: wgmma.mma_async without a wgmma.fence" in err


def test_a_block_short_of_a_warpgroup_fails(gpu: ar.Backend, capfd: Any) -> None:
    err = _failing(gpu, capfd, _kernel(16, "f32", (0, 0), (0, 0)), threads=96)
    assert "no whole number of warpgroups" in err


def test_d_read_before_its_wait_is_the_old_accumulator(gpu: ar.Backend) -> None:
    """The operation completes at wait_group: a copy of D taken before it is C."""
    n = 16
    _, _, image, da, db = _case(n, 0, 0, 1, 1)
    c_regs = RNG.standard_normal((128, n // 2)).astype(np.float32)
    early = "\n".join(f"    mov.b32 %r{10 + i % 4}, %d{i};" for i in range(4))
    ptx = _kernel(n, "f32", (0, 0), (0, 0), EARLY=early.strip())
    ptx = ptx.replace("    st.global.b32 [%rd10+0], %d0;", "    st.global.b32 [%rd10+0], %r10;")
    got = _run(gpu, ptx, image, c_regs, da, db, 1)
    assert got[:, 0].tobytes() == c_regs[:, 0].tobytes()
    assert (got[:, 1:] != c_regs[:, 1:]).any()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {",
            "takes 7 operand",
        ),
        ("wgmma.mma_async.sync.aligned.m64n12k16.f32.f16.f16 {", "unsupported instruction"),
        ("wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 {", "unsupported instruction"),
        ("wgmma.mma_async.sync.aligned.m64n16k32.s32.s8.s8 {", "unsupported instruction"),
    ],
)
def test_other_wgmma_forms_are_refused_by_name(gpu: ar.Backend, edit: str, message: str) -> None:
    ptx = _kernel(16, "f32", (0, 0), (0, 0))
    old = "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {"
    ptx = ptx.replace(old, edit)
    if "takes 7" in message:  # A from registers takes no imm-trans-a
        ptx = ptx.replace("}, %rd4, %rd5,", "}, {%r5, %r6, %r7, %r8}, %rd5,")
    with pytest.raises(DriverError, match=f"ptx line {_line(ptx, 'wgmma.mma_async')}: .*{message}"):
        gpu.load_module(f"refused-{next(_SERIAL)}", ptx)


def _fp8_values(kind: str) -> np.ndarray[Any, Any]:
    """The value of each of the 256 codes of e4m3 (no infinities, S.1111.111
    NaN) or e5m2 (IEEE-like)."""
    code = np.arange(256)
    mb, bias = (3, 7) if kind == "e4m3" else (2, 15)
    e, m = (code & 0x7F) >> mb, code & ((1 << mb) - 1)
    v = np.where(e == 0, m * 2.0 ** (1 - bias - mb), ((1 << mb) + m) * 2.0 ** (e - bias - mb))
    v[(code & 0x7F) == 0x7F] = np.nan  # e4m3's NaN; for e5m2 one of its NaNs
    if kind == "e5m2":
        v[e == 31] = np.where(m[e == 31] == 0, np.inf, np.nan)
    return np.where(code & 0x80, -v, v)


def _place8(image: np.ndarray[Any, Any], base: int, mat: np.ndarray[Any, Any], mode: int) -> int:
    """Writes mat (MN x 32 fp8 codes) K-major into image at base; its descriptor.
    A row of the canonical layout is 16 bytes (16 elements), as for 16-bit
    elements; wgmma's 8-bit forms have no MN-major (transposed) layout."""
    lbo, sbo, off = _offsets(mat.shape[0], False, mode)
    raw = image.view(np.uint8)
    for mn in range(mat.shape[0]):
        for k in range(32):  # the byte of element k: off's column k // 2, then k % 2
            raw[_swizzle(base + off(mn, k // 2) + k % 2, mode)] = mat[mn, k]
    return (base >> 4) | (lbo >> 4) << 16 | (sbo >> 4) << 32 | mode << 62


def _fp8_codes(table: np.ndarray[Any, Any], lo: float, hi: float, shape: Any) -> Any:
    a = np.abs(table)
    ok = np.flatnonzero(np.isfinite(table) & (a <= hi) & ((a >= lo) | (a == 0)))
    return RNG.choice(ok, size=shape).astype(np.uint8)


@pytest.mark.parametrize("types", [("e4m3", "e4m3"), ("e5m2", "e5m2"), ("e4m3", "e5m2")])
@pytest.mark.parametrize("mode", [0, 3, 2, 1])
@pytest.mark.parametrize(("n", "dtype"), [(16, "f32"), (64, "f32"), (32, "f16")])
def test_wgmma_k32_on_fp8(
    gpu: ar.Backend, types: tuple[str, str], mode: int, n: int, dtype: str
) -> None:
    """m64nNk32 on e4m3/e5m2 (A and B each its own type) from K-major
    descriptors, every swizzle, an f32 or f16 D: the 32 exact products and C
    rounded once.  A takes every finite code up to a bound (subnormals, 448,
    -0), B small ones, so every sum is exact in float64; the noise around
    the operands holds NaNs."""
    ta, tb = (_fp8_values(t) for t in types)
    a = _fp8_codes(ta, 0, 448 if types[0] == "e4m3" else 1024, (64, 32))
    b = _fp8_codes(tb, 2.0**-9, 2.0**-2, (n, 32))  # B as N x K
    image = RNG.integers(0, 2**16, IMAGE // 2).astype(np.uint16) | 0x7F7F  # noise: NaNs
    da, db = _place8(image, A_AT, a, mode), _place8(image, B_AT, b, mode)
    c = RNG.standard_normal((64, n)).astype(np.float16)
    index = _d_index(n)
    regs = np.zeros((128, n // 2), np.float32 if dtype == "f32" else np.float16)
    for thread, i, row, col in index:
        regs[thread, i] = c[row, col]
    c_regs = regs if dtype == "f32" else regs.view(np.uint32)
    ptx = _kernel(n, dtype, (0, 0), (0, 0))
    mma = next(line for line in ptx.splitlines() if "wgmma.mma_async" in line)
    fp8 = mma.replace(f"k16.{dtype}.f16.f16", f"k32.{dtype}.{types[0]}.{types[1]}")
    ptx = ptx.replace(mma, fp8.replace(", 1, 1, 0, 0;", ", 1, 1;"))
    got = _run(gpu, ptx, image, c_regs, da, db, 1)
    got = got if dtype == "f32" else got.view(np.float16)
    exact = ta[a] @ tb[b].T + c.astype(np.float64)
    want = exact.astype(np.float32 if dtype == "f32" else np.float16)
    d = np.zeros_like(want)
    for thread, i, row, col in index:
        d[row, col] = got[thread, i]
    assert (d == want).all()

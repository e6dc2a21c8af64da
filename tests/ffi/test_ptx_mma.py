"""ldmatrix and mma.sync.aligned.m16n8k16 on cuda-sim, against numpy (issue 30).

Hand-written PTX per instruction form: the fragments are packed and
unpacked here from the PTX ISA's layout formulas ("Matrix Fragments for
mma.m16n8k16 with floating point type", "Warp-level matrix load
instruction: ldmatrix"), independently of the sim's C.  Triton's own fp16
matmul, which chains ldmatrix and mma, is in test_ptx_triton_corpus.py.
Both instructions need the whole warp: run by fewer lanes the launch fails.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from _cudasim_support import Cuda

import aruntime as ar
from aruntime import DriverError

RNG = np.random.default_rng(80)
_SERIAL = itertools.count()
HEAD = ".version 8.0\n.target sm_80\n.address_size 64\n"


@pytest.fixture(scope="module")
def gpu() -> Iterator[ar.Backend]:
    with ar.open_backend("cuda-sim") as backend:
        yield backend


def _launch(
    gpu: ar.Backend,
    ptx: str,
    name: str,
    inputs: list[np.ndarray[Any, Any]],
    out: np.ndarray[Any, Any],
    threads: int = 32,
) -> np.ndarray[Any, Any]:
    module = gpu.load_module(f"{name}-{next(_SERIAL)}", HEAD + ptx)
    ptrs = []
    try:
        for host in [*inputs, out]:
            ptrs.append(gpu.alloc(host.nbytes))
            gpu.copy_h2d(np.ascontiguousarray(host), ptrs[-1])
        gpu.launch(gpu.kernel(module, name), 1, threads, ptrs).wait()
        return gpu.copy_d2h(ptrs[-1], np.empty_like(out))
    finally:
        for p in ptrs:
            gpu.free(p)


# -- ldmatrix ---------------------------------------------------------------------------

LDMATRIX = """.visible .entry ldm(.param .u64 src, .param .u64 out)
{
    .reg .b32 %r<16>;
    .reg .b64 %rd<8>;
    .shared .align 16 .b8 tile[1024];
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [out];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 16;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.v4.b32 {%r2, %r3, %r4, %r5}, [%rd4];
    mov.u32 %r6, tile;
    shl.b32 %r7, %r1, 5;
    add.u32 %r8, %r6, %r7;
    st.shared.v4.b32 [%r8], {%r2, %r3, %r4, %r5};
    bar.sync 0;
    mad.lo.u32 %r9, %r1, 5, 3;
    and.b32 %r9, %r9, 31;
    shl.b32 %r9, %r9, 5;
    add.u32 %r9, %r6, %r9;
    cvt.u64.u32 %rd7, %r9;
    cvta.shared.u64 %rd7, %rd7;
    ADDRESS
    LDMATRIX
    add.s64 %rd6, %rd2, %rd3;
STORES
    ret;
}
"""


def _ldmatrix_ptx(num: int, trans: bool, generic: bool) -> str:
    regs = [f"%r{10 + k}" for k in range(num)]
    dst = "{" + ", ".join(regs) + "}"
    space = "" if generic else ".shared"
    opcode = f"ldmatrix.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}{space}.b16"
    addr = "[%rd7]" if generic else "[%r9]"
    stores = "\n".join(f"    st.global.b32 [%rd6+{4 * k}], {r};" for k, r in enumerate(regs))
    return (
        LDMATRIX.replace("ADDRESS", "")
        .replace("LDMATRIX", f"{opcode} {dst}, {addr};")
        .replace("STORES", stores)
    )


def _ldmatrix_want(src: np.ndarray[Any, Any], num: int, trans: bool) -> np.ndarray[Any, Any]:
    """What each lane gets: lane 8k+r names row r of matrix k; lane l holds (row l/4,
    columns 2(l%4) and +1) of each matrix, or of its transpose."""
    rows = [(5 * lane + 3) % 32 for lane in range(32)]  # the row each lane's address names
    want = np.zeros((32, 4), np.uint32)
    for k in range(num):
        m = np.stack([src[rows[8 * k + r]] for r in range(8)])
        if trans:
            m = m.T
        for lane in range(32):
            lo, hi = m[lane // 4, 2 * (lane % 4)], m[lane // 4, 2 * (lane % 4) + 1]
            want[lane, k] = int(lo) | int(hi) << 16
    return want


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("generic", [False, True])
def test_ldmatrix(gpu: ar.Backend, num: int, trans: bool, generic: bool) -> None:
    src = RNG.integers(0, 1 << 16, (32, 8), dtype=np.uint16)
    got = _launch(
        gpu, _ldmatrix_ptx(num, trans, generic), "ldm", [src], np.zeros((32, 4), np.uint32)
    )
    want = _ldmatrix_want(src, num, trans)
    assert (got[:, :num] == want[:, :num]).all()
    assert (got[:, num:] == 0).all()


def test_ldmatrix_x1_takes_a_braced_or_a_bare_register(gpu: ar.Backend) -> None:
    src = RNG.integers(0, 1 << 16, (32, 8), dtype=np.uint16)
    bare = _ldmatrix_ptx(1, False, False).replace("{%r10}", "%r10")
    assert "b16 %r10," in bare
    got = _launch(gpu, bare, "ldm", [src], np.zeros((32, 4), np.uint32))
    assert (got[:, 0] == _ldmatrix_want(src, 1, False)[:, 0]).all()


@pytest.fixture
def doomed(cu: Cuda) -> Iterator[ar.Backend]:
    """A backend of its own, for a sticky fault (cu clears it afterwards)."""
    with ar.open_backend("cuda-sim") as backend:
        yield backend


def test_ldmatrix_outside_shared_memory_is_an_illegal_address(doomed: ar.Backend) -> None:
    gpu = doomed
    bad = _ldmatrix_ptx(4, False, False).replace(
        "add.u32 %r9, %r6, %r9;", "add.u32 %r9, %r6, 4096;"
    )
    with pytest.raises(ar.DeviceLostError):
        _launch(gpu, bad, "ldm", [np.zeros((32, 8), np.uint16)], np.zeros((32, 4), np.uint32))


# -- mma --------------------------------------------------------------------------------

MMA = """.visible .entry mma(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 d)
{
    .reg .b32 %r<24>;
    .reg .b64 %rd<12>;
    .reg .pred %p<2>;
    ld.param.u64 %rd1, [a];
    ld.param.u64 %rd2, [b];
    ld.param.u64 %rd3, [c];
    ld.param.u64 %rd4, [d];
    mov.u32 %r0, %tid.x;
    mul.wide.u32 %rd5, %r0, 16;
    mul.wide.u32 %rd6, %r0, 8;
    mul.wide.u32 %rd7, %r0, CBYTES;
    add.s64 %rd1, %rd1, %rd5;
    add.s64 %rd2, %rd2, %rd6;
    add.s64 %rd3, %rd3, %rd7;
    add.s64 %rd4, %rd4, %rd7;
    ld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd1];
    ld.global.v2.b32 {%r5, %r6}, [%rd2];
    LOADC
    MMA
    STORED
    ret;
}
"""


def _frag_a(a: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    out = np.zeros((32, 8), a.dtype)
    for lane in range(32):
        g, t = lane >> 2, lane % 4
        for i in range(8):
            row = g if (i < 2 or 4 <= i < 6) else g + 8
            col = t * 2 + (i & 1) + (8 if i >= 4 else 0)
            out[lane, i] = a[row, col]
    return out


def _frag_b(b: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    out = np.zeros((32, 4), b.dtype)
    for lane in range(32):
        g, t = lane >> 2, lane % 4
        for i in range(4):
            out[lane, i] = b[t * 2 + (i & 1) + (8 if i >= 2 else 0), g]
    return out


def _cd_index(lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane % 4
    return (g if i < 2 else g + 8), t * 2 + (i & 1)


def _frag_c(c: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return np.array([[c[_cd_index(lane, i)] for i in range(4)] for lane in range(32)], c.dtype)


def _unfrag_d(d: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    out = np.zeros((16, 8), d.dtype)
    for lane in range(32):
        for i in range(4):
            out[_cd_index(lane, i)] = d[lane, i]
    return out


def _mma_ptx(atype: str, acc: str, guard: str = "") -> str:
    """The kernel for one form: ``atype`` f16 or bf16, ``acc`` f32 or f16."""
    opcode = f"mma.sync.aligned.m16n8k16.row.col.{acc}.{atype}.{atype}.{acc}"
    n = 4 if acc == "f32" else 2
    c = "{" + ", ".join(f"%r{7 + k}" for k in range(n)) + "}"
    d = "{" + ", ".join(f"%r{11 + k}" for k in range(n)) + "}"
    mma = f"{opcode} {d}, {{%r1, %r2, %r3, %r4}}, {{%r5, %r6}}, {c};"
    return (
        MMA.replace("CBYTES", str(4 * n))
        .replace("LOADC", f"ld.global.v{n}.b32 {c}, [%rd3];")
        .replace("MMA", guard + mma)
        .replace("STORED", f"st.global.v{n}.b32 [%rd4], {d};")
    )


def _bf16(x: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Values exact in bf16, and their bf16 bits."""
    bits = (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return (bits.astype(np.uint32) << 16).view(np.float32), bits


@pytest.mark.parametrize("kind", ["f16", "bf16", "f16acc"])
def test_mma_m16n8k16(gpu: ar.Backend, kind: str) -> None:
    a = RNG.standard_normal((16, 16)) * 2
    b = RNG.standard_normal((16, 8)) * 2
    c = RNG.standard_normal((16, 8)) * 8
    if kind == "bf16":
        (a, abits), (b, bbits) = _bf16(a), _bf16(b)
        fa, fb = _frag_a(abits), _frag_b(bbits)
    else:
        a, b = a.astype(np.float16), b.astype(np.float16)
        fa, fb = _frag_a(a), _frag_b(b)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    if kind == "f16acc":
        c = c.astype(np.float16)
        ptx = _mma_ptx("f16", "f16")
        d = _launch(gpu, ptx, "mma", [fa, fb, _frag_c(c)], np.zeros((32, 4), np.float16))
        want = (exact + c.astype(np.float64)).astype(np.float16)
    else:
        c = c.astype(np.float32)
        ptx = _mma_ptx("bf16" if kind == "bf16" else "f16", "f32")
        d = _launch(gpu, ptx, "mma", [fa, fb, _frag_c(c)], np.zeros((32, 4), np.float32))
        want = (exact + c.astype(np.float64)).astype(np.float32)
    assert (_unfrag_d(d) == want).all()


def test_mma_accumulates_in_place(gpu: ar.Backend) -> None:
    """D may be C's registers, as Triton writes it: { %r1.. }, ..., { %r1.. }."""
    ptx = _mma_ptx("f16", "f32").replace("{%r11, %r12, %r13, %r14}", "{%r7, %r8, %r9, %r10}")
    assert "%r11" not in ptx
    a = RNG.standard_normal((16, 16)).astype(np.float16)
    b = RNG.standard_normal((16, 8)).astype(np.float16)
    c = RNG.standard_normal((16, 8)).astype(np.float32)
    out = np.zeros((32, 4), np.float32)
    d = _launch(gpu, ptx, "mma", [_frag_a(a), _frag_b(b), _frag_c(c)], out)
    want = (a.astype(np.float64) @ b.astype(np.float64) + c).astype(np.float32)
    assert (_unfrag_d(d) == want).all()


@pytest.mark.parametrize(
    ("threads", "guard"),
    [(16, ""), (32, "setp.lt.u32 %p1, %r0, 31;\n    @%p1 ")],
)
def test_mma_without_the_whole_warp_fails_the_launch(
    gpu: ar.Backend, threads: int, guard: str
) -> None:
    """.aligned: a partial warp, or a lane predicated off, is undefined on a GPU."""
    ptx = _mma_ptx("f16", "f16", guard)
    z = np.zeros((32, 8), np.float16)
    with pytest.raises(DriverError, match="LAUNCH_FAILED"):
        _launch(gpu, ptx, "mma", [z, z[:, :4], z[:, :4]], np.zeros((32, 4), np.float16), threads)


@pytest.mark.parametrize(
    "opcode",
    [
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f16",
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.bf16.f32",
        "mma.sync.aligned.m16n8k16.col.row.f32.f16.f16.f32",
        "mma.sync.aligned.m16n8k16.row.col.satfinite.f32.f16.f16.f32",
        "mma.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32",
        "mma.sync.aligned.m16n8k4.row.col.f32.f16.f16.f32",
        "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32",
        "mma.sync.aligned.m16n8k32.row.col.s32.s4.s4.s32",
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32",
    ],
)
def test_other_mma_forms_are_refused_by_name(gpu: ar.Backend, opcode: str) -> None:
    ptx = _mma_ptx("f16", "f16").replace(
        "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", opcode
    )
    with pytest.raises(DriverError, match=f"unsupported instruction '{opcode}'"):
        gpu.load_module(f"refused-{opcode}", HEAD + ptx)

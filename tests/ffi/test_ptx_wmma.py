"""nvcuda::wmma on cuda-sim (issue 30): nvcc's PTX for a WMMA gemm
(tests/ffi/ptx/wmma, made by make.sh there) for sm_80 and sm_90, against
numpy, plus hand-written forms.

The fragment layout of wmma is the implementation's; cuda-sim's is
documented in ffi/sim/ptx/ptx_exec_wmma.c.  What the ISA fixes, and these
tests check exactly, is what load -> mma -> store computes: D = A B + C for
the matrices in memory, row- or column-major, with any stride.  Each mma
sums its 16 products in double and rounds once to the accumulator's type,
so the reference rounds after each 16 of K.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aruntime as ar
from aruntime import DriverError

CORPUS = Path(__file__).resolve().parent / "ptx" / "wmma"
RNG = np.random.default_rng(1616)
_SERIAL = itertools.count()


@pytest.fixture(scope="module")
def gpu() -> Iterator[ar.Backend]:
    with ar.open_backend("cuda-sim") as backend:
        yield backend


def _run(
    gpu: ar.Backend,
    ptx: str,
    entry: str,
    arrays: list[np.ndarray[Any, Any]],
    ints: list[int],
    grid: int,
    block: int,
) -> list[np.ndarray[Any, Any]]:
    module = gpu.load_module(f"wmma-{next(_SERIAL)}", ptx)
    ptrs = []
    try:
        for host in arrays:
            ptrs.append(gpu.alloc(host.nbytes))
            gpu.copy_h2d(np.ascontiguousarray(host), ptrs[-1])
        args = [*ptrs, *map(np.int32, ints)]
        gpu.launch(gpu.kernel(module, entry), grid, block, args).wait()
        return [gpu.copy_d2h(p, np.empty_like(h)) for p, h in zip(ptrs, arrays, strict=True)]
    finally:
        for p in ptrs:
            gpu.free(p)


def _reference(a: Any, b: Any, c: Any, acc: Any) -> np.ndarray[Any, Any]:
    """c + a @ b, rounded to acc's type after each 16 of K (one mma each)."""
    d = c.astype(acc)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    for k0 in range(0, a.shape[1], 16):
        d = (d.astype(np.float64) + a64[:, k0 : k0 + 16] @ b64[k0 : k0 + 16]).astype(acc)
    return d


@pytest.mark.parametrize("arch", ["sm80", "sm90"])
@pytest.mark.parametrize("layout", ["row", "col"])
def test_nvcc_wmma_gemm_from_global(gpu: ar.Backend, arch: str, layout: str) -> None:
    """load.c, then per 16 of K load.a (.row or .col), load.b (.row), mma f32, store.d."""
    m, n, k = 48, 32, 64
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    c = RNG.standard_normal((m, n)).astype(np.float32)
    a_mem = a if layout == "row" else a.T.copy()  # column-major A: A^T row-major
    ptx = (CORPUS / f"wmma_gemm.{arch}.ptx").read_text()
    tiles = (m // 16) * (n // 16)
    _, _, got = _run(gpu, ptx, f"wmma_gemm_{layout}", [a_mem, b, c], [m, n, k], tiles, 32)
    assert (got == _reference(a, b, c, np.float32)).all()


@pytest.mark.parametrize("arch", ["sm80", "sm90"])
def test_nvcc_wmma_gemm_through_shared_f16(gpu: ar.Backend, arch: str) -> None:
    """Tiles staged in shared memory, B column-major there, an f16 accumulator
    filled with zeros, D stored column-major to shared and copied out."""
    m, n, k = 32, 48, 48
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    d = np.zeros((n, m), np.float16)  # column-major D
    ptx = (CORPUS / f"wmma_gemm.{arch}.ptx").read_text()
    tiles = (m // 16) * (n // 16)
    _, _, got = _run(gpu, ptx, "wmma_gemm_shared_f16", [a, b, d], [m, n, k], tiles, 32)
    want = _reference(a, b, np.zeros((m, n)), np.float16)
    assert (want == got.T).all()


def test_the_corpus_is_what_make_sh_wrote() -> None:
    source = (CORPUS / "wmma_gemm.cu").read_text()
    for arch in ("80", "90"):
        ptx = (CORPUS / f"wmma_gemm.sm{arch}.ptx").read_text()
        assert f".target sm_{arch}" in ptx
        for entry in ("wmma_gemm_row", "wmma_gemm_col", "wmma_gemm_shared_f16"):
            assert f'extern "C" __global__ void {entry}(' in source
            assert f".entry {entry}(" in ptx


KERNEL = """.version 8.0
.target sm_80
.address_size 64
.visible .entry w(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 d)
{
    .reg .b32 %r<32>;
    .reg .f32 %f<20>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [a];
    ld.param.u64 %rd2, [b];
    ld.param.u64 %rd3, [c];
    ld.param.u64 %rd4, [d];
    BODY
    ret;
}
"""


def _regs(prefix: str, first: int, count: int) -> str:
    return "{" + ", ".join(f"%{prefix}{first + k}" for k in range(count)) + "}"


def _strided(mat: np.ndarray[Any, Any], col: bool, stride: int) -> np.ndarray[Any, Any]:
    """mat (16 x 16) in memory as .row or .col with a stride of `stride` elements."""
    lines = mat.T if col else mat
    out = np.full((16, stride), np.nan, mat.dtype)
    out[:, :16] = lines
    return out


def _unstrided(mem: np.ndarray[Any, Any], col: bool) -> np.ndarray[Any, Any]:
    lines = mem[:, :16]
    return lines.T if col else lines


@pytest.mark.parametrize(
    ("a_col", "b_col", "c_col", "d_col"), [(0, 0, 0, 0), (1, 1, 1, 1), (0, 1, 1, 0)]
)
@pytest.mark.parametrize(
    ("ctype", "dtype"), [("f32", "f32"), ("f16", "f16"), ("f16", "f32"), ("f32", "f16")]
)
def test_load_mma_store_with_layouts_and_strides(
    gpu: ar.Backend, a_col: int, b_col: int, c_col: int, d_col: int, ctype: str, dtype: str
) -> None:
    """Every memory layout and a stride over 16 for each operand; generic addresses."""
    lay = ["row", "col"]
    nc, nd = (8 if ctype == "f32" else 4), (8 if dtype == "f32" else 4)
    npc, npd = (
        {"f32": np.float32, "f16": np.float16}[ctype],
        {"f32": np.float32, "f16": np.float16}[dtype],
    )
    a = RNG.standard_normal((16, 16)).astype(np.float16)
    b = RNG.standard_normal((16, 16)).astype(np.float16)
    c = (RNG.standard_normal((16, 16)) * 4).astype(npc)
    mem = [_strided(a, bool(a_col), 24), _strided(b, bool(b_col), 32), _strided(c, bool(c_col), 40)]
    dmem = np.zeros((16, 48), npd)
    body = [
        f"wmma.load.a.sync.aligned.{lay[a_col]}.m16n16k16.f16 {_regs('r', 0, 8)}, [%rd1], 24;",
        f"wmma.load.b.sync.aligned.{lay[b_col]}.m16n16k16.f16 {_regs('r', 8, 8)}, [%rd2], 32;",
        f"wmma.load.c.sync.aligned.{lay[c_col]}.m16n16k16.{ctype} "
        f"{_regs('f' if ctype == 'f32' else 'r', 0 if ctype == 'f32' else 16, nc)}, [%rd3], 40;",
        f"wmma.mma.sync.aligned.{lay[a_col]}.{lay[b_col]}.m16n16k16.{dtype}.{ctype} "
        f"{_regs('f' if dtype == 'f32' else 'r', 8 if dtype == 'f32' else 24, nd)}, "
        f"{_regs('r', 0, 8)}, {_regs('r', 8, 8)}, "
        f"{_regs('f' if ctype == 'f32' else 'r', 0 if ctype == 'f32' else 16, nc)};",
        f"wmma.store.d.sync.aligned.{lay[d_col]}.m16n16k16.{dtype} [%rd4], "
        f"{_regs('f' if dtype == 'f32' else 'r', 8 if dtype == 'f32' else 24, nd)}, 48;",
    ]
    ptx = KERNEL.replace("BODY", "\n    ".join(body))
    got = _run(gpu, ptx, "w", [*mem, dmem], [], 1, 32)[3]
    assert np.isnan(got[:, 16:]).sum() == 0 and (got[:, 16:] == 0).all()  # nothing past the lines
    exact = a.astype(np.float64) @ b.astype(np.float64) + c.astype(np.float64)
    assert (_unstrided(got, bool(d_col)) == exact.astype(npd)).all()


def test_bf16_multiplicands(gpu: ar.Backend) -> None:
    def bits(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)

    a, b = RNG.standard_normal((16, 16)), RNG.standard_normal((16, 16))
    abits, bbits = bits(a), bits(b)
    a = (abits.astype(np.uint32) << 16).view(np.float32)
    b = (bbits.astype(np.uint32) << 16).view(np.float32)
    c = RNG.standard_normal((16, 16)).astype(np.float32)
    body = [
        f"wmma.load.a.sync.aligned.row.m16n16k16.global.bf16 {_regs('r', 0, 4)}, [%rd1], 16;",
        f"wmma.load.b.sync.aligned.col.m16n16k16.global.bf16 {_regs('r', 8, 4)}, [%rd2], 16;",
        f"wmma.load.c.sync.aligned.row.m16n16k16.global.f32 {_regs('f', 0, 8)}, [%rd3], 16;",
        f"wmma.mma.sync.aligned.row.col.m16n16k16.f32.bf16.bf16.f32 {_regs('f', 8, 8)}, "
        f"{_regs('r', 0, 4)}, {_regs('r', 8, 4)}, {_regs('f', 0, 8)};",
        f"wmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%rd4], {_regs('f', 8, 8)}, 16;",
    ]
    ptx = KERNEL.replace("BODY", "\n    ".join(body))
    arrays = [abits, bbits.T.copy(), c, np.zeros((16, 16), np.float32)]
    got = _run(gpu, ptx, "w", arrays, [], 1, 32)[3]
    want = (a.astype(np.float64) @ b.astype(np.float64) + c).astype(np.float32)
    assert (got == want).all()


LOAD_C = "wmma.load.c.sync.aligned.row.m16n16k16.global.f32 {%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7}, [%rd5], 16;"  # noqa: E501


def test_lanes_with_different_addresses_fail_the_launch(gpu: ar.Backend, capfd: Any) -> None:
    body = ["mov.u32 %r1, %tid.x;", "and.b32 %r1, %r1, 1;", "mul.wide.u32 %rd6, %r1, 64;",
            "add.s64 %rd5, %rd3, %rd6;", LOAD_C]  # fmt: skip
    ptx = KERNEL.replace("BODY", "\n    ".join(body))
    z = np.zeros((16, 32), np.float32)
    with pytest.raises(DriverError, match="LAUNCH_FAILED"):
        _run(gpu, ptx, "w", [z, z, z, z], [], 1, 32)
    line = ptx.splitlines().index(f"    {LOAD_C}") + 1
    assert f"ptx line {line}: wmma's address differs between the lanes" in capfd.readouterr().err


def test_a_partial_warp_fails_the_launch(gpu: ar.Backend) -> None:
    ptx = KERNEL.replace("BODY", "mov.u64 %rd5, %rd3;\n    " + LOAD_C)
    z = np.zeros((16, 16), np.float32)
    with pytest.raises(DriverError, match="LAUNCH_FAILED"):
        _run(gpu, ptx, "w", [z, z, z, z], [], 1, 16)


@pytest.mark.parametrize(
    "opcode",
    [
        "wmma.load.a.sync.aligned.row.m16n16k16.global.s8",
        "wmma.load.a.sync.aligned.row.m8n32k16.global.f16",
        "wmma.load.c.sync.aligned.row.m16n16k16.global.f64",
        "wmma.load.a.sync.aligned.row.m16n16k16.local.f16",
        "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32.satfinite",
        "wmma.mma.sync.aligned.row.col.m16n16k8.f32.tf32.tf32.f32",
    ],
)
def test_other_wmma_forms_are_refused_by_name(gpu: ar.Backend, opcode: str) -> None:
    ptx = KERNEL.replace("BODY", f"{opcode} {_regs('r', 0, 8)}, [%rd1];")
    line = ptx.splitlines().index(f"    {opcode} {_regs('r', 0, 8)}, [%rd1];") + 1
    with pytest.raises(DriverError, match=f"ptx line {line}: unsupported instruction '{opcode}'"):
        gpu.load_module(f"refused-{next(_SERIAL)}", ptx)

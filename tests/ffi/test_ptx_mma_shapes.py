"""The other mma.sync shapes and types nvcc and Triton emit for sm_80, on
cuda-sim against numpy (issue 30): m16n8k8 (f16, bf16, tf32), m16n8k4 (tf32),
m16n8k32 and m16n8k16 (s8/u8 -> s32, with and without .satfinite), m8n8k4
(f64), and m16n8k16 with a mixed f16/f32 accumulator.

Each lane loads its fragment registers, runs one mma and stores D.  The
fragments are packed here from the PTX ISA's layout formulas ("Matrix
Fragments for mma.m16n8k8", "...m16n8k4", "...m16n8k32", "...m16n8k16
with integer type", "...m8n8k4 with .f64"), independently of the sim's C
(ffi/sim/ptx/ptx_mma_forms.h).  Elements fill each register from its low
bits.  The inputs are chosen so the sums are exact in double, where every
summation order agrees.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import aruntime as ar
from aruntime import DriverError

RNG = np.random.default_rng(1688)
_SERIAL = itertools.count()
HEAD = ".version 8.0\n.target sm_80\n.address_size 64\n"

Pos = Callable[[int, int, int], tuple[int, int]]  # (g, t, i) -> (row, col)

#: The ISA's layouts, by (shape, operand, input family).
LAYOUT: dict[tuple[str, str, str], Pos] = {
    ("m16n8k16", "a", "half"): lambda g, t, i: (
        g + 8 * ((i >> 1) & 1),
        2 * t + (i & 1) + 8 * (i >= 4),
    ),
    ("m16n8k16", "b", "half"): lambda g, t, i: (2 * t + (i & 1) + 8 * (i >= 2), g),
    ("m16n8k8", "a", "half"): lambda g, t, i: (g + 8 * (i >= 2), 2 * t + (i & 1)),
    ("m16n8k8", "b", "half"): lambda g, t, i: (2 * t + i, g),
    ("m16n8k8", "a", "tf32"): lambda g, t, i: (g + 8 * (i in (1, 3)), t + 4 * (i >= 2)),
    ("m16n8k8", "b", "tf32"): lambda g, t, i: (t + 4 * i, g),
    ("m16n8k4", "a", "tf32"): lambda g, t, i: (g + 8 * i, t),
    ("m16n8k4", "b", "tf32"): lambda g, t, i: (t, g),
    ("m16n8k32", "a", "int8"): lambda g, t, i: (
        g if (i < 4 or 8 <= i < 12) else g + 8,
        4 * t + (i & 3) + 16 * (i >= 8),
    ),
    ("m16n8k32", "b", "int8"): lambda g, t, i: (4 * t + (i & 3) + 16 * (i >= 4), g),
    ("m16n8k16", "a", "int8"): lambda g, t, i: (g + 8 * (i >= 4), 4 * t + (i & 3)),
    ("m16n8k16", "b", "int8"): lambda g, t, i: (4 * t + i, g),
    ("m8n8k4", "a", "f64"): lambda g, t, i: (g, t),
    ("m8n8k4", "b", "f64"): lambda g, t, i: (t, g),
}


def _cd(shape: str) -> Pos:
    if shape == "m8n8k4":
        return lambda g, t, i: (g, 2 * t + i)
    return lambda g, t, i: (g + 8 * (i >= 2), 2 * t + (i & 1))


#: bits of an element of each type in a fragment register
BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f32": 32, "s8": 8, "u8": 8, "s32": 32, "f64": 64}
FAMILY = {"f16": "half", "bf16": "half", "tf32": "tf32", "s8": "int8", "u8": "int8", "f64": "f64"}


@pytest.fixture(scope="module")
def gpu() -> Iterator[ar.Backend]:
    with ar.open_backend("cuda-sim") as backend:
        yield backend


def _bits(x: np.ndarray[Any, Any], t: str) -> np.ndarray[Any, Any]:
    """Each element's bits, as unsigned integers of the element's width."""
    if t == "bf16":
        return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint64)
    view = {"f16": np.uint16, "tf32": np.uint32, "f32": np.uint32, "s8": np.uint8,
            "u8": np.uint8, "s32": np.uint32, "f64": np.uint64}[t]  # fmt: skip
    cast = {"f16": np.float16, "tf32": np.float32, "f32": np.float32, "s8": np.int8,
            "u8": np.uint8, "s32": np.int32, "f64": np.float64}[t]  # fmt: skip
    return x.astype(cast).view(view).astype(np.uint64)


def _pack(mat: np.ndarray[Any, Any], t: str, pos: Pos) -> np.ndarray[Any, Any]:
    """The 32 lanes' fragment registers of mat (lane-major, 32 or 64 bits each)."""
    bits = BITS[t]
    per = max(1, 32 // bits)
    count = mat.size // 32
    regs = np.zeros((32, max(1, count // per)), np.uint64)
    raw = _bits(mat, t)
    for lane in range(32):
        for i in range(count):
            row, col = pos(lane >> 2, lane % 4, i)
            regs[lane, i // per] |= int(raw[row, col]) << (bits * (i % per) if bits < 64 else 0)
    return regs.astype(np.uint64 if bits == 64 else np.uint32)


def _unpack(regs: np.ndarray[Any, Any], t: str, pos: Pos, rows: int) -> np.ndarray[Any, Any]:
    bits = BITS[t]
    per = max(1, 32 // bits)
    out = np.zeros((rows, 8), np.uint64)
    for lane in range(32):
        for i in range(rows * 8 // 32):
            row, col = pos(lane >> 2, lane % 4, i)
            word = int(regs[lane, i // per])
            out[row, col] = (word >> (bits * (i % per))) & ((1 << bits) - 1) if bits < 64 else word
    dtype = {"f16": np.float16, "f32": np.float32, "s32": np.int32, "f64": np.float64}[t]
    width = {16: np.uint16, 32: np.uint32, 64: np.uint64}[bits]
    return out.astype(width).view(dtype)


KERNEL = """.visible .entry mmag(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 d)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<16>;
    DECLS
    ld.param.u64 %rd1, [a];
    ld.param.u64 %rd2, [b];
    ld.param.u64 %rd3, [c];
    ld.param.u64 %rd4, [d];
    mov.u32 %r0, %tid.x;
    mul.wide.u32 %rd5, %r0, ABYTES;
    add.s64 %rd1, %rd1, %rd5;
    mul.wide.u32 %rd5, %r0, BBYTES;
    add.s64 %rd2, %rd2, %rd5;
    mul.wide.u32 %rd5, %r0, CBYTES;
    add.s64 %rd3, %rd3, %rd5;
    mul.wide.u32 %rd5, %r0, DBYTES;
    add.s64 %rd4, %rd4, %rd5;
BODY
    ret;
}
"""


def _regs(name: str, count: int, wide: bool) -> tuple[str, str, list[str]]:
    width = 64 if wide else 32
    names = [f"%{name}{k}" for k in range(count)]
    return f".reg .b{width} %{name}<{count}>;", f"b{width}", names


def _mma(
    gpu: ar.Backend,
    opcode: str,
    shape: str,
    types: tuple[str, str, str, str],
    a: np.ndarray[Any, Any],
    b: np.ndarray[Any, Any],
    c: np.ndarray[Any, Any],
) -> np.ndarray[Any, Any]:
    """Runs opcode on (a, b, c); D as a matrix."""
    dt, at, bt, ct = types
    fa = _pack(a, at, LAYOUT[shape, "a", FAMILY[at]])
    fb = _pack(b, bt, LAYOUT[shape, "b", FAMILY[bt]])
    fc = _pack(c, ct, _cd(shape))
    rows = c.shape[0]
    dregs = rows * 8 // 32 // max(1, 32 // BITS[dt])
    decls, body, ops = [], [], []
    for name, frag, wide in (
        ("ra", fa, at == "f64"),
        ("rb", fb, bt == "f64"),
        ("rc", fc, ct == "f64"),
    ):
        decl, width, names = _regs(name, frag.shape[1], wide)
        decls.append(decl)
        base = {"ra": "%rd1", "rb": "%rd2", "rc": "%rd3"}[name]
        step = 8 if wide else 4
        body += [f"    ld.global.{width} {r}, [{base}+{step * k}];" for k, r in enumerate(names)]
        ops.append("{" + ", ".join(names) + "}")
    decl, width, dnames = _regs("rd_", dregs, dt == "f64")
    decls.append(decl)
    body.append(f"    {opcode} {{{', '.join(dnames)}}}, {', '.join(ops)};")
    step = 8 if dt == "f64" else 4
    body += [f"    st.global.{width} [%rd4+{step * k}], {r};" for k, r in enumerate(dnames)]
    ptx = (
        KERNEL.replace("DECLS", "\n    ".join(decls))
        .replace("BODY", "\n".join(body))
        .replace("ABYTES", str(fa.itemsize * fa.shape[1]))
        .replace("BBYTES", str(fb.itemsize * fb.shape[1]))
        .replace("CBYTES", str(fc.itemsize * fc.shape[1]))
        .replace("DBYTES", str(step * dregs))
    )
    module = gpu.load_module(f"mmag-{next(_SERIAL)}", HEAD + ptx)
    out = np.zeros((32, dregs), np.uint64 if dt == "f64" else np.uint32)
    ptrs = []
    try:
        for host in (fa, fb, fc, out):
            ptrs.append(gpu.alloc(host.nbytes))
            gpu.copy_h2d(np.ascontiguousarray(host), ptrs[-1])
        gpu.launch(gpu.kernel(module, "mmag"), 1, 32, ptrs).wait()
        got = gpu.copy_d2h(ptrs[-1], np.empty_like(out))
    finally:
        for p in ptrs:
            gpu.free(p)
    return _unpack(got, dt, _cd(shape), rows)


def _tf32(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Values exact in tf32 (10 explicit mantissa bits)."""
    return (x.astype(np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def _bf16(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return (x.astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)


FLOAT_FORMS = [
    ("m16n8k8", ("f32", "f16", "f16", "f32")),
    ("m16n8k8", ("f16", "f16", "f16", "f16")),
    ("m16n8k8", ("f32", "bf16", "bf16", "f32")),
    ("m16n8k8", ("f32", "tf32", "tf32", "f32")),
    ("m16n8k4", ("f32", "tf32", "tf32", "f32")),
    ("m16n8k16", ("f32", "f16", "f16", "f16")),
    ("m16n8k16", ("f16", "f16", "f16", "f32")),
    ("m8n8k4", ("f64", "f64", "f64", "f64")),
]


@pytest.mark.parametrize(("shape", "types"), FLOAT_FORMS)
def test_float_mma(gpu: ar.Backend, shape: str, types: tuple[str, str, str, str]) -> None:
    dt, at, _, ct = types
    m, k = (8, 4) if shape == "m8n8k4" else (16, int(shape.split("k")[1]))
    conv = {"f16": lambda x: x.astype(np.float16), "bf16": _bf16, "tf32": _tf32,
            "f64": lambda x: np.round(x * 64) / 64}[at]  # fmt: skip
    a, b = conv(RNG.standard_normal((m, k)) * 2), conv(RNG.standard_normal((k, 8)) * 2)
    c = RNG.standard_normal((m, 8)) * 8
    c = {"f32": np.float32, "f16": np.float16, "f64": np.float64}[ct](
        np.round(c * 64) / 64 if ct == "f64" else c
    )
    opcode = f"mma.sync.aligned.{shape}.row.col.{'.'.join(types)}"
    got = _mma(gpu, opcode, shape, types, a, b, c)
    exact = a.astype(np.float64) @ b.astype(np.float64) + c.astype(np.float64)
    want = exact.astype({"f32": np.float32, "f16": np.float16, "f64": np.float64}[dt])
    assert got.dtype == want.dtype
    assert (got == want).all()


def test_tf32_ignores_the_low_mantissa_bits(gpu: ar.Backend) -> None:
    """A .tf32 operand is an f32 register; the tensor core reads its top 19 bits."""
    a = RNG.standard_normal((16, 8)).astype(np.float32)
    b = RNG.standard_normal((8, 8)).astype(np.float32)
    c = np.zeros((16, 8), np.float32)
    types = ("f32", "tf32", "tf32", "f32")
    got = _mma(gpu, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", "m16n8k8", types, a, b, c)
    want = (_tf32(a).astype(np.float64) @ _tf32(b).astype(np.float64)).astype(np.float32)
    assert (got == want).all()


@pytest.mark.parametrize("shape", ["m16n8k32", "m16n8k16"])
@pytest.mark.parametrize(("at", "bt"), [("s8", "s8"), ("u8", "s8"), ("s8", "u8"), ("u8", "u8")])
@pytest.mark.parametrize("sat", [False, True])
def test_int8_mma(gpu: ar.Backend, shape: str, at: str, bt: str, sat: bool) -> None:
    """Exact s32 sums; past the s32 range they wrap, or with .satfinite clamp."""
    k = int(shape.split("k")[1])
    lo = {"s8": -128, "u8": 0}
    a = RNG.integers(lo[at], lo[at] + 256, (16, k))
    b = RNG.integers(lo[bt], lo[bt] + 256, (k, 8))
    c = RNG.integers(-(2**20), 2**20, (16, 8))
    c[0, :4] = [2**31 - 1, -(2**31), 2**31 - 1, -(2**31)]  # where the sum leaves the s32 range
    a[0, :] = lo[at] + 255 if at == "u8" else 127
    b[:, :4] = np.where(np.arange(4) % 2, -128 if bt == "s8" else 0, lo[bt] + 255)[None, :]
    types = ("s32", at, bt, "s32")
    sat_mod = ".satfinite" if sat else ""
    opcode = f"mma.sync.aligned.{shape}.row.col{sat_mod}.s32.{at}.{bt}.s32"
    got = _mma(gpu, opcode, shape, types, a, b, c)
    exact = a @ b + c
    wrapped = ((exact + 2**31) % 2**32) - 2**31
    want = np.clip(exact, -(2**31), 2**31 - 1) if sat else wrapped
    assert (exact != want).any()  # the range's edges were crossed
    assert (got == want).all()


def test_an_mma_of_the_wrong_register_count_is_refused(gpu: ar.Backend) -> None:
    ptx = KERNEL.replace("DECLS", ".reg .b32 %x<9>;").replace(
        "BODY",
        "    mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%x0, %x1, %x2, %x3}, "
        "{%x4, %x5, %x6, %x7}, {%x8}, {%x0, %x1, %x2, %x3};",
    )
    for word in ("ABYTES", "BBYTES", "CBYTES", "DBYTES"):
        ptx = ptx.replace(word, "4")
    with pytest.raises(DriverError, match="operand 2 needs a vector of 2"):
        gpu.load_module(f"bad-{next(_SERIAL)}", HEAD + ptx)

"""TMA's im2col mode and bulk prefetches on cuda-sim (issue 30).

cuTensorMapEncodeIm2col builds a map of an N[D][H]WC tensor; the
``.im2col`` form of cp.async.bulk.tensor loads pixelsPerColumn rows of
channelsPerPixel channels, one row per filter base in the map's bounding box
(walked W first, then H, D and the next image, by the traversal strides),
each row the pixel at base + the instruction's im2col offsets.  Each load is
checked against a numpy reference that lists a whole image's filter bases
first and slices that list (the sim walks them one step at a time).

The prefetches are hints: they run as no-ops once their operands are
checked.  Multicast needs a cluster of several blocks, which cuda-sim's
device does not have: refused at load, saying so.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import cffi
import numpy as np
import pytest
from _cudasim_support import sim_library_path

import aruntime as ar
from aruntime import DriverError

RNG = np.random.default_rng(2030)
_SERIAL = itertools.count()
HEAD = ".version 8.3\n.target sm_90a\n.address_size 64\n"
CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_NOT_SUPPORTED = 1, 801
U8, I32, F16, F32 = 0, 3, 6, 7  # CUtensorMapDataType
NP_TYPE = {U8: np.uint8, I32: np.int32, F16: np.float16, F32: np.float32}
NAN_FILL = {F16: np.uint16(0x7FFF), F32: np.uint32(0x7FFFFFFF)}

ffi = cffi.FFI()
ffi.cdef(
    """
typedef struct { uint64_t opaque[16]; } CUtensorMap;
int cuTensorMapEncodeTiled(CUtensorMap *, unsigned, uint32_t, void *, const uint64_t *,
    const uint64_t *, const uint32_t *, const uint32_t *, unsigned, unsigned, unsigned, unsigned);
int cuTensorMapEncodeIm2col(CUtensorMap *, unsigned, uint32_t, void *, const uint64_t *,
    const uint64_t *, const int *, const int *, uint32_t, uint32_t, const uint32_t *, unsigned,
    unsigned, unsigned, unsigned);
"""
)


@pytest.fixture
def gpu() -> Iterator[ar.Backend]:
    """A backend per test: one prefetch faults, which poisons the context
    until its last user lets it go."""
    with ar.open_backend("cuda-sim") as backend:
        yield backend


@pytest.fixture(scope="module")
def lib() -> Any:
    return ffi.dlopen(str(sim_library_path()))


def _encode(lib: Any, **kw: Any) -> tuple[int, bytes]:
    """cuTensorMapEncodeIm2col with kw over a valid rank-4 f16 default."""
    a: dict[str, Any] = {
        "dtype": F16, "addr": 1 << 20, "dims": [16, 6, 5, 2], "strides": [32, 192, 960],
        "lower": [-1, -1], "upper": [-1, -1], "cpp": 8, "ppc": 32, "estr": [1, 1, 1, 1],
        "interleave": 0, "swizzle": 0, "l2": 0, "fill": 0,
    }  # fmt: skip
    a.update(kw)
    tmap = ffi.new("CUtensorMap *")
    rc = lib.cuTensorMapEncodeIm2col(
        tmap, a["dtype"], a.get("rank", len(a["dims"])), ffi.cast("void *", a["addr"]),
        ffi.new("uint64_t[]", a["dims"]), ffi.new("uint64_t[]", a["strides"]),
        ffi.new("int[]", a["lower"] or [0]), ffi.new("int[]", a["upper"] or [0]), a["cpp"],
        a["ppc"], ffi.new("uint32_t[]", a["estr"]), a["interleave"], a["swizzle"], a["l2"],
        a["fill"],
    )  # fmt: skip
    return rc, bytes(ffi.buffer(tmap))


RANK5_LOW_CORNER = {
    "dims": [16, 4, 4, 4, 2], "strides": [32, 128, 512, 2048], "lower": [-17, 0, 0],
    "upper": [0, 0, 0], "estr": [1] * 5,
}  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "rc"),
    [
        ({}, 0),
        ({"dims": [16, 6, 5], "strides": [32, 192], "lower": [-300], "upper": [300]}, 0),
        ({"rank": 2}, CUDA_ERROR_INVALID_VALUE),  # im2col needs 3..5
        ({"rank": 6}, CUDA_ERROR_INVALID_VALUE),
        ({"lower": [-129, 0]}, CUDA_ERROR_INVALID_VALUE),  # rank 4: [-128, 127]
        ({"upper": [0, 128]}, CUDA_ERROR_INVALID_VALUE),
        (RANK5_LOW_CORNER, CUDA_ERROR_INVALID_VALUE),  # rank 5: [-16, 15]
        ({"lower": [3, 0], "upper": [-3, 0]}, CUDA_ERROR_INVALID_VALUE),  # W: 3..2, empty
        ({"cpp": 0}, CUDA_ERROR_INVALID_VALUE),
        ({"cpp": 264}, CUDA_ERROR_INVALID_VALUE),  # over 256
        ({"ppc": 0}, CUDA_ERROR_INVALID_VALUE),
        ({"ppc": 1025}, CUDA_ERROR_INVALID_VALUE),  # over 1024
        ({"cpp": 4}, CUDA_ERROR_INVALID_VALUE),  # 8-byte rows: not a multiple of 16
        ({"swizzle": 1, "cpp": 32}, CUDA_ERROR_INVALID_VALUE),  # 64-byte rows over a 32B span
        ({"estr": [1, 9, 1, 1]}, CUDA_ERROR_INVALID_VALUE),
        ({"estr": [0, 1, 1, 1]}, CUDA_ERROR_INVALID_VALUE),
        ({"strides": [24, 192, 960]}, CUDA_ERROR_INVALID_VALUE),  # not a multiple of 16
        ({"dims": [16, 0, 5, 2]}, CUDA_ERROR_INVALID_VALUE),
        ({"addr": (1 << 20) + 8}, CUDA_ERROR_INVALID_VALUE),  # not 16-byte aligned
        ({"dtype": I32, "cpp": 4, "fill": 1}, CUDA_ERROR_INVALID_VALUE),  # NaN fill, integers
        ({"fill": 2}, CUDA_ERROR_INVALID_VALUE),
        ({"l2": 4}, CUDA_ERROR_INVALID_VALUE),
        ({"interleave": 3}, CUDA_ERROR_INVALID_VALUE),
        ({"swizzle": 7}, CUDA_ERROR_INVALID_VALUE),
        ({"dtype": 16}, CUDA_ERROR_INVALID_VALUE),
        ({"interleave": 1}, CUDA_ERROR_NOT_SUPPORTED),  # interleaved layouts: not modelled
        ({"swizzle": 4}, CUDA_ERROR_NOT_SUPPORTED),  # 128B_ATOM_32B: not modelled
        ({"dtype": 13}, CUDA_ERROR_NOT_SUPPORTED),  # packed 4-bit: not modelled
    ],
)
def test_encode_im2col_checks_the_driver_rules(lib: Any, kwargs: dict[str, Any], rc: int) -> None:
    got, raw = _encode(lib, **kwargs)
    assert got == rc
    if rc == 0 and not kwargs:  # the fields, where sim_tensormap.h puts them
        words = np.frombuffer(raw, np.uint64)
        assert words[0] == 1 << 20 and words[1] == 16 and words[6] == 32
        assert raw[101] == 1  # an im2col map
        assert np.frombuffer(raw[102:118], np.int16).tolist() == [-1, -1, 0, -1, -1, 0, 8, 32]


def _reference(
    tensor: np.ndarray[Any, Any], dims: list[int], lower: list[int], upper: list[int],
    estr: list[int], cpp: int, ppc: int, coords: list[int], offs: list[int], fill: Any,
) -> np.ndarray[Any, Any]:  # fmt: skip
    """The box by the ISA's im2col rules, from a list of an image's filter bases."""
    ns = len(dims) - 2
    axes = [range(lower[i], dims[1 + i] + upper[i], estr[1 + i]) for i in range(ns)]
    bases = [b[::-1] for b in itertools.product(*axes[::-1])]  # W fastest
    start = bases.index(tuple(coords[1 : 1 + ns]))
    walk = [(coords[-1], b) for b in bases[start:]]
    n = coords[-1]
    while len(walk) < ppc:
        n += 1
        walk += [(n, b) for b in bases]
    out = np.full((ppc, cpp), fill, tensor.dtype)
    for row, (n, base) in enumerate(walk[:ppc]):
        pix = [base[i] + offs[i] for i in range(ns)]
        if not 0 <= n < dims[-1] or not all(0 <= pix[i] < dims[1 + i] for i in range(ns)):
            continue
        for k in range(cpp):
            if 0 <= coords[0] + k < dims[0]:
                out[row, k] = tensor[(n, *pix[::-1], coords[0] + k)]
    return out


def _swizzled(raw: np.ndarray[Any, Any], swizzle: int) -> np.ndarray[Any, Any]:
    """The box's bytes as shared memory holds them (address bits 4.. ^= 7..)."""
    if not swizzle:
        return raw
    off = np.arange(raw.size)
    out = np.empty_like(raw)
    out[off ^ (((off >> 7) & ((1 << swizzle) - 1)) << 4)] = raw
    return out


def _kernel(rank: int, nbytes: int, mode: str = ".im2col", offsets: bool = True) -> str:
    """k(map, args, out): one thread loads the box at args' coordinates (int32 x 5)
    and im2col offsets (u16 x 3, at byte 20), then stores its shared bytes to out."""
    coords = ", ".join(f"%r{10 + i}" for i in range(rank))
    offs = ", {" + ", ".join(f"%rs{1 + i}" for i in range(rank - 2)) + "}" if offsets else ""
    copy = f"cp.async.bulk.tensor.{rank}d.shared::cluster.global{mode}.mbarrier::complete_tx::bytes"
    return f"""{HEAD}.visible .entry k(.param .u64 p0, .param .u64 p1, .param .u64 p2)
{{
    .reg .pred %p<4>;
    .reg .b16 %rs<4>;
    .reg .b32 %r<20>;
    .reg .b64 %rd<4>;
    .shared .align 1024 .b8 sh[{max(nbytes, 128)}];
    .shared .align 8 .b64 bar[1];
    mov.u32 %r2, sh;
    mov.u32 %r3, bar;
    ld.param.u64 %rd1, [p0];
    ld.param.u64 %rd3, [p1];
    ld.param.u64 %rd2, [p2];
    ld.global.v4.u32 {{%r10, %r11, %r12, %r13}}, [%rd3];
    ld.global.u32 %r14, [%rd3+16];
    ld.global.u16 %rs1, [%rd3+20];
    ld.global.u16 %rs2, [%rd3+22];
    ld.global.u16 %rs3, [%rd3+24];
    mbarrier.init.shared::cta.b64 [%r3], 1;
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r3], {nbytes};
    {copy} [%r2], [%rd1, {{{coords}}}], [%r3]{offs};
W0:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r3], 0;
    @!%p2 bra W0;
    cp.async.bulk.global.shared::cta.bulk_group [%rd2], [%r2], {nbytes};
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group 0;
    ret;
}}
"""


def _launch(
    gpu: ar.Backend, ptx: str, raw_map: bytes, coords: list[int], offs: list[int], nbytes: int
) -> np.ndarray[Any, Any]:
    module = f"im2col-{next(_SERIAL)}"
    gpu.load_module(module, ptx)
    args = np.zeros(8, np.int32)
    args[: len(coords)] = coords
    args.view(np.uint16)[10 : 10 + len(offs)] = offs
    mp, ap, op = gpu.alloc(128), gpu.alloc(args.nbytes), gpu.alloc(nbytes)
    try:
        gpu.copy_h2d(np.frombuffer(raw_map, np.uint8), mp)
        gpu.copy_h2d(args, ap)
        gpu.launch(gpu.kernel(module, "k"), 1, 1, [mp, ap, op]).wait()
        return gpu.copy_d2h(op, np.empty(nbytes, np.uint8))
    finally:
        for p in (mp, ap, op):
            gpu.free(p)


# rank, dtype, channels (padded to), pixel dims (W, H, D), corners, strides, cpp, ppc,
# filter base (c, W, H, D, N), offsets, swizzle, NaN fill
CASES = {
    # 3x3 convolution with padding 1 on two 6x5 images: the walk wraps rows,
    # crosses into image 1 and runs past the batch; channels 8..15 of 12.
    "nhwc-f16-pad1": (4, F16, (12, 16), [6, 5], [-1, -1], [-1, -1], [1, 1], 8, 48,
                      [8, 3, 2, 1], [2, 1], 0, 0),
    "nhwc-f16-pad1-swizzle32": (4, F16, (12, 16), [6, 5], [-1, -1], [-1, -1], [1, 1], 16, 40,
                                [0, 3, 2, 1], [2, 0], 1, 0),
    # convolution stride 2 in W and H, no padding, a NaN fill past the batch
    "nhwc-f32-stride2-nan": (4, F32, (8, 8), [7, 6], [0, 0], [-2, -2], [2, 2], 8, 24,
                             [0, 2, 2, 0], [1, 2], 3, 1),
    # NWC: one offset, 16 bits wide; a long row with padding 3
    "nwc-f32": (3, F32, (4, 4), [9], [-3], [0], [1], 4, 32, [0, -2, 1], [5], 0, 0),
    # NDHWC: three offsets
    "ndhwc-f16": (5, F16, (8, 8), [4, 3, 3], [0, -1, 0], [-1, 0, -2], [1, 1, 1], 8, 40,
                  [0, 1, 0, 0, 0], [1, 0, 2], 2, 0),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_im2col_load_matches_numpy(gpu: ar.Backend, lib: Any, case: str) -> None:
    rank, dtype, (chans, cpad), pix, lower, upper, pstr, cpp, ppc, coords, offs, swz, nan = CASES[
        case
    ]
    np_t = NP_TYPE[dtype]
    dims = [chans, *pix, 2]
    tensor = RNG.standard_normal((2, *pix[::-1], cpad)).astype(np_t)
    strides = list(tensor.strides[::-1][1:])
    estr = [1, *pstr, 1]
    g = gpu.alloc(tensor.nbytes)
    try:
        gpu.copy_h2d(tensor, g)
        rc, raw = _encode(
            lib, dtype=dtype, addr=int(g), dims=dims, strides=strides, lower=lower, upper=upper,
            cpp=cpp, ppc=ppc, estr=estr, swizzle=swz, fill=nan,
        )  # fmt: skip
        assert rc == 0
        nbytes = cpp * ppc * np.dtype(np_t).itemsize
        out = _launch(gpu, _kernel(rank, nbytes), raw, coords, offs, nbytes)
    finally:
        gpu.free(g)
    fill = NAN_FILL[dtype].view(np_t) if nan else 0  # the fill's NaN: all mantissa bits
    want = _reference(tensor, dims, lower, upper, estr, cpp, ppc, coords, offs, fill)
    assert (out == _swizzled(want.view(np.uint8).ravel(), swz)).all()


def _im2col_map(lib: Any, g: int, **kw: Any) -> bytes:
    rc, raw = _encode(lib, addr=g, **kw)
    assert rc == 0
    return raw


@pytest.mark.parametrize(
    ("coords", "offs", "kw", "message"),
    [
        ([0, 5, 2, 0], [0, 0], {}, "the filter base lies outside the map's bounding box"),
        ([0, -2, 2, 0], [0, 0], {}, "the filter base lies outside the map's bounding box"),
        ([0, 0, 0, 0], [256, 0], {}, "an offset out of range for the rank"),  # 8 bits at 4D
        ([0, 0, 0, 0], [0, 0], {"estr": [1, 1, 1, 2]}, "a traversal stride in N is not modelled"),
    ],
)
def test_an_im2col_load_it_cannot_run_fails_naming_why(
    gpu: ar.Backend, lib: Any, capfd: Any, coords: list[int], offs: list[int],
    kw: dict[str, Any], message: str,
) -> None:  # fmt: skip
    """The ISA puts the filter base inside the bounding box (W: -1..4 here)
    and bounds each offset; it leaves a stride in N undescribed."""
    g = gpu.alloc(2 * 5 * 6 * 16 * 2)
    try:
        raw = _im2col_map(lib, int(g), **kw)
        with pytest.raises(DriverError, match="LAUNCH_FAILED"):
            _launch(gpu, _kernel(4, 512), raw, coords, offs, 512)
    finally:
        gpu.free(g)
    assert message in capfd.readouterr().err


def test_the_map_must_match_the_copy_mode(gpu: ar.Backend, lib: Any, capfd: Any) -> None:
    """A tile-mode copy of an im2col map, and an im2col copy of a tiled map,
    fail the launch: neither has the other's fields."""
    g = gpu.alloc(2 * 5 * 6 * 16 * 2)
    try:
        raw = _im2col_map(lib, int(g))
        ptx = _kernel(4, 512, mode=".tile", offsets=False)
        with pytest.raises(DriverError, match="LAUNCH_FAILED"):
            _launch(gpu, ptx, raw, [0, 0, 0, 0], [], 512)
        assert "an im2col map in tile mode" in capfd.readouterr().err
        tiled = ffi.new("CUtensorMap *")
        rc = lib.cuTensorMapEncodeTiled(
            tiled, F16, 4, ffi.cast("void *", int(g)), ffi.new("uint64_t[]", [16, 6, 5, 2]),
            ffi.new("uint64_t[]", [32, 192, 960]), ffi.new("uint32_t[]", [8, 4, 2, 1]),
            ffi.new("uint32_t[]", [1] * 4), 0, 0, 0, 0,
        )  # fmt: skip
        assert rc == 0
        with pytest.raises(DriverError, match="LAUNCH_FAILED"):
            _launch(gpu, _kernel(4, 512), bytes(ffi.buffer(tiled)), [0, 0, 0, 0], [0, 0], 512)
        assert "a tiled map in im2col mode" in capfd.readouterr().err
    finally:
        gpu.free(g)


def _load_error(gpu: ar.Backend, body: str) -> str:
    ptx = f"{HEAD}.visible .entry k(.param .u64 p0)\n{{\n.reg .b16 %rs<4>;\n.reg .b32 %r<8>;\n"
    ptx += f".reg .b64 %rd<4>;\n{body}\nret;\n}}\n"
    with pytest.raises(DriverError, match="CUDA_ERROR_INVALID_PTX") as info:
        gpu.load_module(f"refused-{next(_SERIAL)}", ptx)
    return str(info.value)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (  # im2col needs 3..5 dimensions
            "cp.async.bulk.tensor.2d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
            " [%r1], [%rd1, {%r2, %r3}], [%r4], {%rs1};",
            "unsupported instruction",
        ),
        (  # the offsets operand is missing
            "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
            " [%r1], [%rd1, {%r2, %r3, %r4, %r5}], [%r6];",
            "ptx line 9",
        ),
        (  # one offset where a 4-D copy needs two
            "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
            " [%r1], [%rd1, {%r2, %r3, %r4, %r5}], [%r6], {%rs1, %rs2, %rs3};",
            "needs {2 im2col offsets}",
        ),
        (  # stores have no im2col mode with offsets
            "cp.async.bulk.tensor.3d.global.shared::cta.im2col.bulk_group"
            " [%rd1, {%r2, %r3, %r4}], [%r1];",
            "unsupported instruction",
        ),
        (
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
            ".multicast::cluster [%r1], [%rd1, {%r2, %r3}], [%r4], %rs1;",
            "has no clusters of more than one block",
        ),
        (
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
            " [%r1], [%rd1], 64, [%r4], %rs1;",
            ".multicast::cluster copies to the blocks of a cluster",
        ),
        ("cp.async.bulk.prefetch.global [%rd1], 64;", "unsupported instruction"),  # no .L2
        ("cp.async.bulk.prefetch.L2.shared::cta [%r1], 64;", "unsupported instruction"),
        (
            "cp.async.bulk.prefetch.tensor.2d.L2.global.im2col [%rd1, {%r2, %r3}], {%rs1};",
            "unsupported instruction",
        ),
        (  # a tile-mode prefetch takes no offsets
            "cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%rd1, {%r2, %r3, %r4}], {%rs1};",
            "ptx line 9",
        ),
    ],
)
def test_forms_cuda_sim_refuses_name_the_line(gpu: ar.Backend, body: str, message: str) -> None:
    err = _load_error(gpu, body)
    assert "ptx line 9" in err and message in err, err


def _prefetch(gpu: ar.Backend, lib: Any, body: str) -> None:
    """Runs body with %rd1 a 256-byte global buffer and %rd2 an im2col map of it."""
    g, mp = gpu.alloc(2 * 5 * 6 * 16 * 2), gpu.alloc(128)
    ptx = f"""{HEAD}.visible .entry k(.param .u64 p0, .param .u64 p1)
{{
    .reg .b16 %rs<4>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [p0];
    ld.param.u64 %rd2, [p1];
    mov.u32 %r1, 1;
    mov.u32 %r2, -1;
    mov.u16 %rs1, 2;
{body}
    ret;
}}
"""
    module = f"prefetch-{next(_SERIAL)}"
    try:
        gpu.copy_h2d(np.frombuffer(_im2col_map(lib, int(g)), np.uint8), mp)
        gpu.load_module(module, ptx)
        gpu.launch(gpu.kernel(module, "k"), 1, 32, [g, mp]).wait()
    finally:
        gpu.free(g)
        gpu.free(mp)


@pytest.mark.parametrize(
    "body",
    [
        "cp.async.bulk.prefetch.L2.global [%rd1+32], 1888;",  # up to the buffer's end
        "cp.async.bulk.prefetch.tensor.4d.L2.global.im2col [%rd2, {%r1, %r2, %r1, %r1}],"
        " {%rs1, %rs1};",
    ],
)
def test_bulk_prefetches_are_checked_no_ops(gpu: ar.Backend, lib: Any, body: str) -> None:
    _prefetch(gpu, lib, body)


def test_a_tile_prefetch_checks_its_map(gpu: ar.Backend, lib: Any, capfd: Any) -> None:
    """A tile-mode prefetch of a tiled map runs; of the im2col map, fails."""
    g, mp = gpu.alloc(4096), gpu.alloc(128)
    tiled = ffi.new("CUtensorMap *")
    rc = lib.cuTensorMapEncodeTiled(
        tiled, F32, 2, ffi.cast("void *", int(g)), ffi.new("uint64_t[]", [16, 16]),
        ffi.new("uint64_t[]", [64]), ffi.new("uint32_t[]", [8, 8]),
        ffi.new("uint32_t[]", [1, 1]), 0, 0, 0, 0,
    )  # fmt: skip
    assert rc == 0
    ptx = f"""{HEAD}.visible .entry k(.param .u64 p0)
{{
    .reg .b32 %r<4>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [p0];
    mov.u32 %r1, -3;
    cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%rd1, {{%r1, %r1}}];
    ret;
}}
"""
    module = f"prefetch-{next(_SERIAL)}"
    try:
        gpu.copy_h2d(np.frombuffer(bytes(ffi.buffer(tiled)), np.uint8), mp)
        gpu.load_module(module, ptx)
        gpu.launch(gpu.kernel(module, "k"), 1, 1, [mp]).wait()
        gpu.copy_h2d(np.frombuffer(_im2col_map(lib, int(g)), np.uint8), mp)
        with pytest.raises(DriverError, match="LAUNCH_FAILED"):
            gpu.launch(gpu.kernel(module, "k"), 1, 1, [mp]).wait()
    finally:
        gpu.free(g)
        gpu.free(mp)
    assert "an im2col map in tile mode" in capfd.readouterr().err


@pytest.mark.parametrize(
    ("body", "error", "message"),
    [
        ("cp.async.bulk.prefetch.L2.global [%rd1], 24;", "LAUNCH_FAILED", "multiples of 16"),
        ("cp.async.bulk.prefetch.L2.global [%rd1+8], 32;", "LAUNCH_FAILED", "multiples of 16"),
        ("cp.async.bulk.prefetch.L2.global [%rd1+32], 1904;", "ILLEGAL_ADDRESS", ""),  # 16 over
        (
            "cp.async.bulk.prefetch.tensor.4d.L2.global.im2col [%rd2, {%r1, %r2, %r1, %r1}],"
            " {%rs1, %rs1};\n    mov.u32 %r2, 9;\n"
            "    cp.async.bulk.prefetch.tensor.4d.L2.global.im2col [%rd2, {%r1, %r2, %r1, %r1}],"
            " {%rs1, %rs1};",
            "LAUNCH_FAILED",
            "the filter base lies outside the map's bounding box",
        ),
    ],
)
def test_an_ill_formed_prefetch_fails_the_launch(
    gpu: ar.Backend, lib: Any, capfd: Any, body: str, error: str, message: str
) -> None:
    with pytest.raises(DriverError, match=error):
        _prefetch(gpu, lib, body)
    assert message in capfd.readouterr().err

"""sm_90's asynchronous copies on cuda-sim (issue 30): mbarrier phases and
transaction counts, cp.async.bulk in both directions, cp.async.bulk.tensor
(TMA) with maps from cuTensorMapEncodeTiled, and stmatrix, elect.sync and
setmaxnreg.  Hand-written PTX, each checked against numpy.

cuda-sim lands a bulk load only when a thread waits on its mbarrier's phase,
so a kernel that reads the destination without that wait fails the launch
naming both lines; a phase nobody can complete fails the launch naming the
wait.  Triton's TMA matmul, which chains all of this, is in
test_ptx_triton_corpus.py.
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

RNG = np.random.default_rng(90)
_SERIAL = itertools.count()
HEAD = ".version 8.3\n.target sm_90a\n.address_size 64\n"
CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_NOT_SUPPORTED = 1, 801
F16, F32 = 6, 7  # CUtensorMapDataType

ffi = cffi.FFI()
ffi.cdef(
    """
typedef struct { uint64_t opaque[16]; } CUtensorMap;
int cuTensorMapEncodeTiled(CUtensorMap *, unsigned, uint32_t, void *, const uint64_t *,
    const uint64_t *, const uint32_t *, const uint32_t *, unsigned, unsigned, unsigned, unsigned);
"""
)


@pytest.fixture(scope="module")
def gpu() -> Iterator[ar.Backend]:
    with ar.open_backend("cuda-sim") as backend:
        yield backend


@pytest.fixture(scope="module")
def lib() -> Any:
    return ffi.dlopen(str(sim_library_path()))


def _run(
    gpu: ar.Backend, body: str, args: list[Any], outs: list[np.ndarray[Any, Any]], block: int = 32
) -> list[np.ndarray[Any, Any]]:
    """Runs kernel k(params p0.., one u64 per argument) on one block; the outs' contents after."""
    params = ", ".join(f".param .u64 p{i}" for i in range(len(args) + len(outs)))
    ptx = f"{HEAD}.visible .entry k({params})\n{{\n{body}\n}}\n"
    module = f"tma-{next(_SERIAL)}"
    gpu.load_module(module, ptx)
    ptrs = []
    try:
        for host in outs:
            ptrs.append(gpu.alloc(host.nbytes))
            gpu.copy_h2d(host, ptrs[-1])
        values = [np.uint64(int(a)) if not isinstance(a, np.integer) else a for a in args]
        gpu.launch(gpu.kernel(module, "k"), 1, block, [*values, *ptrs]).wait()
        return [gpu.copy_d2h(p, np.empty_like(h)) for p, h in zip(ptrs, outs, strict=True)]
    finally:
        for p in ptrs:
            gpu.free(p)


REGS = """    .reg .pred %p<8>;
    .reg .b32 %r<32>;
    .reg .b64 %rd<32>;
    .shared .align 1024 .b8 sh[8192];
    .shared .align 8 .b64 bar[2];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, sh;
    mov.u32 %r3, bar;
    setp.eq.u32 %p1, %r1, 0;
"""

WAIT = """W{n}:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r3], {parity};
    @!%p2 bra W{n};
"""


def test_mbarrier_phases_order_a_block(gpu: ar.Backend) -> None:
    """64 threads (two warps) arrive on one barrier and wait for the phase: the
    first warp waits while the second has not arrived; after the wait each
    reads what its neighbour stored before arriving.  Each arrival's state
    holds the pending count it left; the second phase waits by parity."""
    body = (
        REGS
        + """    @%p1 mbarrier.init.shared::cta.b64 [%r3], 64;
    bar.sync 0;
    mul.lo.u32 %r4, %r1, 4;
    add.u32 %r5, %r2, %r4;
    mul.lo.u32 %r6, %r1, 3;
    st.shared.u32 [%r5], %r6;
    mbarrier.arrive.shared::cta.b64 %rd1, [%r3];
    mbarrier.pending_count.b64 %r7, %rd1;
S0:
    mbarrier.test_wait.shared::cta.b64 %p2, [%r3], %rd1;
    @!%p2 bra S0;
    add.u32 %r8, %r1, 1;
    and.b32 %r8, %r8, 63;
    mul.lo.u32 %r8, %r8, 4;
    add.u32 %r8, %r2, %r8;
    ld.shared.u32 %r9, [%r8];
    ld.param.u64 %rd2, [p0];
    mul.wide.u32 %rd3, %r1, 12;
    add.s64 %rd2, %rd2, %rd3;
    st.global.u32 [%rd2], %r9;
    st.global.u32 [%rd2+4], %r7;
    mbarrier.arrive.shared::cta.b64 _, [%r3];
"""
        + WAIT.format(n=1, parity=1)
        + """    selp.u32 %r10, 1, 0, %p2;
    st.global.u32 [%rd2+8], %r10;
    ret;"""
    )
    (out,) = _run(gpu, body, [], [np.zeros((64, 3), np.uint32)], block=64)
    assert (out[:, 0] == (np.arange(1, 65) % 64) * 3).all()
    assert sorted(out[:, 1]) == list(range(64))  # each arrival left one fewer pending
    assert (out[:, 2] == 1).all()


def test_transaction_counts_complete_a_phase(gpu: ar.Backend) -> None:
    """arrive.expect_tx 100, then complete_tx 60 and 40: the phase completes
    only when both the arrival and the bytes are in (test_wait returns false
    until then); expect_tx adds to the next phase's count."""
    body = (
        REGS
        + """    ld.param.u64 %rd2, [p0];
    mbarrier.init.shared::cta.b64 [%r3], 1;
    mbarrier.arrive.expect_tx.shared::cta.b64 %rd1, [%r3], 100;
    mbarrier.test_wait.parity.shared::cta.b64 %p2, [%r3], 0;
    selp.u32 %r4, 1, 0, %p2;
    mbarrier.complete_tx.shared::cta.b64 [%r3], 60;
    mbarrier.test_wait.parity.shared::cta.b64 %p3, [%r3], 0;
    selp.u32 %r5, 1, 0, %p3;
    mbarrier.complete_tx.shared::cta.b64 [%r3], 40;
    mbarrier.test_wait.parity.shared::cta.b64 %p4, [%r3], 0;
    selp.u32 %r6, 1, 0, %p4;
    mbarrier.expect_tx.shared::cta.b64 [%r3], 8;
    mbarrier.arrive.shared::cta.b64 %rd1, [%r3];
    mbarrier.test_wait.shared::cta.b64 %p5, [%r3], %rd1;
    selp.u32 %r7, 1, 0, %p5;
    mbarrier.complete_tx.shared::cta.b64 [%r3], 8;
    mbarrier.test_wait.shared::cta.b64 %p6, [%r3], %rd1;
    selp.u32 %r8, 1, 0, %p6;
    st.global.v4.u32 [%rd2], {%r4, %r5, %r6, %r7};
    st.global.u32 [%rd2+16], %r8;
    mbarrier.inval.shared::cta.b64 [%r3];
    ret;"""
    )
    (out,) = _run(gpu, body, [], [np.full(5, 7, np.uint32)], block=1)
    assert out.tolist() == [0, 0, 1, 0, 1]


LOAD = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
BULK = f"""    ld.param.u64 %rd1, [p0];
    ld.param.u64 %rd2, [p1];
    @%p1 mbarrier.init.shared::cta.b64 [%r3], 1;
    @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r3], 256;
    @%p1 {LOAD} [%r2], [%rd1], 256, [%r3];
"""


def test_bulk_copies_both_ways(gpu: ar.Backend) -> None:
    """A bulk load completes the mbarrier's 256 transaction bytes; after the
    wait a bulk store (bulk_group, wait_group) writes them back out."""
    src = RNG.integers(0, 2**32, 64, dtype=np.uint32)
    p = gpu.alloc(src.nbytes)
    try:
        gpu.copy_h2d(src, p)
        body = (
            REGS
            + BULK
            + WAIT.format(n=0, parity=0)
            + """    @%p1 cp.async.bulk.global.shared::cta.bulk_group [%rd2], [%r2], 256;
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group 0;
    ret;"""
        )
        (out,) = _run(gpu, body, [p], [np.zeros(64, np.uint32)])
    finally:
        gpu.free(p)
    assert (out == src).all()


@pytest.mark.parametrize(
    ("after", "message"),
    [
        ("    ld.shared.u32 %r9, [%r2+4];", "ld reads shared memory at offset 4, the destination"),
        (WAIT.format(n=0, parity=1) + "    ld.shared.u32 %r9, [%r2];", "ld reads shared"),
        (
            "    mbarrier.inval.shared::cta.b64 [%r3];",
            "mbarrier.inval while a bulk copy will still complete it",
        ),
    ],
    ids=["no-wait", "wrong-parity", "inval"],
)
def test_a_bulk_load_read_without_its_wait_is_reported(
    gpu: ar.Backend, capfd: Any, after: str, message: str
) -> None:
    p = gpu.alloc(256)
    try:
        with pytest.raises(DriverError, match="LAUNCH_FAILED"):
            _run(gpu, REGS + BULK + after + "\n    ret;", [p], [np.zeros(4, np.uint32)])
    finally:
        gpu.free(p)
    err = capfd.readouterr().err
    assert message in err, err
    if "destination" in message:
        assert "the destination of the cp.async.bulk of ptx line 19" in err


def test_a_phase_that_can_never_complete_is_reported(gpu: ar.Backend, capfd: Any) -> None:
    """Two arrivals expected, one made: the launch fails naming the wait."""
    body = (
        REGS
        + "    mbarrier.init.shared::cta.b64 [%r3], 2;\n"
        + "    mbarrier.arrive.shared::cta.b64 _, [%r3];\n"
        + WAIT.format(n=0, parity=0)
        + "    ret;"
    )
    with pytest.raises(DriverError, match="LAUNCH_FAILED"):
        _run(gpu, body, [], [np.zeros(1, np.uint32)], block=1)
    err = capfd.readouterr().err
    assert "ptx line 18: warp 0 waits on an mbarrier phase that can never complete" in err, err
    assert "1 of 2 arrivals pending" in err


# ------------------------------------------------------------------ TMA


def _encode(
    lib: Any,
    dtype: int,
    addr: int,
    dims: list[int],
    strides: list[int],
    box: list[int],
    estr: list[int] | None = None,
    swizzle: int = 0,
    interleave: int = 0,
    fill: int = 0,
) -> tuple[int, bytes]:
    tmap = ffi.new("CUtensorMap *")
    estr = estr or [1] * len(dims)
    rc = lib.cuTensorMapEncodeTiled(
        tmap,
        dtype,
        len(dims),
        ffi.cast("void *", addr),
        ffi.new("uint64_t[]", dims),
        ffi.new("uint64_t[]", strides or [0]),
        ffi.new("uint32_t[]", box),
        ffi.new("uint32_t[]", estr),
        interleave,
        swizzle,
        0,
        fill,
    )
    return rc, bytes(ffi.buffer(tmap))


def _swizzled(raw: np.ndarray[Any, Any], swizzle: int) -> np.ndarray[Any, Any]:
    """The box's bytes as shared memory holds them: 16-byte chunk c of each
    128-byte row r moved to c ^ (r % 2**swizzle) (address bits 4.. ^= 7..)."""
    if not swizzle:
        return raw
    off = np.arange(raw.size)
    dst = off ^ (((off >> 7) & ((1 << swizzle) - 1)) << 4)
    out = np.empty_like(raw)
    out[dst] = raw
    return out


TMA_LOAD = """    ld.param.u64 %rd1, [p0];
    ld.param.u64 %rd3, [p1];
    ld.param.u64 %rd2, [p2];
    ld.global.v4.u32 {%r10, %r11, %r12, %r13}, [%rd3];
    @%p1 mbarrier.init.shared::cta.b64 [%r3], 1;
    @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r3], BYTES;
    @%p1 TENSOR [%r2], [%rd1, {%r10, %r11, %r12}], [%r3];
""".replace(
    "TENSOR", LOAD.replace(".bulk.", ".bulk.tensor.3d.").replace(".global.", ".global.tile.")
)


@pytest.mark.parametrize("swizzle", [0, 1, 2, 3])
@pytest.mark.parametrize("dtype", [F16, F32])
def test_a_tensor_load_follows_the_map(gpu: ar.Backend, lib: Any, swizzle: int, dtype: int) -> None:
    """A 3-D box with its corner outside the tensor on every side that has
    one: zeros there; the inner dimension the swizzle's span wide (16 bytes
    unswizzled), an element stride of 2 in the outermost dimension, the
    global rows padded (strides over the dense size)."""
    np_t = np.float16 if dtype == F16 else np.float32
    es = np.dtype(np_t).itemsize
    inner = (16 << swizzle if swizzle else 16) // es
    dims = [inner + 3, 9, 7]
    row = -(-(dims[0] + 8 * 16 // es) // 16) * 16  # padded: a multiple of 16 bytes
    tensor = RNG.standard_normal((dims[2], dims[1], row)).astype(np_t)
    box, estr, corner = [inner, 8, 4], [1, 1, 2], [-2, 3, -1]
    g = gpu.alloc(tensor.nbytes)
    mp = gpu.alloc(128)
    try:
        gpu.copy_h2d(tensor, g)
        strides = [tensor.strides[1], tensor.strides[0]]
        rc, raw = _encode(lib, dtype, int(g), dims, strides, box, estr, swizzle)
        assert rc == 0
        gpu.copy_h2d(np.frombuffer(raw, np.uint8), mp)
        n = [box[0], box[1], -(-box[2] // estr[2])]
        nbytes = n[0] * n[1] * n[2] * es
        body = (
            REGS
            + TMA_LOAD.replace("BYTES", str(nbytes))
            + WAIT.format(n=0, parity=0)
            + f"""    @%p1 cp.async.bulk.global.shared::cta.bulk_group [%rd2], [%r2], {nbytes};
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group 0;
    ret;"""
        )
        coords = np.array([*corner, 0], np.int32)
        cbuf = gpu.alloc(16)
        try:
            gpu.copy_h2d(coords, cbuf)
            (out,) = _run(gpu, body, [mp, cbuf], [np.zeros(nbytes, np.uint8)])
        finally:
            gpu.free(cbuf)
    finally:
        gpu.free(g)
        gpu.free(mp)
    want = np.zeros((n[2], n[1], n[0]), np_t)
    for j2 in range(n[2]):
        for j1 in range(n[1]):
            for j0 in range(n[0]):
                c = (corner[0] + j0, corner[1] + j1, corner[2] + 2 * j2)
                if all(0 <= c[i] < dims[i] for i in range(3)):
                    want[j2, j1, j0] = tensor[c[2], c[1], c[0]]
    assert (out == _swizzled(want.view(np.uint8).ravel(), swizzle)).all()


@pytest.mark.parametrize("swizzle", [0, 3])
def test_a_tensor_store_writes_only_inside(gpu: ar.Backend, lib: Any, swizzle: int) -> None:
    """A 2-D f32 box stored at a corner hanging off the tensor: the elements
    inside land (read from their swizzled shared addresses), the rest are
    dropped, and the tensor's other elements keep their bytes."""
    inner = 32 if swizzle else 4
    dims, box, corner = [inner + 6, 10], [inner, 8], [inner // 2 + 6, 5]
    tensor = np.full((dims[1], dims[0] + 6), -1.0, np.float32)  # rows: 16-byte multiples
    vals = RNG.standard_normal((box[1], box[0])).astype(np.float32)
    src = _swizzled(vals.view(np.uint8).ravel(), swizzle)
    g, s, mp = gpu.alloc(tensor.nbytes), gpu.alloc(src.nbytes), gpu.alloc(128)
    try:
        gpu.copy_h2d(src, s)
        gpu.copy_h2d(tensor, g)
        rc, raw = _encode(lib, F32, int(g), dims, [tensor.strides[0]], box, swizzle=swizzle)
        assert rc == 0
        gpu.copy_h2d(np.frombuffer(raw, np.uint8), mp)
        body = (
            REGS
            + f"""    ld.param.u64 %rd1, [p0];
    ld.param.u64 %rd2, [p1];
    @%p1 mbarrier.init.shared::cta.b64 [%r3], 1;
    @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r3], {src.nbytes};
    @%p1 {LOAD} [%r2], [%rd1], {src.nbytes}, [%r3];
"""
            + WAIT.format(n=0, parity=0)
            + f"""    mov.u32 %r10, {corner[0]};
    mov.u32 %r11, {corner[1]};
    @%p1 cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd2, {{%r10, %r11}}], [%r2];
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group.read 0;
    cp.async.bulk.wait_group 0;
    ret;"""
        )
        _run(gpu, body, [s, mp], [])
        out = gpu.copy_d2h(g, np.empty_like(tensor))
    finally:
        for p in (g, s, mp):
            gpu.free(p)
    want = tensor.copy()
    rows = slice(corner[1], min(corner[1] + box[1], dims[1]))
    cols = slice(corner[0], min(corner[0] + box[0], dims[0]))
    want[rows, cols] = vals[: rows.stop - rows.start, : cols.stop - cols.start]
    assert (out == want).all()


def test_a_bulk_store_source_written_before_its_read_is_reported(
    gpu: ar.Backend, capfd: Any
) -> None:
    body = (
        REGS
        + """    ld.param.u64 %rd2, [p0];
    st.shared.u32 [%r2], %r1;
    fence.proxy.async.shared::cta;
    cp.async.bulk.global.shared::cta.bulk_group [%rd2], [%r2], 16;
    cp.async.bulk.commit_group;
    st.shared.u32 [%r2+4], %r1;
    ret;"""
    )
    with pytest.raises(DriverError, match="LAUNCH_FAILED"):
        _run(gpu, body, [], [np.zeros(4, np.uint32)], block=1)
    err = capfd.readouterr().err
    assert "the source of the cp.async.bulk of ptx line 18, before a " in err, err


def test_a_bulk_store_of_generic_writes_needs_the_proxy_fence(gpu: ar.Backend, capfd: Any) -> None:
    body = (
        REGS
        + """    ld.param.u64 %rd2, [p0];
    st.shared.u32 [%r2], %r1;
    cp.async.bulk.global.shared::cta.bulk_group [%rd2], [%r2], 16;
    ret;"""
    )
    with pytest.raises(DriverError, match="LAUNCH_FAILED"):
        _run(gpu, body, [], [np.zeros(4, np.uint32)], block=1)
    assert "with no fence.proxy.async after the write" in capfd.readouterr().err


@pytest.mark.parametrize(
    ("kwargs", "rc"),
    [
        ({}, 0),
        ({"strides": [24]}, CUDA_ERROR_INVALID_VALUE),  # not a multiple of 16
        ({"box": [8, 300]}, CUDA_ERROR_INVALID_VALUE),  # over 256
        ({"box": [4, 8]}, CUDA_ERROR_INVALID_VALUE),  # 8 bytes: not a multiple of 16
        ({"swizzle": 1, "box": [32, 8]}, CUDA_ERROR_INVALID_VALUE),  # 64 bytes over a 32B span
        ({"estr": [1, 9]}, CUDA_ERROR_INVALID_VALUE),
        ({"addr": 8}, CUDA_ERROR_INVALID_VALUE),  # not 16-byte aligned
        ({"interleave": 1}, CUDA_ERROR_NOT_SUPPORTED),
        ({"swizzle": 4}, CUDA_ERROR_NOT_SUPPORTED),  # 128B_ATOM_32B: not modelled
        ({"swizzle": 7}, CUDA_ERROR_INVALID_VALUE),
    ],
)
def test_encode_tiled_checks_the_driver_rules(lib: Any, kwargs: dict[str, Any], rc: int) -> None:
    args: dict[str, Any] = {"addr": 1 << 20, "strides": [256], "box": [8, 8]}
    args.update(kwargs)
    got, raw = _encode(
        lib, F16, args["addr"], [64, 64], args["strides"], args["box"],
        args.get("estr"), args.get("swizzle", 0), args.get("interleave", 0),
    )  # fmt: skip
    assert got == rc
    if rc == 0:  # the fields, where sim_tensormap.h puts them
        words = np.frombuffer(raw, np.uint64)
        assert words[0] == 1 << 20 and words[1] == 64 and words[6] == 256


# ------------------------------------------------------------------ warp helpers


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_stmatrix_writes_ldmatrix_fragments(gpu: ar.Backend, num: int, trans: bool) -> None:
    """Lane l holds row l/4, columns 2(l%4) and +1 of each 8x8 b16 matrix;
    stmatrix writes row r of matrix k where lane 8k + r points (.trans: the
    transpose), and ldmatrix with the same shape reads the fragments back."""
    regs = ", ".join(f"%r{10 + k}" for k in range(num))
    vec = f"{{{regs}}}"
    shape = f"m8n8.x{num}{'.trans' if trans else ''}.shared.b16"
    fill = "".join(f"    add.u32 %r{10 + k}, %r8, {k * 64 * 0x10001};\n" for k in range(num))
    back = "".join(
        f"    st.global.u32 [%rd3+{4 * k}], %r{20 + k};\n" for k in range(num)
    )  # fmt: skip
    body = (
        REGS
        + f"""    ld.param.u64 %rd1, [p0];
    ld.param.u64 %rd2, [p1];
    shr.u32 %r4, %r1, 2;
    and.b32 %r5, %r1, 3;
    mad.lo.u32 %r6, %r4, 8, %r5;
    add.u32 %r6, %r6, %r5;
    add.u32 %r7, %r6, 1;
    shl.b32 %r7, %r7, 16;
    or.b32 %r8, %r6, %r7;
{fill}    and.b32 %r9, %r1, {8 * num - 1};
    mad.lo.u32 %r9, %r9, 16, %r2;
    stmatrix.sync.aligned.{shape} [%r9], {vec};
    ldmatrix.sync.aligned.{shape} {{{", ".join(f"%r{20 + k}" for k in range(num))}}}, [%r9];
    mul.wide.u32 %rd3, %r1, {4 * num};
    add.s64 %rd3, %rd2, %rd3;
{back}    setp.lt.u32 %p3, %r1, {8 * num};
    @!%p3 bra DONE;
    mul.wide.u32 %rd4, %r1, 16;
    add.s64 %rd4, %rd1, %rd4;
    ld.shared.v4.u32 {{%r24, %r25, %r26, %r27}}, [%r9];
    st.global.v4.u32 [%rd4], {{%r24, %r25, %r26, %r27}};
DONE:
    ret;"""
    )
    mats, frags = _run(
        gpu, body, [], [np.zeros((num, 8, 8), np.uint16), np.zeros((32, num), np.uint32)]
    )
    k, r, c = np.indices((num, 8, 8))
    want = k * 64 + (c * 8 + r if trans else r * 8 + c)
    assert (mats == want).all()
    lanes = np.arange(32)[:, None]
    base = (lanes >> 2) * 8 + 2 * (lanes & 3) + np.arange(num)[None, :] * 64
    assert (frags == base | (base + 1) << 16).all()


def test_elect_sync_picks_one_leader_per_warp(gpu: ar.Backend) -> None:
    """Every lane of each warp runs elect.sync with a full mask: lane 0 is
    the leader; lanes 5.. of a warp with mask 0xffffffe0: lane 5."""
    body = (
        REGS
        + """    ld.param.u64 %rd2, [p0];
    and.b32 %r4, %r1, 31;
    elect.sync %r5|%p2, -1;
    selp.u32 %r6, 1, 0, %p2;
    mov.u32 %r7, 99;
    mov.u32 %r8, 0;
    setp.ge.u32 %p3, %r4, 5;
    @!%p3 bra SKIP;
    elect.sync %r7|%p4, 0xffffffe0;
    selp.u32 %r8, 1, 0, %p4;
SKIP:
    mul.wide.u32 %rd3, %r1, 16;
    add.s64 %rd3, %rd2, %rd3;
    st.global.v4.u32 [%rd3], {%r5, %r6, %r7, %r8};
    setmaxnreg.dec.sync.aligned.u32 40;
    setmaxnreg.inc.sync.aligned.u32 232;
    ret;"""
    )
    (out,) = _run(gpu, body, [], [np.zeros((64, 4), np.uint32)], block=64)
    lane = np.arange(64) % 32
    assert (out[:, 0] == 0).all() and (out[:, 1] == (lane == 0)).all()
    assert (out[:, 2] == np.where(lane >= 5, 5, 99)).all()
    assert (out[:, 3] == (lane == 5)).all()


@pytest.mark.parametrize("count", ["16", "241", "264", "%r1"])
def test_setmaxnreg_needs_a_valid_count(gpu: ar.Backend, count: str) -> None:
    ptx = (
        f"{HEAD}.visible .entry k()\n{{\n.reg .b32 %r<2>;\n"
        f"setmaxnreg.inc.sync.aligned.u32 {count};\nret;\n}}\n"
    )
    with pytest.raises(DriverError, match="CUDA_ERROR_INVALID_PTX") as info:
        gpu.load_module(f"maxnreg-{count}", ptx)
    assert "ptx line 7:" in str(info.value)


@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5])
def test_a_tensor_load_of_every_rank(gpu: ar.Backend, lib: Any, rank: int) -> None:
    """Tile mode from 1-D to 5-D: an f32 box with corners outside the tensor."""
    dims = [11, 5, 4, 3, 2][:rank]
    box, corner = [8, 4, 2, 2, 2][:rank], [-2, 2, 1, -1, 1][:rank]
    tensor = RNG.standard_normal(dims[::-1]).astype(np.float32)
    strides = list(tensor.strides[::-1][1:])
    if rank > 1:  # rows padded to 16 bytes: a copy with room
        tensor = np.pad(tensor, [(0, 0)] * (rank - 1) + [(0, 1)])
        strides = list(tensor.strides[::-1][1:])
    g, mp, cb = gpu.alloc(tensor.nbytes), gpu.alloc(128), gpu.alloc(32)
    nbytes = int(np.prod(box)) * 4
    coords = ", ".join(f"%r{10 + i}" for i in range(rank))
    copy = LOAD.replace(".bulk.", f".bulk.tensor.{rank}d.")
    body = (
        REGS
        + f"""    ld.param.u64 %rd1, [p0];
    ld.param.u64 %rd3, [p1];
    ld.param.u64 %rd2, [p2];
    ld.global.v4.u32 {{%r10, %r11, %r12, %r13}}, [%rd3];
    ld.global.u32 %r14, [%rd3+16];
    @%p1 mbarrier.init.shared::cta.b64 [%r3], 1;
    @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r3], {nbytes};
    @%p1 {copy} [%r2], [%rd1, {{{coords}}}], [%r3];
"""
        + WAIT.format(n=0, parity=0)
        + f"""    @%p1 cp.async.bulk.global.shared::cta.bulk_group [%rd2], [%r2], {nbytes};
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group 0;
    ret;"""
    )
    try:
        gpu.copy_h2d(tensor, g)
        gpu.copy_h2d(np.array([*corner, *[0] * (8 - rank)], np.int32), cb)
        rc, raw = _encode(lib, F32, int(g), dims, strides, box)
        assert rc == 0
        gpu.copy_h2d(np.frombuffer(raw, np.uint8), mp)
        (out,) = _run(gpu, body, [mp, cb], [np.zeros(nbytes // 4, np.float32)])
    finally:
        for p in (g, mp, cb):
            gpu.free(p)
    want = np.zeros(box[::-1], np.float32)
    for j in np.ndindex(*box[::-1]):
        c = [corner[i] + j[rank - 1 - i] for i in range(rank)]
        if all(0 <= c[i] < dims[i] for i in range(rank)):
            want[j] = tensor[tuple(c[::-1])]
    assert (out.reshape(box[::-1]) == want).all()


def test_a_bulk_store_lands_at_its_wait(gpu: ar.Backend) -> None:
    """Before wait_group the destination holds its old bytes (read here:
    deterministic, never the new ones by luck); after wait_group.read the
    source may be rewritten, and wait_group writes what was read."""
    body = (
        REGS
        + """    ld.param.u64 %rd2, [p0];
    ld.param.u64 %rd3, [p1];
    mov.u32 %r4, 77;
    st.shared.v4.u32 [%r2], {%r4, %r4, %r4, %r4};
    fence.proxy.async.shared::cta;
    cp.async.bulk.global.shared::cta.bulk_group [%rd2], [%r2], 16;
    cp.async.bulk.commit_group;
    ld.global.u32 %r5, [%rd2];
    cp.async.bulk.wait_group.read 0;
    mov.u32 %r6, 5;
    st.shared.u32 [%r2], %r6;
    ld.global.u32 %r7, [%rd2];
    cp.async.bulk.wait_group 0;
    ld.global.u32 %r8, [%rd2];
    st.global.v4.u32 [%rd3], {%r5, %r7, %r8, %r8};
    ret;"""
    )
    dst, seen = _run(gpu, body, [], [np.full(4, 9, np.uint32), np.zeros(4, np.uint32)], block=1)
    assert dst.tolist() == [77] * 4
    assert seen.tolist() == [9, 9, 77, 77]

"""The Triton part of the differential PTX corpus: Triton's tutorial kernels
(tests/ffi/ptx/triton, made by generate.py there with the pinned Triton)
run on cuda-sim through aruntime, each against a numpy reference, as Triton
wrote them for sm_80 and sm_90 (issue 30).

Triton's inline asm writes forms nvcc does not: a one-element brace around
a scalar (``@%p1 ld.global.b32 { %r1 }, [ %rd1 + 0 ];``), spaces inside
address brackets, ``mov.u32 %r1, 0x0;`` defaults before a predicated load.

Pipelined loops (``num_stages`` >= 2) load through ``cp.async``; cuda-sim
performs each copy at the wait that completes it and fails a launch that
touches a pending destination, so a wrong wait cannot pass these tests.
On sm_90 Triton's matmuls and attention use wgmma behind
fence.proxy.async; a missing fence fails the launch.  The tensor-descriptor
matmul uses TMA (tensor maps built on the device, cp.async.bulk.tensor,
mbarrier): a tile lands only at a wait on its mbarrier's phase, so a missing
or wrong wait fails the launch, as does a phase that can never complete.
Forms cuda-sim does not model (im2col) are refused at load, naming the line.

fp8 (sm_90 only: fp8 tensor cores need sm_89 on): the tutorial's matmul on
e4m3/e5m2 inputs runs on wgmma k32 (4 and 8 warps) or, with 2 warps, on
mma.sync after cvt.rn.f16x2.e4m3x2; numpy decodes the codes from its own
tables and sums as each tensor-core instruction does.  The fp8 conversions
are checked on every code and every tie, and the fp8 forms cuda-sim does
not run are refused by name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aruntime as ar
from aruntime import DriverError

CORPUS = Path(__file__).resolve().parent / "ptx" / "triton"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())
ARCHS = ("sm80", "sm90")
RNG = np.random.default_rng(30)


@pytest.fixture(scope="module")
def gpu() -> Iterator[ar.Backend]:
    with ar.open_backend("cuda-sim") as backend:
        yield backend


class Run:
    """One corpus kernel's launch: device copies in, results out."""

    def __init__(self, gpu: ar.Backend, name: str) -> None:
        self.gpu = gpu
        self.name = name
        self.meta = MANIFEST[name]
        assert self.meta["profile_scratch_size"] == 0, name
        self.held: list[tuple[ar.DevicePtr, np.ndarray[Any, Any]]] = []

    def array(self, host: np.ndarray[Any, Any]) -> ar.DevicePtr:
        host = np.ascontiguousarray(host)
        ptr = self.gpu.alloc(max(host.nbytes, 1))
        self.gpu.copy_h2d(host, ptr)
        self.held.append((ptr, host))
        return ptr

    def __call__(self, grid: int | tuple[int, int], args: list[Any]) -> list[np.ndarray[Any, Any]]:
        """Launch on ``grid`` blocks; every array argument's contents after it."""
        module = f"triton-{self.name}"  # loaded once per backend; a test may run a kernel again
        if not self.gpu.has_module(module):
            self.gpu.load_module(module, (CORPUS / f"{self.name}.ptx").read_text())
        kernel = self.gpu.kernel(module, self.meta["entry"])
        # Triton's global scratch (device-side tensor maps: global_scratch_size
        # bytes per program) and profile scratch (none)
        programs = int(np.prod(grid))
        need = self.meta["global_scratch_size"] * programs
        scratch_ptr = self.gpu.alloc(need) if need else None
        scratch = [np.uint64(int(scratch_ptr) if scratch_ptr else 0), np.uint64(0)]
        try:
            block = 32 * self.meta["num_warps"]
            done = self.gpu.launch(
                kernel, grid, block, [*args, *scratch], shared_mem=self.meta["shared"]
            )
            done.wait()
            return [self.gpu.copy_d2h(p, np.empty_like(h)) for p, h in self.held]
        finally:
            for p, _ in self.held:
                self.gpu.free(p)
            if scratch_ptr is not None:
                self.gpu.free(scratch_ptr)


@pytest.mark.parametrize("arch", ARCHS)
def test_vector_add(gpu: ar.Backend, arch: str) -> None:
    n = 5000  # not a multiple of the block: the mask's tail
    x = RNG.random(n, dtype=np.float32)
    y = RNG.random(n, dtype=np.float32)
    run = Run(gpu, f"vector_add.{arch}")
    args = [run.array(x), run.array(y), run.array(np.zeros(n, np.float32)), np.int32(n)]
    _, _, out = run(-(-n // 1024), args)
    assert (out == x + y).all()


def _softmax(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    z = x - x.max(axis=1, keepdims=True)
    e = np.exp(z.astype(np.float64))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("kind", ["softmax", "softmax_pipelined"])
def test_fused_softmax(gpu: ar.Backend, arch: str, kind: str) -> None:
    """The tutorial's row loop, unpipelined and with num_stages=2 (cp.async with
    a src-size of 0 for the masked tail, commit_group, wait_group)."""
    rows, cols = 37, 781
    x = RNG.standard_normal((rows, cols)).astype(np.float32) * 4
    run = Run(gpu, f"{kind}.{arch}")
    out = np.zeros_like(x)
    args = [
        run.array(out),
        run.array(x),
        np.int32(cols),
        np.int32(cols),
        np.int32(rows),
        np.int32(cols),
    ]
    # Fewer programs than rows, as the tutorial launches: each loops over rows.
    got, _ = run(8, args)
    np.testing.assert_allclose(got, _softmax(x), rtol=2e-6, atol=1e-9)
    assert np.allclose(got.sum(axis=1), 1, rtol=1e-5)


def _layernorm(
    x: np.ndarray[Any, Any], w: np.ndarray[Any, Any], b: np.ndarray[Any, Any], eps: float
) -> tuple[np.ndarray[Any, Any], ...]:
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1)
    var = ((x64 - mean[:, None]) ** 2).mean(axis=1)
    rstd = 1 / np.sqrt(var + eps)
    y = (x64 - mean[:, None]) * rstd[:, None] * w.astype(np.float64) + b.astype(np.float64)
    return y, mean, rstd


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize(
    ("kind", "dtype", "tol"), [("layernorm", np.float32, 1e-5), ("layernorm_f16", np.float16, 2e-3)]
)
def test_layernorm_forward(gpu: ar.Backend, arch: str, kind: str, dtype: Any, tol: float) -> None:
    rows, n, eps = 13, 1200, 1e-5  # n over the block: every loop runs several times
    x = (RNG.standard_normal((rows, n)) * 3 + 1).astype(dtype)
    w = RNG.standard_normal(n).astype(dtype)
    b = RNG.standard_normal(n).astype(dtype)
    run = Run(gpu, f"{kind}.{arch}")
    ptrs = [run.array(a) for a in (x, np.zeros_like(x), w, b)]
    ptrs += [run.array(np.zeros(rows, np.float32)) for _ in range(2)]
    _, y, _, _, mean, rstd = run(rows, [*ptrs, np.int32(n), np.int32(n), np.float32(eps)])
    want_y, want_mean, want_rstd = _layernorm(x, w, b, eps)
    np.testing.assert_allclose(mean, want_mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd, want_rstd, rtol=1e-5)
    np.testing.assert_allclose(y.astype(np.float64), want_y, rtol=tol, atol=tol)


@pytest.mark.parametrize("arch", ARCHS)
def test_libdevice_asin(gpu: ar.Backend, arch: str) -> None:
    n = 3000
    x = RNG.uniform(-1, 1, n).astype(np.float32)
    x[:4] = [-1, 1, 0, -0.0]
    run = Run(gpu, f"asin.{arch}")
    _, y = run(-(-n // 1024), [run.array(x), run.array(np.zeros(n, np.float32)), np.int32(n)])
    np.testing.assert_allclose(y, np.arcsin(x.astype(np.float64)), rtol=4e-7, atol=1e-7)
    assert np.signbit(y[3])


INLINE_ASM = """.version 8.8
.target sm_80
.address_size 64
.visible .entry forms(.param .u64 src, .param .u64 dst, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [dst];
    ld.param.u32 %r3, [n];
    mov.u32 %r2, %tid.x;
    setp.lt.u32 %p1, %r2, %r3;
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd1, %rd1, %rd3;
    add.s64 %rd2, %rd2, %rd3;
    // begin inline asm
    mov.u32 %r1, 0x0;
    @%p1 ld.global.b32 { %r1 }, [ %rd1 + 0 ];
    // end inline asm
    // begin inline asm
    @!%p1 mov.u32 %r1, { -7 };
    // end inline asm
    // begin inline asm
    st.global.b32 [ %rd2 + 0 ], { %r1 };
    // end inline asm
    ret;
}
"""


def test_the_inline_asm_forms(gpu: ar.Backend) -> None:
    """A one-element brace is its scalar; a lane whose load is predicated off keeps
    the ``0x0`` default (here overwritten by a braced immediate)."""
    module = gpu.load_module("forms", INLINE_ASM)
    src = gpu.alloc(4 * 32)
    dst = gpu.alloc(4 * 32)
    try:
        x = np.arange(100, 132, dtype=np.int32)
        gpu.copy_h2d(x, src)
        gpu.launch(gpu.kernel(module, "forms"), 1, 32, [src, dst, np.uint32(20)]).wait()
        got = gpu.copy_d2h(dst, np.empty(32, np.int32))
    finally:
        gpu.free(src)
        gpu.free(dst)
    assert (got == np.where(np.arange(32) < 20, x, -7)).all()


@pytest.mark.parametrize("operand", ["{ %r1, %r2 }", "{ }"])
def test_a_brace_of_other_than_one_element_is_no_scalar(gpu: ar.Backend, operand: str) -> None:
    bad = INLINE_ASM.replace("ld.global.b32 { %r1 }", f"ld.global.b32 {operand}")
    line = bad.splitlines().index(f"    @%p1 ld.global.b32 {operand}, [ %rd1 + 0 ];") + 1
    with pytest.raises(DriverError, match=f"ptx line {line}: destination is a vector of"):
        gpu.load_module(f"bad-{len(operand)}", bad)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("shape", [(100, 72, 80), (64, 64, 32), (130, 20, 200)])
def test_fp16_matmul(gpu: ar.Backend, arch: str, shape: tuple[int, int, int]) -> None:
    """tl.dot on sm_80: ldmatrix (.x4, .x4.trans) and mma m16n8k16 f16 -> f32; on
    sm_90: fence.proxy.async and wgmma.mma_async m64n64k16 on descriptors.

    The sim sums each mma's products in double and rounds to f32 once; numpy
    does the same per 16-wide slice of K, so the fp16 results agree exactly."""
    m, n, k = shape
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    run = Run(gpu, f"matmul_f16.{arch}")
    strides = (k, 1, n, 1, n, 1)
    args = [run.array(a), run.array(b), run.array(np.zeros((m, n), np.float16))]
    _, _, got = run(-(-m // 64) * -(-n // 64), [*args, *map(np.int32, (m, n, k, *strides))])
    acc = np.zeros((m, n), np.float32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    for k0 in range(0, k, 16):  # one mma per 16 of K, each rounded to f32 (the tail is 0)
        acc = (acc + a64[:, k0 : k0 + 16] @ b64[k0 : k0 + 16]).astype(np.float32)
    assert (got == acc.astype(np.float16)).all()


def _mma_reference(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """fp16 a @ b as mma m16n8k16 computes it: each 16 of K summed exactly, the
    f32 accumulator rounded once per mma (a K tail is zeros)."""
    m, k = a.shape
    acc = np.zeros((m, b.shape[1]), np.float32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    for k0 in range(0, k, 16):
        acc = (acc + a64[:, k0 : k0 + 16] @ b64[k0 : k0 + 16]).astype(np.float32)
    return acc.astype(np.float16)


#: The tutorial's matmul as its autotuner compiles it (generate.py: _tuned_matmul).
PIPELINED = (
    "matmul_f16_128x256x64_s3_w8",  # 96 KiB (sm_80) or 144 KiB (sm_90): the opt-in
    "matmul_f16_128x128x32_s3_w8",
    "matmul_f16_64x128x32_s4_w4",
    "matmul_f16_64x32x32_s5_w2",
)


def _tuned_matmul(gpu: ar.Backend, name: str, a: Any, b: Any) -> np.ndarray[Any, Any]:
    (m, k), n = a.shape, b.shape[1]
    run = Run(gpu, name)
    bm, bn = (int(v) for v in name.split("_")[2].split("x")[:2])
    args = [run.array(a), run.array(b), run.array(np.zeros((m, n), np.float16))]
    ints = map(np.int32, (m, n, k, k, n, n))  # M, N, K and the strides that are not 1
    return run(-(-m // bm) * -(-n // bn), [*args, *ints])[2]


@pytest.mark.parametrize(
    "name", [*(f"{p}.sm80" for p in PIPELINED), f"{PIPELINED[0]}.sm90", f"{PIPELINED[3]}.sm90"]
)
@pytest.mark.parametrize("shape", [(256, 256, 256), (96, 80, 112), (32, 48, 16)])
def test_pipelined_fp16_matmul(gpu: ar.Backend, name: str, shape: tuple[int, int, int]) -> None:
    """num_stages 3 to 5: cp.async.cg of 16 bytes into a ring of shared buffers,
    a wait_group that leaves the later stages in flight, then ldmatrix and mma;
    on sm_90 fence.proxy.async and wgmma (m64n128k16, descriptors with 64- and
    128-byte swizzles), except for 2 warps, below a warpgroup, where Triton
    keeps mma.sync.  Sizes are multiples of 16, as the divisibility the
    kernel was compiled for promises; some are no multiple of the tiles
    (masked edges) or shorter than the pipeline."""
    m, n, k = shape
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    assert (_tuned_matmul(gpu, name, a, b) == _mma_reference(a, b)).all()


def test_a_pipeline_waiting_too_little_is_reported(gpu: ar.Backend, capfd: Any) -> None:
    """The same PTX with every wait_group raised by one: the first ldmatrix then
    reads a buffer whose cp.async no wait has completed."""
    name = "matmul_f16_64x128x32_s4_w4.sm80"
    ptx = (CORPUS / f"{name}.ptx").read_text()
    late, count = re.subn(
        r"cp\.async\.wait_group \t(\d+);",
        lambda w: f"cp.async.wait_group \t{int(w[1]) + 1};",
        ptx,
    )
    assert count >= 2
    module = "triton-late-wait"
    gpu.load_module(module, late)
    meta = MANIFEST[name]
    z = np.zeros((64, 64), np.float16)
    ptrs = [gpu.alloc(z.nbytes) for _ in range(3)]
    try:
        ints = [np.int32(64)] * 6
        launch = gpu.launch(
            gpu.kernel(module, meta["entry"]),
            1,
            32 * meta["num_warps"],
            [*ptrs, *ints, np.uint64(0), np.uint64(0)],
            shared_mem=meta["shared"],
        )
        with pytest.raises(DriverError, match="LAUNCH_FAILED"):
            launch.wait()
    finally:
        for p in ptrs:
            gpu.free(p)
    err = capfd.readouterr().err
    assert re.search(
        r"ptx line \d+: ldmatrix reads shared memory at offset \d+, the "
        r"destination of the cp.async of ptx line \d+",
        err,
    ), err


@pytest.mark.parametrize("arch", ARCHS)
def test_tensor_descriptor_matmul(gpu: ar.Backend, arch: str) -> None:
    """tl.make_tensor_descriptor: on sm_80 a cp.async pipeline; on sm_90 TMA:
    the kernel builds its tensor maps in shared memory (tensormap.replace),
    copies them to its global scratch (tensormap.cp_fenceproxy), loads tiles
    with cp.async.bulk.tensor under mbarrier expect_tx / try_wait.parity
    (64- and 128-byte swizzles), multiplies with wgmma and stores C through
    stmatrix and a bulk tensor store.  M, N, K not multiples of the boxes:
    the edge tiles read zeros and store only what lies inside."""
    m, n, k = (128, 192, 96) if arch == "sm80" else (112, 176, 80)
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    run = Run(gpu, f"matmul_tma.{arch}")
    args = [run.array(a), run.array(b), run.array(np.zeros((m, n), np.float16))]
    got = run((-(-m // 64), -(-n // 64)), [*args, *map(np.int32, (m, n, k))])[2]
    assert (got == _mma_reference(a, b)).all()


@pytest.mark.parametrize("arch", ARCHS)
def test_fused_attention_forward(gpu: ar.Backend, arch: str) -> None:
    """Online softmax over K/V blocks: two tl.dot per block (sm_80: mma after
    ldmatrix; sm_90: wgmma with A from shared memory for Q K^T and from
    registers for P V), exp2 and row reductions.  P is rounded to fp16 before
    P V and ex2.approx is within 2 ulp, so the check is to a tolerance."""
    heads, n_ctx, d = 2, 192, 64
    q, k, v = (RNG.standard_normal((heads, n_ctx, d)).astype(np.float16) for _ in range(3))
    scale = 1 / np.sqrt(d)
    run = Run(gpu, f"attention_fwd.{arch}")
    out = np.zeros_like(q)
    args = [run.array(x) for x in (q, k, v, out)] + [np.float32(scale), np.int32(n_ctx)]
    got = run((n_ctx // 64, heads), args)[3]
    s64 = q.astype(np.float64) @ k.astype(np.float64).transpose(0, 2, 1) * scale
    p = np.exp(s64 - s64.max(axis=2, keepdims=True))
    want = (p / p.sum(axis=2, keepdims=True)) @ v.astype(np.float64)
    np.testing.assert_allclose(got.astype(np.float64), want, atol=1e-3, rtol=2e-3)


def test_a_hopper_matmul_without_its_proxy_fence_is_reported(gpu: ar.Backend, capfd: Any) -> None:
    """Triton's sm_90 PTX with fence.proxy.async taken out: the wgmma would read
    shared memory cp.async wrote through the generic proxy."""
    name = "matmul_f16_64x128x32_s4_w4.sm90"
    ptx = (CORPUS / f"{name}.ptx").read_text()
    assert ptx.count("\tfence.proxy.async.shared::cta;") == 1
    module = "triton-no-proxy-fence"
    gpu.load_module(module, ptx.replace("\tfence.proxy.async.shared::cta;", "\t// gone"))
    meta = MANIFEST[name]
    z = np.zeros((64, 128), np.float16)
    ptrs = [gpu.alloc(z.nbytes) for _ in range(3)]
    try:
        ints = [np.int32(v) for v in (64, 128, 64, 64, 128, 128)]
        launch = gpu.launch(
            gpu.kernel(module, meta["entry"]),
            1,
            32 * meta["num_warps"],
            [*ptrs, *ints, np.uint64(0), np.uint64(0)],
            shared_mem=meta["shared"],
        )
        with pytest.raises(DriverError, match="LAUNCH_FAILED"):
            launch.wait()
    finally:
        for p in ptrs:
            gpu.free(p)
    err = capfd.readouterr().err
    assert "wgmma.mma_async reads shared memory at offset" in err, err
    assert "with no fence.proxy.async after the write" in err


def _tma_launch(gpu: ar.Backend, module: str, ptx: str) -> None:
    """matmul_tma.sm90, edited, on 64x64x64 zeros: its launch must fail."""
    gpu.load_module(module, ptx)
    meta = MANIFEST["matmul_tma.sm90"]
    z = np.zeros((64, 64), np.float16)
    ptrs = [gpu.alloc(z.nbytes) for _ in range(3)]
    scratch = gpu.alloc(meta["global_scratch_size"])
    try:
        for p in ptrs:
            gpu.copy_h2d(z, p)
        launch = gpu.launch(
            gpu.kernel(module, meta["entry"]),
            1,
            32 * meta["num_warps"],
            [*ptrs, *[np.int32(64)] * 3, np.uint64(int(scratch)), np.uint64(0)],
            shared_mem=meta["shared"],
        )
        with pytest.raises(DriverError, match="LAUNCH_FAILED"):
            launch.wait()
    finally:
        for p in [*ptrs, scratch]:
            gpu.free(p)


TMA_WAIT = "mbarrier.try_wait.parity.shared::cta.b64 complete, [%r39], %r105;"


def test_a_tma_matmul_without_its_mbarrier_wait_is_reported(gpu: ar.Backend, capfd: Any) -> None:
    """The try_wait loop made to pass at once: wgmma would read tiles TMA has
    not landed, which cuda-sim keeps pending until a wait on their phase."""
    ptx = (CORPUS / "matmul_tma.sm90.ptx").read_text()
    assert ptx.count(TMA_WAIT) == 1
    _tma_launch(gpu, "triton-tma-no-wait", ptx.replace(TMA_WAIT, "mov.pred complete, 1;"))
    err = capfd.readouterr().err
    assert re.search(
        r"ptx line \d+: wgmma.mma_async reads shared memory at offset \d+, the destination "
        r"of the cp.async.bulk of ptx line \d+, before a wait on its mbarrier's phase",
        err,
    ), err


def test_a_tma_matmul_waiting_on_the_wrong_parity_is_reported(gpu: ar.Backend, capfd: Any) -> None:
    """Parity flipped: the wait names the phase before, complete at once, and
    the tiles of the phase under way are still pending."""
    ptx = (CORPUS / "matmul_tma.sm90.ptx").read_text()
    flipped = "xor.b32 %flip, %r105, 1;\n" + TMA_WAIT.replace("%r105;", "%flip;")
    ptx = ptx.replace(TMA_WAIT, flipped).replace(
        ".reg .pred complete;", ".reg .pred complete;\n.reg .b32 %flip;"
    )
    _tma_launch(gpu, "triton-tma-parity", ptx)
    err = capfd.readouterr().err
    assert "wgmma.mma_async reads shared memory at offset" in err, err
    assert "the destination of the cp.async.bulk of ptx line" in err


def test_a_tma_matmul_that_expects_too_many_bytes_deadlocks_reported(
    gpu: ar.Backend, capfd: Any
) -> None:
    """expect_tx of 8193 bytes for 8192: the phase never completes; the
    launch fails naming the wait rather than hanging."""
    ptx = (CORPUS / "matmul_tma.sm90.ptx").read_text()
    expect = "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r24], 8192;"
    assert expect in ptx
    _tma_launch(gpu, "triton-tma-expect", ptx.replace(expect, expect.replace("8192", "8208")))
    err = capfd.readouterr().err
    assert re.search(r"ptx line \d+: warp \d+ waits on an mbarrier phase that can never", err), err
    assert "tx-count 16" in err


def test_a_tma_form_cuda_sim_does_not_model_is_refused_by_name(gpu: ar.Backend) -> None:
    """im2col tensor copies are not modelled: refused at load, naming the line."""
    ptx = (CORPUS / "matmul_tma.sm90.ptx").read_text()
    tile = "cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes"
    im2col = tile.replace(".2d.", ".2d.im2col.")
    ptx = ptx.replace(tile, im2col)
    line = next(i for i, t in enumerate(ptx.splitlines(), 1) if im2col in t)
    with pytest.raises(DriverError, match="CUDA_ERROR_INVALID_PTX") as info:
        gpu.load_module("triton-tma-im2col", ptx)
    assert f"ptx line {line}: unsupported instruction '{im2col}'" in str(info.value)


def test_the_corpus_is_what_the_pinned_triton_wrote() -> None:
    assert MANIFEST["triton"] == "3.9.0"
    files = {p.stem for p in CORPUS.glob("*.ptx")}
    assert files == set(MANIFEST) - {"triton"}
    for stem in files:
        head = (CORPUS / f"{stem}.ptx").read_text()
        assert "Generated by LLVM NVPTX Back-End" in head
        assert (".target sm_80" if stem.endswith("sm80") else ".target sm_90a") in head


# ------------------------------------------------------------------ fp8 (sm_90)


def _fp8_table(kind: str) -> np.ndarray[Any, Any]:
    """The value of each of the 256 codes of e4m3 (bias 7, no infinities,
    S.1111.111 NaN) or e5m2 (bias 15, IEEE-like), as float64."""
    code = np.arange(256)
    mb, bias = (3, 7) if kind == "e4m3" else (2, 15)
    e, m = (code & 0x7F) >> mb, code & ((1 << mb) - 1)
    v = np.where(e == 0, m * 2.0 ** (1 - bias - mb), ((1 << mb) + m) * 2.0 ** (e - bias - mb))
    if kind == "e4m3":
        v[(code & 0x7F) == 0x7F] = np.nan
    else:
        v[e == 31] = np.where(m[e == 31] == 0, np.inf, np.nan)
    return np.where(code & 0x80, -v, v)


E4M3, E5M2 = _fp8_table("e4m3"), _fp8_table("e5m2")


def test_the_fp8_tables() -> None:
    assert E4M3[0x7E] == 448 and E4M3[0x01] == 2.0**-9 and E4M3[0x08] == 2.0**-6
    assert np.isnan(E4M3[0x7F]) and np.isnan(E4M3[0xFF]) and np.isfinite(E4M3[0x78])
    assert E5M2[0x7B] == 57344 and E5M2[0x01] == 2.0**-16 and E5M2[0x04] == 2.0**-14
    assert E5M2[0x7C] == np.inf and E5M2[0xFC] == -np.inf and np.isnan(E5M2[0x7D])
    assert E4M3[0x80] == 0 and np.signbit(E4M3[0x80])


def _fp8_codes(table: np.ndarray[Any, Any], lo: float, hi: float, shape: Any) -> Any:
    """Random codes of finite values with lo <= |v| <= hi, zeros and subnormals
    included where lo allows."""
    a = np.abs(table)
    ok = np.flatnonzero(np.isfinite(table) & (a <= hi) & ((a >= lo) | (a == 0)))
    return RNG.choice(ok, size=shape).astype(np.uint8)


def _fp8_reference(
    a: np.ndarray[Any, Any], bt: np.ndarray[Any, Any], table: np.ndarray[Any, Any], pairs: bool
) -> np.ndarray[Any, Any]:
    """A @ B of fp8 codes (B given transposed) as cuda-sim's tensor cores
    compute it: the products of one instruction summed exactly with the f32
    accumulator and rounded to f32 once, then the fp16 C.  wgmma k32 takes 32
    consecutive K.  With ``pairs`` (2 warps: mma.sync m16n8k16 after
    cvt.rn.f16x2.e4m3x2) Triton splits each 32 of K, as ldmatrix loaded them
    4 bytes a lane, by 16-bit halves: one mma takes the K with k % 4 in
    {0, 1}, the next those in {2, 3}.  The values are chosen so that every
    such sum is exact in float64, whatever order numpy sums in."""
    x, y = table[a], table[bt].T
    acc = np.zeros((x.shape[0], y.shape[1]), np.float32)
    for k0 in range(0, x.shape[1], 32):
        ks = np.arange(k0, min(k0 + 32, x.shape[1]))
        for part in [ks % 4 < 2, ks % 4 >= 2] if pairs else [ks >= 0]:
            acc = (acc + x[:, ks[part]] @ y[ks[part]]).astype(np.float32)
    return acc.astype(np.float16)


#: name -> (values, whether mma.sync takes K in pairs rather than wgmma 32 at once)
FP8_MATMULS = {
    "matmul_fp8e5": ("e5m2", False),
    "matmul_fp8e4_64x128x64_s3_w4": ("e4m3", False),
    "matmul_fp8e5_128x128x64_s3_w8": ("e5m2", False),
    "matmul_fp8e4_64x32x64_s4_w2": ("e4m3", True),
}


@pytest.mark.parametrize("name", FP8_MATMULS)
@pytest.mark.parametrize("shape", [(128, 128, 256), (96, 80, 112), (32, 48, 32)])
def test_fp8_matmul(gpu: ar.Backend, name: str, shape: tuple[int, int, int]) -> None:
    """Triton's tutorial matmul on fp8 inputs for sm_90, B transposed as the
    tutorial passes it: wgmma.mma_async m64nNk32 .e5m2/.e4m3 on descriptors
    (as written, masked; and tuned, behind cp.async pipelines), or with 2 warps
    cvt.rn.f16x2.e4m3x2 and mma.sync m16n8k16.  A takes every finite code up
    to a bound (subnormals, 448 and -0 for e4m3), B small values, so the f32
    accumulator's rounding per instruction matters and must match exactly.
    Some shapes are no multiple of the tiles (masked edges); the tuned
    kernels were compiled for sizes divisible by 16."""
    m, n, k = shape
    kind, pairs = FP8_MATMULS[name]
    table = E4M3 if kind == "e4m3" else E5M2
    top = 448 if kind == "e4m3" else 1024
    a = _fp8_codes(table, 0, top, (m, k))
    a[0, :4] = [0x7E, 0xFE, 0x01, 0x80] if kind == "e4m3" else [0x63, 0xE3, 0x01, 0x80]
    bt = _fp8_codes(table, 2.0**-9, 2.0**-2, (n, k))
    run = Run(gpu, f"{name}.sm90")
    args = [run.array(a), run.array(bt), run.array(np.zeros((m, n), np.float16))]
    if name == "matmul_fp8e5":  # as written: every stride a parameter
        ints = (m, n, k, k, 1, 1, k, n, 1)
        grid = -(-m // 64) * -(-n // 64)
    else:  # tuned: stride_am, stride_bn, stride_cm (the unit ones are constants)
        bm, bn = (int(v) for v in name.split("_")[2].split("x")[:2])
        ints = (m, n, k, k, k, n)
        grid = -(-m // bm) * -(-n // bn)
    got = run(grid, [*args, *map(np.int32, ints)])[2]
    want = _fp8_reference(a, bt, table, pairs)
    assert np.isfinite(want).all() and np.count_nonzero(want) > want.size // 2
    assert (got == want).all()


FP8_CVT = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry conv(.param .u64 src, .param .u64 dst, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b16 %h<3>;
    .reg .b32 %r<8>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<7>;
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [dst];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.u32 %r2, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r2, %r1;
    @%p1 bra DONE;
    mul.wide.u32 %rd3, %r2, 8;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.u32 %r5, [%rd4];
    ld.global.u32 %r6, [%rd4+4];
    mov.b32 %f1, %r5;
    mov.b32 %f2, %r6;
    cvt.u16.u32 %h1, %r5;
    mov.u32 %r7, 0;
    CVT
    mul.wide.u32 %rd5, %r2, 4;
    add.s64 %rd6, %rd2, %rd5;
    st.global.u32 [%rd6], %r7;
DONE:
    ret;
}
"""

#: the cvt under test: from fp8 (%h1: word 0's low 16 bits), to fp8 from two
#: f32 (%f1, %f2: words 0 and 1) or from an f16x2 (%r5: word 0); result in %r7
FP8_FORMS = {
    "f16x2.e4m3x2": "cvt.rn.f16x2.e4m3x2 %r7, %h1;",
    "f16x2.e5m2x2": "cvt.rn.f16x2.e5m2x2 %r7, %h1;",
    "e4m3x2.f32": "cvt.rn.satfinite.e4m3x2.f32 %h2, %f1, %f2; cvt.u32.u16 %r7, %h2;",
    "e5m2x2.f32": "cvt.rn.satfinite.e5m2x2.f32 %h2, %f1, %f2; cvt.u32.u16 %r7, %h2;",
    "e4m3x2.f16x2": "cvt.rn.satfinite.e4m3x2.f16x2 %h2, %r5; cvt.u32.u16 %r7, %h2;",
    "e5m2x2.f16x2": "cvt.rn.satfinite.e5m2x2.f16x2 %h2, %r5; cvt.u32.u16 %r7, %h2;",
}


def _fp8_cvt(gpu: ar.Backend, form: str, words: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Runs FP8_FORMS[form] on pairs of 32-bit words; its result per pair."""
    module = f"fp8-cvt-{form}"
    if not gpu.has_module(module):
        gpu.load_module(module, FP8_CVT.replace("CVT", FP8_FORMS[form]))
    pairs = np.ascontiguousarray(words, np.uint32).reshape(-1, 2)
    n = len(pairs)
    src, dst = gpu.alloc(pairs.nbytes), gpu.alloc(4 * n)
    try:
        gpu.copy_h2d(pairs, src)
        gpu.launch(gpu.kernel(module, "conv"), -(-n // 256), 256, [src, dst, np.uint32(n)]).wait()
        return gpu.copy_d2h(dst, np.empty(n, np.uint32))
    finally:
        gpu.free(src)
        gpu.free(dst)


def _to_fp8(x: np.ndarray[Any, Any], table: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The code .rn.satfinite gives: the nearest finite value (a tie to the even
    code), past the largest the largest, the sign kept (-0 too); NaN 0x7f."""
    grid = table[:0x80][np.isfinite(table[:0x80])]  # 0, the subnormals, up to the largest
    a = np.where(np.isfinite(x), np.abs(x), grid[-1])  # infinities saturate; NaN below
    hi = np.clip(np.searchsorted(grid, a), 1, len(grid) - 1)
    lo = hi - 1
    dlo, dhi = a - grid[lo], grid[hi] - a
    code = np.where((dhi < dlo) | ((dhi == dlo) & (hi % 2 == 0)), hi, lo)
    code = np.where(a >= grid[-1], len(grid) - 1, code)
    code = code | np.where(np.signbit(x), 0x80, 0)
    return np.where(np.isnan(x), 0x7F, code).astype(np.uint32)


def _halves(v: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return np.asarray(v, np.float64).astype(np.float16).view(np.uint16).astype(np.uint32)


@pytest.mark.parametrize("kind", ["e4m3", "e5m2"])
def test_fp8_to_f16x2_every_pair(gpu: ar.Backend, kind: str) -> None:
    """cvt.rn.f16x2.e4m3x2 / .e5m2x2 on all 65,536 pairs: the upper byte to the
    upper half; every value exact in fp16 (subnormals, 448, 57344, -0, the
    e5m2 infinities); a NaN code (e4m3 S.1111.111, e5m2 exponent 31 with a
    mantissa) gives a NaN."""
    table = E4M3 if kind == "e4m3" else E5M2
    code = np.arange(65536, dtype=np.uint32)
    words = np.stack([code, np.zeros_like(code)], axis=1)
    got = _fp8_cvt(gpu, f"f16x2.{kind}x2", words)
    for half, byte in ((got & 0xFFFF, code & 0xFF), (got >> 16, code >> 8)):
        value = table[byte]
        nan = np.isnan(value)
        assert (half[~nan] == _halves(value[~nan])).all()
        assert np.isnan(half[nan].astype(np.uint16).view(np.float16)).all()


def _edges(kind: str) -> np.ndarray[Any, Any]:
    table = E4M3 if kind == "e4m3" else E5M2
    finite = table[np.isfinite(table)]
    top, tiny = finite.max(), 2.0 ** (-9 if kind == "e4m3" else -16)
    pos = np.sort(finite[finite > 0])
    edges = [np.nan, np.inf, -np.inf, 0.0, -0.0, top, -top, top * 1.03, top * 1.5, 3.4e38]
    edges += [tiny, tiny / 2, tiny * 0.75, tiny * 1.5, -tiny * 2.5, 1e-40, -1e-40]
    mids = (pos[:-1] + pos[1:]) / 2  # every tie between neighbours: to the even code
    return np.concatenate([edges, mids, -mids, pos, np.nextafter(mids, 0), np.nextafter(mids, 9)])


@pytest.mark.parametrize("kind", ["e4m3", "e5m2"])
def test_f32_to_fp8_rounds_and_saturates(gpu: ar.Backend, kind: str) -> None:
    """cvt.rn.satfinite.e4m3x2.f32 / .e5m2x2.f32 d, a, b (a to the upper byte):
    NaN, infinities and values past the largest finite one (saturated, also
    where rounding would carry past it), every tie between neighbouring
    codes and the f32 values on either side of it, subnormals, signed zeros,
    and random f32 over a wide range."""
    table = E4M3 if kind == "e4m3" else E5M2
    x = _edges(kind)
    rand = RNG.standard_normal(20000) * 2.0 ** RNG.integers(-30, 20, 20000)
    x = np.concatenate([x, rand]).astype(np.float32)
    x = np.concatenate([x, x[:1]]) if len(x) % 2 else x
    got = _fp8_cvt(gpu, f"{kind}x2.f32", x.view(np.uint32))
    want = _to_fp8(x.astype(np.float64), table)
    assert (got >> 16 == 0).all()
    assert ((got >> 8) == want[0::2]).all()
    assert ((got & 0xFF) == want[1::2]).all()


@pytest.mark.parametrize("kind", ["e4m3", "e5m2"])
def test_f16x2_to_fp8_every_half(gpu: ar.Backend, kind: str) -> None:
    """cvt.rn.satfinite.e4m3x2.f16x2 / .e5m2x2.f16x2 on all 65,536 fp16 values,
    two a word (the upper half to the upper byte)."""
    table = E4M3 if kind == "e4m3" else E5M2
    h = np.arange(65536, dtype=np.uint32)
    words = h[0::2] | h[1::2] << 16
    got = _fp8_cvt(gpu, f"{kind}x2.f16x2", np.stack([words, words], axis=1))
    value = h.astype(np.uint16).view(np.float16).astype(np.float64)
    want = _to_fp8(value, table)
    assert ((got & 0xFF) == want[0::2]).all()
    assert ((got >> 8) == want[1::2]).all()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("cvt.rn.relu.f16x2.e4m3x2 %r7, %h1;", "'cvt.rn.relu.f16x2.e4m3x2' (modifier .relu)"),
        ("cvt.rn.e4m3x2.f32 %h2, %f1, %f2;", "'cvt.rn.e4m3x2.f32'"),
        ("cvt.rz.satfinite.e5m2x2.f32 %h2, %f1, %f2;", "'cvt.rz.satfinite.e5m2x2.f32'"),
        (
            "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%f1,%f2,%f1,%f2}, "
            "{%r5,%r5,%r5,%r5}, {%r5,%r5}, {%f1,%f2,%f1,%f2};",
            "'mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32'",
        ),
        (
            "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%f1,%f2,%f1,%f2}, "
            "{%r5,%r5,%r5,%r5}, %rd1, 1, 1, 1;",
            "an 8-bit A in registers is not supported",
        ),
        (
            "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.f16 {%f1,%f2,%f1,%f2}, "
            "%rd1, %rd2, 1, 1, 1;",
            "'wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.f16'",
        ),
    ],
)
def test_an_fp8_form_cuda_sim_does_not_run_is_refused_by_name(
    gpu: ar.Backend, line: str, message: str
) -> None:
    """Forms not modelled (.relu, cvt to fp8 without .satfinite or in another
    rounding, mma.sync on fp8, an 8-bit wgmma A in registers, a k32 wgmma on
    other types) fail the load, naming the line and the construct."""
    ptx = FP8_CVT.replace("CVT", line)
    number = ptx.splitlines().index(f"    {line}") + 1
    with pytest.raises(DriverError, match="CUDA_ERROR_INVALID_PTX") as info:
        gpu.load_module(f"fp8-refused-{abs(hash(line))}", ptx)
    assert f"ptx line {number}: " in str(info.value)
    assert message in str(info.value), str(info.value)


@pytest.mark.parametrize("name", ["matmul_fp8e5", "matmul_fp8e4_64x128x64_s3_w4"])
def test_an_fp8_matmul_without_its_proxy_fence_is_reported(
    gpu: ar.Backend, capfd: Any, name: str
) -> None:
    """The fp8 matmuls with fence.proxy.async taken out: the 8-bit wgmma would
    read tiles written through the generic proxy (st.shared.b8 as written,
    cp.async when tuned)."""
    ptx = (CORPUS / f"{name}.sm90.ptx").read_text()
    assert ptx.count("\tfence.proxy.async.shared::cta;") == 1
    module = f"triton-no-proxy-fence-{name}"
    gpu.load_module(module, ptx.replace("\tfence.proxy.async.shared::cta;", "\t// gone"))
    meta = MANIFEST[f"{name}.sm90"]
    ptrs = [gpu.alloc(64 * 128) for _ in range(3)]
    try:
        ints = (64, 64, 64, 64, 1, 1, 64, 64, 1) if name == "matmul_fp8e5" else (64,) * 6
        launch = gpu.launch(
            gpu.kernel(module, meta["entry"]),
            1,
            32 * meta["num_warps"],
            [*ptrs, *map(np.int32, ints), np.uint64(0), np.uint64(0)],
            shared_mem=meta["shared"],
        )
        with pytest.raises(DriverError, match="LAUNCH_FAILED"):
            launch.wait()
    finally:
        for p in ptrs:
            gpu.free(p)
    err = capfd.readouterr().err
    assert "wgmma.mma_async reads shared memory at offset" in err, err
    assert "with no fence.proxy.async after the write" in err

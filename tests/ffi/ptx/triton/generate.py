"""Writes the Triton part of the PTX corpus (tests/ffi/test_ptx_triton_corpus.py).

Triton is not one of the test suite's requirements, so its PTX is kept here
as files, made by this script in a venv that has the pinned version:

    pip install triton==3.9.0
    python tests/ffi/ptx/triton/generate.py

Triton compiles to PTX without a GPU (``triton.compile`` of an ``ASTSource``
for a ``GPUTarget``).  Each kernel is one of Triton's tutorials, as the
tutorial writes it, compiled for sm_80 and sm_90 (``NAME.sm80.ptx``,
``NAME.sm90.ptx``).  The fused softmax runs its row loop
unpipelined (``num_stages=1``); the tutorial's pipelined one is kept too.
``manifest.json`` records the Triton version and, for each file, what
its launch needs from Triton's metadata: the entry, ``num_warps`` (the
block is 32 times it) and the dynamic shared memory.
Triton appends two pointer parameters to every kernel
(its global and profile scratch); the test passes null for both, as
Triton's launcher does when the kernel asks for no scratch.

The fp16 ``tl.dot`` matmul runs on sm_80 (``ldmatrix``, ``mma.m16n8k16``),
as written (masked per element: no cp.async) and as the autotuner compiles
it for sizes divisible by 16 with several ``num_stages``/``num_warps``
(``cp.async`` pipelines).  For sm_90 Triton writes ``wgmma`` behind
``fence.proxy.async`` (except for 2 warps, below a warpgroup), which
cuda-sim runs (descriptors with 64- and 128-byte swizzles).  The sm_90
tensor-descriptor matmul uses TMA (tensormap.replace, cp.async.bulk.tensor,
mbarrier, stmatrix), which cuda-sim runs too (the line count of this text is
kept: .loc lines in the PTX count it).  The fused attention forward is the inner loop over
pointers (sm_90: wgmma with A in registers for P V).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # 3.9's default, stated

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.language.extra import libdevice

TRITON_VERSION = "3.9.0"
HERE = Path(__file__).resolve().parent
TARGETS = (80, 90)


# 01-vector-add.py
@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):  # type: ignore[no-untyped-def]
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


# 02-fused-softmax.py
@triton.jit
def softmax_kernel(  # type: ignore[no-untyped-def]
    output_ptr,
    input_ptr,
    input_row_stride,
    output_row_stride,
    n_rows,
    n_cols,
    BLOCK_SIZE: tl.constexpr,
    num_stages: tl.constexpr,
):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float("inf"))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        tl.store(output_ptrs, softmax_output, mask=mask)


# 05-layer-norm.py (forward)
@triton.jit
def _layer_norm_fwd_fused(  # type: ignore[no-untyped-def]
    X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr
):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.0)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


# 07-extern-functions.py
@triton.jit
def asin_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):  # type: ignore[no-untyped-def]
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    x = libdevice.asin(x)
    tl.store(y_ptr + offsets, x, mask=mask)


# 03-matrix-multiplication.py (fp16 in, fp16 out; no activation)
@triton.jit
def matmul_kernel(  # type: ignore[no-untyped-def]
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


# 06-fused-attention.py, forward: the tutorial's online-softmax inner loop
# (_attn_fwd_inner, causal off) over pointers, one (batch x head) per
# program_id(1), Q, K, V, Out contiguous [Z*H, N_CTX, HEAD_DIM] fp16.
@triton.jit
def attn_fwd(  # type: ignore[no-untyped-def]
    Q, K, V, Out, sm_scale, N_CTX,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    start_m = tl.program_id(0)
    base = tl.program_id(1).to(tl.int64) * N_CTX * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504  # 1/log(2)
    for start_n in range(0, N_CTX, BLOCK_N):
        k = tl.load(K + base + (start_n + offs_n)[None, :] * HEAD_DIM + offs_d[:, None])
        qk = tl.dot(q, k)
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        l_ij = tl.sum(p, 1)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v = tl.load(V + base + (start_n + offs_n)[:, None] * HEAD_DIM + offs_d[None, :])
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(Out + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], acc.to(tl.float16))


# A matmul through tensor descriptors (tl.make_tensor_descriptor), as
# Triton's Hopper tutorials load tiles: on sm_90 TMA (tensormap.replace,
# cp.async.bulk.tensor, mbarrier, stmatrix), on sm_80 a cp.async pipeline.
@triton.jit
def matmul_tma_kernel(  # type: ignore[no-untyped-def]
    a_ptr, b_ptr, c_ptr, M, N, K,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = a_desc.load([pid_m * BLOCK_M, k])
        b = b_desc.load([k, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(tl.float16))


P32, P16 = "*fp32", "*fp16"

MATMUL_SIGNATURE = {
    "a_ptr": P16,
    "b_ptr": P16,
    "c_ptr": P16,
    "M": "i32",
    "N": "i32",
    "K": "i32",
    "stride_am": "i32",
    "stride_ak": "i32",
    "stride_bk": "i32",
    "stride_bn": "i32",
    "stride_cm": "i32",
    "stride_cn": "i32",
}


def _tuned_matmul(
    block_m: int, block_n: int, block_k: int, num_stages: int, num_warps: int
) -> tuple[object, ...]:
    """The tutorial's matmul as its autotuner launches it on contiguous fp16
    matrices whose sizes are multiples of 16: Triton's JIT makes the unit
    strides constants and marks the pointers and the other integers
    divisible by 16, so the loads vectorize and pipeline into cp.async."""
    signature = {k: v for k, v in MATMUL_SIGNATURE.items() if k not in UNIT_STRIDES}
    constexprs = {
        **dict.fromkeys(UNIT_STRIDES, 1),
        "BLOCK_SIZE_M": block_m,
        "BLOCK_SIZE_N": block_n,
        "BLOCK_SIZE_K": block_k,
        "GROUP_SIZE_M": 8,
    }
    options = {"num_warps": num_warps, "num_stages": num_stages}
    return (matmul_kernel, signature, constexprs, options)


UNIT_STRIDES = ("stride_ak", "stride_bn", "stride_cn")

# The same matmul with fp8 inputs and an fp16 output, as the tutorial runs it
# where the GPU has fp8 tensor cores (sm_89 on), is built for sm_90 only:
# e5m2 (``float8e5``) as written, and float8e4nv (e4m3) and e5m2 as the
# autotuner compiles them for contiguous A and a transposed B (the
# tutorial's ``b = b.T``: B's K stride is 1, so both are K-major, as
# wgmma's 8-bit forms need).  With 4 or 8 warps Triton writes
# ``wgmma.mma_async ... k32 .e4m3/.e5m2``; with 2 warps it widens the fp8
# values to fp16 (``cvt.rn.f16x2.e4m3x2``) for ``mma.sync`` m16n8k16.
FP8_TARGETS = (90,)
#: fp8 as the tutorial feeds it: B transposed, so its K stride is the unit one
FP8_UNIT_STRIDES = ("stride_ak", "stride_bk", "stride_cn")
FP8 = {"e4": "*fp8e4nv", "e5": "*fp8e5"}


def _fp8_matmul(
    kind: str, tile: tuple[int, int, int] | None, num_stages: int, num_warps: int
) -> tuple[object, ...]:
    """The tutorial's matmul on fp8 ``kind`` inputs (an fp16 C): with ``tile``
    as the autotuner compiles it (the unit strides constants, the rest
    divisible by 16: cp.async pipelines), without as written (masked)."""
    signature = {**MATMUL_SIGNATURE, "a_ptr": FP8[kind], "b_ptr": FP8[kind]}
    block = dict(
        zip(("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K"), tile or (64, 64, 64), strict=True)
    )
    constexprs: dict[str, int] = {**block, "GROUP_SIZE_M": 8}
    if tile:
        signature = {k: v for k, v in signature.items() if k not in FP8_UNIT_STRIDES}
        constexprs = {**dict.fromkeys(FP8_UNIT_STRIDES, 1), **constexprs}
    return (
        matmul_kernel,
        signature,
        constexprs,
        {"num_warps": num_warps, "num_stages": num_stages},
    )


#: name -> (kernel, signature, constexprs, compile options)
KERNELS = {
    "vector_add": (
        add_kernel,
        {"x_ptr": P32, "y_ptr": P32, "output_ptr": P32, "n_elements": "i32"},
        {"BLOCK_SIZE": 1024},
        {},
    ),
    "softmax": (
        softmax_kernel,
        {
            "output_ptr": P32,
            "input_ptr": P32,
            "input_row_stride": "i32",
            "output_row_stride": "i32",
            "n_rows": "i32",
            "n_cols": "i32",
        },
        {"BLOCK_SIZE": 1024, "num_stages": 1},
        {"num_warps": 8},
    ),
    # The tutorial's own pipelined loop: on sm_80 and sm_90 its loads become
    # cp.async (commit_group, wait_group).
    "softmax_pipelined": (
        softmax_kernel,
        {
            "output_ptr": P32,
            "input_ptr": P32,
            "input_row_stride": "i32",
            "output_row_stride": "i32",
            "n_rows": "i32",
            "n_cols": "i32",
        },
        {"BLOCK_SIZE": 1024, "num_stages": 2},
        {"num_warps": 8},
    ),
    "asin": (
        asin_kernel,
        {"x_ptr": P32, "y_ptr": P32, "n_elements": "i32"},
        {"BLOCK_SIZE": 1024},
        {},
    ),
    "layernorm": (
        _layer_norm_fwd_fused,
        {
            "X": P32,
            "Y": P32,
            "W": P32,
            "B": P32,
            "Mean": P32,
            "Rstd": P32,
            "stride": "i32",
            "N": "i32",
            "eps": "fp32",
        },
        {"BLOCK_SIZE": 256},
        {"num_warps": 4},
    ),
    "layernorm_f16": (
        _layer_norm_fwd_fused,
        {
            "X": P16,
            "Y": P16,
            "W": P16,
            "B": P16,
            "Mean": P32,
            "Rstd": P32,
            "stride": "i32",
            "N": "i32",
            "eps": "fp32",
        },
        {"BLOCK_SIZE": 512},
        {"num_warps": 8},
    ),
    "matmul_f16": (
        matmul_kernel,
        {
            "a_ptr": P16,
            "b_ptr": P16,
            "c_ptr": P16,
            "M": "i32",
            "N": "i32",
            "K": "i32",
            "stride_am": "i32",
            "stride_ak": "i32",
            "stride_bk": "i32",
            "stride_bn": "i32",
            "stride_cm": "i32",
            "stride_cn": "i32",
        },
        {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8},
        {"num_warps": 4, "num_stages": 3},
    ),
    # Autotune configurations (BLOCK_SIZE_M, _N, _K, num_stages, num_warps):
    # cp.async pipelines of 3, 4 and 5 stages over 8, 4 and 2 warps.  The
    # tutorial's 8-warp one (128x256x64) needs 96 KiB of shared memory, past
    # the 48 KiB a kernel gets without the opt-in (its launch opts in); the
    # second is its 8 warps and 3 stages over a tile that fits without.
    "matmul_f16_128x256x64_s3_w8": _tuned_matmul(128, 256, 64, 3, 8),
    "matmul_f16_128x128x32_s3_w8": _tuned_matmul(128, 128, 32, 3, 8),
    "matmul_f16_64x128x32_s4_w4": _tuned_matmul(64, 128, 32, 4, 4),
    "matmul_f16_64x32x32_s5_w2": _tuned_matmul(64, 32, 32, 5, 2),
    "matmul_tma": (
        matmul_tma_kernel,
        {"a_ptr": P16, "b_ptr": P16, "c_ptr": P16, "M": "i32", "N": "i32", "K": "i32"},
        {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32},
        {"num_warps": 4, "num_stages": 3},
    ),
    # fp8 (sm_90 only, FP8_TARGETS): as written; then tuned e4m3 and e5m2 on
    # wgmma (4 and 8 warps) and e4m3 on mma.sync after cvt to fp16 (2 warps)
    "matmul_fp8e5": _fp8_matmul("e5", None, 3, 4),
    "matmul_fp8e4_64x128x64_s3_w4": _fp8_matmul("e4", (64, 128, 64), 3, 4),
    "matmul_fp8e5_128x128x64_s3_w8": _fp8_matmul("e5", (128, 128, 64), 3, 8),
    "matmul_fp8e4_64x32x64_s4_w2": _fp8_matmul("e4", (64, 32, 64), 4, 2),
    "attention_fwd": (
        attn_fwd,
        {"Q": P16, "K": P16, "V": P16, "Out": P16, "sm_scale": "fp32", "N_CTX": "i32"},
        {"HEAD_DIM": 64, "BLOCK_M": 64, "BLOCK_N": 64},
        {"num_warps": 4, "num_stages": 2},
    ),
}


def targets(name: str) -> tuple[int, ...]:
    """The archs a kernel is built for: fp8 tensor cores need sm_89 on."""
    return FP8_TARGETS if name.startswith("matmul_fp8") else TARGETS


def compile_one(name: str, arch: int) -> tuple[str, dict[str, object]]:
    """The PTX, and what a launch needs from Triton's metadata."""
    fn, signature, constexprs, options = KERNELS[name]
    full = {**signature, **dict.fromkeys(constexprs, "constexpr")}
    attrs = {}
    if name.startswith(("matmul_f16_", "matmul_tma", "matmul_fp8e4_", "matmul_fp8e5_")):
        # the JIT's specialization (_tuned_matmul, _fp8_matmul with a tile)
        attrs = {(fn.arg_names.index(k),): [["tt.divisibility", 16]] for k in signature}
    src = ASTSource(fn=fn, signature=full, constexprs=constexprs, attrs=attrs)
    compiled = triton.compile(src, target=GPUTarget("cuda", arch, 32), options=options)
    meta = compiled.metadata
    launch = {
        "entry": meta.name,
        "num_warps": meta.num_warps,
        "shared": meta.shared,
        "global_scratch_size": meta.global_scratch_size,
        "profile_scratch_size": meta.profile_scratch_size,
    }
    ptx: str = compiled.asm["ptx"]
    return ptx, launch


def main() -> None:
    found = triton.__version__
    assert found == TRITON_VERSION, f"pinned Triton {TRITON_VERSION}, found {found}"
    manifest: dict[str, object] = {"triton": TRITON_VERSION}
    for name in KERNELS:
        for arch in targets(name):
            path = HERE / f"{name}.sm{arch}.ptx"
            ptx, launch = compile_one(name, arch)
            path.write_text(ptx)
            manifest[path.stem] = launch
            print(path.name)
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()

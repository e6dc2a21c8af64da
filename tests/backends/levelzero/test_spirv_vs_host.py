"""Every shipped kernel gives the same bits from its SPIR-V and its host build.

levelzero-sim runs the committed SPIR-V (aruntime/kernels/*.spv) on its
executor by default, and the host shared objects with
``ARUNTIME_SIM_KERNELS=host``.  Both builds come from one source, so on the
same inputs every buffer must come back bit for bit the same (the executor
rounds each float operation as the host build does: no contraction, the same
libm), NaN payloads aside.  Inputs include NaN, infinities, subnormals and negative zero.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import aruntime as ar
from aruntime._exceptions import InvalidArgumentError
from aruntime._kernel_images import PORTABLE_MODULES, host_image, sim_kernel_kind, spirv_image
from aruntime.cli import main as cli_main

u32, u64, f32 = np.uint32, np.uint64, np.float32
Args = list[Any]  # numpy scalars, or arrays that go to device buffers


def _floats(rng: np.random.Generator, n: int, dtype: Any = np.float32) -> np.ndarray:
    x = rng.standard_normal(n).astype(np.float32) * 3
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 1e-40, 0.0, 88.0, -88.0], np.float32)
    x[: min(n, special.size)] = special[: min(n, special.size)]
    return x.astype(dtype)


def _vector(name: str) -> Callable[[np.random.Generator], Args]:
    def make(rng: np.random.Generator) -> Args:
        n = 200
        if name == "saxpy":
            return [u32(n), f32(1.5), _floats(rng, n), _floats(rng, n)]
        if name == "fill_f32":
            return [u32(n), f32(-2.25), np.zeros(n + 8, np.float32)]
        if name == "scale_f32":
            return [u32(n), f32(0.3), _floats(rng, n + 8)]
        if name == "add_f32":
            return [u32(n), _floats(rng, n), _floats(rng, n), np.zeros(n, np.float32)]
        return [u32(n), u32(4000000000), np.zeros(n + 8, np.uint32)]

    return make


def _gemm(dt: Any, trans: tuple[int, int], beta: float) -> Callable[[np.random.Generator], Args]:
    def make(rng: np.random.Generator) -> Args:
        m, n, k = 13, 11, 7
        lda = k if trans[0] else m
        ldb = n if trans[1] else k
        a = _floats(rng, lda * (m if trans[0] else k), dt)
        b = _floats(rng, ldb * (k if trans[1] else n), dt)
        c = _floats(rng, m * n, dt)
        return [u64(m), u64(n), u64(k), f32(0.75), a, u64(lda), b, u64(ldb), f32(beta), c,
                u64(m), u32(trans[0]), u32(trans[1])]  # fmt: skip

    return make


def _conv2d(dt: Any) -> Callable[[np.random.Generator], Args]:
    def make(rng: np.random.Generator) -> Args:
        nb, c, h, w, kf, r, s = 2, 3, 7, 6, 4, 3, 2
        sh, sw, ph, pw = 2, 1, 1, 0
        p, q = (h + 2 * ph - r) // sh + 1, (w + 2 * pw - s) // sw + 1
        x, wt = _floats(rng, nb * c * h * w, dt), _floats(rng, kf * c * r * s, dt)
        y = np.zeros(nb * kf * p * q, dt)
        return [u64(nb), u64(c), u64(h), u64(w), u64(kf), u64(r), u64(s), u64(p), u64(q),
                u32(sh), u32(sw), u32(ph), u32(pw), x, wt, y]  # fmt: skip

    return make


def _attention(dt: Any, causal: int) -> Callable[[np.random.Generator], Args]:
    def make(rng: np.random.Generator) -> Args:
        bh, sq, sk, d = 3, 5, 9, 37  # d spans more than one chunk of the kernel
        q = (rng.standard_normal(bh * sq * d) / 3).astype(dt)
        k = (rng.standard_normal(bh * sk * d) / 3).astype(dt)
        v = _floats(rng, bh * sk * d, dt)
        v[:8] = 1.0  # keep NaN out of the softmax so every row is checked
        out = np.zeros(bh * sq * d, dt)
        return [u64(bh), u64(sq), u64(sk), u64(d), f32(d**-0.5), u32(causal), q, k, v, out]

    return make


def _reduce(dt: Any, op: int) -> Callable[[np.random.Generator], Args]:
    def make(rng: np.random.Generator) -> Args:
        outer, length, inner = 3, 50, 4
        x = _floats(rng, outer * length * inner, dt)
        return [u64(outer), u64(length), u64(inner), u32(op), x, np.zeros(outer * inner, dt)]

    return make


def _unary(dt: Any, op: int) -> Callable[[np.random.Generator], Args]:
    def make(rng: np.random.Generator) -> Args:
        n = 150
        return [u64(n), u32(op), _floats(rng, n, dt), np.zeros(n, dt)]

    return make


def _binary(dt: Any, op: int) -> Callable[[np.random.Generator], Args]:
    def make(rng: np.random.Generator) -> Args:
        n = 150
        return [u64(n), u32(op), _floats(rng, n, dt), _floats(rng, n, dt)[::-1].copy(),
                np.zeros(n, dt)]  # fmt: skip

    return make


F16 = np.float16
CASES: dict[str, tuple[str, str, Callable[[np.random.Generator], Args]]] = {}
for _k in ("saxpy", "fill_f32", "scale_f32", "add_f32", "iota_u32"):
    CASES[_k] = ("vector_ops", _k, _vector(_k))
for _sfx, _dt in (("f32", np.float32), ("f16", F16)):
    for _t in ((0, 0), (1, 0), (0, 1), (1, 1)):
        CASES[f"gemm_{_sfx}-t{_t[0]}{_t[1]}"] = ("gemm", f"gemm_{_sfx}", _gemm(_dt, _t, 0.5))
    CASES[f"gemm_{_sfx}-beta0"] = ("gemm", f"gemm_{_sfx}", _gemm(_dt, (0, 0), 0.0))
    CASES[f"conv2d_{_sfx}"] = ("conv2d", f"conv2d_{_sfx}", _conv2d(_dt))
    for _c in (0, 1):
        _case = ("attention", f"attention_{_sfx}", _attention(_dt, _c))
        CASES[f"attention_{_sfx}-causal{_c}"] = _case
    for _op in range(4):
        CASES[f"reduce_{_sfx}-op{_op}"] = ("reduce", f"reduce_{_sfx}", _reduce(_dt, _op))
    for _op in range(8):
        CASES[f"unary_{_sfx}-op{_op}"] = ("unary", f"unary_{_sfx}", _unary(_dt, _op))
    for _op in range(6):
        CASES[f"binary_{_sfx}-op{_op}"] = ("binary", f"binary_{_sfx}", _binary(_dt, _op))


def _entry_points(spv: bytes) -> set[str]:
    words = np.frombuffer(spv, dtype="<u4")[5:]
    names, i = set(), 0
    while i < words.size:
        count, opcode = int(words[i]) >> 16, int(words[i]) & 0xFFFF
        if opcode == 15:  # OpEntryPoint: model, id, name, ...
            names.add(words[i + 3 : i + count].tobytes().split(b"\0", 1)[0].decode())
        i += count
    return names


@pytest.fixture(scope="module")
def modules(gpu: ar.Backend) -> dict[tuple[str, str], ar.Module]:
    out = {}
    for name in PORTABLE_MODULES:
        spv, host = spirv_image(name), host_image(name)
        assert spv is not None and host is not None, name
        out[(name, "spirv")] = gpu.load_module(f"{name}.spv", spv)
        out[(name, "host")] = gpu.load_module(f"{name}.host", host)
    return out


def test_the_cases_cover_every_shipped_kernel() -> None:
    shipped = set()
    for name in PORTABLE_MODULES:
        spv = spirv_image(name)
        assert spv is not None, name
        shipped |= {(name, k) for k in _entry_points(spv)}
    covered = {(module, kernel) for module, kernel, _ in CASES.values()}
    assert covered == shipped


def _run(gpu: ar.Backend, module: ar.Module, kernel: str, args: Args) -> list[np.ndarray]:
    ptrs, launch_args = [], []
    for a in args:
        if isinstance(a, np.ndarray):
            p = gpu.alloc(a.nbytes)
            gpu.copy_h2d(a, p)
            ptrs.append((p, a))
            launch_args.append(p)
        else:
            launch_args.append(a)
    stream = gpu.create_stream()
    try:
        gpu.launch(gpu.kernel(module, kernel), 3, 64, launch_args, stream=stream)
        gpu.synchronize(stream).wait()
        return [gpu.copy_d2h(p, np.empty_like(a)) for p, a in ptrs]
    finally:
        stream.close()
        for p, _ in ptrs:
            gpu.free(p)


@pytest.mark.parametrize("case", sorted(CASES))
def test_spirv_matches_the_host_build(
    gpu: ar.Backend, modules: dict[tuple[str, str], ar.Module], case: str
) -> None:
    module, kernel, make = CASES[case]
    args = make(np.random.default_rng(11))
    host = _run(gpu, modules[(module, "host")], kernel, args)
    spirv = _run(gpu, modules[(module, "spirv")], kernel, args)
    for i, (h, s) in enumerate(zip(host, spirv, strict=True)):
        differ = h.view(f"u{h.itemsize}") != s.view(f"u{s.itemsize}")
        if h.dtype.kind == "f":
            # Which NaN an operation returns when both operands are NaN is the
            # compiler's choice of operand order (x86 keeps the first): any
            # NaN matches any NaN; every other value, -0.0 included, bit for bit.
            differ &= ~(np.isnan(h) & np.isnan(s))
        assert not differ.any(), f"{case}: buffer {i} differs at {np.flatnonzero(differ)[:8]}"
    # The kernel wrote something: the outputs are not just the inputs.
    inputs = [a for a in args if isinstance(a, np.ndarray)]
    assert any(h.tobytes() != a.tobytes() for h, a in zip(host, inputs, strict=True)), case


def test_the_knob_picks_the_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARUNTIME_SIM_KERNELS", raising=False)
    assert sim_kernel_kind() == "device"
    monkeypatch.setenv("ARUNTIME_SIM_KERNELS", " Host ")
    assert sim_kernel_kind() == "host"
    monkeypatch.setenv("ARUNTIME_SIM_KERNELS", "ptx")
    with pytest.raises(InvalidArgumentError, match="ARUNTIME_SIM_KERNELS='ptx'"):
        sim_kernel_kind()


def test_levelzero_sim_runs_the_shipped_spirv_unless_told_otherwise(
    gpu: ar.Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ARUNTIME_SIM_KERNELS", raising=False)
    assert gpu.driver.builtin_module_image("gemm") == spirv_image("gemm")
    monkeypatch.setenv("ARUNTIME_SIM_KERNELS", "host")
    assert gpu.driver.builtin_module_image("gemm") == host_image("gemm")


def test_info_says_which_kernels_the_sims_run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("ARUNTIME_SIM_KERNELS", raising=False)
    assert cli_main(["info"]) == 0
    assert "SPIR-V on levelzero-sim" in capsys.readouterr().out
    monkeypatch.setenv("ARUNTIME_SIM_KERNELS", "host")
    assert cli_main(["info"]) == 0
    assert "host builds (ARUNTIME_SIM_KERNELS=host)" in capsys.readouterr().out

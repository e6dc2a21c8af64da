"""Every shipped kernel, run on cuda-sim from its committed PTX and from its
host build, on the same inputs: the two must agree.

The PTX contracts multiply-adds into fma and uses the approximate exp2/rcp
instructions where nvcc chose them, so the comparison allows a few float32
ulps (relative to each result's magnitude), never more.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest

import aruntime as ar
from aruntime._compute import BINARY_OPS, REDUCE_OPS, UNARY_OPS

Run = Callable[[ar.Backend], dict[str, np.ndarray]]

RTOL = {"float32": 2e-5, "float16": 1e-3}


def _on(kind: str, run: Run, monkeypatch: pytest.MonkeyPatch) -> dict[str, np.ndarray]:
    monkeypatch.setenv("ARUNTIME_SIM_KERNELS", kind)
    try:
        backend = ar.open_backend("cuda-sim")
    except ar.BackendUnavailableError as exc:
        pytest.skip(f"cuda-sim unavailable: {exc}")
    with backend:
        return run(backend)  # each run frees what it allocated


class Arrays:
    def __init__(self, backend: ar.Backend, dtype: str) -> None:
        self.b = backend
        self.dtype = np.dtype(dtype)
        self.ptrs: list[tuple[ar.DevicePtr, int]] = []

    def put(self, a: np.ndarray) -> ar.DevicePtr:
        data = np.ascontiguousarray(a, dtype=self.dtype).reshape(-1)
        p = self.b.alloc(data.nbytes)
        self.b.copy_h2d(data, p)
        self.ptrs.append((p, data.size))
        return p

    def empty(self, n: int) -> ar.DevicePtr:
        return self.put(np.zeros(n, self.dtype))

    def free(self) -> None:
        for p, _n in self.ptrs:
            self.b.free(p)
        self.ptrs.clear()

    def get(self, p: ar.DevicePtr) -> np.ndarray:
        n = dict((id(q), m) for q, m in self.ptrs)[id(p)]
        out = np.empty(n, self.dtype)
        self.b.copy_d2h(p, out)
        return out.astype(np.float32)


def _compute_all(dtype: str) -> Run:
    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, (37, 29)).astype(np.float32)
    bm = rng.uniform(-1, 1, (29, 41)).astype(np.float32)
    x = rng.uniform(-1, 1, (2, 3, 13, 11)).astype(np.float32)
    w = rng.uniform(-1, 1, (4, 3, 3, 3)).astype(np.float32)
    q = rng.uniform(-1, 1, (2, 2, 9, 16)).astype(np.float32)
    kv = rng.uniform(-1, 1, (2, 2, 12, 16)).astype(np.float32)
    vv = rng.uniform(-1, 1, (2, 2, 12, 16)).astype(np.float32)
    r = rng.uniform(-3, 3, (5, 7, 33)).astype(np.float32)
    u = rng.uniform(-4, 4, 1000).astype(np.float32)
    v = rng.uniform(0.5, 4, 1000).astype(np.float32)

    def run(backend: ar.Backend) -> dict[str, np.ndarray]:
        d = Arrays(backend, dtype)
        out: dict[str, np.ndarray] = {}
        c = d.empty(37 * 41)
        backend.gemm(d.put(a.T), d.put(bm.T), c, 37, 41, 29, alpha=0.5, dtype=dtype).wait()
        out["gemm"] = d.get(c)
        y = d.empty(2 * 4 * 7 * 11)
        backend.conv2d_forward(
            d.put(x), d.put(w), y, x.shape, w.shape, (2, 4, 7, 11), stride=(2, 1),
            padding=(1, 1), dtype=dtype,
        ).wait()  # fmt: skip
        out["conv2d"] = d.get(y)
        for causal in (False, True):
            o = d.empty(q.size)
            backend.attention(
                d.put(q), d.put(kv), d.put(vv), o, 2, 2, 9, 12, 16, scale=0.25, causal=causal,
                dtype=dtype,
            ).wait()  # fmt: skip
            out[f"attention causal={causal}"] = d.get(o)
        for op in REDUCE_OPS:
            for axis in range(3):
                shape = list(r.shape)
                shape.pop(axis)
                o = d.empty(int(np.prod(shape)))
                backend.reduce(d.put(r), o, r.shape, axis, op, dtype=dtype).wait()
                out[f"reduce {op} axis={axis}"] = d.get(o)
        for op in UNARY_OPS:
            o = d.empty(u.size)
            backend.unary(d.put(u), o, u.size, op, dtype=dtype).wait()
            out[f"unary {op}"] = d.get(o)
        for op in BINARY_OPS:
            o = d.empty(u.size)
            backend.binary(d.put(u), d.put(v), o, u.size, op, dtype=dtype).wait()
            out[f"binary {op}"] = d.get(o)
        d.free()
        return out

    return run


def _vector_ops(backend: ar.Backend) -> dict[str, np.ndarray]:
    mod = backend.builtin_module("vector_ops")
    d = Arrays(backend, "float32")
    n = 1000
    x = np.linspace(-3, 3, n, dtype=np.float32)
    out: dict[str, np.ndarray] = {}
    y = d.put(np.full(n, 0.25, np.float32))
    backend.launch(
        backend.kernel(mod, "saxpy"), 8, 128, [np.uint32(n), np.float32(1.5), d.put(x), y]
    ).wait()
    out["saxpy"] = d.get(y)
    f = d.empty(n)
    backend.launch(
        backend.kernel(mod, "fill_f32"), 8, 128, [np.uint32(n), np.float32(-2), f]
    ).wait()
    out["fill_f32"] = d.get(f)
    s = d.put(x)
    backend.launch(
        backend.kernel(mod, "scale_f32"), 8, 128, [np.uint32(n), np.float32(3), s]
    ).wait()
    out["scale_f32"] = d.get(s)
    a = d.empty(n)
    backend.launch(
        backend.kernel(mod, "add_f32"), 8, 128, [np.uint32(n), d.put(x), d.put(x * 2), a]
    ).wait()
    out["add_f32"] = d.get(a)
    it = backend.alloc(4 * n)
    backend.launch(backend.kernel(mod, "iota_u32"), 8, 128, [np.uint32(n), np.uint32(5), it]).wait()
    got = np.empty(n, np.uint32)
    backend.copy_d2h(it, got)
    out["iota_u32"] = got.astype(np.float32)
    backend.free(it)
    d.free()
    return out


@pytest.fixture(params=["vector_ops", "compute float32", "compute float16"])
def case(request: pytest.FixtureRequest) -> Iterator[tuple[Run, str]]:
    if request.param == "vector_ops":
        yield _vector_ops, "float32"
    else:
        dtype = request.param.split()[1]
        yield _compute_all(dtype), dtype


def test_ptx_matches_host_build(case: tuple[Run, str], monkeypatch: pytest.MonkeyPatch) -> None:
    run, dtype = case
    host = _on("host", run, monkeypatch)
    ptx = _on("device", run, monkeypatch)
    assert host.keys() == ptx.keys()
    for name, want in host.items():
        got = ptx[name]
        finite = np.abs(want[np.isfinite(want)])
        scale = max(float(finite.max()) if finite.size else 0.0, 1e-30)
        np.testing.assert_allclose(
            got, want, rtol=RTOL[dtype], atol=RTOL[dtype] * scale, err_msg=name
        )
    assert any(not np.array_equal(host[k], np.zeros_like(host[k])) for k in host)


@pytest.mark.parametrize(
    ("knob", "is_ptx"), [(None, True), ("device", True), ("host", False), ("HOST", False)]
)
def test_sim_kernel_knob_picks_the_image(
    knob: str | None, is_ptx: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """By default the sim loads the same PTX a GPU loads; ``host`` the host build."""
    from aruntime.backends import cuda

    if knob is None:
        monkeypatch.delenv("ARUNTIME_SIM_KERNELS", raising=False)
    else:
        monkeypatch.setenv("ARUNTIME_SIM_KERNELS", knob)
    driver = cuda.open_driver(0, sim=True)
    try:
        for name in ("vector_ops", "gemm", "attention"):
            image = bytes(driver.builtin_module_image(name))  # type: ignore[attr-defined]
            assert (b".version" in image[:4096]) is is_ptx
            assert image.startswith(b"\x7fELF") is not is_ptx
    finally:
        driver.close()


def test_sim_kernel_knob_rejects_other_values(monkeypatch: pytest.MonkeyPatch) -> None:
    from aruntime._kernel_images import sim_kernel_kind

    monkeypatch.setenv("ARUNTIME_SIM_KERNELS", "ptx")
    with pytest.raises(ar.InvalidArgumentError, match="ARUNTIME_SIM_KERNELS='ptx'"):
        sim_kernel_kind()

"""levelzero-sim's SPIR-V executor on OpenCL C kernels beyond the shipped ones.

The kernels (spirv/executor.cl, built at -O0 and -O2 by spirv/build.py) use
what the portable kernels do not: local memory and barriers, sub-group and
work-group collectives (sub-groups of 16, one of them partial), atomics on
global and local memory in 32 and 64 bits, 3-D geometry, private arrays of
structs, calls, switch, program-scope variables, integer and float built-ins
and vectors.  Each result is checked against numpy.  Unsupported constructs
must be refused at module creation with a build log naming them, an access
outside every allocation must poison the device, and a barrier that only
some work-items reach must fail the launch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aruntime as ar
from aruntime._exceptions import DeviceLostError, DriverError

from . import _simhooks

HERE = Path(__file__).resolve().parent / "spirv"
BUILDS = ("executor_O0.spv", "executor_O2.spv")
i32, u32, i64 = np.int32, np.uint32, np.int64


@pytest.fixture(scope="module")
def modules(gpu: ar.Backend) -> dict[str, ar.Module]:
    return {name: gpu.load_module(name, (HERE / name).read_bytes()) for name in BUILDS}


@pytest.fixture(params=BUILDS)
def module(request: pytest.FixtureRequest, modules: dict[str, ar.Module]) -> ar.Module:
    return modules[str(request.param)]


def run(
    gpu: ar.Backend,
    module: ar.Module,
    kernel: str,
    grid: Any,
    block: Any,
    args: list[Any],
) -> list[np.ndarray]:
    """Launches with arrays copied to device buffers; returns every array read back."""
    ptrs, launch_args = [], []
    for a in args:
        if isinstance(a, np.ndarray):
            p = gpu.alloc(max(a.nbytes, 4))
            gpu.copy_h2d(a, p)
            ptrs.append((p, a))
            launch_args.append(p)
        else:
            launch_args.append(a)
    try:
        gpu.launch(gpu.kernel(module, kernel), grid, block, launch_args)
        gpu.synchronize().wait()
        return [gpu.copy_d2h(p, np.empty_like(a)) for p, a in ptrs]
    finally:
        for p, _ in ptrs:
            gpu.free(p)


def test_local_memory_and_a_barrier(gpu: ar.Backend, module: ar.Module) -> None:
    x = np.arange(3 * 64, dtype=np.int32) * 7
    _, y = run(gpu, module, "local_reverse", 3, 64, [x, np.zeros_like(x)])
    assert (y == x.reshape(3, 64)[:, ::-1].ravel()).all()


def test_barriers_in_a_loop(gpu: ar.Backend, module: ar.Module) -> None:
    n = 1000
    x = np.random.default_rng(1).integers(-50, 50, n).astype(np.float32)
    *_, sums = run(gpu, module, "tree_sum", 4, 256, [x, u32(n), np.zeros(4, np.float32)])
    padded = np.zeros(1024, np.float32)
    padded[:n] = x
    assert (sums == padded.reshape(4, 256).sum(axis=1)).all()


def test_subgroup_operations(gpu: ar.Backend, module: ar.Module) -> None:
    group, groups = 40, 2  # sub-groups of 16, 16 and 8 in each group
    n = group * groups
    x = np.random.default_rng(2).integers(-100, 100, n).astype(np.int32)
    _, out = run(gpu, module, "subgroups", groups, group, [x, np.zeros(12 * n, np.int32)])
    out = out.reshape(n, 12)
    for i in range(n):
        lid = i % group
        sg, sgl = lid // 16, lid % 16
        lo = i - sgl
        size = min(16, group - sg * 16)
        v = x[lo : lo + size]
        expect = [
            size, 16, 3, sg, sgl, v.sum(), v.max(), v[: sgl + 1].sum(),
            v[:sgl].min() if sgl else np.iinfo(np.int32).max, v[3],
            int((v > 40).any()) + 2 * int((v > -1000).all()), 1,
        ]  # fmt: skip
        assert list(out[i]) == expect, (i, list(out[i]), expect)


def test_work_group_collectives(gpu: ar.Backend, module: ar.Module) -> None:
    group, groups = 40, 3
    x = np.random.default_rng(3).integers(-1000, 1000, group * groups).astype(np.int32)
    _, out = run(gpu, module, "workgroups", groups, group, [x, np.zeros(3 * x.size, np.int32)])
    out = out.reshape(groups, group, 3)
    xs = x.reshape(groups, group)
    assert (out[:, :, 0] == xs.sum(axis=1)[:, None]).all()
    assert (out[:, :, 1] == np.maximum.accumulate(xs, axis=1)).all()
    assert (out[:, :, 2] == xs[:, 5:6]).all()


def test_atomics(gpu: ar.Backend, module: ar.Module) -> None:
    groups, group = 4, 50
    n = groups * group
    g = np.array([0, 0, 0, 0, 0, -1, 0, 0, 100], np.int32)
    g64 = np.zeros(1, np.int64)
    g, g64, per_group = run(
        gpu, module, "atomics", groups, group, [g, g64, np.zeros(2 * groups, np.int32)]
    )
    ids = np.arange(n)
    bits = np.bitwise_or.reduce(1 << (ids % 31))
    assert g[0] == ids.sum()
    assert g[1] == -n
    assert g[2] == -(n - 1)
    assert g[3] == n - 1
    assert g[4] == bits
    assert g[5] == ~bits
    assert g[6] == np.bitwise_xor.reduce(ids)
    assert 1 <= g[7] <= n
    assert g[8] == 100 - n
    assert g64[0] == (ids.astype(np.int64) << 33).sum()
    assert list(per_group) == [v for k in range(groups) for v in (group, group * (k + 1) - 1)]


def test_work_groups_run_in_order_on_the_engines_thread(gpu: ar.Backend) -> None:
    # Seven groups are too few for the engine to split (it gives a thread at
    # least four), so one thread runs the grid: group after group, each
    # work-item to its end before the next.  An executor that spread the
    # groups over threads of its own would interleave the tickets.
    order = gpu.load_module("order.spv", (HERE / "order.spv").read_bytes())
    groups, group, spin = 7, 32, 2000
    n = groups * group
    counter, out, _ = run(
        gpu,
        order,
        "tickets",
        groups,
        group,
        [np.zeros(1, u32), np.zeros(n, u32), np.zeros(n, u32), u32(spin)],
    )
    assert counter[0] == n
    assert out.tolist() == list(range(n))


def test_three_dimensional_geometry(gpu: ar.Backend, module: ar.Module) -> None:
    grid, block = (2, 3, 2), (4, 2, 3)
    size = [grid[i] * block[i] for i in range(3)]
    total = size[0] * size[1] * size[2]
    (out,) = run(gpu, module, "geometry", grid, block, [np.zeros(8 * total, np.uint32)])
    out = out.reshape(total, 8)
    for z in range(size[2]):
        for y in range(size[1]):
            for x in range(size[0]):
                lin = x + size[0] * (y + size[1] * z)
                loc = (x % block[0], y % block[1], z % block[2])
                grp = (x // block[0], y // block[1], z // block[2])
                expect = [
                    x + 1000 * y + 1000000 * z,
                    loc[0] + 100 * loc[1] + 10000 * loc[2],
                    grp[0] + 100 * grp[1] + 10000 * grp[2],
                    size[0] + 1000 * size[1],
                    grid[0] + 100 * grid[1] + 10000 * grid[2],
                    loc[0] + block[0] * (loc[1] + block[1] * loc[2]),
                    3,
                    block[2],
                ]
                assert list(out[lin]) == expect, (x, y, z)


def test_private_structs_calls_switch_and_program_variables(
    gpu: ar.Backend, module: ar.Module
) -> None:
    n = 128
    x = np.arange(n, dtype=np.int32) * 3 + 1
    outs = [np.zeros(n, np.float32), np.zeros(2 * n, np.int32)]
    _, out, iout = run(gpu, module, "misc", 2, 64, [x, *outs])
    table = [0.5, 1.5, -2.0, 4.0, 8.25]
    for i in range(n):
        which = int(x[i]) % 9 - 4
        pick = {0: 10.0, 3: 30.0}.get(which, table[(which % (1 << 32)) % 5])
        assert out[i] == np.float32(pick + i % 4), i
        assert iout[2 * i] == 5 * x[i] + 8
        assert iout[2 * i + 1] == 7 + i


def _wrap32(v: np.ndarray) -> np.ndarray:
    return (np.asarray(v, np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def test_integer_builtins(gpu: ar.Backend, module: ar.Module) -> None:
    rng = np.random.default_rng(4)
    n = 128
    a = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    b = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    a[:6] = [0, -1, 2**31 - 1, -(2**31), 5, -7]
    b[:6] = [3, 0, 1, -2, 2**31 - 1, 3]
    *_, out = run(gpu, module, "int_math", 2, 64, [a, b, np.zeros(16 * n, np.int32)])
    out = out.reshape(n, 16)
    x, y = a.astype(np.int64), b.astype(np.int64)
    ux, uy = x & 0xFFFFFFFF, y & 0xFFFFFFFF
    sh = uy & 31
    nz = np.where(y == 0, 1, y)
    quot = np.where(y == 0, 0, np.trunc(x / nz).astype(np.int64))
    expect = [
        (x * y) >> 32,
        (ux * uy) >> 32,
        [32 - int(v).bit_length() for v in ux],
        [bin(int(v)).count("1") for v in ux],
        ((ux << sh) | (ux >> ((32 - sh) % 32))) & 0xFFFFFFFF,
        np.abs(x - y),
        np.clip(x + y, -(2**31), 2**31 - 1),
        np.maximum(ux - uy, 0),
        (x + y) >> 1,
        np.clip(x, -100, 100),
        (np.minimum(x, y) & 0xFFFFFFFF) ^ np.maximum(ux, uy),
        quot,
        np.where(y == 0, 0, x - quot * nz),
        x >> sh,
        ux >> sh,
        np.abs(x),
    ]
    for k, e in enumerate(expect):
        assert (out[:, k] == _wrap32(np.asarray(e))).all(), (k, out[:8, k], _wrap32(e)[:8])


def test_float_builtins_and_vectors(gpu: ar.Backend, module: ar.Module) -> None:
    rng = np.random.default_rng(5)
    n = 64
    a = (rng.standard_normal(n) * 4).astype(np.float32)
    b = (rng.standard_normal(n) * 4).astype(np.float32)
    a[:3] = [3.0, 1e30, -1e30]
    b[:3] = [0.75, 2.2, -0.3]
    _, _, out, iout, dout = run(
        gpu, module, "float_math", 1, 64,
        [a, b, np.zeros(12 * n, np.float32), np.zeros(2 * n, np.int32), np.zeros(n, np.float64)],
    )  # fmt: skip
    out = out.reshape(n, 12)
    x, y = a.astype(np.float64), b.astype(np.float64)
    xy, x_y = (x * y).astype(np.float32), (x - y).astype(np.float32)
    w = [2 * x + 1, 2 * y + 2, 2 * xy + 3, 2 * x_y + 4]
    expect = [
        x * y + 1,
        np.fmod(x, y),
        np.copysign(x, y),
        np.floor(x) + np.ceil(y),
        w[0] + w[1] * w[2] - w[3],
        x * xy + y * x_y,
        x + (y - x) * 0.25,
        np.where(y < x, 0.0, 1.0) + np.sign(x),
        np.maximum(x, y) - np.minimum(x, y),
        np.where(x < y, y, x),
        np.trunc(x) + np.trunc(y + np.copysign(0.5, y)),
        np.sqrt(np.abs(x)) + np.exp(-np.abs(y)),
    ]
    for k, e in enumerate(expect):
        with np.errstate(over="ignore"):  # the 1e30 inputs overflow float32, in the kernel too
            ref = np.asarray(e).astype(np.float32)
        np.testing.assert_allclose(out[:, k], ref, rtol=2e-6, atol=1e-6)
    with np.errstate(over="ignore"):  # 1e30 * 1e9 is inf in float32: saturates
        scaled = (a * np.float32(1e9)).astype(np.float64)
    sat = np.clip(np.trunc(scaled), -(2**31), 2**31 - 1)
    assert (iout[0::2] == sat.astype(np.int64)).all()
    assert (iout[1::2] == np.rint((b * np.float32(2.5)).astype(np.float32))).all()
    assert (dout == x * y + 1.0 / 3.0).all()


def _reset_device() -> None:
    _simhooks.hooks().arze_sim_clear_faults()


def test_an_access_outside_every_allocation_poisons_the_device(
    gpu: ar.Backend, module: ar.Module
) -> None:
    y = gpu.alloc(64)
    try:
        gpu.launch(gpu.kernel(module, "poke"), 1, 16, [y, i64(15)]).wait()  # in bounds
        bad = gpu.launch(gpu.kernel(module, "poke"), 1, 16, [y, i64(16)])  # one past the end
        with pytest.raises(DeviceLostError):
            bad.wait()
    finally:
        _reset_device()
        gpu.free(y)


def test_a_barrier_only_some_work_items_reach_fails_the_launch(
    gpu: ar.Backend, module: ar.Module
) -> None:
    y = gpu.alloc(4 * 64)
    try:
        bad = gpu.launch(gpu.kernel(module, "divergent_barrier"), 1, 64, [y])
        with pytest.raises(DriverError) as info:
            bad.wait()
        assert not isinstance(info.value, DeviceLostError)
        # Not sticky: the device goes on working.
        gpu.launch(gpu.kernel(module, "local_reverse"), 1, 64, [y, y])
        gpu.synchronize().wait()
    finally:
        gpu.free(y)


@pytest.mark.parametrize(
    ("image", "names"),
    [
        ("refused_printf.spv", "printf"),
        ("refused_image.spv", "ImageBasic"),
    ],
)
def test_unsupported_constructs_are_refused_with_a_build_log(
    gpu: ar.Backend, image: str, names: str
) -> None:
    with pytest.raises(DriverError, match="MODULE_BUILD_FAILURE") as info:
        gpu.load_module(image, (HERE / image).read_bytes())
    assert names in str(info.value)
    assert "at word" in str(info.value)


def test_a_truncated_module_is_an_invalid_binary(gpu: ar.Backend) -> None:
    data = (HERE / "executor_O0.spv").read_bytes()
    words = np.frombuffer(data, dtype="<u4")
    at = 5  # after the header: cut one word into the first long instruction past the middle
    while at < words.size // 2 or int(words[at]) >> 16 < 3:
        at += int(words[at]) >> 16
    with pytest.raises(DriverError, match="INVALID_NATIVE_BINARY") as info:
        gpu.load_module("cut", data[: 4 * (at + 1)])
    assert "truncated" in str(info.value)


def test_vload_vstore_halves_and_a_char_switch(gpu: ar.Backend, module: ar.Module) -> None:
    n = 64
    rng = np.random.default_rng(6)
    x = rng.standard_normal(4 * n).astype(np.float32)
    hx = (rng.standard_normal(n) * 100).astype(np.float16)
    hx[:4] = [np.inf, -0.0, 6e-8, 65504]
    args = [x, np.zeros_like(x), hx, np.zeros_like(hx), np.zeros(n, np.int32)]
    _, y, _, hy, sw = run(gpu, module, "vectors_and_halves", 1, n, args)
    assert (y == x * 2 + np.tile(np.arange(4, dtype=np.float32), n)).all()
    with np.errstate(over="ignore"):  # 65504 * 3 rounds to inf in half, as in the kernel
        assert (
            hy.view(np.uint16) == (hx.astype(np.float32) * 3).astype(np.float16).view(np.uint16)
        ).all()
    c = np.arange(n) % 5 - 2
    assert (sw == np.select([c == -2, c == -1, c == 1], [100, 200, 300], c)).all()


def test_a_sub_group_collective_before_a_work_group_one(gpu: ar.Backend, module: ar.Module) -> None:
    group = 48
    x = np.arange(2 * group, dtype=np.int32)
    _, out = run(gpu, module, "mixed_collectives", 2, group, [x, np.zeros_like(x)])
    for g in range(2):
        v = x[g * group : (g + 1) * group].copy()
        v[16:32] = v[16:32].sum()
        assert (out[g * group : (g + 1) * group] == v.sum()).all()

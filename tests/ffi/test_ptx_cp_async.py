"""cp.async, commit_group, wait_group and wait_all on cuda-sim (issue 30).

Hand-written PTX per form, checked against numpy: each lane copies cp-size
bytes (4, 8 or 16; ``.ca`` or ``.cg``) from global to shared memory, the
first src-size of them from the source and the rest zeros (none with
``ignore-src`` true, when the source address is not even read), and after
the wait and a barrier its neighbour reads them back.

cuda-sim performs a copy only when a wait completes its group, and a read
or write of a destination no wait has completed fails the launch, naming
both lines: a kernel that forgets a wait never works by accident.  Triton's
pipelined kernels, which chain these, are in test_ptx_triton_corpus.py.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import aruntime as ar
from aruntime import DriverError

RNG = np.random.default_rng(81)
_SERIAL = itertools.count()
HEAD = ".version 8.0\n.target sm_80\n.address_size 64\n"


@pytest.fixture(scope="module")
def gpu() -> Iterator[ar.Backend]:
    with ar.open_backend("cuda-sim") as backend:
        yield backend


KERNEL = """.visible .entry cpa(.param .u64 src, .param .u64 out, .param .u64 sizes)
{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<16>;
    .shared .align 16 .b8 buf[1024];
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [out];
    ld.param.u64 %rd3, [sizes];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd4, %r1, SIZE;
    add.s64 %rd5, %rd1, %rd4;
    mul.wide.u32 %rd6, %r1, 4;
    add.s64 %rd7, %rd3, %rd6;
    ld.global.u32 %r2, [%rd7];
    setp.eq.u32 %p1, %r2, 0;
    selp.b64 %rd5, 0, %rd5, %p1;
    mov.u32 %r3, buf;
    mul.lo.u32 %r4, %r1, SIZE;
    add.u32 %r5, %r3, %r4;
    COPY
    WAIT
    bar.sync 0;
    xor.b32 %r6, %r1, 1;
    mul.lo.u32 %r7, %r6, SIZE;
    add.u32 %r8, %r3, %r7;
    mul.wide.u32 %rd8, %r6, SIZE;
    add.s64 %rd9, %rd2, %rd8;
READBACK
    ret;
}
"""


WAIT0 = "cp.async.commit_group;\n    cp.async.wait_group 0;"


def _kernel(copy: str, size: int, wait: str = WAIT0) -> str:
    readback = "".join(
        f"    ld.shared.b32 %r9, [%r8+{4 * k}];\n    st.global.b32 [%rd9+{4 * k}], %r9;\n"
        for k in range(size // 4)
    )
    return (
        KERNEL.replace("COPY", copy)
        .replace("WAIT", wait)
        .replace("READBACK", readback)
        .replace("SIZE", str(size))
    )


def _run(gpu: ar.Backend, ptx: str, src: np.ndarray[Any, Any], sizes: np.ndarray[Any, Any]) -> Any:
    module = gpu.load_module(f"cpa-{next(_SERIAL)}", HEAD + ptx)
    out = np.full_like(src, 0xEE)
    ptrs = [gpu.alloc(a.nbytes) for a in (src, out, sizes)]
    try:
        for p, a in zip(ptrs, (src, out, sizes), strict=True):
            gpu.copy_h2d(a, p)
        gpu.launch(gpu.kernel(module, "cpa"), 1, 32, ptrs).wait()
        return gpu.copy_d2h(ptrs[1], np.empty_like(out))
    finally:
        for p in ptrs:
            gpu.free(p)


def _want(src: np.ndarray[Any, Any], sizes: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    want = src.copy()
    for lane, n in enumerate(sizes):
        want[lane, n:] = 0
    return want


@pytest.mark.parametrize(("level", "size"), [("ca", 4), ("ca", 8), ("ca", 16), ("cg", 16)])
@pytest.mark.parametrize("form", ["plain", "src-size", "ignore-src"])
def test_cp_async_copies_and_zero_fills(gpu: ar.Backend, level: str, size: int, form: str) -> None:
    src = RNG.integers(1, 255, (32, size), dtype=np.uint8)
    opcode = f"cp.async.{level}.shared.global [%r5], [%rd5], {size}"
    if form == "plain":
        sizes = np.full(32, size, np.uint32)
        copy = f"{opcode};"
    elif form == "src-size":
        sizes = RNG.integers(0, size + 1, 32).astype(np.uint32)
        sizes[:3] = [0, size, 1]
        copy = f"{opcode}, %r2;"
    else:
        sizes = RNG.choice([0, size], 32).astype(np.uint32)
        sizes[:2] = [0, size]
        copy = f"{opcode}, %p1;"  # ignore-src: the lanes whose size is 0 (and src null)
    got = _run(gpu, _kernel(copy, size), src, sizes)
    assert (got == _want(src, sizes)).all()


def test_wait_all_commits_and_completes(gpu: ar.Backend) -> None:
    src = RNG.integers(1, 255, (32, 16), dtype=np.uint8)
    sizes = np.full(32, 16, np.uint32)
    ptx = _kernel("cp.async.cg.shared.global [%r5], [%rd5], 16;", 16, "cp.async.wait_all;")
    assert (_run(gpu, ptx, src, sizes) == src).all()


def _line(ptx: str, text: str) -> int:
    return (HEAD + ptx).splitlines().index(f"    {text}") + 1


@pytest.mark.parametrize(
    "wait",
    [
        "",  # no wait at all
        "cp.async.wait_group 0;",  # nothing committed: the copy is in no group
        "cp.async.commit_group;\n    cp.async.wait_group 1;",  # the newest group may be pending
    ],
)
def test_reading_a_pending_destination_fails_the_launch_naming_both_lines(
    gpu: ar.Backend, capfd: Any, wait: str
) -> None:
    copy = "cp.async.ca.shared.global [%r5], [%rd5], 4;"
    ptx = _kernel(copy, 4, wait)
    src = np.ones((32, 4), np.uint8)
    with pytest.raises(DriverError, match="LAUNCH_FAILED"):
        _run(gpu, ptx, src, np.full(32, 4, np.uint32))
    err = capfd.readouterr().err
    read = _line(ptx, "ld.shared.b32 %r9, [%r8+0];")
    assert (
        f"ptx line {read}: ld reads shared memory at offset 4, the destination of the "
        f"cp.async of ptx line {_line(ptx, copy)}, before a cp.async.wait_group or wait_all "
        "completed that copy"
    ) in err


def test_wait_group_completes_all_but_the_newest_groups(gpu: ar.Backend, capfd: Any) -> None:
    """Two groups; wait_group 1 completes the first (read back right), while the
    second's destination is still pending (its read fails the launch)."""
    copies = (
        "cp.async.ca.shared.global [%r5], [%rd5], 4;\n    cp.async.commit_group;\n"
        "    cp.async.ca.shared.global [%r5+512], [%rd5], 4;\n    cp.async.commit_group;"
    )
    src = RNG.integers(1, 255, (32, 4), dtype=np.uint8)
    sizes = np.full(32, 4, np.uint32)
    ok = _kernel(copies, 4, "cp.async.wait_group 1;")
    assert (_run(gpu, ok, src, sizes) == src).all()
    late = ok.replace("[%r8+0]", "[%r8+512]")
    with pytest.raises(DriverError, match="LAUNCH_FAILED"):
        _run(gpu, late, src, sizes)
    second = _line(late, "cp.async.ca.shared.global [%r5+512], [%rd5], 4;")
    want = f"the cp.async of ptx line {second}"
    assert want in capfd.readouterr().err


def test_a_store_to_a_pending_destination_fails(gpu: ar.Backend, capfd: Any) -> None:
    copy = "cp.async.ca.shared.global [%r5], [%rd5], 4;\n    st.shared.b32 [%r5], %r1;"
    with pytest.raises(DriverError, match="LAUNCH_FAILED"):
        _run(gpu, _kernel(copy, 4), np.ones((32, 4), np.uint8), np.full(32, 4, np.uint32))
    assert "st writes shared memory at offset 0" in capfd.readouterr().err


def test_overlapping_pending_copies_fail(gpu: ar.Backend, capfd: Any) -> None:
    """Two copies in flight to one destination: their order is undefined."""
    one = "cp.async.ca.shared.global [%r5], [%rd5], 4;"
    copy = f"{one}\n    {one}"
    with pytest.raises(DriverError, match="LAUNCH_FAILED"):
        _run(gpu, _kernel(copy, 4), np.ones((32, 4), np.uint8), np.full(32, 4, np.uint32))
    assert "cp.async writes shared memory at offset 0" in capfd.readouterr().err


def test_src_size_over_cp_size_fails(gpu: ar.Backend, capfd: Any) -> None:
    copy = "cp.async.ca.shared.global [%r5], [%rd5], 4, %r2;"
    with pytest.raises(DriverError, match="LAUNCH_FAILED"):
        _run(gpu, _kernel(copy, 4), np.ones((32, 4), np.uint8), np.full(32, 5, np.uint32))
    assert "cp.async's src-size 5 is over its cp-size 4" in capfd.readouterr().err


@pytest.mark.parametrize(
    ("copy", "message"),
    [
        ("cp.async.cg.shared.global [%r5], [%rd5], 4;", "cp-size must be 4, 8 or 16 (.cg: 16)"),
        ("cp.async.ca.shared.global [%r5], [%rd5], 2;", "cp-size must be 4, 8 or 16 (.cg: 16)"),
        ("cp.async.ca.shared.global [%r5], [%rd5], %r2;", "cp-size must be 4, 8 or 16 (.cg: 16)"),
        (
            "cp.async.bulk.shared::cluster.global [%r5], [%rd5], 16;",
            "unsupported instruction 'cp.async.bulk.shared::cluster.global'",
        ),
        ("cp.async.ca.global.shared [%r5], [%rd5], 4;", "unsupported instruction"),
    ],
)
def test_other_forms_are_refused_at_load(gpu: ar.Backend, copy: str, message: str) -> None:
    ptx = _kernel(copy, 4)
    with pytest.raises(DriverError, match="CUDA_ERROR_INVALID_PTX") as info:
        gpu.load_module(f"bad-{next(_SERIAL)}", HEAD + ptx)
    assert f"ptx line {_line(ptx, copy)}: " in str(info.value)
    assert message in str(info.value)


def test_cache_hints_change_nothing(gpu: ar.Backend) -> None:
    """.L2::128B (a prefetch size) and .L2::cache_hint with its cache-policy operand."""
    src = RNG.integers(1, 255, (32, 16), dtype=np.uint8)
    sizes = RNG.integers(0, 17, 32).astype(np.uint32)
    copy = "cp.async.cg.shared.global.L2::cache_hint.L2::128B [%r5], [%rd5], 16, %r2, %rd1;"
    assert (_run(gpu, _kernel(copy, 16), src, sizes) == _want(src, sizes)).all()

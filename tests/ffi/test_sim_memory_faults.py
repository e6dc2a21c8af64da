"""Kernels that touch memory outside their buffers: as on a GPU, not a crash.

Each case runs in a fresh process, where a segfault (at the fault or at
exit) shows as a signal exit code and "Fatal Python error" on stderr.

- On the software drivers, saxpy with ``n = 4*N`` or ``n = N + 4096`` on
  N-float buffers fails its op with the sticky illegal-address error: every
  awaiter gets DeviceLostError, later ops fail fast, another backend opened
  afterwards works, and the process exits 0.  The mock does the same, from
  its bounds-checked views.
- ``ARUNTIME_SIM_SANITIZE=1`` catches a one-element overrun (which without it
  lands in the buffer's last page and passes, as on hardware) and a kernel
  using freed memory; the error names the kernel, the address, the
  allocation and the offset.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

BACKENDS = ["mock", "cuda-sim", "levelzero-sim"]

SAXPY = textwrap.dedent(
    """
    import sys
    import anyio
    import numpy as np
    import aruntime as ar

    backend, N, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

    async def main() -> None:
        try:
            async with ar.open_backend(backend) as gpu:
                x, y = gpu.alloc(N * 4), gpu.alloc(N * 4)
                s = gpu.create_stream()
                gpu.copy_h2d(np.ones(N, np.float32), x)
                saxpy = gpu.kernel(gpu.builtin_module("vector_ops"), "saxpy")
                try:
                    gpu.launch(saxpy, (n + 255) // 256, 256,
                               [np.uint32(n), np.float32(2), x, y], stream=s)
                    await s.synchronize()
                    print("FIRST ok")
                except ar.AruntimeError as e:
                    print("FIRST", type(e).__name__, e)
                try:
                    await gpu.copy_d2h_async(y, np.empty(N, np.float32), stream=s)
                    print("LATER ok")
                except ar.AruntimeError as e:
                    print("LATER", type(e).__name__)
        except ar.AruntimeError as e:  # close reports errors nobody awaited
            print("CLOSE", type(e).__name__)
        async with ar.open_backend("mock") as other:
            p = other.alloc(64)
            other.copy_h2d(np.arange(16, dtype=np.float32), p)
            other.free(p)
        print("OTHER ok")

    anyio.run(main)
    """
)


def _run(
    script: str, *args: str, sanitize: bool = False, host_kernels: bool = False
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONFAULTHANDLER="1")
    env.pop("ARUNTIME_SIM_SANITIZE", None)
    if sanitize:
        env["ARUNTIME_SIM_SANITIZE"] = "1"
    if host_kernels:
        # The host builds access memory directly: the case the guard pages
        # are for (the PTX and SPIR-V interpreters check each access).
        env["ARUNTIME_SIM_KERNELS"] = "host"
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )


def _check_survived(proc: subprocess.CompletedProcess[str]) -> list[str]:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Fatal Python error" not in proc.stderr, proc.stderr
    assert "Segmentation fault" not in proc.stderr, proc.stderr
    lines = proc.stdout.splitlines()
    assert "OTHER ok" in lines, proc.stdout
    return lines


@pytest.mark.parametrize("kernels", ["default", "host"])
@pytest.mark.parametrize("overrun", ["4x", "+4096"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_overrunning_kernel_fails_its_op(backend: str, overrun: str, kernels: str) -> None:
    if backend == "mock" and kernels == "host":
        pytest.skip("the mock has one kind of kernel")
    n_floats = 1 << 16
    n = 4 * n_floats if overrun == "4x" else n_floats + 4096
    proc = _run(SAXPY, backend, str(n_floats), str(n), host_kernels=kernels == "host")
    lines = _check_survived(proc)
    first = next(line for line in lines if line.startswith("FIRST"))
    # A GPU's illegal address: sticky, so the awaiter and every later op
    # fail, on the mock as on the software drivers.
    assert first.startswith("FIRST DeviceLostError"), lines
    if backend == "mock":
        assert "out-of-bounds" in first and "saxpy" in first, first
    else:
        assert "saxpy" in first and "past its end" in first, first
    assert "LATER DeviceLostError" in lines, lines


@pytest.mark.parametrize("backend", ["cuda-sim", "levelzero-sim"])
def test_sanitizer_catches_a_one_element_overrun(backend: str) -> None:
    n_floats = 1000  # 4000 bytes: the overrun stays inside the last page
    args = (backend, str(n_floats), str(n_floats + 1))
    plain = _check_survived(_run(SAXPY, *args, host_kernels=True))
    assert "FIRST ok" in plain, plain  # unseen without the sanitizer, as on hardware
    proc = _run(SAXPY, *args, sanitize=True, host_kernels=True)
    lines = _check_survived(proc)
    first = next(line for line in lines if line.startswith("FIRST"))
    assert first.startswith("FIRST DeviceLostError"), lines
    # The kernel, the address, the allocation and the offset.
    for part in ("kernel saxpy", "at 0x", "offset 4000 of the allocation 0x", "(4000 bytes)"):
        assert part in first, first
    assert "aruntime sim sanitizer: kernel saxpy" in proc.stderr, proc.stderr


USE_AFTER_FREE = textwrap.dedent(
    """
    import sys
    import cffi
    sys.path.insert(0, sys.argv[1])
    from _cudasim_support import ffi, host_kernels_path, sim_library_path

    ffi.cdef('''
    typedef struct arsim_fault_info {
        uint64_t address; uint64_t alloc_base; uint64_t alloc_size; int64_t offset;
        int32_t device; int32_t access; int32_t freed; int32_t size; char kernel[128];
    } arsim_fault_info;
    int arsim_last_fault(arsim_fault_info *out);
    int arsim_fault_report(char *buf, size_t n);
    ''')
    lib = ffi.dlopen(str(sim_library_path()))
    assert lib.cuInit(0) == 0
    ctx = ffi.new("CUcontext *")
    assert lib.cuDevicePrimaryCtxRetain(ctx, 0) == 0
    assert lib.cuCtxSetCurrent(ctx[0]) == 0
    p = ffi.new("CUdeviceptr *")
    assert lib.cuMemAlloc_v2(p, 4000) == 0
    x = p[0]
    assert lib.cuMemAlloc_v2(p, 4000) == 0
    y = p[0]
    assert lib.cuMemFree_v2(y) == 0
    image = host_kernels_path().read_bytes()
    mod = ffi.new("CUmodule *")
    assert lib.cuModuleLoadData(mod, ffi.from_buffer(image)) == 0
    fn = ffi.new("CUfunction *")
    assert lib.cuModuleGetFunction(fn, mod[0], b"saxpy") == 0
    keep = [ffi.new("unsigned int *", 1000), ffi.new("float *", 2.0),
            ffi.new("CUdeviceptr *", x), ffi.new("CUdeviceptr *", y)]
    params = ffi.new("void *[]", [ffi.cast("void *", k) for k in keep])
    assert lib.cuLaunchKernel(fn[0], 8, 1, 1, 128, 1, 1, 0, ffi.NULL, params, ffi.NULL) == 0
    print("sync", lib.cuCtxSynchronize())
    info = ffi.new("arsim_fault_info *")
    assert lib.arsim_last_fault(info) == 1
    print("freed", info.freed, "base", info.alloc_base == y, "offset", info.offset)
    buf = ffi.new("char[512]")
    lib.arsim_fault_report(buf, 512)
    print(ffi.string(buf).decode())
    """
)


def test_sanitizer_catches_use_after_free() -> None:
    proc = _run(USE_AFTER_FREE, str(Path(__file__).parent), sanitize=True)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "sync 700", lines  # CUDA_ERROR_ILLEGAL_ADDRESS
    # Blocks run side by side (over the cores), so whichever faults first
    # is reported: some offset inside the freed 4000-byte allocation.
    freed, offset = lines[1].rsplit(" offset ", 1)
    assert freed == "freed 1 base True", lines
    assert 0 <= int(offset) < 4000 and int(offset) % 4 == 0, lines
    assert "kernel saxpy" in lines[2] and "use after free" in lines[2], lines


OUTSIDE_KERNEL = textwrap.dedent(
    """
    import ctypes
    import anyio
    import numpy as np
    import aruntime as ar

    async def main() -> None:
        async with ar.open_backend("cuda-sim") as gpu:
            y = gpu.alloc(4096)
            s = gpu.create_stream()
            saxpy = gpu.kernel(gpu.builtin_module("vector_ops"), "saxpy")
            gpu.launch(saxpy, 4, 256, [np.uint32(1024), np.float32(2), y, y], stream=s)
            await s.synchronize()  # the engine's fault handler is installed now
            print("kernel ok", flush=True)
            ctypes.string_at(1)  # a fault in Python code, on the main thread

    anyio.run(main)
    """
)


def test_faults_outside_kernels_still_crash() -> None:
    """The engine's handler passes other faults on (here to faulthandler): no hang, no hiding."""
    proc = _run(OUTSIDE_KERNEL)
    assert proc.stdout.splitlines() == ["kernel ok"], proc.stdout
    assert proc.returncode == -11, (proc.returncode, proc.stderr)  # SIGSEGV
    assert "Fatal Python error: Segmentation fault" in proc.stderr, proc.stderr


REUSED_BLOCK_OVERRUN = textwrap.dedent(
    """
    import anyio
    import numpy as np
    import aruntime as ar

    async def main() -> None:
        try:
            async with ar.open_backend("cuda-sim") as gpu:
                s = gpu.create_stream()
                big = gpu.alloc_async(1 << 20, s)
                gpu.free_async(big, s)
                await s.synchronize()
                x = gpu.alloc_async(4000, s)  # the pool's idle 1 MiB block, fitted to 4000
                y = gpu.alloc_async(8000, s)
                print("REUSED", int(x) in range(int(big), int(big) + (1 << 20)))
                print("X", hex(int(x)))
                gpu.copy_h2d(np.ones(1000, np.float32), x)
                saxpy = gpu.kernel(gpu.builtin_module("vector_ops"), "saxpy")
                try:
                    gpu.launch(saxpy, 4, 256, [np.uint32(1001), np.float32(2), x, y], stream=s)
                    await s.synchronize()
                    print("FIRST ok")
                except ar.AruntimeError as e:
                    print("FIRST", type(e).__name__, e)
        except ar.AruntimeError as e:
            print("CLOSE", type(e).__name__)
        async with ar.open_backend("mock") as other:
            other.free(other.alloc(64))
        print("OTHER ok")

    anyio.run(main)
    """
)


def test_sanitizer_catches_an_overrun_of_a_reused_pool_block() -> None:
    """A pool block reused for a smaller request faults one byte past the request."""
    plain = _check_survived(_run(REUSED_BLOCK_OVERRUN, host_kernels=True))
    assert "REUSED True" in plain and "FIRST ok" in plain, plain  # in the last page: unseen
    proc = _run(REUSED_BLOCK_OVERRUN, sanitize=True, host_kernels=True)
    lines = _check_survived(proc)
    assert "REUSED True" in lines, lines
    x = next(line for line in lines if line.startswith("X ")).split()[1]
    first = next(line for line in lines if line.startswith("FIRST"))
    assert first.startswith("FIRST DeviceLostError"), lines
    assert f"offset 4000 of the allocation {x} (4000 bytes)" in first, first

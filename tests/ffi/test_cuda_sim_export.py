"""NVRTC runs in a process where cuda-sim is ``libcuda.so.1``.

libnvrtc dlopens ``libcuda.so.1`` and asks it for cuInit and
cuGetExportTable (a private-interface lookup by UUID).  cuda-sim answers
every such lookup with CUDA_ERROR_NOT_SUPPORTED (cusim_export.c); before it
exported the symbol, every nvrtcCompileProgram crashed on a NULL call.
The compiles run in subprocesses, so that a crash fails one test instead of
killing the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import cffi
import pytest
from _cudasim_support import CUDA_ERROR_INVALID_VALUE, CUDA_SUCCESS, ffi, load_sim, sim_library_path

CUDA_ERROR_NOT_SUPPORTED = 801
# The one table libnvrtc 13.x asks for; any UUID gets the same answer.
NVRTC_TABLE_UUID = bytes.fromhex("da9151d33ae6cc41a5c04f26d533e328")

ROOT = Path(__file__).resolve().parents[2]


def _needs_nvrtc() -> None:
    pytest.importorskip("cuda.bindings.nvrtc", reason="pip install cuda-bindings")
    from cuda.bindings import nvrtc

    try:
        err, *_ = nvrtc.nvrtcVersion()
    except Exception as error:  # the binding raises when libnvrtc is missing
        pytest.skip(f"libnvrtc is not installed (pip install nvidia-cuda-nvrtc): {error}")
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        pytest.skip(f"nvrtcVersion failed: {err}")


def test_every_export_table_is_not_supported() -> None:
    load_sim()  # built and initialised
    export = cffi.FFI()
    export.cdef("int cuGetExportTable(const void **, const unsigned char *);")
    lib = export.dlopen(str(sim_library_path()))
    table = export.new("const void **", export.cast("void *", 0x1234))
    for raw in (NVRTC_TABLE_UUID, bytes(16), bytes(range(16))):
        uuid = export.new("unsigned char[16]", raw)
        assert lib.cuGetExportTable(table, uuid) == CUDA_ERROR_NOT_SUPPORTED
        assert table[0] == export.NULL  # never a stale pointer someone could call
    uuid = export.new("unsigned char[16]", NVRTC_TABLE_UUID)
    assert lib.cuGetExportTable(export.NULL, uuid) == CUDA_ERROR_INVALID_VALUE
    assert lib.cuGetExportTable(table, export.NULL) == CUDA_ERROR_INVALID_VALUE


def test_get_proc_address_finds_get_export_table() -> None:
    lib = load_sim()
    pfn = ffi.new("void **")
    assert lib.cuGetProcAddress(b"cuGetExportTable", pfn, 13000, 0) == CUDA_SUCCESS
    assert pfn[0] != ffi.NULL


COMPILE = """
import ctypes, sys
{load}
from cuda.bindings import nvrtc

def check(result):
    err, *rest = result
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise SystemExit(f"{{err}}")
    return rest

src = b'''
extern "C" __global__ void twice(float *x, int n) {{
    __shared__ float tile[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) x[i] = 2.0f * tile[threadIdx.x];
}}
'''
(prog,) = check(nvrtc.nvrtcCreateProgram(src, b"twice.cu", 0, [], []))
status = nvrtc.nvrtcCompileProgram(prog, 1, [b"-arch=compute_80"])
(size,) = check(nvrtc.nvrtcGetProgramLogSize(prog))
log = bytearray(size)
check(nvrtc.nvrtcGetProgramLog(prog, log))
check(status)
(size,) = check(nvrtc.nvrtcGetPTXSize(prog))
ptx = bytearray(size)
check(nvrtc.nvrtcGetPTX(prog, ptx))
# Which libcuda.so.1 this process holds: there must be exactly one.
maps = {{line.split()[-1] for line in open("/proc/self/maps") if "libcuda.so" in line}}
print(len(ptx), *sorted(maps))
"""


def _compile_in_subprocess(load: str, env: dict[str, str]) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", COMPILE.format(load=textwrap.dedent(load))],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout.split()


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), **extra)
    env.pop("ARUNTIME_SIM_CUINIT_RESULT", None)
    return env


def test_nvrtc_compiles_beside_aruntimes_sim() -> None:
    _needs_nvrtc()
    load = """
    import aruntime as ar
    gpu = ar.open_backend("cuda-sim")  # loads cuda-sim as libcuda.so.1
    """
    size, *libs = _compile_in_subprocess(load, _env())
    assert int(size) > 100
    assert libs == [str(sim_library_path().resolve())]


def test_nvrtc_finds_the_sim_by_library_path() -> None:
    _needs_nvrtc()
    # No aruntime import: libnvrtc's own dlopen("libcuda.so.1") finds the sim.
    sim_dir = str(sim_library_path().resolve().parent)
    path = os.pathsep.join(p for p in (sim_dir, os.environ.get("LD_LIBRARY_PATH")) if p)
    size, *libs = _compile_in_subprocess("", _env(LD_LIBRARY_PATH=path))
    assert int(size) > 100
    assert libs == [str(sim_library_path().resolve())]


def test_nvrtc_compiles_when_the_sims_cuinit_fails() -> None:
    _needs_nvrtc()
    # A driver that cannot initialise must not break compilation, which
    # needs no device: libnvrtc ignores cuInit's answer.
    sim_dir = str(sim_library_path().resolve().parent)
    env = _env(LD_LIBRARY_PATH=sim_dir)
    env["ARUNTIME_SIM_CUINIT_RESULT"] = "100"  # CUDA_ERROR_NO_DEVICE
    size, *_ = _compile_in_subprocess("", env)
    assert int(size) > 100

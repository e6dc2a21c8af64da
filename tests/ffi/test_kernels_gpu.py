"""The committed PTX runs, with the right numbers: through cuda-bindings on the
sim (always), and on a real GPU when one is present (the gpu marker)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from _cudasim_support import sim_library_path

pytest.importorskip("cuda.bindings.driver", reason="cuda-bindings is not installed")

ROOT = Path(__file__).resolve().parents[2]
PTX = ROOT / "aruntime" / "kernels" / "vector_ops.ptx"
SCRIPT = Path(__file__).with_name("run_ptx_saxpy.py")


def _run(*extra: str, env: dict[str, str] | None = None) -> str:
    # A fresh process: this one may already have the sim as its libcuda.so.1.
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(PTX), *extra],
        capture_output=True,
        text=True,
        timeout=120,
        env=None if env is None else {**os.environ, **env},
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout.strip()


def test_ptx_saxpy_through_cuda_bindings_on_the_sim() -> None:
    assert _run(str(sim_library_path())) == "OK"


def test_kernel_blocks_split_over_threads() -> None:
    env = {"ARUNTIME_SIM_KERNEL_THREADS": "4"}
    assert _run(str(sim_library_path()), env=env) == "OK"


@pytest.mark.gpu
def test_ptx_saxpy_on_a_real_gpu() -> None:
    out = _run()
    if out == "NOGPU":
        pytest.skip("no CUDA device here")
    assert out == "OK"

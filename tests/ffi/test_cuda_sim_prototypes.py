"""cuda-sim's exported prototypes agree with the real cuda.h, where it exists."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CUDA_INCLUDE = Path("/usr/local/cuda/include")


NEEDS_CUDA_H = pytest.mark.skipif(
    not (CUDA_INCLUDE / "cuda.h").exists() or shutil.which("cc") is None,
    reason="no /usr/local/cuda/include/cuda.h here (the CUDA backend's own check covers CI)",
)


def _compile(tmp_path: Path, prelude: str, block: str) -> None:
    src = tmp_path / "check.c"
    # cudaProfiler.h declares cuProfilerStart/cuProfilerStop, which cuda.h does not.
    src.write_text(
        prelude + "#include <cuda.h>\n#include <cudaProfiler.h>\n#define CUSIM_API\n" + block
    )
    proc = subprocess.run(
        ["cc", "-std=gnu11", "-fsyntax-only", "-Werror", f"-I{CUDA_INCLUDE}", str(src)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr


@NEEDS_CUDA_H
def test_sim_prototypes_match_cuda_h(tmp_path: Path) -> None:
    header = (ROOT / "ffi" / "cuda" / "sim" / "cusim.h").read_text()
    start = header.index("#define P CUSIM_API CUresult CUDAAPI")
    # cuda.h renames unversioned names with macros; the internal switch also
    # declares the legacy entry points (cuEventElapsedTime, cuCtxCreate_v2,
    # ...), so every sim prototype meets its real declaration.
    _compile(
        tmp_path,
        "#define __CUDA_API_VERSION_INTERNAL 1\n",
        header[start : header.index("#undef P")],
    )


@NEEDS_CUDA_H
def test_per_thread_stream_variants_match_cuda_h(tmp_path: Path) -> None:
    header = (ROOT / "ffi" / "cuda" / "sim" / "cusim.h").read_text()
    start = header.index("/* Per-thread-default-stream variants")
    # With this switch cuda.h declares the _ptsz/_ptds names.
    _compile(
        tmp_path,
        "#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1\n",
        header[start : header.index("#endif /* CUSIM_H */")],
    )

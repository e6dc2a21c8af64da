"""cuda-sim's exported prototypes agree with the real cuda.h, where it exists."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CUDA_INCLUDE = Path("/usr/local/cuda/include")


@pytest.mark.skipif(
    not (CUDA_INCLUDE / "cuda.h").exists() or shutil.which("cc") is None,
    reason="no /usr/local/cuda/include/cuda.h here (the CUDA backend's own check covers CI)",
)
def test_sim_prototypes_match_cuda_h(tmp_path: Path) -> None:
    header = (ROOT / "ffi" / "cuda" / "sim" / "cusim.h").read_text()
    start = header.index("#define P CUSIM_API CUresult CUDAAPI")
    block = header[start : header.index("#undef P")]
    src = tmp_path / "check.c"
    # cuda.h renames unversioned names with macros; the internal switch also
    # declares the legacy entry points (cuEventElapsedTime, cuCtxCreate_v2,
    # ...), so every sim prototype meets its real declaration.
    src.write_text(
        "#define __CUDA_API_VERSION_INTERNAL 1\n#include <cuda.h>\n#define CUSIM_API\n" + block
    )
    proc = subprocess.run(
        ["cc", "-std=gnu11", "-fsyntax-only", "-Werror", f"-I{CUDA_INCLUDE}", str(src)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr

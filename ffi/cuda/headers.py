"""Find the real ``cuda.h``, to check aruntime's cffi declarations against it.

Only tests and build checks use this; the binding itself needs no header.

Search order: ``$CUDA_HOME``/``$CUDA_PATH``, ``/usr/local/cuda``, then the
headers that NVIDIA's pip packages ship (``nvidia-cuda-runtime`` for CUDA 12
and 13 put ``cuda.h`` under ``site-packages/nvidia/.../include``).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

__all__ = ["find_cuda_include"]


def _pip_include_dirs() -> list[Path]:
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    if spec is None or spec.submodule_search_locations is None:
        return []
    found: list[Path] = []
    for root in spec.submodule_search_locations:
        found.extend(sorted(p.parent for p in Path(root).glob("*/include/cuda.h")))
        found.extend(sorted(p.parent for p in Path(root).glob("*/*/include/cuda.h")))
    return found


def find_cuda_include() -> Path | None:
    """The directory holding ``cuda.h``, or None when there is none here."""
    candidates = [
        Path(os.environ[name]) / "include"
        for name in ("CUDA_HOME", "CUDA_PATH")
        if os.environ.get(name)
    ]
    candidates.append(Path("/usr/local/cuda/include"))
    candidates.extend(_pip_include_dirs())
    for candidate in candidates:
        if (candidate / "cuda.h").is_file():
            return candidate
    return None


if __name__ == "__main__":
    print(find_cuda_include())

"""The software drivers' shared engine, and the software CUDA driver built on it.

libcuda.so.1 (soname libcuda.so.1) is the engine (ffi/sim) plus the CUDA front
end (ffi/cuda/sim).  The Level Zero driver links its own copy of the engine.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def _build_module() -> ModuleType:
    # ffi/build.py runs as __main__, or is loaded under this name by setup.py
    # and aruntime._native; reuse whichever is there.
    for name in ("_aruntime_ffi_build", "__main__"):
        module = sys.modules.get(name)
        if module is not None and hasattr(module, "NativeLibrary"):
            return module
    spec = importlib.util.spec_from_file_location(
        "_aruntime_ffi_build", Path(__file__).resolve().parent.parent / "build.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


NativeLibrary = _build_module().NativeLibrary

ENGINE_SOURCES = ("sim/engine.c",)
ENGINE_HEADERS = ("sim/engine.h", "kernels/ar_host_abi.h")

LIBRARIES = [
    NativeLibrary(
        filename="libcuda.so.1",
        soname="libcuda.so.1",
        sources=(
            *ENGINE_SOURCES,
            "cuda/sim/cusim_core.c",
            "cuda/sim/cusim_mem.c",
            "cuda/sim/cusim_exec.c",
            "cuda/sim/cusim_procaddr.c",
            "cuda/sim/cusim_ptds.c",
        ),
        depends=(*ENGINE_HEADERS, "cuda/sim/cuda_types.h", "cuda/sim/cusim.h"),
        # Only the API and the test hooks are exported; -Bsymbolic keeps the
        # library's own calls inside it even if another libcuda is loaded.
        cflags=("-fvisibility=hidden",),
        ldflags=("-Wl,-Bsymbolic", "-ldl"),
    ),
]

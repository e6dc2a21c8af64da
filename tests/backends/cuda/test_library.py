"""Library lookup and load-time failures, with fake libraries built here."""

from __future__ import annotations

import ctypes
import ctypes.util
from pathlib import Path

import pytest

from aruntime import _exceptions as exc
from aruntime.backends import cuda
from aruntime.backends.cuda import _library


def test_lookup_lists_every_path_tried(
    cuda_library_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere" / "libcuda.so.1"
    cuda_library_env.setenv("ARUNTIME_CUDA_LIBRARY", str(missing))
    cuda_library_env.setenv("LD_LIBRARY_PATH", "")
    try:
        _library.load_library(sim=False)
    except exc.BackendUnavailableError as error:
        text = str(error)
        assert str(missing) in text and "ARUNTIME_CUDA_LIBRARY" in text
        assert "libcuda.so.1" in text.replace(str(missing), "")
    else:  # a machine with a real driver: the system name was found
        pytest.skip("a real libcuda.so.1 is installed here")


def test_stub_library_is_named_as_such(
    cuda_library_env: pytest.MonkeyPatch, stub_libcuda: Path
) -> None:
    cuda_library_env.setenv("ARUNTIME_CUDA_LIBRARY", str(stub_libcuda))
    with pytest.raises(exc.BackendUnavailableError) as info:
        cuda.list_devices(sim=False)
    if "is a stub library" not in str(info.value):
        pytest.fail(f"the stub was not reported: {info.value}")
    assert "CUDA_ERROR_STUB_LIBRARY" in str(info.value)


def test_a_library_without_cuinit_is_rejected(cuda_library_env: pytest.MonkeyPatch) -> None:
    libm = ctypes.util.find_library("m")
    assert libm is not None
    cuda_library_env.setenv("ARUNTIME_CUDA_LIBRARY", libm)
    with pytest.raises(exc.BackendUnavailableError, match="does not export cuInit"):
        _library.load_library(sim=False)


def test_loading_is_lazy() -> None:
    import subprocess
    import sys

    code = (
        "import sys, aruntime.backends.cuda as c; "
        "assert not any('libcuda' in l for l in open('/proc/self/maps')), 'loaded at import'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

"""Fixtures for the CUDA backend's tests: fake driver libraries and the sim."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import aruntime as ar

HERE = Path(__file__).resolve().parent


@pytest.fixture(params=["cuda-sim", pytest.param("cuda", marks=pytest.mark.gpu)])
def sim_or_gpu(request: pytest.FixtureRequest) -> Iterator[ar.Backend]:
    """cuda-sim (which must open), then a real CUDA device where one is visible."""
    try:
        backend = ar.open_backend(request.param)
    except ar.BackendUnavailableError as error:
        if request.param == "cuda-sim":
            raise
        pytest.skip(f"no CUDA device here: {error}")
    with backend:
        yield backend


def _compile(out: Path, *defines: str) -> Path:
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    assert cc is not None, "a C compiler is required"
    subprocess.run(
        [cc, "-shared", "-fPIC", "-O1", *defines, str(HERE / "fake_libcuda.c"), "-o", str(out)],
        check=True,
    )
    return out


@pytest.fixture(scope="session")
def fake_libcuda(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A library with a handful of CUDA entry points (see fake_libcuda.c)."""
    return _compile(tmp_path_factory.mktemp("fake") / "libfakecuda.so")


@pytest.fixture(scope="session")
def stub_libcuda(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A library whose cuInit returns CUDA_ERROR_STUB_LIBRARY (34), like the toolkit's stub."""
    return _compile(tmp_path_factory.mktemp("stub") / "libcuda.so", "-DINIT_RESULT=34")


@pytest.fixture
def cuda_library_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """Point ARUNTIME_CUDA_LIBRARY somewhere for one test, and forget what was loaded."""
    from aruntime.backends.cuda import _library

    _library.forget_loaded()
    yield monkeypatch
    monkeypatch.undo()
    _library.forget_loaded()


@pytest.fixture
def fake_control(fake_libcuda: Path) -> ctypes.CDLL:
    """The fake library's test hooks (same handle as the binding's dlopen)."""
    return ctypes.CDLL(str(fake_libcuda))

"""The committed builds of the portable kernels: complete, current and valid.

PTX (nvcc) and SPIR-V (clang + llvm-spirv) are generated files committed under
aruntime/kernels; the tools are optional, so the checks that need them skip
when they are absent.  The checks that need no tools always run.
"""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aruntime._kernel_images import (
    PORTABLE_MODULES,
    host_library_name,
    ptx_image,
    spirv_image,
)
from aruntime._native import native_library_path

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "ffi" / "kernels"
sys.path.insert(0, str(KERNELS))
from build_ptx import find_nvcc  # noqa: E402
from build_spirv import entry_points, find_tools  # noqa: E402

sys.path.remove(str(KERNELS))


def kernels_in_source(module: str) -> list[str]:
    """Kernels a source defines: AR_KERNEL(name, ...), or per-dtype instances
    AR_<OP>_KERNEL(dt, ...) of a kernel template, named <module>_<dt>."""
    text = (KERNELS / f"{module}.c").read_text()
    plain = re.findall(r"^AR_KERNEL\((\w+),", text, flags=re.MULTILINE)
    instances = re.findall(r"^AR_\w+_KERNEL\((\w+),", text, flags=re.MULTILINE)
    return sorted([*plain, *(f"{module}_{dt}" for dt in instances)])


@pytest.mark.parametrize("module", PORTABLE_MODULES)
def test_every_build_has_every_kernel(module: str, tmp_path: Path) -> None:
    names = kernels_in_source(module)
    assert names
    ptx = ptx_image(module)
    assert ptx is not None, f"aruntime/kernels/{module}.ptx is missing"
    assert sorted(re.findall(rb"\.entry (\w+)\(", ptx)) == [n.encode() for n in names]
    spv = spirv_image(module)
    assert spv is not None, f"aruntime/kernels/{module}.spv is missing"
    assert spv[:4] == b"\x03\x02\x23\x07"  # the SPIR-V magic number, little-endian
    path = tmp_path / f"{module}.spv"
    path.write_bytes(spv)
    assert entry_points(path) == names
    filename = host_library_name(module)
    assert filename is not None
    lib = ctypes.CDLL(str(native_library_path(filename)))
    for name in names:
        assert getattr(lib, name) is not None
        assert getattr(lib, f"__ar_kinfo_{name}") is not None


def test_ptx_is_current() -> None:
    if find_nvcc() is None:
        pytest.skip("nvcc not found (set NVCC); the committed PTX is used as is")
    result = subprocess.run(
        [sys.executable, str(KERNELS / "build_ptx.py"), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_spirv_is_valid() -> None:
    validator = shutil.which("spirv-val")
    if validator is None:
        pytest.skip("spirv-val not found (Debian/Ubuntu package spirv-tools)")
    for module in PORTABLE_MODULES:
        path = ROOT / "aruntime" / "kernels" / f"{module}.spv"
        result = subprocess.run([validator, str(path)], capture_output=True, text=True)
        assert result.returncode == 0, f"{path}: {result.stdout}{result.stderr}"


def test_spirv_is_current() -> None:
    clang, translator, _ = find_tools()
    if clang is None or translator is None:
        pytest.skip("clang or llvm-spirv not found (packages clang, llvm-spirv-15)")
    result = subprocess.run(
        [sys.executable, str(KERNELS / "build_spirv.py"), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr

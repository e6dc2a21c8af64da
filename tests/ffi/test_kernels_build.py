"""The portable kernels: the committed PTX matches its source, and the host
build exports the entry ABI for every kernel."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD_PTX = ROOT / "ffi" / "kernels" / "build_ptx.py"
GEN_PP = ROOT / "ffi" / "kernels" / "gen_pp.py"


def _has_nvcc() -> bool:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import runpy; m = runpy.run_path({str(BUILD_PTX)!r}); print(m['find_nvcc']() or '')",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return bool(out.stdout.strip())


@pytest.mark.skipif(not _has_nvcc(), reason="nvcc not found: the committed PTX is used as is")
def test_committed_ptx_is_up_to_date() -> None:
    proc = subprocess.run(
        [sys.executable, str(BUILD_PTX), "--check"], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr


def test_generated_macro_tables_are_up_to_date() -> None:
    out = subprocess.run(
        [sys.executable, str(GEN_PP)], capture_output=True, text=True, check=True
    ).stdout
    assert out == (ROOT / "ffi" / "kernels" / "ar_pp.h").read_text()


def test_kernel_source_is_plain_c(tmp_path: Path) -> None:
    """The host dialect is C: the source compiles stand-alone with -std=c99."""
    cc = subprocess.run(
        [
            "cc",
            "-std=c99",
            "-pedantic",
            "-Wall",
            "-Werror",
            "-fsyntax-only",
            "-I",
            str(ROOT / "ffi" / "kernels"),
            str(ROOT / "ffi" / "kernels" / "vector_ops.c"),
        ],
        capture_output=True,
        text=True,
    )
    assert cc.returncode == 0, cc.stderr

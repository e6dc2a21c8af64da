"""Regenerates the committed PTX of the portable kernels (needs nvcc).

nvcc is not available in CI, so the PTX is a committed, generated artifact;
tests/ffi/test_kernel_images.py regenerates it and diffs it when nvcc exists.

    python ffi/kernels/build_ptx.py [--check]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

KERNELS_DIR = Path(__file__).resolve().parent
PTX_DIR = KERNELS_DIR.parent.parent / "aruntime" / "kernels"
SOURCES = (
    "vector_ops.c",
    "gemm.c",
    "conv2d.c",
    "attention.c",
    "reduce.c",
    "unary.c",
    "binary.c",
)
# compute_75 is the oldest virtual architecture CUDA 13 accepts; the driver
# JIT-compiles this PTX for any newer GPU.
ARCH = "compute_75"


def find_nvcc() -> str | None:
    for candidate in (os.environ.get("NVCC"), "/usr/local/cuda/bin/nvcc", shutil.which("nvcc")):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def command(nvcc: str, source: Path, out: Path) -> list[str]:
    return [nvcc, "-ptx", "-x", "cu", f"-arch={ARCH}", "-O3", "-o", str(out), str(source)]


def strip_comments(text: str) -> list[str]:
    """PTX minus its comment lines, which name the compiler build."""
    return [line for line in text.splitlines() if not line.lstrip().startswith("//")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="diff against the committed PTX")
    args = parser.parse_args(argv)
    nvcc = find_nvcc()
    if nvcc is None:
        print("nvcc not found (set NVCC)", file=sys.stderr)
        return 2
    stale = []
    for name in SOURCES:
        target = PTX_DIR / (Path(name).stem + ".ptx")
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / target.name
            subprocess.run(command(nvcc, KERNELS_DIR / name, out), check=True, cwd=KERNELS_DIR)
            text = out.read_text()
        if args.check:
            if not target.exists() or strip_comments(target.read_text()) != strip_comments(text):
                stale.append(str(target))
        else:
            PTX_DIR.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            print(target)
    if stale:
        print("stale PTX: " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

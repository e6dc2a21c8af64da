"""Rebuilds the differential corpus's SPIR-V from its OpenCL C sources.

    python tests/backends/levelzero/spirv/corpus/build.py

Needs clang-15 and llvm-spirv-15 (``apt-get install clang-15 llvm-spirv-15``).
Each ``NAME.cl`` becomes ``NAME_O0.spv`` and ``NAME_O2.spv``; the ``.spv``
files are committed so the tests (``test_spirv_corpus.py``) need neither tool.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FLAGS = (
    "-x", "cl", "-cl-std=CL2.0", "-target", "spir64-unknown-unknown",
    "-Xclang", "-finclude-default-header", "-Xclang", "-no-opaque-pointers",
    "-emit-llvm", "-c",
)  # fmt: skip
EXTENSIONS = "--spirv-ext=+SPV_INTEL_subgroups,+SPV_EXT_shader_atomic_float_add"


def main() -> int:
    clang = shutil.which("clang-15")
    translator = shutil.which("llvm-spirv-15")
    if not clang or not translator:
        print("needs clang-15 and llvm-spirv-15", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        for source in sorted(HERE.glob("*.cl")):
            for opt in ("-O0", "-O2"):
                out = HERE / f"{source.stem}_{opt[1:]}.spv"
                bitcode = Path(tmp) / (out.name + ".bc")
                subprocess.run([clang, *FLAGS, opt, str(source), "-o", str(bitcode)], check=True)
                subprocess.run([translator, EXTENSIONS, str(bitcode), "-o", str(out)], check=True)
                print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

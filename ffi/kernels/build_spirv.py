"""Regenerates the committed SPIR-V of the portable kernels (needs clang and llvm-spirv).

Each kernel source is compiled as OpenCL C (the dialect of ar_portable.h) to
LLVM bitcode for ``spir64`` with clang, then translated with llvm-spirv and
checked with spirv-val when it is installed.  On Debian/Ubuntu:
``apt-get install clang llvm-spirv-15 spirv-tools`` (clang 14 bitcode reads
fine in llvm-spirv 15).  The tools are not needed at run time or in CI, so the
``.spv`` files are committed, generated artifacts; the Level Zero backend
loads them on a real device (the sim runs the host build instead).

    python ffi/kernels/build_spirv.py [--check]

``--check`` rebuilds into a temporary folder and compares with the committed
files byte for byte when the tool versions match the ones recorded in
``aruntime/kernels/spirv_tools.txt``, and only the kernel names otherwise.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from build_ptx import SOURCES

KERNELS_DIR = Path(__file__).resolve().parent
OUT_DIR = KERNELS_DIR.parent.parent / "aruntime" / "kernels"
TOOLS_FILE = OUT_DIR / "spirv_tools.txt"
# -O0: clang 14's optimised IR holds `freeze` instructions (from div/rem
# pairs) that llvm-spirv 15 cannot translate; the device compiler optimises
# the module when it is built anyway.
CLANG_FLAGS = (
    "-x",
    "cl",
    "-cl-std=CL2.0",
    "-target",
    "spir64-unknown-unknown",
    "-Xclang",
    "-finclude-default-header",
    "-O0",
    "-emit-llvm",
    "-c",
)


def _find(env: str, names: tuple[str, ...]) -> str | None:
    for candidate in (os.environ.get(env), *names):
        if candidate:
            found = shutil.which(candidate)
            if found:
                return found
    return None


def find_tools() -> tuple[str | None, str | None, str | None]:
    """(clang, llvm-spirv, spirv-val); each None when absent."""
    clang = _find("CLANG", ("clang", "clang-14", "clang-15"))
    translator = _find("LLVM_SPIRV", ("llvm-spirv", "llvm-spirv-15", "llvm-spirv-14"))
    validator = _find("SPIRV_VAL", ("spirv-val",))
    return clang, translator, validator


def tool_versions(clang: str, translator: str) -> str:
    def first_line(cmd: list[str]) -> str:
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        text = (out.stdout or out.stderr).strip().splitlines()
        return text[0] if text else "unknown"

    clang_version = first_line([clang, "--version"])
    translator_version = first_line([translator, "--version"])
    return f"clang: {clang_version}\nllvm-spirv: {translator_version}\n"


def build_one(clang: str, translator: str, source: Path, out: Path) -> None:
    bitcode = out.with_suffix(".bc")
    subprocess.run(
        [clang, *CLANG_FLAGS, f"-I{KERNELS_DIR}", "-o", str(bitcode), str(source)], check=True
    )
    subprocess.run([translator, str(bitcode), "-o", str(out)], check=True)
    bitcode.unlink()


def validate(validator: str, spv: Path) -> None:
    subprocess.run([validator, str(spv)], check=True)


def entry_points(spv: Path) -> list[str]:
    """Kernel names in a SPIR-V module (read from the OpEntryPoint strings)."""
    data = spv.read_bytes()
    words = [int.from_bytes(data[i : i + 4], "little") for i in range(20, len(data), 4)]
    names, i = [], 0
    while i < len(words):
        count, opcode = words[i] >> 16, words[i] & 0xFFFF
        if count == 0:
            break
        if opcode == 15:  # OpEntryPoint: model, id, name (a NUL-terminated string), ...
            raw = b"".join(w.to_bytes(4, "little") for w in words[i + 3 : i + count])
            names.append(raw.split(b"\0", 1)[0].decode())
        i += count
    return sorted(names)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed SPIR-V")
    args = parser.parse_args(argv)
    clang, translator, validator = find_tools()
    if clang is None or translator is None:
        print("clang or llvm-spirv not found (set CLANG / LLVM_SPIRV)", file=sys.stderr)
        return 2
    versions = tool_versions(clang, translator)
    same_tools = TOOLS_FILE.exists() and TOOLS_FILE.read_text() == versions
    stale = []
    for name in SOURCES:
        target = OUT_DIR / (Path(name).stem + ".spv")
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / target.name
            build_one(clang, translator, KERNELS_DIR / name, out)
            if validator is not None:
                validate(validator, out)
            if args.check:
                if not target.exists():
                    stale.append(f"{target} (missing)")
                elif same_tools and out.read_bytes() != target.read_bytes():
                    stale.append(f"{target} (differs)")
                elif entry_points(out) != entry_points(target):
                    stale.append(
                        f"{target} (kernels {entry_points(target)} != {entry_points(out)})"
                    )
            else:
                OUT_DIR.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(out, target)
                print(target)
    if not args.check:
        TOOLS_FILE.write_text(versions)
    elif not same_tools:
        print("note: other tool versions than the committed build; compared kernel names only")
    if stale:
        print("stale SPIR-V: " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The C files of the software CUDA driver call each other without cycles.

Each file of ffi/cuda/sim (the driver) and of ffi/sim/ptx (its PTX
interpreter) is compiled to an object; a file depends on another when it
uses a symbol the other defines (nm).  The dependency graph must be
acyclic, so each file can be read knowing only the ones below it.  The
interpreter's files and functions also stay short enough to read whole.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

FFI = Path(__file__).resolve().parents[2] / "ffi"
SIM = FFI / "cuda" / "sim"
PTX = FFI / "sim" / "ptx"
MAX_FILE_LINES = 1000
MAX_FUNCTION_LINES = 150


def _symbols(obj: Path) -> tuple[set[str], set[str]]:
    out = subprocess.run(["nm", str(obj)], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBR":
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
    return defined, used


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("nm") is None, reason="no cc/nm")
def _objects(folder: Path, tmp_path: Path) -> dict[str, tuple[set[str], set[str]]]:
    """Each C file of folder: (symbols it defines, symbols it uses)."""
    table: dict[str, tuple[set[str], set[str]]] = {}
    for src in sorted(folder.glob("*.c")):
        obj = tmp_path / (src.stem + ".o")
        cmd = ["cc", "-c", "-std=gnu11", "-fPIC", "-fvisibility=hidden", str(src), "-o", str(obj)]
        subprocess.run(cmd, check=True, cwd=folder)
        table[src.stem] = _symbols(obj)
    return table


@pytest.mark.parametrize("folder", [SIM, PTX], ids=["cuda-sim", "ptx"])
def test_cuda_sim_files_form_no_cycle(tmp_path: Path, folder: Path) -> None:
    table = _objects(folder, tmp_path)
    deps = {
        a: {b for b, (defined, _) in table.items() if b != a and used & defined}
        for a, (_, used) in table.items()
    }
    if folder == SIM:
        assert "cusim_core" not in deps["cusim_exec"] or "cusim_exec" not in deps["cusim_core"]
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        if state.get(node) == 2:
            return
        assert state.get(node) != 1, "cycle: " + " -> ".join([*path, node])
        state[node] = 1
        for nxt in sorted(deps[node]):
            visit(nxt, [*path, node])
        state[node] = 2

    for node in sorted(deps):
        visit(node, [])


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("nm") is None, reason="no cc/nm")
def test_ptx_interpreter_starts_no_threads(tmp_path: Path) -> None:
    # Only the engine splits a grid over threads; an executor that split its
    # range again would nest threads under ARUNTIME_SIM_KERNEL_THREADS > 1.
    starters = {
        name for name, (_, used) in _objects(PTX, tmp_path).items() if "pthread_create" in used
    }
    assert not starters


def _function_lengths(text: str) -> list[tuple[int, int]]:
    """(first line, lines) of each function body: '{' to '}' in column 0."""
    out, start = [], None
    for no, line in enumerate(text.splitlines(), 1):
        if line == "{":
            start = no
        elif line == "}" and start is not None:
            out.append((start, no - start + 1))
            start = None
    return out


def test_ptx_interpreter_files_and_functions_stay_short() -> None:
    too_long = []
    for src in sorted([*PTX.glob("*.c"), *PTX.glob("*.h")]):
        text = src.read_text()
        if len(text.splitlines()) > MAX_FILE_LINES:
            too_long.append(f"{src.name}: {len(text.splitlines())} lines")
        too_long += [
            f"{src.name}:{first}: a function of {n} lines"
            for first, n in _function_lengths(text)
            if n > MAX_FUNCTION_LINES
        ]
    assert not too_long, too_long

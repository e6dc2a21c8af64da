"""The C files of the software CUDA driver call each other without cycles.

Each file of ffi/cuda/sim is compiled to an object; a file depends on
another when it uses a symbol the other defines (nm).  The dependency graph
must be acyclic, so each file can be read knowing only the ones below it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SIM = Path(__file__).resolve().parents[2] / "ffi" / "cuda" / "sim"


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
def test_cuda_sim_files_form_no_cycle(tmp_path: Path) -> None:
    sources = sorted(SIM.glob("*.c"))
    table: dict[str, tuple[set[str], set[str]]] = {}
    for src in sources:
        obj = tmp_path / (src.stem + ".o")
        cmd = ["cc", "-c", "-std=gnu11", "-fPIC", "-fvisibility=hidden", str(src), "-o", str(obj)]
        subprocess.run(cmd, check=True, cwd=SIM)
        table[src.stem] = _symbols(obj)
    deps = {
        a: {b for b, (defined, _) in table.items() if b != a and used & defined}
        for a, (_, used) in table.items()
    }
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

"""The sim engine's files (ffi/sim/engine_*.c) go into both software drivers
from one list, and each driver exports exactly the engine's test hooks (the
ARSIM_EXPORT lines of engine.h): nothing its files share with each other."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from aruntime._native import native_library_path
from ffi.build import discover
from ffi.sim.native import ENGINE_SOURCES

SIM = Path(__file__).resolve().parents[2] / "ffi" / "sim"
DRIVERS = ("libcuda.so.1", "libze_aruntime_sim.so")
HOOK = re.compile(r"^ARSIM_EXPORT\s[^(;]*\b(arsim_\w+)\s*\(", re.MULTILINE)


def test_each_driver_builds_every_engine_file_from_the_one_list() -> None:
    assert {f"sim/{p.name}" for p in SIM.glob("engine_*.c")} == set(ENGINE_SOURCES)
    drivers = {lib.filename: lib for lib in discover() if lib.filename in DRIVERS}
    assert sorted(drivers) == sorted(DRIVERS)
    for lib in drivers.values():
        assert set(ENGINE_SOURCES) <= set(lib.sources), lib.filename


@pytest.mark.skipif(shutil.which("nm") is None, reason="no nm")
@pytest.mark.parametrize("driver", DRIVERS)
def test_driver_exports_the_engine_hooks_and_nothing_else_of_the_engine(driver: str) -> None:
    hooks = set(HOOK.findall((SIM / "engine.h").read_text()))
    assert "arsim_set_timing" in hooks and "arsim_set_engine_idle_ms" in hooks
    out = subprocess.run(
        ["nm", "-D", "--defined-only", str(native_library_path(driver))],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    names = {line.split()[-1] for line in out.splitlines() if line.strip()}
    assert {n for n in names if n.startswith(("arsim_", "eng_"))} == hooks

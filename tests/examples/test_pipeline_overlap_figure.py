"""pipeline_overlap.py's overlap figure: a fraction of its own run, never above 1 (issue 22)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from aruntime import probe_backends

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "pipeline_overlap.py"


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_pipeline_overlap_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_overlap_stays_at_most_one_when_ops_of_one_engine_overlap() -> None:
    ex = _example()
    # Two uploads at once (as several host threads copy them), then compute and download.
    spans = {"H2D": [(0.0, 4.0), (0.0, 4.0)], "kernel": [(4.0, 5.0)], "D2H": [(5.0, 6.0)]}
    run = ex.RunTimes(7.0, spans)
    assert run.device_ms == 6.0 and run.busy_ms("H2D") == 4.0
    assert run.overlap == pytest.approx(4 / 6)
    serial = ex.RunTimes(1.0, {"H2D": [(0.0, 1.0)], "kernel": [(1.0, 2.0)], "D2H": [(2.0, 3.0)]})
    assert serial.overlap == pytest.approx(1 / 3)


@pytest.mark.parametrize("backend", ["mock", "cuda-sim"])
def test_every_printed_overlap_is_a_fraction(backend: str) -> None:
    status = {s.name: s for s in probe_backends()}[backend]
    if not status.available:
        pytest.skip(f"{backend} unavailable: {status.reason.splitlines()[0]}")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--backend", backend, "--chunks", "6"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [
        ln.split()
        for ln in done.stdout.splitlines()
        if ln.split()[:1] in (["serial"], ["double"], ["triple"])
    ]
    assert len(rows) == 3, done.stdout
    for row in rows:
        assert 0.0 < float(row[-1]) <= 1.0, row

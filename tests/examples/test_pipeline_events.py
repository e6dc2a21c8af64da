"""pipeline_overlap.py with one event per buffer, re-recorded for every chunk.

A wait is for the record current when the wait is queued (CUDA's rule); a
backend that lets a later record satisfy, or an earlier record release, a
queued wait makes the pipeline download buffers before their kernel has run,
and the example's own check fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from aruntime import probe_backends

ROOT = Path(__file__).resolve().parents[2]

#: Backends where re-recorded events are known to go wrong, with what was seen.
KNOWN_BROKEN = {
    "levelzero-sim": (
        "levelzero: with re-recorded events the double-buffered pipeline downloads some "
        "chunks before their kernel ran (unscaled input comes back) or hangs, intermittently"
    ),
}


@pytest.mark.parametrize("backend", ["mock", "cuda-sim", "levelzero-sim"])
def test_pipeline_with_reused_events(backend: str) -> None:
    status = {s.name: s for s in probe_backends()}[backend]
    if not status.available:
        pytest.skip(f"{backend} unavailable: {status.reason.splitlines()[0]}")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    argv = [sys.executable, "examples/pipeline_overlap.py", "--backend", backend]
    argv += ["--reuse-events", "--chunks", "12"]
    broken = KNOWN_BROKEN.get(backend)
    try:  # a few seconds when it works; a broken backend may hang instead
        done = subprocess.run(
            argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=40, check=False
        )
    except subprocess.TimeoutExpired:
        if broken:
            pytest.xfail(f"{broken} (hung this time)")
        raise
    if done.returncode != 0 and broken:
        pytest.xfail(broken)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"

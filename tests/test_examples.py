"""Every program in examples/ runs to completion (its own asserts check the results).

Each runs in a subprocess on the mock and on every sim that can be opened
here under asyncio, and on the mock under trio (``--trio``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from aruntime import probe_backends

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
BACKENDS = ("mock", "cuda-sim", "levelzero-sim")

#: (example, backend) pairs known not to work yet, with the reason.
KNOWN_BROKEN: dict[tuple[str, str], str] = {}

#: Examples written for some backends only (a CUDA C kernel needs a CUDA backend).
ONLY_ON: dict[str, tuple[str, ...]] = {"custom_kernel_nvrtc.py": ("cuda-sim",)}


def _reason_unavailable(name: str) -> str | None:
    for status in probe_backends():
        if status.name == name:
            return None if status.available else status.reason
    return f"{name} is unknown"


# Every backend under asyncio; the loop-specific paths are the core's, so trio
# runs on the mock only, which keeps the subprocess count (and CI time) down.
RUNS = [(b, "asyncio") for b in BACKENDS] + [("mock", "trio")]


@pytest.mark.parametrize(("backend", "loop"), RUNS, ids=[f"{b}-{lp}" for b, lp in RUNS])
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(example: Path, backend: str, loop: str) -> None:
    if backend not in ONLY_ON.get(example.name, (backend,)):
        pytest.skip(f"{example.name} runs on {', '.join(ONLY_ON[example.name])} only")
    broken = KNOWN_BROKEN.get((example.name, backend))
    if broken:
        pytest.xfail(broken)  # not run: it would hang until the timeout
    why_not = _reason_unavailable(backend)
    if why_not is not None:
        pytest.skip(f"{backend} unavailable: {why_not.splitlines()[0]}")
    env = {
        **os.environ,
        "ARUNTIME_BACKEND": backend,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    # Warnings are errors, as in the test suite: a blocking call on the loop
    # (they warn by default) or a leaked resource fails the example.
    argv = [sys.executable, "-W", "error", str(example), *(["--trio"] if loop == "trio" else [])]
    done = subprocess.run(
        argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=100, check=False
    )
    assert done.returncode == 0, f"{example.name} failed:\n{done.stdout}\n{done.stderr}"

"""Runs a snippet in a fresh interpreter: the Level Zero loader fixes its drivers
and layers at the first zeInit of a process, so each loader configuration gets one."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
LOADER = "libze_loader.so.1"
_LEVELZERO_VARS = (
    "ARUNTIME_LEVELZERO_LIBRARY",
    "ARUNTIME_LEVELZERO_SIM_DIRECT",
    "ZE_ENABLE_ALT_DRIVERS",
    "ZE_ENABLE_NULL_DRIVER",
    "ZE_ENABLE_VALIDATION_LAYER",
    "ZE_ENABLE_PARAMETER_VALIDATION",
)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _LEVELZERO_VARS}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def run_python(code: str, timeout: float = 60, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=clean_env(**env),
        cwd=ROOT,
    )


def loader_installed() -> bool:
    import ctypes

    try:
        ctypes.CDLL(LOADER)
    except OSError:
        return False
    return True


NO_LOADER_REASON = f"{LOADER} is not installed (Debian package libze1)"

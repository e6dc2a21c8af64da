"""The conformance suite on levelzero-sim in processes of their own.

The plain run through the loader happens in the main test process (the suite
is parametrised over every backend that opens here).  These runs add the
configurations a process can only choose at its first zeInit:

* ``validated``: the loader's validation layer with parameter validation
  (``ZE_ENABLE_VALIDATION_LAYER=1 ZE_ENABLE_PARAMETER_VALIDATION=1``);
* ``direct``: the software driver loaded without the loader, as on a machine
  that lacks ``libze1``.

Neither may skip a test.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from ._subproc import NO_LOADER_REASON, ROOT, clean_env, loader_installed

CONFORMANCE = ROOT / "tests" / "conformance"

_CONFIGS = {
    "validated": {"ZE_ENABLE_VALIDATION_LAYER": "1", "ZE_ENABLE_PARAMETER_VALIDATION": "1"},
    "direct": {"ARUNTIME_LEVELZERO_SIM_DIRECT": "1"},
}


@pytest.mark.slow
@pytest.mark.parametrize("config", sorted(_CONFIGS))
def test_conformance_suite_passes_on_levelzero_sim(config: str) -> None:
    if config == "validated" and not loader_installed():
        pytest.skip(NO_LOADER_REASON)
    if not CONFORMANCE.is_dir():
        pytest.skip(f"{CONFORMANCE} is not in this checkout")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(CONFORMANCE),
            "-k",
            "levelzero-sim",
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        # Two devices, so the peer tests run here too instead of skipping.
        env=clean_env(
            ARUNTIME_REQUIRE_BACKENDS="levelzero-sim", ARUNTIME_SIM_DEVICES="2", **_CONFIGS[config]
        ),
        cwd=ROOT,
    )
    tail = result.stdout[-4000:] + result.stderr[-2000:]
    assert result.returncode == 0, tail
    summary = result.stdout.strip().splitlines()[-1]
    assert re.search(r"\d+ passed", summary), tail
    assert "skipped" not in summary, tail

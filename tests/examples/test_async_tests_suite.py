"""examples/async_tests is a user's own test suite; CI runs it the way its docstring says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_example_test_suite_passes() -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    argv = [sys.executable, "-m", "pytest", "examples/async_tests", "-q", "-p", "no:cacheprovider"]
    done = subprocess.run(
        argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=300, check=False
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    passed = re.search(r"(\d+) passed", done.stdout)
    assert passed is not None and int(passed.group(1)) >= 10, done.stdout  # tests really ran
    assert not re.search(r"\d+ (failed|error)", done.stdout), done.stdout

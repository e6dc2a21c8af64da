"""The README's test command runs on pytest-xdist workers; what must hold there still does.

pyproject.toml's addopts say ``-n auto``: the default selection is spread over
workers, any other runs serially (tests/conftest.py's auto_workers).  Under
xdist the controller only sees the workers' reports, so the checks below run
a small suite of a user's through ``-n 2`` and look at what the controller
makes of them: a required backend that cannot open still fails the run, and
skip reasons are still folded (tests/skip_summary.py).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .conftest import auto_workers

ROOT = Path(__file__).resolve().parent.parent


def _addopts() -> list[str]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        tomllib = pytest.importorskip("tomli")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return shlex.split(config["tool"]["pytest"]["ini_options"]["addopts"])


def test_the_default_selection_runs_on_workers_and_any_other_alone() -> None:
    addopts = _addopts()
    assert addopts[addopts.index("-n") + 1] == "auto", addopts
    markexpr = addopts[len(addopts) - 1 - addopts[::-1].index("-m") + 1]
    assert auto_workers(markexpr) is None  # xdist's own count: parallel
    for other in ("slow", "ray", "", "slow or not slow"):
        assert auto_workers(other) == 0, other


def _run_user_suite(tmp_path: Path, conftest: str, test: str, workers: int = 2, **env: str) -> str:
    (tmp_path / "conftest.py").write_text(textwrap.dedent(conftest))
    (tmp_path / "test_user.py").write_text(textwrap.dedent(test))
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    cmd = [sys.executable, "-m", "pytest", "-n", str(workers), "-ra", "-p", "no:cacheprovider"]
    cmd += ["-p", "no:hypothesispytest", str(tmp_path)]
    run = subprocess.run(
        cmd, cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=120
    )
    return f"exit status {run.returncode}\n{run.stdout}{run.stderr}"


def test_a_required_backend_that_cannot_open_fails_the_run_on_workers(tmp_path: Path) -> None:
    out = _run_user_suite(
        tmp_path,
        """
        import aruntime as ar
        from aruntime import testing

        pytest_plugins = ["aruntime.testing"]

        def _unavailable(variant, **options):
            raise ar.BackendUnavailableError(f"{variant}: not on this machine")

        testing.open_test_backend = _unavailable  # in every worker: each loads this file
        """,
        """
        import pytest

        @pytest.mark.parametrize("n", range(4))
        def test_needs_the_mock(mock_backend, n):
            pass
        """,
        ARUNTIME_REQUIRE_BACKENDS="mock",
    )
    assert out.startswith("exit status 1\n"), out
    assert "4 errors" in out and "skipped" not in out, out
    assert "mock is required here (ARUNTIME_REQUIRE_BACKENDS) but: mock: not on" in out, out


_SKIPS = """
import pytest

WHY = "no device here; tried:\\n  - libcuda.so.1: not found"

@pytest.fixture
def gpu():
    pytest.skip(WHY)

@pytest.mark.parametrize("n", range(6))
def test_a(gpu, n): pass

def test_b(gpu): pass

def test_once():
    pytest.skip("only here")
"""


def test_skip_reasons_are_folded_on_the_controller(tmp_path: Path) -> None:
    """The -ra lines are those of a run in one process (the order aside: workers race)."""
    lines = {}
    for workers in (0, 2):
        where = tmp_path / f"n{workers}"
        where.mkdir()
        out = _run_user_suite(where, 'pytest_plugins = ["tests.skip_summary"]\n', _SKIPS, workers)
        assert "8 skipped" in out, out
        lines[workers] = sorted(line for line in out.splitlines() if line.startswith("SKIPPED"))
    assert len(lines[0]) == 2, lines  # one line per reason
    assert lines[2] == lines[0], lines


@pytest.mark.slow  # a pytest of xdist workers that starts a child interpreter
def test_an_isolated_test_runs_in_its_child_under_xdist(pytester: pytest.Pytester) -> None:
    """A configuration's -n must not make the isolated child an xdist controller too."""
    pytester.makeini("[pytest]\naddopts = -n 1\n")
    pytester.makeconftest('pytest_plugins = ["aruntime.testing"]\n')
    pytester.makepyfile(
        test_user="""
        import os
        import pytest

        @pytest.mark.aruntime_isolated
        def test_inside():
            assert os.environ.get("ARUNTIME_ISOLATED_REPORTS")

        def test_outside():
            assert not os.environ.get("ARUNTIME_ISOLATED_REPORTS")
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)

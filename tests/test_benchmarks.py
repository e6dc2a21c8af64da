"""Smoke tests: the benchmarks that compare backends run end to end and print their tables."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "bench_backends.py"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sims run on Linux only")
def test_bench_backends_quick_prints_the_table() -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--backends", "cuda-sim,levelzero-sim"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = proc.stdout
    assert proc.returncode == 0, proc.stdout + proc.stderr
    header = next(line for line in out.splitlines() if "cuda-sim" in line)
    assert "levelzero-sim" in header
    for row in (
        "1. wake, asyncio, back to back",
        "1. wake, trio, 1 ms apart",
        "1. ... await / mock's await [trio, 1 ms apart]",
        "2. CPU",
        "3. 500 awaits",
        "5. pipeline",
    ):
        assert row in out, out
    assert "6. pageable" in out


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sims run on Linux only")
def test_bench_peer_quick_prints_both_tables() -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_peer.py"), "--quick"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    out = proc.stdout
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "peer copies of 4 MiB" in out and "open_pool throughput" in out, out
    assert out.count("cuda-sim") >= 3 and out.count("levelzero-sim") >= 3, out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sims run on Linux only")
def test_bench_enqueue_quick_compares_every_backend_with_the_mock() -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_enqueue.py"), "--quick"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = proc.stdout
    assert proc.returncode == 0, proc.stdout + proc.stderr
    header = next(line for line in out.splitlines() if "cuda-sim" in line)
    assert "mock" in header and "levelzero-sim" in header, out
    for loop in ("asyncio", "trio"):
        row = next(line for line in out.splitlines() if line.startswith(f"enqueue us [{loop}]"))
        assert row.count("x mock") == 2, out  # each sim against the mock, in one run
        assert f"enqueue + await, 1 ms apart us [{loop}]" in out, out

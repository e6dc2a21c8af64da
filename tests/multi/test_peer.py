"""Peer copies and cross-device ordering on two sim devices (docs/scaling.md).

The sims read ``ARUNTIME_SIM_DEVICES`` and their timing knobs when they load,
so each case runs tests/multi/peer_scenarios.py in a fresh process.  The copy
engines are slow (0.5 GB/s), so a wait that did not order device 1 after
device 0's write would copy stale bytes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import aruntime as ar

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = Path(__file__).with_name("peer_scenarios.py")


@pytest.mark.parametrize("loop", ["asyncio", "trio"])
@pytest.mark.parametrize("kind", ["cuda-sim", "levelzero-sim"])
def test_peer_copies_and_waits_on_two_sim_devices(kind: str, loop: str) -> None:
    env = {
        **os.environ,
        "ARUNTIME_SIM_DEVICES": "2",
        "ARUNTIME_SIM_COPY_GBPS": "0.5",
        "PYTHONPATH": str(ROOT),
    }
    proc = subprocess.run(
        [sys.executable, str(SCENARIOS), kind, loop],
        env=env,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stdout + proc.stderr


def test_one_device_has_no_peer() -> None:
    with ar.open_backend("mock") as a, ar.open_backend("mock") as b:
        assert not a.can_access_peer(b)
        with pytest.raises(TypeError, match="must be a Backend"):
            a.can_access_peer("gpu")  # type: ignore[arg-type]
        mine, theirs = a.alloc(16), b.alloc(16)
        try:
            with pytest.raises(ar.InvalidArgumentError, match="not devices of one driver"):
                a.copy_d2d_async(mine, theirs, 16)
        finally:
            a.free(mine)
            b.free(theirs)

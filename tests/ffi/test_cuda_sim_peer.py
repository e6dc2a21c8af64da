"""cuda-sim's peer copies and peer access (ffi/cuda/sim/cusim_peer.c, the engine's peer op)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_peer_api_and_the_peer_links_engines() -> None:
    env = {**os.environ, "ARUNTIME_SIM_DEVICES": "3", "PYTHONPATH": str(ROOT)}
    env.pop("ARUNTIME_SIM_PEER_GBPS", None)
    script = Path(__file__).with_name("cuda_sim_peer_script.py")
    proc = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=100
    )
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stdout + proc.stderr

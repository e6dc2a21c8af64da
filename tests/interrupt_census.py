"""Counts how SIGINTs during enqueues and awaits end, per backend and loop (issue 32's target).

``python -m tests.interrupt_census [RUNS]`` runs test_interrupts.py's script
RUNS times (100 unless given) on each backend and loop, each run a fresh
process interrupted by a real SIGINT after a delay spread over 0.02-0.40 s,
and prints one line per backend and loop: how many runs ended in a bare
KeyboardInterrupt, how many reported an op failed by it, how many ended any
other way, and how many hung (killed after 120 s).  The target is every run
a KeyboardInterrupt.  It takes some minutes, so it is not part of any test
run; test_interrupts.py runs three delays of each.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter

from tests.test_interrupts import _SCRIPT, ROOT

KINDS = ("mock", "cuda-sim", "levelzero-sim")
LOOPS = ("asyncio", "trio")


def outcome(kind: str, loop: str, delay: float) -> str:
    path = os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))
    try:
        run = subprocess.run(
            [sys.executable, "-c", _SCRIPT, kind, loop, f"{delay:.3f}"],
            env={**os.environ, "PYTHONPATH": path},
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        return "hung"
    err = run.stderr
    if "waiting for the device failed" in err or "DriverError" in err:
        return "op failed"
    lines = err.rstrip().splitlines()
    if run.returncode != 0 and lines and lines[-1].startswith("KeyboardInterrupt"):
        return "KeyboardInterrupt"
    return "other: " + (lines[-1] if lines else f"exit {run.returncode}")


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    for kind in KINDS:
        for loop in LOOPS:
            seen: Counter[str] = Counter()
            for i in range(runs):
                seen[outcome(kind, loop, 0.02 + 0.38 * i / max(runs - 1, 1))] += 1
            print(f"{kind:14} {loop:8} {runs} runs: {dict(sorted(seen.items()))}", flush=True)


if __name__ == "__main__":
    main()

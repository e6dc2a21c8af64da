"""Interpreter exit with device work in flight: no crash, no hang.

One helper process imports aruntime once, then forks 100 children.  Each
child opens cuda-sim, slows the simulated device down, queues copies (large
pageable ones staged through native host functions, D2H into numpy arrays
that are dropped at once), memsets and awaits nothing, then leaves through
the normal interpreter exit (atexit hooks, module teardown), in one of
several ways.  The parent checks every child's status and that each exits
within the bound.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

RUNNER = textwrap.dedent(
    """
    import os, sys, time, random, signal
    import numpy as np
    import aruntime
    from aruntime._native import native_library_path

    runs, deadline_s, parallel = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
    sim_path = str(native_library_path("libcuda.so.1"))  # built before forking
    import aruntime.backends.cuda._driver  # parse the cffi declarations once, not per child

    def child(seed):
        rng = random.Random(seed)
        import ctypes, threading
        gpu = aruntime.open_backend("cuda-sim")
        ctypes.CDLL(sim_path).arsim_set_timing(ctypes.c_double(1.0), ctypes.c_double(300.0))
        streams = [gpu.create_stream() for _ in range(3)]
        n = 2 * 1024 * 1024
        for s in streams:
            d = gpu.alloc(n)
            gpu.copy_h2d_async(np.ones(n, np.uint8), d, stream=s)   # staged, buffer dropped
            gpu.memset_async(d, 7, n, stream=s)
            gpu.copy_d2h_async(d, np.empty(n, np.uint8), stream=s)  # staged, buffer dropped
        how = seed % 4
        if how == 1:
            raise SystemExit(0)
        if how == 2:
            os.environ["ARUNTIME_CUDA_EXIT_TIMEOUT_S"] = "0"  # give up draining at once
        if how == 3:
            def more():
                try:
                    while True:
                        gpu.copy_h2d_async(np.ones(n, np.uint8), gpu.alloc(n), stream=streams[0])
                except aruntime.AruntimeError:
                    pass  # the backend closed under us: expected at exit
            threading.Thread(target=more, daemon=True).start()
            time.sleep(rng.random() * 0.01)
        sys.exit(0)

    failures, running, started = [], {}, 0
    while started < runs or running:
        while started < runs and len(running) < parallel:
            pid = os.fork()
            if pid == 0:
                child(started)
                sys.exit(0)
            running[pid] = (started, time.monotonic())
            started += 1
        for pid, (index, since) in list(running.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                del running[pid]
                if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
                    failures.append(f"run {index}: status {status:#x}")
            elif time.monotonic() - since > deadline_s:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                del running[pid]
                failures.append(f"run {index}: hung for more than {deadline_s}s")
        time.sleep(0.002)
    print("\\n".join(failures) or "ok")
    sys.exit(1 if failures else 0)
    """
)


@pytest.mark.slow
def test_exit_with_work_in_flight_100_times() -> None:
    if not (ROOT / "ffi" / "cuda" / "sim").is_dir():
        pytest.skip("the software CUDA driver is not in this checkout yet")
    result = subprocess.run(
        [sys.executable, "-c", RUNNER, "100", "30", "4"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]

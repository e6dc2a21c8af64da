"""Small allocations on the software drivers: slots of slabs, as a GPU's allocator does.

Each allocation of its own mapping cost two of the process's memory maps,
so some 32,600 allocations ran out of vm.max_map_count (65,530) with nearly
all memory free.  Allocations of up to 64 KiB are now slots of shared
mappings (ffi/sim/engine_slabs.c):

- a million live 256-byte allocations fit, on each driver, add about a
  thousand maps, count against the device's memory and give it all back
  when freed;
- a freed address is handed out again first;
- each slot is followed by a red zone, so a kernel (the PTX and SPIR-V
  interpreters) writing past a small allocation toward its neighbour still
  faults, and the report names the allocation it overran; under
  ARUNTIME_SIM_SANITIZE each allocation keeps a mapping of its own.

The C-level cases run in a child process each (sim_small_allocs_child.py):
a million allocations should not stay in the test process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CHILD = HERE / "sim_small_allocs_child.py"
DRIVERS = ["cuda-sim", "levelzero-sim"]
MILLION = 1_000_000


def _env(sanitize: bool = False) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONFAULTHANDLER="1")
    for knob in ("ARUNTIME_SIM_SANITIZE", "ARUNTIME_SIM_MEMORY_MB", "ARUNTIME_SIM_KERNELS"):
        env.pop(knob, None)
    if sanitize:
        env["ARUNTIME_SIM_SANITIZE"] = "1"
    return env


def _child(driver: str, scenario: str, count: int, kinds: str = "") -> dict[str, Any]:
    args = [sys.executable, str(CHILD), driver, scenario, str(count), *([kinds] if kinds else [])]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300, env=_env(), cwd=ROOT)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    result: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    return result


def _check_million(seen: dict[str, Any], kinds: list[str]) -> None:
    for kind in kinds:
        k = seen[kind]
        assert k["live"] == MILLION and k["distinct"] == MILLION, (kind, k)
        assert k["misaligned"] == 0, (kind, k)  # 256-byte aligned, as CUDA promises
        # About a thousand maps for a million allocations (two per 1 MiB slab).
        assert k["maps_added"] < 2_000, (kind, k)
        if kind != "host":  # pinned host memory counts against no device
            assert not k["whole_memory_free"], (kind, k)
            if seen["used_before"] is not None:
                assert k["used"] - seen["used_before"] == 256 * MILLION, (kind, k)
    assert seen["used_after"] == seen["used_before"], seen
    assert seen["whole_memory_free_after"], seen
    assert seen["maps_after"] - seen["maps_before"] < 100, seen


@pytest.mark.slow  # 3-4 s a sim: the README's run keeps to a few minutes
@pytest.mark.parametrize("driver", DRIVERS)
def test_a_million_live_small_device_allocations(driver: str) -> None:
    seen = _child(driver, "million", MILLION, "device")
    _check_million(seen, ["device"])


@pytest.mark.slow
@pytest.mark.parametrize("driver", DRIVERS)
def test_a_million_live_small_allocations_of_every_kind(driver: str) -> None:
    kinds = ["device", "managed" if driver == "cuda-sim" else "shared", "host"]
    _check_million(_child(driver, "million", MILLION), kinds)


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_freed_address_is_reused(driver: str) -> None:
    seen = _child(driver, "reuse", 1000)
    for kind, k in seen.items():
        assert k == {"again": True, "batch_reused": True}, (kind, k)


OVERRUN = textwrap.dedent(
    """
    import sys
    import anyio
    import numpy as np
    import aruntime as ar

    async def main() -> None:
        async with ar.open_backend(sys.argv[1]) as gpu:
            x, y = gpu.alloc(256), gpu.alloc(256)
            print("X", int(x), "Y", int(y))
            fill = gpu.kernel(gpu.builtin_module("vector_ops"), "fill_f32")
            # Every float from x's first to y's first when y is x's next
            # slot; else (the sanitizer) one past x's end.
            gap = int(y) - int(x)
            n = gap // 4 + 1 if 0 < gap <= 1024 else 65
            s = gpu.create_stream()
            try:
                gpu.launch(fill, (n + 127) // 128, 128, [np.uint32(n), np.float32(1), x], stream=s)
                await s.synchronize()
                print("FIRST ok")
            except ar.AruntimeError as e:
                print("FIRST", type(e).__name__, e)

    try:
        anyio.run(main)
    except ar.AruntimeError as e:  # close reports errors nobody awaited
        print("CLOSE", type(e).__name__)
    """
)


@pytest.mark.parametrize("sanitize", [False, True], ids=["plain", "sanitizer"])
@pytest.mark.parametrize("driver", DRIVERS)
def test_an_overrun_toward_the_neighbour_faults_naming_the_allocation(
    driver: str, sanitize: bool
) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", OVERRUN, driver],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(sanitize),
        cwd=ROOT,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    lines = proc.stdout.splitlines()
    _, x, _, y = lines[0].split()
    if not sanitize:
        assert int(y) - int(x) == 512, lines  # neighbours: 256 bytes, then the red zone
    first = next(line for line in lines if line.startswith("FIRST"))
    # The interpreters' bounds checks catch the writes into the red zone (the
    # last one, into y, is y's own byte): the kernel fails, the device is
    # lost, and the report names x, the allocation the kernel ran past.
    assert first.startswith("FIRST DeviceLostError"), lines
    for part in ("kernel fill_f32", f"of the allocation {int(x):#x} (256 bytes): past its end"):
        assert part in first, first

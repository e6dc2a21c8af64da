"""Awaits on one thread's asyncio loop while another thread is halfway through importing trio.

trio is put in ``sys.modules`` before its body has run, so for the length of
its import a lookup there finds a module without ``lowlevel``.  The program
runs in a fresh interpreter (trio must not be imported yet) and holds trio's
import at its first submodule, so the half-imported window is certain rather
than a matter of thread timing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROGRAM = """
import asyncio
import importlib.machinery
import sys
import threading

import anyio
import numpy as np

import aruntime as ar

assert "trio" not in sys.modules, "the program needs an interpreter without trio"
midway = threading.Event()
resume = threading.Event()


class HoldTrioImport:
    # Holds the body of trio's first submodule: by then trio is in sys.modules
    # without any of its attributes.  The hold is in exec_module, which runs
    # without the global import lock (find_spec holds it), so the other thread
    # can still import what it needs.
    def find_spec(self, name, path=None, target=None):
        if name != "trio._core":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        spec.loader = HeldLoader(spec.loader)
        return spec


class HeldLoader:
    def __init__(self, real):
        self.real = real

    def create_module(self, spec):
        return self.real.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = module.__spec__.loader = self.real
        midway.set()
        resume.wait(60)
        self.real.exec_module(module)


sys.meta_path.insert(0, HoldTrioImport())


async def awaits(label):
    host = np.arange(256, dtype=np.uint8)
    out = np.zeros_like(host)
    # The mock finishes ops at enqueue: each await is a finished-op checkpoint.
    async with ar.open_backend("mock") as gpu:
        ptr = gpu.alloc(256)
        for _ in range(20):
            await gpu.copy_h2d_async(host, ptr)
        await gpu.copy_d2h_async(ptr, out)
        assert (out == host).all(), label
        gpu.free(ptr)
    # The threaded mock's ops are pending when awaited: each await parks, and
    # queueing behind a parked waiter defers its wake-up to the loop.
    async with ar.open_backend("mock", latency=0.002) as gpu:
        ptr = gpu.alloc(256)
        ops = [gpu.memset_async(ptr, i, 256) for i in range(1, 6)]
        for op in ops:
            await op
        await gpu.copy_d2h_async(ptr, out)
        assert (out == 5).all(), label
        gpu.free(ptr)


def trio_thread(errors):
    try:
        anyio.run(awaits, "trio", backend="trio")
    except BaseException as exc:
        errors.append(exc)


errors = []
worker = threading.Thread(target=trio_thread, args=(errors,))
worker.start()
assert midway.wait(60), "trio's import never reached trio._core"
try:
    assert "trio" in sys.modules and not hasattr(sys.modules["trio"], "lowlevel")
    asyncio.run(awaits("asyncio during trio's import"))
finally:
    resume.set()
    worker.join(60)
if errors:
    raise errors[0]
asyncio.run(awaits("asyncio after trio's import"))
print("ok")
"""


def test_asyncio_awaits_while_another_thread_imports_trio() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDEVMODE": "1"}
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PROGRAM)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "ok", run.stdout + run.stderr

"""Shared test helpers: a backend opened or the test skipped, a gate kernel that
holds a threaded-mock stream on demand, a close raced against another thread's
ops, the tests' own host kernels (tests/kernels) built for the software
drivers, the loop-stall probe, and the software drivers' engine hooks."""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import aruntime as ar
from aruntime.testing import open_test_backend


def backend_or_skip(
    name: str, *, test_variant: bool = False, **options: Any
) -> Iterator[ar.Backend]:
    """For a fixture (``yield from``): backend ``name`` opened, closed after the test.

    The test is skipped where it cannot open.  ``test_variant``: ``name`` is
    one of aruntime.testing's variants (``mock-async``), opened as the
    conformance suite opens them (race checking on unless ``options`` or
    ``ARUNTIME_CHECK_HAZARDS=0`` say otherwise).
    """
    opener = open_test_backend if test_variant else ar.open_backend
    try:
        backend = opener(name, **options)
    except ar.BackendUnavailableError as exc:
        pytest.skip(f"{name} unavailable: {exc}")
    try:
        yield backend
    finally:
        backend.close()


class Gate:
    """A mock kernel that blocks its stream's worker until :meth:`open` is called.

    On the threaded mock this makes "the op is still running" deterministic,
    without relying on how long a sleep lasts.
    """

    _count = 0

    def __init__(self, backend: ar.Backend) -> None:
        Gate._count += 1
        self._event = threading.Event()
        self.entered = threading.Event()
        name = f"gate{Gate._count}"

        def hold(launch: Any) -> None:
            self.entered.set()
            self._event.wait(60)

        self.kernel = backend.kernel(backend.load_module(name, {"hold": hold}), "hold")
        self._backend = backend

    def launch(self, stream: ar.Stream | None = None) -> ar.Completion:
        return self._backend.launch(self.kernel, 1, 1, [], stream=stream)

    def open(self) -> None:
        self._event.set()


def close_during(
    submit: Callable[[], object],
    close: Callable[[], object],
    refusal: type[Exception],
    says: str,
    after: int = 0,
    hang: str = "an op hung against the close",
) -> list[object]:
    """Run ``close`` while another thread calls ``submit`` over and over, once ``after``
    calls have returned; what the calls returned (the work that reached its stream).

    Each call must return or raise ``refusal`` with ``says`` in its message (the
    close was first), and the other thread must stop: ``hang`` says otherwise.
    """
    started = threading.Event()
    outcomes: list[str] = []
    returned: list[object] = []

    def keep_submitting() -> None:
        started.set()
        for _ in range(2000):
            try:
                returned.append(submit())
            except refusal as exc:
                outcomes.append("refused" if says in str(exc) else repr(exc))
                return
            except Exception as exc:  # a driver call on a destroyed handle, say
                outcomes.append(repr(exc))
                return
        outcomes.append("ran out")

    worker = threading.Thread(target=keep_submitting)
    worker.start()
    started.wait()
    while len(returned) < after and not outcomes:
        time.sleep(0)
    close()
    worker.join(timeout=60)
    assert not worker.is_alive(), hang
    assert outcomes in (["refused"], ["ran out"]), outcomes
    return returned


def thread_count() -> int:
    """Live threads, not counting trio's own worker cache (which comes and goes)."""
    return sum(1 for t in threading.enumerate() if not t.name.startswith("Trio thread"))


KERNELS_DIR = Path(__file__).resolve().parent / "kernels"
_ABI_DIR = KERNELS_DIR.parent.parent / "ffi" / "kernels"


def sim_sanitizing(backend: ar.Backend) -> bool:
    """Whether a software driver runs its sanitizer (read when it loads, as the sims do)."""
    value = os.environ.get("ARUNTIME_SIM_SANITIZE", "").strip() or "0"
    try:
        return backend.name.endswith("-sim") and float(value) != 0
    except ValueError:
        return False


def build_host_kernel(name: str, out_dir: Path) -> bytes:
    """``tests/kernels/<name>.c`` built as a host shared object: a module image for the sims."""
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        pytest.fail(f"no C compiler ({cc}) to build the test kernel {name}")
    out = out_dir / f"{name}.so"
    source = KERNELS_DIR / f"{name}.c"
    subprocess.run(
        [cc, "-shared", "-fPIC", "-O2", f"-I{_ABI_DIR}", str(source), "-o", str(out)], check=True
    )
    return out.read_bytes()


async def longest_loop_gap_ms(op: Callable[[], Awaitable[object]]) -> float:
    """The loop-stall probe: the longest gap between 1 ms ticks while ``op`` is awaited."""
    gaps: list[float] = []
    done = anyio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await anyio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        await anyio.sleep(0.01)
        gaps.clear()
        await op()
        await anyio.sleep(0.003)  # a tick after the op, so its last stall is counted
        done.set()
    return max(gaps) * 1000.0


#: Each software driver's library (as the backend loads it) and the prefix of its timing hook.
_SIM_LIBRARIES = {
    "cuda-sim": ("libcuda.so.1", "arsim"),
    "levelzero-sim": ("libze_aruntime_sim.so", "arze_sim"),
}


def sim_library(name: str) -> Any:
    """The software driver behind backend ``name``: the instance the backend uses."""
    from aruntime._native import native_library_path

    return ctypes.CDLL(os.path.realpath(native_library_path(_SIM_LIBRARIES[name][0])))


@contextlib.contextmanager
def sim_inline_bytes(name: str, nbytes: int) -> Iterator[None]:
    """For the block: the largest copy or memset the sim runs where its queue moves on.

    0 sends every op to its engine's thread (ffi/sim/engine_threads.c).
    """
    setter = sim_library(name).arsim_set_inline_bytes
    setter.argtypes = [ctypes.c_int64]
    setter(nbytes)
    try:
        yield
    finally:
        setter(-1)


@contextlib.contextmanager
def sim_op_latency(name: str, latency_us: float) -> Iterator[None]:
    """For the block: every copy, memset and kernel on the sim takes ``latency_us``."""
    setter = getattr(sim_library(name), f"{_SIM_LIBRARIES[name][1]}_set_timing")
    setter.argtypes = [ctypes.c_double, ctypes.c_double]
    setter(0.0, latency_us)
    try:
        yield
    finally:
        setter(0.0, 0.0)
